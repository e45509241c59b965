"""What every track's config checks share: the error they raise and the dataset registry's checks.

The checks of the workflow config that a JSON schema cannot express (names that must refer to each other) live
with each track (`tracks/<track>/config_checks.py`); maskbench/workflow/workflow_config.py runs the shared ones and then
each named track's.
"""

from __future__ import annotations

from collections.abc import Mapping


class ConfigError(ValueError):
    pass


def check_datasets(config: Mapping) -> None:
    """The dataset registry (shared by every track): what each kind of source needs."""
    for name, spec in config["datasets"].items():
        if spec["source"].startswith("synthetic:"):
            for key in ("split", "n"):
                if key not in spec:
                    raise ConfigError(f"config: datasets.{name}.{key} is required for a synthetic source")
        elif "labels" not in spec:
            raise ConfigError(f"config: datasets.{name}.labels is required for source {spec['source']!r}")
        if spec["source"].startswith("hf:") and "split" not in spec:
            raise ConfigError(f"config: datasets.{name}.split is required for source {spec['source']!r}")
        if spec["source"].startswith("synthetic:") and ("part" in spec or "sample" in spec):
            raise ConfigError(f"config: datasets.{name}: part and sample cut hf and local sources; a synthetic "
                              "source sets its own n")
    check_parts({f"datasets.{name}": spec for name, spec in config["datasets"].items()})


def check_parts(datasets: Mapping) -> None:
    """Entries that cut parts of one source split it the same way (sizes and seed): otherwise their parts could
    overlap (a test example in another entry's training part)."""
    splits: dict[tuple, tuple[str, dict]] = {}
    for name, spec in datasets.items():
        part = spec.get("part")
        if part is None:
            continue
        source = (spec["source"], spec.get("config"), spec.get("split"))
        split = {"sizes": dict(part["sizes"]), "seed": part.get("seed", 0)}
        first, first_split = splits.setdefault(source, (name, split))
        if first_split != split:
            raise ConfigError(f"config: {name}.part cuts {spec['source']!r} with {split}, but {first}.part cuts it "
                              f"with {first_split}: the parts would overlap; give both the same sizes and seed")


# keys a config may no longer use -> the key that replaced them ("*" matches any one key, e.g. a task)
RENAMED_KEYS = {
    "mask_search.hparams.learning_rate": "mask_search.score_learning_rate",
    "srnets.mask_training.hparams.learning_rate": "srnets.mask_training.score_learning_rate",
    "srnets.mask_training.tasks.*.hparams.learning_rate": "srnets.mask_training.tasks.*.score_learning_rate",
    "gender.pruning.score_lr": "gender.pruning.score_learning_rate",
}


def _found(config, parts: list[str], prefix: list[str]):
    """Every concrete key path of `config` that matches `parts` (with "*" for any key)."""
    if not parts:
        yield prefix
        return
    if not isinstance(config, Mapping):
        return
    head, rest = parts[0], parts[1:]
    for key in (config if head == "*" else [head] if head in config else []):
        yield from _found(config[key], rest, [*prefix, str(key)])


def check_renamed_keys(config: Mapping) -> None:
    """Refuse a key that was renamed, naming the key that replaced it (before the schema's generic message)."""
    for old, new in RENAMED_KEYS.items():
        for path in _found(config, old.split("."), []):
            concrete = new.split(".")
            concrete = [path[i] if part == "*" else part for i, part in enumerate(concrete)]
            raise ConfigError(f"config: {'.'.join(path)} was renamed; write it as {'.'.join(concrete)} (one name "
                              "for the learning rate of mask scores in every track)")
