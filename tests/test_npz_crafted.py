"""Crafted ``.npz`` files: each is refused by ``cl2gnn node --dataset
G.npz`` in one line, exit 2, naming the file and the field, before the reader allocates a
declared shape or any training starts."""

import io
import zipfile

import numpy as np
import pytest

from cl2gnn.apps import cmdline
from cl2gnn.apps.cli import main

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
