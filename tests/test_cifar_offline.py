"""CIFAR-10 without the network: a small archive in CIFAR-10's own format, read by nhtlab and torchvision."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

import nhtlab
from nhtlab.data.images import CIFAR10_CLASSES, DatasetUnavailableError, cifar10, read_cifar10_batches

PER_CLASS = 3  # images per class in each batch file


def write_fake_cifar10(root: Path, per_class: int = PER_CLASS, seed: int = 0) -> Path:
    """Write ``cifar-10-batches-py`` under ``root`` in CIFAR-10's python format; return ``root``.

    Five training batches and a test batch, each with ``per_class`` random
    images of every class (uint8 rows of 3072 values, channel-major), plus
    ``batches.meta`` with the class names.
    """
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        labels = [k for k in range(10) for _ in range(per_class)]
        rng.shuffle(labels)
        data = rng.integers(0, 256, size=(len(labels), 3072), dtype=np.uint8)
        with open(folder / name, "wb") as f:
            pickle.dump({"batch_label": name.encode(), "labels": labels, "data": data,
                         "filenames": [f"{name}_{i}.png".encode() for i in range(len(labels))]}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": list(CIFAR10_CLASSES), "num_cases_per_batch": 10 * per_class, "num_vis": 3072}, f)
    return root


def _torchvision_reader(root: Path, train: bool, monkeypatch):
    torchvision = pytest.importorskip("torchvision")
    # torchvision checks the real files' MD5 sums; the format reader behind that check is what we compare with
    import torchvision.datasets.cifar as tv_cifar

    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *args, **kwargs: True)
    return torchvision.datasets.CIFAR10(str(root), train=train, download=False)


def test_nhtlab_reads_the_archive_as_torchvision_does(tmp_path, monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    monkeypatch.delenv("NHTLAB_CIFAR_ROOT", raising=False)
    root = write_fake_cifar10(tmp_path)
    data = cifar10(root)
    assert data.x_train.shape == (5 * 10 * PER_CLASS, 3, 32, 32) and data.x_test.shape == (10 * PER_CLASS, 3, 32, 32)
    assert data.x_train.dtype == torch.float32 and 0.0 <= float(data.x_train.min()) and float(data.x_train.max()) <= 1.0
    assert data.class_names == CIFAR10_CLASSES and data.num_classes == 10
    assert sorted(torch.bincount(data.y_test).tolist()) == [PER_CLASS] * 10
    for train, x, y in ((True, data.x_train, data.y_train), (False, data.x_test, data.y_test)):
        ref = _torchvision_reader(root, train, monkeypatch)
        expected = torch.from_numpy(ref.data).permute(0, 3, 1, 2).float() / 255.0  # (n, H, W, C) → (n, C, H, W)
        assert torch.equal(x, expected)
        assert y.tolist() == list(ref.targets)
    # a pixel decoded by hand from the channel-major row: red channel first, row by row
    with open(root / "cifar-10-batches-py" / "test_batch", "rb") as f:
        raw = pickle.load(f, encoding="latin1")
    assert float(data.x_test[0, 1, 2, 3]) == pytest.approx(raw["data"][0][1024 + 2 * 32 + 3] / 255.0)


def test_limits_and_the_shortcut_pipeline(tmp_path, monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    root = write_fake_cifar10(tmp_path)
    x, y = read_cifar10_batches(root / "cifar-10-batches-py", train=True, limit=7)
    assert x.shape == (7, 3, 32, 32) and y.shape == (7,)
    monkeypatch.setenv("NHTLAB_CIFAR_ROOT", str(root))
    with pytest.raises(DatasetUnavailableError):  # the loader reads no environment variable
        cifar10("nowhere")
    data = cifar10(root, download=True)  # the files exist, so nothing is fetched
    assert data.name == "cifar10" and len(data.y_train) == 150
    profiles = {name: dict(images=dict(base="cifar10", root="data")) for name in ("quick", "book", "full")}
    settings = nhtlab.book.select_profile(profiles, "full").images  # the book's layer applies NHTLAB_CIFAR_ROOT
    run = nhtlab.ShortcutRun(**settings, width=2, pad=False, rho=0.95, channels=(4, 4, 8, 8, 8, 8),
                             steps=3, eval_every=3, batch_size=8, device="cpu")
    assert run.root == str(root)
    history = nhtlab.training.shortcut_run.run_shortcut(run, progress="none")
    assert history.status == "completed" and {"clean_acc", "cue_acc", "norm/conv1"} <= set(history.columns)


def test_missing_data_without_download_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    monkeypatch.delenv("NHTLAB_CIFAR_ROOT", raising=False)
    with pytest.raises(DatasetUnavailableError, match=r"missing data_batch_1.*download=False.*download=True.*extract"):
        cifar10(tmp_path, download=False)
    root = write_fake_cifar10(tmp_path / "partial")
    (root / "cifar-10-batches-py" / "test_batch").unlink()
    with pytest.raises(DatasetUnavailableError, match="missing test_batch"):
        cifar10(root)


def test_a_damaged_batch_is_reported(tmp_path, monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    monkeypatch.delenv("NHTLAB_CIFAR_ROOT", raising=False)
    root = write_fake_cifar10(tmp_path)
    (root / "cifar-10-batches-py" / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(DatasetUnavailableError, match="data_batch_3 is damaged"):
        cifar10(root)


class _Crafted:
    """What a crafted batch file would hold: an object whose unpickling runs code (here it only writes a file)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "the pickle ran code"))


def test_a_crafted_batch_runs_no_code_and_is_reported(tmp_path, monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    monkeypatch.delenv("NHTLAB_CIFAR_ROOT", raising=False)
    root = write_fake_cifar10(tmp_path / "data")
    marker = tmp_path / "ran"
    with open(root / "cifar-10-batches-py" / "data_batch_1", "wb") as f:
        pickle.dump({"labels": [0], "data": _Crafted(marker)}, f)
    with pytest.raises(DatasetUnavailableError, match=r"data_batch_1 is damaged.*pathlib.*trusted source"):
        cifar10(root)
    assert not marker.exists()


@pytest.mark.parametrize("labels", [lambda n: [k % 100 for k in range(n)], lambda n: [-1] * n, lambda n: [0] * (n + 10)])
def test_labels_that_are_not_cifar10s_are_reported(tmp_path, monkeypatch, labels):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    monkeypatch.delenv("NHTLAB_CIFAR_ROOT", raising=False)
    root = write_fake_cifar10(tmp_path)
    data = np.zeros((20, 3072), dtype=np.uint8)
    with open(root / "cifar-10-batches-py" / "test_batch", "wb") as f:
        pickle.dump({"labels": labels(20), "data": data}, f)
    with pytest.raises(DatasetUnavailableError, match="test_batch is damaged.*one label in 0–9 per image"):
        cifar10(root)
