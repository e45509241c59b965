"""The departures table: one data file, every key in the schemas, every pinned value the paper config's, the
table of docs/departures.md generated from it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from maskbench.report.departures import (
    DeparturesError,
    check_keys,
    config_value,
    departures_markdown,
    load_departures,
    schema_node,
)
from maskbench.report.readme import markers
from maskbench.tools import departures_readme

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = departures_readme.load_schemas(ROOT / "schemas")
PAPER = yaml.safe_load((ROOT / "configs" / "paper.yaml").read_text(encoding="utf-8"))

TOY_SCHEMA = {
    "type": "object",
    "definitions": {"hp": {"type": "object", "properties": {"lr": {"type": "number", "default": 0.1}}}},
    "properties": {
        "track": {"properties": {"mode": {"enum": ["a", "b"], "default": "a"}, "hp": {"$ref": "#/definitions/hp"}}},
        "tasks": {"type": "object", "additionalProperties": {"$ref": "#/definitions/hp"}},
    },
}


def record(**keys):
    return {"paper": "B", "item": "toy", "paper_text": "t", "paper_code": "c", "ours": "o", "keys": keys,
            "effect": None}


def test_every_key_exists_and_every_pinned_value_is_the_paper_configs():
    records = load_departures()
    assert check_keys(records, SCHEMAS, PAPER) == []
    assert {r["paper"] for r in records} >= {"A", "C", "B", "D"}


def test_schema_resolution_follows_refs_named_maps_and_placeholders():
    assert schema_node([TOY_SCHEMA], "track.mode")["default"] == "a"
    assert schema_node([TOY_SCHEMA], "track.hp.lr")["default"] == 0.1  # through $ref
    assert schema_node([TOY_SCHEMA], "tasks.mnli.lr")["default"] == 0.1  # additionalProperties
    assert schema_node([TOY_SCHEMA], "tasks.<task>.lr") is not None
    assert schema_node([TOY_SCHEMA], "track.missing") is None
    assert schema_node([TOY_SCHEMA], "track.mode.deeper") is None


def test_check_keys_reports_unknown_keys_and_wrong_values_and_reads_defaults():
    config = {"track": {"mode": "b"}}
    assert check_keys([record(**{"track.mode": "b"})], [TOY_SCHEMA], config) == []
    assert check_keys([record(**{"track.hp.lr": 0.1})], [TOY_SCHEMA], config) == []  # the schema's default
    assert config_value(config, [TOY_SCHEMA], "track.hp.lr") == 0.1
    [wrong] = check_keys([record(**{"track.mode": "a"})], [TOY_SCHEMA], config)
    assert "'track.mode' = 'b'" in wrong and "says 'a'" in wrong
    [unknown] = check_keys([record(**{"track.typo": 1})], [TOY_SCHEMA], config)
    assert "'track.typo' is in no schema" in unknown
    assert check_keys([record(**{"tasks.<task>.lr": 5})], [TOY_SCHEMA], config) == []  # placeholders: not pinned


def test_a_bad_record_names_the_file_the_record_and_the_field(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump([{**record(), "paper": "E"}]), encoding="utf-8")
    with pytest.raises(DeparturesError, match=r"d\.yaml: record 1: field 'paper' is 'E'"):
        load_departures(path)
    bad = record()
    del bad["effect"]
    path.write_text(yaml.safe_dump([bad]), encoding="utf-8")
    with pytest.raises(DeparturesError, match=r"record 1 \('toy'\): missing fields \['effect'\]"):
        load_departures(path)
    path.write_text("- paper: B\n  ours: a: b: c\n", encoding="utf-8")
    with pytest.raises(DeparturesError, match=r"d\.yaml: not valid YAML \(mapping values are not allowed here"):
        load_departures(path)


def test_markdown_row_shows_the_keys_with_the_paper_values_and_escapes_pipes():
    rec = {**record(**{"x.y": "cubic", "x.z": None}), "paper_text": "a | b", "effect": "+1.0"}
    row = departures_markdown([rec]).splitlines()[2]
    assert row == "| B | toy | a \\| b | c | o | `x.y` = `cubic`<br>`x.z` | +1.0 |"
    assert departures_markdown([{**record(), "keys": None}]).splitlines()[2].endswith("| not selectable | — |")


def test_the_docs_table_is_the_data_files(tmp_path):
    """docs/departures.md holds the one departures table of the four papers (the paper pages link to it)."""
    readme = (ROOT / "docs" / "departures.md").read_text(encoding="utf-8")
    start, end = markers(departures_readme.SECTION)
    assert readme.count(start) == 1 and readme.count(end) == 1
    copy = tmp_path / "departures.md"
    copy.write_text(readme, encoding="utf-8")
    args = ["--readme", str(copy), "--schemas", str(ROOT / "schemas"),
            "--paper-config", str(ROOT / "configs" / "paper.yaml"), "--check"]
    assert departures_readme.main(args) == 0, "docs/departures.md's table is stale: run the step"
    copy.write_text(readme.replace(start + "\n", start + "\nstale line\n"), encoding="utf-8")
    assert departures_readme.main(args) == 1
