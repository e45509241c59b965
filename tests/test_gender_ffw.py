"""Paper D's FFW on the gender track (maskbench.tracks.gender.ffw / attribute / matrix_cells, steps gender.ffw and
gender.matrix_cells): the gender attribute checked by hand on real MultiNLI sentences, the task term and the whole
objective on hand-made batches against hand-computed numbers, the structured gates silencing whole heads and
neurons, the saved mask expanded without changing the function, and the records of the matrix."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

from maskbench.ffw.core import FFWSettings, attach_gates, gate_objective
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.matrix.cells import read_cells
from maskbench.steps.gender import ffw as gender_ffw
from maskbench.steps.gender import matrix_cells as gender_matrix_cells
from maskbench.steps.gender import seat as gender_seat
from maskbench.tracks.gender.attribute import (
    ATTRIBUTES,
    attribute_of,
    attribute_sentences,
    balanced_choice,
)
from maskbench.tracks.gender.corpus import Keyed, categorize
from maskbench.tracks.gender.encoding import hidden_states
from maskbench.tracks.gender.evaluation import load_run
from maskbench.tracks.gender.ffw import GenderFFW, GenderFFWSettings, expand_structured, representation_term
from maskbench.tracks.gender.matrix_cells import gender_cells
from maskbench.tracks.gender.wordlists import read_word_list

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data/gender"
LISTS = {name: set(read_word_list(DATA / f"{name}.txt")) for name in ("male", "female", "stereotype")}


# ------------------------------------------------------------------------------------------------ the attribute

# real sentences of data/nli/mnli_dev_matched.tsv (premises and hypotheses), labelled by hand: the list the
# sentence's gender word comes from (Kaneko & Bollegala's male.txt: him, he, his; female.txt: her)
REAL = [
    ("I like him for the most part, but would still enjoy seeing someone beat him.", "male", 0),
    ("He was of two minds, one reveled in the peace of this village.", "male", 0),
    ("Joan of Arc sacrificed her life at Rouen, which became an enduring symbol of opposition to tyranny.",
     "female", 1),
    ("The military didn't pay for her education.", "female", 1),
]


@pytest.mark.parametrize("text,category,attribute", REAL)
def test_the_gender_attribute_of_real_sentences_by_hand(text, category, attribute):
    keyed = categorize(text, LISTS["male"], LISTS["female"], LISTS["stereotype"])
    assert keyed.category == category
    assert attribute_of(keyed) == attribute
    assert ATTRIBUTES[attribute] == category


def test_a_sentence_of_both_genders_or_of_none_has_no_attribute():
    # real: "He and his wife ... surrounded by her care and attention." has male (he, his) and female (her) words
    both = "He and his wife had lived at Styles Court in every luxury, surrounded by her care and attention."
    assert categorize(both, LISTS["male"], LISTS["female"], LISTS["stereotype"]) is None
    stereo = categorize("GAO recommends that the Secretary of Defense revise policy and guidance",
                        LISTS["male"], LISTS["female"], LISTS["stereotype"])
    assert stereo.category == "stereotype"
    with pytest.raises(ValueError, match="category 'stereotype' has no gender attribute"):
        attribute_of(stereo)


class WordTokenizer:
    """Whitespace tokenizer with a fixed vocabulary: enough for encode_keyed."""

    def __init__(self, words):
        self.vocab = {w: i + 2 for i, w in enumerate(sorted(words))}

    def __call__(self, texts, padding=None, truncation=None, max_length=None, return_tensors=None,
                 add_special_tokens=True):
        if isinstance(texts, str):
            return {"input_ids": [self.vocab[w] for w in texts.lower().split()]}
        ids = [[self.vocab[w] for w in t.lower().split()][:max_length] for t in texts]
        ids = [row + [0] * (max_length - len(row)) for row in ids]
        tensor = torch.tensor(ids)
        return {"input_ids": tensor, "attention_mask": (tensor > 0).long()}


def test_the_attribute_sets_are_balanced_and_labelled_by_their_list():
    rows = {"male": [Keyed(f"he ran {i}", "male", ("he",)) for i in range(5)],
            "female": [Keyed(f"she ran {i}", "female", ("she",)) for i in range(3)]}
    tokenizer = WordTokenizer({"he", "she", "ran", *map(str, range(5))})
    data = attribute_sentences(tokenizer, rows, max_length=4, seed=0)
    assert len(data) == 6 and data.counts() == {"male": 3, "female": 3}
    batch = data.collate([0, 3, 5])
    assert batch["bias"].tolist() == [[0], [1], [1]]
    he, she = tokenizer.vocab["he"], tokenizer.vocab["she"]
    assert batch["input_ids"][:, 0].tolist() == [he, she, she]
    chosen = balanced_choice({"male": 5, "female": 3}, 0)
    assert chosen["female"].tolist() == [0, 1, 2] and len(chosen["male"]) == 3
    kept = [int(i) for i in chosen["male"]]
    assert data.encoded.input_ids[:3, 2].tolist() == [tokenizer.vocab[str(i)] for i in kept]
    with pytest.raises(ValueError, match="holds sentences of category"):
        attribute_sentences(tokenizer, {"male": rows["female"], "female": rows["female"]}, 4, 0)


# ------------------------------------------------------------------------------------------------ the task term

def test_the_task_term_on_hand_made_states():
    # two states (embedding output + one layer), one sentence of three positions (the last is padding), H = 2
    original = torch.zeros(2, 1, 3, 2)
    states = torch.tensor([[[[1.0, 1.0], [0.0, 2.0], [9.0, 9.0]]],
                           [[[3.0, 0.0], [1.0, 1.0], [9.0, 9.0]]]])
    batch = {"attention_mask": torch.tensor([[1, 1, 0]]), "keyword_mask": torch.tensor([[0, 1, 0]])}
    # kaneko: per real token mean_h d^2: layer 0: (1+1)/2 = 1, (0+4)/2 = 2; layer 1: (9+0)/2 = 4.5, (1+1)/2 = 1
    # -> mean of the four = 8.5 / 4 = 2.125 (the padding's 81s never count)
    assert representation_term(states, original, batch, "kaneko").item() == pytest.approx(2.125)
    # paper_b: the keyword embedding is position 1: layer 0 (0, 2) -> ||.||^2 = 4; layer 1 (1, 1) -> 2; mean 3
    assert representation_term(states, original, batch, "paper_b").item() == pytest.approx(3.0)
    with pytest.raises(ValueError, match="task term 'cosine' is unknown"):
        representation_term(states, original, batch, "cosine")


class StubAdapter:
    """A hand-made batch: fixed features and task term, so the objective's number is known by hand."""

    def __init__(self, features, term):
        self.features_value, self.term = features, term

    def task_term(self, model, batch, device, masked):
        return self.features_value, self.term

    def bias(self, batch):
        return batch["bias"]


