"""The kNN search: torch tiles in full and reduced precision against float64 brute force
(random and adversarial rows), the merge across key tiles, the rows the reduced precision
cannot certify, FAISS's fallbacks, and the spherical k-means that stands in for FAISS's."""

import sys
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score
from torch.utils._python_dispatch import TorchDispatchMode

from cl2gnn.graphs import _faiss, cluster_labels, knn_graph, spherical_kmeans
from cl2gnn.graphs import knn as knn_module
from cl2gnn.graphs import knn_tiles as knn_tiles_module
from cl2gnn.graphs.knn import PRECISIONS, choose_search
from cl2gnn.graphs.knn_tiles import TILE_PRECISIONS, default_margin, knn_tiles, tile_best

REDUCED = [p for p in TILE_PRECISIONS if p != "full"]
CPU, CUDA = torch.device("cpu"), torch.device("cuda")
# float32 tiles choose the rows searched in full: a neighbor may trade places with one whose
# float64 score is within float32's rounding of d products (d <= 12 here), relative to the
# scores' scale
FLOAT32_SLACK = 2e-6


def brute_force(x, metric):
    """Float64 ``(nearness [N, N], score [N, N])``: larger nearness is nearer (similarity,
    or minus the squared distance), the diagonal -inf; the score is the similarity or the
    squared distance. Cosine rows are normalised as ``knn_graph`` does, in float32."""
    rows = (F.normalize(x, dim=-1) if metric == "cosine" else x).double()
    if metric == "l2":
        score = (rows[:, None] - rows[None]).square().sum(-1)
        nearness = -score
    else:
        score = nearness = rows @ rows.T
    nearness = nearness.clone().fill_diagonal_(float("-inf"))
    return nearness, score


def check_exact(x, k, metric, edge_index, scores):
    """``knn_graph``'s output is the exact kNN graph: grouped by query, no self pair, each
    edge's score its own, nearest first by float64 scores, and every neighbor among the
    exact k nearest (up to float32's rounding for rows searched in full)."""
    n = x.size(0)
    assert torch.equal(edge_index[1], torch.arange(n).repeat_interleave(k))
    nbr = edge_index[0].view(n, k)
    assert not bool((nbr == torch.arange(n)[:, None]).any()), "self pair returned"
    assert bool((nbr.sort(1).values.diff(dim=1) > 0).all()), "a neighbor returned twice"
    nearness, score = brute_force(x, metric)
    scale = float(score.abs().max()) + 1
    own = score.gather(1, nbr)
    assert torch.allclose(scores.view(n, k).double(), own, rtol=0, atol=FLOAT32_SLACK * scale)
    got = nearness.gather(1, nbr)
    assert bool((got.diff(dim=1) <= 1e-12 * scale).all()), "not nearest first"
    kth = nearness.topk(k, dim=1).values[:, -1]
    assert bool((got[:, -1] >= kth - FLOAT32_SLACK * scale).all()), "a nearer row left out"


