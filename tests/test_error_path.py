"""One error path (issue 29): every step ends a user-facing error of the library (a bad data, mask or checkpoint
file, a mask of another model, ...; maskbench/errors.py) with one line on stderr naming the file and exit code 1,
through `run_step` (maskbench/steps/__init__.py); any other exception keeps its traceback."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import tiny_bert

from maskbench import errors
from maskbench.checkpoints import write_checkpoint
from maskbench.data.schema import write_prepared
from maskbench.data.synthetic import generate
from maskbench.masking.apply import MaskSet
from maskbench.steps import run_step
from maskbench.steps.gender import lm_bias as gender_lm_bias
from maskbench.steps.nlu import evaluate, evaluate_masks
from maskbench.steps.vision import ffw as vision_ffw
from maskbench.text.models import data_vocab_tokenizer
from maskbench.tracks.gender.mlm import MLMHead, save_head
from maskbench.tracks.vision.data import save_run_model
from maskbench.tracks.vision.images import ImageSet, write_images
from maskbench.tracks.vision.models import build_model

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "maskbench"


def flip_last_byte(path: Path) -> Path:
    """One bit of the last tensor's last byte: the file keeps its size and its header parses."""
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    path.write_bytes(bytes(raw))
    return path


def run(step, *args, cwd) -> subprocess.CompletedProcess:
    """``python -m <step> ARGS`` in a process of its own (no warm runner), as a rule runs it."""
    env = {k: v for k, v in os.environ.items() if k != "MASKBENCH_WARM_SOCKET"}
    return subprocess.run([sys.executable, "-m", step.__name__, *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=env)


def assert_one_error_line(result, step, *named) -> str:
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith(f"{step.__name__}: error: "), lines[0]
    assert all(str(name) in lines[0] for name in named), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    tokenizer = data_vocab_tokenizer(["the cat sat", "a dog ran"], folder / "vocab")
    write_checkpoint(folder / "seed~1", tiny_bert(), tokenizer, {"seed": 1})
    return folder / "seed~1"


def damaged_copy(checkpoint, where: Path) -> Path:
    import shutil

    shutil.copytree(checkpoint, where)
    flip_last_byte(where / "model.safetensors")
    return where


# ------------------------------------------------------------------------------ four steps from the command line
def test_evaluate_stops_at_a_damaged_checkpoint_with_one_line(checkpoint, tmp_path):
    model = damaged_copy(checkpoint, tmp_path / "seed~1")
    result = run(evaluate, "--model-dirs", model, "--rows", "baseline", "--out-dirs", "out", "--data", "dev.parquet",
                 "--eval-sets", '[{"name": "dev", "metric": "accuracy"}]', "--task", "mnli", cwd=tmp_path)
    line = assert_one_error_line(result, evaluate, model / "model.safetensors")
    assert "corrupted: its bytes hash to sha256" in line
    assert not (tmp_path / "out").exists()


def test_evaluate_masks_stops_at_a_damaged_mask_file_with_one_line(checkpoint, tmp_path):
    mask = tmp_path / "seed~1.mask"
    stats = mask_of_another_model().save(mask)
    raw = bytearray(mask.read_bytes())
    raw[stats["header_bytes"] + 3] ^= 0x04  # a payload byte
    mask.write_bytes(bytes(raw))
    result = run(evaluate_masks, "--model-dir", checkpoint, "--masks", mask, "--rows", "md_poe", "--out-dirs", "out",
                 "--data", "dev.parquet", "--eval-sets", '[{"name": "dev", "metric": "accuracy"}]', cwd=tmp_path)
    line = assert_one_error_line(result, evaluate_masks, mask)
    assert "corrupted payload" in line and not (tmp_path / "out").exists()


def test_a_gender_step_stops_at_a_damaged_head_file_with_one_line(tmp_path):
    torch.manual_seed(0)
    head = tmp_path / "head.safetensors"
    save_head(MLMHead(16, 50, "gelu", 1e-12), head)
    flip_last_byte(head)
    result = run(gender_lm_bias, "--model", "unused", "--head", head, "--crows",
                 REPO / "data/gender/crows_pairs_anonymized.csv", "--crows-max-pairs", "4", "--out", "lm.json",
                 cwd=tmp_path)
    assert_one_error_line(result, gender_lm_bias, head, "corrupted")
    assert not (tmp_path / "lm.json").exists()


def test_a_vision_step_stops_at_a_damaged_model_with_one_line(tmp_path):
    for split in ("train", "val"):
        write_images(tmp_path / f"{split}.safetensors", tiny_images(split))
    torch.manual_seed(0)
    save_run_model(build_model("mlp", 2, in_features=3 * 4 * 4, hidden=8, layers=2), tmp_path / "model",
                   {"model_spec": {"arch": "mlp"}})
    weights = flip_last_byte(tmp_path / "model" / "model.safetensors")
    result = run(vision_ffw, "--model-dir", "model", "--train", "train.safetensors", "--val", "val.safetensors",
                 "--out", "ffw.mask", "--seed", "1", cwd=tmp_path)
    assert_one_error_line(result, vision_ffw, weights.relative_to(tmp_path), "corrupted")
    assert not (tmp_path / "ffw.mask").exists()


def tiny_images(split: str) -> ImageSet:
    rng = np.random.default_rng(0)
    return ImageSet(images=rng.integers(0, 256, (6, 3, 4, 4), dtype=np.uint8), label=np.arange(6) % 2,
                    bias=(np.arange(6) % 2).reshape(6, 1), ids=np.arange(6), label_names=["a", "b"],
                    bias_names=["colour"], bias_classes=[2], dataset="tiny", split=split)


# ------------------------------------------------------------------------------ in the step's process
def mask_of_another_model() -> MaskSet:
    rng = np.random.default_rng(0)
    return MaskSet({"bert.encoder.layer.0.attention.self.query": rng.random((16, 16)) < 0.3},
                   {"method": "movement_sigmoid", "seed": 1})


def run_in_process(step, argv, monkeypatch) -> int:
    monkeypatch.setattr(sys, "argv", [step.__name__, *map(str, argv)])
    with pytest.raises(SystemExit) as stop:
        run_step(step.main)
    return stop.value.code


MERGE = {"LABEL_0": "entailment", "LABEL_1": "neutral", "LABEL_2": "contradiction"}  # tiny_bert's label names


def test_a_mask_of_another_model_is_one_line(checkpoint, tmp_path, monkeypatch, capsys):
    frame, labels = generate("nli", "dev", 12, seed=0, rho=0.5)
    write_prepared(frame, labels, tmp_path / "dev.parquet", {"dataset": "dev", "task": "mnli"})
    mask = tmp_path / "other.mask"
    mask_of_another_model().save(mask)
    code = run_in_process(evaluate_masks, ["--model-dir", checkpoint, "--masks", mask, "--rows", "md_poe",
                                           "--out-dirs", tmp_path / "out", "--data", tmp_path / "dev.parquet",
                                           "--eval-sets", json.dumps([{"name": "dev", "merge": MERGE}])],
                          monkeypatch)
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert lines == [f"maskbench.steps.nlu.evaluate_masks: error: {mask}: field 'meta.model_fingerprint' is missing; "
                     "cannot tell which model the mask belongs to"]
    assert "evaluate_masks" in err.splitlines()[-1]  # the timing line still follows
    assert not (tmp_path / "out").exists()


def test_an_unexpected_error_keeps_its_traceback(monkeypatch):
    def main():
        raise KeyError("a bug, not a bad input")

    with pytest.raises(KeyError, match="a bug"):
        run_step(main)


def test_a_message_over_several_lines_becomes_one():
    from maskbench.data.schema import DataError

    assert errors.one_line(DataError("x.parquet: bad\n  field 'label'\n")) == "x.parquet: bad field 'label'"
    assert errors.is_user_error(DataError("x")) and not errors.is_user_error(ValueError("x"))

    class Narrower(DataError):
        pass

    assert errors.is_user_error(Narrower("x"))


def test_every_error_class_of_the_library_is_listed():
    """Every ``*Error`` class defined in src/ is either user-facing (USER_ERRORS, a ValueError) or internal, so a
    new error class is a choice, not an accident; no listed name is stale."""
    defined = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                defined[node.name] = [ast.unparse(base) for base in node.bases]
    assert set(defined) == errors.USER_ERRORS | errors.ENVIRONMENT_ERRORS | errors.INTERNAL_ERRORS
    for name in errors.USER_ERRORS:
        assert set(defined[name]) & {"ValueError", *errors.USER_ERRORS}, (name, defined[name])
    for name in errors.ENVIRONMENT_ERRORS:
        assert "OSError" in defined[name], (name, defined[name])
