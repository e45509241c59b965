"""The workflow config's cross-reference checks: the shared keys, then those of every track the config names.

rules/setup.smk calls `check_references` right after the schema validation (`maskbench.workflow.config_schema`), so a dangling name stops the
run before any job starts, with the key path in the message. Each track's checks live with the track, as
`check(config)` in `tracks/<track>/config_checks.py`; the tracks are the packages under `maskbench/tracks/`, found
here, so a new track registers nothing in this file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping

from maskbench import tracks
from maskbench.config_checks import ConfigError, check_datasets, check_renamed_keys

DEFAULT_TRACK = "nlu"
__all__ = ["PRECISION_SECTIONS", "TRACK_CHECKS", "ConfigError", "check_references", "check_renamed_keys", "precision_options",
           "tracks_of"]

# track -> its cross-reference checks (schemas/<track>.schema.yaml describes its keys)
TRACK_CHECKS: dict[str, Callable[[Mapping], None]] = {
    info.name: importlib.import_module(f"maskbench.tracks.{info.name}.config_checks").check
    for info in pkgutil.iter_modules(tracks.__path__) if info.ispkg}


def tracks_of(config: Mapping) -> list[str]:
    """The tracks a config names: `track:` is one name or a list of names (default: nlu)."""
    track = config.get("track", DEFAULT_TRACK)
    return [track] if isinstance(track, str) else list(track)


def check_references(config: Mapping) -> None:
    if "datasets" in config:
        check_datasets(config)
    for track in tracks_of(config):
        if track not in TRACK_CHECKS:
            raise ConfigError(f"config: track has {track!r}, which is not a track {sorted(TRACK_CHECKS)}")
        TRACK_CHECKS[track](config)


# the config sections whose jobs may set their own `precision` (papers C, B and D); every other job reads compute's
PRECISION_SECTIONS = ("srnets", "gender", "vision")


def precision_options(config: Mapping, section: str | None = None) -> dict:
    """A training or scoring job's ``--precision`` / ``--tf32`` values for ``shell_args``: ``section``'s own
    ``precision`` (srnets, gender, vision) or ``compute.precision``, and ``compute.tf32``. The steps' defaults (fp32,
    false) come out as None / False, which ``shell_args`` leaves out, so a config that does not set them (every CPU
    config) keeps its command lines as they were."""
    if section is not None and section not in PRECISION_SECTIONS:
        raise ValueError(f"precision_options: section {section!r} has no precision key; one of {PRECISION_SECTIONS}")
    compute = config.get("compute") or {}
    kind = ((config.get(section) or {}).get("precision") if section else None) or compute.get("precision", "fp32")
    return {"precision": None if kind == "fp32" else kind, "tf32": bool(compute.get("tf32", False))}
