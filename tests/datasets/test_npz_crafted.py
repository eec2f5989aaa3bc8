"""Crafted ``.npz`` files: each is refused by ``cl2gnn node --dataset
G.npz`` in one line, exit 2, naming the file and the field, before the reader allocates a
declared shape, inflates a member past the stated limit, allocates anything sized by a label,
or any training starts."""

import io
import zipfile

import numpy as np
import pytest

from cl2gnn.cli import cmdline
from cl2gnn.cli.main import main

from .test_node_data import graph_arrays


def declaring(arrays: dict, key: str, shape: tuple) -> bytes:
    """An archive of ``arrays`` whose ``key`` member's header declares ``shape`` (a few
    bytes of data follow)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            if name == key:
                header = {"descr": "<f8", "fortran_order": False, "shape": shape}
                np.lib.format.write_array_header_1_0(member, header)
                member.write(b"\0" * 64)
            else:
                np.lib.format.write_array(member, np.asarray(array))
            archive.writestr(f"{name}.npy", member.getvalue())
    return buffer.getvalue()


def changed(key, value):
    def make(arrays):
        arrays[key] = value(arrays[key]) if callable(value) else value
        return arrays

    return make


def huge(array):
    array = array.astype(np.float64)
    array[2, 1] = 1e300  # finite as float64, inf as float32
    return array


def negative_label(labels):
    labels = labels.copy()
    labels[5] = -1
    return labels


N = 40  # graph_arrays' nodes
CASES = {  # name: (how the file is made, what the message names)
    "declared shape beyond the file": ("declared", "node_features declares shape"),
    "a .npy named .npz": ("npy", "not a .npz archive"),
    "features of 1e300": (changed("node_features", huge), "node_features has NaN or infinite"),
    "labels of 2**64 - 1": (
        changed("node_labels", np.full(N, 2**64 - 1, np.uint64)),
        "node_labels out of range",
    ),
    "a negative label": (changed("node_labels", negative_label), "node_labels out of range"),
    "zero feature columns": (
        changed("node_features", np.zeros((N, 0), np.float32)),
        "node_features has zero feature columns",
    ),
    "complex features": (
        changed("node_features", lambda x: x.astype(np.complex64)),
        "node_features must be a real numeric",
    ),
    "string features": (
        changed("node_features", lambda x: x.astype(str)),
        "node_features must be a real numeric",
    ),
    "edges out of range": (changed("edges", np.array([[0, N + 5]])), "edges name nodes outside"),
    "float edges": (changed("edges", np.array([[0.0, 1.0]])), "edges must be integer node pairs"),
}


@pytest.mark.filterwarnings("error::RuntimeWarning")  # a NumPy warning: a second stderr line
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_crafted_file_is_one_line_exit_2_naming_file_and_field(
    tmp_path, capsys, monkeypatch, case
):
    make, message = CASES[case]
    path = tmp_path / "G.npz"
    arrays = graph_arrays(n=N)
    if make == "declared":
        path.write_bytes(declaring(arrays, "node_features", (10**12, 10**6)))
    elif make == "npy":
        np.save(tmp_path / "plain.npy", arrays["node_features"])
        (tmp_path / "plain.npy").rename(path)
    else:
        np.savez(path, **make(arrays))
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    out = tmp_path / "out.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["node", "--dataset", str(path), "--no-progress", "--json", str(out)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert f"error: {path}: " in err and message in err
    assert not out.exists()


def bincount_spy(monkeypatch, limit: int) -> None:
    """``torch.bincount`` and ``np.bincount`` fail the test when called on a value of
    ``limit`` or more: an allocation sized by a label (10⁹: 8 GB)."""
    import torch

    for module, real in ((torch, torch.bincount), (np, np.bincount)):

        def spy(values, *args, real=real, **kwargs):
            if len(values) and int(values.max()) >= limit:
                raise AssertionError(f"bincount over a value of {int(values.max())}")
            return real(values, *args, **kwargs)

        monkeypatch.setattr(module, "bincount", spy)


@pytest.mark.parametrize("label", [N, 10**9])
def test_a_label_past_the_node_count_is_refused_before_anything_sized_by_it(
    tmp_path, capsys, monkeypatch, label
):
    """Classes are 0 … C-1 with C at most N: a larger label is refused by the reader,
    naming the bound, before a bincount (or a probe's output layer) sized by it."""
    bincount_spy(monkeypatch, N)
    arrays = graph_arrays(n=N)
    arrays["node_labels"] = np.where(np.arange(N) == 3, label, arrays["node_labels"])
    path = tmp_path / "G.npz"
    np.savez(path, **arrays)
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    argv = ["node", "--dataset", str(path), "--method", "grace", "--epochs", "1", "--no-progress"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1, err
    assert "node_labels out of range" in err and f"at most the {N} nodes" in err, err


@pytest.mark.parametrize("label", [N, 10**9])
def test_the_probes_label_check_bounds_labels_by_the_nodes_before_counting(monkeypatch, label):
    """The same bound where a ``Data`` built by hand enters the probe (``cl2gnn node``'s
    check before training)."""
    import torch
    from torch_geometric.data import Data

    from cl2gnn.node.evaluation.experiment import check_probe

    bincount_spy(monkeypatch, N)
    y = torch.arange(N) % 3
    y[3] = label
    data = Data(x=torch.randn(N, 4), edge_index=torch.zeros(2, 0, dtype=torch.long), y=y)
    with pytest.raises(ValueError, match=rf"data.y .*{label}.*at most the {N} nodes"):
        check_probe(data, ("grace",), range(1))


def deflated(arrays: dict, key: str, inflated: int) -> bytes:
    """An archive of ``arrays`` whose ``key`` member is ``inflated`` bytes of zeros (a valid
    ``[N, F]`` float32 array) deflated to a few kilobytes: a "zip bomb"."""
    buffer = io.BytesIO()
    columns = inflated // (4 * N)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                if name != key:
                    np.lib.format.write_array(member, np.asarray(array))
                    continue
                header = {"descr": "<f4", "fortran_order": False, "shape": (N, columns)}
                np.lib.format.write_array_header_1_0(member, header)
                for start in range(0, N * columns * 4, 1 << 20):
                    member.write(bytes(min(1 << 20, N * columns * 4 - start)))
    return buffer.getvalue()


def test_a_member_inflating_past_the_stated_limit_is_refused_before_inflating(
    tmp_path, capsys, monkeypatch
):
    """A 32 MiB feature matrix deflated to a few kilobytes, read under a 1 MiB limit (the
    default is 1 GiB): refused naming the member, its size, the limit and how to raise it;
    the same file under a limit it fits is read."""
    from cl2gnn.datasets import npz

    path = tmp_path / "G.npz"
    path.write_bytes(deflated(graph_arrays(n=N), "node_features", 32 << 20))
    assert path.stat().st_size < 1 << 20
    monkeypatch.setenv(npz.LIMIT_VARIABLE, str(1 << 20))
    monkeypatch.delenv(cmdline.DEBUG_VARIABLE, raising=False)
    argv = ["node", "--dataset", str(path), "--method", "grace", "--epochs", "1", "--no-progress"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1, err
    inflated = zipfile.ZipFile(path).getinfo("node_features.npy").file_size  # header too
    assert f"{path}: node_features.npy inflates to {inflated:,} bytes" in err, err
    assert f"{1 << 20:,}" in err and npz.LIMIT_VARIABLE in err, err
    monkeypatch.setenv(npz.LIMIT_VARIABLE, str(64 << 20))
    assert npz.read_npz_graph(path).x.shape == (N, (32 << 20) // (4 * N))
    with pytest.raises(ValueError, match="inflates to"):
        npz.read_npz_graph(path, max_inflated_bytes=1 << 20)


@pytest.mark.parametrize("text", ["lots", "-1", "0", "1e400"])
def test_a_limit_that_is_not_a_byte_count_is_refused_naming_the_variable(
    tmp_path, monkeypatch, text
):
    from cl2gnn.datasets import npz

    path = tmp_path / "G.npz"
    np.savez(path, **graph_arrays(n=N))
    monkeypatch.setenv(npz.LIMIT_VARIABLE, text)
    with pytest.raises(ValueError, match=npz.LIMIT_VARIABLE):
        npz.read_npz_graph(path)
