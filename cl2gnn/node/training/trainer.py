"""What the full-batch and the mini-batch trainer share: the encoder (the built-in one, or
any module the user brings), the method, the views, the optimiser, one optimisation step,
and the interface :func:`~cl2gnn.node.training.fit.fit` drives."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from torch_geometric import seed_everything
from torch_geometric.data import Data

from ..._checks import first_line
from ..config import NodeConfig
from ..encoders.features import with_column_mask
from ..encoders.user import feature_transform
from ..inputs import check_view
from ..methods import EncoderInput
from ..views import View, made_by_library, view_masks
from .plan import check_run


def parameter_groups(
    params: list[torch.nn.Parameter],
    rates_of: dict[torch.nn.Parameter, float],
    learning_rate: float,
) -> list[dict]:
    """The optimiser's groups: ``params`` at ``learning_rate``, those in ``rates_of`` (a method's
    :meth:`~cl2gnn.node.methods.NodeMethod.learning_rates`) at theirs, kept as a scale of
    ``learning_rate`` (``lr_scale``) for a schedule to scale alike."""
    rates: dict[float, list[torch.nn.Parameter]] = {}
    for param in params:
        rates.setdefault(rates_of.get(param, learning_rate), []).append(param)
    return [
        {"params": group}
        if rate == learning_rate
        else {"params": group, "lr": rate, "lr_scale": rate / learning_rate}
        for rate, group in rates.items()
    ]


class Trainer:
    """The state of one training run on ``data`` with ``method`` (a registered name, or an
    objective ``(z1, z2, h1, h2) -> loss``).

    ``encoder``: any ``torch.nn.Module`` called as ``encoder(x, edge_index)`` (with
    ``edge_weight=`` where the graph has weights) returning ``[N, d]`` (checked at every
    call), of which the run trains a copy (the module given is left as it is), given
    ``data.x`` after :attr:`transform`
    (:func:`~cl2gnn.node.encoders.user.feature_transform`); ``None``:
    the built-in :class:`~cl2gnn.node.GraphEncoder` of ``config``. ``augment``: one view
    (``Data -> Data``, a PyG transform) for both, a pair, or ``None`` (the configuration's
    edge dropping and feature masking); a view not made of the library's own has its output
    checked (:func:`~cl2gnn.node.inputs.check_view`: its edges in range). The run is
    checked first, every rule at once (:func:`~cl2gnn.node.training.plan.check_run`).

    Subclasses define :meth:`epoch` (one pass over the nodes; the mean loss, a 0-dim tensor
    left on the device) and
    :meth:`embed` (every node's embedding); :func:`~cl2gnn.node.training.fit.fit` drives either.
    """

    def __init__(
        self,
        data: Data,
        method: str | Callable[[Tensor, Tensor, Tensor, Tensor], Tensor],
        config: NodeConfig,
        *,
        encoder: torch.nn.Module | None = None,
        augment: View | Sequence[View] | None = None,
        seed: int = 0,
        device: str | torch.device = "cpu",
        distributed: str | None = None,
        mask_generator: torch.Generator | None = None,
    ) -> None:
        self.plan = check_run(
            data, method, config, encoder=encoder, device=device, distributed=distributed
        )
        self.config, self.device = config, device
        self.data, self.seed, self.mask_generator = data, seed, mask_generator
        self.edge_weight = data.get("edge_weight")
        self.builtin = encoder is None
        seed_everything(seed)
        if not self.builtin:  # the user's module stays as it was given: each run trains a copy
            encoder = copy.deepcopy(encoder)
        self.transform = None if self.builtin else feature_transform(config, encoder)
        objective = {"objective": method} if callable(method) else {}
        self.method = self.plan.build(
            data,
            encoder=encoder,
            views=augment,
            distributed=distributed,
            generator=mask_generator,
            **objective,
        ).to(device)
        self.encoder = self.method.encoder
        self.model = self.method  # what a step calls (under torchrun, its DDP wrapper)
        self.label = getattr(self.method, "label", self.method.name)
        params = [p for p in self.method.parameters() if p.requires_grad]
        # fused on CUDA: one launch for every parameter, and no read of the step counters;
        # capturable: its step counters stay on the device (a step a CUDA graph can capture)
        fused = bool(params) and all(p.is_cuda for p in params)
        self.optimizer = torch.optim.Adam(
            parameter_groups(params, self.method.learning_rates(), config.learning_rate),
            lr=config.learning_rate,
            weight_decay=config.weight_decay,
            fused=fused or None,
            capturable=fused,
        )
        self.steps, self.steps_per_epoch = 0, 1

    def features(self, data: Data) -> Tensor:
        """``data.x`` as the encoder is given it: after :attr:`transform` (the configuration's
        row normalisation, for an encoder of one's own), as it is for the built-in encoder."""
        return data.x if self.transform is None else self.transform(data).x

    def view_input(
        self, view: View, x: Tensor, prepared, edge_index: Tensor, graphs
    ) -> EncoderInput:
        """``view`` of the graph ``(x, edge_index)`` (and the whole graph's weights) as the
        encoder reads it. The built-in encoder reads ``prepared`` (``x`` as
        :meth:`~cl2gnn.node.GraphEncoder.prepare` made it) and the propagation graph from
        ``graphs`` (:class:`~cl2gnn.node.encoders.propagation.ViewGraphs`): a view made of edge
        drops and column masks is drawn as its masks (:func:`~cl2gnn.node.views.view_masks`), the
        column mask kept apart for the first layer's weight and the kept edges zeroing the
        dropped entries of a fixed structure; any other encoder reads the view's ``Data``.
        The output of a view of one's own is checked first
        (:func:`~cl2gnn.node.inputs.check_view`)."""
        data = Data(x=x, edge_index=edge_index, num_nodes=x.size(0))
        if self.edge_weight is not None:
            data.edge_weight = self.edge_weight.to(x.device)
        if not self.builtin:
            out = view(data)
            if not made_by_library(view):
                check_view(out, x.size(0))
            return EncoderInput(out.x, out.edge_index, out.get("edge_weight"))
        masks = view_masks(view, data)
        if masks is None:  # a view of its own: its features and edges are what it says
            out = view(copy.copy(data))
            if not made_by_library(view):
                check_view(out, x.size(0))
            features = prepared if out.x is x else out.x
            graph = graphs.of(out.edge_index, out.get("edge_weight"))
            return EncoderInput(features, graph, prepared=True)
        edges, columns = masks
        features = prepared if columns is None else with_column_mask(prepared, columns)
        return EncoderInput(features, graphs.kept(edges), prepared=True)

    @property
    def total_steps(self) -> int:
        return max(self.config.epochs * self.steps_per_epoch, 1)

    def learning_rate(self, step: int) -> float:
        """The learning rate of optimiser step ``step`` (from 0): linear warm-up over
        ``config.lr_warmup`` epochs, then constant or a cosine decay to zero."""
        config = self.config
        warmup = config.lr_warmup * self.steps_per_epoch
        if step < warmup:
            return config.learning_rate * (step + 1) / warmup
        if not config.lr_cosine:
            return config.learning_rate
        done = (step - warmup) / max(self.total_steps - warmup, 1)
        return config.learning_rate * 0.5 * (1 + math.cos(math.pi * done))

    def optimise(self, loss: Tensor) -> None:
        """One optimiser step on ``loss``, then the method's :meth:`~NodeMethod.after_step`."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.config.lr_warmup or self.config.lr_cosine:
            for group in self.optimizer.param_groups:
                group["lr"] = self.learning_rate(self.steps) * group.get("lr_scale", 1.0)
        self.optimizer.step()
        self.steps += 1
        self.method.after_step(min(1.0, self.steps / self.total_steps))

    def generators(self) -> dict[str, torch.Generator]:
        """The run's own random generators beside torch's global ones (the default views'
        feature masks where they have one): part of :meth:`state_dict`."""
        return {} if self.mask_generator is None else {"feature_masks": self.mask_generator}

    def state_dict(self) -> dict:
        """What continues this run exactly, between two epochs (:meth:`load_state_dict`):
        the encoder's and the method's parameters and buffers (heads, predictor, target
        encoder, discriminator, memory), the optimiser's state, the optimiser steps taken
        (the learning-rate schedule's and the moving average's position) and the random
        generators' states: torch's on the CPU and on the training device, and
        :meth:`generators`. The tensors are the modules' own (not copies)."""
        rng = {"cpu": torch.get_rng_state()}
        if torch.device(self.device).type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        rng |= {name: generator.get_state() for name, generator in self.generators().items()}
        return {
            "model": self.method.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "steps": self.steps,
            "rng": rng,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`'s ``state`` (of a run of the same method,
        configuration and graph); ``ValueError`` naming the entry that does not fit."""
        try:
            self.method.load_state_dict(state["model"])
        except (RuntimeError, TypeError, AttributeError) as error:
            raise ValueError(f"model: {first_line(error)}") from None
        try:
            self.optimizer.load_state_dict(state["optimizer"])
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"optimizer: {first_line(error)}") from None
        for group in self.optimizer.param_groups:
            for param in group["params"]:
                for name, value in self.optimizer.state.get(param, {}).items():
                    if isinstance(value, Tensor) and value.dim() and value.shape != param.shape:
                        raise ValueError(
                            f"optimizer: its {name} has shape {tuple(value.shape)}, its "
                            f"parameter {tuple(param.shape)}"
                        )
        self.steps = state["steps"]
        rng = state["rng"]
        if not isinstance(rng, dict):
            raise ValueError(f"rng: the generators' states by name, got {type(rng).__name__}")
        generators = {"cpu": torch.random.default_generator, **self.generators()}
        if torch.device(self.device).type == "cuda" and "cuda" in rng:
            torch.cuda.set_rng_state(rng["cuda"], self.device)
        for name, generator in generators.items():
            try:
                generator.set_state(rng[name])
            except (KeyError, RuntimeError, TypeError) as error:
                raise ValueError(f"rng.{name}: {first_line(error)}") from None

    def epoch(self) -> Tensor:
        raise NotImplementedError

    def embed(self) -> Tensor:
        raise NotImplementedError
