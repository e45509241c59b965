"""Paper C's rows in the nlu track's matrix records (issue 31): the runs that enter (``ffw.matrix.srnets``), their
method names, the records read from hand-written summaries and evaluations (values by hand), the config errors and
the smoke plan's inputs of ``matrix_cells_nlu``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_ffw_nlu import CONFIG
from test_workflow import planned_jobs

from maskbench.steps.nlu.matrix_cells import cells_of
from maskbench.tracks.nlu.config_checks import check_ffw
from maskbench.tracks.nlu.ffw_plan import FFWPlan
from maskbench.tracks.nlu.srnets.matrix import chosen_runs, eligible_runs, method_names
from maskbench.tracks.nlu.workflow_plan import NluPlan
from maskbench.workflow.workflow_config import ConfigError

SRNETS = {"seeds": [1], "tasks": ["mnli"], "sparsities": [0.2, 0.3],
          "debias": {"losses": ["poe"], "bias": "overlap", "imp_losses": ["poe"], "retrain_losses": ["poe"],
                     "retrain_from": ["mask_train"]},
          "ood_informed": {"paradigms": ["a"], "train": {"mnli": [{"dataset": "tr"}]}}}


def config_with(srnets=SRNETS, named=None, results="res") -> dict:
    config = json.loads(json.dumps(CONFIG))
    config["results"] = results
    config["srnets"] = json.loads(json.dumps(srnets))
    if named is not None:
        config["ffw"]["matrix"]["srnets"] = named
    return config


def test_the_default_takes_every_mask_training_and_imp_run_but_the_ood_informed_ones():
    config = config_with()
    # the grid: a_mask_{ce,poe}, a_imp_{ce,poe}, c_mask_ce, b_mask_retrain_{ce,poe} (retrained: not eligible),
    # a_mask_ood (eligible, only when named)
    assert sorted(eligible_runs(config, "mnli")) == ["a_imp_ce", "a_imp_poe", "a_mask_ce", "a_mask_ood", "a_mask_poe",
                                                     "c_mask_ce"]
    assert chosen_runs(config, "mnli") == ["a_mask_ce", "a_mask_poe", "a_imp_ce", "a_imp_poe", "c_mask_ce"]
    assert chosen_runs(config_with(named=["a_mask_ood"]), "mnli") == ["a_mask_ood"]
    assert eligible_runs(config_with(srnets={**SRNETS, "tasks": ["qqp"]}), "mnli") == {}
    assert eligible_runs(CONFIG, "mnli") == {}


def test_method_names_say_paradigm_start_and_loss_only_where_the_chosen_runs_differ_in_them():
    config = config_with()
    runs = {r: s for r, s in eligible_runs(config, "mnli").items()}
    names = method_names({r: runs[r] for r in ("a_mask_ce", "a_mask_poe", "a_imp_poe")})
    assert names == {"a_mask_ce": "mask_training_ce", "a_mask_poe": "mask_training_poe", "a_imp_poe": "imp_poe"}
    assert method_names({r: runs[r] for r in ("a_mask_poe", "a_imp_poe")}) == {"a_mask_poe": "mask_training",
                                                                              "a_imp_poe": "imp"}
    names = method_names({r: runs[r] for r in ("a_mask_ce", "c_mask_ce", "a_mask_ood", "a_imp_ce", "a_imp_poe")})
    assert names == {"a_mask_ce": "mask_training_a_ce", "c_mask_ce": "mask_training_c_ce",
                     "a_mask_ood": "mask_training_a_ood", "a_imp_ce": "imp_a_ce", "a_imp_poe": "imp_a_poe"}
    debiased = config_with(srnets={**SRNETS, "debias": {**SRNETS["debias"], "debiased_start": "poe"}})
    runs = eligible_runs(debiased, "mnli")
    assert method_names({r: runs[r] for r in ("a_mask_poe", "a_poeft_mask_poe")}) == {
        "a_mask_poe": "mask_training", "a_poeft_mask_poe": "mask_training_poeft"}


def write(path: str, payload: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload))


def test_records_of_paper_c_rows_from_hand_written_summaries_and_evaluations(tmp_path):
    config = config_with(named=["a_mask_poe", "a_imp_ce"], results=str(tmp_path))
    ffw = FFWPlan(config, NluPlan(config))
    rows = ffw.srnets
    assert (rows.sparsities, rows.seeds, rows.names) == ([0.2, 0.3], [1], {"a_mask_poe": "mask_training_poe",
                                                                          "a_imp_ce": "imp_ce"})
    srn = f"{tmp_path}/nlu/mnli/m/srnets"
    # mask training: one search.json per level, its own seconds and exact sparsity
    write(f"{srn}/a_mask_poe/seed~1/sparsity~0.2/search.json", {"seconds": 7.5, "exact_sparsity": 0.2})
    write(f"{srn}/a_mask_poe/seed~1/sparsity~0.3/search.json", {"seconds": 8.0, "exact_sparsity": 0.3})
    # IMP: one checkpoint per 10 % round, each with its round's seconds
    for level, seconds, exact in ((0.1, 2.0, 0.1), (0.2, 3.0, 0.19), (0.3, 4.5, 0.2875)):
        write(f"{srn}/a_imp_ce/seed~1/sparsity~{level}/train_summary.json", {"seconds": seconds, "exact_sparsity": exact})
    accuracy = {("a_mask_poe", 0.2): (70, 55, 71, 60), ("a_mask_poe", 0.3): (69, 56, 70, 61),
                ("a_imp_ce", 0.2): (72, 51, 73, 58), ("a_imp_ce", 0.3): (71, 52, 72, 57)}
    for (run, level), scores in accuracy.items():
        for name, score in zip(("te", "hans", "dv", "neg"), scores, strict=True):
            write(f"{tmp_path}/nlu/mnli/m/eval/srnets/{run}/seed~1/sparsity~{level}/{name}.json",
                  {"metrics": {"accuracy": score}})
    assert sorted(rows.summaries()) == sorted(
        [f"{srn}/a_mask_poe/seed~1/sparsity~{s}/search.json" for s in (0.2, 0.3)]
        + [f"{srn}/a_imp_ce/seed~1/sparsity~{s}/train_summary.json" for s in (0.1, 0.2, 0.3)])
    assert len(rows.evaluations()) == 2 * 2 * 4 and set(rows.summaries()) <= set(ffw.cost_files())
    records = ffw.records()
    records["runs"] = [r for r in records["runs"] if r["paper"] == "C"]  # the FFW and native rows: test_ffw_nlu
    cells = {(c.benchmark, c.method, c.value): c for c in cells_of(records)}
    assert len(cells) == 2 * 2 * 2
    imp = cells[("mnli_hans", "imp_ce", 0.3)]
    assert (imp.id, imp.ood, imp.id_dev, imp.knob, imp.method_paper, imp.native) == (71.0, 52.0, 72.0, "sparsity", "C", True)
    assert imp.train_seconds == pytest.approx(2.0 + 3.0 + 4.5)  # every round up to 0.3
    assert imp.density == pytest.approx(1 - 0.2875)
    assert cells[("mnli_hans", "imp_ce", 0.2)].train_seconds == pytest.approx(5.0)
    neg = cells[("mnli_negation", "imp_ce", 0.3)]
    assert (neg.ood, neg.native) == (57.0, False)  # paper C does not evaluate the negation subset
    mask = cells[("mnli_hans", "mask_training_poe", 0.2)]
    assert (mask.id, mask.ood, mask.id_dev, mask.train_seconds, mask.density) == (70.0, 55.0, 71.0, 7.5, 0.8)
    assert math.isnan(mask.bias) and mask.model == "m"  # no srnets.theta_ft: cut from the baseline row's model


def test_the_config_names_only_runs_that_exist():
    for named, message in ((["a_mask_xx"], r"ffw\.matrix\.srnets has 'a_mask_xx', which is not a mask training or "
                                           r"IMP run of srnets on task 'mnli'; choose from \['a_imp_ce'"),
                           (["b_mask_retrain_ce"], r"ffw\.matrix\.srnets has 'b_mask_retrain_ce'")):
        config = config_with(named=named)
        with pytest.raises(ConfigError, match=message):
            check_ffw(config["ffw"], config, config["bias"]["sources"])
    config = json.loads(json.dumps(CONFIG))
    config["ffw"]["matrix"]["srnets"] = ["a_mask_ce"]
    with pytest.raises(ConfigError, match=r"ffw\.matrix\.srnets has 'a_mask_ce', but the config has no `srnets:`"):
        check_ffw(config["ffw"], config, config["bias"]["sources"])
    config = config_with(named=["a_mask_ood", "c_mask_ce"])
    check_ffw(config["ffw"], config, config["bias"]["sources"])  # both exist on mnli


def test_the_smoke_plan_reads_paper_c_evaluations_and_summaries(dry_run):
    output = dry_run("configs/smoke.yaml")
    assert planned_jobs(output)["matrix_cells_nlu"] == 1
    block = output.split("rule matrix_cells_nlu:")[1].split("\n\n")[0]
    inputs = {p.strip() for p in block.split("input:")[1].split("\n")[0].split(",")}
    srn = "results/smoke/nlu/mnli/bert-scratch-tiny/srnets"
    evaluations = "results/smoke/nlu/mnli/bert-scratch-tiny/eval/srnets"
    expected = {f"{evaluations}/{run}/seed~1/sparsity~{s}/{e}.json" for run in ("a_mask_ce", "a_mask_poe", "a_imp_poe")
                for s in (0.5, 0.9) for e in ("mnli_dev", "hans", "mnli_negation")}
    expected |= {f"{srn}/{run}/seed~1/sparsity~{s}/search.json" for run in ("a_mask_ce", "a_mask_poe") for s in (0.5, 0.9)}
    expected |= {f"{srn}/a_imp_poe/seed~1/sparsity~{k / 10}/train_summary.json" for k in range(1, 10)}
    assert expected <= inputs
    assert not any("/c_mask_ce/" in p or "/a_mask_ood/" in p for p in inputs)  # not named in ffw.matrix.srnets
