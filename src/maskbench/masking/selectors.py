"""Where masks attach: module kinds from one table per model family, or any regular expression over module
names. A selectable module is any module with a weight: Linear, Conv1d/2d/3d or Embedding."""

from __future__ import annotations

import re

from torch import nn

from maskbench.masking.module_kinds import (  # noqa: F401 (re-exported)
    ATTENTION_KINDS,
    BERT_KINDS,
    ENCODER_KINDS,
    FAMILIES,
    MODULE_KINDS,
    VISION_KINDS,
    SelectorError,
    kinds_of,
    layer_index,
    module_kind,
    pattern_of,
)

MASKABLE = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Embedding)


def select_modules(model: nn.Module, targets: list[str] | tuple[str, ...], where: str = "modules",
                   family: str = "bert", types: tuple[type, ...] = MASKABLE) -> dict[str, nn.Module]:
    """The modules with a weight (``types``) whose full names match one of ``targets`` (kinds of ``family`` or
    regexes), in model order.

    A target that matches nothing is an error: a typo must not silently leave a layer unmasked.
    """
    candidates = {name: m for name, m in model.named_modules() if isinstance(m, types)}
    kinds = kinds_of(family)
    chosen: dict[str, nn.Module] = {}
    for target in targets:
        try:
            pattern = re.compile(pattern_of(target, family))
        except re.error as err:
            raise SelectorError(f"{where}: {target!r} is neither a module kind {sorted(kinds)} nor a "
                                f"valid regular expression ({err})") from err
        hits = [name for name in candidates if pattern.fullmatch(name)]
        if not hits:
            example = ", ".join(list(candidates)[:4])
            what = "/".join(t.__name__ for t in types)
            raise SelectorError(f"{where}: {target!r} matches no {what} module of the model (its {what} modules "
                                f"are named like {example}, ...)")
        for name in hits:
            chosen[name] = candidates[name]
    return {name: chosen[name] for name in candidates if name in chosen}


def select_linear(model: nn.Module, targets: list[str] | tuple[str, ...], where: str = "modules") -> dict[str, nn.Linear]:
    """``select_modules`` restricted to Linear layers of a BERT-family model."""
    return select_modules(model, targets, where, "bert", (nn.Linear,))


