"""Model checkpoints are checksummed as mask files are (issue 29, maskbench/checkpoint_integrity.py): every model
file maskbench writes carries a sha256 in its safetensors header, and every loader refuses, naming the file, one
whose bytes changed — a flipped byte anywhere loads silently 0 times — or one without the checksum; sealing
rewrites the header only, never a tensor."""

import json
import re
import shutil

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file
from tiny_models import tiny_bert

from maskbench.checkpoint_integrity import (
    DIGEST_KEY,
    CheckpointError,
    seal_safetensors,
    verify_checkpoint_folder,
    verify_safetensors,
)
from maskbench.checkpoints import write_checkpoint
from maskbench.text.models import data_vocab_tokenizer, load_classifier
from maskbench.tools import seal_checkpoint
from maskbench.tracks.gender.mlm import MLMHead, load_head, save_head
from maskbench.tracks.gender.models import load_encoder
from maskbench.tracks.gender.shrink import load_shrunk, save_shrunk, shrink_encoder
from maskbench.tracks.vision.models import build_model, load_model, save_model


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return data_vocab_tokenizer(["the cat sat", "a dog ran"], tmp_path_factory.mktemp("vocab"))


def header_bytes(path) -> int:
    """8 + the JSON header's length: where the tensors start."""
    with open(path, "rb") as handle:
        return 8 + int.from_bytes(handle.read(8), "little")


def flipped_loads(weights, load, positions, flips=(0x01, 0xFF)) -> tuple[int, list[str]]:
    """How many single-byte changes at ``positions`` load without an error, and the errors' messages."""
    raw = weights.read_bytes()
    silent, messages = 0, []
    for position in positions:
        for flip in flips:
            poke(weights, position, raw[position] ^ flip)
            try:
                load()
            except CheckpointError as err:
                messages.append(str(err))
            else:
                silent += 1
            poke(weights, position, raw[position])
    assert weights.read_bytes() == raw
    load()  # the intact file still loads
    return silent, messages


def poke(path, position, value) -> None:
    """Write one byte in place (rewriting the whole file per flip is 100x slower here)."""
    with open(path, "r+b") as handle:
        handle.seek(position)
        handle.write(bytes([value]))


def sampled(path, n, seed=0) -> list[int]:
    """``n`` seeded positions in the header and ``n`` in the tensors."""
    rng = np.random.default_rng(seed)
    start, size = header_bytes(path), path.stat().st_size
    return sorted({*rng.integers(0, start, n).tolist(), *rng.integers(start, size, n).tolist()})


# ------------------------------------------------------------------------------ every kind of model file
def nlu_classifier(tmp_path, tokenizer):
    write_checkpoint(tmp_path / "seed~1", tiny_bert(), tokenizer, {"seed": 1})
    return tmp_path / "seed~1" / "model.safetensors", lambda: load_classifier(tmp_path / "seed~1")


def gender_encoder(tmp_path, tokenizer):
    write_checkpoint(tmp_path / "run", tiny_bert().bert, tokenizer, {"seed": 1})
    return tmp_path / "run" / "model.safetensors", lambda: load_encoder(tmp_path / "run")


def gender_head(tmp_path, tokenizer):
    torch.manual_seed(0)
    save_head(MLMHead(16, 50, "gelu", 1e-12), tmp_path / "head.safetensors")
    return tmp_path / "head.safetensors", lambda: load_head(tmp_path / "head.safetensors")


def gender_shrunk(tmp_path, tokenizer):
    small, _ = shrink_encoder(tiny_bert().bert)
    save_shrunk(small, tmp_path / "shrunk")
    return tmp_path / "shrunk" / "model.safetensors", lambda: load_shrunk(tmp_path / "shrunk")


def vision_model(tmp_path, tokenizer):
    torch.manual_seed(0)
    save_model(build_model("mlp", 3, in_features=12, hidden=8, layers=2), tmp_path / "model.safetensors", {"seed": 1})
    return tmp_path / "model.safetensors", lambda: load_model(tmp_path / "model.safetensors")


KINDS = {"nlu_classifier": nlu_classifier, "gender_encoder": gender_encoder, "gender_head": gender_head,
         "gender_shrunk": gender_shrunk, "vision_model": vision_model}


@pytest.mark.parametrize("kind", KINDS)
def test_no_flipped_byte_of_a_saved_model_loads_silently(kind, tmp_path, tokenizer):
    weights, load = KINDS[kind](tmp_path, tokenizer)
    assert DIGEST_KEY in verify_safetensors(weights)
    silent, messages = flipped_loads(weights, load, sampled(weights, 40))
    assert silent == 0
    assert messages and all(m.startswith(f"{weights}: ") for m in messages), messages[:3]
    assert all(re.search(r"corrupted|truncated|no checksum", m) for m in messages), messages[:3]


def test_every_header_byte_and_every_tenth_tensor_byte_of_a_classifier_is_refused(tmp_path, tokenizer):
    """The mask codec's sweep (tests/test_mask_codec.py) on a model checkpoint: every byte of the header (names,
    dtypes, shapes, offsets, metadata, the checksum itself) and every 10th tensor byte, each flipped two ways."""
    weights, load = nlu_classifier(tmp_path, tokenizer)
    start, size = header_bytes(weights), weights.stat().st_size
    silent, messages = flipped_loads(weights, lambda: verify_safetensors(weights),
                                     [*range(start), *range(start, size, 10)])
    assert silent == 0 and len(messages) == 2 * (start + len(range(start, size, 10)))
    tensor_messages = messages[2 * start:]
    assert all("corrupted: its bytes hash to sha256" in m for m in tensor_messages), tensor_messages[:3]
    load()


