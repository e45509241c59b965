"""A checksum over a parquet file's data, kept in its own schema metadata and checked by every reader.

The writers of prepared data (`maskbench.data.schema`) and of bias probabilities
(`maskbench.tracks.nlu.bias.probs`) store, under the metadata key ``b"maskbench.sha256"``, the sha256 of

* the schema metadata as stored (``b"maskbench"``: labels, task, provenance; ``b"pandas"``), and
* every column's name and values in a canonical form (validity bitmap, then fixed-width values as
  little-endian bytes, or strings as lengths plus their bytes), independent of how parquet chunks them.

The pages are also written with parquet's own CRC32 page checksums and read with their verification on, so
a damaged page fails before it is decoded. `read_checked_table` reads a file, turns every failure of a cut or
damaged file (pyarrow's ``ArrowInvalid``, ``OSError``) into a `DataError` naming the file, and refuses a file
whose data or metadata do not match the stored checksum, or that has none.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

CHECKSUM_KEY = b"maskbench.sha256"
_STRINGS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)


def _update_column(digest, name: str, column: pa.ChunkedArray) -> None:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = "string" if any(test(array.type) for test in _STRINGS) else str(array.type)
    digest.update(json.dumps([name, kind, len(array)]).encode("utf-8"))
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    digest.update(np.packbits(valid).tobytes())
    if kind == "string":
        if array.null_count:  # null slots may hold bytes: make them empty (the validity above tells them apart)
            array = pc.if_else(array.is_valid(), array, pa.scalar(b"" if "binary" in str(array.type) else "",
                                                                    array.type))
        array = array.cast(pa.large_binary())
        offsets = np.frombuffer(array.buffers()[1], dtype="<i8")[array.offset : array.offset + len(array) + 1]
        digest.update(np.diff(offsets).astype("<i8").tobytes())
        data = array.buffers()[2]
        if data is not None and len(array):
            digest.update(memoryview(data)[int(offsets[0]) : int(offsets[-1])])
    elif pa.types.is_boolean(array.type) or pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        filled = array.fill_null(False if pa.types.is_boolean(array.type) else 0) if array.null_count else array
        values = filled.to_numpy(zero_copy_only=False)
        digest.update(values.astype(values.dtype.newbyteorder("<")).tobytes())
    else:  # anything else (dates, lists, dictionaries) through its Python values
        digest.update(json.dumps(array.to_pylist(), default=str, sort_keys=True).encode("utf-8"))


def table_checksum(table: pa.Table) -> str:
    """sha256 (hex) of the table's schema metadata (but the checksum itself and Arrow's own keys) and of every
    column's name and values."""
    digest = hashlib.sha256()
    metadata = table.schema.metadata or {}
    for key in sorted(k for k in metadata if k != CHECKSUM_KEY and not k.startswith(b"ARROW:")):
        for part in (key, metadata[key]):
            digest.update(len(part).to_bytes(8, "little") + part)
    digest.update(table.num_rows.to_bytes(8, "little"))
    for name, column in zip(table.column_names, table.columns, strict=True):
        _update_column(digest, name, column)
    return digest.hexdigest()


def with_checksum(table: pa.Table) -> pa.Table:
    """The table with its checksum added to the schema metadata (set the rest of the metadata first)."""
    metadata = dict(table.schema.metadata or {})
    metadata[CHECKSUM_KEY] = table_checksum(table).encode("ascii")
    return table.replace_schema_metadata(metadata)


def write_checked_table(table: pa.Table, path) -> None:
    """Write ``table`` to ``path`` (already a temporary name: the callers go through ``runtime.atomic_path``) with
    its checksum in the metadata and parquet's CRC32 page checksums."""
    pq.write_table(with_checksum(table), path, write_page_checksum=True)


def read_checked_table(path, error=ValueError, meta_key: bytes = b"maskbench") -> pa.Table:
    """Read a parquet file written by `write_checked_table` and check its checksum; failures raise ``error``
    (the callers pass their DataError) with the file's path in the message. A file without ``meta_key`` in its
    metadata was not written by maskbench at all."""
    path = Path(path)
    try:
        table = pq.read_table(path, page_checksum_verification=True)
        metadata = table.schema.metadata or {}
        computed = table_checksum(table)  # decodes the column names too
    except Exception as err:  # ArrowInvalid, OSError, UnicodeDecodeError, ...: whatever a damaged file raises
        raise error(f"{path}: not a readable parquet file (truncated or damaged?): {type(err).__name__}: {err}") \
            from err
    if meta_key not in metadata:
        raise error(f"{path}: field 'metadata' has no {meta_key.decode()!r} key (not a file maskbench wrote)")
    stored = metadata.get(CHECKSUM_KEY)
    if stored is None:
        raise error(f"{path}: field 'metadata' has no {CHECKSUM_KEY.decode()!r} checksum: not written by this "
                    f"maskbench (or written before checksums); rerun the job that wrote it")
    if stored.decode("ascii", "replace") != computed:
        raise error(f"{path}: field 'metadata' has checksum {stored.decode('ascii', 'replace')[:16]}... but the "
                    f"data give {computed[:16]}...: the file is corrupted; rerun the job that wrote it")
    return table


def sha256_file(path: str | Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (what `sha256sum` prints)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
