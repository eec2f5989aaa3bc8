"""Image SSL: augmentations, datasets, kNN monitor, checkpoint/resume, the examples."""

import colorsys
import importlib.util
import zipfile
from pathlib import Path

import pytest
import torch
from torchvision.io import encode_png

from cl2gnn.vision.augment import MultiViewAugment, hsv_to_rgb, rgb_to_hsv
from cl2gnn.vision.data import ImageSet, load_images, read_image_folder
from cl2gnn.vision.knn_monitor import linear_probe_accuracy, weighted_knn_predict
from cl2gnn.vision.models import SSLNet
from cl2gnn.vision.objectives import SimCLRObjective
from cl2gnn.vision.train import PretrainConfig, Pretrainer

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("channels", [1, 3])
def test_augment_shape_dtype_range_and_seed(channels):
    images = torch.randint(0, 256, (16, channels, 12, 12), dtype=torch.uint8)
    aug = MultiViewAugment(size=10, blur_p=0.5, solarize_p=0.5, mean=None, std=None)
    a = aug(images, torch.Generator().manual_seed(1))
    b = aug(images, torch.Generator().manual_seed(1))
    c = aug(images, torch.Generator().manual_seed(2))
    assert a.shape == (16, channels, 10, 10) and a.dtype == torch.float32
    pixels = a * 0.5 + 0.5  # undo the default normalisation
    assert pixels.min() >= -1e-6 and pixels.max() <= 1 + 1e-6
    assert torch.equal(a, b) and not torch.equal(a, c)
    with pytest.raises(ValueError, match="uint8"):
        aug(images.float(), torch.Generator())


def test_augment_identity_settings_reproduce_the_image():
    images = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)
    aug = MultiViewAugment(
        size=8, scale=(1, 1), ratio=(1, 1), flip_p=0, jitter_p=0, gray_p=0, mean=None, std=None
    )
    out = aug(images, torch.Generator()) * 0.5 + 0.5
    assert torch.allclose(out, images.float() / 255, atol=1e-5)
    flipped = MultiViewAugment(
        size=8, scale=(1, 1), ratio=(1, 1), flip_p=1, jitter_p=0, gray_p=0, mean=None, std=None
    )(images, torch.Generator())
    assert torch.allclose(flipped * 0.5 + 0.5, images.float().flip(-1) / 255, atol=1e-5)


def hsv_cases():
    """Random colours plus the branch edges: greys (no hue), black, white, and each
    channel tied for the maximum."""
    edges = [[0, 0, 0], [1, 1, 1], [0.5, 0.5, 0.5], [1, 0, 0], [0.7, 0.7, 0.2], [0.2, 0.7, 0.7]]
    edges += [[0.7, 0.2, 0.7], [0.3, 0.9, 0.1], [0.1, 0.3, 0.9]]
    return torch.rand(200, 3, dtype=torch.float64).tolist() + edges


def test_hsv_conversions_match_colorsys():
    # each direction against Python's colorsys (the round trip alone would pass two
    # conversions that share a wrong convention, e.g. hue running the other way)
    rgb = hsv_cases()
    image = torch.tensor(rgb, dtype=torch.float64).T.reshape(1, 3, -1, 1)
    hsv = rgb_to_hsv(image).reshape(3, -1).T
    expected = torch.tensor([colorsys.rgb_to_hsv(*p) for p in rgb], dtype=torch.float64)
    assert torch.allclose(hsv, expected, atol=1e-12)
    hsv_in = [*torch.rand(200, 3, dtype=torch.float64).tolist(), [0.999, 1.0, 1.0], [0.5, 0, 0.3]]
    back = hsv_to_rgb(torch.tensor(hsv_in, dtype=torch.float64).T.reshape(1, 3, -1, 1))
    expected = torch.tensor([colorsys.hsv_to_rgb(*p) for p in hsv_in], dtype=torch.float64)
    assert torch.allclose(back.reshape(3, -1).T, expected, atol=1e-12)
    x = torch.rand(5, 3, 4, 4)
    assert torch.allclose(hsv_to_rgb(rgb_to_hsv(x)), x, atol=1e-5)


def test_knn_monitor_equals_bruteforce():
    gen = torch.Generator().manual_seed(0)
    train, test = torch.randn(60, 5, generator=gen), torch.randn(25, 5, generator=gen)
    labels = torch.randint(0, 4, (60,), generator=gen)
    k, t = 7, 0.1
    pred = weighted_knn_predict(train, labels, test, 4, k=k, t=t, tile=4)
    tn = torch.nn.functional.normalize(train, dim=1)
    for i, q in enumerate(torch.nn.functional.normalize(test, dim=1)):
        sims = sorted(((float(q @ tn[j]), int(labels[j])) for j in range(60)), reverse=True)[:k]
        votes = [0.0] * 4
        for s, c in sims:
            votes[c] += torch.exp(torch.tensor(s / t)).item()
        assert int(pred[i]) == max(range(4), key=votes.__getitem__)


def test_linear_probe_separates_separable_features_and_not_noise():
    gen = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 3, (300,), generator=gen)
    centers = 5 * torch.randn(3, 8, generator=gen)
    feats = centers[labels] + torch.randn(300, 8, generator=gen)
    assert linear_probe_accuracy(feats[:200], labels[:200], feats[200:], labels[200:]) > 0.95
    noise = torch.randn(300, 8, generator=gen)
    assert linear_probe_accuracy(noise[:200], labels[:200], noise[200:], labels[200:]) < 0.6


