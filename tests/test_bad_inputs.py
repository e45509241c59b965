"""The bad-input matrix (issue 14): each case stops with a message naming the file, the field and the value (or the
line), before any model is built, and leaves nothing that looks complete."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from maskbench import api, console, runtime
from maskbench.checkpoints import write_checkpoint
from maskbench.data.schema import DataError, read_prepared, write_prepared
from maskbench.data.synthetic import generate
from maskbench.masking.apply import MaskSet
from maskbench.masking.codec import MaskFileError, read_mask_header
from maskbench.steps import prepare
from maskbench.text.models import CheckpointError, data_vocab_tokenizer, load_classifier
from maskbench.tracks.nlu.bias.probs import read_probs, write_probs

REPO = Path(__file__).resolve().parents[1]
LABELS = ["entailment", "neutral", "contradiction"]


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if predict gets as far as building a model."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built before the bad input was refused")

    monkeypatch.setattr(api, "load_classifier", refuse)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A real (tiny) checkpoint folder as write_checkpoint leaves it."""
    from tiny_models import tiny_bert

    folder = tmp_path_factory.mktemp("ckpt")
    tokenizer = data_vocab_tokenizer(["the cat sat", "a dog ran"], folder / "vocab")
    write_checkpoint(folder / "seed~1", tiny_bert(), tokenizer, {"seed": 1})
    return folder / "seed~1"


def mask_set(seed=0):
    rng = np.random.default_rng(seed)
    return MaskSet({"bert.encoder.layer.0.attention.self.query": rng.random((16, 16)) < 0.3,
                    "bert.encoder.layer.0.attention.self.key": rng.random((16, 16)) < 0.6},
                   {"method": "movement_sigmoid", "seed": seed})


