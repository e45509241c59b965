"""The gender track's config checks (paper B): what a JSON schema (schemas/gender.schema.yaml) cannot express."""

from __future__ import annotations

from collections.abc import Mapping

from maskbench.config_checks import ConfigError, check_parts


def check(config: Mapping) -> None:
    """The gender track (paper B): where the encoder comes from, a plan with at least one run, the debias-only runs'
    settings, positive block sizes. Whether the model has the layers 1-4 that ``intermediate`` reads is known only
    once it loads (the run then stops before its first step)."""
    if "gender" not in config:
        raise ConfigError("config: gender is required when track names gender (schemas/gender.schema.yaml)")
    gender = config["gender"]
    model = gender["model"]
    if model.get("init", "pretrained") == "pretrained" and "path" not in model:
        raise ConfigError("config: gender.model.path is required for a pretrained model (a Hub id, a folder or "
                          "package:<module>)")
    if model.get("init") == "scratch" and "bert_config" not in model:
        raise ConfigError("config: gender.model.bert_config is required when gender.model.init is scratch")
    runs = gender["runs"]
    if not runs:
        raise ConfigError("config: gender.runs plans no run; name frozen, unfrozen or debias_only")
    if "debias_only" in runs and "debias_only" not in gender:
        raise ConfigError("config: gender.runs.debias_only needs gender.debias_only.hparams")
    for kind in ("frozen", "unfrozen"):
        for name in runs.get(kind, {}).get("granularities", []):
            if name.startswith("block") and int(name[5:]) < 1:
                raise ConfigError(f"config: gender.runs.{kind}.granularities has {name!r}; a block is at least 1")
    lm_bias = gender.get("lm_bias")
    if lm_bias is not None and not lm_bias.get("crows_pairs") and not lm_bias.get("stereoset"):
        raise ConfigError("config: gender.lm_bias measures nothing; name crows_pairs, stereoset or both")
    from maskbench.data.registry import DataError, check_spec  # pandas: only when a gender config is checked

    specs = {f"gender.performance.tasks.{task}.{split}": splits[split]
             for task, splits in gender.get("performance", {}).get("tasks", {}).items() for split in ("train", "dev")}
    corpus = gender["corpus"]
    if (corpus["source"] == "dataset") != ("dataset" in corpus):
        raise ConfigError("config: gender.corpus.dataset (a dataset registry entry) goes with gender.corpus.source "
                          f"'dataset' and only with it; source is {corpus['source']!r}")
    if "dataset" in corpus:
        specs["gender.corpus.dataset"] = corpus["dataset"]
    for where, spec in specs.items():
        try:
            check_spec(where, spec)
        except DataError as err:
            raise ConfigError(f"config: {err}") from err
    check_parts(specs)
