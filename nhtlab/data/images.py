"""Image classification data as tensors: an offline default, CIFAR-10 and CelebA (opt-in).

* :func:`digits` needs no network: scikit-learn ships 1,797 handwritten digits
  (8 × 8, grey levels 0–16), upsampled to ``size`` × ``size``, scaled to [0, 1]
  and copied to three channels, so every image model and the cues of
  :mod:`nhtlab.data.cues` work on them unchanged.
* :func:`cifar10` and :func:`celeba` read the files torchvision downloads. They never download unless
  asked (``download=True``), never wait for a dead network longer than a short socket timeout, and
  never substitute another dataset: when the files cannot be found or fetched they raise
  :class:`DatasetUnavailableError` saying how to fix it.

The tensors live in memory, so training needs no DataLoader
(:func:`nhtlab.training.loop.train` samples minibatches by index).
"""

from __future__ import annotations

import os
import pickle
import socket
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..hooks import smoke_images
from ..validation import require_bool, require_int, require_real, require_type

__all__ = ["ImageData", "DatasetUnavailableError", "digits", "cifar10", "read_cifar10_batches", "CIFAR10_CLASSES",
           "celeba", "CELEBA_TASK"]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class DatasetUnavailableError(RuntimeError):
    """A dataset could not be loaded or downloaded; the message says how to fix it."""


@dataclass
class ImageData:
    """A train/test split of an image classification dataset.

    Attributes
    ----------
    x_train, x_test : FloatTensor, shape (n, 3, H, W)
        Images with values in [0, 1].
    y_train, y_test : LongTensor, shape (n,)
        Class indices in ``range(num_classes)``.
    num_classes : int
    name : str
    class_names : tuple of str
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    name: str = "images"
    class_names: tuple[str, ...] = field(default_factory=tuple)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(channels, height, width)."""
        return tuple(self.x_train.shape[1:])  # type: ignore[return-value]

    def to(self, device: torch.device | str) -> "ImageData":
        """Return a copy with every tensor on ``device``."""
        return ImageData(self.x_train.to(device), self.y_train.to(device), self.x_test.to(device),
                         self.y_test.to(device), self.num_classes, self.name, self.class_names)


