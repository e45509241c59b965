"""The colour-only bias model of the cross-paper matrix's vision cells: a classifier that sees nothing of an image
but the colour its generator painted, trained on the biased training split; its per-example class probabilities
feed paper A's / C's debiasing losses (product of experts, reweighting) on Biased-MNIST and Multi-Color MNIST.

What it sees (``colour_features``): per image, the most frequent RGB value of its left and of its right half (6
numbers). Both generators paint the background of each half with one colour: Biased-MNIST every pixel outside the
stroke with the one background colour (``biased_mnist.colour_background``), Multi-Color MNIST the left half's
background with the left colour and the right half's with the right one (a pixel of raw value 0 becomes exactly that
colour). The stroke is white (or, for Multi-Color MNIST's anti-aliased edges, tinted values that each cover a few
pixels), and a digit covers about a fifth of the image, so in every half the painted colour is by far the most
frequent value: the features are the painted colours, whatever the digit and wherever its stroke lies, and the
model cannot read the digit. A test checks both (the features of Biased-MNIST images equal their colour map entry;
other digits under the same colours give the same features). On the unbiased test split, where colour and digit
are independent, the model's accuracy is near chance (the colour-bias step records it, a test checks it).

The classifier is a small MLP (6 -> hidden -> classes) on the features scaled to [0, 1], full-batch Adam: on these
few distinct colour points it approaches the empirical class frequencies per colour, the Bayes-optimal colour-only
predictor of the training split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

FEATURES = ("left_r", "left_g", "left_b", "right_r", "right_g", "right_b")


@dataclass
class ColourModelSettings:
    hidden: int = 64
    steps: int = 300  # full-batch Adam steps
    learning_rate: float = 0.01
    seed: int = 0

    def __post_init__(self):
        if self.hidden < 1 or self.steps < 1 or self.learning_rate <= 0:
            raise ValueError(f"colour bias model: hidden, steps and learning_rate must be positive, got {self}")


def colour_features(images: np.ndarray) -> np.ndarray:
    """N x 6 float32: per half (left, right) the most frequent RGB value, each channel in [0, 255] (ties: the
    smallest packed value, deterministic)."""
    images = np.asarray(images)  # a prepared file's images are read from disk here (MNIST: small)
    if images.ndim != 4 or images.shape[1] != 3 or images.dtype != np.uint8:
        raise ValueError(f"colour features need uint8 RGB images N x 3 x H x W, got {images.dtype} {images.shape}")
    width = images.shape[3]
    out = np.empty((images.shape[0], 6), dtype=np.float32)
    for h, half in enumerate((images[:, :, :, : width // 2], images[:, :, :, width // 2:])):
        flat = half.reshape(half.shape[0], 3, -1).astype(np.int64)
        packed = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
        for i, row in enumerate(packed):
            values, counts = np.unique(row, return_counts=True)
            mode = int(values[counts.argmax()])
            out[i, 3 * h: 3 * h + 3] = ((mode >> 16) & 255, (mode >> 8) & 255, mode & 255)
    return out


class ColourModel(nn.Module):
    """The bias model: an MLP on the six colour features (scaled by 1/255)."""

    def __init__(self, num_classes: int, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(len(FEATURES), hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features / 255.0)


def fit_colour_model(features: np.ndarray, labels: np.ndarray, num_classes: int,
                     settings: ColourModelSettings) -> ColourModel:
    """Full-batch Adam on the cross-entropy of the labels given the colour features (CPU, seeded)."""
    generator = torch.Generator().manual_seed(settings.seed)
    model = ColourModel(num_classes, settings.hidden)
    with torch.no_grad():
        for param in model.parameters():  # seeded init, independent of torch's global state
            param.copy_(torch.randn(param.shape, generator=generator) * (1.0 / max(1, param.shape[-1])) ** 0.5)
    x = torch.as_tensor(features, dtype=torch.float32)
    y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.learning_rate)
    for _ in range(settings.steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return model.eval()


@torch.no_grad()
def colour_probs(model: ColourModel, features: np.ndarray) -> np.ndarray:
    """N x C class probabilities (float32)."""
    return torch.softmax(model(torch.as_tensor(features, dtype=torch.float32)), dim=1).numpy().astype(np.float32)


def accuracy(probs: np.ndarray, labels: np.ndarray) -> float:
    """Accuracy (%) of the probabilities' argmax."""
    return 100.0 * float((probs.argmax(axis=1) == np.asarray(labels)).mean())
