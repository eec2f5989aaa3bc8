"""How the Triton log-partition (:mod:`~cl2gnn.nn.tiled_triton`) is launched, decided on the
host: the products' precision, the key splits and the configurations the autotuner tries.
Triton is not imported here: every rule can be asked and tested on any machine.

**Precision** (:func:`operand_precision`), as torch's own products take it:

* float16 and bfloat16 rows: their dtype on the tensor cores, float32 accumulation;
* float32 rows: IEEE by default; TF32 (the operands' 10 fraction bits) where torch's switch
  says so: ``torch.set_float32_matmul_precision("high")`` (or ``"medium"``), the new
  ``torch.backends.cuda.matmul.fp32_precision = "tf32"`` or the old ``allow_tf32``;
* float32 rows with ``matmul_dtype="bfloat16"``: the rows rounded to bfloat16 (to nearest)
  once, the products' other operand (the attention weights) too, float32 accumulation and
  results, as the CPU tiles' bfloat16 products (:mod:`~cl2gnn.nn.tiled`).

**The error each precision meets** (:func:`error_bounds`), with unit rows, ``d`` products per
logit and ``u`` the operands' unit roundoff (:data:`UNIT_ROUNDOFF`: 0 for IEEE, ``2⁻¹⁰``
for TF32, whose conversion may truncate, ``2⁻⁸`` for bfloat16): every logit is within
``δ = (2u + u² + d·2⁻²⁴)/τ`` of the exact one, so each log-partition within ``δ`` (it is
1-Lipschitz in the logits), and each row's gradient within ``(2δ + 3u)·G_i`` with
``G_i = Σ_j (w_i P_ij + w_j P_ji)/τ``, the attention mass the row collects (the weights
perturbed by ``e^{2δ} - 1``, then rounded, then multiplied by rounded rows); both up to
float32's roundings of the sums, :data:`SUMS_SLACK` relative. Tested under the interpreter
against float64 (``tests/nn/test_tiled_triton.py``).

**Key splits** (:func:`key_splits`): where ``cdiv(N, 128)`` programs would not fill twice the
device's multiprocessors, the keys are split among several programs per row block, each
summing its share (the forward's partial log-partitions combined by one ``logsumexp``, the
backward's partial gradients by one sum): a graph just past the dense threshold keeps every
SM busy.

**Configurations**: block sizes, warps and pipeline stages autotuned per (power-of-two bucket
of ``N``, ``d``, dtype, key splits; and stop-gradient in the backward) among
:data:`FORWARD_CONFIGS` and :data:`BACKWARD_CONFIGS` on a process's first call of each
(several runs of every configuration: that call takes many times a tuned one, so benchmarks
warm up); from :data:`PINNED_FROM_ROWS` rows on the first one alone (:func:`pinned`: tuning
8 configurations at 1M rows took minutes; which one is fastest there is not measured yet).
"""

from __future__ import annotations

import torch
from torch import Tensor

# (BLOCK_M, BLOCK_N, num_warps, num_stages) tried by the autotuner on a GPU
FORWARD_CONFIGS = ((128, 64, 4, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 64, 8, 2))
BACKWARD_CONFIGS = ((64, 64, 4, 2), (128, 64, 8, 2), (64, 128, 4, 2), (128, 32, 4, 3))
INTERPRETER_CONFIG = (64, 64, 4, 1)
MAX_ACCUMULATOR = 128 * 128  # float32 BLOCK_M × BLOCK_D backward accumulator in registers
PINNED_FROM_ROWS = 2**18  # from here on no autotuning: the first (fitting) configuration
SPLIT_ROWS = 128  # the row block the key splits are sized for (the largest BLOCK_M)
MIN_SPLIT_KEYS = 1024  # keys per split at least: each program's loop outlasts its set-up
UNIT_ROUNDOFF = {"ieee": 0.0, "tf32": 2.0**-10, "bf16": 2.0**-8}
SUMS_SLACK = 2.0**-20  # float32's roundings of the exponentials' sums and the products' sums


def operand_precision(x: Tensor, matmul_dtype: str | None = None) -> str:
    """The products' precision for rows ``x``: ``"ieee"`` or ``"tf32"`` for float32 rows
    (torch's switch, read from ``torch.backends``: ``torch.get_float32_matmul_precision()``
    raises where the old and new settings were mixed), ``"bf16"`` for float32 rows with
    ``matmul_dtype="bfloat16"``, ``"native"`` for float16 and bfloat16 rows."""
    if x.dtype != torch.float32:
        return "native"
    if matmul_dtype == "bfloat16":
        return "bf16"
    setting = torch.backends.cuda.matmul.fp32_precision  # "none": the global default's
    if setting == "none":
        setting = torch.backends.fp32_precision
    return "tf32" if setting == "tf32" else "ieee"


def error_bounds(precision: str, dim: int, tau: float) -> tuple[float, float, float]:
    """``(δ, gradient factor, u)`` of the module's docstring for unit rows: a log-partition is
    within ``δ``, a row's gradient within ``factor · G_i``."""
    u = UNIT_ROUNDOFF[precision]
    delta = (2 * u + u * u + dim * 2.0**-24) / tau
    return delta, 2 * delta + 3 * u, u


def multiprocessors(device: torch.device) -> int:
    """The CUDA device's streaming multiprocessors (0 elsewhere: nothing to fill)."""
    if device.type != "cuda":
        return 0
    return torch.cuda.get_device_properties(device).multi_processor_count


def key_splits(rows: int, sms: int) -> int:
    """Programs per row block: 1 where ``cdiv(rows, SPLIT_ROWS)`` programs fill twice the
    ``sms`` multiprocessors, else as many as fill them, with :data:`MIN_SPLIT_KEYS` keys
    each at least."""
    programs = -(-rows // SPLIT_ROWS)
    if programs >= 2 * sms:
        return 1
    wanted = -(-2 * sms // programs)
    return max(1, min(wanted, rows // MIN_SPLIT_KEYS))


def pinned(configs: list, named_args: dict, **kwargs) -> list:
    """The configurations the autotuner runs: all, and from :data:`PINNED_FROM_ROWS` rows
    (``n_bucket``) the first alone (Triton then runs it without benchmarking)."""
    return configs[:1] if named_args["n_bucket"] >= PINNED_FROM_ROWS else configs


def fitting_and_pinned(configs: list, named_args: dict, **kwargs) -> list:
    """:func:`pinned` among the backward's configurations whose accumulator (``BLOCK_M ×
    BLOCK_D`` floats) fits in registers (the first, if none)."""
    fit = [c for c in configs if c.kwargs["BLOCK_M"] * kwargs["BLOCK_D"] <= MAX_ACCUMULATOR]
    return pinned(fit or configs[:1], named_args)