def rows_of(kind, n, d, generator):
    x = torch.randn(n, d, generator=generator)
    if kind == "duplicates":  # every row one of a few, repeated
        x = x[torch.randint(0, max(1, n // 4), (n,), generator=generator)]
    elif kind == "zeros":
        x[torch.rand(n, generator=generator) < 0.3] = 0
    elif kind == "near ties":  # tight groups: differences far below bf16's resolution
        x = x[torch.randint(0, min(3, n), (n,), generator=generator)]
        x = x + 1e-4 * torch.randn(n, d, generator=generator)
    elif kind == "offset":  # far from the origin: the l2 tiles must centre the rows
        x = x + 100
    return x


@settings(max_examples=120)
@given(
    kind=st.sampled_from(["gaussian", "duplicates", "zeros", "near ties", "offset"]),
    n=st.integers(2, 70),
    d=st.integers(1, 8),
    k_fraction=st.floats(0, 1),
    tile=st.integers(1, 80),
    precision=st.sampled_from(TILE_PRECISIONS),
    metric=st.sampled_from(["cosine", "ip", "l2"]),
    seed=st.integers(0, 2**16),
)
def test_tiles_match_float64_bruteforce(kind, n, d, k_fraction, tile, precision, metric, seed):
    x = rows_of(kind, n, d, torch.Generator().manual_seed(seed))
    k = 1 + round(k_fraction * (n - 2))  # 1 ... N - 1
    edge_index, scores = knn_graph(
        x, k, metric, backend="torch", precision=precision, tile_size=tile, return_scores=True
    )
    check_exact(x, k, metric, edge_index, scores)


@pytest.mark.parametrize("precision", TILE_PRECISIONS)
def test_merge_keeps_every_key_tiles_best(precision):
    """Tiles of 8 rows (not dividing 53): each row's nearest rows lie in another tile, the
    first half's in the last tiles and the second half's in the first."""
    gen = torch.Generator().manual_seed(0)
    half = torch.randn(26, 6, generator=gen)
    x = torch.cat([half, half + 0.01 * torch.randn(26, 6, generator=gen), torch.randn(1, 6)])
    for metric in ("ip", "l2"):
        nearness, _ = brute_force(x, metric)
        search = knn_tiles(x, 4, metric, 8, precision)
        assert torch.equal(search.index, nearness.topk(4, dim=1).indices)


def separated_groups(sizes, spreads, d=24, generator=None):
    """Unit-ish rows in groups: group ``g`` is ``e_g + spread * noise`` (noise in the
    coordinates after the groups'), so groups are orthogonal and a group's rows are as
    close to each other as ``spread`` makes them."""
    rows, groups = [], len(sizes)
    for g, (size, spread) in enumerate(zip(sizes, spreads, strict=True)):
        noise = torch.zeros(size, d)
        noise[:, groups:] = torch.randn(size, d - groups, generator=generator)
        rows.append(F.one_hot(torch.tensor(g), d).float() + spread * noise)
    return torch.cat(rows)


@pytest.mark.parametrize("metric", ["ip", "l2"])
@pytest.mark.parametrize("precision", REDUCED)
def test_rows_the_error_bound_cannot_certify_are_counted(precision, metric):
    """Rows with more than ``margin`` others tied below the reduced resolution around the
    k-th neighbor are searched again in full, and only those: each row of a group of
    ``k + margin + 2`` near-identical rows (spread 1e-3, similarities within 1e-6) is
    counted; each row of a group of ``k + 1``, its ``k`` neighbors far nearer than any other
    row, is certified."""
    k = 3
    tied = k + default_margin(k) + 2
    gen = torch.Generator().manual_seed(1)
    x = separated_groups([tied, k + 1, tied, k + 1], [1e-3, 0.1, 1e-3, 0.1], generator=gen)
    rows = F.normalize(x, dim=1) if metric == "ip" else x
    search = knn_tiles(rows, k, metric, 16, precision)
    assert search.rechecked == 2 * tied
    edges = torch.stack([search.index.reshape(-1), torch.arange(len(x)).repeat_interleave(k)])
    check_exact(rows, k, metric, edges, search.score)


@pytest.mark.parametrize("offset", [0.0, 100.0])
@pytest.mark.parametrize("precision", REDUCED)
def test_near_ties_below_the_reduced_resolution_are_exact(precision, offset):
    """60 rows whose similarities differ by about 1e-4 (above float32's resolution, below
    bf16's and TF32's), far from the origin or not: the reduced tiles cannot order them, the
    exact re-rank and the full search of the uncertified rows must."""
    gen = torch.Generator().manual_seed(2)
    x = separated_groups([60, 4], [0.01, 0.1], d=12, generator=gen)
    for metric, rows in (("ip", F.normalize(x, dim=1)), ("l2", x + offset)):
        edge_index, scores = knn_graph(
            rows, 5, metric, backend="torch", precision=precision, return_scores=True
        )
        check_exact(rows, 5, metric, edge_index, scores)


@pytest.mark.parametrize("precision", TILE_PRECISIONS)
def test_equal_scores_come_in_index_order(precision):
    """Rows 1 and 2 score exactly 2 with row 0, in float64 as in float32, but bf16 rounds
    row 1 down (1 + 2**-8 -> 1): the bf16 tiles find row 2 first, the answer lists row 1
    first. Row 3 duplicates row 0 among far rows."""
    x = torch.tensor(
        [[1.0, 1.0], [1 + 2**-8, 1 - 2**-8], [1.0, 1.0], [1.0, 1.0], [-5.0, 2.0], [3.0, -7.0]]
    )
    search = knn_tiles(x, 3, "ip", 2, precision)
    assert search.index[0].tolist() == [1, 2, 3]
    assert search.index[3].tolist() == [0, 1, 2]


@settings(max_examples=80)
@given(
    rows=st.integers(1, 6),
    cols=st.one_of(st.integers(1, 300), st.sampled_from([64, 96, 256, 1024])),  # and chunks
    m=st.integers(1, 12),
    levels=st.sampled_from([3, 50, 10**6]),  # few levels: many ties
    masked=st.floats(0, 0.5),
    seed=st.integers(0, 2**16),
)
def test_a_tiles_best_chosen_by_chunk_maxima_are_its_top_k(rows, cols, m, levels, masked, seed):
    """The chunk-maxima selection returns the row's ``m`` largest values, best first, and
    columns that hold them (with ties, any of the tied columns), as ``topk`` does; -inf
    entries (self pairs) included."""
    gen = torch.Generator().manual_seed(seed)
    s = torch.randint(0, levels, (rows, cols), generator=gen).double()
    s[torch.rand(rows, cols, generator=gen) < masked] = float("-inf")
    score, column = tile_best(s, m, chunked=True)
    expected = s.topk(min(m, cols), dim=1).values
    assert torch.equal(score, expected)
    assert torch.equal(s.gather(1, column), score)
    assert bool((column.sort(1).values.diff(dim=1) > 0).all())  # no column twice


def test_a_wide_tile_is_never_sorted_whole(monkeypatch):
    """Where the tiles are chosen by chunk maxima (a GPU's way, here on the CPU), on tiles of
    1,024 keys the ``topk`` calls take the chunk maxima or the chosen chunks' entries (and
    the merges), never a row of the tile; the graph is still exact."""
    monkeypatch.setattr(knn_tiles_module, "CHUNKED_DEVICES", ("cpu",))
    gen = torch.Generator().manual_seed(5)
    x = rows_of("gaussian", 2500, 16, gen)
    widths = []

    class TopkWidths(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten.topk.default:
                widths.append(args[0].size(-1))
            return func(*args, **(kwargs or {}))

    for precision in TILE_PRECISIONS:
        widths.clear()
        with TopkWidths():
            edge_index, scores = knn_graph(
                x, 10, "l2", backend="torch", precision=precision, tile_size=1024,
                return_scores=True,
            )  # fmt: skip
        assert widths and max(widths) < 1024 // 2
        check_exact(x, 10, "l2", edge_index, scores)


@pytest.mark.parametrize("precision", TILE_PRECISIONS)
def test_folded_norms_make_the_scores_in_the_product(precision):
    """``[x_c, 1…]·[x_c, -h…]``: the half squared norm's terms sum to its float32 value
    exactly, and the product is ``q·x - h`` within the operands' rounding."""
    gen = torch.Generator().manual_seed(6)
    operand = torch.randn(40, 13, generator=gen) * 30
    half = 0.5 * operand.double().square().sum(1).float()
    if precision != "full":
        assert torch.equal(torch.stack(knn_tiles_module._exact_terms(half, precision)).sum(0), half)
    queries, keys = knn_tiles_module._folded(operand, half, precision)
    assert queries.size(1) % 8 == 0 and keys.shape == queries.shape
    product = queries.double() @ keys.double().T
    expected = operand.double() @ operand.double().T - half.double()
    assert torch.allclose(product, expected, rtol=0, atol=1e-9 * float(half.max()))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("precision", PRECISIONS)
def test_cuda_tiles_match_float64_bruteforce(precision):
    """The device's own GEMMs (bf16 with a float32 result, TF32, IEEE float32): 1,500 rows
    in tight groups (near ties below bf16's resolution) and far from the origin, tiles of
    256 rows."""
    gen = torch.Generator().manual_seed(4)
    x = torch.cat([rows_of("near ties", 750, 32, gen), rows_of("gaussian", 750, 32, gen)])
    for metric, rows in (("ip", F.normalize(x, dim=1)), ("l2", x + 100)):
        edge_index, scores = knn_graph(
            rows.cuda(),
            10,
            metric,
            backend="torch",
            precision=precision,
            tile_size=256,
            return_scores=True,
        )
        check_exact(rows, 10, metric, edge_index.cpu(), scores.cpu())


def test_knn_graph_refuses_bad_precision_and_tile_size():
    x = torch.randn(10, 3)
    with pytest.raises(ValueError, match="precision"):
        knn_graph(x, 2, precision="fp8")
    with pytest.raises(ValueError, match="tile_size"):
        knn_graph(x, 2, backend="torch", tile_size=0)


@pytest.fixture
def fresh_faiss():
    """FAISS's loading answers cleared before and after the test (they are cached)."""
    caches = (_faiss._load, _faiss.faiss_has_gpu)  # before a test replaces them
    for cached in caches:
        cached.cache_clear()
    yield
    for cached in caches:
        cached.cache_clear()


@pytest.fixture
def fake_faiss(monkeypatch, fresh_faiss):
    """Install a stand-in ``faiss`` module (``None``: one that does not import)."""

    def install(module, problem=None):
        monkeypatch.setattr(_faiss, "_load", lambda: (module, problem))
        _faiss.faiss_has_gpu.cache_clear()  # an answer about the faiss installed before

    return install


@pytest.mark.parametrize(
    "error",
    [
        "ImportError('No module named faiss')",
        "OSError('libcublas.so.12: cannot open shared object file')",
        "RuntimeError('CUDA error: no kernel image is available for execution')",
    ],
)
def test_faiss_that_does_not_import_falls_back_to_torch(error, tmp_path, monkeypatch, fresh_faiss):
    """An installed faiss whose import fails (its CUDA libraries missing) is no faiss: the
    default search, k-means and ``cl2gnn info`` go on without it; ``backend="faiss"`` says
    why it cannot."""
    (tmp_path / "faiss.py").write_text(f"raise {error}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "faiss", raising=False)
    assert not _faiss.faiss_available() and not _faiss.faiss_has_gpu()
    assert _faiss.faiss_problem().startswith(error.split("(")[0])
    x = torch.randn(40, 5)
    assert choose_search("auto", "auto", "flat", 3, CPU, x.dtype) == ("torch", "full")
    assert torch.equal(knn_graph(x, 3), knn_graph(x, 3, backend="torch"))
    with pytest.raises(ValueError, match="does not load"):
        knn_graph(x, 3, backend="faiss")
    torch.manual_seed(3)
    labels = cluster_labels(x, 4)
    torch.manual_seed(3)
    assert torch.equal(labels, spherical_kmeans(x, 4))

    from cl2gnn.cli.main import main

    assert main(["info"]) == 0


def test_info_names_why_faiss_does_not_load(fake_faiss, capsys):
    from cl2gnn.cli.main import main

    fake_faiss(None, "OSError: libcublas.so.12: cannot open shared object file")
    assert main(["info"]) == 0
    assert "unusable: OSError: libcublas.so.12" in capsys.readouterr().out


def gpu_faiss(fails_at_first_use):
    """A faiss with one GPU whose first GPU call fails (cuBLAS from another CUDA) or works."""

    class Resources:
        def __init__(self):
            if fails_at_first_use:
                raise RuntimeError("CUBLAS_STATUS_NOT_INITIALIZED")

    class Index:
        def __init__(self, resources, d):
            pass

        def add(self, points):
            pass

        def search(self, points, k):
            return np.zeros((len(points), k)), np.zeros((len(points), k), dtype=np.int64)

    return types.SimpleNamespace(
        StandardGpuResources=Resources, GpuIndexFlatL2=Index, get_num_gpus=lambda: 1
    )


def test_faiss_gpu_that_fails_at_first_use_falls_back_to_torch(fake_faiss, monkeypatch):
    monkeypatch.setattr(knn_module, "has_tf32", lambda device: True)
    fake_faiss(gpu_faiss(fails_at_first_use=True))
    assert _faiss.faiss_available() and not _faiss.faiss_has_gpu()
    assert choose_search("auto", "auto", "flat", 10, CUDA, torch.float32) == ("torch", "tf32")


def test_choice_of_backend_and_precision(fake_faiss, monkeypatch):
    """FAISS where it runs on the rows' device (on a GPU: k within its k-selection); torch
    where a tile precision is named; TF32 tiles on CUDA devices that have them."""
    tf32 = {"yes": True}
    monkeypatch.setattr(knn_module, "has_tf32", lambda device: tf32["yes"])
    fake_faiss(gpu_faiss(fails_at_first_use=False))
    f32, f64 = torch.float32, torch.float64
    assert choose_search("auto", "auto", "flat", 10, CUDA, f32) == ("faiss", "auto")
    assert choose_search("auto", "auto", "flat", 2048, CUDA, f32) == ("torch", "tf32")
    assert choose_search("auto", "bf16", "flat", 10, CUDA, f32) == ("torch", "bf16")
    assert choose_search("torch", "auto", "flat", 10, CUDA, f64) == ("torch", "full")
    assert choose_search("auto", "auto", "flat", 10, CPU, f32) == ("faiss", "auto")
    assert choose_search("torch", "auto", "flat", 10, CPU, f32) == ("torch", "full")
    tf32["yes"] = False
    assert choose_search("torch", "auto", "flat", 10, CUDA, f32) == ("torch", "full")
    with pytest.raises(ValueError, match="precision='bf16'"):
        choose_search("faiss", "bf16", "flat", 10, CPU, f32)
    with pytest.raises(ValueError, match="index='ivf'"):
        choose_search("torch", "auto", "ivf", 10, CPU, f32)
    fake_faiss(None, "ImportError: No module named 'faiss'")
    assert choose_search("auto", "auto", "flat", 10, CUDA, f32) == ("torch", "full")


def separated_clusters(clusters=6, per_cluster=60, d=16, noise=0.05, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centers = F.normalize(torch.randn(clusters, d, generator=gen), dim=1)
    truth = torch.arange(clusters * per_cluster) % clusters
    return centers[truth] + noise * torch.randn(len(truth), d, generator=gen), truth


@pytest.mark.skipif(not _faiss.faiss_available(), reason="faiss not installed")
def test_spherical_kmeans_is_faiss_kmeans_from_the_same_start():
    faiss = _faiss.load_faiss()
    x, _ = separated_clusters(noise=0.3)  # overlapping: the iterations matter
    init = x[:6] + 0.5 * x[6:12]
    rows = F.normalize(x, dim=1).numpy()
    kmeans = faiss.Kmeans(x.size(1), 6, niter=20, spherical=True)
    kmeans.train(rows, init_centroids=F.normalize(init, dim=1).numpy())
    expected = torch.from_numpy(kmeans.index.search(rows, 1)[1][:, 0])
    assert torch.equal(spherical_kmeans(x, 6, init=init), expected)


@pytest.mark.skipif(not _faiss.faiss_available(), reason="faiss not installed")
@pytest.mark.parametrize("seed", range(3))
def test_spherical_kmeans_finds_separated_clusters_as_faiss_does(seed):
    faiss = _faiss.load_faiss()
    x, truth = separated_clusters(seed=seed)
    rows = F.normalize(x, dim=1).numpy()
    kmeans = faiss.Kmeans(x.size(1), 6, niter=20, spherical=True, nredo=10, seed=seed)
    kmeans.train(rows)
    by_faiss = kmeans.index.search(rows, 1)[1][:, 0]
    torch.manual_seed(seed)
    labels = spherical_kmeans(x, 6)
    assert adjusted_rand_score(by_faiss, labels) == 1.0
    assert adjusted_rand_score(truth, labels) == 1.0


def test_cluster_labels_without_faiss_repeat_under_a_seed(monkeypatch, fresh_faiss):
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss raises ImportError
    x, truth = separated_clusters()
    torch.manual_seed(5)
    labels = cluster_labels(x, 6)
    torch.manual_seed(5)
    assert torch.equal(labels, cluster_labels(x, 6))
    assert adjusted_rand_score(truth, labels) == 1.0


def test_empty_cluster_is_reseeded():
    """Two identical starting centroids: the second gets no row (ties go to the first); it
    is re-seeded with the worst-served row, and the six clusters are found."""
    x, truth = separated_clusters()
    init = x[[0, 0, 1, 2, 3, 4]]  # cluster 5 has no centroid, cluster 0 two
    assert adjusted_rand_score(truth, spherical_kmeans(x, 6, init=init)) == 1.0


def test_spherical_kmeans_refuses_bad_arguments():
    x = torch.randn(10, 3)
    with pytest.raises(ValueError, match="clusters"):
        spherical_kmeans(x, 11)
    with pytest.raises(ValueError, match="init"):
        spherical_kmeans(x, 2, init=torch.randn(3, 3))
    with pytest.raises(ValueError, match="iterations"):
        spherical_kmeans(x, 2, iterations=0)