def test_every_byte_of_a_head_file_is_refused_by_its_loader(tmp_path):
    weights, load = gender_head(tmp_path, None)
    silent, messages = flipped_loads(weights, load, range(weights.stat().st_size))
    assert silent == 0 and all(m.startswith(f"{weights}: ") for m in messages)


# ------------------------------------------------------------------------------ sealing keeps every tensor
def test_sealing_rewrites_the_header_only(tmp_path, tokenizer):
    model = tiny_bert()
    model.save_pretrained(tmp_path / "plain", safe_serialization=True)  # what write_checkpoint wrote before
    write_checkpoint(tmp_path / "sealed", model, tokenizer, {"seed": 1})
    plain, sealed = tmp_path / "plain" / "model.safetensors", tmp_path / "sealed" / "model.safetensors"
    before, after = load_file(plain), load_file(sealed)
    assert before.keys() == after.keys()
    assert all(before[k].dtype == after[k].dtype and torch.equal(before[k], after[k]) for k in before)
    # the tensor bytes themselves are the writer's, byte for byte
    assert plain.read_bytes()[header_bytes(plain):] == sealed.read_bytes()[header_bytes(sealed):]
    with safe_open(str(sealed), framework="pt") as handle:
        metadata = handle.metadata()
    assert metadata["format"] == "pt" and re.fullmatch(r"[0-9a-f]{64}", metadata[DIGEST_KEY])
    assert header_bytes(sealed) % 8 == 0  # the tensors stay 8-byte aligned
    # sealing again changes nothing; the same model written twice gives the same bytes
    raw = sealed.read_bytes()
    assert seal_safetensors(sealed) == metadata[DIGEST_KEY] and sealed.read_bytes() == raw
    write_checkpoint(tmp_path / "again", model, tokenizer, {"seed": 1})
    assert (tmp_path / "again" / "model.safetensors").read_bytes() == raw


def test_a_file_with_several_metadata_fields_is_written_byte_for_byte_the_same(tmp_path):
    """safetensors writes metadata in hash-map order, which changes between runs; sealing sorts it, so the bytes
    (and the checksum) of a head file depend on its content only."""
    torch.manual_seed(0)
    head = MLMHead(16, 50, "gelu", 1e-12)
    for name in "abcdef":
        save_head(head, tmp_path / f"{name}.safetensors")
    assert len({(tmp_path / f"{name}.safetensors").read_bytes() for name in "abcdef"}) == 1
    raw = (tmp_path / "a.safetensors").read_bytes()
    keys = list(json.loads(raw[8:header_bytes(tmp_path / "a.safetensors")])["__metadata__"])  # the file's order
    assert keys[:-1] == sorted(keys[:-1]) and keys[-1] == DIGEST_KEY


def test_a_vision_model_keeps_its_config_beside_the_checksum(tmp_path):
    torch.manual_seed(0)
    model = build_model("mlp", 3, in_features=12, hidden=8, layers=2)
    save_model(model, tmp_path / "m.safetensors", {"seed": 1})
    loaded = load_model(tmp_path / "m.safetensors")
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in model.state_dict().items())
    metadata = verify_safetensors(tmp_path / "m.safetensors")
    assert json.loads(metadata["maskbench_model"])["meta"] == {"seed": 1}


# ------------------------------------------------------------------------------ checkpoints without a checksum
def unsealed_checkpoint(folder, tokenizer):
    """A checkpoint folder as write_checkpoint left it before checkpoints were checksummed."""
    tiny_bert().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    (folder / "train_summary.json").write_text(json.dumps({"seed": 1}))
    return folder


def test_an_old_checkpoint_without_checksum_is_refused_saying_how_to_go_on(tmp_path, tokenizer, capsys):
    """Refused, not accepted with a warning: its bytes cannot be told from damaged ones (a warning would let the
    flipped byte through, and would be lost in a job's log), and the way on is cheap — rerun the job, or vouch for
    the file with the sealing tool, which the message names."""
    folder = unsealed_checkpoint(tmp_path / "old", tokenizer)
    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    for load in (load_classifier, load_encoder):
        with pytest.raises(CheckpointError, match=re.escape(f"{weights}: no checksum in its header")) as err:
            load(folder)
        assert f"python -m maskbench.tools.seal_checkpoint {weights}" in str(err.value)
    assert seal_checkpoint.main([str(folder)]) == 0
    assert f"{weights}: sealed: sha256 " in capsys.readouterr().out
    model, _ = load_classifier(folder)
    sealed = load_file(weights)
    assert all(torch.equal(tensors[k], sealed[k]) for k in tensors)
    assert seal_checkpoint.main([str(weights)]) == 0  # already sealed: verified, left as it is
    assert "its checksum matches" in capsys.readouterr().out


def test_the_sealing_tool_refuses_a_file_whose_bytes_no_longer_match(tmp_path, tokenizer, capsys):
    weights, _ = nlu_classifier(tmp_path, tokenizer)
    raw = bytearray(weights.read_bytes())
    raw[-3] ^= 0x10
    weights.write_bytes(bytes(raw))
    assert seal_checkpoint.main([str(weights)]) == 1
    assert f"{weights}: corrupted: its bytes hash to" in capsys.readouterr().err
    assert weights.read_bytes() == bytes(raw)  # not sealed over


def test_a_pretrained_model_from_elsewhere_is_not_checked(tmp_path, tokenizer):
    """A folder write_checkpoint did not finish (no train_summary.json: a Hub or packaged model) has no checksum
    to check; its loader reads it as before."""
    folder = unsealed_checkpoint(tmp_path / "pretrained", tokenizer)
    (folder / "train_summary.json").unlink()
    assert verify_checkpoint_folder(folder) is False
    load_encoder(folder)
    load_classifier(folder)
    shutil.rmtree(folder)
