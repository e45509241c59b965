"""The gender track's entry points on a tiny BERT the test writes: the corpus, a frozen block-pruning run (a mask
file that applies to the encoder it was searched on and to no other), a debias-only run (a checkpoint), and SEAT
on the real SEAT files; bad inputs stop before any model work with the file named."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import BertConfig, BertModel

from maskbench.masking.apply import MaskMismatchError, MaskSet
from maskbench.steps.gender import corpus as gender_corpus
from maskbench.steps.gender import debias as gender_debias
from maskbench.steps.gender import seat as gender_seat
from maskbench.text.models import data_vocab_tokenizer
from maskbench.tracks.gender.corpus import CorpusError, read_corpus
from maskbench.tracks.gender.evaluation import load_run
from maskbench.tracks.gender.wordlists import WordListError

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
    spec = {"granularity": "block", "block": 8, "layers": "last", "mode": "token", "score_learning_rate": 1.0}
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


def test_task_performance_keeps_pruned_weights_at_zero(workdir, tmp_path):
    """Paper B's GLUE column offline: the frozen run's encoder under a new head, fine-tuned on a synthetic task —
    the pruned entries are still exactly zero afterwards, every other trained entry moved, the original encoder
    scored too."""
    from maskbench.steps.gender import task as gender_task

    root, corpus, encoder = workdir
    mask = tmp_path / "head.mask"
    spec = {"granularity": "head", "layers": "all", "mode": "token", "score_learning_rate": 2.0}
    gender_debias.main(["--model", str(encoder), "--corpus", str(corpus), "--spec", json.dumps(spec),
                        "--hparams", json.dumps({"epochs": 2, "batch_size": 16, "max_length": 24, "warmup": 0}),
                        "--seed", "1", "--out", str(mask), "--summary", str(tmp_path / "head.json"),
                        "--threads", "1"])
    data = synthetic_nli_task(tmp_path)
    hparams = json.dumps({"epochs": 1, "batch_size": 16, "max_length": 24, "learning_rate": 1e-3,
                          "weight_decay": 0.1, "warmup": 0})
    outs = {}
    for name, run in (("pruned", ["--run", str(mask)]), ("original", [])):
        outs[name] = tmp_path / f"{name}.task.json"
        gender_task.main(["--model", str(encoder), *run, "--task", "nli", "--train", str(data["train"]),
                          "--dev", str(data["dev"]), "--hparams", hparams, "--seed", "1", "--threads", "1",
                          "--out", str(outs[name])])
    pruned, original = (json.loads(outs[k].read_text()) for k in ("pruned", "original"))
    masks = MaskSet.load(mask).masks
    n_masked = sum(int((~m).sum()) for m in masks.values())
    assert n_masked > 0 and pruned["pruned_entries"] >= n_masked and pruned["pruned_stayed_zero"]
    assert pruned["encoder_density"] < 1.0
    assert original["pruned_entries"] == 0 and original["encoder_density"] == 1.0
    for report in (pruned, original):
        assert report["n_train"] == 64 and report["n_dev"] == 32 and 0.0 <= report["dev_accuracy"] <= 100.0
    with pytest.raises(FileNotFoundError, match="nothing.mask"):
        gender_task.main(["--model", str(encoder), "--run", str(tmp_path / "nothing.mask"), "--task", "nli",
                          "--train", str(data["train"]), "--dev", str(data["dev"]), "--seed", "1",
                          "--out", str(tmp_path / "x.json")])


def test_held_pruned_entries_survive_adamw_with_weight_decay():
    """The gradient hook holds exact zeros through AdamW steps with weight decay; the rest of the encoder trains."""
    from maskbench.tracks.gender.downstream import (
        classifier_from_encoder,
        hold_pruned_at_zero,
        pruned_entries,
        pruned_still_zero,
    )

    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16, max_position_embeddings=16))
    with torch.no_grad():
        encoder.encoder.layer[0].attention.self.value.weight[:4] = 0   # head 0's value rows
        encoder.encoder.layer[0].attention.self.value.bias[:4] = 0
        encoder.encoder.layer[0].intermediate.dense.weight[3] = 0      # one FFN neuron's input row and bias
        encoder.encoder.layer[0].intermediate.dense.bias[3] = 0
    model = classifier_from_encoder(encoder, ["a", "b"])
    for name, param in encoder.named_parameters():
        assert torch.equal(dict(model.bert.named_parameters())[name], param), name
    keep = {"encoder.layer.0.attention.self.value": np.ones((8, 8), dtype=bool),
            "encoder.layer.0.intermediate.dense": np.ones((16, 8), dtype=bool)}
    keep["encoder.layer.0.attention.self.value"][:4] = False
    keep["encoder.layer.0.intermediate.dense"][3] = False
    pruned = pruned_entries(model, keep)
    assert pruned.n_pruned == 4 * 8 + 4 + 8 + 1  # value rows and their biases, the neuron's row and bias
    total = 1 * (4 * (8 * 8 + 8) + 2 * 8 * 16 + 16 + 8)  # Q, K, V, O with biases; FFN in (bias 16), out (bias 8)
    assert pruned.total == total and pruned.density == pytest.approx(1 - 45 / total)
    before = {n: p.detach().clone() for n, p in model.bert.encoder.named_parameters()}
    hold_pruned_at_zero(model, pruned)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    ids = torch.randint(0, 30, (4, 6))
    for _ in range(3):
        loss = model(input_ids=ids, labels=torch.tensor([0, 1, 0, 1])).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert pruned_still_zero(model, pruned)
    value = dict(model.bert.encoder.named_parameters())["layer.0.attention.self.value.weight"]
    assert not torch.equal(value[4:], before["layer.0.attention.self.value.weight"][4:])


def test_unfrozen_checkpoint_holds_zeros_exactly_where_its_mask_prunes(workdir, tmp_path):
    """A run whose weights train saves its weights with the masked values written in: zero at every entry its
    ``mask.mask`` drops (and the bias of every fully dropped row), with the final threshold — not the last
    training step's, which keeps scores between the two."""
    from safetensors.torch import load_file

    root, corpus, encoder = workdir
    out = tmp_path / "unfrozen"
    spec = {"granularity": "head", "layers": "all", "mode": "sentence", "freeze_weights": False, "score_learning_rate": 0.5}
    gender_debias.main(["--model", str(encoder), "--corpus", str(corpus), "--spec", json.dumps(spec),
                        "--hparams", json.dumps({"epochs": 2, "batch_size": 16, "max_length": 24, "warmup": 0}),
                        "--seed", "1", "--out", str(out), "--summary", str(tmp_path / "unfrozen.json"),
                        "--threads", "1"])
    weights = load_file(out / "model.safetensors")
    masks = MaskSet.load(out / "mask.mask").masks
    assert sum(int((~m).sum()) for m in masks.values()) > 0
    for name, keep in masks.items():
        keep = torch.from_numpy(keep)
        assert torch.all(weights[f"{name}.weight"][~keep] == 0), name
        assert torch.all(weights[f"{name}.bias"][~keep.any(dim=1)] == 0), name


