"""Mask codec: bit-exact round trips, the Rice bit layout by hand, sizes against the entropy bound, files."""

import hashlib
import json
import math
import os
import zlib

import numpy as np
import pytest

from maskbench.masking.codec import (
    MAGIC,
    MaskFileError,
    decode_mask,
    encode_mask,
    entropy_bits,
    read_mask_file,
    read_mask_header,
    write_mask_file,
)

DENSITIES = [0.0, 0.001, 0.05, 0.3, 0.5, 0.7, 0.95, 1.0]
SHAPES = [(), (1,), (0,), (3, 0), (7, 13), (4, 5, 6), (1000, 37)]


def random_mask(shape, density, seed=0):
    return np.asarray(np.random.default_rng(seed).random(shape) < density)  # shape () gives a scalar


def reference_rice(gaps, k):
    """Bit-serial Golomb-Rice streams as '0'/'1' strings: the slow, obviously right version."""
    unary = "".join("1" * (g >> k) + "0" for g in gaps)
    remainder = "".join(format(g & ((1 << k) - 1), f"0{k}b") for g in gaps) if k else ""
    return unary, remainder


def to_bytes(bits):
    bits = bits + "0" * (-len(bits) % 8)
    return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))


def round_trip(mask, **kwargs):
    header, payload = encode_mask(mask, **kwargs)
    json.dumps(header)  # must be JSON-serialisable
    decoded = decode_mask(header, payload)
    assert decoded.dtype == np.bool_
    assert decoded.shape == mask.shape
    np.testing.assert_array_equal(decoded, mask)
    return header, payload


# ---------------------------------------------------------------------------------------------------
# entropy


def test_entropy_bits_hand_values():
    # 8 * H(1/4) = 2 * log2(4) + 6 * log2(4/3)
    assert entropy_bits(8, 2) == pytest.approx(6.490224995673063, abs=1e-12)
    assert entropy_bits(8, 6) == pytest.approx(6.490224995673063, abs=1e-12)
    assert entropy_bits(4, 2) == pytest.approx(4.0)
    assert entropy_bits(1000, 10) == pytest.approx(
        1000 * (0.01 * math.log2(100) + 0.99 * math.log2(1 / 0.99))
    )
    assert entropy_bits(10, 0) == 0.0
    assert entropy_bits(10, 10) == 0.0
    assert entropy_bits(0, 0) == 0.0
    with pytest.raises(ValueError):
        entropy_bits(5, 6)
    with pytest.raises(ValueError):
        entropy_bits(5, -1)


# ---------------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip_is_bit_exact(shape, density):
    round_trip(random_mask(shape, density, seed=len(shape) + int(density * 1000)))


@pytest.mark.parametrize("density", [0.01, 0.5, 0.93])
def test_round_trip_of_non_contiguous_views(density):
    base = random_mask((60, 50), density, seed=3)
    for view in (base.T, base[::3, 1::2], np.asfortranarray(base)):
        round_trip(view)


@pytest.mark.parametrize("density", [0.002, 0.2, 0.5, 0.8, 0.999])
def test_every_forced_encoding_round_trips(density):
    mask = random_mask((3001,), density, seed=11)
    round_trip(mask, encoding="bitpack")
    for k in range(33):
        header, _ = round_trip(mask, k=k)
        assert header["encoding"] == "rice" and header["k"] == k


def test_all_same_arrays_are_constant_with_empty_payload():
    for mask in (np.zeros((5, 7), bool), np.ones((5, 7), bool), np.zeros((0, 3), bool)):
        header, payload = round_trip(mask)
        assert header["encoding"] == "constant"
        assert payload == b""


def test_runs_at_the_edges_and_long_gaps():
    mask = np.zeros(200_000, bool)
    mask[[0, 1, 70_000, 199_999]] = True  # gaps beyond the sizing histogram, hits at both ends
    header, payload = round_trip(mask)
    assert header["encoding"] == "rice" and header["minority"] == 1
    assert len(payload) < 20
    round_trip(~mask)


# ---------------------------------------------------------------------------------------------------
# the Rice bit layout, by hand


