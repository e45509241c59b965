"""What each training objective reads besides the logits and the labels, in a module without torch.

The workflow plans a rule's inputs from this table at parse time (a loss that needs ``teacher`` gets the CE
baseline's training-set probabilities), so importing it must cost nothing; ``maskbench.losses`` uses the same
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