# ------------------------------------------------------------------------------ a flipped byte in a mask file
def test_mask_file_with_one_flipped_payload_byte_is_refused_naming_file_and_module(tmp_path, no_model, capsys):
    path = tmp_path / "seed~1.mask"
    stats = mask_set().save(path)
    module = read_mask_header(path)["modules"][1]
    raw = bytearray(path.read_bytes())
    raw[stats["header_bytes"] + module["offset"] + module["nbytes"] // 2] ^= 0x04  # one bit of the key's payload
    path.write_bytes(bytes(raw))
    with pytest.raises(MaskFileError, match=re.escape(f"{path}: module 'bert.encoder.layer.0.attention.self.key': "
                                                      "corrupted payload")):
        MaskSet.load(path)
    # predict refuses it before loading the model
    pairs = tmp_path / "in.jsonl"
    pairs.write_text('{"text_a": "the cat", "text_b": "a cat"}\n')
    with pytest.raises(MaskFileError, match="seed~1.mask: module 'bert.encoder.layer.0.attention.self.key'"):
        api.predict(tmp_path, pairs, [path])
    capsys.readouterr()
    assert console.main(["predict", "--model", str(tmp_path), "--mask", str(path), "--input", str(pairs), "--output",
                         str(tmp_path / "out.jsonl")]) == 1
    assert (f"maskbench predict: error: {path}: module 'bert.encoder.layer.0.attention.self.key'"
            in capsys.readouterr().err)
    assert not (tmp_path / "out.jsonl").exists()
    # and the command-line check says so, with exit status 1
    good = tmp_path / "good.mask"
    mask_set(1).save(good)
    capsys.readouterr()
    assert console.main(["inspect", "--check", str(good), str(path)]) == 1
    captured = capsys.readouterr()
    assert f"{good}: OK — 2 modules" in captured.out and "density" in captured.out
    assert "1 of 2 mask files OK" in captured.out
    assert f"{path}: module 'bert.encoder.layer.0.attention.self.key': corrupted payload" in captured.err
    assert console.main(["inspect", "--check", str(good)]) == 0
    assert console.main(["inspect", str(good), str(path)]) == 1  # the density tables of several files, counted
    captured = capsys.readouterr()
    assert "by module kind:" in captured.out and "1 of 2 mask files OK" in captured.out


# ------------------------------------------------------------------------------ predict: half a text pair
@pytest.mark.parametrize("line,message", [
    ('{"text_a": "the cat sat", "hypothesis": "a cat sat"}', "line 2 has field 'text_a' but not 'text_b'"),
    ('{"id": "x", "premise": "the cat sat"}', "line 2 has field 'premise' but not 'hypothesis'"),
    ('{"text_a": "the cat sat", "text_b": 7}', "line 2: field 'text_b' has non-string value 7"),
])
def test_predict_refuses_a_line_without_both_texts_of_a_pair(tmp_path, no_model, line, message, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"text_a": "a dog ran", "text_b": "a dog ran"}\n' + line + "\n")
    out = tmp_path / "out.jsonl"
    with pytest.raises(DataError, match=re.escape(f"{pairs}: {message}")):
        api.predict(tmp_path, pairs)
    assert console.main(["predict", "--model", str(tmp_path), "--input", str(pairs), "--output", str(out)]) == 1
    assert f"maskbench predict: error: {pairs}: {message}" in capsys.readouterr().err
    assert not out.exists()


# ------------------------------------------------------------------------------ local dataset without text_b
def test_local_dataset_without_text_b_and_without_columns_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("pairs.jsonl").write_text("".join(json.dumps({"text_a": t, "label": "entailment"}) + "\n"
                                           for t in ("the cat sat", "a dog ran")))
    spec = {"source": "local:pairs.jsonl", "labels": LABELS, "task": "mnli"}
    with pytest.raises(DataError) as refused:  # the step's one error line (steps/__init__.py: run_step)
        prepare.main(["--name", "pairs", "--spec", json.dumps(spec), "--out", "out/pairs.parquet",
                      "--summary", "out/pairs.summary.json"])
    err = str(refused.value)
    assert "pairs.jsonl (dataset 'pairs'): field 'text_b' is missing" in err
    assert "(it has: text_a, label)" in err and "columns:" in err and "single_text: true" in err
    assert not Path("out").exists()


# ------------------------------------------------------------------------------ a byte that is not UTF-8
def test_non_utf8_byte_in_a_jsonl_is_named_with_its_line_by_prepare(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = json.dumps({"text_a": "the cat sat", "text_b": "a cat sat", "label": "entailment"}).encode()
    Path("pairs.jsonl").write_bytes(good + b"\n" + good.replace(b"cat sat", b"caf\xe9 sat", 1) + b"\n")
    spec = {"source": "local:pairs.jsonl", "labels": LABELS}
    with pytest.raises(DataError) as refused:  # the step's one error line (steps/__init__.py: run_step)
        prepare.main(["--name", "pairs", "--spec", json.dumps(spec), "--out", "out/pairs.parquet",
                      "--summary", "out/pairs.summary.json"])
    err = str(refused.value)
    assert "pairs.jsonl: line 2 has byte b'\\xe9' at column 20, which is not UTF-8" in err
    assert "Traceback" not in err and not Path("out").exists()


def test_non_utf8_byte_in_a_jsonl_is_named_with_its_line_by_predict(tmp_path, no_model):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_bytes(b'{"text_a": "a dog ran", "text_b": "a dog ran"}\n'
                      b'{"text_a": "a dog ran", "text_b": "a dog ran"}\n'
                      b'{"premise": "the caf\xe9", "hypothesis": "a cat"}\n')
    with pytest.raises(DataError, match=re.escape(f"{pairs}: line 3 has byte b'\\xe9' at column 21, which is not "
                                                  "UTF-8")):
        api.predict(tmp_path, pairs)
    # from the command line: the message, no traceback
    result = subprocess.run([sys.executable, "-m", "maskbench.console", "predict", "--model", str(tmp_path),
                             "--input", str(pairs)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"maskbench predict: error: {pairs}: line 3" in result.stderr


# ------------------------------------------------------------------------------ a cut model.safetensors
@pytest.mark.parametrize("keep", [4, 100, -1000])
def test_truncated_model_safetensors_is_refused_naming_its_path(checkpoint, tmp_path, keep):
    import shutil

    folder = tmp_path / "seed~1"
    shutil.copytree(checkpoint, folder)
    load_classifier(folder)  # the intact copy loads
    weights = folder / "model.safetensors"
    raw = weights.read_bytes()
    weights.write_bytes(raw[:keep])
    with pytest.raises(CheckpointError, match=re.escape(f"{weights}: truncated")):
        load_classifier(folder)


# ------------------------------------------------------------------------------ cut parquet files
def test_truncated_bias_probability_parquet_is_refused_naming_it(tmp_path):
    ids = [f"x{i}" for i in range(50)]
    probs = np.random.default_rng(0).dirichlet(np.ones(3), size=len(ids))
    path = tmp_path / "train_probs.parquet"
    write_probs(path, ids, probs, LABELS, {"task": "mnli"})
    np.testing.assert_array_equal(read_probs(path, ids, LABELS, "mnli"), probs)
    raw = path.read_bytes()
    for keep in (len(raw) // 2, len(raw) - 5, 10):
        path.write_bytes(raw[:keep])
        with pytest.raises(DataError, match=re.escape(f"{path}: not a readable parquet file (truncated or damaged?)")):
            read_probs(path, ids, LABELS, "mnli")


def test_truncated_prepared_parquet_is_refused_naming_it(tmp_path):
    frame, labels = generate("nli", "train", 30, seed=0, rho=0.9)
    path = tmp_path / "mnli_train.parquet"
    write_prepared(frame, labels, path, {"dataset": "mnli_train", "task": "mnli"})
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 100])
    with pytest.raises(DataError, match=re.escape(f"{path}: not a readable parquet file (truncated or damaged?)")):
        read_prepared(path)


# ------------------------------------------------------------------------------ a results folder with a space
def test_results_folder_with_a_space_gives_well_formed_shell_commands(tmp_path):
    """`results: "res spaced"`: every printed command splits into words the way the rule means them, each path
    one word (before the placeholders were quoted, every rule broke and `> {log}` wrote a stray ./res)."""
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", "-p", "--cores", "2",
         "--configfile", str(REPO / "configs/smoke.yaml"), "--config", "results=res spaced", "--directory",
         str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PATH": path, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    checked = set()
    for block in re.split(r"\n(?=\[[^\]]*\d{4}\]\n(?:local)?rule )", result.stdout):
        command = re.search(r"^Shell command: (.*)$", block, re.M)
        if not command or command.group(1) == "None":
            continue
        rule = re.search(r"^(?:local)?rule (\w+):", block, re.M).group(1)
        words = shlex.split(command.group(1))
        assert not [w for w in words if w == "res" or w.startswith("spaced/")], (rule, words)
        log = re.search(r"^    log: (.*)$", block, re.M).group(1)
        assert words[-3:] == [">", log, "2>&1"], (rule, words[-3:])
        paths = [w for w in words if w == "res spaced" or w.startswith("res spaced/")]
        for output in re.search(r"^    output: (.*)$", block, re.M).group(1).split(", "):
            # every output is a word of the command, or lies in a folder that is one (--out-dir, --results), or is
            # the SVG a figure writer puts beside the PNG it is given (maskbench.report.figure_files)
            named = output[:-4] + ".png" if output.endswith(".svg") else output
            assert any(named == p or named.startswith(p.rstrip("/") + "/") for p in paths), (rule, output)
        checked.add(rule)
    assert {"prepare_dataset", "finetune_baseline", "train_bias_model", "bias_overlap_qqp", "finetune_debiased",
            "search_mask", "evaluate_mnli", "evaluate_masks_mnli", "mask_report", "mask_benchmark", "table1",
            "figure_id_ood", "srnet_mask_train", "srnet_imp", "srnet_retrain", "srnet_t5",
            "srnet_timing", "evaluate_srnets_mnli", "srnet_report"} <= checked
    assert not (tmp_path / "res").exists()


# ------------------------------------------------------------------------------ debris of a killed run
def test_stale_staging_folders_of_the_same_checkpoint_are_swept(checkpoint, tmp_path):
    from tiny_models import tiny_bert

    from maskbench.text.models import data_vocab_tokenizer as tokenizer_of

    models = tmp_path / "models"
    stale = models / ".seed~1.k3x_9q0a"  # what kill -9 left of an earlier write_checkpoint of seed~1
    (stale / "sub").mkdir(parents=True)
    (stale / "model.safetensors").write_bytes(b"half")
    others = [models / ".seed~2.abcdefgh", models / ".seed~1.5.abcdefgh"]  # other outputs' (maybe running) jobs
    for folder in others:
        folder.mkdir()
    resume_state = models / ".seed~1.resume.pt"  # not a staging folder
    resume_state.write_bytes(b"state")
    write_checkpoint(models / "seed~1", tiny_bert(), tokenizer_of(["a b"], tmp_path / "vocab"), {"seed": 1})
    assert not stale.exists()
    assert all(folder.is_dir() for folder in others) and resume_state.exists()
    assert (models / "seed~1" / "train_summary.json").is_file()
    # the temporaries of atomic writes go the same way
    left = models / ".summary.json.0a1b2c3d.tmp.json"
    left.write_text("{")
    runtime.atomic_write_json(models / "summary.json", {"ok": True})
    assert not left.exists() and json.loads((models / "summary.json").read_text()) == {"ok": True}