def test_rice_streams_by_hand():
    # 16 elements, ones at 1, 2, 9, 15 -> gaps (zeros before each one) 1, 0, 6, 5
    mask = np.zeros(16, bool)
    mask[[1, 2, 9, 15]] = True

    # k = 1: q = 0,0,3,2 -> unary 0|0|1110|110 = 00111011 0(0000000); r = 1,0,0,1 -> 1001(0000)
    header, payload = encode_mask(mask, k=1)
    assert header["minority"] == 1
    assert (header["unary_bytes"], header["remainder_bytes"]) == (2, 1)
    assert payload == bytes([0b00111011, 0b00000000, 0b10010000])

    # k = 2: q = 0,0,1,1 -> unary 0|0|10|10 = 001010(00); r = 1,0,2,1 -> 01 00 10 01
    header, payload = encode_mask(mask, k=2)
    assert (header["unary_bytes"], header["remainder_bytes"]) == (1, 1)
    assert payload == bytes([0b00101000, 0b01001001])
    np.testing.assert_array_equal(decode_mask(header, payload), mask)

    # the complement codes the positions of its zeros: same gaps, same streams
    header, payload = encode_mask(~mask, k=2)
    assert header["minority"] == 0 and header["n_ones"] == 12
    assert payload == bytes([0b00101000, 0b01001001])
    np.testing.assert_array_equal(decode_mask(header, payload), ~mask)

    # left to itself the best Rice code (k=0 or 2) needs 2 bytes, as does the bit-pack: tie -> bitpack
    header, payload = encode_mask(mask)
    assert header["encoding"] == "bitpack"
    assert payload == bytes([0b01100000, 0b01000001])


def test_single_one_picks_rice_k0_by_hand():
    mask = np.zeros(16, bool)
    mask[5] = True
    # k=0: unary 111110 -> 1 byte, no remainder; every k >= 1 needs 2 bytes, bit-pack 2 bytes
    header, payload = encode_mask(mask)
    assert header == {
        "shape": [16],
        "n": 16,
        "n_ones": 1,
        "encoding": "rice",
        "k": 0,
        "minority": 1,
        "unary_bytes": 1,
        "remainder_bytes": 0,
    }
    assert payload == bytes([0b11111000])


@pytest.mark.parametrize("minority", [0, 1])
def test_rice_streams_match_a_bit_serial_reference_for_every_k(minority):
    rng = np.random.default_rng(5)
    ones = rng.random(6000) < 0.01
    ones[rng.integers(0, 6000, 5)] = True
    mask = ones if minority == 1 else ~ones
    positions = np.flatnonzero(ones)
    gaps = np.diff(positions, prepend=-1) - 1
    for k in range(33):
        header, payload = encode_mask(mask, k=k)
        unary, remainder = reference_rice(gaps.tolist(), k)
        assert header["minority"] == minority
        assert payload == to_bytes(unary) + to_bytes(remainder), f"k={k}"
        assert header["unary_bytes"] == len(to_bytes(unary))


@pytest.mark.parametrize("density", [0.003, 0.04, 0.25, 0.45, 0.9])
def test_automatic_choice_is_the_smallest(density):
    mask = random_mask((20_000,), density, seed=21)
    header, payload = encode_mask(mask)
    candidates = [len(encode_mask(mask, k=k)[1]) for k in range(33)] + [
        len(encode_mask(mask, encoding="bitpack")[1])
    ]
    assert len(payload) == min(candidates)
    if header["encoding"] == "rice":
        assert len(encode_mask(mask, k=header["k"])[1]) == len(payload)


# ---------------------------------------------------------------------------------------------------
# sizes against the entropy bound


@pytest.mark.parametrize("density", [0.02, 0.1, 0.3, 0.9, 0.98])
def test_size_within_ten_percent_of_entropy(density):
    mask = random_mask((1_000_000,), density, seed=int(density * 100))
    header, payload = encode_mask(mask)
    bound = entropy_bits(header["n"], header["n_ones"])
    assert header["encoding"] == "rice"
    assert len(payload) * 8 / bound <= 1.1
    assert len(payload) < 1_000_000 // 8  # and strictly better than the bit-pack


def test_size_at_half_density_is_the_bitpack():
    mask = random_mask((1_000_000,), 0.5, seed=1)
    header, payload = encode_mask(mask)
    assert header["encoding"] == "bitpack"
    assert len(payload) == 125_000
    assert len(payload) * 8 / entropy_bits(header["n"], header["n_ones"]) <= 1.0 + 1e-4


# ---------------------------------------------------------------------------------------------------
# decode_mask consistency checks


