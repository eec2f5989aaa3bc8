"""Batch normalisation over the global batch of every rank (SimCLR's global BN).

``torch.nn.SyncBatchNorm`` does this on GPUs only; :class:`GlobalBatchNorm` does it on any
device with two differentiable all-reduces per layer (the channel means, then the centred
second moments), so that the statistics, the running buffers and the gradients equal
those of one process normalising the concatenated batch.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn.modules.batchnorm import _BatchNorm

from .collectives import all_reduce_sum
from .launch import rank_and_world


class GlobalBatchNorm(_BatchNorm):
    r"""Batch normalisation whose training statistics span every rank's batch:

    .. math::
        y = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}}\, \gamma + \beta, \qquad
        \mu = \frac{1}{M} \sum_{r} \sum_{i \in r} x_i, \quad
        \sigma^2 = \frac{1}{M} \sum_{r} \sum_{i \in r} (x_i - \mu)^2,

    :math:`M` the number of values per channel over all ranks. The statistics are summed in
    float32 (float64 for float64 input) and :math:`M` counted in float64, so bf16 and fp16
    input (bf16 counts exactly only to 256, fp16 overflows at 65,504) normalise as well as
    float32; the output has the input's dtype, as torch's batch normalisation gives under
    autocast. Outside a process group of several ranks, or in evaluation mode, it is
    :class:`torch.nn.BatchNorm2d` / ``BatchNorm1d``. Build it with :func:`convert_batchnorm`.

    Shapes:
        - **input:** :math:`(N, C)` or :math:`(N, C, *)`
        - **output:** the same
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2-D input, got {input.dim()}-D")

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or rank_and_world()[1] == 1:
            return super().forward(x)
        self._check_input_dim(x)
        dtype = x.dtype
        x = x.to(torch.promote_types(dtype, torch.float32))
        dims = [d for d in range(x.dim()) if d != 1]
        local = x.new_tensor(float(x.numel() // x.size(1)), dtype=torch.float64)
        count = all_reduce_sum(local).to(x.dtype)  # exact in float64; float32 to 2^24
        mean = all_reduce_sum(x.sum(dims)) / count
        shape = [1, -1] + [1] * (x.dim() - 2)
        centred = x - mean.view(shape)
        var = all_reduce_sum(centred.square().sum(dims)) / count
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                momentum = self.momentum
                if momentum is None:  # a cumulative average
                    momentum = 1.0 / float(self.num_batches_tracked)
                unbiased = var * (count / (count - 1).clamp_min(1))
                self.running_mean.lerp_(mean.to(self.running_mean.dtype), momentum)
                self.running_var.lerp_(unbiased.to(self.running_var.dtype), momentum)
        y = centred * torch.rsqrt(var + self.eps).view(shape)
        if self.affine:
            y = y * self.weight.view(shape).to(y.dtype) + self.bias.view(shape).to(y.dtype)
        return y.to(dtype)


def convert_batchnorm(module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """Every batch normalisation of ``module`` over the global batch: torch's
    ``SyncBatchNorm`` on CUDA, :class:`GlobalBatchNorm` elsewhere (weights and running
    statistics kept)."""
    if device.type == "cuda":
        return torch.nn.SyncBatchNorm.convert_sync_batchnorm(module)
    if isinstance(module, _BatchNorm) and not isinstance(module, GlobalBatchNorm):
        converted = GlobalBatchNorm(
            module.num_features,
            module.eps,
            module.momentum,
            module.affine,
            module.track_running_stats,
            device=module.running_mean.device if module.running_mean is not None else None,
            dtype=module.running_mean.dtype if module.running_mean is not None else None,
        )
        converted.load_state_dict(module.state_dict())
        converted.train(module.training)
        return converted
    for name, child in module.named_children():
        module.add_module(name, convert_batchnorm(child, device))
    return module
