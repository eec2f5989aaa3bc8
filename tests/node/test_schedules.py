"""The trainer's schedules, step by step, against formulas written here from the papers:
the learning rate's linear warm-up and cosine decay (BGRL's schedule), and the progress the
target encoder's moving average is raised along (its decay ``1 - (1 - τ)(cos(πt) + 1)/2``)."""

import math

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch_geometric.data import Data

from cl2gnn.node import NodeConfig
from cl2gnn.node.training.fullbatch import FullBatchTrainer
from cl2gnn.node.training.minibatch import MinibatchTrainer


def graph(n=40):
    gen = torch.Generator().manual_seed(0)
    source, target = torch.randint(n, (2, 160), generator=gen)
    return Data(x=torch.randn(n, 5, generator=gen), edge_index=torch.stack([source, target]))


def expected_learning_rate(step, base, warmup_steps, total_steps, cosine):
    """Step ``step`` counted from 0: ``base (step + 1) / W`` during the warm-up's ``W``
    steps, then ``base`` or half a cosine from ``base`` to 0 over the remaining steps."""
    if step < warmup_steps:
        return base * (step + 1) / warmup_steps
    if not cosine:
        return base
    return base * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps))) / 2


def expected_decay(progress, decay):
    return 1 - (1 - decay) * (math.cos(math.pi * progress) + 1) / 2


@pytest.mark.parametrize(
    ("trainer_class", "batch_size"), [(FullBatchTrainer, None), (MinibatchTrainer, 16)]
)
@pytest.mark.parametrize("cosine", [True, False])
def test_the_schedules_step_by_step(trainer_class, batch_size, cosine):
    epochs, warmup, base = 6, 2, 0.05
    config = NodeConfig(
        out_channels=4,
        hidden_channels=8,
        epochs=epochs,
        learning_rate=base,
        lr_warmup=warmup,
        lr_cosine=cosine,
        batch_size=batch_size,
        options={"predictor_hidden": 8, "ema_decay": 0.9, "ema_cosine": True},
    )
    trainer = trainer_class(graph(), "bgrl", config, seed=0)
    rates, progress, decays = [], [], []

    def record_rate(optimizer, args, kwargs):
        rates.append(optimizer.param_groups[0]["lr"])

    real_update = trainer.method.target.update

    def update(online, fraction):
        before = [p.detach().clone() for p in trainer.method.target.encoder.parameters()]
        real_update(online, fraction)
        after = list(trainer.method.target.encoder.parameters())
        online_params = [p.detach() for p in online.parameters()]
        # the decay the update applied, read off the weights: after = d·before + (1 - d)·online
        weight = next(i for i, p in enumerate(before) if p.numel() > 1)
        gap = (online_params[weight] - before[weight]).flatten()
        moved = (after[weight] - before[weight]).flatten()
        decays.append(1 - float(moved @ gap / (gap @ gap)))
        progress.append(fraction)

    trainer.method.target.update = update
    hook = register_optimizer_step_pre_hook(record_rate)
    try:
        for _ in range(epochs):
            trainer.epoch()
    finally:
        hook.remove()
    steps = trainer.steps_per_epoch * epochs
    assert len(rates) == len(progress) == steps and steps >= epochs
    if batch_size:
        assert trainer.steps_per_epoch > 1  # warm-up counted in epochs, stepped per batch
    warmup_steps = warmup * trainer.steps_per_epoch
    for step in range(steps):
        want = expected_learning_rate(step, base, warmup_steps, steps, cosine)
        assert rates[step] == pytest.approx(want, rel=1e-12), step
        assert progress[step] == pytest.approx((step + 1) / steps, rel=1e-12), step
        assert decays[step] == pytest.approx(expected_decay((step + 1) / steps, 0.9), abs=1e-5)
    assert decays[-1] == pytest.approx(1.0, abs=1e-6)  # the target stops at the end