def test_decode_rejects_inconsistent_headers():
    mask = random_mask((1000,), 0.5, seed=2)
    header, payload = encode_mask(mask)
    with pytest.raises(ValueError, match="n_ones"):
        decode_mask({**header, "n_ones": header["n_ones"] + 1}, payload)
    with pytest.raises(ValueError, match="bitpack payload"):
        decode_mask(header, payload[:-1])
    with pytest.raises(ValueError, match="elements"):
        decode_mask({**header, "shape": [999]}, payload)

    rice_header, rice_payload = encode_mask(random_mask((1000,), 0.05, seed=2))
    assert rice_header["encoding"] == "rice"
    with pytest.raises(ValueError, match="rice payload"):
        decode_mask(rice_header, rice_payload[:-1])
    with pytest.raises(ValueError):
        decode_mask(
            rice_header, b"\xff" * rice_header["unary_bytes"] + rice_payload[rice_header["unary_bytes"] :]
        )


def test_encode_rejects_non_bool_input():
    with pytest.raises(TypeError, match="uint8"):
        encode_mask(np.zeros(4, np.uint8))
    with pytest.raises(TypeError, match="list"):
        encode_mask([True, False])
    with pytest.raises(ValueError, match="k must be"):
        encode_mask(np.zeros(4, bool), k=33)


# ---------------------------------------------------------------------------------------------------
# files


def sample_masks():
    rng = np.random.default_rng(7)
    return {
        "encoder.layer.1.attention.query": rng.random((64, 48)) < 0.93,
        "encoder.layer.0.attention.key": rng.random((48, 64)) < 0.2,
        "classifier": rng.random((3, 48)) < 0.5,
        "pooler.dense": np.ones((48, 48), bool),
        "embeddings": rng.random((5, 4, 3)) < 0.999,
    }


def test_file_round_trip_with_meta_and_stats(tmp_path):
    masks = sample_masks()
    meta = {"method": "magnitude", "sparsity": 0.1, "seed": 3, "nested": {"a": [1, 2]}}
    path = tmp_path / "deep" / "folder" / "masks.mbm"
    stats = write_mask_file(path, masks, meta)

    assert os.listdir(path.parent) == ["masks.mbm"]  # no temporary file left behind
    assert path.read_bytes()[:8] == MAGIC
    decoded, decoded_meta = read_mask_file(path)
    assert decoded_meta == meta
    assert list(decoded) == list(masks)  # file order = insertion order, not sorted
    for name, mask in masks.items():
        assert decoded[name].dtype == np.bool_
        np.testing.assert_array_equal(decoded[name], mask)

    n = sum(m.size for m in masks.values())
    ones = sum(int(m.sum()) for m in masks.values())
    assert stats["file_bytes"] == path.stat().st_size
    assert stats["header_bytes"] + stats["payload_bytes"] == stats["file_bytes"]
    assert stats["n_elements"] == n
    assert stats["density"] == pytest.approx(ones / n)
    assert stats["bitpack_bytes"] == sum(math.ceil(m.size / 8) for m in masks.values())
    assert stats["entropy_bytes"] == pytest.approx(
        sum(entropy_bits(m.size, m.sum()) for m in masks.values()) / 8
    )
    assert stats["global_entropy_bytes"] == pytest.approx(entropy_bits(n, ones) / 8)
    assert stats["payload_bytes"] < stats["bitpack_bytes"]

    header = read_mask_header(path)
    assert header["format"] == 2 and header["meta"] == meta
    assert [m["name"] for m in header["modules"]] == list(masks)
    offsets = [(m["offset"], m["nbytes"]) for m in header["modules"]]
    assert offsets[0][0] == 0
    assert all(a + b == c for (a, b), (c, _) in zip(offsets, offsets[1:], strict=False))
    by_name = {m["name"]: m for m in header["modules"]}
    assert by_name["pooler.dense"]["encoding"] == "constant" and by_name["pooler.dense"]["nbytes"] == 0
    assert by_name["classifier"]["encoding"] == "bitpack"
    assert by_name["encoder.layer.1.attention.query"]["encoding"] == "rice"
    assert by_name["embeddings"]["shape"] == [5, 4, 3]

    raw = path.read_bytes()
    header_len = int.from_bytes(raw[8:16], "little")
    assert json.loads(raw[16 : 16 + header_len]) == header
    # the checksums: one CRC32 per module, then the sha256 of everything before it
    table_end = 16 + header_len + 4 * len(masks)
    assert stats["checksum_bytes"] == 4 * len(masks) + 32
    assert stats["header_bytes"] == 16 + header_len + stats["checksum_bytes"]
    assert raw[table_end : table_end + 32] == hashlib.sha256(raw[:table_end]).digest()
    payloads = raw[stats["header_bytes"] :]
    for index, module in enumerate(header["modules"]):
        crc = int.from_bytes(raw[16 + header_len + 4 * index : 16 + header_len + 4 * index + 4], "little")
        assert crc == zlib.crc32(payloads[module["offset"] : module["offset"] + module["nbytes"]])


