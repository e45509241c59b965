"""The Hugging Face export, the public API and the `maskbench` console command on a tiny BERT classifier (hidden 16,
2 heads of 8, FFN 32, 2 layers, random non-zero biases): the exported folder, loaded by plain transformers in a
process that never imports maskbench, gives the masked model's logits (bit-equal when no unit is removed, within
1e-5 when FFN neurons are); every subcommand end to end; bad inputs refused before any work, in one line."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from transformers import AutoModelForSequenceClassification, BertConfig, BertForSequenceClassification

import maskbench
from maskbench import console
from maskbench.data.schema import write_prepared
from maskbench.data.synthetic import generate
from maskbench.masking.apply import MaskSet, MaskSwitch, model_fingerprint
from maskbench.text import hf_export
from maskbench.text.models import data_vocab_tokenizer, load_classifier
from maskbench.tracks.nlu.mask_search_run import SEARCH_HPARAMS
from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec

REPO = Path(__file__).resolve().parents[1]
LABELS = ["entailment", "neutral", "contradiction"]
HIDDEN, HEAD, FFN = 16, 8, 32
PREFIX = "bert.encoder.layer"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A tiny checkpoint folder (from the synthetic NLI words), its prepared data, and two masks: `structured` empties
    head 1 of layer 0 (its V rows), head 0 of layer 1 (its O columns), FFN neurons 1, 2, 3 of layer 0 (input rows)
    and 4, 5 of layer 1 (output columns) on top of a random 70% weight mask; `plain` is the random mask alone."""
    folder = tmp_path_factory.mktemp("export")
    for split, n in (("train", 48), ("dev", 24)):
        frame, labels = generate("nli", split, n, seed=0, rho=0.9)
        write_prepared(frame, labels, folder / f"{split}.parquet", {"dataset": split, "task": "mnli"})
    frame = pd.read_parquet(folder / "train.parquet")
    tokenizer = data_vocab_tokenizer(pd.concat([frame.text_a, frame.text_b]), folder / "vocab")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=FFN, max_position_embeddings=64, num_labels=3,
                        id2label=dict(enumerate(LABELS)), label2id={k: i for i, k in enumerate(LABELS)})
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():  # non-zero biases: a forgotten bias, or a wrong fold, shows in the logits
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.normal_(0.0, 0.5)
    model.save_pretrained(folder / "ckpt")
    tokenizer.save_pretrained(folder / "ckpt")
    rng = np.random.default_rng(0)
    plain = {name: rng.random(tuple(m.weight.shape)) < 0.7 for name, m in model.named_modules()
             if name.startswith(PREFIX) and isinstance(m, torch.nn.Linear)}
    structured = {name: mask.copy() for name, mask in plain.items()}
    structured[f"{PREFIX}.0.attention.self.value"][HEAD:2 * HEAD] = False
    structured[f"{PREFIX}.1.attention.output.dense"][:, :HEAD] = False
    structured[f"{PREFIX}.0.intermediate.dense"][[1, 2, 3]] = False
    structured[f"{PREFIX}.1.output.dense"][:, [4, 5]] = False
    meta = {"method": "movement_sigmoid", "loss": "reweight", "seed": 1, "model_dir": str(folder / "ckpt"),
            "train": str(folder / "train.parquet"), "task": "mnli", "bias_probs": "bias.parquet",
            "model_fingerprint": model_fingerprint(model), "zero_bias_of_empty_rows": False}
    MaskSet(structured, meta).save(folder / "structured.mask")
    MaskSet(plain, meta).save(folder / "plain.mask")
    (folder / "pairs.jsonl").write_text("".join(
        json.dumps({"id": f"p{i}", "premise": a, "hypothesis": b}) + "\n"
        for i, (a, b) in enumerate(zip(frame.text_a[:6], frame.text_b[:6], strict=True))))
    return folder


def batch(tokenizer, folder):
    frame = pd.read_parquet(folder / "dev.parquet")
    return dict(tokenizer(list(frame.text_a[:8]), list(frame.text_b[:8]), padding=True, return_tensors="pt"))


@torch.no_grad()
def masked_logits(folder, mask_name):
    """The masked evaluation's logits: the checkpoint with the mask applied as the workflow applies it."""
    model, tokenizer = load_classifier(folder / "ckpt")
    MaskSwitch(model).apply(MaskSet.load(folder / mask_name))
    return model.eval()(**batch(tokenizer, folder)).logits


