"""Optimisers and schedules for SSL pre-training: SGD or LARS, linear warm-up + cosine."""

from __future__ import annotations

import math

import torch


class LARS(torch.optim.Optimizer):
    """SGD with momentum and a layer-wise trust ratio ``eta ‖w‖ / ‖g + wd w‖`` (You et al.,
    2017); biases and normalisation weights (1-D parameters) are updated as plain SGD and
    not decayed, as in SimCLR."""

    def __init__(
        self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0, eta: float = 0.02
    ):
        super().__init__(
            params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "eta": eta}
        )

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if p.ndim > 1:
                    grad = grad.add(p, alpha=group["weight_decay"])
                    w_norm, g_norm = p.norm(), grad.norm()
                    trust = torch.where(
                        (w_norm > 0) & (g_norm > 0),
                        group["eta"] * w_norm / g_norm,
                        torch.ones_like(w_norm),
                    )
                    grad = grad * trust
                buf = self.state[p].get("momentum")
                if buf is None:
                    buf = self.state[p]["momentum"] = grad.clone()
                else:
                    buf.mul_(group["momentum"]).add_(grad)
                p.add_(buf, alpha=-group["lr"])


def build_optimizer(
    model: torch.nn.Module, name: str, lr: float, weight_decay: float, momentum: float = 0.9
):
    if name == "sgd":
        decay = [p for p in model.parameters() if p.ndim > 1]
        no_decay = [p for p in model.parameters() if p.ndim <= 1]
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.SGD(groups, lr=lr, momentum=momentum)
    if name == "lars":
        return LARS(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be 'sgd' or 'lars', got {name!r}")


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """Multiplier of the base learning rate at ``step`` (0-based) of ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
