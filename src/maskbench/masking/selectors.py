"""Where masks attach: named kinds of BERT Linear layers, or any regular expression over module names."""

from __future__ import annotations

import re

from torch import nn

# the six matrices of every transformer layer (paper A figure 2's module types), plus the head; the optional
# prefix covers `bert.`, `roberta.`, bare encoders and nn_pruning's optional `bert.`
_PREFIX = r"(?:.*\.)?"
MODULE_KINDS: dict[str, str] = {
    "query": _PREFIX + r"layer\.\d+\.attention\.self\.query",
    "key": _PREFIX + r"layer\.\d+\.attention\.self\.key",
    "value": _PREFIX + r"layer\.\d+\.attention\.self\.value",
    "attention_output": _PREFIX + r"layer\.\d+\.attention\.output\.dense",
    "ffn_in": _PREFIX + r"layer\.\d+\.intermediate\.dense",
    "ffn_out": _PREFIX + r"layer\.\d+\.output\.dense",
    "pooler": _PREFIX + r"pooler\.dense",
    "classifier": r"classifier(?:\.dense|\.out_proj)?",
}
ENCODER_KINDS = ("query", "key", "value", "attention_output", "ffn_in", "ffn_out")
ATTENTION_KINDS = ("query", "key", "value", "attention_output")
_LAYER = re.compile(r"layer\.(\d+)\.")


class SelectorError(ValueError):
    pass


def pattern_of(target: str) -> str:
    """A module kind's pattern, or the target itself read as a regular expression."""
    return MODULE_KINDS.get(target, target)


def select_linear(model: nn.Module, targets: list[str] | tuple[str, ...], where: str = "modules") -> dict[str, nn.Linear]:
    """The Linear modules whose full names match one of ``targets`` (kinds or regexes), in model order.

    A target that matches nothing is an error: a typo must not silently leave a layer unmasked.
    """
    linears = {name: m for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    chosen: dict[str, nn.Linear] = {}
    for target in targets:
        try:
            pattern = re.compile(pattern_of(target))
        except re.error as err:
            raise SelectorError(f"{where}: {target!r} is neither a module kind {sorted(MODULE_KINDS)} nor a "
                                f"valid regular expression ({err})") from err
        hits = [name for name in linears if pattern.fullmatch(name)]
        if not hits:
            example = ", ".join(list(linears)[:4])
            raise SelectorError(f"{where}: {target!r} matches no Linear module of the model (its Linear modules "
                                f"are named like {example}, ...)")
        for name in hits:
            chosen[name] = linears[name]
    return {name: chosen[name] for name in linears if name in chosen}


def module_kind(name: str) -> str:
    """The kind of a module name (one of MODULE_KINDS), or 'other'."""
    for kind, pattern in MODULE_KINDS.items():
        if re.fullmatch(pattern, name):
            return kind
    return "other"


def layer_index(name: str) -> int | None:
    match = _LAYER.search(name)
    return int(match.group(1)) if match else None
