"""Contrastive objectives over the global batch of several processes (``torch.distributed``).

Every rank passes its own rows; the objectives' negatives span every rank's rows, by one of
two modes (the ``distributed=`` argument of the operators and losses):

* ``"gather"`` — the keys are all-gathered with autograd; ``N/P × N`` logits per rank;
* ``"ring"`` — the keys travel rank to rank in tiles; nothing of size ``N`` on any rank.

Positives stay local: both views of a sample (and any ``edge_index`` / ``sample_id``
positives) are on one rank and index its local rows. A loss returns ``world_size ×`` its
anchors' share of the global loss (lightly's convention), so that DDP's gradient averaging
gives exactly the single-process gradient and the mean over ranks is the global loss. An
operator's ``energy`` returns its anchors' share; its gradient on the local rows is the
global energy's.
"""

from .collectives import all_reduce_sum, gather_rows
from .launch import init_from_env, launched_by_torchrun, rank_and_world, shutdown
from .partition import inner_product, row_logsumexp
from .ring import ring_row_logsumexp
from .shard import MODES, Shard, check_mode, is_distributed, shard_of

__all__ = [
    "MODES",
    "Shard",
    "all_reduce_sum",
    "check_mode",
    "gather_rows",
    "init_from_env",
    "inner_product",
    "is_distributed",
    "launched_by_torchrun",
    "rank_and_world",
    "ring_row_logsumexp",
    "row_logsumexp",
    "shard_of",
    "shutdown",
]
