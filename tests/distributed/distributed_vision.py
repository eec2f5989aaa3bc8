"""The image SSL pipeline on several gloo processes: what
``tests/distributed/test_distributed.py``'s workers record about it (the tests compare
with one process there).

* one DDP step of an ``SSLNet`` with global batch normalisation and a distributed SimCLR
  objective (with kNN positives from the global batch in gather mode, which ring mode
  refuses), on fixed views (no augmentation): the parameters and BN buffers after it;
* a ``Pretrainer`` over a small digits subset: each step's shard of the global batch, the
  kNN monitor against the features embedded without sharding, and an exact resume from a
  checkpoint written by rank 0 after an interrupted run.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from cl2gnn.distributed.batchnorm import convert_batchnorm
from cl2gnn.vision.augment import MultiViewAugment
from cl2gnn.vision.data import load_images
from cl2gnn.vision.knn_monitor import knn_accuracy
from cl2gnn.vision.models import SSLNet
from cl2gnn.vision.objectives import SimCLRObjective
from cl2gnn.vision.train import PretrainConfig, Pretrainer

f64 = torch.float64
STEP_SIZES = {2: (7, 5), 3: (5, 2, 5)}  # the DDP step's samples per rank: uneven
TRAIN_IMAGES, BATCH, EPOCHS = 96, 24, 2


def step_views() -> torch.Tensor:
    """Two fixed views per sample, ``[12, 2, 1, 8, 8]``."""
    return torch.randn(12, 2, 1, 8, 8, generator=torch.Generator().manual_seed(5), dtype=f64)


def nn_positives(mode: str) -> int:
    """The SSL step's kNN positives per view in ``mode``: none in ring mode, which refuses
    them."""
    return 0 if mode == "ring" else 2


def ddp_ssl_step(
    views: torch.Tensor, distributed: str | None, nn_positives: int = 2
) -> dict[str, torch.Tensor]:
    """One SGD step of SSLNet + SimCLR (with ``nn_positives``) on this process's samples;
    the model's state afterwards (parameters and batch-norm buffers)."""
    torch.manual_seed(0)
    model = SSLNet("convnet", 1, proj_dims=(16, 8)).to(f64)
    trained = model
    if distributed is not None:
        model = convert_batchnorm(model, torch.device("cpu"))
        trained = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    objective = SimCLRObjective(0.5, nn_positives=nn_positives, distributed=distributed)
    n = views.size(0)
    h, z, _ = trained(torch.cat([views[:, 0], views[:, 1]]))
    loss = objective((h[:n], z[:n], None), (h[n:], z[n:], None), torch.arange(n))
    loss.backward()
    optimizer.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def digits_subset():
    train = load_images("digits", train=True).sample(TRAIN_IMAGES, seed=1)
    test = load_images("digits", train=False).sample(60, seed=1)
    return train, test


def pretrainer(out: str | None, distributed: str | None = "gather") -> Pretrainer:
    train, test = digits_subset()
    torch.manual_seed(0)
    model = SSLNet("convnet", 1, proj_dims=(32, 16))
    augment = MultiViewAugment(size=8, scale=(0.4, 1.0), flip_p=0.0, gray_p=0.0)
    config = PretrainConfig(epochs=EPOCHS, batch_size=BATCH, warmup_epochs=1, knn_k=10, seed=3)
    objective = SimCLRObjective(0.2, distributed=distributed)
    return Pretrainer(model, objective, train, test, augment, config, "cpu", out)


class _Interrupted(Exception):
    pass


def pipeline_records(rank: int, out_dir: str) -> dict:
    """The shards each rank trained on, its monitor against unsharded features, and the
    weights of an uninterrupted run beside those of an interrupted and resumed one."""
    records = {"rank": rank}
    whole, resumed = Path(out_dir) / "whole", Path(out_dir) / "resumed"

    trainer = pretrainer(str(whole))
    shards = []
    train_step = trainer.train_step
    trainer.train_step = lambda idx: shards.append(idx.clone()) or train_step(idx)
    trainer.fit(progress=False)
    records["shards"] = shards
    records["base_lrs"] = trainer.base_lrs
    records["history"] = (trainer.history.losses, trainer.history.knn_accuracy)
    records["final"] = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    records["files"] = sorted(os.listdir(whole)) if whole.exists() else []
    trainer.model.eval()
    with torch.no_grad():  # every image embedded here, without sharding
        images = trainer.augment.evaluation_view(trainer.train_images)
        bank = trainer.model.backbone(images)
        test = trainer.model.backbone(trainer.augment.evaluation_view(trainer.test.images))
    records["features"] = (trainer.features(trainer.train_images), bank)
    c = trainer.config
    records["monitor"] = (
        trainer.knn_monitor(),
        knn_accuracy(bank, trainer.train_labels, test, trainer.test.labels, c.knn_k, c.knn_t),
    )

    interrupted = pretrainer(str(resumed))
    save = interrupted.save_checkpoint

    def save_then_stop(path):
        save(path)
        raise _Interrupted

    interrupted.save_checkpoint = save_then_stop
    try:
        interrupted.fit(progress=False)
    except _Interrupted:
        pass
    torch.distributed.barrier()  # rank 0 has written the checkpoint
    restarted = pretrainer(str(resumed))
    restarted.load_checkpoint(resumed / "checkpoint.pt")
    restarted.fit(progress=False)
    records["resumed"] = {k: v.clone() for k, v in restarted.model.state_dict().items()}
    return records
