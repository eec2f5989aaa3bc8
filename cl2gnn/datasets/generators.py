"""Synthetic class-structured graphs: the stochastic block model of the dynamics studies
(:func:`sbm_graph`), and a degree-corrected contextual SBM large enough to stand in for the
OGB graphs (:func:`contextual_sbm`).

The contextual SBM's nodes have classes, Gaussian features around a class mean (the
"contextual" part) and heavy-tailed degrees; a chosen fraction of the edges joins nodes of
the same class. The graph is generated in chunks into preallocated tensors, so that a graph
of ogbn-products' size (2.4M nodes, 62M edges) needs about its own size in memory, and
written (:func:`~cl2gnn.datasets.write_npz`) in the ``.npz`` format ``cl2gnn node
--dataset PATH.npz`` reads::

    cl2gnn generate --preset products --out products.npz
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import stochastic_blockmodel_graph

from .._checks import integer

PRESETS: dict[str, dict[str, float]] = {
    "arxiv": dict(
        num_nodes=169_343, num_edges=1_166_243, num_features=128, num_classes=40, homophily=0.65
    ),
    "products": dict(
        num_nodes=2_449_029, num_edges=61_859_140, num_features=100, num_classes=47, homophily=0.8
    ),
}


STREAM_ROWS = 4096  # rows (nodes or edges) per random stream; chunks are whole streams
_NODES, _FEATURES, _EDGES = range(3)  # the random streams' purposes
_SPLIT = (0.1, 0.1)  # train and validation fractions; the rest is test


def sbm_graph(
    block_sizes: Sequence[int],
    p: float,
    q: float,
    *,
    seed: int | None = None,
    device: torch.device | str | None = None,
) -> tuple[Tensor, Tensor]:
    r"""An undirected SBM graph: edge probability ``p`` inside a block, ``q`` across.

    Args:
        block_sizes (Sequence[int]): vertices per block (the ground-truth clusters).
        p (float): within-block edge probability in ``[0, 1]``.
        q (float): between-block edge probability in ``[0, 1]``.
        seed (int, optional): seed for a reproducible graph.
        device (optional): device of the outputs.

    Returns:
        ``(edge_index [2, E], labels [N])``; no self loops, both directions present.
    """
    if not block_sizes or min(block_sizes) < 1:
        raise ValueError(f"block_sizes must be positive integers, got {list(block_sizes)}")
    for name, value in (("p", p), ("q", q)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    num_blocks = len(block_sizes)
    probs = torch.full((num_blocks, num_blocks), float(q))
    probs.fill_diagonal_(float(p))
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        edge_index = stochastic_blockmodel_graph(list(block_sizes), probs)
    labels = torch.arange(num_blocks).repeat_interleave(torch.tensor(list(block_sizes)))
    return edge_index.to(device), labels.to(device)


def contextual_sbm(
    num_nodes: int,
    num_edges: int,
    num_features: int,
    num_classes: int,
    *,
    homophily: float = 0.8,
    feature_signal: float = 1.0,
    degree_spread: float = 1.0,
    seed: int = 0,
    chunk_size: int = 1 << 20,
) -> Data:
    r"""A degree-corrected contextual SBM graph with one random train/validation/test split.

    Classes are assigned in equal shares at random. Node :math:`i` of class :math:`y_i`
    has features :math:`x_i = \mu_{y_i} + \varepsilon_i`, :math:`\varepsilon_i \sim
    \mathcal{N}(0, I_F)`, with class means :math:`\mu_c \sim \mathcal{N}(0, s^2 I_F / F)`
    (norm about :math:`s`, the ``feature_signal``), and a propensity
    :math:`\theta_i \sim \mathrm{LogNormal}(0, \sigma^2)` (:math:`\sigma` the
    ``degree_spread``) to which its expected degree is proportional. Each undirected edge
    draws its source :math:`u \propto \theta`; its target class is :math:`y_u` with
    probability ``homophily``, else another class :math:`c \propto \Theta_c = \sum_{y_i = c}
    \theta_i`; its target is drawn within that class :math:`\propto \theta`. A self-loop is
    redrawn; multi-edges are kept (about :math:`E \cdot \overline{\theta^2}^2 / (N
    \overline{\theta}^2)^2`-rare; the ``.npz`` reader merges them). So the expected edge
    homophily is ``homophily``, whatever the classes' sizes.

    Randomness comes in streams of :data:`STREAM_ROWS` rows, each seeded from ``(seed,
    purpose, stream index)``: the graph depends on ``seed`` only, not on ``chunk_size``.

    Args:
        num_nodes (int): nodes, at least two per class.
        num_edges (int): undirected edges (each stored in both directions).
        num_features (int): feature dimension.
        num_classes (int): classes, ``>= 2``.
        homophily (float, optional): the expected fraction of edges joining a class to
            itself, in ``[0, 1]`` (default: ``0.8``).
        feature_signal (float, optional): norm of the class means against unit noise per
            dimension, ``>= 0``; ``0`` gives features without class information
            (default: ``1.0``).
        degree_spread (float, optional): standard deviation of the log-propensities,
            ``>= 0``; ``0`` gives a plain (Poisson-degree) SBM (default: ``1.0``).
        seed (int, optional): the graph's seed (default: ``0``).
        chunk_size (int, optional): edges or nodes generated at once, rounded up to whole
            streams; the memory beyond the output is about 80 bytes per edge of a chunk
            (default: ``2**20``).

    Shapes:
        - **output**: ``Data`` with ``x`` ``[N, F]`` float32, ``y`` ``[N]`` int64,
          ``edge_index`` ``[2, 2E]`` int64 (columns ``i`` and ``E + i`` are the two
          directions of edge ``i``), ``train_mask``, ``val_mask``, ``test_mask`` ``[N]``
          booleans (10 / 10 / 80 %).
    """
    integer(2)(num_classes, "num_classes")
    integer(2 * num_classes)(num_nodes, "num_nodes")
    integer(1)(num_edges, "num_edges")
    integer(1)(num_features, "num_features")
    integer(0)(seed, "seed")
    integer(1)(chunk_size, "chunk_size")
    for name, value, high in (
        ("homophily", homophily, 1.0),
        ("feature_signal", feature_signal, float("inf")),
        ("degree_spread", degree_spread, float("inf")),
    ):
        if not 0.0 <= value <= high:
            allowed = "in [0, 1]" if high == 1.0 else ">= 0 and finite"
            raise ValueError(f"{name} must be {allowed}, got {value}")
    streams_per_chunk = -(-chunk_size // STREAM_ROWS)

    nodes = _generator(seed, _NODES, 0)
    y = (torch.randperm(num_nodes, generator=nodes) % num_classes).to(torch.long)
    means = torch.randn(num_classes, num_features, generator=nodes)
    means *= feature_signal / num_features**0.5
    theta = torch.empty(num_nodes, dtype=torch.float64)
    if degree_spread > 0:
        theta.log_normal_(0.0, degree_spread, generator=nodes)
    else:
        theta.fill_(1.0)
    split = torch.randperm(num_nodes, generator=nodes)
    bounds = [round(f * num_nodes) for f in np.cumsum(_SPLIT)]
    masks = [torch.zeros(num_nodes, dtype=torch.bool) for _ in range(3)]
    for mask, part in zip(masks, split.tensor_split(bounds), strict=True):
        mask[part] = True

    x = torch.empty(num_nodes, num_features)
    for start, stop, generators in _chunks(num_nodes, streams_per_chunk, seed, _FEATURES):
        noise = [torch.randn(len(g), num_features, generator=g.generator) for g in generators]
        torch.add(torch.cat(noise), means[y[start:stop]], out=x[start:stop])

    sampler = _EdgeSampler(y, theta, num_classes, homophily)
    edge_index = torch.empty(2, 2 * num_edges, dtype=torch.long)
    for start, stop, generators in _chunks(num_edges, streams_per_chunk, seed, _EDGES):
        source, target = sampler(generators)
        edge_index[0, start:stop] = edge_index[1, num_edges + start : num_edges + stop] = source
        edge_index[1, start:stop] = edge_index[0, num_edges + start : num_edges + stop] = target
    train, val, test = masks
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test)


class _Stream:
    """One stream's generator and how many rows it covers."""

    def __init__(self, generator: torch.Generator, rows: int):
        self.generator, self.rows = generator, rows

    def __len__(self) -> int:
        return self.rows


