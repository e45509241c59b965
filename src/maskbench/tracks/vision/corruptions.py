"""The ten image corruptions of the offline stand-in for paper D's Corrupted CIFAR-10
(``biased_mnist.corrupted_mnist``): simple numpy corruptions in the spirit of the CIFAR-10-C types LfF uses, at one
fixed, strong severity -- not the CIFAR-10-C code. ``corrupt`` applies one per image, deterministically for its
seed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

CORRUPTIONS = ("snow", "frost", "fog", "brightness", "contrast", "spatter", "elastic", "jpeg", "pixelate", "saturate")
CHUNK = 2048  # generators run on fixed-size chunks so their random draws do not depend on the set's size


def _gaussian_blur(planes: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur over the last two axes with reflected borders."""
    radius = max(1, int(3 * sigma))
    offsets = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2)
    kernel /= kernel.sum()
    out = planes.astype(np.float32)
    for axis in (-2, -1):
        pad = [(0, 0)] * out.ndim
        pad[axis] = (radius, radius)
        padded = np.pad(out, pad, mode="reflect")
        size = out.shape[axis]
        out = sum(w * np.take(padded, np.arange(i, i + size), axis=axis) for i, w in enumerate(kernel))
    return out.astype(np.float32)


def _bilinear(planes: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Sample N x H x W (x C) planes at per-sample float coordinates N x H' x W', clamped to the border."""
    n, height, width = planes.shape[:3]
    ys = np.clip(ys, 0, height - 1)
    xs = np.clip(xs, 0, width - 1)
    y0 = np.floor(ys).astype(np.int64)
    x0 = np.floor(xs).astype(np.int64)
    y1 = np.minimum(y0 + 1, height - 1)
    x1 = np.minimum(x0 + 1, width - 1)
    wy = (ys - y0).astype(np.float32)
    wx = (xs - x0).astype(np.float32)
    if planes.ndim == 4:
        wy, wx = wy[..., None], wx[..., None]
    batch = np.arange(n)[:, None, None]
    top = planes[batch, y0, x0] * (1 - wx) + planes[batch, y0, x1] * wx
    bottom = planes[batch, y1, x0] * (1 - wx) + planes[batch, y1, x1] * wx
    return (top * (1 - wy) + bottom * wy).astype(np.float32)


def _smooth_noise(rng: np.random.Generator, n: int, height: int, width: int, cells: int) -> np.ndarray:
    """Value noise: a cells x cells grid of uniform values, bilinearly upsampled to height x width."""
    coarse = rng.random((n, cells, cells), dtype=np.float32)
    ys = np.broadcast_to(np.linspace(0, cells - 1, height)[:, None], (n, height, width))
    xs = np.broadcast_to(np.linspace(0, cells - 1, width)[None, :], (n, height, width))
    return _bilinear(coarse, ys, xs)


def _snow(x, rng):
    """Flakes (sparse bright points smeared diagonally) over a greyed, slightly brightened image."""
    n, h, w, _ = x.shape
    flakes = (rng.random((n, h, w)) < 0.06).astype(np.float32) * rng.uniform(0.5, 1.0, (n, h, w)).astype(np.float32)
    smear = (flakes + 0.6 * np.roll(flakes, (1, 1), axis=(1, 2)) + 0.3 * np.roll(flakes, (2, 2), axis=(1, 2)))
    grey = x.mean(axis=-1, keepdims=True)
    base = 0.6 * x + 0.4 * np.maximum(x, grey * 1.5 + 0.3)
    return np.clip(base + smear[..., None], 0, 1)


def _frost(x, rng):
    """An icy, bluish texture (coarse plus fine value noise) blended over the image."""
    n, h, w, _ = x.shape
    texture = 0.6 * _smooth_noise(rng, n, h, w, 7) + 0.4 * rng.random((n, h, w), dtype=np.float32)
    ice = texture[..., None] * np.array([0.75, 0.85, 1.0], dtype=np.float32)
    return np.clip(0.8 * x + 0.5 * ice, 0, 1)


def _fog(x, rng):
    """Low-frequency haze added, then the range rescaled (CIFAR-10-C's x + c*plasma, * max / (max + c))."""
    n, h, w, _ = x.shape
    haze = 0.65 * _smooth_noise(rng, n, h, w, 4) + 0.35 * _smooth_noise(rng, n, h, w, 8)
    peak = x.max(axis=(1, 2, 3), keepdims=True)
    return np.clip((x + 0.8 * haze[..., None]) * peak / (peak + 0.8), 0, 1)


def _brightness(x, rng):
    """Value raised by a constant (for a grey image HSV value = every channel)."""
    return np.clip(x + 0.35, 0, 1)


def _contrast(x, rng):
    """Distance to the per-image mean shrunk to 30 %."""
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    return np.clip((x - mean) * 0.3 + mean, 0, 1)


def _spatter(x, rng):
    """Brown, mud-like blobs (thresholded smooth noise) painted over the image."""
    n, h, w, _ = x.shape
    liquid = _gaussian_blur(rng.random((n, h, w), dtype=np.float32), 1.5)
    mask = np.clip((liquid - 0.55) * 12.0, 0, 1)[..., None]
    mud = np.array([0.55, 0.38, 0.20], dtype=np.float32)
    return np.clip(x * (1 - 0.85 * mask) + 0.85 * mask * mud, 0, 1)


def _elastic(x, rng):
    """Pixels moved along a smooth random displacement field (up to 2.5 px), bilinear resampling."""
    n, h, w, _ = x.shape
    fields = _gaussian_blur(rng.uniform(-1, 1, (2 * n, h, w)).astype(np.float32), 3.0).reshape(n, 2, h, w)
    fields /= np.abs(fields).max(axis=(2, 3), keepdims=True) + 1e-8
    ys = np.arange(h, dtype=np.float32)[None, :, None] + 2.5 * fields[:, 0]
    xs = np.arange(w, dtype=np.float32)[None, None, :] + 2.5 * fields[:, 1]
    return np.clip(_bilinear(x, ys, xs), 0, 1)


def _dct_matrix(size: int = 8) -> np.ndarray:
    k = np.arange(size)[:, None]
    i = np.arange(size)[None, :]
    basis = np.sqrt(2.0 / size) * np.cos(np.pi * (2 * i + 1) * k / (2 * size))
    basis[0] /= np.sqrt(2.0)
    return basis.astype(np.float32)


def _jpeg(x, rng):
    """8 x 8 block DCT coefficients quantised with steps growing with frequency, as JPEG's tables do."""
    n, h, w, c = x.shape
    ph, pw = -h % 8, -w % 8
    padded = np.pad(x, ((0, 0), (0, ph), (0, pw), (0, 0)), mode="edge")
    bh, bw = padded.shape[1] // 8, padded.shape[2] // 8
    blocks = padded.reshape(n, bh, 8, bw, 8, c).transpose(0, 1, 3, 5, 2, 4)
    dct = _dct_matrix()
    coefficients = dct @ blocks @ dct.T
    frequency = np.arange(8)[:, None] + np.arange(8)[None, :]
    step = (0.06 * (1 + frequency)).astype(np.float32)
    coefficients = np.round(coefficients / step) * step
    restored = (dct.T @ coefficients @ dct).transpose(0, 1, 4, 2, 5, 3).reshape(n, bh * 8, bw * 8, c)
    return np.clip(restored[:, :h, :w], 0, 1)


def _pixelate(x, rng):
    """2 x 2 blocks replaced by their mean (a resize to half and back with nearest neighbours)."""
    n, h, w, c = x.shape
    blocks = x[:, : h - h % 2, : w - w % 2].reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))
    out = x.copy()
    out[:, : h - h % 2, : w - w % 2] = np.repeat(np.repeat(blocks, 2, axis=1), 2, axis=2)
    return out


