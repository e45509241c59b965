"""One reading of a config's mask-search section (``mask_search``, paper C's ``srnets.mask_training``): the search's
spec and the scores' optimiser. The workflow's plan, paper C's grid and the console and API (through
``mask_search_run.search_settings``) all split a section here, so a key means the same to each of them."""

from __future__ import annotations

from collections.abc import Mapping

# the section's keys that are not the spec's: the scores' optimiser and its learning rate
OPTIMISER_KEYS = ("hparams", "score_learning_rate")


def split_search_section(section: Mapping) -> tuple[dict, dict]:
    """(spec, optimiser): the spec is the section without ``hparams`` and ``score_learning_rate``; the optimiser is
    ``hparams`` with its ``learning_rate`` set to ``score_learning_rate`` where the section gives one."""
    spec = {k: v for k, v in section.items() if k not in OPTIMISER_KEYS}
    optimiser = dict(section.get("hparams") or {})
    if "score_learning_rate" in section:
        optimiser["learning_rate"] = section["score_learning_rate"]
    return spec, optimiser