def test_file_overwrite_replaces_content(tmp_path):
    path = tmp_path / "m.mbm"
    write_mask_file(path, {"a": np.ones(10, bool)}, {"v": 1})
    write_mask_file(path, {"b": np.zeros(3, bool)}, {"v": 2})
    masks, meta = read_mask_file(path)
    assert list(masks) == ["b"] and meta == {"v": 2}


def test_bert_like_file_is_close_to_entropy(tmp_path):
    rng = np.random.default_rng(0)
    masks = {f"layer.{i}.{kind}": rng.random((256, 256)) < 0.9 for i in range(4) for kind in ("q", "k", "v")}
    stats = write_mask_file(tmp_path / "bert.mbm", masks, {})
    assert stats["payload_bytes"] / stats["entropy_bytes"] <= 1.1
    assert stats["payload_bytes"] < 0.5 * stats["bitpack_bytes"]


def split_file(raw):
    """(header dict, payload section) of a format-2 file."""
    header_len = int.from_bytes(raw[8:16], "little")
    header = json.loads(raw[16 : 16 + header_len])
    return header, raw[16 + header_len + 4 * len(header["modules"]) + 32 :]


def assemble(header, payloads):
    """A format-2 file with valid checksums: what a writer with a bug (not a flipped byte) would produce."""
    body = json.dumps(header).encode()
    prefix = MAGIC + len(body).to_bytes(8, "little") + body
    table = b"".join(zlib.crc32(payloads[m["offset"] : m["offset"] + m["nbytes"]]).to_bytes(4, "little")
                     for m in header["modules"])
    return prefix + table + hashlib.sha256(prefix + table).digest() + payloads


def rewrite_header(path, edit):
    header, payloads = split_file(path.read_bytes())
    edit(header)
    path.write_bytes(assemble(header, payloads))


def test_bad_magic(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"NOTAMASK" + bytes(8) + b"{}")
    with pytest.raises(MaskFileError, match="not a maskbench mask file") as info:
        read_mask_file(path)
    assert "weights.bin" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(MaskFileError, match="not a maskbench mask file"):
        read_mask_header(path)


def test_truncated_files(tmp_path):
    path = tmp_path / "cut.mbm"
    write_mask_file(path, sample_masks(), {"x": 1})
    raw = path.read_bytes()
    path.write_bytes(raw[:-3])
    for reader in (read_mask_file, read_mask_header):
        with pytest.raises(MaskFileError, match="truncated") as info:
            reader(path)
        assert "cut.mbm" in str(info.value)
    for cut in (12, 40):  # inside the length field, inside the JSON header
        path.write_bytes(raw[:cut])
        with pytest.raises(MaskFileError, match="truncated"):
            read_mask_file(path)


def test_trailing_garbage(tmp_path):
    path = tmp_path / "long.mbm"
    write_mask_file(path, sample_masks(), {})
    path.write_bytes(path.read_bytes() + b"\0\0")
    with pytest.raises(MaskFileError, match="unexpected bytes"):
        read_mask_file(path)


def test_header_not_json(tmp_path):
    path = tmp_path / "garbled.mbm"
    body = b"{this is not json"
    path.write_bytes(MAGIC + len(body).to_bytes(8, "little") + body)
    with pytest.raises(MaskFileError, match="not valid UTF-8 JSON") as info:
        read_mask_file(path)
    assert "garbled.mbm" in str(info.value)


def test_decoded_ones_differ_from_header(tmp_path):
    path = tmp_path / "tampered.mbm"
    write_mask_file(path, sample_masks(), {})

    def bump(header):
        module = next(m for m in header["modules"] if m["name"] == "classifier")
        assert module["encoding"] == "bitpack"
        module["n_ones"] += 1

    rewrite_header(path, bump)
    with pytest.raises(MaskFileError, match="n_ones") as info:
        read_mask_file(path)
    assert "tampered.mbm" in str(info.value) and "'classifier'" in str(info.value)


