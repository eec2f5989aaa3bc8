r"""The one rule behind every ``implementation="auto"``: which exact form computes the
complete graph's log-partition :math:`\operatorname{lse}_i = \log \sum_{j \ne i}
\exp(x_i^\top x_j / \tau)` (and the softmax attention built on it), per device, size and
dtype.

The forms have the same value and gradient (tested on the CPU against a float64 brute
force): ``"dense"`` (the ``N × N`` logits, one GEMM each way), ``"tiled"``
(:mod:`~cl2gnn.nn.tiled`, symmetric torch tiles, ``O(N d + tile²)`` memory) and
``"triton"`` (:mod:`~cl2gnn.nn.tiled_triton`, fused CUDA kernels, ``O(N d)`` memory).

The rule, :func:`exact_form`:

* **CUDA.** Dense while its ``N × N`` matrices (:func:`dense_bytes`) fit
  :data:`DENSE_MAX_BYTES` and the free device memory: a small problem is launch-bound, and
  one dense GEMM each way beats the tiles' many small ones. Beyond, Triton where it is
  installed and takes the input (float16, bfloat16 or float32 rows, ``d <=``
  :data:`~cl2gnn.nn.tiled_triton.MAX_DIM`, no excluded pairs); the torch tiles otherwise.
  The free memory is read only where the budget alone would take dense, by
  ``torch.cuda.mem_get_info``: a driver query, not a stream synchronisation, so the step
  queues on without waiting for the device (:func:`fits_on_device`); and only once per
  size and device (:func:`dense_fits`): a training step of the same shape asks the driver
  nothing, so that it can be captured in a CUDA graph.
* **CPU** (and any other device). Dense below :data:`CPU_TILED_MIN_ROWS` rows, the tiles
  from there on: the log-partition's tiles do half the GEMM work (symmetric blocks) in
  fewer passes over the logits, and no tiles allocate ``N × N``.
* Tiles and Triton take no set of excluded pairs that is not symmetric: such a call is
  dense. Triton takes none at all: a call with excluded pairs goes to the tiles.
* ``matmul_dtype="bfloat16"`` on float32 rows asks for bfloat16 products with float32
  accumulation: on the CPU the tiles' (oneDNN), on CUDA Triton's where it takes the input
  (the tiles refuse it there).

Cross-overs. Measured on a GPU (NVIDIA H200, torch 2.11 cu130, 2026-11-27, the figures
of issue 53): GRACE on Cora (5,416 views, ``d = 128``) takes 10.06 ms an epoch dense against
23.97 ms on the tiles, so dense wins at that size; Triton beats the tiles 4× from 65,536 to
1,048,576 views (bfloat16, forward + backward). Measured on a CPU (an Intel Xeon, 2 cores
with AMX, 2026-11-27, ``benchmarks/infonce_scale.py crossover``, float32 unit rows, ``d =
128``, quiet; results/operators_*_crossover_cpu.json): the log-partition's tiles tie with
dense at 128-256 rows and win from 512 on (1.1 against 2.5 ms; 8.4 against 22.8 at 2,048),
and so do the attention's tiles (:func:`~cl2gnn.nn.tiled_attention.tiled_attention`, no
symmetric halving: 2.7 against 3.2 ms at 512, 31.6 against 42.3 at 2,048; dense wins at
256), hence both thresholds of 512. Not measured: the GPU cross-over between dense and
Triton (the rule puts it where dense stops fitting its budget, 7,327 float32 rows), Triton
below 65,536 views, and any device but CUDA and the CPU.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.utils import is_undirected

from . import tiled_triton

FORMS = ("dense", "tiled", "triton")
# the exact forms of each computation: ContrastiveNorm's softmax attention has no Triton kernel
COMPUTATIONS = {"log-partition": FORMS, "attention": ("dense", "tiled")}
DENSE_MAX_BYTES = 2**30  # dense on CUDA while its N × N matrices fit in this
# N × N matrices alive at the dense form's peak (forward + backward), measured by peak RSS
# on the CPU at N = 8,192: 4.06 for the log-partition (the saved logits and logsumexp's
# backward temporaries), 4.35 for ContrastiveNorm's attention; rounded up
DENSE_LIVE_MATRICES = 5
# the CPU's tiles from this many rows on, per computation (measured: the module's docstring)
CPU_TILED_MIN_ROWS = {"log-partition": 512, "attention": 512}


def dense_bytes(rows: int, dtype: torch.dtype) -> int:
    """Peak bytes of the dense form on ``rows`` rows: :data:`DENSE_LIVE_MATRICES` matrices
    of ``rows × rows`` logits, float64 for float64 rows, float32 (the reductions' dtype)
    otherwise."""
    element = 8 if dtype == torch.float64 else 4
    return DENSE_LIVE_MATRICES * rows * rows * element


def fits_on_device(size: int, device: torch.device) -> bool:
    """Whether ``size`` bytes can be allocated on ``device`` now: the driver's free memory
    (``torch.cuda.mem_get_info``, a driver query without a stream synchronisation) and, only
    where that is short, the blocks torch's caching allocator holds unused. ``True`` where
    nothing can be read (not a CUDA device, or no CUDA here: a CPU asking what a GPU gets)."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return True
    free, _ = torch.cuda.mem_get_info(device)
    if size <= free:
        return True
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return size <= free + cached


_DENSE_FITS: dict[tuple[int, str], bool] = {}


@torch.compiler.assume_constant_result
def dense_fits(size: int, device: torch.device) -> bool:
    """:func:`fits_on_device` asked once per ``size`` and device, the answer kept (a constant
    for ``torch.compile``); :func:`forget_dense_fits` asks again."""
    key = (int(size), str(device))
    if key not in _DENSE_FITS:
        _DENSE_FITS[key] = fits_on_device(size, device)
    return _DENSE_FITS[key]


def forget_dense_fits() -> None:
    """Forget :func:`dense_fits`' answers (memory freed or taken since)."""
    _DENSE_FITS.clear()


def check_matmul_dtype(
    matmul_dtype: str | None, implementation: str, distributed: str | None
) -> None:
    """``matmul_dtype`` is the torch tiles' option (CPU) and Triton's (CUDA): it takes
    ``implementation`` ``"auto"`` (which then picks one of them), ``"tiled"`` or
    ``"triton"``, on one process."""
    if matmul_dtype is None:
        return
    if implementation not in ("auto", "tiled", "triton"):
        raise ValueError(
            f"matmul_dtype={matmul_dtype!r} multiplies in the torch tiles or Triton: "
            f"implementation must be 'auto', 'tiled' or 'triton', got {implementation!r}"
        )
    if distributed is not None:
        raise ValueError(
            f"matmul_dtype={matmul_dtype!r} multiplies in one process's tiles: "
            f"distributed must be None, got {distributed!r}"
        )


def exact_form(
    rows: int,
    dim: int,
    device: torch.device | str,
    dtype: torch.dtype,
    *,
    exclude_index: Tensor | None = None,
    matmul_dtype: str | None = None,
    computation: str = "log-partition",
    free_bytes: int | None = None,
) -> str:
    """The fastest exact form, ``"dense"``, ``"tiled"`` or ``"triton"``, for ``rows`` rows of
    width ``dim`` and ``dtype`` on ``device`` (the rule of the module's docstring).

    Args:
        rows (int): :math:`N`, the rows (anchors and keys).
        dim (int): :math:`d`, their width.
        device (torch.device): where they are; any device may be asked about, e.g. a CPU
            test asking what CUDA would get.
        dtype (torch.dtype): their dtype.
        exclude_index (torch.Tensor, optional): pairs removed from the complete graph.
        matmul_dtype (str, optional): the tiles' product dtype requested
            (:func:`~cl2gnn.nn.tiled.tiled_row_logsumexp`).
        computation (str, optional): ``"log-partition"`` (:class:`UniformAttention`'s
            energy) or ``"attention"`` (:class:`ContrastiveNorm`'s, no Triton kernel).
        free_bytes (int, optional): memory a CUDA allocation can take; ``None``: ask the
            device (:func:`dense_fits`: once per size), only when the budget alone would
            take dense.
    """
    device = torch.device(device)
    forms = COMPUTATIONS[computation]
    if matmul_dtype is not None and dtype == torch.float32:
        triton = device.type == "cuda" and "triton" in forms and exclude_index is None
        return "triton" if triton and tiled_triton.supports(device, dtype, dim) else "tiled"
    if device.type == "cuda":
        need = dense_bytes(rows, dtype)
        if need <= DENSE_MAX_BYTES and (
            dense_fits(need, device) if free_bytes is None else need <= free_bytes
        ):
            return "dense"
        triton = "triton" in forms and exclude_index is None
        form = "triton" if triton and tiled_triton.supports(device, dtype, dim) else "tiled"
    else:
        form = "tiled" if rows >= CPU_TILED_MIN_ROWS[computation] else "dense"
    if form == "tiled" and exclude_index is not None:
        if not is_undirected(exclude_index, num_nodes=rows):
            return "dense"  # the tiles keep one triangle of blocks: the excluded pairs must be too
    return form