def test_image_folder_zip_reader(tmp_path):
    archive = tmp_path / "train.zip"
    pictures = {}
    with zipfile.ZipFile(archive, "w") as zf:
        for cls in ("cat", "dog"):
            for i in range(3):
                img = torch.randint(0, 256, (3, 6, 6), dtype=torch.uint8)
                pictures[(cls, i)] = img
                zf.writestr(f"train/{cls}/{i:04d}.png", encode_png(img).numpy().tobytes())
    data = read_image_folder(tmp_path, "train")
    assert data.classes == ["cat", "dog"] and data.images.shape == (6, 3, 6, 6)
    assert torch.equal(data.labels, torch.tensor([0, 0, 0, 1, 1, 1]))
    assert torch.equal(data.images[4], pictures[("dog", 1)])  # PNG is lossless
    again = read_image_folder(tmp_path, "train")  # from the cache
    assert torch.equal(again.images, data.images)


def test_digits_dataset():
    train, test = load_images("digits"), load_images("digits", train=False)
    assert train.images.dtype == torch.uint8 and train.images.shape[1:] == (1, 8, 8)
    assert len(train) + len(test) == 1797 and int(train.images.max()) == 255


def tiny_trainer(out=None, epochs=2, device="cpu"):
    train = load_images("digits")
    train = ImageSet(train.images[:128], train.labels[:128], train.classes)
    aug = MultiViewAugment(size=8, flip_p=0, gray_p=0, jitter=(0.4, 0.4, 0, 0), mean=None, std=None)
    torch.manual_seed(0)
    model = SSLNet("convnet", 1, proj_dims=(32, 16))
    config = PretrainConfig(epochs=epochs, batch_size=32, lr=0.1, warmup_epochs=1, knn_k=5)
    return Pretrainer(model, SimCLRObjective(0.5), train, train, aug, config, device, out)


def test_sample_draws_across_a_class_sorted_set():
    # an image folder lists its files class by class: the first 100 would all be class 0
    labels = torch.arange(10).repeat_interleave(50)
    images = labels.to(torch.uint8) + 100 * (torch.arange(500) % 2).to(torch.uint8)
    data = ImageSet(
        images[:, None, None, None].expand(500, 1, 2, 2).clone(),
        labels,
        [str(c) for c in range(10)],
    )
    part = data.sample(100)
    assert len(part) == 100 and part.labels.unique().numel() == 10
    assert torch.equal(part.images[:, 0, 0, 0] % 100, part.labels.to(torch.uint8))  # pairs kept
    assert part.images[:, 0, 0, 0].ge(100).any() and part.images[:, 0, 0, 0].lt(100).any()
    assert torch.equal(data.sample(100).images, part.images)  # the same draw for a seed
    assert not torch.equal(data.sample(100, seed=1).images, part.images)
    assert data.sample(500) is data
    with pytest.raises(ValueError, match="size"):
        data.sample(0)


def test_checkpoint_resume_gives_identical_next_loss(tmp_path):
    straight = tiny_trainer(epochs=2)
    straight.fit(progress=False)
    first = tiny_trainer(tmp_path, epochs=2)
    first.config.epochs = 1
    first.fit(progress=False)
    resumed = tiny_trainer(tmp_path, epochs=2)
    resumed.load_checkpoint(tmp_path / "checkpoint.pt")
    assert resumed.epoch == 1
    resumed.fit(progress=False)
    assert resumed.history.losses == straight.history.losses
    assert resumed.history.knn_accuracy[-1] == straight.history.knn_accuracy[-1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_checkpoint_written_on_cuda_resumes_there_with_its_generators(tmp_path):
    """The generator states come back where they live (the batch order's on the CPU, the
    augmentations' on the GPU), whatever device the checkpoint is loaded for."""
    first = tiny_trainer(tmp_path, epochs=2, device="cuda")
    first.config.epochs = 1
    first.fit(progress=False)
    resumed = tiny_trainer(tmp_path, epochs=2, device="cuda")
    resumed.load_checkpoint(tmp_path / "checkpoint.pt")
    assert resumed.epoch == 1
    assert torch.equal(resumed.order_gen.get_state(), first.order_gen.get_state())
    assert torch.equal(resumed.augment_gen.get_state(), first.augment_gen.get_state())
    resumed.fit(progress=False)
    assert len(resumed.history.losses) == 2


def load_example(name):
    """The image pre-training command ``cl2gnn {name}``'s module."""
    return importlib.import_module(f"cl2gnn.cli.{name}")


TINY = ["--epochs", "1", "--subset", "200", "--batch-size", "64", "--no-progress"]


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--attention", "1.0"],
        ["--kernel", "laplacian"],
        ["--kernel", "concat"],
        ["--nn-positives", "2"],
    ],
)
def test_simclr_example_one_epoch(extra, tmp_path):
    out = tmp_path / "result.json"
    result = load_example("simclr").main(
        [*TINY, *extra, "--json", str(out), "--out", str(tmp_path)]
    )
    for key in ("knn_accuracy", "epochs", "epoch_seconds", "device"):
        assert key in result
    # the default device: the GPU where there is one
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    assert 0.0 <= result["knn_accuracy"] <= 1.0 and result["device"] == device
    assert out.exists() and (tmp_path / "checkpoint.pt").exists()


@pytest.mark.parametrize("extra", [[], ["--multistage", "2", "--warmup-stages", "0"]])
def test_simsiam_example_one_epoch(extra, tmp_path):
    result = load_example("simsiam").main([*TINY, *extra])
    assert result["epochs"] == 1 and -1.0 <= result["final_loss"] <= 1.0  # a negative cosine


def test_objective_rejects_two_variants():
    with pytest.raises(ValueError, match="at most one"):
        SimCLRObjective(attention=1.0, kernel="laplacian")
    with pytest.raises(ValueError, match="kernel"):
        SimCLRObjective(kernel="cauchy")