def _saturate(x, rng):
    """Saturation raised to 0.45 at hue 0. The RGB-ised digit is grey (HSV saturation 0, hue 0), so CIFAR-10-C's
    s * a + b on it is just b: red = value, green = blue = value * (1 - b)."""
    value = x.max(axis=-1)
    out = np.stack([value, value * 0.55, value * 0.55], axis=-1)
    return out.astype(np.float32)


CORRUPTION_FUNCTIONS: dict[str, Callable[[np.ndarray, np.random.Generator], np.ndarray]] = {
    "snow": _snow, "frost": _frost, "fog": _fog, "brightness": _brightness, "contrast": _contrast,
    "spatter": _spatter, "elastic": _elastic, "jpeg": _jpeg, "pixelate": _pixelate, "saturate": _saturate,
}


def corrupt(digits: np.ndarray, corruption: np.ndarray, seed: int) -> np.ndarray:
    """Apply corruption ``corruption[i]`` to digit i (grey replicated to RGB, in [0, 1]); uint8 N x 3 x H x W.

    Corruptions run per type in type order, each on fixed-size chunks in source order with one generator, so the
    result depends only on the inputs and the seed."""
    rng = np.random.default_rng(seed)
    n, height, width = digits.shape
    images = np.empty((n, 3, height, width), dtype=np.uint8)
    for index, name in enumerate(CORRUPTIONS):
        rows = np.nonzero(corruption == index)[0]
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start:start + CHUNK]
            rgb = np.repeat(digits[chunk, :, :, None].astype(np.float32) / 255.0, 3, axis=-1)
            out = CORRUPTION_FUNCTIONS[name](rgb, rng)
            images[chunk] = np.rint(np.clip(out, 0, 1) * 255.0).astype(np.uint8).transpose(0, 3, 1, 2)
    return images
