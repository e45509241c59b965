"""Turn one `datasets:` config entry (a spec dict) into a prepared frame and its label names."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench.data.schema import REQUIRED_COLUMNS, DataError, validate_frame

SOURCE_KINDS = ("hf", "local", "synthetic")
# Keys consumed by the registry itself; the rest of a synthetic spec goes to the generator.
_NOT_GENERATOR_PARAMS = ("source", "labels", "task")


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


def map_labels(raw: pd.Series, labels: list[str], label_map: Mapping | None, where: str, column: str) -> pd.Series:
    index = _label_indexer(labels, label_map)
    cache: dict = {}
    out = np.empty(len(raw), dtype=np.int64)
    for row, value in enumerate(raw.tolist()):
        key = (type(value), value) if not _is_missing(value) else ("missing",)
        if key not in cache:
            cache[key] = None if _is_missing(value) else index(value)
        if cache[key] is None:
            known = list(label_map) if label_map is not None else labels
            raise DataError(
                f"{where}: field 'label' (source column {column!r}) has unknown value {value!r} at row {row}; "
                f"known values {known}"
            )
        out[row] = cache[key]
    return pd.Series(out, index=raw.index, name="label")


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def map_columns(raw: pd.DataFrame, name: str, spec: Mapping, where: str) -> pd.DataFrame:
    """Apply `columns` and `label_map`; unmapped id -> "<name>-<row>".

    Every task is a text pair: a source without a ``text_b`` column and without a `columns` mapping is refused
    (it would train on empty second texts without a word). A `columns` mapping that leaves ``text_b`` out says
    so on purpose: a single-text dataset, text_b = "".
    """
    if len(raw) == 0:
        raise DataError(f"{where}: field 'id' has 0 values (empty split, no rows)")
    columns = dict(spec.get("columns") or {})
    if not columns and "text_b" not in raw.columns:
        raise DataError(
            f"{where}: field 'text_b' is missing: the source has no column 'text_b' (source columns "
            f"{list(raw.columns)}) and the dataset has no `columns:` mapping; map the second text with "
            f"columns: {{text_a: ..., text_b: <source column>}} (a mapping without text_b makes a single-text dataset)"
        )
    for prepared in ("id", "text_a", "text_b", "label"):
        if prepared not in columns and prepared in raw.columns:
            columns[prepared] = prepared
    for prepared in ("text_a", "label"):
        if prepared not in columns:
            raise DataError(
                f"{where}: field 'columns' has no mapping for {prepared!r} and the source has no column "
                f"{prepared!r} (source columns {list(raw.columns)})"
            )
    for prepared, source_column in columns.items():
        if source_column not in raw.columns:
            raise DataError(
                f"{where}: field 'columns' maps {prepared!r} to source column {source_column!r}, which is absent "
                f"(source columns {list(raw.columns)})"
            )

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
                              where, columns["label"])
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


def load_dataset(name: str, spec: Mapping, base_dir=Path(".")) -> tuple[pd.DataFrame, list[str]]:
    """Load, map and validate one dataset; relative local paths and mirrors resolve against base_dir."""
    kind = check_spec(name, spec)
    _, target = parse_source(name, spec)
    base_dir = Path(base_dir)
    if kind == "synthetic":
        df, labels = _load_synthetic(name, target, spec)
        validate_frame(df, labels, _where(name, spec))
        return df, labels
    if kind == "local":
        from maskbench.data.local_source import read_local_frame

        path = Path(target)
        path = path if path.is_absolute() else base_dir / path
        raw = read_local_frame(path, spec.get("format"))
        where = f"{path} (dataset {name!r})"
    else:
        from maskbench.data.hf_source import load_hf_frame

        mirror = spec.get("mirror")
        if mirror is not None and not Path(mirror).is_absolute():
            mirror = base_dir / mirror
        raw, origin = load_hf_frame(target, spec.get("config"), spec["split"], spec.get("revision"), mirror)
        where = f"{origin} (dataset {name!r})"
    df = map_columns(raw, name, spec, where)
    labels = list(spec["labels"])
    validate_frame(df, labels, where)
    return df, labels
