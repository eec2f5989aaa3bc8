"""Issue 54's findings ("results you can trust") as the adversarial cases of
tests/reliability/test_trust.py, one category per finding, named by its number: a case is
clean when the input is refused in one line (or a ``ValueError``), or, where it says so,
when what comes back is right (the embeddings a saved run reproduces, a folder a killed run
leaves)."""

from __future__ import annotations

import json
import os
import signal
import zipfile
from pathlib import Path

import numpy as np
import torch

from ._registry import TINY, case, command, refused, refused_in_one_line, simclr

N = 30  # the small graph's nodes
SMALL = {"epochs": 2, "lr_warmup": 0}  # a short run (no warm-up longer than it: finding 2)


def small_graph(x=None, edges=None):
    """A 30-node ring with 8 random features and 3 classes (no published configuration)."""
    from torch_geometric.data import Data

    ring = torch.stack([torch.arange(N), (torch.arange(N) + 1) % N])
    return Data(
        x=torch.randn(N, 8, generator=torch.Generator().manual_seed(0)) if x is None else x,
        edge_index=torch.cat([ring, ring.flip(0)], 1) if edges is None else edges,
        y=torch.arange(N) % 3,
    )


def train(method, data=None, *, own=None, augment=None, **fields):
    """``method`` trained on ``data`` (default: :func:`small_graph`) for 2 epochs, with the
    user's encoder ``own`` and views ``augment`` if given, ``fields`` set."""
    from cl2gnn.node import default_config, train_node_model

    data = small_graph() if data is None else data
    config = default_config(data, method).with_overrides(**{**SMALL, **fields})
    return train_node_model(data, method, config, encoder=own, augment=augment, progress=False)


