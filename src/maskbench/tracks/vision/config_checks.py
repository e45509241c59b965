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
    check_masks(vision)


MNIST_TRAIN = 60_000
COLOUR_GENERATORS = ("biased_mnist", "multi_color_mnist")


def check_masks(vision: Mapping) -> None:
    """vision.masks: benchmarks on colour-biased MNIST levels of the config, room for the biased dev split, IMP's
    sparsities multiples of its step."""
    masks = vision.get("masks")
    if not masks:
        return
    datasets = vision["datasets"]
    for name, bench in masks["benchmarks"].items():
        where = f"config: vision.masks.benchmarks.{name}"
        if bench["dataset"] not in datasets:
            raise ConfigError(f"{where}.dataset has value {bench['dataset']!r}, which is not a dataset "
                              f"{sorted(datasets)}")
        spec = datasets[bench["dataset"]]
        if str(bench["level"]) not in {str(k) for k in spec["levels"]}:
            raise ConfigError(f"{where}.level has value {bench['level']!r}, which is not a level of "
                              f"{bench['dataset']} {sorted(spec['levels'])}")
        if spec["generator"] not in COLOUR_GENERATORS:
            raise ConfigError(f"{where}.dataset is {bench['dataset']!r} with generator {spec['generator']!r}; the "
                              f"colour-only bias model needs a colour-biased one {COLOUR_GENERATORS}")
        train = spec.get("sizes", {}).get("train") or MNIST_TRAIN
        dev_size = masks.get("dev_size", 1000)
        if masks.get("dev_from", "unused_train") == "train_copy":
            if dev_size > min(train, MNIST_TRAIN):
                raise ConfigError(f"config: vision.masks.dev_size has value {dev_size}, more than the "
                                  f"{min(train, MNIST_TRAIN)} digits of vision.datasets.{bench['dataset']}.sizes.train "
                                  f"that vision.masks.dev_from train_copy colours again")
        elif min(train, MNIST_TRAIN) + dev_size > MNIST_TRAIN:
            raise ConfigError(f"config: vision.masks.dev_size has value {dev_size}, but "
                              f"vision.datasets.{bench['dataset']}.sizes.train ({train}) leaves only "
                              f"{MNIST_TRAIN - min(train, MNIST_TRAIN)} MNIST training digits for the biased dev split "
                              f"(vision.masks.dev_from: train_copy colours digits of the training split again)")
    if "imp" in masks["methods"]:
        step = masks.get("imp_step", 0.1)
        for sparsity in masks["sparsities"]:
            if abs(round(sparsity / step) * step - sparsity) > 1e-9:
                raise ConfigError(f"config: vision.masks.sparsities has {sparsity}, which is not a multiple of "
                                  f"vision.masks.imp_step ({step}), as imp needs")
