"""The prepared-data contract: one parquet per dataset, in the prepared format of its track.

Every format has a unique string ``id`` and an integer class ``label``; ``PREPARED_FORMATS`` says which other
columns a track's files must have (nlu: the text pair ``text_a``/``text_b``). Label names live in the parquet
schema metadata (key b"maskbench") so that a prepared file is self-describing: the int label is an index into
that list. Other columns (provenance such as ``heuristic``) pass through unchecked. The metadata also holds a
sha256 over the data and that metadata (key b"maskbench.sha256", `maskbench.data.checksum`): `read_prepared`,
which every reader goes through, refuses a cut, damaged or altered file, naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from maskbench.data.checksum import read_checked_table, write_checked_table
from maskbench.errors import DataError
from maskbench.runtime import atomic_path, atomic_write_json


@dataclass(frozen=True)
class PreparedFormat:
    """How a track's prepared data looks: the columns every file has, and those of them that hold strings."""

    columns: tuple[str, ...]
    strings: tuple[str, ...]


# track (the config's `track:`) -> its prepared format; validate_frame checks a frame against it
PREPARED_FORMATS: dict[str, PreparedFormat] = {
    "nlu": PreparedFormat(columns=("id", "text_a", "text_b", "label"), strings=("id", "text_a", "text_b")),
}
DEFAULT_TRACK = "nlu"
# the nlu format's columns, which the registry's column mappings and sources produce
REQUIRED_COLUMNS = PREPARED_FORMATS["nlu"].columns
META_KEY = b"maskbench"


def _check_labels(labels, where) -> None:
    if not isinstance(labels, list | tuple) or not labels:
        raise DataError(f"{where}: field 'labels' must be a non-empty list of label names, got {labels!r}")
    for name in labels:
        if not isinstance(name, str) or not name:
            raise DataError(f"{where}: field 'labels' has invalid label name {name!r}")
    seen = set()
    for name in labels:
        if name in seen:
            raise DataError(f"{where}: field 'labels' has duplicated value {name!r}")
        seen.add(name)


def _first_bad(series: pd.Series, bad: pd.Series):
    value = series[bad.to_numpy()].iloc[0]
    # Plain Python values read better in messages than np.float64(0.0).
    return value.item() if isinstance(value, np.generic) else value


def _first_row(bad: pd.Series) -> int:
    return int(np.flatnonzero(bad.to_numpy(dtype=bool))[0])


def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def prepared_format(track: str) -> PreparedFormat:
    if track not in PREPARED_FORMATS:
        raise DataError(f"track {track!r} has no prepared format (known: {sorted(PREPARED_FORMATS)})")
    return PREPARED_FORMATS[track]


def _row(row: int) -> str:
    return f"row {row + 1}"


def validate_frame(df: pd.DataFrame, labels, where, track: str = DEFAULT_TRACK, position=_row) -> None:
    """Raise DataError on the first violation of the prepared-data contract of ``track``.

    ``position(row)`` names a row (0-based in the frame) in messages: by default "row N" counting from 1; the
    registry passes a local file's "line N"."""
    fmt = prepared_format(track)
    _check_labels(labels, where)
    for column in fmt.columns:
        if column not in df.columns:
            raise DataError(
                f"{where}: field {column!r} is missing (required columns {list(fmt.columns)}, "
                f"found {list(df.columns)})"
            )
    if len(df) == 0:
        raise DataError(f"{where}: field 'id' has 0 values (empty split, no rows)")

    for column in fmt.strings:
        series = df[column]
        null = series.isna()
        if null.any():
            row = int(np.flatnonzero(null.to_numpy())[0])
            raise DataError(f"{where}: field {column!r} has a null value at {position(row)}")
        not_str = ~series.map(lambda v: isinstance(v, str)).astype(bool)
        if not_str.any():
            value = _first_bad(series, not_str)
            raise DataError(
                f"{where}: field {column!r} has non-string value {value!r} ({type(value).__name__}) at "
                f"{position(_first_row(not_str))}"
            )

    duplicated = df["id"].duplicated()
    if duplicated.any():
        row = _first_row(duplicated)
        value = _first_bad(df["id"], duplicated)
        first = int(np.flatnonzero((df["id"] == value).to_numpy())[0])
        raise DataError(f"{where}: field 'id' has duplicated value {value!r} at {position(row)} "
                        f"(first at {position(first)})")

    label = df["label"]
    null = label.isna()
    if null.any():
        row = int(np.flatnonzero(null.to_numpy())[0])
        raise DataError(f"{where}: field 'label' has a null value at {position(row)}")
    if pd.api.types.is_bool_dtype(label):
        raise DataError(f"{where}: field 'label' has non-integer value {label.iloc[0]!r} (bool)")
    if not pd.api.types.is_integer_dtype(label):
        not_int = ~label.map(_is_int).astype(bool)
        if not_int.any():
            value = _first_bad(label, not_int)
            raise DataError(f"{where}: field 'label' has non-integer value {value!r} ({type(value).__name__}) at "
                            f"{position(_first_row(not_int))}")
    values = label.to_numpy(dtype=np.int64)
    out_of_range = (values < 0) | (values >= len(labels))
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        raise DataError(
            f"{where}: field 'label' has value {int(values[row])} at {position(row)} outside the range "
            f"0..{len(labels) - 1} of labels {list(labels)}"
        )


def write_prepared(df: pd.DataFrame, labels, path, meta: dict, track: str = DEFAULT_TRACK) -> None:
    """Validate, then write df as parquet with {"labels": labels, **meta} under the b"maskbench" key."""
    path = Path(path)
    validate_frame(df, labels, path, track)
    frame = df.reset_index(drop=True).copy()
    frame["label"] = frame["label"].astype("int64")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    payload = {**meta, "labels": list(labels)}
    metadata = dict(table.schema.metadata or {})
    metadata[META_KEY] = json.dumps(payload).encode("utf-8")
    table = table.replace_schema_metadata(metadata)
    with atomic_path(path) as tmp:
        write_checked_table(table, tmp)  # a checksum over data and metadata, checked by read_prepared


def read_prepared(path, track: str = DEFAULT_TRACK) -> tuple[pd.DataFrame, list[str], dict]:
    """Return (df, labels, meta) of a prepared parquet; meta includes "labels".

    A cut or damaged file, or one whose data no longer match the checksum `write_prepared` stored, is refused
    with a DataError naming it (`maskbench.data.checksum`)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: field 'path' has value {str(path)!r} but no such file exists")
    table = read_checked_table(path, DataError, META_KEY)
    raw = table.schema.metadata[META_KEY]
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: field 'metadata' has invalid JSON value {raw[:80]!r}") from err
    labels = meta.get("labels")
    _check_labels(labels, path)
    df = table.to_pandas()
    validate_frame(df, labels, path, track)
    return df, list(labels), meta


def write_prepared_with_summary(df: pd.DataFrame, labels, path, meta: dict, summary_path, summary: dict,
                                track: str = DEFAULT_TRACK) -> None:
    """Write the prepared parquet, then its summary JSON; without its summary the parquet would look finished to
    the workflow, so a failure writing the summary removes the parquet again."""
    write_prepared(df, labels, path, meta, track)
    try:
        atomic_write_json(summary_path, summary)
    except BaseException:
        Path(path).unlink(missing_ok=True)
        raise
