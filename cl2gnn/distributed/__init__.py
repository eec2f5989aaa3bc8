"""Contrastive objectives over the global batch of several processes (``torch.distributed``).

Every rank passes its own rows; the objectives' negatives span every rank's rows, by one of
two modes (the ``distributed=`` argument of the operators and losses):

* ``"gather"`` — the keys are all-gathered with autograd; ``N/P × N`` logits per rank;
* ``"ring"`` — the keys travel rank to rank in tiles (:mod:`~cl2gnn.distributed.ring`);
  nothing of size ``N`` on any rank, forward and backward: every loss and operator that
  takes ``distributed=`` (the operators' steps too) holds ``O(N d / P + tile²)`` per rank.
  SimCLR's kNN positives (``SimCLRObjective(nn_positives=...)``, ``cl2gnn simclr
  --nn-positives``), searched in the gathered global batch, refuse ring mode.

Positives stay local: both views of a sample (and any ``edge_index`` / ``sample_id``
positives) are on one rank and index its local rows. A loss returns ``world_size ×`` its
anchors' share of the global loss (lightly's convention), so that DDP's gradient averaging
gives exactly the single-process gradient and the mean over ranks is the global loss. An
operator's ``energy`` returns its anchors' share; its gradient on the local rows is the
global energy's. An operator's step (``forward``) returns this rank's rows of the global
step, with the single-process gradient.

Every rank's input checks are decided together, in the all-gather of the row counts that
precedes any other collective (:func:`shard_of`, :func:`checked_shard`): where one rank's
input is invalid (a NaN, a graph out of range, no rows), every rank raises the same
``ValueError``, naming that rank, instead of leaving the others waiting.
"""

from .collectives import all_reduce_sum, gather_rows
from .launch import init_from_env, launched_by_torchrun, rank_and_world, shutdown
from .partition import inner_product, row_logsumexp
from .ring import ring_attention
from .shard import MODES, Shard, check_mode, checked_shard, is_distributed, shard_of

__all__ = [
    "MODES",
    "Shard",
    "all_reduce_sum",
    "check_mode",
    "checked_shard",
    "gather_rows",
    "init_from_env",
    "inner_product",
    "is_distributed",
    "launched_by_torchrun",
    "rank_and_world",
    "ring_attention",
    "row_logsumexp",
    "shard_of",
    "shutdown",
]
