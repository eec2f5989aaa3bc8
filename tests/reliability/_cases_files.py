"""Issue 64's findings ("files under attack") as the adversarial cases of
tests/reliability/test_files.py, one category per finding, named by its number, each with the
probe's case as its input: a case is clean when the input is refused in one line (exit 2,
nothing written) or a ``ValueError``, or, where it says so, when what comes back is right.
The crafted files that would run code write a marker file when run: a case is clean only if
no marker appears."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import torch

from ._cases_inputs import RunsCode
from ._cases_trust import N, node_args, small_graph, snapshot, train
from ._registry import TINY, case, command, refused, refused_in_one_line, simclr

SHARED = Path(os.environ.get("CL2GNN_DATA") or "/nonexistent")
CORA = SHARED / "planetoid" / "Cora" / "raw"
TEXAS = SHARED / "heterophilous" / "texas.npz"


def one_line_naming(argv: list[str], named: object) -> bool:
    """Whether ``cl2gnn ARGV`` fails like a tool (exit 2, one line) naming ``named``."""
    status, err = command(argv)
    return status == 2 and len(err.strip().splitlines()) == 1 and str(named) in err


def data_root(folder: Path, *families: str) -> Path:
    """A writable copy of the shared data's ``families`` in ``folder/data``, which
    ``$CL2GNN_DATA`` names (and a cache of this case's own)."""
    root = folder / "data"
    for family in families:
        shutil.copytree(SHARED / family, root / family)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    os.environ["CL2GNN_DATA"] = str(root)
    os.environ["CL2GNN_CACHE"] = str(folder / "cache")
    return root


def cora_raw(folder: Path) -> Path:
    if not CORA.is_dir():
        raise AssertionError(f"needs Cora's raw files in {CORA}")
    return data_root(folder, "planetoid") / "planetoid" / "Cora" / "raw"


CORA_RUN = ["node", "--dataset", "cora", "--method", "grace", "--epochs", "1", "--seeds", "1"]


# --- 1: a dataset file runs code -----------------------------------------------------------------


def runs_code(marker: Path) -> bytes:
    """A protocol-0 pickle that calls ``os.system`` (the probe's ``ind.cora.x``)."""
    return f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()


def numpy_reduce(call: str, args: str) -> bytes:
    """A pickle calling ``numpy``'s ``call`` (a name a Planetoid file's module holds) with
    the protocol-0 argument tuple ``args``."""
    return f"cnumpy\n{call}\n({args}tR.".encode()


def loads_evil_array(marker: Path) -> bytes:
    """A pickle calling ``numpy.load(path, allow_pickle=True)`` on an object array beside
    ``marker`` whose element runs code."""
    path = marker.parent / "evil.npy"
    np.save(path, np.array([RunsCode(marker)], dtype=object), allow_pickle=True)
    return numpy_reduce("load", f"S'{path}'\nI01\n")


PLANETOID_FILES = {
    "os.system in ind.cora.x (the probe's file)": ("x", runs_code),
    "os.system in ind.cora.graph": ("graph", runs_code),
    "builtins.eval in ind.cora.allx": (
        "allx",
        lambda marker: f"c__builtin__\neval\n(S\"open('{marker}', 'w')\"\ntR.".encode(),
    ),
    "numpy.load of a pickled object array in ind.cora.ty": ("ty", loads_evil_array),
    "a 10**12-element ndarray in ind.cora.y": (
        "y",
        lambda marker: b"cnumpy\nndarray\n((I1000000000000\ntS'f8'\ntR.",
    ),
}
for _label, (_member, _content) in PLANETOID_FILES.items():

    @case("1 a dataset file runs code", f"cl2gnn node --dataset cora: {_label}")
    def _planetoid(folder: Path, member: str = _member, content=_content) -> bool:
        raw = cora_raw(folder)
        marker = folder / "PWNED"
        (raw / f"ind.cora.{member}").write_bytes(content(marker))
        named = raw / f"ind.cora.{member}"
        return one_line_naming(CORA_RUN, named) and not marker.exists()


def crafted_csr(path: Path, change) -> None:
    """``path`` (a Planetoid feature file, a pickled ``csr_matrix``) with its arrays changed
    by ``change(data, indices, indptr, shape)``, written as the original's format holds it."""
    import pickle

    import scipy.sparse as sp

    original = sp.csr_matrix(read_planetoid_pickle(path))
    data, indices, indptr, shape = change(
        original.data, original.indices, original.indptr, original.shape
    )
    crafted = sp.csr_matrix(original.shape)
    crafted.data, crafted.indices, crafted.indptr = data, indices, indptr
    crafted._shape = shape
    path.write_bytes(pickle.dumps(crafted, protocol=4))


def read_planetoid_pickle(path: Path):
    """PyG's way of reading a Planetoid file, for the crafted copies (the shipped files)."""
    import pickle

    with open(path, "rb") as file:
        return pickle.load(file, encoding="latin1")


def out_of_range(data, indices, indptr, shape):
    indices = indices.copy()
    indices[0] = 10**6  # past the 1,433 columns: todense writes out of bounds
    return data, indices, indptr, shape


def huge_shape(data, indices, indptr, shape):
    return data, indices, indptr, (shape[0], 10**11)  # 10**11 columns: a dense bomb


for _label, _change in (
    ("a column index past the width", out_of_range),
    ("a dense bomb", huge_shape),
):

    @case("1 a dataset file runs code", f"ind.cora.tx: {_label}")
    def _csr(folder: Path, change=_change) -> bool:
        raw = cora_raw(folder)
        crafted_csr(raw / "ind.cora.tx", change)
        return one_line_naming(CORA_RUN, raw / "ind.cora.tx")


@case("1 a dataset file runs code", "ind.cora.test.index: a node past the graph")
def _test_index(folder: Path) -> bool:
    raw = cora_raw(folder)
    lines = (raw / "ind.cora.test.index").read_text().split()
    (raw / "ind.cora.test.index").write_text("\n".join([str(10**9), *lines[1:]]) + "\n")
    return one_line_naming(CORA_RUN, raw / "ind.cora.test.index")


@case("1 a dataset file runs code", "ind.cora.graph: a neighbor past the graph")
def _graph(folder: Path) -> bool:
    import pickle

    raw = cora_raw(folder)
    graph = read_planetoid_pickle(raw / "ind.cora.graph")
    graph[0] = [*graph[0], 10**7]
    (raw / "ind.cora.graph").write_bytes(pickle.dumps(graph, protocol=4))
    return one_line_naming(CORA_RUN, raw / "ind.cora.graph")


# --- 2: a lock that is a symlink -----------------------------------------------------------------


def lock_links_to_victim(folder: Path, kind: str) -> tuple[Path, Path]:
    """``folder/out/.cl2gnn.lock`` made a ``kind`` link (``symbolic`` or ``hard``) to
    ``folder/victim.txt``."""
    out, victim = folder / "out", folder / "victim.txt"
    out.mkdir()
    victim.write_text("the user's thesis")
    if kind == "symbolic":
        (out / ".cl2gnn.lock").symlink_to("../victim.txt")
    else:
        os.link(victim, out / ".cl2gnn.lock")
    return out, victim


for _kind in ("symbolic", "hard"):

    @case("2 a lock that is a link", f"cl2gnn node --save: a {_kind} link to a user's file")
    def _node_lock(folder: Path, kind: str = _kind) -> bool:
        out, victim = lock_links_to_victim(folder, kind)
        refused_ = one_line_naming(node_args(folder, "--save", str(out)), out / ".cl2gnn.lock")
        return refused_ and victim.read_text() == "the user's thesis"

    @case("2 a lock that is a link", f"cl2gnn simclr --out: a {_kind} link to a user's file")
    def _simclr_lock(folder: Path, kind: str = _kind) -> bool:
        out, victim = lock_links_to_victim(folder, kind)
        refused_ = refused(lambda: simclr([*TINY, "--out", str(out)]))
        return refused_ and victim.read_text() == "the user's thesis"


# --- 3: an output onto a dataset named by name ---------------------------------------------------


def texas_root(folder: Path) -> Path:
    if not TEXAS.is_file():
        raise AssertionError(f"needs {TEXAS}")
    return data_root(folder, "heterophilous") / "heterophilous"


TEXAS_RUN = ["node", "--dataset", "texas", "--method", "grace", "--epochs", "1", "--seeds", "1"]


def unchanged_if_refused(root: Path, argv: list[str]) -> bool:
    before = snapshot(root)
    return refused_in_one_line(argv) and snapshot(root) == before


@case("3 an output onto a named dataset", "embed --dataset texas --out <its .npz>")
def _embed_out(folder: Path) -> bool:
    root = texas_root(folder)
    if command([*TEXAS_RUN, "--save", str(folder / "run")])[0] != 0:
        return False
    checkpoint = str(folder / "run" / "seed_0")
    embed = ["embed", "--checkpoint", checkpoint, "--dataset", "texas"]
    return unchanged_if_refused(root, [*embed, "--out", str(root / "texas.npz")])


@case("3 an output onto a named dataset", "node --dataset texas --json <its .npz>")
def _json_out(folder: Path) -> bool:
    root = texas_root(folder)
    return unchanged_if_refused(root, [*TEXAS_RUN, "--json", str(root / "texas.npz")])


@case("3 an output onto a named dataset", "node --dataset texas --save <the folder holding it>")
def _save_out(folder: Path) -> bool:
    root = texas_root(folder)
    return unchanged_if_refused(root, [*TEXAS_RUN, "--save", str(root)])


@case("3 an output onto a named dataset", "node --dataset cora --json <a raw file of it>")
def _cora_json(folder: Path) -> bool:
    raw = cora_raw(folder)
    return unchanged_if_refused(raw, [*CORA_RUN, "--json", str(raw / "ind.cora.x")])


@case("3 an output onto a named dataset", "node --dataset texas --root R --save R")
def _root_save(folder: Path) -> bool:
    root = texas_root(folder)
    os.environ.pop("CL2GNN_DATA")  # the root named by --root alone
    return unchanged_if_refused(root, [*TEXAS_RUN, "--root", str(root), "--save", str(root)])


# --- 4: --resume with fewer seeds -----------------------------------------------------------------


@case("4 --resume with fewer seeds", "a 2-seed run resumed with --seeds 1: kept or refused")
def _fewer(folder: Path) -> bool:
    run = folder / "run"
    two = node_args(folder, "--method", "grace", "--seeds", "2", "--save", str(run), splits=2)
    if command(two)[0] != 0:
        return False
    before = snapshot(run)
    one = node_args(folder, "--method", "grace", "--seeds", "1", "--save", str(run), "--resume")
    status, _ = command(one)
    seeds = sorted(p.name for p in run.iterdir() if p.name.startswith("seed_"))
    if status == 0:  # kept: every seed still there, result.json listing them all
        listed = json.loads((run / "result.json").read_text())[0]["seeds"]
        return seeds == ["seed_0", "seed_1"] and listed == [0, 1]
    return refused_in_one_line(one) and snapshot(run) == before


# --- 5: simclr overwrites a finished run ----------------------------------------------------------


@case("5 simclr overwrites a finished run", "a run that finished while the second waited")
def _finished_meanwhile(folder: Path) -> bool:
    from cl2gnn.cli import cmdline

    run, check_device = folder / "run", cmdline.check_device
    first = {}

    def first_run_finishes(name: str, option: str = "--device") -> None:
        # the second run has parsed (no checkpoint then) and loads: the first one ends now
        cmdline.check_device = check_device
        simclr([*TINY, "--out", str(run)])
        first["checkpoint"] = (run / "checkpoint.pt").read_bytes()
        check_device(name, option)

    cmdline.check_device = first_run_finishes
    second = refused(lambda: simclr([*TINY, "--out", str(run), "--seed", "3"]))
    return second and (run / "checkpoint.pt").read_bytes() == first["checkpoint"]


# --- 6: a nested run is deleted -------------------------------------------------------------------


def held_by_another_process(path: Path):
    """A child process holding the run-folder lock of ``path`` until killed; its pid."""
    from cl2gnn import _files

    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            with _files.locked_folder(path):
                os.write(ready_write, b"1")
                time.sleep(60)
        finally:
            os._exit(0)
    os.read(ready_read, 1)
    return pid


def released(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


@case("6 a nested run is deleted", "--save run4/seed_0 while a run writes run4")
def _nested(folder: Path) -> bool:
    outer = folder / "run4"
    holder = held_by_another_process(outer)
    try:
        inner = outer / "seed_0"
        return refused_in_one_line(node_args(folder, "--save", str(inner))) and not inner.exists()
    finally:
        released(holder)


@case("6 a nested run is deleted", "--save run4 --overwrite while a run writes run4/seed_0")
def _enclosing(folder: Path) -> bool:
    inner = folder / "run4" / "seed_0"
    holder = held_by_another_process(inner)
    try:
        argv = node_args(folder, "--save", str(folder / "run4"), "--overwrite")
        return refused_in_one_line(argv) and (inner / ".cl2gnn.lock").exists()
    finally:
        released(holder)


# --- 7: a .cl2gnn.checkpoints symlink -------------------------------------------------------------


@case("7 a checkpoints symlink", "run/.cl2gnn.checkpoints -> elsewhere, --checkpoint-every 1")
def _checkpoints_link(folder: Path) -> bool:
    run, target = folder / "run", folder / "elsewhere"
    run.mkdir()
    target.mkdir()
    (run / ".cl2gnn.checkpoints").symlink_to(target)
    argv = node_args(folder, "--save", str(run), "--method", "grace", "--checkpoint-every", "1")
    return refused_in_one_line(argv) and not any(target.iterdir())


# --- 8: a crafted encoder.pt spec -----------------------------------------------------------------


def saved_encoder(folder: Path) -> Path:
    """A grace run's ``seed_0`` folder, saved through ``cl2gnn node --save``."""
    run = folder / "run"
    if command(node_args(folder, "--method", "grace", "--save", str(run)))[0] != 0:
        raise AssertionError("the run failed")
    return run / "seed_0"


def crafted_encoder(folder: Path, change) -> list[str]:
    """``cl2gnn embed`` of a saved encoder whose file ``change(checkpoint)`` altered."""
    seed = saved_encoder(folder)
    checkpoint = torch.load(seed / "encoder.pt", weights_only=True)
    change(checkpoint)
    torch.save(checkpoint, seed / "encoder.pt")
    graph = str(folder / "G.npz")
    return ["embed", "--checkpoint", str(seed), "--dataset", graph, "--out", str(folder / "e.pt")]


def spec_set(**fields):
    return lambda checkpoint: checkpoint["spec"].update(fields)


SPECS = {
    "out_channels=10**9 (48 GB)": spec_set(out_channels=10**9),
    "layers=10**7 (a hang)": spec_set(layers=10**7),
    "hidden_channels=10**9": spec_set(hidden_channels=10**9),
    "heads=0 (ZeroDivisionError)": spec_set(conv="gat", heads=0),
    "out_channels='128' (TypeError)": spec_set(out_channels="128"),
    "an unknown argument (TypeError)": spec_set(colour="blue"),
    "in_channels missing (KeyError)": lambda c: c["spec"].pop("in_channels"),
    "spec a list": lambda c: c.update(spec=[1, 2]),
    "state_dict a list": lambda c: c.update(state_dict=[1]),
    "mvgrl's diffusion alpha='x'": lambda c: c.update(
        embedding={"method": "mvgrl", "spec": {"alpha": "x", "k": None, "eps": None}}
    ),
    "polygcl's filters K=10**9": lambda c: c.update(
        embedding={
            "method": "polygcl",
            "spec": {"in_channels": 6, "K": 10**9, "input_dropout": 0.0, "dropout": 0.0},
        }
    ),
    "an embedding of no method": lambda c: c.update(embedding={"method": "os.system"}),
}
for _label, _change in SPECS.items():

    @case("8 a crafted encoder.pt", f"cl2gnn embed: {_label}")
    def _spec(folder: Path, change=_change) -> bool:
        argv = crafted_encoder(folder, change)
        return one_line_naming(argv, "encoder.pt") and not (folder / "e.pt").exists()


# --- 9: NaN results with exit 0 -------------------------------------------------------------------


def nan_weight(checkpoint: dict) -> None:
    key = next(k for k, v in checkpoint["state_dict"].items() if v.is_floating_point())
    checkpoint["state_dict"][key] = torch.full_like(checkpoint["state_dict"][key], float("nan"))


@case("9 NaN results with exit 0", "NaN weights in encoder.pt through cl2gnn embed")
def _nan_weights(folder: Path) -> bool:
    argv = crafted_encoder(folder, nan_weight)
    return one_line_naming(argv, "encoder.pt") and not (folder / "e.pt").exists()


@case("9 NaN results with exit 0", "NaN losses in a checkpoint resumed into result.json")
def _nan_losses(folder: Path) -> bool:
    run = folder / "run"
    grace, save = node_args(folder, "--method", "grace"), ["--save", str(run)]
    if command([*grace, *save])[0] != 0:
        return False
    path = run / "seed_0" / "checkpoint.pt"
    state = torch.load(path, weights_only=True)
    state["losses"] = [float("nan")] * len(state["losses"])
    torch.save(state, path)
    before, resume = snapshot(run), [*grace, *save, "--resume"]  # a finished run: no epoch
    status, err = command(resume)
    if status == 0:  # then result.json must be valid JSON (no NaN)
        text = (run / "result.json").read_text()
        return "NaN" not in text and bool(json.loads(text))
    one_line = status == 2 and len(err.strip().splitlines()) == 1
    return one_line and str(path) in err and snapshot(run) == before


@case("9 NaN results with exit 0", "--epochs 0 (no loss to report): result.json is JSON")
def _no_loss(folder: Path) -> bool:
    run = folder / "run"
    argv = node_args(folder, "--method", "grace", "--epochs", "0", "--save", str(run))
    if command([*argv, "--json", str(folder / "r.json")])[0] != 0:
        return False
    texts = [(run / "result.json").read_text(), (folder / "r.json").read_text()]
    return all("NaN" not in text and json.loads(text) for text in texts)


def zero_weights_into_node_0(weight_of_others: float = 1.0):
    data = small_graph()
    data.edge_weight = torch.full((data.num_edges,), weight_of_others)
    data.edge_weight[data.edge_index[1] == 0] = 0.0  # every edge into node 0 weighs nothing
    return data


@case("9 NaN results with exit 0", "SAGE: a node whose incoming weights are all zero (API)")
def _sage_zero(folder: Path) -> bool:
    result = train("grace", zero_weights_into_node_0(), encoder="sage", embedding="last")
    return bool(torch.isfinite(result.embeddings).all())


@case("9 NaN results with exit 0", "SAGE: zero incoming weights aggregate as no neighbor")
def _sage_mean(folder: Path) -> bool:
    from cl2gnn.node import GraphEncoder

    data = zero_weights_into_node_0()
    encoder = GraphEncoder(8, 4, conv="sage").eval()
    with torch.no_grad():
        weighted = encoder(data.x, data.edge_index, data.edge_weight)
        kept = data.edge_weight > 0
        without = encoder(data.x, data.edge_index[:, kept], data.edge_weight[kept])
    return torch.isfinite(weighted).all() and torch.allclose(weighted, without, atol=1e-6)


class FiniteInTraining(torch.nn.Module):
    """A user's encoder: finite in training mode, NaN in eval mode (the final embedding)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 16)

    def forward(self, x, edge_index):
        out = self.lin(x)
        return out if self.training else out * float("nan")


for _method in ("grace", "bgrl", "cca_ssg", "dgi", "gbt"):

    @case("9 NaN results with exit 0", f"{_method}: a user encoder NaN in eval mode (API)")
    def _eval_nan(folder: Path, method: str = _method) -> bool:
        from cl2gnn.node import default_config, train_node_model

        data, encoder = small_graph(), FiniteInTraining()
        config = default_config(data, method, encoder=encoder).with_overrides(epochs=2, lr_warmup=0)
        try:
            result = train_node_model(data, method, config, encoder=encoder, progress=False)
        except ValueError as error:
            return "finite" in str(error) or "NaN" in str(error)
        return bool(torch.isfinite(result.embeddings).all())


# --- 10: --root ignored once a dataset is cached --------------------------------------------------


@case("10 --root ignored once cached", "a second --root with a truncated ind.cora.allx")
def _second_root(folder: Path) -> bool:
    first = cora_raw(folder).parents[1]
    second = folder / "second"
    shutil.copytree(first, second)
    allx = second / "Cora" / "raw" / "ind.cora.allx"
    allx.write_bytes(allx.read_bytes()[:5000])
    if command([*CORA_RUN, "--root", str(first)])[0] != 0:
        return False
    return one_line_naming([*CORA_RUN, "--root", str(second)], allx)


# --- 11: simclr --resume continues another run's checkpoint ---------------------------------------

for _option, _value in (("--seed", "3"), ("--batch-size", "16"), ("--lr", "0.1")):

    @case("11 simclr resumes another run", f"a checkpoint resumed with {_option} {_value}")
    def _other_run(folder: Path, option: str = _option, value: str = _value) -> bool:
        run = folder / "run"
        simclr([*TINY, "--out", str(run)])
        before = (run / "checkpoint.pt").read_bytes()
        resume = [*TINY, "--epochs", "2", "--out", str(run), "--resume", option, value]
        return refused(lambda: simclr(resume)) and (run / "checkpoint.pt").read_bytes() == before


@case("11 simclr resumes another run", "a checkpoint whose history holds a NaN loss")
def _nan_history(folder: Path) -> bool:
    run = folder / "run"
    simclr([*TINY, "--out", str(run)])
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    state["history"]["losses"] = [float("nan")]
    torch.save(state, run / "checkpoint.pt")
    return refused(lambda: simclr([*TINY, "--epochs", "2", "--out", str(run), "--resume"]))


# --- 12: features of 1e30 -------------------------------------------------------------------------


@case("12 features of 1e30", "grace on features times 1e30 (API): refused, or not one point")
def _huge_api(folder: Path) -> bool:
    data = small_graph()
    data.x = data.x * 1e30
    try:
        result = train("grace", data, normalize_features=False)
    except ValueError:
        return True
    return torch.unique(result.embeddings, dim=0).size(0) == N and bool(
        torch.isfinite(result.embeddings).all()
    )


@case("12 features of 1e30", "cl2gnn node on a .npz of features times 1e30")
def _huge_cli(folder: Path) -> bool:
    from ._cases_trust import npz_graph

    rng = np.random.default_rng(0)
    npz_graph(folder / "G.npz", node_features=(rng.standard_normal((40, 6)) * 1e30).astype("f4"))
    return refused_in_one_line(node_args(folder, "--method", "grace", "--raw-features"))


# --- 13: smaller failures -------------------------------------------------------------------------


def disk_full_after(limit: int) -> None:
    """Files of this process may grow to ``limit`` bytes: past it a write fails with
    ``EFBIG`` (the full disk's ``ENOSPC`` as the file system sees it)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


@case("13 smaller failures", "a full disk under cl2gnn node --save")
def _full_disk(folder: Path) -> bool:
    node_args(folder)  # the graph, written before the disk fills
    run = folder / "run"
    disk_full_after(4096)
    refused_ = refused_in_one_line(node_args(folder, "--method", "grace", "--save", str(run)))
    return refused_ and not run.exists()


@case("13 smaller failures", "a full disk under cl2gnn simclr --out")
def _full_disk_simclr(folder: Path) -> bool:
    run = folder / "run"
    disk_full_after(4096)
    return refused(lambda: simclr([*TINY, "--out", str(run)])) and not run.exists()


def truncated(path: Path) -> None:
    """``path`` cut to its first 2 %: where torch's reader fails with ``[Errno 22]`` (an
    ``OSError`` that names no file) rather than a ``RuntimeError``."""
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 50])


@case("13 smaller failures", "a truncated encoder.pt ([Errno 22]) through cl2gnn embed")
def _truncated_encoder(folder: Path) -> bool:
    seed = saved_encoder(folder)
    truncated(seed / "encoder.pt")
    embed = ["embed", "--checkpoint", str(seed), "--dataset", str(folder / "G.npz")]
    return one_line_naming([*embed, "--out", str(folder / "e.pt")], seed / "encoder.pt")


@case("13 smaller failures", "a truncated checkpoint.pt ([Errno 22]) under cl2gnn node --resume")
def _truncated_checkpoint(folder: Path) -> bool:
    seed = saved_encoder(folder)
    truncated(seed / "checkpoint.pt")
    argv = node_args(folder, "--method", "grace", "--save", str(seed.parent), "--resume")
    return one_line_naming(argv, seed / "checkpoint.pt")


@case("13 smaller failures", "a truncated checkpoint.pt ([Errno 22]) under simclr --resume")
def _truncated_simclr(folder: Path) -> bool:
    run = folder / "run"
    simclr([*TINY, "--out", str(run)])
    truncated(run / "checkpoint.pt")
    return refused(lambda: simclr([*TINY, "--epochs", "2", "--out", str(run), "--resume"]))


@case("13 smaller failures", "--layers 256 --out-channels 16384 (flags within bounds, ~1 TB)")
def _together(folder: Path) -> bool:
    argv = node_args(folder, "--method", "grace", "--layers", "256", "--out-channels", "16384")
    return refused_in_one_line(argv)


@case("13 smaller failures", "--seed 4294967295 --seeds 2: refused before seed 0 trains")
def _last_seed(folder: Path) -> bool:
    from cl2gnn.node.evaluation import experiment

    trained, real = [], experiment.train_node_model
    experiment.train_node_model = lambda *a, **k: trained.append(1) or real(*a, **k)
    argv = ["node", "--dataset", "digits-knn", "--method", "grace", "--epochs", "1"]
    return refused_in_one_line([*argv, "--seed", "4294967295", "--seeds", "2"]) and not trained


def seed_folder_a_file(path: Path) -> None:
    shutil.rmtree(path.parent)
    path.parent.write_bytes(b"seed_0, damaged")


DAMAGES = {
    "garbage bytes (KeyError)": (lambda path: path.write_bytes(b"hello\n"), ""),
    "a folder": (lambda path: (path.unlink(), path.mkdir()), ""),
    "a dangling symbolic link": (lambda path: (path.unlink(), path.symlink_to("gone.pt")), ""),
    "seed_0 itself a file": (seed_folder_a_file, "seed_0"),
}
for _label, (_damage, _named) in DAMAGES.items():

    @case("13 smaller failures", f"a damaged seed_0/checkpoint.pt under --resume: {_label}")
    def _damaged(folder: Path, damage=_damage, named: str = _named) -> bool:
        seed = saved_encoder(folder)
        damage(seed / "checkpoint.pt")
        argv = node_args(folder, "--method", "grace", "--save", str(seed.parent), "--resume")
        return one_line_naming(argv, seed if named else seed / "checkpoint.pt")


class Returns(torch.nn.Module):
    """A user's encoder whose output is ``kind``: a dtype or a device it must not be."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.lin, self.kind = torch.nn.Linear(8, 16), kind

    def forward(self, x, edge_index):
        out = self.lin(x)
        if self.kind == "meta":
            return out.to("meta")
        return out.to({"float64": torch.float64, "int64": torch.int64}.get(self.kind, torch.cfloat))


API_METHODS = ("grace", "bgrl", "cca_ssg", "dgi", "gbt", "graphacl")
for _method in API_METHODS:
    for _kind in ("float64", "int64", "complex", "meta"):

        @case("13 smaller failures", f"{_method}: a user encoder returning {_kind} (API)")
        def _output(folder: Path, method: str = _method, kind: str = _kind) -> bool:
            from cl2gnn.node import default_config, train_node_model

            data, encoder = small_graph(), Returns(kind)
            config = default_config(data, method, encoder=encoder).with_overrides(
                epochs=2, lr_warmup=0
            )
            return refused(
                lambda: train_node_model(data, method, config, encoder=encoder, progress=False)
            )

    @case("13 smaller failures", f"{_method}: x.requires_grad=True (API)")
    def _requires_grad(folder: Path, method: str = _method) -> bool:
        data = small_graph()
        data.x.requires_grad_(True)
        return refused(lambda: train(method, data))


for _label, _weight in (("5 weights for 60 edges", torch.ones(5)), ("float64", None)):

    @case("13 smaller failures", f"result.encoder(x, edge_index, edge_weight): {_label}")
    def _direct_weight(folder: Path, weight=_weight) -> bool:
        data = small_graph()
        result = train("grace", encoder="gcn")
        weight = torch.ones(data.num_edges, dtype=torch.float64) if weight is None else weight
        with torch.no_grad():
            return refused(lambda: result.encoder(data.x, data.edge_index, weight))
