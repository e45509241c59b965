"""The gender track's entry points on a tiny BERT the test writes: the corpus, a frozen block-pruning run (a mask
file that applies to the encoder it was searched on and to no other), a debias-only run (a checkpoint), and SEAT
on the real SEAT files; bad inputs stop before any model work with the file named."""

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from transformers import BertConfig, BertModel

from maskbench.masking.apply import MaskMismatchError, MaskSet
from maskbench.steps import gender_corpus, gender_debias, gender_seat
from maskbench.tracks.gender.corpus import CorpusError, read_corpus
from maskbench.tracks.gender.evaluation import load_run
from maskbench.tracks.gender.wordlists import WordListError
from maskbench.tracks.nlu.models import data_vocab_tokenizer

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data/gender"
LISTS = ["--male", str(DATA / "male.txt"), "--female", str(DATA / "female.txt"), "--stereotype",
         str(DATA / "stereotype.txt")]
SEAT = [str(DATA / "seat" / f"sent-weat{n}.jsonl") for n in ("6", "7b")]


def tiny_encoder(folder: Path, texts: list[str], seed: int = 0) -> Path:
    tokenizer = data_vocab_tokenizer(texts, folder)
    torch.manual_seed(seed)
    model = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=32, max_position_embeddings=64))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("gender")
    corpus = root / "corpus.parquet"
    gender_corpus.main(["--source", "generate:80", *LISTS, "--heldout", "10", "--seed", "0", "--mixed", "5",
                        "--out", str(corpus)])
    texts = list(pd.read_parquet(corpus)["text"])
    for path in SEAT:
        data = json.loads(Path(path).read_text())
        texts += [e for key in ("targ1", "targ2", "attr1", "attr2") for e in data[key]["examples"]]
    return root, corpus, tiny_encoder(root / "encoder", texts)


def test_corpus_table(workdir):
    _, corpus, _ = workdir
    frame = pd.read_parquet(corpus)
    assert frame.groupby(["category", "split"]).size().to_dict() == {
        ("female", "heldout"): 10, ("female", "train"): 70, ("male", "heldout"): 10, ("male", "train"): 70,
        ("stereotype", "heldout"): 10, ("stereotype", "train"): 70}
    assert {len(v) for v in read_corpus(corpus).values()} == {70}


def test_frozen_block_run_writes_a_mask_of_that_encoder(workdir):
    root, corpus, encoder = workdir
    out, summary = root / "block.mask", root / "block.json"
    spec = {"granularity": "block", "block": 8, "layers": "last", "mode": "token", "score_lr": 1.0}
    gender_debias.main(["--model", str(encoder), "--corpus", str(corpus), "--spec", json.dumps(spec),
                        "--hparams", json.dumps({"epochs": 2, "batch_size": 16, "max_length": 24, "warmup": 0}),
                        "--seed", "1", "--out", str(out), "--summary", str(summary), "--threads", "1"])
    report = json.loads(summary.read_text())
    assert report["steps"] == 10 and report["n_targets"] == 70 and report["n_attributes"] == 140
    assert 0.0 < report["density"] <= 1.0 and len(report["heads_pruned"]) == 2
    assert len(report["attribute_vectors"]) == 2
    model, _ = load_run(str(encoder), out)
    base, _ = load_run(str(encoder))
    masks = MaskSet.load(out).masks
    assert set(masks) == {n for n, m in base.named_modules() if n.startswith("encoder.layer.") and n.endswith(
        ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense"))}
    weights, originals = dict(model.named_parameters()), dict(base.named_parameters())
    for name, mask in masks.items():   # the masked values written in: pruned entries 0, the rest untouched
        expected = originals[f"{name}.weight"] * torch.from_numpy(mask)
        assert torch.equal(weights[f"{name}.weight"], expected), name
    assert sum(int((~m).sum()) for m in masks.values()) == round((1 - report["density"]) *
                                                                 sum(m.size for m in masks.values()))
    other = tiny_encoder(root / "other", ["a b c"], seed=5)
    with pytest.raises(MaskMismatchError, match="different"):
        load_run(str(other), out)
    seat = root / "seat_block.json"
    gender_seat.main(["--model", str(encoder), "--run", str(out), "--tests", *SEAT, "--out", str(seat),
                      "--n-samples", "2000", "--threads", "1"])
    rows = json.loads(seat.read_text())["seat"]
    assert [r["test"] for r in rows] == ["sent-weat6", "sent-weat7b"]
    assert all(-2.0 <= r["effect_size"] <= 2.0 and 0.0 < r["p_value"] <= 1.0 for r in rows)


def test_debias_only_run_writes_a_checkpoint_and_seat_reads_it(workdir):
    root, corpus, encoder = workdir
    out, summary = root / "debias_only", root / "debias_only.json"
    spec = {"granularity": "none", "freeze_weights": False, "layers": "all", "mode": "sentence",
            "variant": "kaneko"}
    gender_debias.main(["--model", str(encoder), "--corpus", str(corpus), "--spec", json.dumps(spec),
                        "--hparams", json.dumps({"epochs": 1, "batch_size": 16, "max_length": 24, "warmup": 0,
                                                 "learning_rate": 1e-3, "log_every": 1}),
                        "--seed", "1", "--out", str(out), "--summary", str(summary), "--threads", "1"])
    assert (out / "train_summary.json").is_file() and (out / "model.safetensors").is_file()
    curve = json.loads(summary.read_text())["curve"]
    assert curve[-1]["loss_debias"] < curve[0]["loss_debias"]
    original = root / "seat_original.json"
    debiased = root / "seat_debiased.json"
    for run, target in ((None, original), (out, debiased)):
        gender_seat.main(["--model", str(encoder), *(["--run", str(run)] if run else []), "--tests", *SEAT,
                          "--out", str(target), "--n-samples", "2000", "--threads", "1"])
    before = [r["effect_size"] for r in json.loads(original.read_text())["seat"]]
    after = [r["effect_size"] for r in json.loads(debiased.read_text())["seat"]]
    assert before != after   # the weights moved


def test_bad_inputs_name_the_file(workdir, tmp_path):
    root, corpus, encoder = workdir
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    with pytest.raises(WordListError, match="empty.txt: the word list is empty"):
        gender_corpus.main(["--source", "generate:10", "--male", str(empty), "--female", str(DATA / "female.txt"),
                            "--stereotype", str(DATA / "stereotype.txt"), "--out", str(tmp_path / "c.parquet")])
    bad = tmp_path / "bad.parquet"
    pd.read_parquet(corpus).assign(category="neutral").to_parquet(bad)
    with pytest.raises(CorpusError, match="bad.parquet: field 'category' has value 'neutral'"):
        gender_debias.main(["--model", str(encoder), "--corpus", str(bad), "--out", str(tmp_path / "x.mask"),
                            "--summary", str(tmp_path / "x.json"), "--seed", "1"])
    with pytest.raises(ValueError, match="writes a .mask file"):
        gender_debias.main(["--model", str(encoder), "--corpus", str(corpus), "--out", str(tmp_path / "x"),
                            "--summary", str(tmp_path / "x.json"), "--seed", "1"])
    with pytest.raises(ValueError, match="field 'blocks' is unknown"):
        gender_debias.main(["--model", str(encoder), "--corpus", str(corpus), "--spec", '{"blocks": 8}',
                            "--out", str(tmp_path / "x.mask"), "--summary", str(tmp_path / "x.json"), "--seed", "1"])
