"""Model checkpoints are checksummed as mask files are: a sha256 in the safetensors header, checked on every load.

Every model file maskbench writes — a fine-tuned classifier, a bias model or a paper C subnetwork
(``checkpoints.write_checkpoint``), a gender encoder, masked-LM head or shrunk encoder, a vision model — is a
safetensors file whose header metadata holds ``maskbench_sha256``: the sha256 of the whole file as written, with
the 64 hex digits of the digest itself read as ``0`` (the 8-byte header length, the JSON header with every
tensor's name, dtype, shape and offsets and every other metadata field, and all tensor bytes). ``seal_safetensors``
adds it to a file just written (only the header is rewritten, its metadata in sorted order so that the same model
always gives the same bytes; the tensor bytes stay as the writer left them), and
``verify_safetensors`` refuses, naming the file, a file whose bytes hash to anything else — a flipped bit anywhere
is found before the loader reads a tensor, not as a strange accuracy later.

A file without the field (written before checkpoints were checksummed) is refused too, with a message saying how
to go on: rerun the job that wrote it, or, for a file you trust, add the checksum with
``python -m maskbench.tools.seal_checkpoint FILE``. A model that maskbench did not write (a pretrained model from
the Hub or a package) carries no checksum and is not checked: ``verify_checkpoint_folder`` checks a folder only
when ``write_checkpoint`` finished it (its ``train_summary.json`` is there).

Light on purpose (standard library only): the tracks import it, and so does the sealing tool.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from maskbench.runtime import atomic_path

DIGEST_KEY = "maskbench_sha256"
METADATA_KEY = "__metadata__"
WEIGHTS_FILE = "model.safetensors"
SUMMARY_FILE = "train_summary.json"  # what write_checkpoint writes last: the folder is a finished maskbench run
_PLACEHOLDER = "0" * 64
_HEX64 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded (cut, damaged, changed since it was written, or without its checksum);
    the message names the file."""


def _read_header(path: Path) -> tuple[bytes, dict, int]:
    """The raw JSON header, parsed, and the byte where the tensors start; a cut or garbled file is a
    CheckpointError naming it (the header length, the JSON header and the tensors' extent must agree with the
    file's size; safetensors itself says only "incomplete metadata")."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        length_field = handle.read(8)
        if len(length_field) < 8:
            raise CheckpointError(f"{path}: truncated: {size} bytes, less than the 8-byte header length")
        header_len = int.from_bytes(length_field, "little")
        if 8 + header_len > size:
            raise CheckpointError(f"{path}: truncated or corrupted: the header claims {header_len} bytes but the "
                                  f"file has {size}")
        raw = handle.read(header_len)
    try:
        header = json.loads(raw)
        ends = [int(entry["data_offsets"][1]) for name, entry in header.items() if name != METADATA_KEY]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as err:
        raise CheckpointError(f"{path}: corrupted: the safetensors header does not parse ({err})") from err
    needed = 8 + header_len + max(ends, default=0)
    if needed != size:
        raise CheckpointError(f"{path}: {'truncated' if needed > size else 'corrupted'}: its tensors end at byte "
                              f"{needed} but the file has {size} bytes")
    return raw, header, 8 + header_len


def check_safetensors(path: str | Path) -> None:
    """Refuse a cut or garbled safetensors file, naming it (its structure only; `verify_safetensors` also checks
    the bytes against the checksum)."""
    _read_header(Path(path))


def _digest_field(digest: str) -> bytes:
    return f'"{DIGEST_KEY}":"{digest}"'.encode()


def _hash_rest(hasher, handle) -> None:
    while chunk := handle.read(_CHUNK):
        hasher.update(chunk)


def seal_safetensors(path: str | Path) -> str:
    """Write the checksum into the header of the safetensors file at ``path`` (replacing one it has); the tensors'
    bytes are not touched. Atomic. Returns the digest."""
    path = Path(path)
    _, header, data_start = _read_header(path)
    metadata = header.get(METADATA_KEY) or {}
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{path}: corrupted: field {METADATA_KEY!r} of the header is not an object")
    # in a fixed order (safetensors writes its metadata in hash-map order, which changes from run to run), so that
    # the same tensors and metadata always give the same bytes and the same checksum
    metadata = {key: metadata[key] for key in sorted(metadata) if key != DIGEST_KEY}
    metadata[DIGEST_KEY] = _PLACEHOLDER
    tensors = {name: entry for name, entry in header.items() if name != METADATA_KEY}
    text = json.dumps({METADATA_KEY: metadata, **tensors}, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the tensors start 8-byte aligned, as safetensors writes them
    length = len(text).to_bytes(8, "little")
    hasher = hashlib.sha256(length + text)
    with atomic_path(path) as tmp:
        with open(path, "rb") as source, open(tmp, "wb") as out:
            out.write(length + text)
            source.seek(data_start)
            while chunk := source.read(_CHUNK):
                hasher.update(chunk)
                out.write(chunk)
            digest = hasher.hexdigest()
            out.seek(8 + text.index(_digest_field(_PLACEHOLDER)))
            out.write(_digest_field(digest))
    return digest


def verify_safetensors(path: str | Path) -> dict:
    """Check a safetensors file maskbench wrote against the checksum in its header; returns its header metadata.

    A cut, garbled or changed file, and one without a checksum, is a CheckpointError naming the file."""
    path = Path(path)
    raw, header, data_start = _read_header(path)
    metadata = header.get(METADATA_KEY)
    recorded = metadata.get(DIGEST_KEY) if isinstance(metadata, dict) else None
    if recorded is None:
        raise CheckpointError(
            f"{path}: no checksum in its header (field '{METADATA_KEY}.{DIGEST_KEY}'): written before maskbench "
            f"checksummed its checkpoints, or not by maskbench. Rerun the job that wrote it; or, if you trust the "
            f"file, add the checksum with: python -m maskbench.tools.seal_checkpoint {path}")
    field = _digest_field(recorded) if isinstance(recorded, str) else b""
    if not (isinstance(recorded, str) and _HEX64.fullmatch(recorded) and raw.count(field) == 1):
        raise CheckpointError(f"{path}: corrupted: field '{METADATA_KEY}.{DIGEST_KEY}' of the header is "
                              f"{str(recorded)[:80]!r}, not a sha256")
    hasher = hashlib.sha256(len(raw).to_bytes(8, "little") + raw.replace(field, _digest_field(_PLACEHOLDER)))
    with open(path, "rb") as handle:
        handle.seek(data_start)
        _hash_rest(hasher, handle)
    found = hasher.hexdigest()
    if found != recorded:
        raise CheckpointError(f"{path}: corrupted: its bytes hash to sha256 {found[:16]}…, not the {recorded[:16]}… "
                              f"recorded in its header when it was written (field '{METADATA_KEY}.{DIGEST_KEY}')")
    return metadata


def is_finished_checkpoint(folder: str | Path) -> bool:
    """Whether ``folder`` is a checkpoint folder `checkpoints.write_checkpoint` finished (its summary is there)."""
    return (Path(folder) / SUMMARY_FILE).is_file()


def verify_checkpoint_folder(folder: str | Path) -> bool:
    """Verify the weights of a checkpoint folder maskbench wrote (`is_finished_checkpoint`); a folder or Hub id
    of a model from elsewhere (a pretrained model) is left to its loader. Returns whether it was checked."""
    if not is_finished_checkpoint(folder):
        return False
    weights = Path(folder) / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{folder}: no {WEIGHTS_FILE} beside its {SUMMARY_FILE}")
    verify_safetensors(weights)
    return True
