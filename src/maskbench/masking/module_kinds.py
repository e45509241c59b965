"""Module kinds: one table per model family, from kind names to regular expressions over module names. Without
torch, so that report steps and the workflow read kinds without loading a model."""

from __future__ import annotations

import re

# the six matrices of every transformer layer (paper A figure 2's module types), plus the head; the optional
# prefix covers `bert.`, `roberta.`, bare encoders and nn_pruning's optional `bert.`
_PREFIX = r"(?:.*\.)?"
BERT_KINDS: dict[str, str] = {
    "query": _PREFIX + r"layer\.\d+\.attention\.self\.query",
    "key": _PREFIX + r"layer\.\d+\.attention\.self\.key",
    "value": _PREFIX + r"layer\.\d+\.attention\.self\.value",
    "attention_output": _PREFIX + r"layer\.\d+\.attention\.output\.dense",
    "ffn_in": _PREFIX + r"layer\.\d+\.intermediate\.dense",
    "ffn_out": _PREFIX + r"layer\.\d+\.output\.dense",
    "pooler": _PREFIX + r"pooler\.dense",
    "classifier": r"classifier(?:\.dense|\.out_proj)?",
}
# a vision model's layers by type: every convolution, every fully connected layer (paper D's nets, ResNet-18)
VISION_KINDS: dict[str, str] = {
    "conv": r"(?:.*\.)?(?:conv\d*|features\.\d+|downsample\.0|layer\d+\.\d+\.conv\d+)",
    "linear": r"(?:.*\.)?(?:fc\d*|linear\d*|classifier)",
}
# one kind table per model family; a target that is not a kind of the family is read as a regular expression
FAMILIES: dict[str, dict[str, str]] = {"bert": BERT_KINDS, "vision": VISION_KINDS}
MODULE_KINDS = BERT_KINDS
ENCODER_KINDS = ("query", "key", "value", "attention_output", "ffn_in", "ffn_out")
ATTENTION_KINDS = ("query", "key", "value", "attention_output")
_LAYER = re.compile(r"layer\.(\d+)\.")


class SelectorError(ValueError):
    pass


def kinds_of(family: str) -> dict[str, str]:
    if family not in FAMILIES:
        raise SelectorError(f"model family {family!r} is unknown; choose one of {sorted(FAMILIES)}")
    return FAMILIES[family]


def pattern_of(target: str, family: str = "bert") -> str:
    """A module kind's pattern, or the target itself read as a regular expression."""
    return kinds_of(family).get(target, target)


def module_kind(name: str, family: str = "bert") -> str:
    """The kind of a module name in its family's table, or 'other'."""
    for kind, pattern in kinds_of(family).items():
        if re.fullmatch(pattern, name):
            return kind
    return "other"


def layer_index(name: str) -> int | None:
    match = _LAYER.search(name)
    return int(match.group(1)) if match else None
