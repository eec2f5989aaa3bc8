"""Each synthetic study's claim, asserted numerically at reduced size."""

import itertools
import json
import os
from pathlib import Path

import pytest
import torch

import cl2gnn.studies.proposition2 as proposition2
from cl2gnn.cli.main import main
from cl2gnn.studies import STUDIES, run_study

from .. import reference as ref


def test_message_passing_alignment_collapses_uniformity_spreads_contrastive_separates(tmp_path):
    m = run_study("message-passing", tmp_path, steps=300, n_per_class=50).metrics
    collapsed = 0.5 * (m["alignment_intra_final"] + m["alignment_inter_final"])
    assert m["alignment_intra_final"] < 0.3 and m["alignment_inter_final"] < 0.3  # collapse
    assert m["uniformity_intra_final"] > 2.0 and m["uniformity_inter_final"] > 2.0  # spread
    assert abs(m["uniformity_separation"] - 1.0) < 0.05  # ... without class structure
    assert m["contrastive_separation"] > 1.1 > m["initial_separation"]
    assert m["contrastive_separation"] > m["uniformity_separation"] + 0.05
    assert collapsed < m["contrastive_intra_final"]  # contrastive does not collapse
    assert (tmp_path / "message-passing.json").exists()
    assert (tmp_path / "message-passing-features.png").stat().st_size > 10_000


def test_proposition2_bound_holds_every_step(tmp_path, monkeypatch):
    # the study's own numbers and booleans, recomputed here from what it ran: the graph and
    # step it used, the trajectory of its alignment steps, and a dense float64 spectrum of
    # each class's normalised Laplacian (tests/reference.py)
    used, trajectory = {}, []

    def class_spectra(edge_index, labels):
        used.update(edge_index=edge_index, labels=labels)
        return real_spectra(edge_index, labels)

    class RecordedAlignConv(proposition2.AlignConv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            used["step"] = self.step

        def forward(self, x, edge_index):
            out = super().forward(x, edge_index)
            trajectory.extend([x, out] if not trajectory else [out])
            return out

    real_spectra = proposition2.class_spectra
    monkeypatch.setattr(proposition2, "class_spectra", class_spectra)
    monkeypatch.setattr(proposition2, "AlignConv", RecordedAlignConv)
    m = run_study("proposition2", tmp_path, steps=60, n_per_class=40).metrics
    assert len(trajectory) == 61
    edge_index, labels, step = used["edge_index"], used["labels"], used["step"]
    for k, key in enumerate(("connected", "disconnected")):
        members = torch.nonzero(labels == k).view(-1)
        adj = ref.dense_adjacency(edge_index, labels.numel())[members][:, members]
        eig = torch.linalg.eigvalsh(
            torch.eye(members.numel(), dtype=ref.f64) - ref.sym_normalized(adj)
        )
        bound = max(abs(1 - 2 * step * eig[1]), abs(1 - 2 * step * eig[-1]))
        u = adj.sum(1).sqrt() / adj.sum(1).sqrt().norm()  # null space of L: span(D^½ 1)
        dist = torch.stack(
            [(x[members] - u[:, None] * (u @ x[members])).norm() for x in trajectory]
        )
        usable = dist[:-1] > 1e-9 * dist[0]
        ratios = (dist[1:] / dist[:-1])[usable]
        assert m[f"{key}_lambda_2"] == pytest.approx(float(eig[1]), abs=1e-9)
        assert m[f"{key}_bound"] == pytest.approx(float(bound), rel=1e-9)
        assert m[f"{key}_max_ratio"] == pytest.approx(float(ratios.max()), rel=1e-9)
        assert bool((ratios <= bound * (1 + 1e-9)).all())  # Proposition 2, recomputed
        assert m[f"{key}_bound_holds_every_step"] is True  # and as the study reports it
        assert m[f"{key}_final_over_initial"] == pytest.approx(float(dist[-1] / dist[0]), rel=1e-9)
    assert m["connected_lambda_2"] > 0.05 and abs(m["disconnected_lambda_2"]) < 1e-9
    assert m["connected_max_ratio"] > 0.95 * m["connected_bound"]  # the bound is tight
    assert m["connected_final_over_initial"] < 1e-3  # contracts to one direction
    assert m["disconnected_final_over_initial"] > 0.05  # does not


def test_proposition3_graphs_converge(tmp_path):
    m = run_study("proposition3", tmp_path, steps=600, num_samples=12).metrics
    assert m["final_over_initial"] < 0.5


def test_spectral_clustering_recovers_clean_sbm(tmp_path):
    m = run_study("spectral-clustering", tmp_path, steps=1500, clusters=4, per_cluster=40).metrics
    assert m["p1.0_q0.0_spectral"]["nmi"] > 0.99
    assert m["p1.0_q0.0_infonce"]["nmi"] > 0.8


def test_neural_kernel_network_keeps_clusters_free_features_spread(tmp_path):
    m = run_study("neural-kernel", tmp_path, steps=200, per_cluster=20).metrics
    assert m["network_separation_final"] > 5.0
    assert m["free_separation_final"] < 0.3 * m["network_separation_final"]
    assert m["free_max_gap_final"] < m["network_max_gap_final"]  # free: closer to uniform
    k = m["evenly_spaced_k_at_half_loss"]
    assert k["0.05"] > k["0.2"] > k["1.0"]  # smaller τ holds more clusters


def test_new_designs(tmp_path):
    m = run_study("new-designs", tmp_path, steps=150, n_per_class=60).metrics
    assert m["attention_weight_wrong_edges"] < 0.5 * m["attention_weight_right_edges"]
    assert m["attention_separation_final"] > m["plain_separation_final"]
    assert m["memory_multi-stage (s=16)_spread_final"] > m["memory_alignment_spread_final"]


def test_oversmoothing_alignment_collapses_contrastive_norm_does_not(tmp_path):
    root = os.environ.get("CL2GNN_DATA")
    if not root or not (Path(root) / "planetoid/Cora/raw").is_dir():
        pytest.skip(f"needs $CL2GNN_DATA/planetoid/Cora/raw (CL2GNN_DATA={root})")
    result = run_study("oversmoothing", tmp_path, steps=32, dim=16)
    m, align = result.metrics, result.curves["AlignConv"]["dirichlet"]
    assert all(b <= a for a, b in itertools.pairwise(align))  # GCN smooths monotonically
    assert m["align_dirichlet_final"] < 0.05 * m["dirichlet_initial"]  # collapse
    assert m["align_norm_dirichlet_final"] > 0.1 * m["dirichlet_initial"]  # no collapse
    assert m["align_norm_dirichlet_final"] > 5 * m["align_dirichlet_final"]
    assert (tmp_path / "oversmoothing.png").stat().st_size > 10_000


def test_cli_list_and_run(tmp_path, capsys):
    assert main(["simulate", "--list"]) == 0
    assert capsys.readouterr().out.split() == list(STUDIES)
    assert main(["simulate", "proposition2", "--out", str(tmp_path), "--steps", "20"]) == 0
    saved = json.loads((tmp_path / "proposition2.json").read_text())
    assert saved["metrics"]["steps"] == 20 and "connected" in saved["curves"]
    with pytest.raises(ValueError, match="unknown study"):
        run_study("nope", tmp_path)
