"""How FFW (``maskbench.ffw``) reads a vision model and its image batches: the features are
``VisionModel.features`` (the bottleneck), the task classifier is ``fc``; gates on every conv and linear weight
(unstructured) or on every output channel / neuron but the task classifier's (structured, the unit's whole output
gated, bias included: ``gate_unit_output``)."""

from __future__ import annotations

from torch import nn

from maskbench.tracks.vision.data import loader

CLASSIFIER = "fc"  # the task classifier of every model of tracks/vision/models.py


def _exact(name: str) -> str:
    return name.replace(".", r"\.")


def gate_targets(model: nn.Module, structured: bool) -> list[str]:
    """The modules that carry gates: every conv and linear (unstructured), or all but the task classifier."""
    names = [name for name, m in model.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    if structured:
        names = [name for name in names if name != CLASSIFIER]
    return [_exact(name) for name in names]


class VisionFFW:
    family = "vision"

    def features(self, model, batch, device):
        return model.features(batch["image"].to(device, non_blocking=True))

    def logits(self, model, features):
        return model.fc(features)

    def labels(self, batch):
        return batch["label"]

    def bias(self, batch):
        return batch["bias"]

    def gate_plan(self, model, structured):
        return gate_targets(model, structured), "channel" if structured else "weight", structured

    def loader(self, data, batch_size):
        return loader(data, batch_size)


VISION = VisionFFW()