def test_the_objective_on_a_hand_made_batch():
    # the head's softmax rows (0.8, 0.2), (0.8, 0.2), (0.2, 0.8), (0.2, 0.8) against genders 0, 0, 1, 1:
    # joint = [[1.6, 0.4], [0.4, 1.6]] / 4, marginals 1/2, so MI = (0.8 ln 1.6 + 0.2 ln 0.4) / ln 2 = 0.278072
    head = torch.nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.eye(2))
    features = torch.log(torch.tensor([[0.8, 0.2], [0.8, 0.2], [0.2, 0.8], [0.2, 0.8]]))
    settings = GenderFFWSettings(gamma=10.0, alpha=2.0)
    objective = gate_objective(StubAdapter(features, torch.tensor(0.5)), [head], [2], settings)
    model = torch.nn.Linear(1, 1)
    loss, logs = objective(model, {"bias": torch.tensor([[0], [0], [1], [1]])})
    mi = (0.8 * math.log(1.6) + 0.2 * math.log(0.4)) / math.log(2)
    assert mi == pytest.approx(0.278072, abs=1e-6)
    assert logs == {"task": pytest.approx(0.5), "mi": pytest.approx(mi, rel=1e-5)}
    assert loss.item() == pytest.approx(2.0 * 0.5 + 10.0 * mi, rel=1e-5)  # 3.78072


