"""Turn one `datasets:` config entry (a spec dict) into a prepared frame and its label names."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench.data.parts import cut
from maskbench.data.schema import REQUIRED_COLUMNS, DataError, validate_frame

SOURCE_KINDS = ("hf", "local", "synthetic")
# Keys consumed by the registry itself; the rest of a synthetic spec goes to the generator.
_NOT_GENERATOR_PARAMS = ("source", "labels", "task")
_SHA256 = re.compile(r"[0-9a-f]{64}")
Position = Callable[[int], str]
# `duplicate_ids:` — what a dataset does with an id its file repeats: refuse it (the default), or renumber every
# occurrence of a repeated id "<id>-<k>", k = 1, 2, ... in file order (the NLI-style FEVER files repeat the claim
# id once per evidence sentence; docs/data.md)
DUPLICATE_IDS = ("refuse", "renumber")
# the original id of a renumbered row, kept beside the new one (a provenance column of the prepared file)
SOURCE_ID = "source_id"
# a text cell that is a Python bytes literal: b'...' or b"..." (a Python 2 script's str(bytes) under Python 3)
_BYTES_LITERAL = re.compile(r"b(['\"]).*\1", re.DOTALL)


def row_position(row: int) -> str:
    """A row of a source without lines (the Hub, parquet), counting from 1 like the lines of a text file."""
    return f"row {row + 1}"


def _where(name: str, spec: Mapping) -> str:
    return f"dataset {name!r} ({spec.get('source')})"


def parse_source(name: str, spec: Mapping) -> tuple[str, str]:
    source = spec.get("source") if isinstance(spec, Mapping) else None
    if not isinstance(source, str) or ":" not in source:
        raise DataError(
            f"dataset {name!r}: field 'source' has value {source!r}; expected 'hf:<hub id>', "
            f"'local:<path>' or 'synthetic:<generator>'"
        )
    kind, _, target = source.partition(":")
    if kind not in SOURCE_KINDS:
        raise DataError(f"dataset {name!r}: field 'source' has unknown prefix {kind + ':'!r} in {source!r}; "
                        f"expected one of {[k + ':' for k in SOURCE_KINDS]}")
    if not target:
        raise DataError(f"dataset {name!r}: field 'source' has value {source!r} with nothing after {kind + ':'!r}")
    return kind, target


def _check_labels_spec(name: str, spec: Mapping, required: bool) -> None:
    where = _where(name, spec)
    labels = spec.get("labels")
    if labels is None and not required:
        return
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        raise DataError(f"{where}: field 'labels' has value {labels!r}; expected a non-empty list of label names")
    if len(set(labels)) != len(labels):
        raise DataError(f"{where}: field 'labels' has duplicated names in {labels!r}")


def check_spec(name: str, spec: Mapping) -> str:
    """Validate a spec without loading anything; return the source kind."""
    kind, _ = parse_source(name, spec)
    where = _where(name, spec)
    if kind == "hf":
        split = spec.get("split")
        if not isinstance(split, str) or not split:
            raise DataError(f"{where}: field 'split' has value {split!r}; hf sources need a split name")
        for key in ("config", "revision", "mirror"):
            value = spec.get(key)
            if value is not None and not isinstance(value, str):
                raise DataError(f"{where}: field {key!r} has value {value!r}; expected a string")
    if kind == "local":
        fmt = spec.get("format")
        if fmt is not None and fmt not in ("jsonl", "csv", "tsv", "parquet"):
            raise DataError(f"{where}: field 'format' has value {fmt!r}; expected jsonl, csv, tsv or parquet")
    duplicate_ids = spec.get("duplicate_ids")
    if duplicate_ids is not None:
        if kind == "synthetic":
            raise DataError(f"{where}: field 'duplicate_ids' is set but synthetic sources make unique ids")
        if duplicate_ids not in DUPLICATE_IDS:
            raise DataError(f"{where}: field 'duplicate_ids' has value {duplicate_ids!r}; expected one of "
                            f"{list(DUPLICATE_IDS)}")
    sha256 = spec.get("sha256")
    if sha256 is not None:
        if kind != "local":
            raise DataError(f"{where}: field 'sha256' is set but only local sources (local:<path>) are checksummed")
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            raise DataError(f"{where}: field 'sha256' has value {sha256!r}; expected 64 lower-case hex digits "
                            f"(what `sha256sum <file>` prints)")
    if kind in ("hf", "local"):
        _check_labels_spec(name, spec, required=True)
        columns = spec.get("columns", {})
        if not isinstance(columns, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in columns.items()
        ):
            raise DataError(f"{where}: field 'columns' has value {columns!r}; expected prepared -> source names")
        label_map = spec.get("label_map")
        if label_map is not None:
            if not isinstance(label_map, Mapping):
                raise DataError(f"{where}: field 'label_map' has value {label_map!r}; expected raw -> label name")
            for raw, target in label_map.items():
                if target not in spec["labels"]:
                    raise DataError(
                        f"{where}: field 'label_map' maps {raw!r} to {target!r}, which is not in labels {spec['labels']}"
                    )
    else:
        _check_labels_spec(name, spec, required=False)
    return kind


def _label_indexer(labels: list[str], label_map: Mapping | None):
    """raw value -> label index, or None when the value is unknown."""
    by_name = {label: i for i, label in enumerate(labels)}
    if label_map is not None:
        by_raw = {str(raw): by_name[target] for raw, target in label_map.items()}
        return lambda raw: by_raw.get(str(raw))

    def index(raw):
        if isinstance(raw, str):
            if raw in by_name:
                return by_name[raw]
            # Text formats (csv/tsv) deliver integer labels as strings.
            return int(raw) if raw.isdigit() and int(raw) < len(labels) else None
        if isinstance(raw, int | np.integer) and not isinstance(raw, bool | np.bool_):
            return int(raw) if 0 <= raw < len(labels) else None
        return None

    return index


def map_labels(raw: pd.Series, labels: list[str], label_map: Mapping | None, where: str, column: str,
               position: Position = row_position) -> pd.Series:
    """Label names (or indices) -> label indices; an unknown or null value is a DataError naming its position."""
    index = _label_indexer(labels, label_map)
    cache: dict = {}
    out = np.empty(len(raw), dtype=np.int64)
    for row, value in enumerate(raw.tolist()):
        key = (type(value), value) if not _is_missing(value) else ("missing",)
        if key not in cache:
            cache[key] = None if _is_missing(value) else index(value)
        if cache[key] is None:
            if _is_missing(value):
                raise DataError(f"{where}: field 'label' (source column {column!r}) has a null value at "
                                f"{position(row)}")
            known = list(label_map) if label_map is not None else labels
            raise DataError(
                f"{where}: field 'label' (source column {column!r}) has unknown value {value!r} at "
                f"{position(row)}; known values {known}"
            )
        out[row] = cache[key]
    return pd.Series(out, index=raw.index, name="label")


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def map_columns(raw: pd.DataFrame, name: str, spec: Mapping, where: str, position: Position = row_position,
                absent: Mapping[str, tuple[int, tuple]] | None = None, single_text: bool = False) -> pd.DataFrame:
    """Apply `columns` and `label_map`; unmapped id -> "<name>-<row>".

    Every task is a text pair unless the config declares it single-text (``tasks.<task>.single_text``): a pair
    task whose source gives no second text — no ``text_b`` column and no `columns` mapping of it — is refused
    rather than trained on empty second texts; a single-text task gets text_b = "" and may not map one.
    ``position(row)`` names a row in messages (a local file's line); ``absent`` maps a source column to the first
    row whose record lacks it and the columns that record has (`maskbench.data.local_source.LocalTable`).
    """
    if len(raw) == 0:
        raise DataError(f"{where}: field 'id' has 0 values (empty split, no rows)")
    has = ", ".join(map(str, raw.columns))
    columns = dict(spec.get("columns") or {})
    if single_text and "text_b" in columns:
        raise DataError(f"{where}: the task is single-text but its `columns` map 'text_b' to {columns['text_b']!r}; "
                        f"drop that mapping, or make the task a pair task (tasks.<task>.single_text: false)")
    if not single_text and "text_b" not in columns and "text_b" not in raw.columns:
        raise DataError(
            f"{where}: field 'text_b' is missing: the task pairs two texts but neither `columns` nor the file gives "
            f"the second one (it has: {has}); map it with columns: {{text_a: ..., text_b: <source column>}}, or "
            f"declare the task single-text (tasks.<task>.single_text: true)"
        )
    for prepared in ("id", "text_a", "label") + (() if single_text else ("text_b",)):
        if prepared not in columns and prepared in raw.columns:
            columns[prepared] = prepared
    for prepared in ("text_a", "label"):
        if prepared not in columns:
            raise DataError(
                f"{where}: field 'columns' has no mapping for {prepared!r} and the file has no column "
                f"{prepared!r} (it has: {has})"
            )
    for prepared, source_column in columns.items():
        if source_column not in raw.columns:
            raise DataError(f"{where}: column {source_column!r} (mapped to {prepared}) is missing from the file; "
                            f"it has: {has}")
    for prepared, source_column in columns.items():
        if absent and source_column in absent:
            row, present = absent[source_column]
            raise DataError(f"{where}: column {source_column!r} (mapped to {prepared}) is missing from "
                            f"{position(row)}; it has: {', '.join(map(str, present))}")
    for prepared in ("id", "text_a", "text_b"):
        if prepared in columns:
            null = raw[columns[prepared]].map(_is_missing).to_numpy(dtype=bool)
            if null.any():
                raise DataError(f"{where}: field {prepared!r} (source column {columns[prepared]!r}) has a null "
                                f"value at {position(int(np.flatnonzero(null)[0]))}")

    out = pd.DataFrame(index=range(len(raw)))
    if "id" in columns:
        out["id"] = [str(v) if not _is_missing(v) else None for v in raw[columns["id"]].tolist()]
    else:
        out["id"] = [f"{name}-{row}" for row in range(len(raw))]
    for text in ("text_a", "text_b"):
        if text in columns:
            out[text] = raw[columns[text]].to_numpy(dtype=object)
        else:
            out[text] = ""
    labels = list(spec["labels"])
    out["label"] = map_labels(raw[columns["label"]].reset_index(drop=True), labels, spec.get("label_map"),
                              where, columns["label"], position)
    for prepared, source_column in columns.items():
        if prepared not in REQUIRED_COLUMNS:
            out[prepared] = raw[source_column].to_numpy()
    if "source_index" not in out.columns:
        # The row position in the source; paper A's subset index files point into this order.
        out["source_index"] = np.arange(len(raw), dtype=np.int64)
    return out


def _load_synthetic(name: str, generator: str, spec: Mapping) -> tuple[pd.DataFrame, list[str]]:
    synthetic = importlib.import_module("maskbench.data.synthetic")
    params = {k: v for k, v in spec.items() if k not in _NOT_GENERATOR_PARAMS}
    try:
        df, labels = synthetic.generate(generator, **params)
    except DataError:
        raise
    except (TypeError, ValueError) as err:
        # Bad generator options are config errors: report them like any other bad spec.
        raise DataError(f"{_where(name, spec)}: field 'source' generator {generator!r} rejected {params!r}: {err}") from err
    labels = list(labels)
    if spec.get("labels") is not None and list(spec["labels"]) != labels:
        raise DataError(
            f"{_where(name, spec)}: field 'labels' has value {spec['labels']!r} but generator {generator!r} "
            f"produces {labels!r}"
        )
    return df, labels


def check_local_file(name: str, spec: Mapping, path: Path) -> None:
    """Refuse a local file whose bytes differ from the spec's `sha256` (when it names one), before reading it."""
    expected = spec.get("sha256")
    if expected is None:
        return
    from maskbench.data.checksum import sha256_file

    if not path.is_file():
        raise DataError(f"{path}: field 'path' has value {str(path)!r} but no such file exists")
    actual = sha256_file(path)
    if actual != expected:
        raise DataError(f"{path} (dataset {name!r}): field 'sha256' expects {expected} but the file's bytes give "
                        f"{actual}: it is not the file the config names (changed, cut or another version)")


def renumber_ids(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """Make repeated ids unique: every occurrence of an id that appears more than once becomes "<id>-<k>", k = 1,
    2, ... in row (file) order; ids that appear once are kept. The original id goes to column ``source_id``.

    A new id that another row already has as its own is a DataError naming it: renumbering never merges rows."""
    ids = df["id"].tolist()
    repeated = df["id"].duplicated(keep=False).to_numpy()
    seen: dict[str, int] = {}
    new = []
    for value, again in zip(ids, repeated, strict=True):
        if again:
            seen[value] = seen.get(value, 0) + 1
            new.append(f"{value}-{seen[value]}")
        else:
            new.append(value)
    kept = set(df["id"][~repeated])
    clash = next((value for value, again in zip(new, repeated, strict=True) if again and value in kept), None)
    if clash is not None:
        raise DataError(f"{where}: field 'id' renumbered to {clash!r} (duplicate_ids: renumber), which another row "
                        f"has as its id; the file's ids cannot be made unique this way")
    out = df.copy()
    out[SOURCE_ID] = ids
    out["id"] = new
    return out


def _check_unique_ids(df: pd.DataFrame, spec: Mapping, where: str, position: Position) -> None:
    """Refuse a repeated id, naming the way out (`duplicate_ids: renumber`); validate_frame would refuse it too,
    without the hint."""
    duplicated = df["id"].duplicated().to_numpy()
    if not duplicated.any():
        return
    row = int(np.flatnonzero(duplicated)[0])
    value = df["id"].iloc[row]
    first = int(np.flatnonzero((df["id"] == value).to_numpy())[0])
    source = (spec.get("columns") or {}).get("id", "id")
    count = int(duplicated.sum())
    raise DataError(f"{where}: field 'id' (source column {source!r}) has duplicated value {value!r} at "
                    f"{position(row)} (first at {position(first)}; {count} repeated ids in all); set "
                    f"`duplicate_ids: renumber` in the dataset's entry to make them unique as '<id>-<k>'")


def _check_text_cells(df: pd.DataFrame, spec: Mapping, where: str, position: Position) -> None:
    """Refuse a text cell that is a Python bytes literal (b'...'): the mark of a Python 2 script's bytes written
    through str() under Python 3 (google-research-datasets/paws' qqp_generate_data.py run naively)."""
    columns = spec.get("columns") or {}
    for text in ("text_a", "text_b"):
        if text not in df.columns:
            continue
        bad = df[text].map(lambda v: isinstance(v, str) and _BYTES_LITERAL.fullmatch(v) is not None).to_numpy(bool)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = df[text].iloc[row]
            raise DataError(f"{where}: {position(row)}, column {columns.get(text, text)!r} has value {value[:60]!r}, "
                            f"a Python bytes literal, not text (a Python 2 script run under Python 3?); for "
                            f"PAWS-QQP rebuild the file with python -m maskbench.tools.paws_qqp")


def load_dataset(name: str, spec: Mapping, base_dir=Path("."), single_text: bool = False,
                 local_path=None) -> tuple[pd.DataFrame, list[str]]:
    """Load, map and validate one dataset; relative local paths and mirrors resolve against base_dir.

    ``single_text``: the dataset's task is single-text (text_b = ""). ``local_path``: the file of a local source
    as the workflow resolved it (the prepare rule's input), instead of the spec's path under base_dir."""
    kind = check_spec(name, spec)
    _, target = parse_source(name, spec)
    base_dir = Path(base_dir)
    if kind == "synthetic":
        df, labels = _load_synthetic(name, target, spec)
        validate_frame(df, labels, _where(name, spec))
        return df, labels
    if kind == "local":
        from maskbench.data.local_source import read_local_table

        path = Path(target) if local_path is None else Path(local_path)
        path = path if path.is_absolute() or local_path is not None else base_dir / path
        check_local_file(name, spec, path)
        table = read_local_table(path, spec.get("format"))
        raw, position, absent = table.frame, table.position, table.absent
        where = f"{path} (dataset {name!r})"
    else:
        from maskbench.data.hf_source import load_hf_frame

        mirror = spec.get("mirror")
        if mirror is not None and not Path(mirror).is_absolute():
            mirror = base_dir / mirror
        raw, origin = load_hf_frame(target, spec.get("config"), spec["split"], spec.get("revision"), mirror)
        position, absent = row_position, None
        where = f"{origin} (dataset {name!r})"
    df = map_columns(raw, name, spec, where, position, absent, single_text)
    if kind == "local":
        _check_text_cells(df, spec, where, position)
    if spec.get("duplicate_ids", "refuse") == "renumber":
        df = renumber_ids(df, where)
    else:
        _check_unique_ids(df, spec, where, position)
    labels = list(spec["labels"])
    validate_frame(df, labels, where, position=position)
    return cut(df, spec, where), labels
