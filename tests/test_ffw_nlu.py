"""Paper D's FFW on the nlu track (issue 31's matrix cells): the MI by hand, the objective on a hand-made batch, the
bias attributes on real MNLI pairs, the structured gates (a head, a neuron), the slices, the config checks, the
records and the plan of the new rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from test_workflow import REPO, planned_jobs
from transformers import BertConfig, BertForSequenceClassification

from maskbench.ffw import core
from maskbench.ffw.mutual_information import empirical_mi
from maskbench.masking.apply import model_fingerprint
from maskbench.steps.nlu.matrix_cells import cells_of
from maskbench.tracks.nlu.config_checks import check_ffw
from maskbench.tracks.nlu.ffw import (
    NluFFW,
    bias_attribute,
    negation_attribute,
    no_dropout,
    overlap_attribute,
    split_indices,
)
from maskbench.tracks.nlu.ffw_plan import FFWPlan
from maskbench.tracks.nlu.workflow_plan import NluPlan
from maskbench.workflow.workflow_config import ConfigError


def tiny_bert(seed: int = 0) -> BertForSequenceClassification:
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=12, max_position_embeddings=16, num_labels=3)
    model = BertForSequenceClassification(config).eval()
    no_dropout(model)
    return model


def batch_of(n: int = 6, width: int = 5, seed: int = 1) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"input_ids": torch.randint(1, 30, (n, width), generator=g), "attention_mask": torch.ones(n, width, dtype=torch.long),
            "token_type_ids": torch.zeros(n, width, dtype=torch.long), "labels": torch.tensor([0, 1, 2, 0, 1, 2])[:n],
            "bias": torch.tensor([[0], [0], [1], [1], [0], [1]])[:n]}


def test_empirical_mi_of_a_hand_made_two_class_case():
    """Y^T Q = [[1.5, .5], [.5, 1.5]] / 4, marginals 1/2: MI = (.75 ln 1.5 + .25 ln .5) / ln 2 = 0.188722."""
    probs = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.3, 0.7]])
    mi = empirical_mi(torch.tensor([0, 0, 1, 1]), probs, 2)
    assert float(mi) == pytest.approx(0.188722, abs=1e-6)
    # a perfect reader of a balanced bias: 1; a constant reader: 0
    assert float(empirical_mi(torch.tensor([0, 1]), torch.eye(2), 2)) == pytest.approx(1.0, abs=1e-6)
    assert float(empirical_mi(torch.tensor([0, 1]), torch.full((2, 2), 0.5), 2)) == pytest.approx(0.0, abs=1e-7)


def test_the_objective_is_alpha_ce_plus_gamma_mi_of_the_classifiers_input():
    """On a hand-made batch: the adapter's features are the classifier's input (its logits equal the model's own),
    and the loss equals alpha * CE + gamma * MI with the MI computed from the formula in numpy."""
    model = tiny_bert()
    adapter = NluFFW(model)
    batch = batch_of()
    head = torch.nn.Linear(8, 2)
    with torch.no_grad():  # a sharp head, so that the MI is far from 0
        head.weight.mul_(200.0)
    settings = core.FFWSettings(alpha=0.5, gamma=3.0)
    loss, logs = core.gate_objective(adapter, [head], [2], settings)(model, batch)
    with torch.no_grad():
        logits = model(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).logits
        pooled = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                            token_type_ids=batch["token_type_ids"]).pooler_output
        ce = torch.nn.functional.cross_entropy(logits, batch["labels"])
        q = torch.softmax(head(pooled), 1).numpy().astype(np.float64)
    y = np.eye(2)[batch["bias"][:, 0].numpy()]
    joint = np.maximum(y.T @ q, 1e-15) / len(q)
    outer = np.maximum(joint.sum(1, keepdims=True) @ joint.sum(0, keepdims=True), 1e-15)
    mi = float((joint * np.log(joint / outer)).sum() / math.log(2))
    assert mi > 0.01
    assert float(loss.detach()) == pytest.approx(0.5 * float(ce) + 3.0 * mi, rel=1e-5)
    assert logs["mi"] == pytest.approx(mi, rel=1e-4) and logs["ce"] == pytest.approx(float(ce), rel=1e-6)


def test_negation_attribute_on_real_mnli_hypotheses():
    """data/nli/mnli_dev_matched.tsv rows 0-7, by hand: 1 'not able to be searched', 6 'never worked' hold a
    negation word; 0, 2 ('but would still enjoy'), 3 ('at least'), 4, 5, 7 do not."""
    frame = pd.read_csv(REPO / "data/nli/mnli_dev_matched.tsv", sep="\t", nrows=8, quoting=3)
    flags, names = negation_attribute(frame["hypothesis"].tolist())
    assert flags.tolist() == [0, 1, 0, 0, 0, 0, 1, 0]
    assert names == ["no_negation", "negation"]


def test_overlap_attribute_is_the_bias_models_argmax_over_the_classes_it_predicts():
    labels = ["entailment", "neutral", "contradiction"]
    # chrisc36's entailment-vs-rest model: [p, (1-p)/2, (1-p)/2]; argmax entailment when p > 1/3, else the first
    # other label (the tie goes to index 1): two classes
    p = np.array([0.9, 0.3, 0.5, 0.2])
    probs = np.stack([p, (1 - p) / 2, (1 - p) / 2], axis=1)
    values, names = overlap_attribute(probs, labels)
    assert values.tolist() == [0, 1, 0, 1] and names == ["entailment", "neutral"]
    # a three-class model predicting only neutral and contradiction: re-indexed 0, 1
    values, names = overlap_attribute(np.array([[0.1, 0.2, 0.7], [0.2, 0.5, 0.3]]), labels)
    assert values.tolist() == [1, 0] and names == ["neutral", "contradiction"]
    with pytest.raises(ValueError, match="only \\['entailment'\\]"):
        overlap_attribute(np.array([[0.9, 0.05, 0.05]] * 3), labels)
    with pytest.raises(ValueError, match="needs the overlap bias model"):
        bias_attribute("overlap", pd.DataFrame({"text_b": ["x"]}), labels)


def test_structured_gates_close_a_whole_head_and_a_whole_neuron():
    model = tiny_bert(3)
    batch = batch_of(seed=4)
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    fingerprint = model_fingerprint(model)
    with torch.no_grad():
        before = model(**inputs).logits
    adapter = NluFFW(model)
    masked = core.attach_gates(adapter, model, core.FFWSettings(structured=True))
    assert sorted(masked.masks) == sorted(f"bert.encoder.layer.{i}.{m}" for i in range(2)
                                          for m in ("attention.output.dense", "intermediate.dense"))
    with torch.no_grad():
        assert torch.equal(model(**inputs).logits, before)  # gates at 0: bit-identical
        masked.masks["bert.encoder.layer.0.attention.output.dense"].scores.copy_(torch.tensor([-1.0, 0.0]))
        masked.masks["bert.encoder.layer.1.intermediate.dense"].scores[5] = -1.0
        masked.decider.gate_forward = "hard"
        gated = model(**inputs).logits
    masked.detach()
    assert model_fingerprint(model) == fingerprint
    reference = tiny_bert(3)  # the same weights, the head's columns and the neuron (row and bias) zeroed by hand
    with torch.no_grad():
        reference.bert.encoder.layer[0].attention.output.dense.weight[:, :4] = 0.0  # head 0: columns 0-3
        reference.bert.encoder.layer[1].intermediate.dense.weight[5] = 0.0
        reference.bert.encoder.layer[1].intermediate.dense.bias[5] = 0.0
        torch.testing.assert_close(gated, reference(**inputs).logits)
    assert not torch.allclose(gated, before)


def test_unstructured_gates_cover_every_encoder_matrix_and_no_bias():
    model = tiny_bert()
    masked = core.attach_gates(NluFFW(model), model, core.FFWSettings())
    assert len(masked.masks) == 2 * 6 and all(m.scores.shape == m.shape for m in masked.masks.values())
    assert not any(hasattr(mod, "parametrizations") and "bias" in mod.parametrizations
                   for mod in masked.modules.values())
    masked.detach()


def test_slices_are_disjoint_seeded_and_checked():
    parts = split_indices(100, {"gate_train": 50, "gate_val": 20, "readout": 20}, seed=3)
    every = np.concatenate(list(parts.values()))
    assert len(every) == len(set(every.tolist())) == 90
    again = split_indices(100, {"gate_train": 50, "gate_val": 20, "readout": 20}, seed=3)
    assert all(np.array_equal(parts[k], again[k]) for k in parts)
    with pytest.raises(ValueError, match="asks for 120 pairs, the training part has 100"):
        split_indices(100, {"gate_train": 100, "gate_val": 10, "readout": 10}, seed=0)


CONFIG = {
    "results": "res", "seeds": [1, 2], "model": {"name": "m"},
    "datasets": {"tr": {"task": "mnli", "source": "local:x.tsv"}, "dv": {"task": "mnli", "source": "local:x.tsv"},
                 "te": {"task": "mnli", "source": "local:x.tsv"}, "hans": {"task": "mnli", "source": "local:h.tsv"}},
    "tasks": {"mnli": {"train": "tr", "dev": "dv", "eval_sets": {"dv": {}, "te": {}, "hans": {}, "neg": {}}}},
    "bias": {"seed": 0, "sources": {"overlap": {"kind": "overlap_lr"}}},
    "standard_debiasing": {}, "masked_debiasing": {"md_overlap": {"loss": "poe", "bias": "overlap"}},
    "mask_search": {"method": "movement_sigmoid"}, "finetune": {},
    "report": {"table1": {"rows": ["baseline", "md_overlap"], "columns": {}}},
    "ffw": {"methods": ["ffw", "ffw_structured"], "attributes": ["overlap", "negation"], "gamma": [1, 10],
            "seeds": [2], "batch_size": 16, "examples": {"gate_train": 30, "gate_val": 10, "readout": 10},
            "matrix": {"rows": ["baseline", "md_overlap"], "id_set": "te", "negation_set": "neg"}},
}


@pytest.mark.parametrize("change,message", [
    (lambda c: c["ffw"].update(task="qqp"), r"ffw\.task has value 'qqp'"),
    (lambda c: c["bias"]["sources"].pop("overlap"), r"ffw\.attributes has 'overlap'.*no 'overlap' source"),
    (lambda c: c["ffw"]["matrix"].update(ood_set="paws"), r"ffw\.matrix\.ood_set has value 'paws'"),
    (lambda c: c["ffw"]["matrix"].update(rows=["baseline", "sd_x"]), r"ffw\.matrix\.rows has 'sd_x'"),
    (lambda c: c["report"]["table1"].update(rows=["baseline"]), r"ffw\.matrix\.rows has 'md_overlap', which report"),
    (lambda c: c["ffw"].update(seeds=[3]), r"ffw\.seeds has 3"),
])
def test_ffw_config_references_are_checked(change, message):
    config = json.loads(json.dumps(CONFIG))
    change(config)
    with pytest.raises(ConfigError, match=message):
        check_ffw(config["ffw"], config, config["bias"]["sources"])


def test_the_plan_names_runs_rows_settings_and_records():
    ffw = FFWPlan(CONFIG, NluPlan(CONFIG))
    assert ffw.seeds == [2] and ffw.gammas == ["1", "10"]
    assert ffw.mask("ffw_structured", "negation", "10", 2) == \
        "res/nlu/mnli/m/ffw/method~ffw_structured/attribute~negation/gamma~10/seed~2.mask"
    assert ffw.rows()[:2] == ["ffw_overlap_gamma~1", "ffw_overlap_gamma~10"] and len(ffw.rows()) == 8
    settings = ffw.settings("ffw_structured", "10")
    assert settings == {"batch_size": 16, "structured": True, "gamma": 10.0}
    assert core.FFWSettings.from_dict(settings).batch_size == 16
    assert ffw.eval_sets() == ["te", "hans", "dv", "neg"]
    records = ffw.records()
    methods = [(r["method"], r["paper"], r["native"], r["value"]) for r in records["runs"]]
    assert methods[:2] == [("baseline", "-", False, None), ("movement_poe", "A", True, None)]
    assert ("ffw_structured_negation", "D", False, 10.0) in methods and len(methods) == 2 + 8
    assert records["runs"][1]["cost"] == "res/nlu/mnli/m/masks/method~movement_sigmoid/loss~poe/bias~overlap/seed~2.search.json"


def test_records_read_each_role_from_its_evaluation_and_the_bias_readout_from_the_summary(tmp_path):
    def write(name, payload):
        (tmp_path / name).write_text(json.dumps(payload))
        return str(tmp_path / name)

    evals = {"id": write("te.json", {"metrics": {"accuracy": 80.0}, "mask_density": 0.25}),
             "ood": write("hans.json", {"metrics": {"accuracy": 55.0}}),
             "id_dev": write("dv.json", {"metrics": {"accuracy": 81.0}}),
             "negation": write("neg.json", {"metrics": {"accuracy": 60.0}})}
    summary = write("run.json", {"train_seconds": 12.5, "bias_readout": {"masked": 70.0, "majority": 66.0}})
    records = {"sets": {"id": "te", "ood": "hans", "id_dev": "dv", "negation": "neg"}, "model": "m", "data": "d",
               "data_source": "local:data/nli/mnli_dev_matched.tsv", "runs": [{"method": "ffw_overlap", "paper": "D", "native": False, "knob": "gamma", "value": 10.0,
                         "seed": 2, "evaluations": evals, "cost": summary, "cost_key": "train_seconds",
                         "attribute": "overlap"},
                        {"method": "baseline", "paper": "-", "native": False, "knob": "", "value": None, "seed": 2,
                         "evaluations": {**evals, "id": write("te0.json", {"metrics": {"accuracy": 82.0}})},
                         "cost": None, "cost_key": "search_seconds"}]}
    cells = {(c.benchmark, c.method): c for c in cells_of(records)}
    hans, neg = cells[("mnli_hans", "ffw_overlap")], cells[("mnli_negation", "ffw_overlap")]
    assert (hans.id, hans.ood, hans.id_dev, hans.density, hans.train_seconds) == (80.0, 55.0, 81.0, 0.25, 12.5)
    assert (hans.bias, hans.bias_ideal, neg.ood) == (70.0, 66.0, 60.0)
    assert hans.data == "real: d"  # the kind of the training set's source, as every caption names it
    base = cells[("mnli_hans", "baseline")]
    assert base.id == 82.0 and base.density == 1.0 and base.train_seconds == 0.0 and math.isnan(base.bias)


def test_the_smoke_plan_has_the_nlu_ffw_jobs(dry_run):
    jobs = planned_jobs(dry_run("configs/smoke.yaml"))
    # 2 methods x 2 attributes x 2 gammas on seed 1; its masks scored in one job; one records file
    assert (jobs["ffw_nlu"], jobs["evaluate_ffw_nlu"], jobs["matrix_cells_nlu"]) == (8, 1, 1)


def test_gate_unit_output_takes_head_columns_of_an_attention_output_and_refuses_blocks():
    from maskbench.masking.deciders import TemperatureGate
    from maskbench.masking.engine import attach
    from maskbench.masking.granularity import GranularityError

    model = tiny_bert()
    masked = attach(model, TemperatureGate(init=0.0, forward="two_sigmoid"), ["attention_output"],
                    {"head": 4, "axis": "column"}, gate_unit_output=True)
    assert all(m.scores.numel() == 2 for m in masked.masks.values())  # 2 heads of 4 columns each
    # the head columns leave the output bias (shared by every head) ungated
    assert not hasattr(model.bert.encoder.layer[0].attention.output.dense.parametrizations, "bias")
    masked.detach()
    with pytest.raises(GranularityError, match="gate_unit_output gates whole output units"):
        attach(model, TemperatureGate(init=0.0, forward="two_sigmoid"), ["query"], [2, 2], gate_unit_output=True)


def test_the_paper_config_matrix_records_name_every_cell_once():
    """configs/paper.yaml's matrix rows md_undertrained and md_underparam both reweight: each keeps a method name of its
    own (the paper miniature's matrix report refused two records of (mnli_hans, movement_reweight, seed 10))."""
    import yaml

    config = yaml.safe_load((REPO / "configs/paper.yaml").read_text(encoding="utf-8"))
    ffw = FFWPlan(config, NluPlan(config))
    runs = ffw.records()["runs"]
    keys = [(run["method"], run["knob"], run["value"], run["seed"]) for run in runs]
    assert len(keys) == len(set(keys))
    native = sorted({run["method"] for run in runs if run["paper"] in ("A", "-")})
    assert native == ["baseline", "movement_poe", "movement_reweight_underparam", "movement_reweight_undertrained"]