# ------------------------------------------------------------------------------------------------ the gates

def tiny_bert(seed=0):
    torch.manual_seed(seed)
    model = BertModel(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=12, max_position_embeddings=16, hidden_dropout_prob=0.0,
                                 attention_probs_dropout_prob=0.0))
    return model.eval()


def batch_of(n=3, length=5, seed=1):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 30, (n, length), generator=generator)
    mask = torch.ones_like(ids)
    mask[0, -2:] = 0
    return {"input_ids": ids, "attention_mask": mask, "keyword_mask": torch.eye(length, dtype=torch.long)[:n],
            "bias": torch.tensor([[0], [1], [0]])}


def test_gates_at_zero_leave_the_encoder_and_the_task_term_at_zero():
    model, batch = tiny_bert(), batch_of()
    before = hidden_states(model, batch, "cpu")
    for structured in (False, True):
        masked = attach_gates(GenderFFW(), model, FFWSettings(structured=structured))
        features, term = GenderFFW().task_term(model, batch, "cpu", masked)
        assert term.item() == 0.0
        assert torch.equal(features, before[-1][:, 0, :])
        masked.detach()


def test_a_closed_head_gate_silences_the_head_and_its_bias():
    model, batch = tiny_bert(), batch_of()
    masked = attach_gates(GenderFFW(), model, GenderFFWSettings(structured=True))
    value = "encoder.layer.1.attention.self.value"
    ffn = "encoder.layer.0.intermediate.dense"
    assert tuple(masked.masks[value].scores.shape) == (2, 1)  # one gate per head
    assert tuple(masked.masks[ffn].scores.shape) == (12,)     # one gate per FFN neuron
    with torch.no_grad():
        masked.masks[value].scores[1] = -1e4  # min(2 sigmoid(-1e4), 1) = 0: head 1 of layer 1 closed
        masked.masks[ffn].scores[3] = -1e4
    gated = hidden_states(model, batch, "cpu")
    masked.detach()
    # by hand: the same encoder with head 1's value rows (4..7) and their bias, and neuron 3's row and bias at zero
    reference = tiny_bert()
    modules = dict(reference.named_modules())
    with torch.no_grad():
        modules[value].weight[4:8] = 0
        modules[value].bias[4:8] = 0
        modules[ffn].weight[3] = 0
        modules[ffn].bias[3] = 0
    assert torch.allclose(gated, hidden_states(reference, batch, "cpu"), atol=1e-6)


def test_head_rows_gate_their_biases_head_columns_leave_the_shared_bias():
    from maskbench.masking.deciders import TemperatureGate
    from maskbench.masking.engine import attach

    model = tiny_bert()
    masked = attach(model, TemperatureGate(init=0.0), ["value", "attention_output"],
                    {"value": {"head": 4}, "attention_output": {"head": 4, "axis": "column"}}, gate_unit_output=True)
    layer = model.encoder.layer[0].attention
    assert hasattr(layer.self.value.parametrizations, "bias")  # each head's rows' biases carry its gate
    assert not hasattr(layer.output.dense.parametrizations, "bias")  # one bias for all heads: not gated
    with torch.no_grad():
        masked.masks["encoder.layer.0.attention.self.value"].scores[1] = -1.0  # head 1 of 2, two_sigmoid off
    masked.decider.gate_forward = "hard"
    bias = layer.self.value.bias
    assert torch.equal(bias[4:8], torch.zeros(4)) and torch.equal(bias[:4], layer.self.value.parametrizations.bias.original[:4])
    masked.detach()


