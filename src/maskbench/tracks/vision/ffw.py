"""FFW, paper D's "debiasing surgeon": gates on a frozen vision model, trained so that the task stays solved while
a bias-extraction head can no longer read the bias from the bottleneck; weights whose gate ends below 0 are
removed. No weight of the model changes.

On the engine: the ``temperature_gate`` decider with paper D's forward min(2 sigmoid(m / T), 1) and gates
initialised at 0 (the gated model's outputs equal the vanilla model's bit for bit), at ``weight`` granularity
(unstructured: every conv and linear weight, the classifier included, as paper D's ``gating_weights.py``) or
``channel`` granularity (structured: one gate per output channel / neuron of every layer but the task classifier,
whose output neurons are the classes). A structured gate multiplies the unit's whole output, bias included, as paper
D's eq. (9) and its code's ``StructuredGate`` (``input * TwoSigmoid(m / T)`` on a layer's output): the engine's
``gate_unit_output`` gates the bias with the weight row's gate, so a conv / linear unit computes g (W x + b), the
gate sitting after the layer and before its BatchNorm. (The code defines ``StructuredGate`` but never attaches it;
after the conv / linear is our reading of eq. (9), "the neuron's output".) A pruned unit thus outputs 0, and what
follows turns that into f(0) (BatchNorm's shift through the ReLU), which ``shrink.py`` folds downstream. BatchNorm statistics stay frozen (``freeze_norm_stats``). The loop, the
heads, the MI and the schedule are shared with the other tracks (``maskbench.ffw.core``); this module is their
vision face (``ffw_adapter.VisionFFW``: features = ``model.features``, classifier = ``fc``). One ``fit`` run
trains the gates with Adam (paper D: lr 1e-3, weight decay 1e-4) on

    loss = alpha * CE(task) + gamma * mean_b MI_b,

MI_b the normalised empirical mutual information between bias attribute b and its head's softmax
(``mutual_information.empirical_mi``), the head fixed during the gate step (its gradient reaches the model, the
head itself does not move). ``FFWSchedule``, a hook of the loop, does what paper D's outer loop does between gate
epochs: re-trains the heads on the current features (detached), lowers T by ``temperature_factor`` after more than
``gate_patience`` epochs without a relative ``mi_rel_tol`` improvement of the validation MI, snapshots the pruned
gates at every drop (a fresh head's bias accuracy on the unbiased validation split decides the best snapshot), and
stops when T falls below ``min_temperature`` or after ``max_gate_epochs``.

How the heads follow the gated model is selectable (``head_update``, ``validation_mi``; paper D's code: online
heads, refined after each epoch before the validation MI is measured; ours by default: a fresh head per epoch,
the validation MI measured with it after the epoch).

Departures from paper D's code (docs/departures.md): the validation MI and bias accuracy are
computed against the *bias* labels (paper D's ``run_model`` pairs the head with the task label); the snapshot at
the end of the run is a candidate too (with a short epoch budget no temperature drop may happen); the validation MI
is estimated over the whole split rather than averaged over batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from maskbench.ffw import core
from maskbench.ffw.core import HEAD_UPDATES, VALIDATION_MI, HardGates  # noqa: F401 (re-exported)
from maskbench.ffw.heads import HeadSettings
from maskbench.masking.engine import MaskedModules
from maskbench.tracks.vision.evaluation import bias_accuracy
from maskbench.tracks.vision.ffw_adapter import CLASSIFIER, VISION, gate_targets  # noqa: F401 (re-exported)


@dataclass
class FFWSettings(core.FFWSettings):
    CONFIG_KEY: ClassVar[str] = "vision.ffw"


def attach_gates(model: nn.Module, settings: FFWSettings) -> MaskedModules:
    return core.attach_gates(VISION, model, settings)


def fit_heads(model, data, bias_classes: list[int], settings: HeadSettings, seed: int) -> list[nn.Linear]:
    return core.fit_heads(VISION, model, data, bias_classes, settings, seed)


class OnlineHeads(core.OnlineHeads):
    """Paper D's code's privacy heads (``head_update: online``) on a vision model."""

    def __init__(self, heads: list[nn.Linear], settings: HeadSettings):
        super().__init__(heads, settings, VISION)


def validation_mi(model, heads: list[nn.Linear], data, bias_classes: list[int]) -> float:
    """Mean over bias attributes of the normalised MI between the bias labels and each head's softmax."""
    return core.validation_mi(VISION, model, heads, data, bias_classes)


def mean_bias_accuracy(model, train_data, eval_data, bias_classes: list[int], settings: HeadSettings,
                       seed: int) -> float:
    """Paper D's bias ("private") accuracy, the mean over bias attributes (``evaluation.bias_accuracy``)."""
    per_attribute = bias_accuracy(model, train_data, eval_data, bias_classes, settings, seed)
    return sum(per_attribute.values()) / len(per_attribute)


class FFWSchedule(core.FFWSchedule):
    """``core.FFWSchedule`` on a vision model, its three measurements read through this module's functions."""

    def __init__(self, masked, heads, steps_per_epoch, settings, train_data, val_data, bias_classes, seed,
                 online=None):
        super().__init__(masked, heads, steps_per_epoch, settings, train_data, val_data, bias_classes, seed, online,
                         adapter=VISION)

    def fit_heads(self, model, seed):
        return fit_heads(model, self.train_data, self.bias_classes, self.settings.head, seed)

    def validation_mi(self, model):
        return validation_mi(model, self.heads, self.val_data, self.bias_classes)

    def bias_accuracy(self, model, seed):
        return mean_bias_accuracy(model, self.train_data, self.val_data, self.bias_classes, self.settings.head, seed)


def gate_objective(heads: list[nn.Linear], bias_classes: list[int], settings: FFWSettings,
                   online: OnlineHeads | None = None):
    """alpha * CE(task) + gamma * mean_b MI_b(bias_b, softmax(head_b(features))) on one batch (``core``)."""
    return core.gate_objective(VISION, heads, bias_classes, settings, online)


def run_ffw(model: nn.Module, train_data, val_data, bias_classes: list[int], settings: FFWSettings, seed: int,
            device, resume=None) -> tuple[dict, dict]:
    """Train FFW gates on ``train_data`` (the unbiased split with bias labels), select on ``val_data``; return
    the final keep masks by module name (numpy bool, weight-shaped) and a summary (history, snapshots, the chosen
    one, settings). The model is left unmasked and unchanged. ``resume``: ``core.run_ffw``'s."""
    return core.run_ffw(VISION, model, train_data, val_data, bias_classes, settings, seed, device, resume=resume)

