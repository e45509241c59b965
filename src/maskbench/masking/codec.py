"""Compact files of binary pruning masks.

A pruning run produces one bool array per masked weight matrix (72 matrices, ~85M booleans for a
BERT-base).  Kept-fractions are usually far from 0.5 (0.85-0.99 for magnitude-style methods, 0.1-0.5
for others), so a plain bit-pack (1 bit per element) wastes most of its space: the information content
is only ``n * H(p)`` bits.  This module stores each array in whichever of three encodings is smallest:

``constant``
    all elements equal; no payload at all.
``bitpack``
    ``np.packbits`` of the flattened array; the right choice near p = 0.5, where nothing beats 1 bit.
``rice``
    the positions of the *minority* symbol as gaps (number of majority symbols before each minority
    symbol; the tail after the last one is implied by ``n``), each gap Golomb-Rice coded with parameter
    ``k``.  For geometric gaps (iid masks) Rice coding is within a few percent of the entropy bound.

The Rice code is split into two byte streams so that decoding needs no bit-serial loop:

* the *unary* stream holds, for every gap, ``q = g >> k`` ones followed by one zero.  The zeros are
  found with one ``np.flatnonzero`` and ``q`` is the difference of consecutive zero positions minus 1;
* the *remainder* stream is a fixed-width ``k``-bit field per gap (``g & (2**k - 1)``), MSB first.

Both streams are big-endian bit order (``np.packbits``' default) and zero-padded to whole bytes.  ``k`` is
chosen (0..32) to minimise the exact byte size, which is computed for every ``k`` from a histogram of the
gaps rather than by trial encoding.

File layout, format 2 (see `write_mask_file`)::

    b"MBMASK02" | header length (8 bytes, little-endian uint64) | UTF-8 JSON header
                | CRC32 of every module's payload (4 bytes each, little-endian, in header order)
                | sha256 of everything before it (32 bytes) | payloads

The JSON header is ``{"format": 2, "meta": ..., "modules": [...]}``; every module entry is the
`encode_mask` header plus its ``name``, ``offset`` (relative to the start of the payload section, i.e. to
the first byte after the sha256) and ``nbytes``.

Integrity: the sha256 covers magic, length, JSON header and the CRC table, so a changed byte anywhere before
the payloads is refused ("header checksum mismatch"); each module's payload is checked against its CRC32
before it is decoded, so a changed payload byte is refused naming the module. Both readers check everything
(`read_mask_header` too, though it decodes nothing). The cost is 4 bytes per module plus 32 bytes per file.
Format 1 files (``b"MBMASK01"``, no checksums) are refused with a message saying to rewrite them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from maskbench.runtime import atomic_path

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MaskFileError",
    "decode_mask",
    "encode_mask",
    "entropy_bits",
    "read_mask_file",
    "read_mask_header",
    "write_mask_file",
]

MAGIC = b"MBMASK02"
FORMAT_VERSION = 2
# magic -> format of the older layouts this reader recognises (and refuses with a clear message)
_OLD_MAGICS = {b"MBMASK01": 1}
_CRC_BYTES = 4  # per module: zlib.crc32 of its payload
_SHA_BYTES = 32  # per file: sha256 of magic, length, JSON header and CRC table
ENCODINGS = ("constant", "bitpack", "rice")
MAX_K = 32
# Gaps below this go through a bincount when sizing every k; larger ones (at most n / _HIST_LIMIT of them)
# are summed directly.  Keeps the cost of sizing 33 parameters at ~one pass over the gaps.
_HIST_LIMIT = 1 << 16
_PREFIX_BYTES = len(MAGIC) + 8
# Blocks of 8 remainder fields handled per step: big enough to amortise numpy call overhead, small
# enough that the strided column passes stay in cache.
_BLOCK_CHUNK = 1 << 14


class MaskFileError(ValueError):
    """A mask file (or the masks handed to `write_mask_file`) is malformed; the message names the file."""


# --------------------------------------------------------------------------------------------------------
# entropy


def entropy_bits(n: int, n_ones: int) -> float:
    """``n * H(n_ones / n)`` in bits: the size an ideal iid coder needs, our yardstick for the codec.

    Computed as ``n1 * log2(n / n1) + n0 * log2(n / n0)`` rather than via ``p`` so that very skewed
    masks do not lose precision.  Returns 0.0 for empty and all-same arrays.
    """
    n = int(n)
    n_ones = int(n_ones)
    if n < 0 or not 0 <= n_ones <= n:
        raise ValueError(f"need 0 <= n_ones <= n, got n={n}, n_ones={n_ones}")
    n_zeros = n - n_ones
    if n_ones == 0 or n_zeros == 0:
        return 0.0
    return n_ones * math.log2(n / n_ones) + n_zeros * math.log2(n / n_zeros)


# --------------------------------------------------------------------------------------------------------
# Rice coding of gap arrays (vectorised)


def _gaps(flat: np.ndarray, minority: int) -> np.ndarray:
    """Number of majority symbols before each minority symbol (int64)."""
    positions = np.flatnonzero(flat) if minority == 1 else np.flatnonzero(~flat)
    gaps = np.empty_like(positions)
    if positions.size:
        gaps[0] = positions[0]
        np.subtract(positions[1:], positions[:-1], out=gaps[1:])
        gaps[1:] -= 1
    return gaps


def _rice_sizes(gaps: np.ndarray) -> np.ndarray:
    """Exact payload bytes (unary + remainder stream) of the Rice code for every k in 0..MAX_K.

    Unary bits are ``sum(g >> k) + c`` and remainder bits ``c * k``.  ``sum(g >> k)`` is evaluated for all
    k from a histogram of the small gaps plus the (few) large ones, so sizing costs about one pass over
    the gaps instead of 33.
    """
    c = int(gaps.size)
    ks = np.arange(MAX_K + 1, dtype=np.int64)
    if c == 0:
        return np.zeros(ks.size, dtype=np.int64)
    largest = int(gaps.max())
    if largest < _HIST_LIMIT:
        counts = np.bincount(gaps, minlength=largest + 1)
        large = gaps[:0]
    else:
        small = gaps < _HIST_LIMIT
        counts = np.bincount(gaps[small], minlength=_HIST_LIMIT)
        large = gaps[~small]
    values = np.arange(counts.size, dtype=np.int64)
    quotient_sums = (counts.astype(np.int64)[None, :] * (values[None, :] >> ks[:, None])).sum(axis=1)
    if large.size:
        quotient_sums = quotient_sums + (large[None, :] >> ks[:, None]).sum(axis=1)
    unary_bytes = (quotient_sums + c + 7) // 8
    remainder_bytes = (c * ks + 7) // 8
    return unary_bytes + remainder_bytes


def _encode_unary(gaps: np.ndarray, k: int) -> bytes:
    """``q = g >> k`` ones then a zero for each gap, packed MSB first.

    The zero terminating gap i sits at bit ``sum(q[:i+1] + 1) - 1``; everything else is a one.  The
    array gets one leading spare bit so that the cumulative sum can be used as the index unchanged.
    """
    zero_at = gaps >> k
    zero_at += 1
    np.cumsum(zero_at, out=zero_at)
    total = int(zero_at[-1]) if zero_at.size else 0
    bits = np.ones(total + 1, dtype=bool)
    bits[zero_at] = False
    return np.packbits(bits[1:]).tobytes()


def _decode_unary(stream: bytes | memoryview, count: int) -> np.ndarray:
    """Bit positions of the first ``count`` zeros of the unary stream (int64), i.e. the terminators."""
    # Inverting the bytes first turns "positions of zeros" into one flatnonzero (on a bool view: numpy's
    # nonzero is several times faster on bool than on uint8).  The padding zeros of the last byte become
    # ones *after* the real terminators, so the first ``count`` hits are the real ones.
    inverted = np.bitwise_not(np.frombuffer(stream, dtype=np.uint8))
    zero_at = np.flatnonzero(np.unpackbits(inverted).view(bool))
    if zero_at.size < count:
        raise ValueError(f"unary stream holds {zero_at.size} terminators, expected {count}")
    return zero_at[:count]


def _field_layout(k: int) -> list[tuple[int, int, int]]:
    """Where field t of every 8-field block sits: (first byte, bit offset, bytes spanned), t = 0..7.

    Eight k-bit fields fill exactly k bytes, so the layout repeats every k bytes and field t never
    leaves its block.  Working column by column over blocks replaces per-field index arithmetic (and a
    per-bit matrix) with 8 strided slices, each touching at most 5 bytes per block.
    """
    layout = []
    for t in range(8):
        first_byte, offset = divmod(t * k, 8)
        layout.append((first_byte, offset, (offset + k + 7) // 8))
    return layout


def _encode_remainders(gaps: np.ndarray, k: int) -> bytes:
    """The low k bits of every gap as fixed-width fields, MSB first (field i starts at stream bit i*k)."""
    count = int(gaps.size)
    if k == 0 or count == 0:
        return b""
    blocks = -(-count // 8)
    fields = np.zeros(blocks * 8, dtype=np.int64)
    np.bitwise_and(gaps, (1 << k) - 1, out=fields[:count])
    fields = fields.reshape(blocks, 8)
    out = np.zeros((blocks, k), dtype=np.uint8)
    layout = _field_layout(k)
    # Chunks of blocks keep the strided column passes inside the cache.
    for lo in range(0, blocks, _BLOCK_CHUNK):
        chunk, target = fields[lo : lo + _BLOCK_CHUNK], out[lo : lo + _BLOCK_CHUNK]
        for t, (first_byte, offset, span) in enumerate(layout):
            aligned = chunk[:, t] << (8 * span - offset - k)  # the field's last bit ends its span
            for u in range(span):
                # astype(uint8) keeps the low byte: the field's bits that fall into byte first_byte + u
                target[:, first_byte + u] |= (aligned >> (8 * (span - 1 - u))).astype(np.uint8)
    return out.tobytes()[: (count * k + 7) // 8]


def _decode_remainders(stream: bytes | memoryview, count: int, k: int) -> np.ndarray:
    """Inverse of `_encode_remainders` (int64), column by column over 8-field blocks."""
    if k == 0 or count == 0:
        return np.zeros(count, dtype=np.int64)
    blocks = -(-count // 8)
    raw = np.frombuffer(stream, dtype=np.uint8)
    stream_bytes = np.zeros(blocks * k, dtype=np.uint8)
    stream_bytes[: raw.size] = raw
    stream_bytes = stream_bytes.reshape(blocks, k)
    values = np.empty((blocks, 8), dtype=np.int64)
    layout = _field_layout(k)
    for lo in range(0, blocks, _BLOCK_CHUNK):
        chunk, target = stream_bytes[lo : lo + _BLOCK_CHUNK], values[lo : lo + _BLOCK_CHUNK]
        for t, (first_byte, offset, span) in enumerate(layout):
            acc = chunk[:, first_byte].astype(np.int64)
            for u in range(1, span):
                acc <<= 8
                acc |= chunk[:, first_byte + u]
            acc >>= 8 * span - offset - k
            acc &= (1 << k) - 1
            target[:, t] = acc
    return values.reshape(-1)[:count]


# --------------------------------------------------------------------------------------------------------
# one array


def _check_mask(mask: Any) -> np.ndarray:
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"mask must be a numpy bool array, got {type(mask).__name__}")
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be a numpy bool array, got dtype {mask.dtype}")
    return mask


def encode_mask(mask: np.ndarray, *, encoding: str | None = None, k: int | None = None) -> tuple[dict, bytes]:
    """Encode one bool array (any shape, C order) as ``(header, payload)``; the header is JSON-serialisable.

    By default the smallest of constant / bitpack / Rice (best k) is chosen, ties going to the simpler
    encoding.  ``encoding`` forces an encoding and ``k`` forces Rice with that parameter; both exist for
    tests and size studies.

    Header keys: ``shape``, ``n``, ``n_ones``, ``encoding``, ``k``, ``minority`` (the symbol whose
    positions the Rice code stores: 1 if ones are fewer than zeros, else 0), ``unary_bytes`` and
    ``remainder_bytes`` (the Rice streams' lengths; the payload is the unary stream then the remainder
    stream; both are 0 for the other encodings).
    """
    mask = _check_mask(mask)
    flat = mask.reshape(-1)
    n = int(flat.size)
    n_ones = int(np.count_nonzero(flat))
    minority = 1 if 2 * n_ones < n else 0
    constant = n_ones in (0, n)
    bitpack_bytes = (n + 7) // 8

    if encoding is not None and encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; expected one of {ENCODINGS}")
    if encoding == "constant" and not constant:
        raise ValueError(f"encoding 'constant' needs an all-same array, got {n_ones} ones out of {n}")
    if k is not None and not 0 <= int(k) <= MAX_K:
        raise ValueError(f"k must be in 0..{MAX_K}, got {k}")
    if k is not None and encoding not in (None, "rice"):
        raise ValueError(f"k only applies to the rice encoding, not {encoding!r}")
    if k is not None:
        encoding = "rice"

    gaps: np.ndarray | None = None
    if encoding is None:
        if constant:
            encoding = "constant"
        else:
            gaps = _gaps(flat, minority)
            sizes = _rice_sizes(gaps)
            best_k = int(np.argmin(sizes))
            if int(sizes[best_k]) < bitpack_bytes:
                encoding, k = "rice", best_k
            else:
                encoding = "bitpack"
    elif encoding == "rice" and k is None:
        gaps = _gaps(flat, minority)
        k = int(np.argmin(_rice_sizes(gaps)))

    header: dict[str, Any] = {
        "shape": [int(s) for s in mask.shape],
        "n": n,
        "n_ones": n_ones,
        "encoding": encoding,
        "k": 0,
        "minority": minority,
        "unary_bytes": 0,
        "remainder_bytes": 0,
    }
    if encoding == "constant":
        payload = b""
    elif encoding == "bitpack":
        payload = np.packbits(flat).tobytes()
    else:
        k = int(k)  # type: ignore[arg-type]
        if gaps is None:
            gaps = _gaps(flat, minority)
        unary = _encode_unary(gaps, k)
        remainder = _encode_remainders(gaps, k)
        header.update(k=k, unary_bytes=len(unary), remainder_bytes=len(remainder))
        payload = unary + remainder
    return header, payload


def _header_int(header: dict, key: str) -> int:
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"header field {key!r} must be an integer, got {value!r}")
    return value


def decode_mask(header: dict, payload: bytes) -> np.ndarray:
    """Inverse of `encode_mask`: a bool array of ``header["shape"]``.

    Raises ValueError when the header is inconsistent, the payload has the wrong length, or the decoded
    array does not have ``n_ones`` ones (the cheap integrity check that catches most corruption).
    """
    shape = header.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ValueError(f"header field 'shape' must be a list of non-negative integers, got {shape!r}")
    n = _header_int(header, "n")
    n_ones = _header_int(header, "n_ones")
    if math.prod(shape) != n:
        raise ValueError(f"shape {shape} has {math.prod(shape)} elements but n is {n}")
    if not 0 <= n_ones <= n:
        raise ValueError(f"n_ones={n_ones} is outside 0..n={n}")
    encoding = header.get("encoding")
    payload = bytes(payload) if not isinstance(payload, bytes | memoryview) else payload
    size = len(payload)

    if encoding == "constant":
        if size:
            raise ValueError(f"constant encoding carries no payload, got {size} bytes")
        if n_ones not in (0, n):
            raise ValueError(f"constant encoding but n_ones={n_ones} of n={n}")
        flat = np.full(n, n_ones == n and n > 0, dtype=bool)
    elif encoding == "bitpack":
        if size != (n + 7) // 8:
            raise ValueError(f"bitpack payload must be {(n + 7) // 8} bytes, got {size}")
        flat = np.unpackbits(np.frombuffer(payload, dtype=np.uint8), count=n).view(bool)
    elif encoding == "rice":
        k = _header_int(header, "k")
        minority = _header_int(header, "minority")
        unary_bytes = _header_int(header, "unary_bytes")
        remainder_bytes = _header_int(header, "remainder_bytes")
        if not 0 <= k <= MAX_K or minority not in (0, 1):
            raise ValueError(
                f"rice needs 0 <= k <= {MAX_K} and minority in (0, 1), got k={k}, minority={minority}"
            )
        count = n_ones if minority == 1 else n - n_ones
        if (
            unary_bytes < 0
            or remainder_bytes != (count * k + 7) // 8
            or size != unary_bytes + remainder_bytes
        ):
            raise ValueError(
                f"rice payload of {size} bytes does not match unary_bytes={unary_bytes} + "
                f"remainder_bytes={remainder_bytes} (expected {(count * k + 7) // 8} for {count} gaps, k={k})"
            )
        view = memoryview(payload)
        # With z_i the bit position of terminator i, sum(q[:i+1]) = z_i - i, so the position of minority
        # symbol i is (z_i - i) * 2**k + sum(r[:i+1]) + i: no per-gap diff, one cumsum.
        # Folding "- i" into the remainders: (z_i << k) + cumsum(r - (2**k - 1)) + (2**k - 1).
        positions = _decode_unary(view[:unary_bytes], count)
        if k and count:
            remainders = _decode_remainders(view[unary_bytes:], count, k)
            remainders -= (1 << k) - 1
            remainders[0] += (1 << k) - 1
            np.cumsum(remainders, out=remainders)
            positions <<= k
            positions += remainders
        if positions.size and positions[-1] >= n:
            raise ValueError(f"rice gaps run past the end of the array (position {positions[-1]} >= n={n})")
        flat = np.full(n, minority == 0, dtype=bool)
        flat[positions] = minority == 1
    else:
        raise ValueError(f"unknown encoding {encoding!r}; expected one of {ENCODINGS}")

    decoded_ones = int(np.count_nonzero(flat))
    if decoded_ones != n_ones:
        raise ValueError(f"decoded array has {decoded_ones} ones but the header says n_ones={n_ones}")
    return flat.reshape(shape)


# --------------------------------------------------------------------------------------------------------
# files


def write_mask_file(path: str | os.PathLike, masks: dict[str, np.ndarray], meta: dict) -> dict:
    """Write ``masks`` (order preserved) and ``meta`` to one file, atomically; return size statistics.

    Every value is validated before anything is written, so a bad module never leaves a partial file.
    The file appears only via ``os.replace`` of a temporary file in the same folder, so a killed job
    never leaves half a file behind.

    Returned stats (bytes unless stated): ``file_bytes`` (= ``header_bytes + payload_bytes``, header
    counting magic, length field and checksums), ``checksum_bytes`` (4 per module + 32), ``entropy_bytes`` (sum of per-module ``entropy_bits / 8``),
    ``global_entropy_bytes`` (``N * H(overall density) / 8``), ``bitpack_bytes`` (sum of ``ceil(n / 8)``),
    ``n_elements`` and ``density`` (overall fraction of ones).
    """
    path = Path(path)
    if not isinstance(masks, dict):
        raise MaskFileError(f"{path}: masks must be a dict of name -> bool array, got {type(masks).__name__}")
    for name, mask in masks.items():
        if not isinstance(name, str):
            raise MaskFileError(f"{path}: module names must be strings, got {name!r}")
        if not isinstance(mask, np.ndarray):
            raise MaskFileError(
                f"{path}: module {name!r} must be a numpy bool array, got {type(mask).__name__}"
            )
        if mask.dtype != np.bool_:
            raise MaskFileError(f"{path}: module {name!r} must be a numpy bool array, got dtype {mask.dtype}")

    modules: list[dict[str, Any]] = []
    payloads: list[bytes] = []
    offset = 0
    n_total = ones_total = bitpack_total = 0
    entropy_total = 0.0
    for name, mask in masks.items():
        header, payload = encode_mask(mask)
        modules.append({"name": name, **header, "offset": offset, "nbytes": len(payload)})
        payloads.append(payload)
        offset += len(payload)
        n_total += header["n"]
        ones_total += header["n_ones"]
        bitpack_total += (header["n"] + 7) // 8
        entropy_total += entropy_bits(header["n"], header["n_ones"])

    try:
        header_json = json.dumps(
            {"format": FORMAT_VERSION, "meta": meta, "modules": modules},
            separators=(",", ":"),
            allow_nan=False,
        ).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise MaskFileError(f"{path}: meta is not JSON-serialisable: {err}") from err

    prefix = MAGIC + len(header_json).to_bytes(8, "little") + header_json
    crc_table = b"".join(zlib.crc32(payload).to_bytes(_CRC_BYTES, "little") for payload in payloads)
    digest = hashlib.sha256(prefix + crc_table).digest()
    size = len(prefix) + len(crc_table) + len(digest) + sum(len(payload) for payload in payloads)
    with atomic_path(path, size=size) as tmp, open(tmp, "wb") as handle:
        handle.write(prefix)
        handle.write(crc_table)
        handle.write(digest)
        for payload in payloads:
            handle.write(payload)

    checksum_bytes = len(crc_table) + len(digest)
    header_bytes = len(prefix) + checksum_bytes
    return {
        "file_bytes": header_bytes + offset,
        "payload_bytes": offset,
        "header_bytes": header_bytes,
        "checksum_bytes": checksum_bytes,
        "entropy_bytes": entropy_total / 8,
        "global_entropy_bytes": entropy_bits(n_total, ones_total) / 8,
        "bitpack_bytes": bitpack_total,
        "n_elements": n_total,
        "density": ones_total / n_total if n_total else 0.0,
    }


def _read_verified(path: Path) -> tuple[dict, memoryview]:
    """Read the whole file; check magic, layout, the header's sha256 and every payload's CRC32.

    Returns (header, payload section). Every failure is a MaskFileError naming the file, and the module when
    its payload is at fault.
    """
    try:
        data = path.read_bytes()
    except OSError as err:
        raise MaskFileError(f"{path}: cannot read the mask file: {err.strerror or err}") from err
    file_size = len(data)
    magic = data[: len(MAGIC)]
    if magic in _OLD_MAGICS:
        raise MaskFileError(
            f"{path}: mask file format {_OLD_MAGICS[magic]} has no checksums and is no longer read "
            f"(this maskbench reads format {FORMAT_VERSION}); rerun the job that wrote it (snakemake -f <file>)"
        )
    if magic != MAGIC:
        raise MaskFileError(f"{path}: not a maskbench mask file (magic {magic!r}, expected {MAGIC!r})")
    if file_size < _PREFIX_BYTES:
        raise MaskFileError(f"{path}: truncated: file ends inside the header length field")
    header_len = int.from_bytes(data[len(MAGIC) : _PREFIX_BYTES], "little")
    if _PREFIX_BYTES + header_len > file_size:
        raise MaskFileError(
            f"{path}: truncated or corrupted: header claims {header_len} bytes but only "
            f"{file_size - _PREFIX_BYTES} follow the length field"
        )
    header_end = _PREFIX_BYTES + header_len
    try:
        header = json.loads(data[_PREFIX_BYTES:header_end].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise MaskFileError(f"{path}: corrupted: header is not valid UTF-8 JSON: {err}") from err
    if not isinstance(header, dict) or not isinstance(header.get("modules"), list):
        raise MaskFileError(f"{path}: corrupted: header must be a JSON object with a 'modules' list")
    modules = header["modules"]
    table_end = header_end + _CRC_BYTES * len(modules)
    payload_start = table_end + _SHA_BYTES
    if payload_start > file_size:
        raise MaskFileError(
            f"{path}: truncated: the checksums of {len(modules)} modules need bytes {header_end}..{payload_start} "
            f"but the file has {file_size}"
        )
    stored = data[table_end:payload_start]
    computed = hashlib.sha256(memoryview(data)[:table_end]).digest()
    if stored != computed:
        raise MaskFileError(
            f"{path}: corrupted: header checksum mismatch (sha256 stored {stored.hex()[:16]}..., computed "
            f"{computed.hex()[:16]}...): a byte of the header or of its checksums changed"
        )
    if header.get("format") != FORMAT_VERSION:
        raise MaskFileError(f"{path}: unsupported format {header.get('format')!r}, expected {FORMAT_VERSION}")

    payload_size = file_size - payload_start
    end = 0
    for index, module in enumerate(modules):
        if not isinstance(module, dict) or not isinstance(module.get("name"), str):
            raise MaskFileError(f"{path}: module entry {index} is not an object with a string 'name'")
        offset, nbytes = module.get("offset"), module.get("nbytes")
        if not (isinstance(offset, int) and isinstance(nbytes, int) and offset >= 0 and nbytes >= 0):
            raise MaskFileError(
                f"{path}: module {module['name']!r} has invalid offset/nbytes {offset!r}/{nbytes!r}"
            )
        if offset + nbytes > payload_size:
            raise MaskFileError(
                f"{path}: truncated: module {module['name']!r} needs payload bytes {offset}..{offset + nbytes} "
                f"but the payload section has {payload_size}"
            )
        end = max(end, offset + nbytes)
    if end != payload_size:
        raise MaskFileError(f"{path}: {payload_size - end} unexpected bytes after the last payload")

    payloads = memoryview(data)[payload_start:]
    for index, module in enumerate(modules):
        at = header_end + _CRC_BYTES * index
        stored_crc = int.from_bytes(data[at : at + _CRC_BYTES], "little")
        computed_crc = zlib.crc32(payloads[module["offset"] : module["offset"] + module["nbytes"]])
        if stored_crc != computed_crc:
            raise MaskFileError(
                f"{path}: module {module['name']!r}: corrupted payload (CRC32 stored {stored_crc:08x}, computed "
                f"{computed_crc:08x}; payload bytes {module['offset']}..{module['offset'] + module['nbytes']})"
            )
    return header, payloads


def read_mask_header(path: str | os.PathLike) -> dict:
    """The parsed JSON header (format, meta, modules) without decoding any payload.

    Checks the whole file all the same (layout, the header's sha256, every payload's CRC32: about a
    millisecond per megabyte), so a truncated or corrupted file fails here too.
    """
    header, _ = _read_verified(Path(path))
    return header


def read_mask_file(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """Decode every module: ``(masks by name in file order, meta)``; any inconsistency is a MaskFileError."""
    path = Path(path)
    header, view = _read_verified(path)
    masks: dict[str, np.ndarray] = {}
    for module in header["modules"]:
        name = module["name"]
        if name in masks:
            raise MaskFileError(f"{path}: module {name!r} appears twice")
        try:
            masks[name] = decode_mask(module, view[module["offset"] : module["offset"] + module["nbytes"]])
        except ValueError as err:
            raise MaskFileError(f"{path}: module {name!r}: {err}") from err
    return masks, header.get("meta", {})
