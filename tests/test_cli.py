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
    assert len(checks) == 10 and max(checks.values()) < 1e-10


def test_verify_fails_when_tolerance_is_impossible(capsys):
    assert main(["verify", "--nodes", "20", "--tol", "0"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_module_entry_point_info():
    result = subprocess.run(
        [sys.executable, "-m", "cl2gnn", "info"], capture_output=True, text=True, check=True
    )
    assert "torch_geometric" in result.stdout and "faiss" in result.stdout