def test_the_expanded_structured_mask_computes_the_same_function():
    model, batch = tiny_bert(), batch_of()
    masked = attach_gates(GenderFFW(), model, GenderFFWSettings(structured=True))
    with torch.no_grad():
        masked.masks["encoder.layer.0.attention.self.value"].scores[0] = -1.0
        masked.masks["encoder.layer.1.intermediate.dense"].scores[[2, 5]] = -1.0
    keep = masked.hard_masks()
    masked.detach()
    expanded = expand_structured(keep, model)
    assert set(expanded) - set(keep) == {f"encoder.layer.{i}.{m}" for i in (0, 1) for m in
                                         ("attention.self.query", "attention.self.key", "attention.output.dense",
                                          "output.dense")}
    assert not expanded["encoder.layer.0.attention.self.query"][:4].any()
    assert expanded["encoder.layer.0.attention.self.query"][4:].all()
    assert not expanded["encoder.layer.0.attention.output.dense"][:, :4].any()
    assert not expanded["encoder.layer.1.output.dense"][:, [2, 5]].any()
    outputs = []
    for masks in (keep, expanded):
        switch = MaskSwitch(model)
        switch.apply(MaskSet(masks, {"model_fingerprint": switch.fingerprint, "zero_bias_of_empty_rows": True}))
        outputs.append(hidden_states(model, batch, "cpu"))
        switch.revert()
    assert torch.equal(outputs[0], outputs[1])


# ------------------------------------------------------------------------------------------------ the step

def test_the_step_writes_masks_that_seat_reads(tmp_path):
    from test_gender_steps import LISTS as WORD_ARGS
    from test_gender_steps import SEAT, tiny_encoder

    from maskbench.steps.gender import corpus as gender_corpus

    corpus = tmp_path / "corpus.parquet"
    gender_corpus.main(["--source", "generate:40", *WORD_ARGS, "--heldout", "8", "--seed", "0", "--out", str(corpus)])
    import pandas as pd

    texts = list(pd.read_parquet(corpus)["text"])
    for path in SEAT:
        data = json.loads(Path(path).read_text())
        texts += [e for key in ("targ1", "targ2", "attr1", "attr2") for e in data[key]["examples"]]
    encoder = tiny_encoder(tmp_path / "encoder", texts)
    settings = json.dumps({"gamma": 10, "max_gate_epochs": 2, "gate_patience": 0, "batch_size": 16,
                           "max_length": 16, "head": {"max_epochs": 5}})
    for method in ("ffw", "ffw_structured"):
        out = tmp_path / f"{method}.mask"
        assert gender_ffw.main(["--model", str(encoder), "--corpus", str(corpus), "--method", method, "--settings",
                                settings, "--seed", "1", "--out", str(out), "--summary",
                                str(tmp_path / f"{method}.json")]) == 0
        summary = json.loads((tmp_path / f"{method}.json").read_text())
        assert summary["train_counts"] == {"male": 32, "female": 32}
        assert summary["val_counts"] == {"male": 8, "female": 8}
        mask = MaskSet.load(out)
        assert mask.meta["structured"] is (method == "ffw_structured")
        assert summary["density"] == pytest.approx(mask.density())
        assert len(mask.masks) == 2 * 6  # the six encoder matrices of both layers (structured: expanded)
        model, _ = load_run(str(encoder), out)  # applies to the encoder it was trained on
        assert gender_seat.main(["--model", str(encoder), "--run", str(out), "--tests", SEAT[0], "--n-samples",
                                 "100", "--out", str(tmp_path / f"{method}.seat.json")]) == 0
    with pytest.raises(ValueError, match="field 'structured' follows from --method"):
        gender_ffw.main(["--model", str(encoder), "--corpus", str(corpus), "--settings", '{"structured": true}',
                         "--seed", "1", "--out", str(tmp_path / "x.mask"), "--summary", str(tmp_path / "x.json")])
    with pytest.raises(ValueError, match="gender.ffw.task_term: 'cosine' is unknown"):
        GenderFFWSettings.from_dict({"task_term": "cosine"})


