"""Image classification data as in-memory tensors (no DataLoader): an offline default, CIFAR-10 and CelebA.

:func:`digits` needs no network (scikit-learn ships 1,797 8 × 8 digits, copied to three
channels so every image model and cue works on them). :func:`cifar10` and :func:`celeba`
download only when asked, under a short socket timeout, and never substitute another
dataset: they raise :class:`DatasetUnavailableError` saying how to fix it.
"""

from __future__ import annotations

import pickle
import socket
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..validation import require_bool, require_int, require_real, require_type

__all__ = ["ImageData", "ShortcutData", "DatasetUnavailableError", "digits", "cifar10", "read_cifar10_batches",
           "CIFAR10_CLASSES", "celeba", "CELEBA_TASK"]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class DatasetUnavailableError(RuntimeError):
    """A dataset could not be loaded or downloaded; the message says how to fix it."""


@dataclass
class ImageData:
    """A train/test split of an image classification dataset: images (n, 3, H, W) in [0, 1], class indices (n,)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    name: str = "images"
    class_names: tuple[str, ...] = field(default_factory=tuple)

    def to(self, device: torch.device | str) -> "ImageData":
        """Return a copy with every tensor on ``device``."""
        return ImageData(*(t.to(device) for t in (self.x_train, self.y_train, self.x_test, self.y_test)),
                         self.num_classes, self.name, self.class_names)


@dataclass
class ShortcutData:
    """Images with a class-correlated cue, and the test sets that measure reliance on it.

    ``cue_train`` is the class whose colour each training image carries (−1: none);
    ``test_sets`` maps ``coloured``, ``clean``, ``shortcut``, ``conflict``, ``cue`` (see
    :mod:`nhtlab.data.cues`) to (x, y); ``settings`` holds everything else that built the data.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    cue_train: torch.Tensor
    test_sets: dict[str, tuple[torch.Tensor, torch.Tensor]]
    num_classes: int
    colours: torch.Tensor
    rho: float
    kind: str
    settings: dict = field(default_factory=dict)

    @property
    def x_test(self) -> torch.Tensor:
        """The coloured test images (training distribution)."""
        return self.test_sets["coloured"][0]

    @property
    def y_test(self) -> torch.Tensor:
        return self.test_sets["coloured"][1]


def digits(size: int = 16, test_fraction: float = 0.3, seed: int = 0, train_limit: int | None = None,
           test_limit: int | None = None) -> ImageData:
    """scikit-learn's bundled handwritten digits (offline) in [0, 1], upsampled bilinearly to RGB ``size`` × ``size``.

    Parameters
    ----------
    size : int >= 8
    test_fraction : float in (0, 1)
        Share held out for testing (a random split seeded by ``seed``).
    seed : int
    train_limit, test_limit : int, optional
        Keep only the first this many images of each split (as :func:`cifar10`).

    Returns
    -------
    ImageData
        Ten classes.

    Examples
    --------
    >>> data = digits(size=16, seed=0)
    >>> tuple(data.x_train.shape[1:]), data.num_classes
    ((3, 16, 16), 10)
    """
    require_int(size, "size", low=8, high=256, owner="digits")  # 1,797 images of size² floats
    require_real(test_fraction, "test_fraction", 0.0, 1.0, low_open=True, high_open=True, owner="digits")
    require_int(seed, "seed", low=0, owner="digits")
    for name, limit in (("train_limit", train_limit), ("test_limit", test_limit)):
        if limit is not None:
            require_int(limit, name, low=1, owner="digits")
    from sklearn.datasets import load_digits  # local: scikit-learn is slow to import; only the digits need it

    bunch = load_digits()
    x = torch.tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16.0  # (n, 1, 8, 8)
    if size != 8:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x.clamp(0.0, 1.0).repeat(1, 3, 1, 1).contiguous()  # (n, 3, size, size)
    y = torch.tensor(bunch.target, dtype=torch.long)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    train_idx, test_idx = order[n_test:][:train_limit], order[:n_test][:test_limit]  # [:None] keeps all
    return ImageData(x[train_idx], y[train_idx], x[test_idx], y[test_idx], 10, name=f"digits{size}",
                     class_names=tuple(str(k) for k in range(10)))


CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_FILES = (*CIFAR10_TRAIN, "test_batch", "batches.meta")


def _fetch(what: str, fetch, timeout: float, fix: str):
    """``fetch()`` under a socket timeout; a failure raised as DatasetUnavailableError("what (why). fix")."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        return fetch()
    except (RuntimeError, OSError, ValueError) as exc:
        raise DatasetUnavailableError(f"{what} ({type(exc).__name__}: {exc}). {fix}") from exc
    finally:
        socket.setdefaulttimeout(previous)


class _ArraysOnly(pickle.Unpickler):
    """An unpickler that builds only dicts, lists, strings and NumPy arrays: a crafted batch cannot run code."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"it asks for {module}.{name}, which a CIFAR-10 batch never holds "
                                         "(only NumPy arrays, lists and strings are read)")
        return super().find_class(module, name)


