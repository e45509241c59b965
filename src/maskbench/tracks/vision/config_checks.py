"""The vision track's config checks (paper D): names that must refer to each other, which a JSON schema
(schemas/vision.schema.yaml) cannot express."""

from __future__ import annotations

from collections.abc import Mapping

from maskbench.config_checks import ConfigError


def check(config: Mapping) -> None:
    """The vision track (paper D): models, levels and the ablations' references."""
    if "vision" not in config:
        raise ConfigError("config: vision is required when track names vision (schemas/vision.schema.yaml)")
    vision = config["vision"]
    datasets, models = vision["datasets"], vision["models"]
    for name, spec in datasets.items():
        where = f"config: vision.datasets.{name}"
        if spec["model"] not in models:
            raise ConfigError(f"{where}.model has value {spec['model']!r}, which is not a model {sorted(models)}")
        needs = {"biased_mnist": ("rho",), "corrupted_mnist_standin": ("rho",), "cifar10c": ("percent",),
                 "multi_color_mnist": ("rho_left", "rho_right"), "two_attribute_mnist_standin": ("rho", "target"),
                 "celeba": ("target",)}[spec["generator"]]
        for level, values in spec["levels"].items():
            missing = [key for key in needs if key not in values]
            if missing:
                raise ConfigError(f"{where}.levels.{level}.{missing[0]} is required by generator "
                                  f"{spec['generator']!r}")
        if spec["generator"] in ("cifar10c", "celeba") and "source" not in spec:
            raise ConfigError(f"{where}.source is required by generator {spec['generator']!r} (local:<folder> or "
                              "hf:<hub id>)")
    for name, model in models.items():
        train = model["train"]
        if (train.get("lr_schedule") == "plateau") != ("plateau" in train):
            raise ConfigError(f"config: vision.models.{name}.train.plateau goes with lr_schedule plateau and only "
                              f"with it (lr_schedule is {train.get('lr_schedule')!r}, plateau is "
                              f"{'set' if 'plateau' in train else 'missing'})")
    for key in ("gamma_sweep", "epochs_ablation", "magnitude"):
        part = vision.get(key)
        if not part:
            continue
        if part["dataset"] not in datasets:
            raise ConfigError(f"config: vision.{key}.dataset has value {part['dataset']!r}, which is not a dataset "
                              f"{sorted(datasets)}")
        levels = datasets[part["dataset"]]["levels"]
        if str(part["level"]) not in levels:
            raise ConfigError(f"config: vision.{key}.level has value {part['level']!r}, which is not a level of "
                              f"{part['dataset']} {sorted(levels)}")
    ablation = vision.get("epochs_ablation")
    if ablation:
        model = models[datasets[ablation["dataset"]]["model"]]
        missing = [e for e in ablation["epochs"] if e not in model.get("snapshot_epochs", [])]
        if missing:
            raise ConfigError(f"config: vision.epochs_ablation.epochs has {missing[0]}, which is not among the "
                              f"snapshot_epochs of model {datasets[ablation['dataset']]['model']!r}")
