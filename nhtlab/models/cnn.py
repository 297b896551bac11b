"""Image classifiers: a plain SimpleCNN, ImageCNN (Omnigrok's MNIST grokker as a CNN) and ResNet18 adapted to
small images.

Both follow nhtlab's model contract: ``features(x)`` is the penultimate representation (n, d), ``readout``
the final ``nn.Linear``, and ``forward(x, return_features=False)`` returns logits (or ``(logits, features)``).
Normalisation is a parameter because the NHT paper compares none (its SimpleCNN), BatchNorm after every
convolution, and GroupNorm (up to 8 groups, fewer when the channel count is not divisible).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import MAX_WIDTH, require_choice, require_int, require_real, require_type

__all__ = ["NORMS", "SimpleCNN", "ImageCNN", "ResNet18", "make_norm"]

NORMS = ("none", "batch", "group")


def _groups(channels: int, max_groups: int = 8) -> int:
    return max(g for g in range(1, min(max_groups, channels) + 1) if channels % g == 0)


def make_norm(norm: str, channels: int) -> nn.Module:
    """The normalisation layer named ``norm`` for ``channels`` feature maps."""
    require_choice(norm, "norm", NORMS, owner="make_norm")
    require_int(channels, "channels", low=1, owner="make_norm")
    if norm == "batch":
        return nn.BatchNorm2d(channels)
    if norm == "group":
        return nn.GroupNorm(_groups(channels), channels)
    return nn.Identity()


class SimpleCNN(nn.Module):
    """Six 3 × 3 convolutions, two 2 × 2 max-pools, global average pool, linear read-out.

    ReLU after every convolution (the optional normalisation before it). The default channels give the
    size of the NHT paper's 6-layer CNN (about 288k parameters, whatever the image size); smaller
    ``channels`` make CPU runs fast.

    Parameters
    ----------
    num_classes : int
    norm : {"none", "batch", "group"}
    channels : sequence of 6 ints
    in_channels : int
    """

    def __init__(self, num_classes: int = 10, norm: str = "none",
                 channels: Sequence[int] = (32, 32, 64, 64, 128, 128), in_channels: int = 3):
        super().__init__()
        owner = "SimpleCNN"
        require_int(num_classes, "num_classes", low=2, high=MAX_WIDTH, owner=owner)
        require_choice(norm, "norm", NORMS, owner=owner)
        require_type(channels, "channels", (tuple, list), owner=owner)
        if len(channels) != 6:
            raise ValueError(f"The 'channels' parameter of SimpleCNN must hold 6 ints (one per conv layer). Got {channels!r} instead.")
        for c in channels:
            require_int(c, "channels", low=1, high=MAX_WIDTH, owner=owner)
        require_int(in_channels, "in_channels", low=1, high=MAX_WIDTH, owner=owner)
        self.norm = norm
        self.num_classes = num_classes
        previous = in_channels
        for i, c in enumerate(channels, start=1):
            setattr(self, f"conv{i}", nn.Conv2d(previous, c, kernel_size=3, padding=1, bias=(norm == "none")))
            setattr(self, f"norm{i}", make_norm(norm, c))
            previous = c
        self.readout = nn.Linear(previous, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features: the global average of conv6's activations, (n, channels[5])."""
        h = x
        for i in range(1, 7):
            h = F.relu(getattr(self, f"norm{i}")(getattr(self, f"conv{i}")(h)))
            if i in (2, 4):
                h = F.max_pool2d(h, 2)
        return h.mean(dim=(2, 3))

    def forward(self, x: torch.Tensor, return_features: bool = False):
        h = self.features(x)
        logits = self.readout(h)  # (n, num_classes)
        return (logits, h) if return_features else logits


class ImageCNN(nn.Module):
    """Omnigrok's MNIST MLP with a convolution first: ``conv1`` (3 × 3, 8 channels) with ReLU and a 2 × 2
    max-pool, then a hidden layer ``hidden`` of ``width`` with ReLU, then ``readout``. Three weight layers and
    about the MLP's parameters and cost per image at ``width`` 200, so that it can memorise what the MLP does.

    Every parameter is PyTorch's default draw times ``init_scale``, as :class:`~nhtlab.models.mlp.ImageMLP`
    scales them, so ‖θ‖² at initialisation is ``init_scale²`` times the default one.
    """

    def __init__(self, size: int, classes: int = 10, width: int = 200, init_scale: float = 1.0,
                 in_channels: int = 1):
        super().__init__()
        require_int(size, "size", low=2, high=MAX_WIDTH, owner="ImageCNN")  # the pool leaves at least 1 × 1
        require_int(classes, "classes", low=2, high=MAX_WIDTH, owner="ImageCNN")
        require_int(width, "width", low=1, high=MAX_WIDTH, owner="ImageCNN")
        require_real(init_scale, "init_scale", 0.0, low_open=True, owner="ImageCNN")
        require_int(in_channels, "in_channels", low=1, high=MAX_WIDTH, owner="ImageCNN")
        self.conv1 = nn.Conv2d(in_channels, 8, kernel_size=3, padding=1)
        self.hidden = nn.Linear(8 * (size // 2) ** 2, width)
        self.readout = nn.Linear(width, classes)
        with torch.no_grad():
            for p in self.parameters():
                p.mul_(init_scale)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features: the hidden layer's activations, (n, width)."""
        h = F.max_pool2d(F.relu(self.conv1(x)), 2).flatten(1)
        return F.relu(self.hidden(h))

    def forward(self, x: torch.Tensor, return_features: bool = False):
        h = self.features(x)
        logits = self.readout(h)
        return (logits, h) if return_features else logits


class ResNet18(nn.Module):
    """torchvision's ResNet18 adapted to small images, with a choice of normalisation.

    The ImageNet stem would shrink a 32 × 32 image to 8 × 8 before the first block; as usual for CIFAR it is
    a 3 × 3 stride-1 convolution without max-pool. The read-out is torchvision's ``fc``, also ``readout``.

    Parameters
    ----------
    num_classes : int
    norm : {"batch", "none", "group"}
    """

    def __init__(self, num_classes: int = 10, norm: str = "batch"):
        super().__init__()
        # local: torchvision is the optional 'vision' extra
        from torchvision.models import resnet18

        require_int(num_classes, "num_classes", low=2, high=MAX_WIDTH, owner="ResNet18")
        require_choice(norm, "norm", NORMS, owner="ResNet18")
        self.norm = norm
        self.num_classes = num_classes
        net = resnet18(weights=None, num_classes=num_classes, norm_layer=lambda c: make_norm(norm, c))
        net.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=(norm == "none"))
        net.maxpool = nn.Identity()
        self.net = net

    @property
    def readout(self) -> nn.Linear:
        return self.net.fc

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features after global average pooling, (n, 512)."""
        n = self.net
        h = n.relu(n.bn1(n.conv1(x)))
        h = n.layer4(n.layer3(n.layer2(n.layer1(h))))
        return torch.flatten(n.avgpool(h), 1)

    def forward(self, x: torch.Tensor, return_features: bool = False):
        h = self.features(x)
        logits = self.net.fc(h)
        return (logits, h) if return_features else logits