def read_cifar10_batches(folder: str | Path, train: bool = True, limit: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Read CIFAR-10's python batches in ``folder`` as torchvision does: ``x`` (n, 3, 32, 32) in [0, 1] and ``y`` (n,).

    The batch files are pickles: take them from a trusted source (torchvision checks the
    archive's MD5 when it downloads it). They are read by :class:`_ArraysOnly`, so a crafted
    file is refused as damaged instead of running code; labels must be 0–9, one per image.
    """
    folder = Path(folder)
    xs, ys = [], []
    for name in CIFAR10_TRAIN if train else ("test_batch",):
        try:
            with open(folder / name, "rb") as f:
                entry = _ArraysOnly(f, encoding="latin1").load()
            images = np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
            labels = [int(label) for label in entry["labels"]]
            if len(labels) != len(images) or any(not 0 <= label < len(CIFAR10_CLASSES) for label in labels):
                raise ValueError(f"{len(labels)} labels for {len(images)} images, labels from {min(labels, default=0)} "
                                 f"to {max(labels, default=0)}; CIFAR-10 has one label in 0–9 per image")
            xs.append(images)
            ys.extend(labels)
        except Exception as exc:  # noqa: BLE001 - any damage is reported the same way
            raise DatasetUnavailableError(
                f"CIFAR-10 is unavailable: {folder / name} is damaged or not in CIFAR-10's python format "
                f"({type(exc).__name__}: {exc}). Delete {folder} and extract cifar-10-python.tar.gz again, from a "
                "trusted source (the batch files are pickles).") from exc
        if limit is not None and sum(len(x) for x in xs) >= limit:
            break
    x = torch.from_numpy(np.concatenate(xs)[:limit]).float().div_(255.0).contiguous()
    y = torch.tensor(ys[:limit], dtype=torch.long)
    return x, y


def cifar10(root: str | Path, download: bool = False, timeout: float = 20.0,
            train_limit: int | None = None, test_limit: int | None = None) -> ImageData:
    """CIFAR-10 as in-memory tensors, read by :func:`read_cifar10_batches` (torchvision's decoding).

    Parameters
    ----------
    root : str or Path
        Folder holding (or receiving) ``cifar-10-batches-py``.
    download : bool
        Let torchvision fetch, check and extract the archive (about 170 MB) when files are missing.
    timeout : float > 0
        Socket timeout in seconds while downloading, so a dead network fails fast.
    train_limit, test_limit : int, optional
        Keep only the first this many images of each split.

    Returns
    -------
    ImageData
        50,000 training and 10,000 test images (3, 32, 32). Missing files (with ``download``
        False), a failed download or a damaged batch raise DatasetUnavailableError naming the fix.
    """
    require_type(root, "root", (str, Path), owner="cifar10")
    require_bool(download, "download", owner="cifar10")
    require_real(timeout, "timeout", 0.0, low_open=True, owner="cifar10")
    for name, limit in (("train_limit", train_limit), ("test_limit", test_limit)):
        if limit is not None:
            require_int(limit, name, low=1, owner="cifar10")
    root = Path(root).expanduser()
    folder = root / CIFAR10_FOLDER
    if download and not all((folder / f).exists() for f in CIFAR10_FILES):
        import torchvision  # local: only a download needs it

        _fetch(f"CIFAR-10 is unavailable: the download into {str(root)!r} failed",
               lambda: torchvision.datasets.CIFAR10(str(root), download=True), timeout,
               f"Check the network, or extract cifar-10-python.tar.gz (www.cs.toronto.edu/~kriz) into {str(root)!r}.")
    missing = [f for f in CIFAR10_FILES if not (folder / f).exists()]
    if missing:
        raise DatasetUnavailableError(
            f"CIFAR-10 is unavailable: it was not found under {str(root)!r} (missing {', '.join(missing)} in "
            f"{CIFAR10_FOLDER}) and download=False. "
            f"Call nhtlab.data.images.cifar10({str(root)!r}, download=True) with network access (about 170 MB), or "
            f"extract cifar-10-python.tar.gz into {str(root)!r}; or use the offline nhtlab.data.images.digits() "
            f"instead.")
    x_train, y_train = read_cifar10_batches(folder, train=True, limit=train_limit)
    x_test, y_test = read_cifar10_batches(folder, train=False, limit=test_limit)
    return ImageData(x_train, y_train, x_test, y_test, 10, name="cifar10", class_names=CIFAR10_CLASSES)


#: The NHT paper's CelebA task (arXiv 2603.07323): the target attribute, then the spurious one.
CELEBA_TASK = ("Smiling", "Blond_Hair")


def celeba(root: str | Path, download: bool = False, size: int = 32, n_train: int = 8000, n_test: int | None = None,
           rho: float = 0.95, seed: int = 0, timeout: float = 20.0):
    """CelebA's Smiling with Blond_Hair as the cue, read through ``torchvision.datasets.CelebA`` (``root/celeba``).

    ``n_train`` images of ``split="train"``, half smiling, blond on a share ``rho`` of each
    class (the border's ρ), seeded. From ``split="test"`` (``n_test``, default
    ``n_train // 4``): ``coloured`` (same ``rho``); ``clean``, a quarter in each (Smiling,
    Blond_Hair) group ``group<t><s>`` (worst group: their minimum); ``conflict``, its
    disagreeing images (``cue``: by Blond_Hair); ``shortcut``: ``clean`` by Blond_Hair.
    Centre-cropped, resized to ``size``. torchvision checks the MD5 of the five text files,
    not the images; ``download=True`` (1.4 GB, Google Drive) needs gdown.
    """
    owner = "celeba"
    require_type(root, "root", (str, Path), owner=owner)
    require_bool(download, "download", owner=owner)
    for name, value, low in (("size", size, 4), ("n_train", n_train, 2), ("seed", seed, 0)):
        require_int(value, name, low=low, owner=owner)
    n_test = require_int(max(n_train // 4, 4) if n_test is None else n_test, "n_test", low=4, owner=owner)
    require_real(rho, "rho", 0.0, 1.0, owner=owner)
    require_real(timeout, "timeout", 0.0, low_open=True, owner=owner)
    import torchvision  # local: only CelebA and CIFAR-10's download need it

    root = Path(root).expanduser()
    fix = (f"Call nhtlab.data.images.celeba({str(root)!r}, download=True) with network access and gdown, or put "
           f"img_align_celeba/ and the list_*.txt and identity_CelebA.txt files under {str(root / 'celeba')!r}.")
    if not download and not (root / "celeba" / "img_align_celeba").is_dir():
        raise DatasetUnavailableError(f"CelebA is unavailable: no img_align_celeba folder in {str(root / 'celeba')!r} "
                                      f"and download=False. {fix}")
    what = f"CelebA is unavailable: torchvision could not {'download' if download else 'read'} it under {str(root)!r}"
    sets = {split: _fetch(what, lambda split=split: torchvision.datasets.CelebA(str(root), split, download=download),
                          timeout, fix) for split in ("train", "test")}
    rng, files = np.random.default_rng(seed), {}

    def square(image):  # the centre square, resized bilinearly, as uint8 (3, size, size)
        w, h = image.size
        c = min(w, h)
        image = image.convert("RGB").crop(((w - c) // 2, (h - c) // 2, (w + c) // 2, (h + c) // 2))
        return torch.from_numpy(np.array(image.resize((size, size), resample=2))).permute(2, 0, 1)

    def read(split: str, n: int, rho: float | None) -> tuple[torch.Tensor, torch.Tensor]:
        ds, picked = sets[split], []
        attr = ds.attr[:, [ds.attr_names.index(a) for a in CELEBA_TASK]]
        agree = n // 4 if rho is None else round(n // 2 * rho)  # per class; None: the four groups balanced
        for t, s, k in ((1, 1, agree), (0, 0, agree), (1, 0, n // 2 - agree), (0, 1, n // 2 - agree)):
            pool = np.flatnonzero(((attr[:, 0] == t) & (attr[:, 1] == s)).numpy())
            if len(pool) < k:
                raise ValueError(f"celeba: CelebA's {split} split holds {len(pool)} images with {CELEBA_TASK[0]}="
                                 f"{t}, {CELEBA_TASK[1]}={s}; {k} were asked for. Lower 'n_train', 'n_test' or 'rho'.")
            picked.append(rng.choice(pool, k, replace=False))
        idx = rng.permutation(np.concatenate(picked))
        files[f"{split}_files" if rho is None or split == "train" else "coloured_files"] = [ds.filename[i] for i in idx]
        ds.transform = square
        return torch.stack([ds[i][0] for i in idx]).float().div_(255.0), attr[idx]

    x_train, a_train = read("train", n_train, rho)
    x_col, a_col = read("test", n_test, rho)
    x, a = read("test", n_test, None)
    off = a[:, 0] != a[:, 1]
    test_sets = {"coloured": (x_col, a_col[:, 0]), "clean": (x, a[:, 0]), "shortcut": (x, a[:, 1]),
                 "conflict": (x[off], a[off, 0]), "cue": (x[off], a[off, 1])}
    for t, s in ((0, 0), (0, 1), (1, 0), (1, 1)):
        test_sets[f"group{t}{s}"] = (x[(a[:, 0] == t) & (a[:, 1] == s)], torch.full((n_test // 4,), t))
    return ShortcutData(x_train, a_train[:, 0].clone(), a_train[:, 1].clone(), test_sets, 2, torch.zeros(2, 3),
                        float(rho), "celeba", dict(files, size=size, seed=seed, base="celeba", task=CELEBA_TASK))
