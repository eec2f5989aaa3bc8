"""An adversarial user's inputs, as the cases of tests/reliability/test_inputs.py: crafted
checkpoints, bad edges and features through the public API, crafted ``.npz`` files, output
collisions and nonsense options. A case is *clean* when refused with a ``ValueError`` (or
the command's one-line exit 2) and nothing ran, crashed or was overwritten, or, where the
case says so, when what it computes is right.

The node entry points: ``train_node_model`` (``x``, edges) and the probe's check of the
labels before training (``cl2gnn node``), which ``train_node_model`` does not read.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import math
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ._registry import TINY, case, refused, simclr

# --- crafted checkpoints ---------------------------------------------------------------------


class RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


for _field in ("epoch", "history", "config", "order_gen"):

    @case("crafted checkpoints", f"pickled callable in {_field}")
    def _checkpoint(folder: Path, field: str = _field) -> bool:
        run = folder / "run"
        simclr([*TINY, "--out", str(run)])
        state = torch.load(run / "checkpoint.pt", weights_only=True)
        state[field] = RunsCode(folder / "ran")
        torch.save(state, run / "checkpoint.pt")
        ok = refused(lambda: simclr([*TINY, "--epochs", "2", "--out", str(run), "--resume"]))
        return ok and not (folder / "ran").exists()


# --- bad edges and features through the public API ---------------------------------------------

N = 30
BAD_EDGES = {
    "target past N": [[0], [35]],
    "source past N": [[35], [0]],
    "target 1030": [[0], [1030]],
    "source 10**9": [[10**9], [0]],
    "negative": [[-1], [0]],
}


def ring(extra=None, dtype=torch.long) -> torch.Tensor:
    edges = torch.stack([torch.arange(N), (torch.arange(N) + 1) % N])
    if extra is not None:
        edges = torch.cat([edges, torch.tensor(extra)], 1)
    return edges.to(dtype)


def graph_calls() -> dict[str, Callable[[torch.Tensor], object]]:
    from torch_geometric.data import Data

    from cl2gnn.graphs import TorchNeighborSampler, neighbor_loader, normalized_laplacian
    from cl2gnn.losses import InfoNCELoss, SpectralContrastiveLoss
    from cl2gnn.nn import AlignConv, AttentionAlignConv, ContrastiveConv, UniformAttention

    x = F.normalize(torch.randn(N, 4), dim=1)

    def loader(edges):
        return next(iter(neighbor_loader(Data(x=x, edge_index=edges), [2, 2], batch_size=4)))

    return {
        "TorchNeighborSampler": lambda e: TorchNeighborSampler(Data(x=x, edge_index=e), [2]),
        "neighbor_loader": loader,
        "normalized_laplacian": lambda e: normalized_laplacian(e, N),
        "AlignConv": lambda e: AlignConv()(x.requires_grad_(), e).sum().backward(),
        "AttentionAlignConv": lambda e: AttentionAlignConv()(x, e),
        "ContrastiveConv": lambda e: ContrastiveConv().energy(x, e),
        "UniformAttention(edge_index)": lambda e: UniformAttention()(x, e),
        "InfoNCELoss(edge_index)": lambda e: InfoNCELoss()(x, edge_index=e),
        "SpectralContrastiveLoss(edge_index)": lambda e: SpectralContrastiveLoss()(x, edge_index=e),
    }


for _helper in (
    "TorchNeighborSampler",
    "neighbor_loader",
    "normalized_laplacian",
    "AlignConv",
    "AttentionAlignConv",
    "ContrastiveConv",
    "UniformAttention(edge_index)",
    "InfoNCELoss(edge_index)",
    "SpectralContrastiveLoss(edge_index)",
):
    for _label, _extra in BAD_EDGES.items():

        @case("bad edges (graph helpers)", f"{_helper}: {_label}")
        def _edges(folder: Path, helper: str = _helper, extra=_extra) -> bool:
            call = graph_calls()[helper]
            return refused(lambda: call(ring(extra)))

    for _dtype in (torch.float32, torch.int16):

        @case("bad edges (graph helpers)", f"{_helper}: {_dtype}")
        def _dtype_case(folder: Path, helper: str = _helper, dtype=_dtype) -> bool:
            return refused(lambda: graph_calls()[helper](ring(dtype=dtype)))


def node_data(edges=None, x=None, y=None):
    from torch_geometric.data import Data

    return Data(
        x=torch.randn(N, 8) if x is None else x,
        edge_index=ring() if edges is None else edges,
        y=torch.arange(N) % 3 if y is None else y,
    )


NODE_INPUTS = {
    **{f"edges {label}": {"edges": ring(extra)} for label, extra in BAD_EDGES.items()},
    "float edges": {"edges": ring(dtype=torch.float32)},
    "int features": {"x": torch.randint(0, 5, (N, 8))},
    "float16 features": {"x": torch.randn(N, 8).half()},
    "complex features": {"x": torch.randn(N, 8, dtype=torch.complex64)},
    "NaN feature": {"x": torch.randn(N, 8).index_fill_(0, torch.tensor([3]), math.nan)},
    "label -1": {"y": torch.tensor([-1] + [0, 1, 2] * 9 + [0, 1])},
}
for _method in ("grace", "cca_ssg", "bgrl"):
    for _label, _inputs in NODE_INPUTS.items():

        @case("bad edges/features (node entry)", f"{_method}: {_label}")
        def _node(folder: Path, method: str = _method, inputs=_inputs) -> bool:
            from cl2gnn.node import default_config, train_node_model
            from cl2gnn.node.evaluation.experiment import check_probe

            data = node_data(**inputs)
            if "y" in inputs:  # training reads no label: the probe's entry refuses them
                return refused(lambda: check_probe(data, ("grace",), range(1)))
            config = default_config("Cora", method).with_overrides(
                epochs=2, lr_warmup=0, encoder="sage"
            )
            return refused(lambda: train_node_model(data, method, config))


# --- crafted .npz files -------------------------------------------------------------------------


def npz_arrays(n: int = 40) -> dict:
    rng = np.random.default_rng(0)
    masks = np.zeros((3, 1, n), bool)
    masks[rng.permutation(np.repeat([0, 1, 2], [20, 10, 10])), 0, np.arange(n)] = True
    return {
        "node_features": rng.standard_normal((n, 6)).astype(np.float32),
        "node_labels": np.arange(n) % 3,
        "edges": np.stack([np.arange(n), (np.arange(n) + 1) % n], 1),
        "train_masks": masks[0],
        "val_masks": masks[1],
        "test_masks": masks[2],
    }


def declared(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in npz_arrays().items():
            member = io.BytesIO()
            if name == "node_features":
                header = {"descr": "<f8", "fortran_order": False, "shape": (10**12, 10**6)}
                np.lib.format.write_array_header_1_0(member, header)
            else:
                np.lib.format.write_array(member, array)
            archive.writestr(f"{name}.npy", member.getvalue())


def with_field(key: str, value) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        arrays = npz_arrays()
        arrays[key] = value(arrays[key]) if callable(value) else value
        np.savez(path, **arrays)

    return write


def plain_npy(path: Path) -> None:
    with open(path, "wb") as file:
        np.save(file, npz_arrays()["node_features"])


def huge(x):
    x = x.astype(np.float64)
    x[1, 1] = 1e300
    return x


NPZ = {
    "declared shape (1e12, 1e6)": declared,
    "a .npy named .npz": plain_npy,
    "features 1e300 (float64)": with_field("node_features", huge),
    "labels 2**64 - 1 (uint64)": with_field("node_labels", np.full(40, 2**64 - 1, np.uint64)),
    "label -1": with_field("node_labels", lambda y: np.where(np.arange(40) == 0, -1, y)),
    "zero feature columns": with_field("node_features", np.zeros((40, 0), np.float32)),
    "complex features": with_field("node_features", lambda x: x.astype(np.complex64)),
    "string features": with_field("node_features", lambda x: x.astype(str)),
    "object features": with_field("node_features", np.array([None] * 40, object)),
    "edge past N": with_field("edges", np.array([[0, 45]])),
    "NaN feature": with_field("node_features", lambda x: np.where(x > 2, np.nan, x)),
}
for _label, _write in NPZ.items():

    @case("crafted .npz files", _label)
    def _npz(folder: Path, write=_write) -> bool:
        from cl2gnn.cli.main import main

        path = folder / "G.npz"
        write(path)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                main(["node", "--dataset", str(path), "--no-progress"])
            except SystemExit as exit_:
                line = err.getvalue().strip()
                return exit_.code == 2 and "\n" not in line and f"{path}: " in line
            except BaseException:
                return False
        return False


# --- output collisions --------------------------------------------------------------------------


@case("output collisions", "a new run on a folder holding a checkpoint")
def _collision(folder: Path) -> bool:
    run = folder / "run"
    simclr([*TINY, "--out", str(run)])
    before = (run / "checkpoint.pt").read_bytes()
    refused(lambda: simclr([*TINY, "--out", str(run), "--seed", "3"]))
    return (run / "checkpoint.pt").read_bytes() == before


@case("output collisions", "a second live run on the same folder")
def _live(folder: Path) -> bool:
    run = folder / "run"
    run.mkdir()
    with contextlib.suppress(ImportError, AttributeError):
        from cl2gnn import _files

        holder = os.fork()
        if holder == 0:
            with _files.locked_folder(run):
                os.write(1, b"")
                import time

                time.sleep(30)
            os._exit(0)
        import time

        time.sleep(1.0)
        try:
            return refused(lambda: simclr([*TINY, "--out", str(run)]))
        finally:
            os.kill(holder, 9)
            os.waitpid(holder, 0)
    # without a lock helper: two runs' writes interleave silently
    return False


@case("output collisions", "resume records the epochs trained")
def _epochs(folder: Path) -> bool:
    run = folder / "run"
    simclr([*TINY, "--epochs", "3", "--out", str(run)])
    past = refused(lambda: simclr([*TINY, "--epochs", "2", "--out", str(run), "--resume"]))
    return past and simclr([*TINY, "--epochs", "4", "--out", str(run), "--resume"])["epochs"] == 4


@case("output collisions", "a stale .partial left by a killed writer")
def _partial(folder: Path) -> bool:
    from cl2gnn import _files

    run = folder / "run"
    run.mkdir()
    stale = run / _files.partial_name("checkpoint.pt")
    stale.write_bytes(b"half")
    simclr([*TINY, "--out", str(run)])
    return not stale.exists()


@case("output collisions", "the image cache after an image changes")
def _cache(folder: Path) -> bool:
    import time

    from torchvision.io import encode_png

    from cl2gnn.vision.data import read_image_folder

    os.environ["CL2GNN_CACHE"] = str(folder / "cache")
    root = folder / "images"

    def write(value: int) -> None:
        for cls in ("a", "b"):
            (root / "train" / cls).mkdir(parents=True, exist_ok=True)
            image = torch.full((3, 4, 4), value, dtype=torch.uint8)
            (root / "train" / cls / "0.png").write_bytes(encode_png(image).numpy().tobytes())

    write(10)
    read_image_folder(root, "train")
    time.sleep(0.01)
    write(200)
    return int(read_image_folder(root, "train").images.max()) == 200


@case("output collisions", "an output under a dangling symlink")
def _dangling(folder: Path) -> bool:
    (folder / "link").symlink_to(folder / "gone")
    return refused(lambda: simclr([*TINY, "--json", str(folder / "link" / "r.json")]))


# --- nonsense options ---------------------------------------------------------------------------


def option_cases() -> None:
    from cl2gnn.losses import PAIR_LOSSES
    from cl2gnn.nn import OPERATORS

    z1, z2 = (F.normalize(torch.randn(8, 6), dim=1) for _ in "12")
    for name, cls in PAIR_LOSSES.items():
        for value in (math.inf, math.nan, 1e-30):
            if "temperature" not in inspect.signature(cls.__init__).parameters:
                continue  # SpectralContrastiveLoss, AlignmentUniformityLoss

            @case("nonsense options", f"{name}(temperature={value})")
            def _loss(folder: Path, cls=cls, value=value) -> bool:
                return refused(lambda: cls(temperature=value)(z1, z2))

    for name, cls in OPERATORS.items():
        args = {"MultiStageMemory": (4, 3), "ContrastiveNorm": (4,)}.get(name, ())
        for value in (math.nan, math.inf):

            @case("nonsense options", f"{name}(step={value})")
            def _step(folder: Path, cls=cls, args=args, value=value) -> bool:
                return refused(lambda: cls(*args, step=value))

    @case("nonsense options", "UniformAttention(temperature=inf)")
    def _uniform(folder: Path) -> bool:
        return refused(lambda: OPERATORS["UniformAttention"](temperature=math.inf)(z1))

    edges, weight = ring()[:, :8] % 8, torch.tensor([1.0, -2.0, 1, 1, 1, 1, 1, 1])
    for name in ("AlignConv", "AttentionAlignConv", "ContrastiveConv"):

        @case("nonsense options", f"{name} with a negative edge weight")
        def _weight(folder: Path, name: str = name) -> bool:
            return refused(lambda: OPERATORS[name]()(z1, edges, weight))

    @case("nonsense options", "SpectralContrastiveLoss on one row")
    def _one_row(folder: Path) -> bool:
        return refused(lambda: PAIR_LOSSES["SpectralContrastiveLoss"]()(z1[:1], z2[:1]))


option_cases()