def _split(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return order[n_test:], order[:n_test]


def digits(size: int = 16, test_fraction: float = 0.3, seed: int = 0) -> ImageData:
    """scikit-learn's bundled handwritten digits, upsampled to RGB ``size`` × ``size``.

    Offline: the 1,797 images ship inside scikit-learn. Grey levels 0–16 are
    scaled to [0, 1], upsampled bilinearly and repeated over three channels.

    Parameters
    ----------
    size : int >= 8
        Output height and width in pixels.
    test_fraction : float in (0, 1)
        Share of the images held out for testing (a seeded random split).
    seed : int
        Seed of the split.

    Returns
    -------
    ImageData
        ``x_train`` (n_train, 3, size, size), ``y_train`` (n_train,), likewise
        for the test split; ten classes. Under the smoke cap
        (``NHTLAB_SMOKE=1``, :mod:`nhtlab.build.smoke`) each split keeps its first
        ``NHTLAB_SMOKE_IMAGES`` images, as :func:`cifar10` does.

    Examples
    --------
    >>> data = digits(size=16, seed=0)
    >>> tuple(data.x_train.shape[1:]), data.num_classes
    ((3, 16, 16), 10)
    """
    require_int(size, "size", low=8, high=256, owner="digits")  # 1,797 images of size² floats
    require_real(test_fraction, "test_fraction", 0.0, 1.0, low_open=True, high_open=True, owner="digits")
    require_int(seed, "seed", low=0, owner="digits")
    # local: scikit-learn is slow to import; only the digits need it
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = torch.tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16.0  # (n, 1, 8, 8)
    if size != 8:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x.clamp(0.0, 1.0).repeat(1, 3, 1, 1).contiguous()  # (n, 3, size, size)
    y = torch.tensor(bunch.target, dtype=torch.long)
    train_idx, test_idx = _split(len(y), test_fraction, seed)
    cap = smoke_images()  # None unless the smoke cap is on
    if cap is not None:  # a capped run exercises code paths; evaluations on all images dominated its time
        train_idx, test_idx = train_idx[:cap], test_idx[:cap]
    return ImageData(x[train_idx], y[train_idx], x[test_idx], y[test_idx], 10, name=f"digits{size}",
                     class_names=tuple(str(k) for k in range(10)))


CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_FILES = (*CIFAR10_TRAIN, "test_batch", "batches.meta")


def _fetch(what: str, fetch, timeout: float, fix: str):
    """``fetch()`` (torchvision) under a socket timeout; a failure raised as DatasetUnavailableError("what (why). fix")."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        return fetch()
    except (RuntimeError, OSError, ValueError) as exc:
        raise DatasetUnavailableError(f"{what} ({type(exc).__name__}: {exc}). {fix}") from exc
    finally:
        socket.setdefaulttimeout(previous)


def read_cifar10_batches(folder: str | Path, train: bool = True, limit: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Read CIFAR-10's python batches (``data_batch_1..5`` or ``test_batch``) as tensors.

    The format is the one torchvision reads: each file is a pickled dict with
    ``data`` (uint8, (n, 3072), channel-major rows) and ``labels``. The images
    come out exactly as ``torchvision.datasets.CIFAR10`` gives them, moved to
    channels-first. ``folder`` is ``cifar-10-batches-py``; ``train`` picks the five training batches or the
    test batch; ``limit`` keeps the first this many images. Returns ``x`` (n, 3, 32, 32) in [0, 1] and ``y`` (n,).
    """
    folder = Path(folder)
    xs, ys = [], []
    for name in CIFAR10_TRAIN if train else ("test_batch",):
        try:
            with open(folder / name, "rb") as f:
                entry = pickle.load(f, encoding="latin1")
            xs.append(np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.extend(entry["labels"] if "labels" in entry else entry["fine_labels"])
        except Exception as exc:  # noqa: BLE001 - any damage is reported the same way
            raise DatasetUnavailableError(
                f"CIFAR-10 is unavailable: {folder / name} is damaged or not in CIFAR-10's python format "
                f"({type(exc).__name__}: {exc}). Delete {folder} and extract cifar-10-python.tar.gz again.") from exc
        if limit is not None and sum(len(x) for x in xs) >= limit:
            break
    x = torch.from_numpy(np.concatenate(xs)[:limit]).float().div_(255.0).contiguous()
    y = torch.tensor(ys[:limit], dtype=torch.long)
    return x, y


def cifar10(root: str | Path, download: bool = False, timeout: float = 20.0,
            train_limit: int | None = None, test_limit: int | None = None) -> ImageData:
    """CIFAR-10 as in-memory tensors (opt-in download through torchvision).

    The extracted batches are read by :func:`read_cifar10_batches` (the same
    decoding as ``torchvision.datasets.CIFAR10``); torchvision only downloads,
    checks and extracts the archive when ``download=True`` and files are missing.

    Parameters
    ----------
    root : str or Path
        Folder holding (or receiving) ``cifar-10-batches-py``. The environment
        variable ``NHTLAB_CIFAR_ROOT``, when set, replaces it (a local copy, or
        the tests' small archive in CIFAR-10's format); the returned data's
        ``name`` then says where it came from.
    download : bool
        Fetch the archive (about 170 MB) when it is missing. Off by default so
        that nothing touches the network unless asked.
    timeout : float > 0
        Socket timeout in seconds while downloading, so a dead network fails
        fast instead of hanging.
    train_limit, test_limit : int, optional
        Keep only the first this many images of each split (smoke tests).
        Under the smoke cap (``NHTLAB_SMOKE=1``, :mod:`nhtlab.build.smoke`) both are
        at most ``NHTLAB_SMOKE_IMAGES`` and ``download`` is treated as False, so
        a capped run never touches the network.

    Returns
    -------
    ImageData
        ``x_train`` (50000, 3, 32, 32) in [0, 1], ``x_test`` (10000, 3, 32, 32).

    Raises
    ------
    DatasetUnavailableError
        When the files are missing and ``download`` is False, the download
        fails, or a batch file is damaged; the message names the fix. No other dataset is substituted.
    """
    require_type(root, "root", (str, Path), owner="cifar10")
    require_bool(download, "download", owner="cifar10")
    require_real(timeout, "timeout", 0.0, low_open=True, owner="cifar10")
    for name, limit in (("train_limit", train_limit), ("test_limit", test_limit)):
        if limit is not None:
            require_int(limit, name, low=1, owner="cifar10")

    name = "cifar10"
    if os.environ.get("NHTLAB_CIFAR_ROOT"):
        root = os.environ["NHTLAB_CIFAR_ROOT"]
        name = f"cifar10 (NHTLAB_CIFAR_ROOT={root})"
    cap = smoke_images()  # None unless the smoke cap is on
    if cap is not None:
        train_limit, test_limit = min(train_limit or cap, cap), min(test_limit or cap, cap)
        download = False
    root = Path(root).expanduser()
    folder = root / CIFAR10_FOLDER
    if download and not all((folder / f).exists() for f in CIFAR10_FILES):
        import torchvision  # local: only a download needs it

        _fetch(f"CIFAR-10 is unavailable: the download into {str(root)!r} failed",
               lambda: torchvision.datasets.CIFAR10(str(root), download=True), timeout,
               f"Check the network, or extract https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz into {str(root)!r}.")
    missing = [f for f in CIFAR10_FILES if not (folder / f).exists()]
    if missing:
        fix = (f"it was not found under {str(root)!r} (missing {', '.join(missing)} in {CIFAR10_FOLDER}) and "
               f"download=False{' (the smoke cap never downloads)' if cap is not None else ''}. Call "
               f"nhtlab.data.images.cifar10({str(root)!r}, download=True) with network access (about 170 MB), "
               f"or extract cifar-10-python.tar.gz into {str(root)!r}, or point NHTLAB_CIFAR_ROOT at a folder "
               f"holding {CIFAR10_FOLDER}; or use the offline nhtlab.data.images.digits() instead.")
        raise DatasetUnavailableError(f"CIFAR-10 is unavailable: {fix}")
    x_train, y_train = read_cifar10_batches(folder, train=True, limit=train_limit)
    x_test, y_test = read_cifar10_batches(folder, train=False, limit=test_limit)
    return ImageData(x_train, y_train, x_test, y_test, 10, name=name, class_names=CIFAR10_CLASSES)


#: The NHT paper's CelebA task (arXiv 2603.07323): the target attribute, then the spurious one.
CELEBA_TASK = ("Smiling", "Blond_Hair")


def _draw(attr: torch.Tensor, counts: dict[tuple[int, int], int], rng, split: str) -> np.ndarray:
    """Indices of ``counts[(target, spurious)]`` images of each group, drawn without replacement, shuffled."""
    picked = []
    for (t, s), n in counts.items():
        pool = np.flatnonzero(((attr[:, 0] == t) & (attr[:, 1] == s)).numpy())
        if len(pool) < n:
            raise ValueError(f"celeba: CelebA's {split} split holds {len(pool)} images with {CELEBA_TASK[0]}={t}, "
                             f"{CELEBA_TASK[1]}={s}; {n} were asked for. Lower 'n_train', 'n_test' or 'rho'.")
        picked.append(rng.choice(pool, n, replace=False))
    return rng.permutation(np.concatenate(picked))


def celeba(root: str | Path, download: bool = False, size: int = 32, n_train: int = 8000, n_test: int | None = None,
           rho: float = 0.95, seed: int = 0, timeout: float = 20.0):
    """CelebA's Smiling task with Blond_Hair as the spurious cue, read through ``torchvision.datasets.CelebA``.

    Training images (``split="train"``) are drawn, seeded, half smiling, blond on a share ``rho`` of each
    class (blond ↔ smiling), like the border of :mod:`nhtlab.data.cues`. Test images (``split="test"``):
    ``coloured`` at the same ``rho``; ``clean`` with ``n_test // 4`` images of each (Smiling, Blond_Hair)
    group, also the sets ``group<t><s>`` (worst-group accuracy: their minimum); ``conflict`` its two
    disagreeing groups, labelled by Smiling (``cue``: by Blond_Hair); ``shortcut``: ``clean`` labelled by
    Blond_Hair. Images are centre-cropped square and resized to ``size`` (RGB in [0, 1]). torchvision
    checks its five attribute files' MD5 sums (not the images); ``download=True`` needs ``gdown``.

    Returns
    -------
    ShortcutData
        Two classes, ``kind="celeba"``, ``cue_train`` the Blond_Hair bit; ``settings`` holds the chosen files.

    Raises
    ------
    DatasetUnavailableError
        Files absent or damaged (naming ``root`` and ``download``), or the download failed.
    """
    owner = "celeba"
    require_type(root, "root", (str, Path), owner=owner)
    require_bool(download, "download", owner=owner)
    require_int(size, "size", low=4, high=218, owner=owner)
    require_int(n_train, "n_train", low=2, owner=owner)
    n_test = require_int(n_test if n_test is not None else n_train // 4, "n_test", low=4, owner=owner)
    require_real(rho, "rho", 0.0, 1.0, owner=owner)
    require_int(seed, "seed", low=0, owner=owner)
    require_real(timeout, "timeout", 0.0, low_open=True, owner=owner)
    import torchvision  # local: only CelebA and CIFAR-10's download need it

    from .cues import ShortcutData  # local: cues imports this module

    root = Path(root).expanduser()
    fix = (f"Call nhtlab.data.images.celeba({str(root)!r}, download=True) with network access and gdown (about "
           f"1.4 GB from Google Drive, which may refuse it: then put img_align_celeba/ and the five list_*.txt / "
           f"identity_CelebA.txt files under {str(root / 'celeba')!r} by hand).")
    if not download and not (root / "celeba" / "img_align_celeba").is_dir():
        raise DatasetUnavailableError(f"CelebA is unavailable: {str(root / 'celeba')!r} holds no img_align_celeba "
                                      f"folder and download=False. {fix}")
    what = f"CelebA is unavailable: torchvision could not {'download' if download else 'read'} it under {str(root)!r}"
    sets = {split: _fetch(what, lambda split=split: torchvision.datasets.CelebA(str(root), split, download=download),
                          timeout, fix) for split in ("train", "test")}
    rng, out = np.random.default_rng(seed), {}

    def square(image):
        w, h = image.size
        s = min(w, h)
        image = image.convert("RGB").crop(((w - s) // 2, (h - s) // 2, (w + s) // 2, (h + s) // 2))
        return torch.from_numpy(np.array(image.resize((size, size), resample=2))).permute(2, 0, 1)  # bilinear

    def read(split: str, n: int, rho: float | None) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
        ds = sets[split]
        ds.transform = square
        attr = ds.attr[:, [ds.attr_names.index(a) for a in CELEBA_TASK]]
        agree = n // 4 if rho is None else round(n // 2 * rho)  # per class; None: the four groups balanced
        counts = {(1, 1): agree, (0, 0): agree, (1, 0): n // 2 - agree, (0, 1): n // 2 - agree}
        idx = _draw(attr, counts, rng, split)
        x = torch.stack([ds[i][0] for i in idx]).float().div_(255.0) if len(idx) else torch.empty(0, 3, size, size)
        return x, attr[idx], [ds.filename[i] for i in idx]

    x_train, a_train, out["train_files"] = read("train", n_train, rho)
    x_col, a_col, out["coloured_files"] = read("test", n_test, rho)
    x, a, out["test_files"] = read("test", n_test, None)
    test_sets = {"coloured": (x_col, a_col[:, 0]), "clean": (x, a[:, 0]), "shortcut": (x, a[:, 1])}
    off = a[:, 0] != a[:, 1]
    test_sets.update(conflict=(x[off], a[off, 0]), cue=(x[off], a[off, 1]))
    test_sets.update({f"group{t}{s}": (x[(a[:, 0] == t) & (a[:, 1] == s)], a[(a[:, 0] == t) & (a[:, 1] == s), 0])
                      for t in (0, 1) for s in (0, 1)})
    return ShortcutData(x_train, a_train[:, 0].clone(), a_train[:, 1].clone(), test_sets, 2, torch.zeros(2, 3),
                        float(rho), "celeba", dict(out, size=size, seed=seed, base="celeba", task=CELEBA_TASK))