def test_a_corpus_read_from_a_pair_dataset_keeps_each_distinct_text_once(tmp_path):
    """--source dataset: every distinct premise and hypothesis of the dataset is a line (a premise shared by two
    pairs counts once), cut as any corpus: 'he' makes a male line, 'she' a female one, 'nurse' alone a stereotype
    line, a line with both genders and a line with no keyword are dropped."""
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("index\tpremise\thypothesis\tgold_label\n"
                   "1\the went home .\tshe stayed .\tneutral\n"
                   "2\the went home .\tthe nurse came .\tneutral\n"
                   "3\the and she left .\tthe door is open .\tentailment\n", encoding="utf-8")
    spec = {"task": "mnli", "source": f"local:{tsv}", "format": "tsv",
            "columns": {"id": "index", "text_a": "premise", "text_b": "hypothesis", "label": "gold_label"},
            "labels": ["entailment", "neutral", "contradiction"]}
    out = tmp_path / "corpus.parquet"
    assert gender_corpus.main(["--source", "dataset", "--dataset-spec", json.dumps(spec), *LISTS, "--heldout", "0",
                               "--seed", "0", "--out", str(out)]) == 0
    frame = pd.read_parquet(out)
    assert sorted(zip(frame["category"], frame["text"], strict=True)) == [
        ("female", "she stayed ."), ("male", "he went home ."), ("stereotype", "the nurse came .")]
    with pytest.raises(ValueError, match="--source dataset needs --dataset-spec"):
        gender_corpus.main(["--source", "dataset", *LISTS, "--out", str(tmp_path / "x.parquet")])


def test_a_killed_task_fine_tuning_resumes_bit_identically(workdir, tmp_path, monkeypatch):
    """Paper B's task column with --checkpoint-every 2: killed before its fourth step, rerun, the same JSON as a run
    never killed (timing and provenance aside), the steps before the state not run again, no state left."""
    from test_resume import Killed, count_steps, kill_at

    from maskbench.steps.gender import task as gender_task

    _, _, encoder = workdir
    data = synthetic_nli_task(tmp_path)
    hparams = json.dumps({"epochs": 1, "batch_size": 16, "max_length": 24, "learning_rate": 1e-3, "warmup": 0})

    def run(out):
        return gender_task.main(["--model", str(encoder), "--task", "nli", "--train", str(data["train"]),
                                 "--dev", str(data["dev"]), "--hparams", hparams, "--seed", "1", "--threads", "1",
                                 "--checkpoint-every", "2", "--out", str(out)])

    assert run(tmp_path / "whole.json") == 0
    out = tmp_path / "cut.json"
    kill_at(monkeypatch, 3)
    with pytest.raises(Killed):
        run(out)
    assert not out.exists()
    monkeypatch.undo()
    ran = count_steps(monkeypatch)
    assert run(out) == 0
    assert ran == [2, 3]  # steps count from 0: the state saved after two steps, then steps 2 and 3 of 4
    whole, cut = (json.loads(p.read_text()) for p in (tmp_path / "whole.json", out))
    drop = ("train_seconds", "provenance")
    assert {k: v for k, v in cut.items() if k not in drop} == {k: v for k, v in whole.items() if k not in drop}
    assert not list(tmp_path.glob("*.state*")) and not list(tmp_path.glob(".*state*"))


def synthetic_nli_task(folder):
    """A synthetic NLI task prepared as paper B's task column reads it: 64 training and 32 dev pairs."""
    from maskbench.steps import prepare

    data = {}
    for split, n in (("train", 64), ("dev", 32)):
        data[split] = folder / f"nli_{split}.parquet"
        prepare.main(["--name", f"nli_{split}", "--spec", json.dumps(
            {"task": "nli", "source": "synthetic:nli", "split": split, "n": n, "seed": 0}),
            "--out", str(data[split]), "--summary", str(folder / f"nli_{split}.summary.json")])
    return data
