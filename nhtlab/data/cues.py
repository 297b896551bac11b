"""Spurious cues added to any image dataset: class-coloured borders and tints.

The NHT paper's vision experiment (arXiv 2603.07323) gives every CIFAR-10 class its own
border colour, correct with probability ρ in training, so a network can fit most of the
training set by reading the border (the *shortcut*) or by learning the objects (the
*structure*). The paper leaves the details open; nhtlab's choices, all parameters:
colours from Tableau-10 (none is black or white, the digits' own colours); the outer
``width`` pixels painted over, or the image padded first; with probability 1 − ρ another
class's colour (``"other"``, so the shortcut alone caps training accuracy at ρ), none, or
any class's.

Test sets, from the base test images: ``coloured`` (the training distribution);
``clean``, no class information in the border: ``clean="none"`` (the paper's definition)
removes it, but a network that never saw a border-less image then meets an unseen border
colour (black for the digits), so nhtlab's default ``"mean"`` paints the mean class colour
instead; ``shortcut``, class y's border on a constant grey image, labelled y (reading the
border alone); ``conflict``, another class's border, labelled by the image (the worst
group); ``cue``, the same images labelled by their border: the share of images on which
the network follows the border against the image, nhtlab's shortcut reliance φ.

The *entangled* variants (:func:`tint_shortcut`) blend the class colour into every pixel
(no crop, filter or pooling level sees the image without it) or into the pixels behind
the digit (Waterbirds-like). There the delay law is expected to fail.
"""

from __future__ import annotations

import torch

from ..validation import require_bool, require_choice, require_int, require_real, require_seed, require_type
from .images import ImageData, ShortcutData

__all__ = ["CLASS_COLOURS", "REGIONS", "ShortcutData", "border_shortcut", "tint_shortcut", "paint_border", "draw_cue_classes", "harder"]

# Tableau-10, as RGB in [0, 1]; class k gets colour k (cycled for more classes).
CLASS_COLOURS = (
    (0.306, 0.475, 0.655), (0.949, 0.557, 0.169), (0.882, 0.341, 0.349), (0.463, 0.718, 0.698),
    (0.349, 0.631, 0.310), (0.929, 0.788, 0.282), (0.690, 0.478, 0.631), (1.000, 0.616, 0.655),
    (0.612, 0.459, 0.373), (0.729, 0.690, 0.675),
)
OTHERWISE = ("other", "none", "random")
CLEAN = ("mean", "none")
REGIONS = ("all", "background")


def _colours(num_classes: int, colours, contrast: float = 1.0) -> torch.Tensor:
    if colours is None:
        colours = [CLASS_COLOURS[k % len(CLASS_COLOURS)] for k in range(num_classes)]
    try:
        colours = torch.as_tensor(colours, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"The 'colours' parameter must be RGB triples, one per class ({error}).") from error
    if colours.shape != (num_classes, 3):
        raise ValueError(f"The 'colours' parameter must have shape ({num_classes}, 3), one RGB triple per class. "
                         f"Got shape {tuple(colours.shape)} instead.")
    if not bool(torch.isfinite(colours).all()) or colours.min() < 0 or colours.max() > 1:  # NaN: a class with no border
        raise ValueError("The 'colours' parameter must hold RGB values in [0, 1] (no NaN).")
    grey = colours.mean(0, keepdim=True)
    return grey + contrast * (colours - grey)


def draw_cue_classes(y: torch.Tensor, rho: float, num_classes: int, otherwise: str,
                     generator: torch.Generator) -> torch.Tensor:
    """The class whose colour each image carries: its own with probability ρ, else per ``otherwise`` (−1: none)."""
    n = len(y)
    own = torch.rand(n, generator=generator) < rho
    if otherwise == "other":
        shift = torch.randint(1, num_classes, (n,), generator=generator)
        alt = (y + shift) % num_classes
    elif otherwise == "random":
        alt = torch.randint(0, num_classes, (n,), generator=generator)
    else:
        alt = torch.full((n,), -1, dtype=torch.long)
    return torch.where(own, y, alt)


