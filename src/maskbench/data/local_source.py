"""Local files: JSON lines, CSV, TSV (GLUE-style, no quoting), parquet."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pandas as pd

from maskbench.data.schema import DataError

FORMATS = ("jsonl", "csv", "tsv", "parquet")
_SUFFIX_FORMAT = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}


def infer_format(path: Path) -> str | None:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return _SUFFIX_FORMAT.get(suffixes[-1]) if suffixes else None


def _open_binary(path: Path):
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _not_utf8(path, raw: bytes, err: UnicodeDecodeError, first_line: int = 1) -> DataError:
    """The DataError for a byte that is not UTF-8: the file, the line and column, the byte."""
    line = first_line + raw.count(b"\n", 0, err.start)
    column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
    return DataError(f"{path}: line {line} has byte {raw[err.start:err.start + 1]!r} at column {column}, which is "
                     f"not UTF-8 ({err.reason}); the file must be UTF-8 encoded")


def decode_line(raw: bytes, path, number: int) -> str:
    """One line of a UTF-8 text file (line ``number``), or a DataError naming the file, line and byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _not_utf8(path, raw, err, number) from err


def read_utf8(path: Path) -> str:
    """The whole (optionally gzipped) file as text; a byte that is not UTF-8 is a DataError naming its line."""
    with _open_binary(path) as handle:
        raw = handle.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _not_utf8(path, raw, err) from err


def _read_json_records(path: Path) -> pd.DataFrame:
    # Parsed by hand rather than pd.read_json so ids like "007" and texts like "NaN" keep their exact value.
    text = read_utf8(path)
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}: field 'json' has invalid JSON array ({err})") from err
    else:
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise DataError(f"{path}: field 'line {number}' has invalid JSON value {line[:80]!r} ({err})") from err
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise DataError(f"{path}: field 'record {number}' has non-object value {record!r:.80}")
    return pd.DataFrame.from_records(records)


def _read_delimited(path: Path, fmt: str) -> pd.DataFrame:
    # dtype=str + keep_default_na=False: a hypothesis "None" or "NA" is text, not a missing value.
    options = {"dtype": str, "keep_default_na": False}
    if fmt == "tsv":
        options.update(sep="\t", quoting=csv.QUOTE_NONE)
    try:
        return pd.read_csv(path, **options)
    except UnicodeDecodeError:
        read_utf8(path)  # raises the DataError naming the line
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{path}: field 'format' has value {fmt!r} but the file does not parse: {err}") from err


def read_local_frame(path, fmt: str | None = None) -> pd.DataFrame:
    """Read a local table; fmt overrides the format inferred from the suffix."""
    path = Path(path)
    fmt = fmt or infer_format(path)
    if fmt not in FORMATS:
        raise DataError(
            f"{path}: field 'format' has value {fmt!r}; use one of {list(FORMATS)} "
            f"(or a suffix {sorted(_SUFFIX_FORMAT)})"
        )
    if not path.is_file():
        raise DataError(f"{path}: field 'path' has value {str(path)!r} but no such file exists")
    if fmt == "jsonl":
        return _read_json_records(path)
    if fmt == "parquet":
        try:
            return pd.read_parquet(path)
        except (OSError, ValueError) as err:
            raise DataError(f"{path}: field 'format' has value 'parquet' but the file does not parse: {err}") from err
    return _read_delimited(path, fmt)
