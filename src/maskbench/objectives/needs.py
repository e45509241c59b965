"""What each training objective reads besides the logits and the labels, in a module without torch.

The workflow plans a rule's inputs from this table at parse time (a loss that needs ``teacher`` gets the CE
baseline's training-set probabilities), so importing it must cost nothing; ``maskbench.objectives.losses`` uses the same
table to check the keywords a loss is given.
"""

from __future__ import annotations

# Which extra inputs each loss needs: "bias" -> bias_probs, "teacher" -> teacher_probs, "gate" -> gate.
# "focal" is listed with "bias" (the debiased focal loss); called without bias_probs it is C's self-weighted one.
NEEDS: dict[str, set[str]] = {
    "ce": set(),
    "poe": {"bias"},
    "reweight": {"bias"},
    "reweight_beta": {"bias"},
    "focal": {"bias"},
    "conf_reg": {"bias", "teacher"},
    "learned_mixin": {"bias", "gate"},
}


def needing(what: str) -> frozenset[str]:
    """The losses that read ``what`` (``bias``, ``teacher`` or ``gate``)."""
    return frozenset(name for name, needs in NEEDS.items() if what in needs)


# The hyper-parameters each loss accepts and their defaults (``maskbench.objectives.losses.hyperparameters`` reads them from
# the functions; a test checks the two agree): the trade-off sweeps name them as strength knobs at planning time.
HYPERPARAMETERS: dict[str, dict[str, float]] = {
    "ce": {},
    "poe": {"bias_weight": 1.0},
    "reweight": {"strength": 1.0},
    "reweight_beta": {"beta": 1.0},
    "focal": {"gamma": 1.0},
    "conf_reg": {},
    "learned_mixin": {"entropy_weight": 0.0},
}
