import json
import subprocess
import sys
import warnings

import pytest

from cl2gnn.cli.main import main


def test_verify_passes_and_writes_json(tmp_path, capsys):
    out = tmp_path / "verify.json"
    assert main(["verify", "--nodes", "20", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "PASS" in text and "AlignConv" in text
    checks = json.loads(out.read_text())["checks"]
    from cl2gnn.nn import OPERATORS  # every registered operator, and Prop. 1 and eq. 12

    assert {name.split("(")[0] for name in checks} == {
        *OPERATORS,
        "eq. 12 self-attention",
        "Prop. 1 InfoNCE decomposition",
    }
    assert max(checks.values()) < 1e-10


def test_verify_fails_when_tolerance_is_impossible(capsys):
    assert main(["verify", "--nodes", "20", "--tol", "1e-300"]) == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.parametrize("nodes", [4, 5, 7])
def test_verify_passes_at_the_smallest_and_odd_sizes(nodes, capsys):
    assert main(["verify", "--nodes", str(nodes)]) == 0
    assert "PASS" in capsys.readouterr().out


def test_module_entry_point_info_prints_no_warning():
    """``info`` imports PyG, whose import-time torch.jit.script notice the command hides."""
    result = subprocess.run(
        [sys.executable, "-m", "cl2gnn", "info"], capture_output=True, text=True, check=True
    )
    assert "torch_geometric" in result.stdout and "faiss" in result.stdout
    assert result.stderr == ""


def test_lazy_package_keeps_the_usual_imports():
    code = (
        "import sys, cl2gnn\n"
        "assert 'torch' not in sys.modules\n"
        "from cl2gnn import losses\n"
        "assert cl2gnn.nn.AlignConv and cl2gnn.graphs.knn_graph and losses.InfoNCELoss\n"
        "assert callable(cl2gnn.set_validation) and {'nn', 'set_validation'} <= set(dir(cl2gnn))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_readme_quick_tour_runs():
    """The README's Python example is executed as written."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert float(namespace["loss"]) > 0 and namespace["x_next"].shape == (512, 64)


def test_simulate_spectral_clustering_warns_nothing(tmp_path, capsys):
    """Its clean SBM is disconnected on purpose: scikit-learn's notice about that is hidden."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            main(["simulate", "spectral-clustering", "--steps", "20", "--out", str(tmp_path)]) == 0
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "spectral-clustering.json",
        "spectral-clustering.png",
    ]