# ------------------------------------------------------------------------------------------------ the records

def write(path: Path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def test_the_records_of_the_matrix_by_hand(tmp_path):
    seat = {"seat": [{"test": "sent-weat6", "effect_size": 0.5}, {"test": "sent-weat7", "effect_size": -0.3}]}
    records = [
        {"method": "ffw", "paper": "D", "native": False, "knob": "gamma", "value": 10.0, "seed": 1,
         "summary": write(tmp_path / "ffw.json", {"density": 0.6, "seconds": 12.5}),
         "seat": write(tmp_path / "ffw.seat.json", seat),
         "lm": write(tmp_path / "ffw.lm.json", {"crows_pairs": {"score": 55.0}}),
         "tasks": {"mnli": write(tmp_path / "ffw.task.json", {"dev_score": 61.0, "metric": "accuracy"})}},
        {"method": "baseline", "paper": "-", "native": False, "knob": "", "value": None, "seed": 1, "summary": None,
         "seat": write(tmp_path / "o.seat.json", {"seat": [{"test": "sent-weat6", "effect_size": -0.9}]}),
         "lm": write(tmp_path / "o.lm.json", {"crows_pairs": {"score": 60.0}}),
         "tasks": {"mnli": write(tmp_path / "o.task.json", {"dev_score": 63.0, "metric": "accuracy"})}},
    ]
    cells = {(c.benchmark, c.method): c for c in gender_cells(records, ["gender_seat", "gender_crows"], "d", "m")}
    ffw = cells["gender_seat", "ffw"]
    assert (ffw.bias, ffw.bias_ideal, ffw.id, ffw.id_dev, ffw.density, ffw.train_seconds) == (0.4, 0, 61, 61, 0.6,
                                                                                               12.5)
    assert math.isnan(ffw.ood) and ffw.knob == "gamma" and ffw.value == 10 and ffw.method_paper == "D"
    assert (cells["gender_crows", "ffw"].bias, cells["gender_crows", "ffw"].bias_ideal) == (55, 50)
    base = cells["gender_seat", "baseline"]
    assert (base.bias, base.density, base.train_seconds, base.knob) == (0.9, 1.0, 0.0, "")
    out = tmp_path / "cells.csv"
    assert gender_matrix_cells.main(["--records", json.dumps(records), "--benchmarks", "gender_seat",
                                     "--data", "d", "--model", "m", "--out", str(out)]) == 0
    frame = read_cells([out])
    assert sorted(frame["method"]) == ["baseline", "ffw"]
    no_task = [{**records[0], "tasks": {}}]
    assert np.isnan(gender_cells(no_task, ["gender_seat"], "d", "m")[0].id)
    with pytest.raises(ValueError, match="benchmarks"):
        gender_cells(records, ["gender_stereoset"], "d", "m")


def test_a_gate_margin_leaves_the_encoder_unchanged_and_a_negative_one_is_refused():
    model, batch = tiny_bert(), batch_of()
    before = hidden_states(model, batch, "cpu")
    masked = attach_gates(GenderFFW(), model, GenderFFWSettings(gate_init=0.05, temperature=0.01))
    assert float(masked.masks["encoder.layer.0.attention.self.query"].scores.min().detach()) == pytest.approx(0.05)
    assert torch.equal(hidden_states(model, batch, "cpu"), before)  # min(2 sigmoid(5), 1) = 1
    masked.detach()
    with pytest.raises(ValueError, match="gender.ffw.gate_init: -0.1 would prune every weight"):
        attach_gates(GenderFFW(), model, GenderFFWSettings(gate_init=-0.1))