def paint_border(x: torch.Tensor, rgb: torch.Tensor, width: int) -> torch.Tensor:
    """Copy of ``x`` (n, 3, H, W) with its outer ``width`` pixels set to ``rgb`` (n, 3); NaN rows leave the border."""
    out = x.clone()
    mask = torch.zeros(x.shape[-2:], dtype=torch.bool)
    mask[:width, :] = mask[-width:, :] = True
    mask[:, :width] = mask[:, -width:] = True
    keep = ~torch.isnan(rgb[:, 0])
    fill = rgb[keep][:, :, None, None].expand(-1, -1, *x.shape[-2:])
    sub = out[keep]
    sub[:, :, mask] = fill[:, :, mask]
    out[keep] = sub
    return out


def _cue_rgb(cue: torch.Tensor, colours: torch.Tensor) -> torch.Tensor:
    rgb = torch.full((len(cue), 3), float("nan"))
    has = cue >= 0
    rgb[has] = colours[cue[has]]
    return rgb


def _check_common(base, rho, otherwise, clean, contrast, seed, owner):
    require_type(base, "base", ImageData, owner=owner)
    require_real(rho, "rho", 0.0, 1.0, owner=owner)
    require_seed(seed, owner)
    if base.x_train.ndim != 4 or base.x_train.shape[1] != 3:
        raise ValueError(f"The 'base' parameter of {owner} must hold RGB images (n, 3, H, W). "
                         f"Got x_train of shape {tuple(base.x_train.shape)} instead.")
    for name in ("x_train", "x_test"):  # a border's colours are in [0, 1]: images in [0, 255] would hide it
        x = getattr(base, name)
        if x.numel() and (not bool(torch.isfinite(x).all()) or float(x.min()) < 0 or float(x.max()) > 1):
            raise ValueError(f"The 'base' parameter of {owner} must hold images with pixels in [0, 1] (no NaN). "
                             f"Its {name} ranges over [{float(x.min()):g}, {float(x.max()):g}]; divide by 255.")
    require_choice(otherwise, "otherwise", OTHERWISE, owner=owner)
    require_choice(clean, "clean", CLEAN, owner=owner)
    require_real(contrast, "contrast", 0.0, 1.0, low_open=True, owner=owner)


def border_shortcut(base: ImageData, rho: float = 0.95, width: int = 2, otherwise: str = "other",
                    clean: str = "mean", pad: bool = False, colours=None, contrast: float = 1.0,
                    seed: int = 0) -> ShortcutData:
    """Add a class-coloured border to ``base`` (the NHT paper's coloured-border data).

    Parameters
    ----------
    base : ImageData
        Any RGB image dataset in [0, 1].
    rho : float in [0, 1]
        Probability that a training (and ``coloured`` test) image carries its own class's colour.
    width : int >= 1
    otherwise : {"other", "none", "random"}
        What a training image carries with probability 1 − ρ (module docstring).
    clean : {"mean", "none"}
        The ``clean`` test set's border: the mean class colour, or none (the paper's wording).
    pad : bool
        Pad images by ``width`` (they grow to H + 2·width) instead of painting over the edge.
    colours : array (num_classes, 3), optional
        RGB in [0, 1]; default ``CLASS_COLOURS``.
    contrast : float in (0, 1]
        c ← ḡ + contrast·(c − ḡ): a faint cue takes *large weights* to read (the shortcut's norm cost).
    seed : int

    Returns
    -------
    ShortcutData
    """
    owner = "border_shortcut"
    _check_common(base, rho, otherwise, clean, contrast, seed, owner)
    require_int(width, "width", low=1, owner=owner)
    require_bool(pad, "pad", owner=owner)
    h, w = base.x_train.shape[-2:]
    if not pad and 2 * width >= min(h, w):
        raise ValueError(f"The 'width' parameter of border_shortcut must leave some image inside the border: "
                         f"2·width < {min(h, w)}. Got {width} instead.")

    def prepare(x):
        return torch.nn.functional.pad(x, (width,) * 4) if pad else x

    def paint(x, rgb):
        return paint_border(prepare(x), rgb, width)

    return _assemble(base, rho, otherwise, clean, _colours(base.num_classes, colours, contrast), seed, paint, prepare,
                     "border", dict(width=width, otherwise=otherwise, clean=clean, pad=pad, contrast=contrast, seed=seed))


