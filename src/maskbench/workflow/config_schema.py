"""A config validated against the JSON schemas in schemas/, with the schemas' defaults filled in.

It does what ``snakemake.utils.validate`` does for a config dict (JSON Schema 2020-12, relative ``$ref`` resolved
against the schema file, a property's ``default`` set where the config lacks it) and gives the same config, but reads
each schema once per process with libyaml: snakemake's validate parses every schema and every file a ``$ref`` reaches
with the pure-Python YAML parser on every call, about 1.2 s of every snakemake start (each dry run, each job of a
SLURM group job). ``tests/test_config_schema.py`` checks that both give equal configs for every shipped config.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import yaml
from jsonschema import Draft202012Validator, ValidationError, validators
from referencing import Registry, Resource

from maskbench.workflow.workflow_config import tracks_of

__all__ = ["ValidationError", "validate", "validate_config"]

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _schema(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=_LOADER)


def _retrieve(uri: str) -> Resource:
    return Resource.from_contents(_schema(url2pathname(urlparse(uri).path)))


def _set_defaults(validator, properties: dict, instance, schema: dict) -> Iterator[ValidationError]:
    if isinstance(instance, dict):
        for name, subschema in properties.items():
            if "default" in subschema:
                # a copy: the schema is read once per process, so a default set here must not be shared
                instance.setdefault(name, copy.deepcopy(subschema["default"]))
    yield from Draft202012Validator.VALIDATORS["properties"](validator, properties, instance, schema)


def _additional_in_order(validator, additional, instance, schema: dict) -> Iterator[ValidationError]:
    """``additionalProperties`` visiting a mapping's additional keys in the mapping's own order: jsonschema visits
    them in a set's, which string hashing changes from one process to the next, so that of several bad entries (two
    datasets, say) the one named changed from run to run."""
    if not (validator.is_type(instance, "object") and validator.is_type(additional, "object")):
        yield from Draft202012Validator.VALIDATORS["additionalProperties"](validator, additional, instance, schema)
        return
    patterns = "|".join(schema.get("patternProperties", {}))
    for name, value in instance.items():
        if name not in schema.get("properties", {}) and not (patterns and re.search(patterns, name)):
            yield from validator.descend(value, additional, path=name)


_WITH_DEFAULTS = validators.extend(Draft202012Validator, {"properties": _set_defaults,
                                                          "additionalProperties": _additional_in_order})


def validate(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place against the schema file, setting its defaults; raises
    ``jsonschema.ValidationError`` naming the first violation (the same on every run)."""
    path = Path(schema_path).resolve()
    schema = dict(_schema(str(path)), **{"$id": path.as_uri()})  # relative $ref resolve against this file
    registry = Registry(retrieve=_retrieve).with_resource(uri=str(path), resource=Resource.from_contents(schema))
    _WITH_DEFAULTS(schema, registry=registry).validate(config)
    return config


def validate_config(config: dict, schemas: str | Path) -> dict:
    """What the workflow checks when it loads (rules/setup.smk): the shared schema, which applies the schema of each
    track the config names, then each track's schema on its own for its defaults (jsonschema sets defaults only in
    the file it is given; inside a file reached by ``$ref`` it switches to a validator that sets none)."""
    validate(config, Path(schemas) / "config.schema.yaml")
    for track in tracks_of(config):
        validate(config, Path(schemas) / f"{track}.schema.yaml")
    return config
