"""The departures from the four papers, one table generated from one data file (``departures.yaml`` beside this
module), so that the README and the configs cannot drift apart.

Each record names the paper, the item, what the paper's text says, what its authors' code does, what maskbench
does by default (and why), the config keys that select the paper's behaviour with the value ``configs/paper.yaml``
gives each (``null``: the key exists but the paper config pins no single value), and a measured effect where one
is known. ``check_keys`` resolves every key in the JSON schemas and compares each pinned value with the paper
config (the value it sets, or the schema's default where it sets none); ``departures_markdown`` renders the table
the README carries between its ``departures`` markers.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from maskbench.report.captions import table_cell

FIELDS = ("paper", "item", "paper_text", "paper_code", "ours", "keys", "effect")
PAPERS = ("A", "C", "A, C", "B", "D")
PLACEHOLDER = re.compile(r"^<[^<>]+>$")


class DeparturesError(ValueError):
    """A departures file that does not hold the records this module expects (names the file, record and field)."""


def default_path() -> Path:
    return Path(str(resources.files("maskbench.report") / "departures.yaml"))


def load_departures(path: Path | None = None) -> list[dict[str, Any]]:
    """The records of ``path`` (default: the shipped file), checked field by field."""
    path = Path(path) if path is not None else default_path()
    try:
        records = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise DeparturesError(f"{path}: not valid YAML ({' '.join(str(err).split())})") from err
    if not isinstance(records, list) or not records:
        raise DeparturesError(f"{path}: expected a non-empty list of departure records")
    for i, rec in enumerate(records, start=1):
        where = f"{path}: record {i}"
        if not isinstance(rec, dict):
            raise DeparturesError(f"{where}: expected a mapping, got {type(rec).__name__}")
        missing = [f for f in FIELDS if f not in rec]
        unknown = sorted(set(rec) - set(FIELDS))
        if missing or unknown:
            raise DeparturesError(f"{where} ({rec.get('item', '?')!r}): missing fields {missing}, unknown {unknown}")
        if rec["paper"] not in PAPERS:
            raise DeparturesError(f"{where}: field 'paper' is {rec['paper']!r}, expected one of {list(PAPERS)}")
        for field in ("item", "paper_text", "paper_code", "ours"):
            if not isinstance(rec[field], str) or not rec[field].strip():
                raise DeparturesError(f"{where} ({rec['item']!r}): field {field!r} must be a non-empty string")
        if rec["keys"] is not None and not isinstance(rec["keys"], dict):
            raise DeparturesError(f"{where} ({rec['item']!r}): field 'keys' must be a mapping key -> paper value "
                                  f"or null, got {rec['keys']!r}")
    return records


def _resolve_ref(root: dict, node: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):  # another schema file: searched on its own by schema_node
            return {}
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
    return node


def _branches(root: dict, node: dict) -> list[dict]:
    """``node`` and every schema it combines (allOf / anyOf / oneOf / then / else), references resolved."""
    node = _resolve_ref(root, node)
    out = [node]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key, []):
            out.extend(_branches(root, sub))
    for key in ("then", "else"):
        if isinstance(node.get(key), dict):
            out.extend(_branches(root, node[key]))
    return out


def schema_node(schemas: list[dict], key: str) -> dict | None:
    """The schema of dotted config key ``key`` in any of ``schemas`` (``<...>`` segments match any name), or None."""
    parts = key.split(".")
    for root in schemas:
        nodes = [root]
        for part in parts:
            found = []
            for node in nodes:
                for branch in _branches(root, node):
                    props = branch.get("properties", {})
                    if PLACEHOLDER.match(part):
                        found.extend(props.values())
                    elif part in props:
                        found.append(props[part])
                    extra = branch.get("additionalProperties")
                    if isinstance(extra, dict) and (PLACEHOLDER.match(part) or part not in props):
                        found.append(extra)
                    for pattern, sub in branch.get("patternProperties", {}).items():
                        if PLACEHOLDER.match(part) or re.search(pattern, part):
                            found.append(sub)
                    items = branch.get("items")
                    if isinstance(items, dict) and part.isdigit():
                        found.append(items)
            nodes = found
            if not nodes:
                break
        if nodes:
            return _resolve_ref(root, nodes[0])
    return None


def config_value(config: dict, schemas: list[dict], key: str) -> Any:
    """The value ``config`` gives dotted ``key``, else the schema's default there; ``KeyError`` if neither."""
    node: Any = config
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            schema = schema_node(schemas, key)
            if schema is not None and "default" in schema:
                return schema["default"]
            raise KeyError(key)
    return node


def check_keys(records: list[dict], schemas: list[dict], paper_config: dict) -> list[str]:
    """Every problem found: a key the schemas do not know, or a pinned value the paper config does not give."""
    problems = []
    for rec in records:
        for key, expected in (rec["keys"] or {}).items():
            if schema_node(schemas, key) is None:
                problems.append(f"{rec['paper']} / {rec['item']}: key {key!r} is in no schema")
                continue
            if expected is None or any(PLACEHOLDER.match(p) for p in key.split(".")):
                continue
            try:
                actual = config_value(paper_config, schemas, key)
            except KeyError:
                problems.append(f"{rec['paper']} / {rec['item']}: configs/paper.yaml sets no {key!r} and the "
                                f"schema has no default (the record says {expected!r})")
                continue
            if actual != expected:
                problems.append(f"{rec['paper']} / {rec['item']}: configs/paper.yaml gives {key!r} = {actual!r}, "
                                f"the record says {expected!r}")
    return problems


def _cell(text: Any) -> str:
    return table_cell(" ".join(str(text).split()))


def _keys_cell(keys: dict | None) -> str:
    if not keys:
        return "not selectable"
    parts = []
    for key, value in keys.items():
        shown = "" if value is None else f" = `{yaml.safe_dump(value, default_flow_style=True).strip()}`"
        shown = shown.replace("\n...", "").replace("|", "\\|")
        parts.append(f"`{key}`{shown}")
    return "<br>".join(parts)


def departures_markdown(records: list[dict]) -> str:
    """One markdown table: paper, item, the paper's text, its code, ours by default, the keys with the paper
    config's values, the measured effect."""
    lines = ["| paper | item | the paper's text | the authors' code | here by default, and why | "
             "key = paper config's value | measured effect |",
             "|---|---|---|---|---|---|---|"]
    for rec in records:
        effect = _cell(rec["effect"]) if rec["effect"] is not None else "—"
        lines.append(f"| {rec['paper']} | {_cell(rec['item'])} | {_cell(rec['paper_text'])} | "
                     f"{_cell(rec['paper_code'])} | {_cell(rec['ours'])} | {_keys_cell(rec['keys'])} | {effect} |")
    return "\n".join(lines) + "\n"