def tint_shortcut(base: ImageData, rho: float = 0.95, strength: float = 0.3, otherwise: str = "other",
                  clean: str = "mean", colours=None, contrast: float = 1.0, seed: int = 0,
                  region: str = "all", dark: float = 0.5) -> ShortcutData:
    """The entangled variants: blend pixels with the cue colour, ``x ← (1 − α) x + α c`` (α = ``strength``).

    Otherwise as :func:`border_shortcut`. ``region="background"`` tints only pixels whose
    channel mean is below ``dark`` (the digits are bright on black), so the cue fills the
    object's bounding area.
    """
    owner = "tint_shortcut"
    _check_common(base, rho, otherwise, clean, contrast, seed, owner)
    require_real(strength, "strength", 0.0, 1.0, low_open=True, owner=owner)
    require_choice(region, "region", REGIONS, owner=owner)
    require_real(dark, "dark", 0.0, 1.0, low_open=True, owner=owner)

    def paint(x, rgb):
        has = ~torch.isnan(rgb[:, 0])
        out = x.clone()
        blend = (1 - strength) * x[has] + strength * rgb[has][:, :, None, None]
        behind = (x[has].mean(1, keepdim=True) < dark) if region == "background" else torch.ones(1, dtype=torch.bool)
        out[has] = torch.where(behind, blend, x[has])
        return out

    kind = "background" if region == "background" else "tint"
    return _assemble(base, rho, otherwise, clean, _colours(base.num_classes, colours, contrast), seed, paint,
                     lambda x: x, kind, dict(strength=strength, otherwise=otherwise, clean=clean, contrast=contrast, seed=seed,
                          region=region, dark=dark))


def _assemble(base, rho, otherwise, clean, palette, seed, paint, prepare, kind, settings) -> ShortcutData:
    """Draw the cues (seeded by ``seed``) and build the training images and the four test sets."""
    k, gen = base.num_classes, torch.Generator().manual_seed(seed)
    cue_train = draw_cue_classes(base.y_train, rho, k, otherwise, gen)
    x_train = paint(base.x_train, _cue_rgb(cue_train, palette))
    y_test = base.y_test
    coloured = paint(base.x_test, _cue_rgb(draw_cue_classes(y_test, rho, k, otherwise, gen), palette))
    if clean == "none":
        clean_x = prepare(base.x_test).clone()
    else:
        clean_x = paint(base.x_test, palette.mean(0, keepdim=True).expand(len(y_test), 3))
    conflict_cue = (y_test + torch.randint(1, k, (len(y_test),), generator=gen)) % k
    conflict = paint(base.x_test, _cue_rgb(conflict_cue, palette))
    y_sc = torch.randint(0, k, (len(y_test),), generator=gen)
    grey = torch.full((len(y_test), *base.x_test.shape[1:]), float(base.x_train.mean()))
    shortcut = paint(grey, _cue_rgb(y_sc, palette))
    test_sets = {"coloured": (coloured, y_test.clone()), "clean": (clean_x, y_test.clone()),
                 "shortcut": (shortcut, y_sc), "conflict": (conflict, y_test.clone()), "cue": (conflict, conflict_cue)}
    return ShortcutData(x_train, base.y_train.clone(), cue_train, test_sets, k, palette, float(rho), kind,
                        {**settings, "base": base.name})


def harder(base: ImageData, train_size: int | None = None, noise: float = 0.0, seed: int = 0) -> ImageData:
    """A harder ``base``: the first ``train_size`` training images and/or N(0, noise²) pixel noise, clipped to [0, 1].

    Test sets are never shrunk; the noise (one seeded draw) goes on train and test images.
    Returns ``base`` itself when nothing changes.
    """
    owner = "harder"
    require_type(base, "base", ImageData, owner=owner)
    if train_size is not None:
        require_int(train_size, "train_size", low=1, high=len(base.y_train), owner=owner)
    require_real(noise, "noise", 0.0, owner=owner)
    if train_size is None and noise == 0:
        return base
    n = len(base.y_train) if train_size is None else train_size
    x_train, y_train, x_test = base.x_train[:n], base.y_train[:n], base.x_test
    if noise > 0:
        gen = torch.Generator().manual_seed(seed + 7919)
        x_train = (x_train + noise * torch.randn(x_train.shape, generator=gen)).clamp(0.0, 1.0)
        x_test = (x_test + noise * torch.randn(x_test.shape, generator=gen)).clamp(0.0, 1.0)
    return ImageData(x_train.contiguous(), y_train.clone(), x_test.contiguous(), base.y_test.clone(), base.num_classes,
                     name=f"{base.name}-n{n}-noise{noise:g}", class_names=base.class_names)