PLAIN_LOAD = """
import json, sys
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer
out = {}
texts = json.loads(sys.argv[1])
for folder in sys.argv[2:]:
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        out[folder] = model(**tokenizer(texts[0], texts[1], padding=True, return_tensors="pt")).logits.tolist()
out["maskbench_imported"] = sorted(m for m in sys.modules if m.split(".")[0] == "maskbench")
print(json.dumps(out))
"""


def test_the_export_loads_with_plain_transformers_and_predicts_what_the_masked_model_does(work):
    structured = maskbench.export_model(work / "ckpt", work / "structured.mask", work / "out_structured")
    plain = maskbench.export_model(work / "ckpt", work / "plain.mask", work / "out_plain")
    # the fewest removable neurons of any layer is 2 (layer 1's columns 4, 5): both layers lose 2
    assert structured.intermediate_size == (FFN, FFN - 2) and not structured.bit_exact
    assert [u.heads_emptied for u in structured.layers] == [[1], [0]]
    assert [u.ffn_removable for u in structured.layers] == [3, 2]
    assert structured.layers[1].ffn_removed == [4, 5] and len(structured.layers[0].ffn_removed) == 2
    assert set(structured.layers[0].ffn_removed) <= {1, 2, 3}
    # layer 0's neurons lost their input rows only: act(b1) != 0 with the random biases, so they are folded
    assert structured.layers[0].ffn_folded == structured.layers[0].ffn_removed
    assert plain.intermediate_size == (FFN, FFN) and plain.bit_exact
    card = (work / "out_structured" / "README.md").read_text()
    assert "layer 0: [1]; layer 1: [0]" in card and f"FFN width {FFN} → {FFN - 2}" in card
    config = json.loads((work / "out_structured" / "config.json").read_text())
    assert config["intermediate_size"] == FFN - 2
    record = json.loads((work / "out_structured" / "maskbench_export.json").read_text())
    assert record["mask_sha256"] == hf_export.file_sha256(work / "structured.mask") == structured.mask_sha256

    frame = pd.read_parquet(work / "dev.parquet")
    texts = [list(frame.text_a[:8]), list(frame.text_b[:8])]
    done = subprocess.run([sys.executable, "-c", PLAIN_LOAD, json.dumps(texts), str(work / "out_structured"),
                           str(work / "out_plain")], capture_output=True, text=True, cwd=work,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded["maskbench_imported"] == []
    want_structured, want_plain = masked_logits(work, "structured.mask"), masked_logits(work, "plain.mask")
    got_structured = torch.tensor(loaded[str(work / "out_structured")])
    assert (got_structured - want_structured).abs().max() <= 1e-5
    assert not torch.equal(want_structured, masked_logits(work, "plain.mask"))  # the structured units mattered
    # no unit removed: bit for bit (the JSON floats round-trip float32 exactly; checked in this process too)
    assert torch.equal(torch.tensor(loaded[str(work / "out_plain")]), want_plain)
    model = AutoModelForSequenceClassification.from_pretrained(work / "out_plain").eval()
    _, tokenizer = load_classifier(work / "ckpt")
    with torch.no_grad():
        assert torch.equal(model(**batch(tokenizer, work)).logits, want_plain)


def test_the_api_applies_switches_and_removes_a_mask_bit_for_bit(work):
    model, _ = maskbench.load_model(work / "ckpt")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    switch = maskbench.apply_mask(model, work / "plain.mask")
    weight = model.bert.encoder.layer[0].intermediate.dense.weight
    assert torch.equal(weight == 0, ~torch.from_numpy(maskbench.load_mask(work / "plain.mask").masks[
        f"{PREFIX}.0.intermediate.dense"]) | (before[f"{PREFIX}.0.intermediate.dense.weight"] == 0))
    switch.apply(maskbench.load_mask(work / "structured.mask"))
    assert not model.bert.encoder.layer[0].intermediate.dense.weight[1:4].any()
    maskbench.remove_mask(switch)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_every_console_subcommand_runs_end_to_end(work, tmp_path, capsys):
    mask = tmp_path / "searched.mask"
    config = tmp_path / "search.yaml"
    config.write_text(yaml.safe_dump({"mask_search": {"threshold_end": 0.2, "hparams": {"max_length": 32}}}))
    assert console.main(["search", "--model", str(work / "ckpt"), "--train", str(work / "train.parquet"),
                         "--dev", str(work / "dev.parquet"), "--config", str(config), "--epochs", "1",
                         "--batch-size", "16", "--output", str(mask), "--threads", "1"]) == 0
    searched = MaskSet.load(mask)
    summary = json.loads((tmp_path / "searched.mask.search.json").read_text())
    assert searched.meta["spec"]["threshold_end"] == 0.2 and searched.meta["hparams"]["batch_size"] == 16
    assert searched.meta["hparams"]["learning_rate"] == SEARCH_HPARAMS["learning_rate"] and summary["steps"] == 3
    assert summary["density"] == pytest.approx(searched.density())

    assert console.main(["evaluate", "--model", str(work / "ckpt"), "--mask", str(mask), "--data",
                         str(work / "dev.parquet"), "--output-dir", str(tmp_path / "eval"), "--seed", "1"]) == 0
    assert console.main(["evaluate", "--model-name-or-path", str(work / "ckpt"), "--data", str(work / "dev.parquet"),
                         "--output-dir", str(tmp_path / "eval_base"), "--seed", "1"]) == 0
    masked = json.loads((tmp_path / "eval" / "dev.json").read_text())
    predictions = pd.read_parquet(tmp_path / "eval" / "dev.predictions.parquet")
    assert masked["mask_density"] == pytest.approx(searched.density())
    assert masked["metrics"]["accuracy"] == pytest.approx(100 * (predictions.gold == predictions.pred).mean())

    assert console.main(["predict", "--model", str(work / "ckpt"), "--mask", str(mask), "--input",
                         str(work / "pairs.jsonl"), "--output", str(tmp_path / "pred.jsonl")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == [f"p{i}" for i in range(6)] and set(lines[0]) == {"id", "none", str(mask)}

    capsys.readouterr()
    assert console.main(["inspect", str(work / "structured.mask"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    ffn_in = MaskSet.load(work / "structured.mask").masks[f"{PREFIX}.0.intermediate.dense"]
    assert shown["modules"][f"{PREFIX}.0.intermediate.dense"] == pytest.approx(ffn_in.mean())
    assert shown["by_layer"]["0"] == pytest.approx(np.mean(np.concatenate(
        [m.ravel() for n, m in MaskSet.load(work / "structured.mask").masks.items() if ".layer.0." in n])))
    assert console.main(["inspect", str(work / "structured.mask")]) == 0
    assert "by module kind:" in capsys.readouterr().out

    assert console.main(["export", "--model", str(work / "ckpt"), "--mask", str(mask), "--output-dir",
                         str(tmp_path / "hf"), "--evaluation", str(tmp_path / "eval" / "dev.json"),
                         "--baseline-evaluation", str(tmp_path / "eval_base" / "dev.json")]) == 0
    card = (tmp_path / "hf" / "README.md").read_text()
    base = json.loads((tmp_path / "eval_base" / "dev.json").read_text())["metrics"]["accuracy"]
    change = masked["metrics"]["accuracy"] - base
    assert f"| dev | ID | {masked['metrics']['accuracy']:.2f} (n=1, no spread) | {base:.2f} (n=1, no spread) | " \
           f"{change:.2f} (n=1, no spread) |" in card
    assert hf_export.file_sha256(mask) in card and f"{searched.density():.4f}" in card
    assert str(work / "ckpt") in card and "reweight" not in card  # this search used ce: the card says its own loss


def test_the_console_command_is_the_packaged_script_and_explains_itself():
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"maskbench": "maskbench.console:main"}
    done = subprocess.run([sys.executable, "-m", "maskbench.console", "export", "--help"], capture_output=True,
                          text=True, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and "--output-dir" in done.stdout and "--overwrite" in done.stdout


def test_the_search_defaults_are_the_synthetic_config_s(tmp_path):
    section = yaml.safe_load((REPO / "tests/configs/synthetic.yaml").read_text())["mask_search"]
    assert SEARCH_HPARAMS == {**section["hparams"], "learning_rate": section["score_learning_rate"]}
    spec = MaskSearchSpec()
    assert {k: getattr(spec, k) for k in section if k not in ("hparams", "score_learning_rate")} == \
        {k: v for k, v in section.items() if k not in ("hparams", "score_learning_rate")}


def one_line_error(capsys, argv):
    assert console.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]  # (transformers' loading bar may come before it)
    assert err.startswith(f"maskbench {argv[0]}: error: ")
    return err


def test_bad_inputs_are_refused_in_one_line_before_any_work(work, tmp_path, capsys, monkeypatch):
    # a mask of another model: a different fingerprint, then different shapes
    other = BertForSequenceClassification(BertConfig.from_pretrained(work / "ckpt"))
    masks = MaskSet.load(work / "plain.mask").masks
    MaskSet(masks, {"model_fingerprint": model_fingerprint(other)}).save(tmp_path / "foreign.mask")
    err = one_line_error(capsys, ["export", "--model", str(work / "ckpt"), "--mask", str(tmp_path / "foreign.mask"),
                                  "--output-dir", str(tmp_path / "a")])
    assert "foreign.mask" in err and "field 'meta.model_fingerprint'" in err and "different model" in err
    assert not (tmp_path / "a").exists()
    name = f"{PREFIX}.0.intermediate.dense"
    MaskSet({**masks, name: masks[name][:-1]}, dict(MaskSet.load(work / "plain.mask").meta)).save(
        tmp_path / "shape.mask")
    err = one_line_error(capsys, ["evaluate", "--model", str(work / "ckpt"), "--mask", str(tmp_path / "shape.mask"),
                                  "--data", str(work / "dev.parquet"), "--output-dir", str(tmp_path / "b")])
    assert "shape.mask" in err and name in err and f"({FFN - 1}, {HIDDEN})" in err
    assert not (tmp_path / "b").exists()

    # a non-empty output folder: refused before the model is loaded
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    monkeypatch.setattr(hf_export, "load_classifier", lambda *_: pytest.fail("the model was loaded"))
    err = one_line_error(capsys, ["export", "--model", str(work / "ckpt"), "--mask", str(work / "plain.mask"),
                                  "--output-dir", str(tmp_path / "full")])
    assert f"{tmp_path / 'full'}: field --output-dir" in err and "--overwrite" in err
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    (tmp_path / "bad.json").write_text(json.dumps({"eval_set": "dev", "metrics": {"accuracy": "high"}}))
    err = one_line_error(capsys, ["export", "--model", str(work / "ckpt"), "--mask", str(work / "plain.mask"),
                                  "--output-dir", str(tmp_path / "c"), "--evaluation", str(tmp_path / "bad.json")])
    assert "bad.json: field 'metrics.accuracy'" in err and "'high'" in err
    monkeypatch.undo()

    # an interrupted export leaves no folder that looks complete, and --overwrite replaces one only at the end
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # the tokenizer is written after the weights: the staging folder then holds config.json and model.safetensors
    monkeypatch.setattr("transformers.models.bert.tokenization_bert.BertTokenizer.save_pretrained", interrupted)
    with pytest.raises(KeyboardInterrupt):
        maskbench.export_model(work / "ckpt", work / "plain.mask", tmp_path / "full", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".full")) == []
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    monkeypatch.undo()
    maskbench.export_model(work / "ckpt", work / "plain.mask", tmp_path / "full", overwrite=True)
    assert not (tmp_path / "full" / "keep.txt").exists() and (tmp_path / "full" / "model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".full")) == []


def test_the_api_page_s_example_runs(work, tmp_path, monkeypatch, capsys):
    """docs/api.md's runnable example, on the tiny checkpoint and mask instead of the embedded config's outputs."""
    import re

    page = (REPO / "docs" / "api.md").read_text()
    example = re.findall(r"```python\n(.*?)```", page.split("A runnable example")[1], re.S)[0]
    example = re.sub(r'^checkpoint = ".*"$', f'checkpoint = "{work / "ckpt"}"', example, flags=re.M)
    example = re.sub(r'^mask_file = ".*"$', f'mask_file = "{work / "structured.mask"}"', example, flags=re.M)
    assert str(work) in example and "results/" not in example
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/api.md", "exec"), {})
    assert (tmp_path / "exported" / "md_overlap_seed1" / "model.safetensors").is_file()
    assert f"({FFN}, {FFN - 2})" in capsys.readouterr().out


def test_a_bad_search_setting_is_refused_naming_the_config_file(work, tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"mask_search": {"method": "movement_sigmod"}}))
    argv = ["search", "--model", str(work / "ckpt"), "--train", str(work / "train.parquet"), "--output",
            str(tmp_path / "x.mask")]
    err = one_line_error(capsys, [*argv, "--config", str(config)])
    assert f"{config}: field mask_search" in err and "'movement_sigmod'" in err
    assert "field 'loss' is 'focal-ish'" in one_line_error(capsys, [*argv, "--loss", "focal-ish"])
    assert not (tmp_path / "x.mask").exists()
