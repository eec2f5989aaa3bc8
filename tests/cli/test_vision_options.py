"""The image commands' options build the objective they name: the objective that
``cl2gnn simclr`` / ``simsiam`` would train with, taken from their ``main`` (the
training run replaced by a stub), equals a float64 reference of the option's formula and
the plain objective at the option's neutral value."""

import pytest
import torch

from cl2gnn.cli import pretrain

from .. import reference as ref
from ..vision.test_vision import load_example

B, DIM, TAU = 6, 4, 0.5


def built_objective(example, argv, monkeypatch, num_samples=B):
    """The objective ``example``'s ``main(argv)`` would train with."""
    module = load_example(example)

    def run(args, per_dataset, make_model, make_objective):
        return make_objective(num_samples, DIM)

    monkeypatch.setattr(pretrain, "run", run)
    return module.main(argv)


def outputs(seed):
    """Two views' model outputs ``(h, z, p)``: backbone features, projections, predictions."""
    gen = torch.Generator().manual_seed(seed)
    return [
        tuple(torch.randn(B, DIM, generator=gen, dtype=torch.float64) for _ in "hzp") for _ in "12"
    ]


def simclr(argv, monkeypatch):
    """The SimCLR objective of ``argv`` and its value on fixed outputs."""
    objective = built_objective("simclr", ["--temperature", str(TAU), *argv], monkeypatch)
    out1, out2 = outputs(0)
    return objective(out1, out2, torch.arange(B)), (out1, out2)


def test_simclr_default_is_nt_xent(monkeypatch):
    loss, ((_, z1, _), (_, z2, _)) = simclr([], monkeypatch)
    assert torch.allclose(loss, ref.nt_xent(z1, z2, TAU), rtol=1e-12)


@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_attention_weights_each_anchor_by_its_positives_attention(beta, monkeypatch):
    loss, ((h1, z1, _), (h2, z2, _)) = simclr(["--attention", str(beta)], monkeypatch)
    assert torch.allclose(loss, ref.attention_nt_xent(z1, z2, h1, h2, TAU, beta), rtol=1e-12)
    assert not torch.allclose(loss, ref.nt_xent(z1, z2, TAU))


def test_attention_zero_is_plain_infonce(monkeypatch):
    loss, ((_, z1, _), (_, z2, _)) = simclr(["--attention", "0"], monkeypatch)
    assert torch.allclose(loss, ref.nt_xent(z1, z2, TAU), rtol=1e-12)


def kernel_reference(kernel, z1, z2):
    half = DIM // 2
    return {
        "laplacian": lambda: ref.kernel_nce(z1, z2, 1.0, TAU),
        "exp0.5": lambda: ref.kernel_nce(z1, z2, 0.5, TAU),
        # mixtures with the Gaussian kernel, weight 1/2: on the whole features, or on halves
        "sum": lambda: (
            0.5 * ref.kernel_nce(z1, z2, 1.0, TAU) + 0.5 * ref.kernel_nce(z1, z2, 2.0, TAU)
        ),
        "concat": lambda: (
            0.5 * ref.kernel_nce(z1[:, :half], z2[:, :half], 1.0, TAU)
            + 0.5 * ref.kernel_nce(z1[:, half:], z2[:, half:], 2.0, TAU)
        ),
    }[kernel]()


@pytest.mark.parametrize("kernel", ["laplacian", "exp0.5", "sum", "concat"])
def test_kernel_gives_the_kernel_infonce(kernel, monkeypatch):
    loss, ((_, z1, _), (_, z2, _)) = simclr(["--kernel", kernel], monkeypatch)
    assert torch.allclose(loss, kernel_reference(kernel, z1, z2), rtol=1e-12)
    assert not torch.allclose(loss, ref.nt_xent(z1, z2, TAU))


@pytest.mark.parametrize("k", [0, 1, 3])
def test_nn_positives_adds_each_views_nearest_views_as_positives(k, monkeypatch):
    loss, ((_, z1, _), (_, z2, _)) = simclr(["--nn-positives", str(k)], monkeypatch)
    x = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    a = ref.pair_adjacency(B)  # each view's other view, plus its k nearest views (cosine)
    for i in range(2 * B):
        similarity = {j: float(x[i] @ x[j]) for j in range(2 * B) if j != i}
        for j in sorted(similarity, key=similarity.get, reverse=True)[:k]:
            a[i, j] += 1
    assert torch.allclose(loss, ref.info_nce_on_graph(x, a, TAU), rtol=1e-12)
    assert torch.allclose(loss, ref.nt_xent(z1, z2, TAU), rtol=1e-12) == (k == 0)


@pytest.mark.parametrize("stages", [2, 3])
def test_multistage_targets_average_the_last_stages_after_the_warmup(stages, monkeypatch):
    """Each prediction's target is the mean of the other view's projection and the
    sample's mean projection from each of the last ``stages - 1`` stages (epochs) in which
    it was seen, from the stage after the warm-up on; before, plain SimSiam."""
    argv = ["--multistage", str(stages), "--warmup-stages", "1", "--epochs", "8"]
    objective = built_objective("simsiam", argv, monkeypatch, num_samples=2 * B)
    plain = built_objective("simsiam", ["--multistage", "0"], monkeypatch)
    seen = {}  # (sample, stage) -> the sample's mean projection, as the float32 bank keeps it
    for stage in range(stages + 2):
        ids = torch.randperm(2 * B, generator=torch.Generator().manual_seed(stage))[:B]
        out1, out2 = outputs(10 + stage)
        (_, z1, p1), (_, z2, p2) = out1, out2
        loss = objective(out1, out2, ids)
        targets1, targets2 = [], []
        for row, i in enumerate(ids.tolist()):
            window = range(stage - 1, stage - stages, -1) if stage >= 1 else ()
            stored = [seen[i, s] for s in window if (i, s) in seen]
            targets1.append(torch.stack([z1[row], *stored]).mean(0))
            targets2.append(torch.stack([z2[row], *stored]).mean(0))
        expected = ref.simsiam_loss(p1, p2, torch.stack(targets1), torch.stack(targets2))
        assert torch.allclose(loss, expected, rtol=1e-12)
        if stage == 0:
            assert torch.allclose(loss, plain(out1, out2, ids), rtol=1e-12)
        else:
            assert not torch.allclose(loss, plain(out1, out2, ids))
        for row, i in enumerate(ids.tolist()):
            seen[i, stage] = (0.5 * (z1[row] + z2[row])).float().double()
        objective.end_epoch()
