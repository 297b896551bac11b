"""MLPs: the embedding MLP for modular arithmetic (the fast CPU grokker), and an MLP on images (Omnigrok's
MNIST grokker).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import require_int, require_real, require_size

__all__ = ["EmbeddingMLP", "ImageMLP"]


class EmbeddingMLP(nn.Module):
    """MLP on learned embeddings of the two operands: the fast CPU grokker.

    ``h = ReLU(E_a[a] + E_b[b])`` (equivalently a linear layer on the concatenated
    one-hot codes), then ``depth - 1`` hidden ``Linear + ReLU`` layers, then the
    read-out. A small embedding init (``embed_std``) lets the weight norm *rise*
    during memorisation before weight decay contracts it, which is the story the
    book tells; PyTorch's default N(0, 1) would start the norm at its maximum.

    Parameters
    ----------
    p : int
        Number of input tokens and of classes.
    width : int
        Hidden width, also the feature dimension d.
    depth : int
        Number of hidden layers (1 = embeddings straight into the read-out).
    embed_std : float
        Standard deviation of the embedding initialisation.
    """

    token_embeddings = ("embed_a.weight", "embed_b.weight")  # one linear map of the two one-hot tokens

    def __init__(self, p: int, width: int = 256, depth: int = 1, embed_std: float = 0.1):
        super().__init__()
        for name, value in (("p", p), ("width", width), ("depth", depth)):
            require_int(value, name, low=2 if name == "p" else 1, owner="EmbeddingMLP")
        require_real(embed_std, "embed_std", 0.0, low_open=True, owner="EmbeddingMLP")
        require_size((depth - 1) * width * (width + 1) + 3 * p * width + p, "'p', 'width' and 'depth'", "EmbeddingMLP")
        self.p = p
        self.embed_a = nn.Embedding(p, width)
        self.embed_b = nn.Embedding(p, width)
        nn.init.normal_(self.embed_a.weight, std=embed_std)
        nn.init.normal_(self.embed_b.weight, std=embed_std)
        self.hidden = nn.ModuleList(nn.Linear(width, width) for _ in range(depth - 1))
        self.readout = nn.Linear(width, p)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.embed_a(x[:, 0]) + self.embed_b(x[:, 1]))  # (n, width)
        for layer in self.hidden:
            h = F.relu(layer(h))
        return h

    def forward(self, x: torch.Tensor, return_features: bool = False):
        h = self.features(x)
        logits = self.readout(h)  # (n, p)
        return (logits, h) if return_features else logits


class ImageMLP(nn.Module):
    """A ReLU MLP on flattened images: ``depth - 1`` hidden layers ``layers.<i>`` of ``width``, then ``readout``.

    Every parameter (weights and biases) is PyTorch's default draw times ``init_scale``, as Omnigrok scales
    them, so ‖θ‖² at initialisation is ``init_scale²`` times the default one.
    """

    def __init__(self, inputs: int, classes: int = 10, width: int = 200, depth: int = 3, init_scale: float = 1.0):
        super().__init__()
        for name, value in (("inputs", inputs), ("classes", classes), ("width", width), ("depth", depth)):
            require_int(value, name, low=2 if name in ("classes", "depth") else 1, owner="ImageMLP")
        require_real(init_scale, "init_scale", 0.0, low_open=True, owner="ImageMLP")
        require_size((inputs + 1) * width + (depth - 2) * (width + 1) * width + (width + 1) * classes,
                     "'inputs', 'width' and 'depth'", "ImageMLP")
        self.layers = nn.ModuleList(nn.Linear(inputs if i == 0 else width, width) for i in range(depth - 1))
        self.readout = nn.Linear(width, classes)
        with torch.no_grad():
            for p in self.parameters():
                p.mul_(init_scale)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(1)
        for layer in self.layers:
            h = F.relu(layer(h))
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.features(x))
