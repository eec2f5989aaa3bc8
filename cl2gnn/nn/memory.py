from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor
from torch_geometric.nn import MessagePassing

from .._options import Finite, OptionsChecked, check_options
from .._registry import OPERATORS, Example
from .._validation import check_features
from . import _examples

MODES = ("mean", "max", "cat")


@OPERATORS.register
class MultiStageMemory(OptionsChecked, MessagePassing):
    r"""Jumping-knowledge aggregation of a sample's features over the last ``stages``
    training stages (epochs or steps) (eq. 13 of *A Message Passing Perspective on
    Learning Dynamics of Contrastive Learning*, Wang et al., ICLR 2023).

    A memory bank keeps, per natural sample (``sample_id``), its features from previous
    stages. The target of sample :math:`i` aggregates the current features with the stored
    ones over a bipartite stage graph (stored stage :math:`\to` sample),

    .. math::
        \bar{z}_i = \operatorname{JK}\big(x_i, m_i^{(t-1)}, \dots, m_i^{(t-s+1)}\big),

    with ``mode`` ``"mean"`` (the paper; ``stages=2`` is the reference code's
    :math:`\frac12 x + \frac12 m^{(t-1)}`), ``"max"`` (element-wise) or ``"cat"``
    (concatenation and a learnable projection; a missing stage is filled with
    :math:`x_i`). Stages not yet stored are skipped; during the first ``warmup`` stages
    :math:`\bar{z} = x`. The energy pulls features towards the detached target:

    .. math::
        E(X) = \sum_i \tfrac12 \|x_i\|^2 - x_i^\top \operatorname{sg}(\bar{z}_i),
        \qquad X' = (1 - \alpha) X + \alpha \bar{Z},

    so ``step=1`` is the aggregation itself; on unit vectors :math:`E/N + \frac12` is the
    paper's :math:`-\mathbb{E} f(x)^\top \bar{z}`.

    Call :meth:`push` with each batch's (detached) features and :meth:`next_stage` at
    the end of every stage. The bank is a registered buffer of ``dtype`` (bf16 halves
    it): it is saved in ``state_dict`` and moves with ``.to()``. Under
    ``torch.distributed`` :meth:`push` all-gathers the batch so every rank keeps the
    same bank; ranks may hold different numbers of rows (a last partial batch), none
    included.

    Args:
        num_samples (int): number of natural samples.
        dim (int): feature dimension.
        stages (int, optional): stages aggregated, the current one included
            (default: ``2``).
        mode (str, optional): ``"mean"``, ``"max"`` or ``"cat"`` (default: ``"mean"``).
        warmup (int, optional): stages before the memory is used (default: ``0``).
        step (float, optional): step size :math:`\alpha` (default: ``1.0``).
        dtype (torch.dtype, optional): storage dtype of the bank
            (default: ``torch.float32``).

    Shapes:
        - **input:** features :math:`(B, d)`, ``sample_id`` :math:`(B)`
        - **output:** features :math:`(B, d)`; :meth:`energy`: scalar
    """

    def __init__(
        self,
        num_samples: int,
        dim: int,
        stages: int = 2,
        mode: str = "mean",
        warmup: int = 0,
        step: Finite = 1.0,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if stages < 1 or num_samples < 1 or dim < 1 or warmup < 0:
            raise ValueError("num_samples, dim and stages must be >= 1 and warmup >= 0")
        super().__init__(aggr="max" if mode == "max" else "mean")
        self.num_samples, self.dim, self.stages = num_samples, dim, stages
        self.mode, self.warmup, self.step = mode, warmup, step
        self.register_buffer("bank", torch.zeros(stages, num_samples, dim, dtype=dtype))
        check_options(self)
        self.register_buffer("filled", torch.zeros(stages, num_samples, dtype=torch.bool))
        self.register_buffer("pointer", torch.zeros((), dtype=torch.long))
        self.register_buffer("stages_done", torch.zeros((), dtype=torch.long))
        self.proj = torch.nn.Linear(stages * dim, dim) if mode == "cat" else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self.bank.zero_()
        self.filled.zero_()
        self.pointer.zero_()
        self.stages_done.zero_()
        if self.proj is not None:
            # start as the mean over stages, so 'cat' begins where 'mean' does
            with torch.no_grad():
                eye = torch.eye(self.dim) / self.stages
                self.proj.weight.copy_(eye.repeat(1, self.stages))
                self.proj.bias.zero_()

    @property
    def active(self) -> bool:
        return int(self.stages_done) >= self.warmup

    def aggregate_stages(self, x: Tensor, sample_id: Tensor) -> Tensor:
        """The multi-stage target :math:`\\bar{z}` (not detached)."""
        self._check(x, sample_id)
        if not self.active:
            return x
        previous = [(int(self.pointer) - k) % self.stages for k in range(1, self.stages)]
        stored = [self.bank[k, sample_id].to(x.dtype) for k in previous]
        present = [self.filled[k, sample_id] for k in previous]
        if self.mode == "cat":
            parts = [x] + [
                torch.where(p[:, None], m, x) for m, p in zip(stored, present, strict=True)
            ]
            return self.proj(torch.cat(parts, dim=-1))
        b = x.size(0)
        rows = torch.arange(b, device=x.device)
        src = [rows] + [rows[p] + (k + 1) * b for k, p in enumerate(present)]
        dst = [rows] + [rows[p] for p in present]
        edge_index = torch.stack([torch.cat(src), torch.cat(dst)])
        sources = torch.cat([x, *stored]) if stored else x
        return self.propagate(edge_index, x=(sources, x), size=(sources.size(0), b))

    def energy(self, x: Tensor, sample_id: Tensor, current: Tensor | None = None) -> Tensor:
        """``Σ ½‖x‖² - x·sg(z̄)``; ``current`` (default ``x``) is the present stage's input."""
        target = self.aggregate_stages(x if current is None else current, sample_id).detach()
        return 0.5 * (x * x).sum() - (x * target).sum()

    def forward(self, x: Tensor, sample_id: Tensor, current: Tensor | None = None) -> Tensor:
        target = self.aggregate_stages(x if current is None else current, sample_id)
        return (1 - self.step) * x + self.step * target

    @torch.no_grad()
    def push(self, x: Tensor, sample_id: Tensor) -> None:
        """Store the detached features of this batch in the current stage (an empty
        batch stores nothing; under ``torch.distributed`` every rank must call it)."""
        self._check(x, sample_id, min_rows=0)
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            x, sample_id = _all_gather_rows(x.detach(), sample_id)
        self.bank[int(self.pointer), sample_id] = x.detach().to(self.bank.dtype)
        self.filled[int(self.pointer), sample_id] = True

    @torch.no_grad()
    def next_stage(self) -> None:
        """Close the current stage; the oldest stored stage is overwritten next."""
        self.pointer.copy_((self.pointer + 1) % self.stages)
        self.filled[int(self.pointer)] = False
        self.stages_done += 1

    def _check(self, x: Tensor, sample_id: Tensor, min_rows: int = 1) -> None:
        check_options(self)
        check_features(x, min_rows=min_rows)
        if x.size(1) != self.dim:
            raise ValueError(f"x must have dim {self.dim}, got {x.size(1)}")
        if sample_id.shape != (x.size(0),) or sample_id.is_floating_point():
            raise ValueError(f"sample_id must be an integer tensor of shape [{x.size(0)}]")
        if sample_id.numel() and (
            int(sample_id.min()) < 0 or int(sample_id.max()) >= self.num_samples
        ):
            raise ValueError(f"sample_id must lie in [0, {self.num_samples})")

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(num_samples={self.num_samples}, dim={self.dim}, "
            f"stages={self.stages}, mode={self.mode!r}, warmup={self.warmup}, "
            f"step={self.step}, dtype={self.bank.dtype})"
        )

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        """A bank of ``n`` samples with one stored stage (of ``stages=2``, two of 3)."""
        stored = [_examples.features(n, d, generator) for _ in range(2)]
        x, ids = _examples.features(n, d, generator), torch.arange(n)

        def build(stages: int, **options):
            memory = cls(n, d, stages=stages, **options)
            for features in stored[: stages - 1]:
                memory.push(features, ids)
                memory.next_stage()
            return memory

        return {
            "mean": Example(lambda **o: build(3, **{"step": 0.3, **o}), (x, ids)),
            "cat": Example(lambda **o: build(2, **{"mode": "cat", "step": 0.5, **o}), (x, ids)),
        }


def _all_gather_rows(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Every rank's rows of each tensor, concatenated in rank order. Ranks may hold
    different numbers of rows, which ``all_gather`` does not allow (gloo aborts), so the
    row counts are gathered first, each tensor padded to the largest and the padding
    cut off again."""
    device = tensors[0].device
    counts = [torch.zeros(1, dtype=torch.long, device=device) for _ in range(dist.get_world_size())]
    dist.all_gather(counts, torch.tensor([tensors[0].size(0)], device=device))
    counts = [int(c) for c in counts]
    gathered = []
    for t in tensors:
        padded = t.new_zeros((max(counts), *t.shape[1:]))
        padded[: t.size(0)] = t
        parts = [torch.empty_like(padded) for _ in counts]
        dist.all_gather(parts, padded)
        gathered.append(torch.cat([part[:n] for part, n in zip(parts, counts, strict=True)]))
    return tuple(gathered)