def _generator(seed: int, purpose: int, stream: int) -> torch.Generator:
    state = np.random.SeedSequence([seed, purpose, stream]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state[0]))


def _chunks(
    rows: int, streams_per_chunk: int, seed: int, purpose: int
) -> Iterator[tuple[int, int, list[_Stream]]]:
    """``(start, stop, streams)`` of consecutive chunks covering ``rows`` rows."""
    num_streams = -(-rows // STREAM_ROWS)
    for first in range(0, num_streams, streams_per_chunk):
        last = min(first + streams_per_chunk, num_streams)
        streams = [
            _Stream(
                _generator(seed, purpose, s),
                min((s + 1) * STREAM_ROWS, rows) - s * STREAM_ROWS,
            )
            for s in range(first, last)
        ]
        yield first * STREAM_ROWS, min(last * STREAM_ROWS, rows), streams


class _EdgeSampler:
    """Draws edges from four uniforms each, by inverse transform: ``searchsorted`` on the
    cumulative propensities of the nodes sorted by class (one float64 array, so that a
    class is one contiguous interval of it) and on the classes' cumulative totals."""

    def __init__(self, y: Tensor, theta: Tensor, num_classes: int, homophily: float):
        self.homophily = homophily
        self.order = y.argsort(stable=True)  # node ids sorted by class
        self.cumulative = theta[self.order].cumsum(0)
        sizes = torch.bincount(y, minlength=num_classes)
        ends = sizes.cumsum(0)
        self.first = ends - sizes  # the class's first position in `order`
        self.last = ends - 1
        total_before = torch.cat([torch.zeros(1, dtype=torch.float64), self.cumulative])
        self.class_start = total_before[self.first]  # cumulative propensity before the class
        self.class_total = total_before[ends] - self.class_start
        self.class_cumulative = self.class_total.cumsum(0)
        self.class_of = y

    def __call__(self, streams: list[_Stream]) -> tuple[Tensor, Tensor]:
        uniforms = torch.cat(
            [torch.rand(len(s), 4, generator=s.generator, dtype=torch.float64) for s in streams]
        )
        source, target = self._draw(uniforms)
        # redraw self-loops from their own stream, in row order: chunking cannot change them
        stream_of_row = torch.repeat_interleave(torch.tensor([len(s) for s in streams]))
        loops = (source == target).nonzero().squeeze(1)
        while loops.numel():
            streams_hit, counts = stream_of_row[loops].unique(return_counts=True)
            redraw = [
                torch.rand(int(n), 4, generator=streams[s].generator, dtype=torch.float64)
                for s, n in zip(streams_hit.tolist(), counts, strict=True)
            ]
            source[loops], target[loops] = self._draw(torch.cat(redraw))
            loops = loops[source[loops] == target[loops]]
        return source, target

    def _draw(self, u: Tensor) -> tuple[Tensor, Tensor]:
        total = self.cumulative[-1]
        source = self._position(u[:, 0] * total, 0, self.cumulative.numel() - 1)
        own = self.class_of[self.order[source]]
        # another class ∝ its total: a uniform over the totals with the own class cut out
        own_total, own_start = (
            self.class_total[own],
            self.class_cumulative[own] - self.class_total[own],
        )
        v = u[:, 2] * (self.class_cumulative[-1] - own_total)
        v += own_total * (v >= own_start)
        other = torch.searchsorted(self.class_cumulative, v, right=True)
        other.clamp_(max=self.class_total.numel() - 1)
        target_class = torch.where(u[:, 1] < self.homophily, own, other)
        within = self.class_start[target_class] + u[:, 3] * self.class_total[target_class]
        target = self._position(within, self.first[target_class], self.last[target_class])
        return self.order[source], self.order[target]

    def _position(self, value: Tensor, low: int | Tensor, high: int | Tensor) -> Tensor:
        """The node position whose propensity interval holds ``value``, kept in ``[low,
        high]`` against rounding at the intervals' ends."""
        return torch.searchsorted(self.cumulative, value, right=True).clamp_(low, high)
