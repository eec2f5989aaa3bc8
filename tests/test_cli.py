import json
import subprocess
import sys

from cl2gnn.cli import main


def test_verify_passes_and_writes_json(tmp_path, capsys):
    out = tmp_path / "verify.json"
    assert main(["verify", "--nodes", "20", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "PASS" in text and "AlignConv" in text
    checks = json.loads(out.read_text())["checks"]
    assert len(checks) == 11 and max(checks.values()) < 1e-10


def test_verify_fails_when_tolerance_is_impossible(capsys):
    assert main(["verify", "--nodes", "20", "--tol", "0"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_module_entry_point_info():
    result = subprocess.run(
        [sys.executable, "-m", "cl2gnn", "info"], capture_output=True, text=True, check=True
    )
    assert "torch_geometric" in result.stdout and "faiss" in result.stdout


def test_readme_quick_tour_runs():
    """The README's Python example is executed as written."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert float(namespace["loss"]) > 0 and namespace["x_next"].shape == (512, 64)