def npz_graph(path: Path, n: int = 40, splits: int = 1, **changes) -> str:
    """A graph in the ``.npz`` format with ``splits`` shipped splits; ``changes`` replace
    arrays."""
    rng = np.random.default_rng(0)
    masks = np.zeros((3, splits, n), bool)
    for s in range(splits):
        part = np.repeat([0, 1, 2], [n // 2, n // 4, n - n // 2 - n // 4])
        masks[rng.permutation(part), s, np.arange(n)] = True
    arrays = {
        "node_features": rng.standard_normal((n, 6)).astype(np.float32),
        "node_labels": np.arange(n) % 3,
        "edges": np.stack([np.arange(n), (np.arange(n) + 1) % n], 1),
        "train_masks": masks[0],
        "val_masks": masks[1],
        "test_masks": masks[2],
    } | changes
    np.savez(path, **arrays)
    return str(path)


def node_args(folder: Path, *extra: str, splits: int = 1) -> list[str]:
    graph = folder / "G.npz"
    if not graph.exists():
        npz_graph(graph, splits=splits)
    return ["node", "--dataset", str(graph), "--epochs", "1", "--no-progress", *extra]


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool((a - b).abs().max() <= 1e-5)


class Rows(torch.nn.Module):
    """A user's encoder whose output has the wrong number of rows beyond the first 8 nodes
    (``factor`` times as many)."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.lin, self.factor = torch.nn.Linear(8, 16), factor

    def forward(self, x, edge_index):
        out = self.lin(x)
        if x.size(0) <= 8:
            return out
        return out[: int(x.size(0) * self.factor)] if self.factor < 1 else torch.cat([out, out])


def sage(layers: int = 2):
    from torch_geometric.nn.models import GraphSAGE

    return GraphSAGE(8, 16, num_layers=layers)


# --- 1: what was saved and returned embeds as what was probed ------------------------------------

for _method in ("grace", "bgrl", "dgi", "mvgrl"):

    @case("1 embeddings saved = returned", f"{_method}: result.embed(x, edge_index)")
    def _returned(folder: Path, method: str = _method) -> bool:
        data, result = small_graph(), train(method)
        return close(result.embed(data.x, data.edge_index), result.embeddings)

    @case("1 embeddings saved = returned", f"{_method}: load_encoder(saved folder)")
    def _reloaded(folder: Path, method: str = _method) -> bool:
        from cl2gnn.node import load_encoder

        data, result = small_graph(), train(method)
        saved = result.save(folder / "run")
        with torch.no_grad():
            return close(load_encoder(saved)(data.x, data.edge_index), result.embeddings)

    @case("1 embeddings saved = returned", f"{_method}: cl2gnn embed of the --save folder")
    def _embedded(folder: Path, method: str = _method) -> bool:
        run, config = folder / "run", folder / "short.json"
        config.write_text(json.dumps({"lr_warmup": 0}))
        train = node_args(folder, "--method", method, "--config", str(config), "--save", str(run))
        if command(train)[0] != 0:
            return False
        out = folder / "e.pt"
        embed = ["embed", "--checkpoint", str(run / "seed_0"), "--dataset", str(folder / "G.npz")]
        if command([*embed, "--out", str(out)])[0] != 0:
            return False
        saved = torch.load(run / "seed_0" / "embeddings.pt", weights_only=True)
        return close(torch.load(out, weights_only=True), saved)


# --- 2: a warm-up longer than the run ------------------------------------------------------------

for _method in ("bgrl", "gbt"):  # warm-ups of 1,000 and 100 epochs by default

    @case("2 warm-up longer than the run", f"{_method}, 3 epochs (API)")
    def _warmup(folder: Path, method: str = _method) -> bool:
        from cl2gnn.node import default_config

        warmup = default_config(small_graph(), method).lr_warmup  # the recipe's, kept
        return refused(lambda: train(method, epochs=3, lr_warmup=warmup))

    @case("2 warm-up longer than the run", f"cl2gnn node --method {_method} --epochs 3")
    def _warmup_cli(folder: Path, method: str = _method) -> bool:
        return refused_in_one_line(node_args(folder, "--method", method, "--epochs", "3"))


# --- 3: with_overrides can set a field to None ---------------------------------------------------


@case("3 with_overrides(None)", "num_keys=None sets None")
def _overrides(folder: Path) -> bool:
    from cl2gnn.node import NodeConfig

    cleared = NodeConfig(options={"num_keys": 256}).with_overrides(num_keys=None)
    return cleared.options["num_keys"] is None


@case("3 with_overrides(None)", "a callable objective, config=None, no published configuration")
def _callable(folder: Path) -> bool:
    from cl2gnn.losses import info_nce
    from cl2gnn.node import train_node_model

    result = train_node_model(small_graph(), lambda z1, z2, h1, h2: info_nce(z1, z2), None)
    return bool(torch.isfinite(result.embeddings).all())


# --- 4: an encoder's rows ------------------------------------------------------------------------

for _factor, _label in ((0.5, "N/2 rows"), (2.0, "2N rows")):
    for _mode, _fields in (("full-batch", {}), ("mini-batch", {"batch_size": 16})):

        @case("4 encoder rows", f"{_label}, {_mode}")
        def _rows(folder: Path, factor: float = _factor, fields: dict = _fields) -> bool:
            return refused(lambda: train("grace", own=Rows(factor), **fields))


# --- 5: GraphACL on a graph without edges --------------------------------------------------------


@case("5 GraphACL without edges", "graphacl on a graph of no edges")
def _no_edges(folder: Path) -> bool:
    return refused(
        lambda: train("graphacl", small_graph(edges=torch.zeros(2, 0, dtype=torch.long)))
    )


# --- 6: float64 features: refused clearly or supported end to end --------------------------------

for _method in ("grace", "bgrl", "cca_ssg", "dgi", "gbt", "graphacl", "mvgrl"):

    @case("6 float64 features", _method)
    def _float64(folder: Path, method: str = _method) -> bool:
        data = small_graph(x=torch.randn(N, 8, dtype=torch.float64))
        try:
            result = train(method, data)
        except ValueError:
            return True  # refused where it enters
        except Exception:
            return False  # failed deep inside
        return bool(torch.isfinite(result.embeddings).all())


# --- 7: fan-outs and fields against a user's encoder ---------------------------------------------


@case("7 fan-outs and your encoder", "a 1-hop sample under a 2-layer encoder")
def _fan_out(folder: Path) -> bool:
    fields = {"batch_size": 16, "layers": 1, "num_neighbors": (5,)}
    return refused(lambda: train("grace", own=sage(2), **fields))


for _field, _value in (("encoder", "gat"), ("layers", 5), ("hidden_channels", 999)):

    @case("7 fan-outs and your encoder", f"{_field}={_value!r} with your encoder")
    def _builtin_field(folder: Path, field: str = _field, value=_value) -> bool:
        return refused(lambda: train("grace", own=sage(2), **{field: value}))


# --- 8: default_config with a user's encoder -----------------------------------------------------

for _method in ("bgrl", "cca_ssg", "dgi", "gbt", "graphacl", "mvgrl"):

    @case("8 default_config with your encoder", _method)
    def _default(folder: Path, method: str = _method) -> bool:
        from torch_geometric.nn.models import GCN

        from cl2gnn.node import default_config, train_node_model

        # MVGRL's diffusion view is weighted: an encoder that reads edge weights (PyG's GCN;
        # its GraphSAGE ignores them, refused: tests/node/test_user_path.py)
        data = small_graph()
        encoder = GCN(data.num_features, 8, num_layers=2) if method == "mvgrl" else sage(2)
        config = default_config(data, method, encoder=encoder).with_overrides(**SMALL)
        result = train_node_model(data, method, config, encoder=encoder, progress=False)
        return bool(torch.isfinite(result.embeddings).all())


# --- 9: edges out of range that do not come from data --------------------------------------------

BAD = {"target past N": [[0], [N + 5]], "source 10**9": [[10**9], [0]], "negative": [[-1], [0]]}
for _label, _extra in BAD.items():

    @case("9 edges beyond data", f"a user's view adding an edge: {_label}")
    def _view(folder: Path, extra=_extra) -> bool:
        def view(data):
            data = data.clone()
            data.edge_index = torch.cat([data.edge_index, torch.tensor(extra)], 1)
            return data

        return refused(lambda: train("grace", augment=view))

    for _encoder in ("gcn", "sage", "gat"):

        @case("9 edges beyond data", f"result.encoder ({_encoder}): {_label}")
        def _direct(folder: Path, extra=_extra, encoder: str = _encoder) -> bool:
            data, result = small_graph(), train("grace", encoder=encoder)
            edges = torch.cat([data.edge_index, torch.tensor(extra)], 1)
            with torch.no_grad():
                return refused(lambda: result.encoder(data.x, edges))

    @case("9 edges beyond data", f"load_encoder(saved folder): {_label}")
    def _loaded(folder: Path, extra=_extra) -> bool:
        from cl2gnn.node import load_encoder

        data = small_graph()
        encoder = load_encoder(train("grace", encoder="sage").save(folder))
        edges = torch.cat([data.edge_index, torch.tensor(extra)], 1)
        with torch.no_grad():
            return refused(lambda: encoder(data.x, edges))


# --- 10: --save onto an earlier run --------------------------------------------------------------


def folder_is_whole(run: Path) -> bool:
    """No seed folder beside a result.json that does not list it, every one of its method."""
    seeds = sorted(p.name for p in run.iterdir() if p.name.startswith("seed_"))
    if not (run / "result.json").exists():
        return True  # an interrupted run, shown as such: nothing claims these seeds
    (result,) = json.loads((run / "result.json").read_text())
    if seeds != sorted(f"seed_{s}" for s in result["seeds"]):
        return False
    methods = {torch.load(run / s / "encoder.pt", weights_only=True)["method"] for s in seeds}
    return methods <= {result["method"]}


def earlier_run(folder: Path) -> tuple[list[str], Path]:
    """A 3-seed grace run saved in ``folder/run`` (a graph of 3 shipped splits); the
    arguments of a 1-seed cca_ssg run into the same folder."""
    run = folder / "run"
    grace = node_args(folder, "--method", "grace", "--seeds", "3", splits=3)
    if command([*grace, "--save", str(run)])[0] != 0:
        raise AssertionError("the earlier run failed")
    new = node_args(folder, "--method", "cca_ssg", "--seeds", "1", splits=3)
    return [*new, "--save", str(run)], run


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@case("10 --save onto an earlier run", "a 1-seed run onto a 3-seed folder: refused, kept")
def _earlier(folder: Path) -> bool:
    new, run = earlier_run(folder)
    before = snapshot(run)
    return refused_in_one_line(new) and snapshot(run) == before


@case("10 --save onto an earlier run", "--overwrite: the earlier run replaced whole")
def _overwrite(folder: Path) -> bool:
    new, run = earlier_run(folder)
    if command([*new, "--overwrite"])[0] != 0:
        return False
    seeds = sorted(p.name for p in run.iterdir() if p.name.startswith("seed_"))
    return folder_is_whole(run) and seeds == ["seed_0"]


def killed_at(step: int, argv: list[str], sig: int) -> bool:
    """``cl2gnn ARGV`` in a child that sends itself ``sig`` just before its ``step``-th
    rename; whether it died of it (else it ran to its end)."""
    pid = os.fork()
    if pid == 0:
        rename, calls = os.replace, iter(range(10**6))

        def replace(*args, **kwargs):
            if next(calls) == step:
                os.kill(os.getpid(), sig)
            return rename(*args, **kwargs)

        os.replace = replace
        command(argv)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status)


for _sig in (signal.SIGKILL, signal.SIGTERM):

    @case("10 --save onto an earlier run", f"--overwrite killed ({_sig.name}) at every rename")
    def _killed(folder: Path, sig: int = _sig) -> bool:
        import shutil

        new, run = earlier_run(folder)
        shutil.copytree(run, folder / "earlier")
        step, whole = 0, True
        while True:  # every kill from the same earlier run
            shutil.rmtree(run)
            shutil.copytree(folder / "earlier", run)
            if not killed_at(step, [*new, "--overwrite"], sig):
                break
            whole &= folder_is_whole(run)
            step += 1
        shutil.rmtree(run)  # the run after a kill in the middle of the swap clears it
        shutil.copytree(folder / "earlier", run)
        killed_at(step - 1, [*new, "--overwrite"], sig)
        command([*new, "--overwrite"])
        leftovers = [p for p in run.rglob("*") if p.name.startswith(".cl2gnn-")]
        return step > 0 and whole and folder_is_whole(run) and not leftovers


# --- 11: a user's own files in an output folder --------------------------------------------------

USERS = (".thesis.partial.tex", ".lock", ".notes.partial")


def users_files_stay(target: Path, run) -> bool:
    target.mkdir(parents=True, exist_ok=True)
    for name in USERS:
        (target / name).write_text(f"the user's {name}")
    run()
    return all(
        (target / n).exists() and (target / n).read_text() == f"the user's {n}" for n in USERS
    )


@case("11 the user's lock/partial files", "cl2gnn node --save")
def _node_save(folder: Path) -> bool:
    run = folder / "run"
    return users_files_stay(run, lambda: command(node_args(folder, "--save", str(run))))


@case("11 the user's lock/partial files", "cl2gnn simclr --out")
def _simclr_out(folder: Path) -> bool:
    run = folder / "run"
    return users_files_stay(run, lambda: simclr([*TINY, "--out", str(run)]))


@case("11 the user's lock/partial files", "cl2gnn simulate --out")
def _simulate_out(folder: Path) -> bool:
    run = folder / "run"
    study = ["simulate", "proposition2", "--steps", "2", "--out", str(run)]
    return users_files_stay(run, lambda: command(study))


# --- 12: other destructive targets ---------------------------------------------------------------


def unchanged_if_refused(folder: Path, argv: list[str]) -> bool:
    before = snapshot(folder)
    return refused_in_one_line(argv) and snapshot(folder) == before


@case("12 destructive targets", "embed --out onto its own --dataset")
def _embed_onto_dataset(folder: Path) -> bool:
    run = folder / "run"
    command(node_args(folder, "--method", "grace", "--save", str(run)))
    graph = str(folder / "G.npz")
    embed = ["embed", "--checkpoint", str(run / "seed_0"), "--dataset", graph, "--out", graph]
    return unchanged_if_refused(folder, embed)


@case("12 destructive targets", "--json onto the input .npz")
def _json_onto_dataset(folder: Path) -> bool:
    argv = node_args(folder, "--method", "grace")
    return unchanged_if_refused(folder, [*argv, "--json", str(folder / "G.npz")])


@case("12 destructive targets", "--json onto the input .npz through a symbolic link")
def _json_through_link(folder: Path) -> bool:
    argv = node_args(folder, "--method", "grace")
    (folder / "link.npz").symlink_to(folder / "G.npz")
    return unchanged_if_refused(folder, [*argv, "--json", str(folder / "link.npz")])


@case("12 destructive targets", "--json onto seed_0/encoder.pt of --save")
def _json_onto_encoder(folder: Path) -> bool:
    run = folder / "run"
    argv = node_args(folder, "--method", "grace", "--save", str(run))
    return unchanged_if_refused(folder, [*argv, "--json", str(run / "seed_0" / "encoder.pt")])


@case("12 destructive targets", "--save onto the folder holding the input .npz")
def _save_onto_input(folder: Path) -> bool:
    return unchanged_if_refused(
        folder, node_args(folder, "--method", "grace", "--save", str(folder))
    )


@case("12 destructive targets", "a run killed while writing seed_0: the next clears it")
def _killed_in_seed(folder: Path) -> bool:
    run = folder / "run"
    argv = node_args(folder, "--method", "grace", "--save", str(run))
    killed_at(0, argv, signal.SIGKILL)  # before its first file (seed_0/encoder.pt) is renamed
    partial = [p for p in run.rglob("*") if "partial" in p.name]
    if command(argv)[0] != 0:
        return False
    return bool(partial) and not [p for p in run.rglob("*") if "partial" in p.name]


# --- 13: bad input that costs gigabytes (the child's memory is capped) ---------------------------


@case("13 bad input costing gigabytes", "a .npz label of 10**9")
def _label(folder: Path) -> bool:
    labels = np.where(np.arange(40) == 3, 10**9, np.arange(40) % 3)
    npz_graph(folder / "G.npz", node_labels=labels)
    return refused_in_one_line(node_args(folder, "--method", "grace"))


@case("13 bad input costing gigabytes", "a label of 10**9 at the probe's check (API)")
def _label_api(folder: Path) -> bool:
    from cl2gnn.node.evaluation.experiment import check_probe

    data = small_graph()
    data.y[::3] = 10**9  # a class of 10 nodes: some train the probe under any split
    return refused(lambda: check_probe(data, ("gca",), range(1)))


@case("13 bad input costing gigabytes", "a 14 MB deflate bomb declaring 3 GB of features")
def _bomb(folder: Path) -> bool:
    path = folder / "G.npz"
    npz_graph(path)
    with np.load(path) as raw:
        arrays = dict(raw)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                if name != "node_features":
                    np.lib.format.write_array(member, array)
                    continue
                columns = 3 * 10**9 // (4 * 40)
                header = {"descr": "<f4", "fortran_order": False, "shape": (40, columns)}
                np.lib.format.write_array_header_1_0(member, header)
                zeros = bytes(1 << 22)
                for start in range(0, 40 * columns * 4, len(zeros)):
                    member.write(zeros[: 40 * columns * 4 - start])
    return refused_in_one_line(node_args(folder, "--method", "grace"))


@case("13 bad input costing gigabytes", "a simclr checkpoint of epoch 10**9")
def _epoch(folder: Path) -> bool:
    run = folder / "run"
    simclr([*TINY, "--out", str(run)])
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    state["epoch"] = 10**9
    torch.save(state, run / "checkpoint.pt")
    return refused(lambda: simclr([*TINY, "--out", str(run), "--resume"]))


@case("13 bad input costing gigabytes", "samples_per_node=10**6 on 30 nodes")
def _samples(folder: Path) -> bool:
    return refused(lambda: train("graphacl", samples_per_node=10**6))


def numeric_options() -> list[tuple[str, str, object]]:
    """``(command, option, type)`` of every numeric option of every command."""
    import argparse
    import importlib

    from cl2gnn.cli import cmdline
    from cl2gnn.cli.main import build_parser

    cmdline.quiet_pyg_warning()  # the parsers import PyG's dataset names
    (commands,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parsers = {n: p for n, p in commands.choices.items() if n not in ("simclr", "simsiam")}

    class Built(Exception):
        pass

    def built(parser, *_):
        raise Built(parser)

    for name in ("simclr", "simsiam"):  # they parse their own options: catch their parser
        module = importlib.import_module(f"cl2gnn.cli.{name}")
        real, module.parse_args = module.parse_args, built
        try:
            module.parse([], name)
        except Built as caught:
            parsers[name] = caught.args[0]
        finally:
            module.parse_args = real

    def numeric(kind) -> bool:
        for text in ("1", "2", "4", "16", "0.5", "0", "-1"):
            try:
                value = kind(text)
            except Exception:
                continue
            if isinstance(value, int | float) and not isinstance(value, bool):
                return True
        return False

    return [
        (name, action.option_strings[0], action.type)
        for name, parser in parsers.items()
        for action in parser._actions
        if action.option_strings and action.type is not None and numeric(action.type)
    ]


for _command, _option, _ in numeric_options():
    for _value in ("1e20", str(10**20), "1e308"):

        @case("13 bad input costing gigabytes", f"{_command} {_option} {_value}")
        def _flag(folder: Path, name: str = _command, option: str = _option, value=_value) -> bool:
            import importlib

            from cl2gnn.cli.main import build_parser

            if name in ("simclr", "simsiam"):
                module = importlib.import_module(f"cl2gnn.cli.{name}")
                return refused(lambda: module.parse([option, value], name))
            return refused(lambda: build_parser().parse_args([name, option, value]))
