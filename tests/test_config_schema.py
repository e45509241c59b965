"""maskbench.workflow.config_schema gives the config snakemake.utils.validate gives (defaults included) and refuses what it
refuses, with the same message, for every shipped config and a few broken ones."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import snakemake.utils
import yaml
from jsonschema import ValidationError
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config
from snakemake.utils import validate as snakemake_validate

from maskbench.workflow.config_schema import validate
from maskbench.workflow.workflow_config import tracks_of

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "schemas"


@pytest.fixture(autouse=True)
def schema_files_read_once(monkeypatch):
    """snakemake.utils.validate reads every schema file a $ref names again on each call, with the pure-Python YAML
    loader (about a second a config here); the comparison reads each file once per session, a copy each time."""
    read = _SCHEMA_FILES.setdefault("read", snakemake.utils._load_configfile)

    def cached(source, filetype="Config"):
        if not isinstance(source, str | Path):
            return read(source, filetype=filetype)
        key = (str(source), filetype)
        if key not in _SCHEMA_FILES:
            _SCHEMA_FILES[key] = read(source, filetype=filetype)
        return copy.deepcopy(_SCHEMA_FILES[key])

    monkeypatch.setattr(snakemake.utils, "_load_configfile", cached)


_SCHEMA_FILES: dict = {}
CONFIGS = ["config.yaml", "tests/configs/synthetic.yaml", *sorted(f"configs/{p.name}" for p in (REPO / "configs").glob("*.yaml"))]
# the overlays, and the config each is given after on the command line (as its header says)
OVERLAID_ON = {"configs/paper-miniature.yaml": "configs/paper.yaml"}


def read(path: str) -> dict:
    config = yaml.safe_load((REPO / path).read_text())
    if path in OVERLAID_ON:
        base = read(OVERLAID_ON[path])
        update_config(base, config)
        config = base
    return config


def both(config: dict) -> tuple[dict, dict]:
    ours, theirs = copy.deepcopy(config), copy.deepcopy(config)
    for schema in ["config.schema.yaml", *(f"{track}.schema.yaml" for track in tracks_of(config))]:
        validate(ours, SCHEMAS / schema)
        snakemake_validate(theirs, str(SCHEMAS / schema))
    return ours, theirs


@pytest.mark.parametrize("path", CONFIGS)
def test_every_shipped_config_gets_the_defaults_snakemake_gives(path):
    raw = read(path)
    ours, theirs = both(raw)
    assert ours == theirs
    assert ours != raw or path == "config.yaml"  # a file that omits a key with a default gets it


def test_a_default_set_in_one_config_is_not_shared_with_the_next():
    first, _ = both(yaml.safe_load((REPO / "configs/smoke.yaml").read_text()))
    first["compute"]["eval_runtime_min"] = -1
    first["mask_search"]["hparams"]["adam_eps"] = -1
    second, _ = both(yaml.safe_load((REPO / "configs/smoke.yaml").read_text()))
    assert second["compute"]["eval_runtime_min"] > 0 and second["mask_search"]["hparams"]["adam_eps"] == 1.0e-6


@pytest.mark.parametrize(("edit", "where"), [
    (lambda c: c.update(track="audio"), "'audio' is not valid"),
    (lambda c: c["mask_search"].update(threshold_end="high"), "'high' is not of type 'number'"),
    (lambda c: c.update(no_such_key=1), "('no_such_key' was unexpected)"),
])
def test_a_broken_config_is_refused_with_snakemakes_message(edit, where):
    config = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    edit(config)
    with pytest.raises(ValidationError) as ours:
        validate(copy.deepcopy(config), SCHEMAS / "config.schema.yaml")
    with pytest.raises(WorkflowError) as theirs:
        snakemake_validate(copy.deepcopy(config), str(SCHEMAS / "config.schema.yaml"))
    assert where in ours.value.message and f"ValidationError: {ours.value.message}" in str(theirs.value)


def test_of_several_violations_the_first_in_the_configs_order_is_named_on_every_run(tmp_path):
    """jsonschema visits a mapping's additional keys in a set's order, which PYTHONHASHSEED changes: without an order
    of its own, the same broken config named another dataset from one run to the next."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    names = list(config["datasets"])[:3]
    for name in names:
        config["datasets"][name]["bogus_key"] = 1
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    code = ("import sys, yaml\n"
            "from jsonschema import ValidationError\n"
            "from maskbench.workflow.config_schema import validate_config\n"
            f"config = yaml.safe_load(open({str(tmp_path / 'broken.yaml')!r}))\n"
            "try:\n"
            f"    validate_config(config, {str(SCHEMAS)!r})\n"
            "except ValidationError as error:\n"
            "    print(list(error.absolute_path), error.message)\n")
    said = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(1, 6)}
    assert said == {f"['datasets', '{names[0]}'] Additional properties are not allowed ('bogus_key' was unexpected)\n"}
