"""Local files: JSON lines, CSV, TSV (GLUE-style, no quoting), parquet."""

from __future__ import annotations

import csv
import gzip
import json
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class LocalTable:
    """A local file's rows with where each came from.

    ``lines[row]`` is the file line the row starts on (counting from 1; the header of a csv/tsv file is line 1, the
    first record of a JSON-lines file is line 1), None for files without lines (parquet, a JSON array: there a row
    is named by its position counting from 1). ``absent`` maps a source column to the first row whose record lacks
    it, with the columns that row has (a JSON-lines record without the key, a csv/tsv line with fewer fields than
    the header): such a row holds no value, not a null one, and its message names the source key."""

    frame: pd.DataFrame
    path: Path
    lines: list[int] | None = None
    record_kind: str = "row"
    absent: dict[str, tuple[int, tuple]] = field(default_factory=dict)

    def position(self, row: int) -> str:
        """Where row ``row`` (0-based, as in the frame) is in the file: "line N", else "row N" / "record N"."""
        if self.lines is not None and 0 <= row < len(self.lines):
            return f"line {self.lines[row]}"
        return f"{self.record_kind} {row + 1}"


def _read_json_records(path: Path) -> LocalTable:
    # Parsed by hand rather than pd.read_json so ids like "007" and texts like "NaN" keep their exact value.
    text = read_utf8(path)
    lines = None
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}: field 'json' has invalid JSON array ({err})") from err
        for number, record in enumerate(records, start=1):
            if not isinstance(record, dict):
                raise DataError(f"{path}: record {number} has non-object value {record!r:.80}")
    else:
        records, lines = [], []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}: field 'line {number}' has invalid JSON value {line[:80]!r} ({err})") from err
            if not isinstance(record, dict):
                raise DataError(f"{path}: line {number} has non-object value {record!r:.80}")
            records.append(record)
            lines.append(number)
    frame = pd.DataFrame.from_records(records)
    absent = {}
    for column in frame.columns:
        for row, record in enumerate(records):
            if column not in record:
                absent[column] = (row, tuple(record))
                break
    return LocalTable(frame, path, lines, "record", absent)


def _record_lines(path: Path, fmt: str, n_rows: int) -> tuple[list[int] | None, list[int]]:
    """The line each data record of a csv/tsv file starts on, and each record's number of fields (blank lines
    skipped, as pandas skips them); None when the count disagrees with pandas' rows."""
    options = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if fmt == "tsv" else {}
    lines, widths = [], []
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, **options)
        start = 1
        for number, record in enumerate(reader):
            if number > 0 and record:
                lines.append(start)
                widths.append(len(record))
            start = reader.line_num + 1
    if len(lines) != n_rows:
        return None, []
    return lines, widths


def _read_delimited(path: Path, fmt: str) -> LocalTable:
    # dtype=str + keep_default_na=False: a hypothesis "None" or "NA" is text, not a missing value.
    options = {"dtype": str, "keep_default_na": False}
    if fmt == "tsv":
        options.update(sep="\t", quoting=csv.QUOTE_NONE)
    try:
        frame = pd.read_csv(path, **options)
    except UnicodeDecodeError:
        read_utf8(path)  # raises the DataError naming the line
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{path}: field 'format' has value {fmt!r} but the file does not parse: {err}") from err
    lines, widths = _record_lines(path, fmt, len(frame))
    absent = {}
    for row, width in enumerate(widths):
        for column in frame.columns[width:]:  # a short line: pandas fills the fields it lacks
            absent.setdefault(column, (row, tuple(frame.columns[:width])))
    return LocalTable(frame, path, lines, "row", absent)


def read_local_table(path, fmt: str | None = None) -> LocalTable:
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
            return LocalTable(pd.read_parquet(path), path)
        except (OSError, ValueError) as err:
            raise DataError(f"{path}: field 'format' has value 'parquet' but the file does not parse: {err}") from err
    return _read_delimited(path, fmt)

