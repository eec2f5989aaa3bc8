r"""Exact kNN search in torch tiles, in full or reduced precision (``knn_graph``'s torch backend).

**Tiles.** The similarities are computed ``tile_size × tile_size`` at a time; each key tile's
best ``m`` candidates per query row are merged into the row's running best ``m``, so the
search holds ``O(tile_size² + N m)`` numbers, never a row of ``N`` scores. The candidates are
then re-ranked exactly, from float64 scores of the rows, ties by index, and the first ``k``
kept. The rank score of a key ``x`` for a query ``q`` is ``q·x`` (``"ip"``) or
``q_c·x_c − ‖x_c‖²/2`` (``"l2"``, rows centred, ``c``: minus the mean, which ranks as
``−‖q − x‖²`` and keeps the products small). The GEMM yields the scores themselves: each
key's ``‖x_c‖²/2`` rides in extra columns of the keys against ones in the queries'
(:func:`_folded`), so no pass over the tile subtracts it. Each tile's best ``m`` are
selected among few on a GPU (:func:`tile_best`): the per-chunk maxima pick the ``m``
chunks that hold them, and ``topk`` runs on those alone, not on the whole row (``topk``
over an ``8192 × 8192`` tile took five times its GEMM there; the CPU's is cheaper than its
GEMM, and kept).

**Reduced precision.** ``"full"`` computes the tiles in float32 (float64 for float64 rows),
``m = k``. ``"bf16"`` and ``"tf32"`` round the operands to bfloat16 (unit roundoff
:math:`u = 2^{-8}`) or TF32 (:math:`u = 2^{-11}`) and accumulate their products in float32
on the tensor cores (AMX on the CPU for bf16; TF32 on the CPU is emulated, exact but no
faster), with ``m = k + margin`` candidates. Each operand is off by a factor
:math:`1 + \theta`, :math:`|\theta| \le u' = u + 2^{-22}` (the rounding, and float32's in
centring); a key's half squared norm, rounded to float32 once, is carried exactly by three
terms of the reduced precision. With float32 accumulation over the ``D`` terms of a score
(``D = d + 3`` for ``"l2"``, ``d`` for ``"ip"``; bound doubled for the tensor cores' order of
summation) every reduced score is within

.. math::
    \delta(q) = (2u' + u'^2 + 2D\,2^{-24}(1 + u')^2 + 2^{-22})\,\|q_c\|\,M
        + (2^{-22} + 2D\,2^{-24}(1 + 2u))\, M^2 / 2,
    \qquad M = \max_j \|x_{c,j}\|

of the exact one (the last term: float32's rounding of the norm, and its share of the
accumulation; ``"ip"`` has no :math:`M^2` term). A key outside the candidates scored at most
``t``, the ``m``-th candidate's reduced score, so its exact score is at most
:math:`t + \delta`: a row whose exact ``k``-th score is above :math:`t + \delta` is
*certified*. The others (more than
``margin`` keys within about :math:`2\delta` of the ``k``-th, such as near-ties below the
reduced resolution) are searched again in full precision: every precision returns the same
neighbors, and the count of those rows says how much the reduced tiles saved.

``margin``: the bound does not say how many keys crowd within it of the ``k``-th neighbor,
the data does. bf16's :math:`\delta` is about :math:`2^{-7}\|q\|\|x\|`, TF32's
:math:`2^{-10}\|q\|\|x\|`. The default, ``max(k, 16)``, was chosen on 100k rows, d = 128,
k = 10 (1,000 rows checked): TF32 tiles certified 99.8% of the rows of points in 10
Gaussian clusters (a margin of 6: 52%; of 32: 100%), 100% in 100 clusters and of Gaussian
unit rows; bf16 tiles certified 99.8% of the Gaussian unit rows but none of the clustered
points, whose norms (the clusters' centres) dwarf their neighbors' distances: there bf16
costs a full search on top (``benchmarks/knn_build.py`` reports the share).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch
from torch import Tensor

from .._tiles import acc_dtype

# the unit roundoff of the reduced precisions the tiles multiply in, and every precision
UNIT_ROUNDOFF = {"tf32": 2.0**-11, "bf16": 2.0**-8}
TILE_PRECISIONS = ("full", *UNIT_ROUNDOFF)


F32_EPS = 2.0**-24  # float32's unit roundoff
FOLDED_TERMS = 3  # terms of a key's half squared norm in the reduced operands (exact sum)
# tile_best: chunks of a power of two of columns, at least this many chunks per candidate
# (the maxima's top-k stays small), of MIN_CHUNK to MAX_CHUNK columns (a smaller chunk gains
# nothing over a plain top-k)
CHUNKS_PER_CANDIDATE, MIN_CHUNK, MAX_CHUNK = 4, 8, 64
# where tile_best selects by chunk maxima: on a GPU topk over an 8192² tile took five times
# its GEMM; on the CPU (2 cores, AVX2) a plain topk of a 1024² tile took 2.2 ms against the
# chunks' 3.5 (k = 10) and its GEMM's 4.7, so the CPU keeps topk
CHUNKED_DEVICES = ("cuda",)
RERANK_ELEMENTS = 2**24  # gathered candidate features per re-rank chunk (128 MiB in float64)


class TileSearch(NamedTuple):
    """Each row's ``k`` nearest other rows, best first (``index``, ``score`` ``[N, k]``:
    similarity for ``"ip"``, squared distance for ``"l2"``), and how many rows the reduced
    precision could not certify and were searched again in full precision."""

    index: Tensor
    score: Tensor
    rechecked: int


def default_margin(k: int) -> int:
    return max(k, 16)


def knn_tiles(
    x: Tensor,
    k: int,
    metric: str,
    tile_size: int,
    precision: str = "full",
) -> TileSearch:
    """The exact ``k`` nearest other rows of every row of ``x`` (``metric`` ``"ip"`` or
    ``"l2"``), searched in tiles of ``precision`` (module docstring)."""
    n, d = x.shape
    work = acc_dtype(x.dtype)
    center = x.mean(0, dtype=work) if metric == "l2" else None
    centred = x.to(work) if center is None else x.to(work) - center
    # the exact centred norms, so that the tiles' only error is the operands' rounding
    norms = _row_norms(x, center)
    half = (0.5 * norms.square()).to(work) if metric == "l2" else None
    rows = torch.arange(n, device=x.device)
    if precision == "full":
        queries, keys = _folded(centred, half, precision)
        cand, _ = _candidates(queries, keys, rows, k, tile_size, _full_gemm)
        index, score, _ = _rerank(x, center, rows, cand, metric, norms)
        return TileSearch(index, score.to(x.dtype), 0)

    m = min(k + default_margin(k), n - 1)
    operand, gemm = _reduced(centred, precision)
    queries, keys = _folded(operand, None if half is None else half.float(), precision)
    cand, reduced = _candidates(queries, keys, rows, m, tile_size, gemm)
    del queries, keys
    index, score, exact = _rerank(x, center, rows, cand, metric, norms)
    index, score = index[:, :k].contiguous(), score[:, :k].to(x.dtype)
    if m == n - 1:  # every other row is a candidate: nothing left to overlook
        return TileSearch(index, score, 0)
    bound = _error_bound(norms, metric, d, UNIT_ROUNDOFF[precision])
    certified = exact[:, k - 1] > reduced[:, -1].double() + bound
    redo = rows[~certified]
    if redo.numel():
        queries, keys = _folded(centred, half, "full")
        cand, _ = _candidates(queries, keys, redo, k, tile_size, _full_gemm)
        index[redo], redone, _ = _rerank(x, center, redo, cand, metric, norms)
        score[redo] = redone.to(score.dtype)
    return TileSearch(index, score, redo.numel())


def _row_norms(x: Tensor, center: Tensor | None) -> Tensor:
    """Float64 norms of the (centred) rows, a chunk of rows at a time."""
    out = []
    for chunk in x.split(max(1, RERANK_ELEMENTS // x.size(1))):
        chunk = chunk.double()
        out.append((chunk if center is None else chunk - center.double()).norm(dim=1))
    return torch.cat(out)


def _error_bound(norms: Tensor, metric: str, d: int, u: float) -> Tensor:
    """``δ(q)`` of the module docstring for every row ``q``: the largest difference between a
    reduced and an exact rank score in the row."""
    u_in = u + 4 * F32_EPS
    summed = d + (FOLDED_TERMS if metric == "l2" else 0)  # the terms each score sums
    accumulation = 2 * summed * F32_EPS  # float32 sums, doubled for the tensor cores' order
    products = 2 * u_in + u_in**2 + accumulation * (1 + u_in) ** 2
    big = norms.max()
    bound = (products + 4 * F32_EPS) * norms * big
    if metric != "l2":
        return bound
    # the keys' half squared norms: rounded to float32 once, then summed with the products
    return bound + (4 * F32_EPS + accumulation * (1 + 2 * u)) * big**2 / 2


def _folded(operand: Tensor, half: Tensor | None, precision: str) -> tuple[Tensor, Tensor]:
    """Queries and keys whose product is the rank score, ``[x_c, 1, …]·[x_c, -h, …]``: each
    key's half squared norm ``h`` in extra columns, as :data:`FOLDED_TERMS` terms of the
    operands' precision that sum to ``h``'s float32 value exactly (one term in full
    precision), zeros widening the rows to a multiple of 8 (the tensor cores' tiles); so the
    GEMM yields the scores and no pass subtracts the norms. ``"ip"`` (no ``half``): the
    operand for both."""
    if half is None:
        return operand, operand
    terms = [half] if precision == "full" else _exact_terms(half, precision)
    norms = -torch.stack(terms, 1).to(operand.dtype)
    pad = operand.new_zeros(operand.size(0), -(operand.size(1) + len(terms)) % 8)
    queries = torch.cat([operand, torch.ones_like(norms), pad], 1)
    return queries, torch.cat([operand, norms, pad], 1)


def _exact_terms(h: Tensor, precision: str) -> list[Tensor]:
    """Float32 ``h`` as :data:`FOLDED_TERMS` values of ``precision`` (8 or 11 significant
    bits; each rounding to nearest leaves a remainder float32 holds exactly) summing to it."""
    terms, rest = [], h
    for _ in range(FOLDED_TERMS):
        term = _round_tf32(rest) if precision == "tf32" else rest.bfloat16().float()
        terms.append(term)
        rest = rest - term
    return terms


def _candidates(
    queries: Tensor,
    keys: Tensor,
    rows: Tensor,
    m: int,
    tile: int,
    gemm: Callable[[Tensor, Tensor], Tensor],
) -> tuple[Tensor, Tensor]:
    """The ``m`` best keys of each query row of ``rows`` (ascending) by the tiles' rank
    scores (``queries keysᵀ``, :func:`_folded`), ``(index, score)`` ``[len(rows), m]`` best
    first; self pairs excluded."""
    n = keys.size(0)
    found, found_scores = [], []
    for block in rows.split(tile):
        q = queries[block]
        local = torch.arange(block.numel(), device=rows.device)
        first, last = block[[0, -1]].tolist()  # one host sync per query tile
        best_score = best = None
        for start in range(0, n, tile):
            s = gemm(q, keys[start : start + tile])
            if start <= last and first < start + tile:  # the tile may hold a query's self
                _exclude_self(s, block - start, local)
            score, index = tile_best(s, m)
            index += start
            if best is not None:  # merge with the earlier key tiles' best
                score = torch.cat([best_score, score], dim=1)
                score, pick = score.topk(min(m, score.size(1)), dim=1)
                index = torch.cat([best, index], dim=1).gather(1, pick)
            best_score, best = score, index
        found.append(best)
        found_scores.append(best_score)
    return torch.cat(found), torch.cat(found_scores)


def tile_best(s: Tensor, m: int, chunked: bool | None = None) -> tuple[Tensor, Tensor]:
    """The ``m`` largest entries of each row of the tile ``s`` and their columns, best first.
    ``chunked`` (default: on the devices of :data:`CHUNKED_DEVICES`) selects them among few:
    the row's ``m`` best lie in its ``m`` chunks of largest maximum (each chunk holding one
    of them has a maximum at least the ``m``-th best, and at most ``m`` chunks do), so the
    per-chunk maxima (one pass) choose ``m`` chunks and ``topk`` runs on their ``m × chunk``
    entries instead of the whole row. A tile with fewer than :data:`CHUNKS_PER_CANDIDATE`
    chunks per candidate, or not a whole number of them, takes a plain ``topk``."""
    rows, cols = s.shape
    m = min(m, cols)
    chunk = 1 << max(0, (cols // (CHUNKS_PER_CANDIDATE * m)).bit_length() - 1)
    chunk = min(chunk, MAX_CHUNK)
    if chunked is None:
        chunked = s.device.type in CHUNKED_DEVICES
    if not chunked or chunk < MIN_CHUNK or cols % chunk:
        return s.topk(m, dim=1)
    body = s.view(rows, cols // chunk, chunk)
    chosen = body.amax(2).topk(m, dim=1).indices
    entries = body.gather(1, chosen[:, :, None].expand(rows, m, chunk)).view(rows, m * chunk)
    score, at = entries.topk(m, dim=1)
    return score, chosen.gather(1, at // chunk) * chunk + at % chunk


def _exclude_self(s: Tensor, column: Tensor, local: Tensor) -> None:
    """``s[i, column[i]] = -inf`` where ``column[i]`` lies in the tile (no host sync)."""
    inside = (column >= 0) & (column < s.size(1))
    column = column.clamp(0, s.size(1) - 1)
    s[local, column] = torch.where(inside, float("-inf"), s[local, column])


def _rerank(
    x: Tensor, center: Tensor | None, rows: Tensor, cand: Tensor, metric: str, norms: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """The candidates sorted by their exact (float64) rank scores, ties by index:
    ``(index, score, rank score)``, ``score`` the similarity or the squared distance."""
    per_chunk = max(1, RERANK_ELEMENTS // (cand.size(1) * x.size(1)))
    index, score, rank = [], [], []
    for r, c in zip(rows.split(per_chunk), cand.split(per_chunk), strict=True):
        q, keys = x[r].double(), x[c].double()
        if metric == "l2":
            s = (keys - q[:, None]).square().sum(-1)
            exact = 0.5 * (norms[r, None].square() - s)  # q_c·x_c − ‖x_c‖²/2
        else:
            s = exact = torch.einsum("rmd,rd->rm", keys, q)
        c, by_index = c.sort(dim=1)  # then a stable sort by score: ties stay in index order
        exact, order = exact.gather(1, by_index).sort(dim=1, descending=True, stable=True)
        index.append(c.gather(1, order))
        score.append(s.gather(1, by_index).gather(1, order))
        rank.append(exact)
    return torch.cat(index), torch.cat(score), torch.cat(rank)


def _full_gemm(a: Tensor, b: Tensor) -> Tensor:
    with _fp32_matmul(a.device, "ieee"):  # a global TF32 setting must not reach "full"
        return a @ b.T


def _reduced(centred: Tensor, precision: str) -> tuple[Tensor, Callable[[Tensor, Tensor], Tensor]]:
    """The operand rounded to ``precision`` and the GEMM that multiplies it exactly into
    float32 (fast where the device has the format)."""
    single = centred.float()
    if precision == "tf32":
        return _round_tf32(single), _tf32_gemm
    rounded = single.bfloat16()
    if single.is_cuda:
        return rounded, _bf16_gemm_cuda
    return rounded.float(), _bf16_gemm_cpu


def _round_tf32(x: Tensor) -> Tensor:
    """Round to TF32's 10 fraction bits (to nearest), so that the tensor cores, which drop
    the low 13 bits, compute with the rounded value."""
    bits = x.view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def _tf32_gemm(a: Tensor, b: Tensor) -> Tensor:
    with _fp32_matmul(a.device, "tf32"):
        return a @ b.T


def _bf16_gemm_cuda(a: Tensor, b: Tensor) -> Tensor:
    try:
        return torch.mm(a, b.T, out_dtype=torch.float32)
    except TypeError:  # torch < 2.8: TF32 multiplies bf16 values exactly too, at half the rate
        return _tf32_gemm(a.float(), b.float())


def _bf16_gemm_cpu(a: Tensor, b: Tensor) -> Tensor:
    # float32 tensors holding bf16 values: oneDNN's bf16 mode (AMX) computes them exactly
    # with a float32 result, where a bf16 matmul would round the result to bf16
    with _fp32_matmul(a.device, "bf16"):
        return a @ b.T


@contextlib.contextmanager
def _fp32_matmul(device: torch.device, precision: str) -> Iterator[None]:
    """Float32 matmuls on ``device`` in ``precision`` (``"ieee"``, ``"tf32"``, ``"bf16"``)
    inside the block, the global setting restored after it; nothing on a torch without
    the setting (before 2.9)."""
    backend = torch.backends.cuda.matmul if device.type == "cuda" else torch.backends.mkldnn.matmul
    if not hasattr(backend, "fp32_precision") or device.type not in ("cuda", "cpu"):
        yield
        return
    previous = backend.fp32_precision
    backend.fp32_precision = precision
    try:
        yield
    finally:
        backend.fp32_precision = previous