def test_corrupt_rice_payload_is_reported(tmp_path):
    path = tmp_path / "flipped.mbm"
    write_mask_file(path, {"sparse": random_mask((5000,), 0.02, seed=4)}, {})
    header, payloads = split_file(path.read_bytes())
    module = header["modules"][0]
    assert module["encoding"] == "rice"
    payloads = b"\xff" * module["unary_bytes"] + payloads[module["unary_bytes"] :]
    path.write_bytes(assemble(header, payloads))  # checksums recomputed: the decoder's own checks must catch it
    with pytest.raises(MaskFileError, match="flipped.mbm.*'sparse'.*terminators"):
        read_mask_file(path)


def test_write_rejects_non_bool_masks_and_writes_nothing(tmp_path):
    path = tmp_path / "out" / "bad.mbm"
    masks = {"ok": np.ones(4, bool), "layer.3.value": np.ones(4, np.float32)}
    with pytest.raises(MaskFileError, match="layer.3.value.*float32") as info:
        write_mask_file(path, masks, {})
    assert "bad.mbm" in str(info.value)
    assert not path.exists()
    with pytest.raises(MaskFileError, match="'listed'.*list"):
        write_mask_file(path, {"listed": [True, False]}, {})
    with pytest.raises(MaskFileError, match="JSON"):
        write_mask_file(path, {"ok": np.ones(4, bool)}, {"bad": object()})
    assert not path.exists()
    assert not path.parent.exists() or os.listdir(path.parent) == []


# ---------------------------------------------------------------------------------------------------
# integrity: checksums


def test_every_flipped_byte_is_refused_naming_the_file_and_the_module(tmp_path):
    rng = np.random.default_rng(5)
    masks = {"layer.0.query": rng.random((24, 16)) < 0.9, "layer.0.key": rng.random((16, 24)) < 0.5,
             "pooler": np.ones((8, 8), bool), "classifier": rng.random((3, 16)) < 0.02}
    path = tmp_path / "flip.mask"
    stats = write_mask_file(path, masks, {"method": "movement_sigmoid", "seed": 1})
    raw = path.read_bytes()
    header = read_mask_header(path)
    start = stats["header_bytes"]
    owner = {}  # payload byte -> the module it belongs to
    for module in header["modules"]:
        owner.update({start + i: module["name"] for i in range(module["offset"], module["offset"] + module["nbytes"])})
    assert len(owner) == stats["payload_bytes"] > 0
    broken = tmp_path / "broken.mask"
    for position in range(len(raw)):
        for flip in (0x01, 0xFF):
            changed = bytearray(raw)
            changed[position] ^= flip
            broken.write_bytes(bytes(changed))
            for reader in (read_mask_file, read_mask_header):
                with pytest.raises(MaskFileError) as info:
                    reader(broken)
                message = str(info.value)
                assert message.startswith(f"{broken}: "), (position, message)
                if position in owner:
                    assert f"module {owner[position]!r}: corrupted payload" in message, (position, message)
                elif position >= 16:  # magic and length: refused as another file or as truncated/corrupted
                    assert "corrupted" in message or "truncated" in message, (position, message)


def test_checksums_cost_4_bytes_per_module_plus_32(tmp_path):
    masks = {f"m{i}": np.arange(40).reshape(5, 8) % (i + 2) == 0 for i in range(6)}
    stats = write_mask_file(tmp_path / "a.mask", masks, {})
    header, payloads = split_file((tmp_path / "a.mask").read_bytes())
    unchecked = 16 + len(json.dumps(header, separators=(",", ":")).encode()) + len(payloads)
    assert stats["file_bytes"] - unchecked == stats["checksum_bytes"] == 4 * 6 + 32


def test_format_1_files_are_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "old.mask"
    body = json.dumps({"format": 1, "meta": {}, "modules": []}).encode()
    path.write_bytes(b"MBMASK01" + len(body).to_bytes(8, "little") + body)
    for reader in (read_mask_file, read_mask_header):
        with pytest.raises(MaskFileError, match=r"old\.mask: mask file format 1 has no checksums"):
            reader(path)
