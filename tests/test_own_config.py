"""Your model, your data, your shortcut (configs/your-model.yaml, docs/your-model.md): a classifier fine-tuned outside
maskbench, taken in as it is and searched for a debiasing mask against a bias the user computed; its own table with
no published figure; and each bad input refused while the workflow plans, in one line naming file, field and value."""

import copy
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_workflow import REPO, snakemake

from maskbench.config_checks import ConfigError
from maskbench.data.schema import DataError
from maskbench.tracks.nlu.own_files import check_own_files
from maskbench.tracks.nlu.report.table1_builder import build_table1, to_latex, to_markdown
from maskbench.workflow.workflow_config import check_references

CONFIG = REPO / "configs/your-model.yaml"
DATA = REPO / "data/your-model"
LABELS = ["supported", "refuted", "not_enough_info"]


def read_jsonl(path):
    """The rows as json reads them (pandas' own JSON reader rounds some floats in their last bit)."""
    return pd.DataFrame([json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()])


# the template's run on a model fine-tuned elsewhere, and its export: tests/test_your_model_page.py (the page's
# commands as written, on a fresh clone)


def test_a_checkpoint_for_other_labels_stops_the_plan_in_one_line(tmp_path):
    """While planning, before any job: only the checkpoint's config.json is read."""
    folder = tmp_path / "models/your-model"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"id2label": {"0": "refuted", "1": "supported", "2": "nei"}}))
    result = snakemake("-n", "--configfile", str(CONFIG), workdir=tmp_path)
    assert result.returncode != 0
    assert (f"models/your-model/config.json: field 'id2label' has value ['refuted', 'supported', 'nei'], but "
            f"datasets.claims_train.labels (task 'claims') is {LABELS}") in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


# ------------------------------------------------------------------------------ the planning checks, one by one
def own_config(tmp_path, rows=None, model_labels=LABELS, **source):
    """The template's config with its training file written from `rows` and a checkpoint config.json."""
    config = yaml.safe_load(CONFIG.read_text())
    train = tmp_path / "train.jsonl"
    frame = read_jsonl(DATA / "train.jsonl").head(6) if rows is None else rows
    train.write_text(frame.to_json(orient="records", lines=True))
    config["datasets"]["claims_train"]["source"] = f"local:{train}"
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"id2label": dict(enumerate(model_labels))}))
    config["model"]["path"] = str(folder)
    if source:
        config["bias"]["sources"]["yours"] = {"kind": "precomputed", **source}
    return config, train


def check(config):
    check_own_files(config, lambda name: config["datasets"][name]["source"].removeprefix("local:"))


def test_the_template_and_its_example_files_pass(tmp_path):
    config, _ = own_config(tmp_path)
    check(config)


def test_a_checkpoint_with_another_number_of_labels_is_refused(tmp_path):
    config, _ = own_config(tmp_path, model_labels=["supported", "refuted"])
    with pytest.raises(DataError, match=re.escape("config.json: field 'num_labels' has value 2 (['supported', "
                                                  "'refuted']), but datasets.claims_train.labels (task 'claims') has "
                                                  "3 labels")):
        check(config)


def test_default_label_names_are_refused_naming_the_way_out(tmp_path):
    config, _ = own_config(tmp_path, model_labels=["LABEL_0", "LABEL_1", "LABEL_2"])
    with pytest.raises(DataError, match="default names: write its label names into id2label"):
        check(config)


def bad_rows(column, value, row=3):
    frame = read_jsonl(DATA / "train.jsonl").head(6)
    frame[column] = frame[column].astype(object)
    frame.loc[row, column] = value
    return frame


@pytest.mark.parametrize(("column", "value", "message"), [
    ("bias_refuted", 1.5, "field 'bias_refuted' has value 1.5 at line 4, outside [0, 1]"),
    ("bias_refuted", -0.25, "field 'bias_refuted' has value -0.25 at line 4, outside [0, 1]"),
    ("bias_supported", None, "field 'bias_supported' has no value at line 4 (1 rows without a bias probability)"),
    ("bias_supported", "high", "field 'bias_supported' has value 'high' at line 4, not a probability"),
    ("bias_supported", 0.5, "fields ['bias_supported', 'bias_refuted', 'bias_not_enough_info'] sum to 1.0500 at line "
                            "4, not 1 (a bias model's distribution over the labels)"),
])
def test_a_bad_bias_column_is_refused_naming_file_field_value_and_line(tmp_path, column, value, message):
    config, train = own_config(tmp_path, bad_rows(column, value))
    with pytest.raises(DataError) as err:
        check(config)
    assert str(err.value) == f"{train} (bias.sources.yours): {message}"


def test_a_gold_column_is_a_probability_too(tmp_path):
    rows = bad_rows("bias_refuted", 1.25)
    config, train = own_config(tmp_path, rows, gold_column={"claims": "bias_refuted"})
    with pytest.raises(DataError, match=re.escape(f"{train} (bias.sources.yours): field 'bias_refuted' has value "
                                                  "1.25 at line 4, outside [0, 1]")):
        check(config)
    rows.loc[3, "bias_refuted"] = 0.25  # a gold column need not sum to anything
    check(own_config(tmp_path, rows, gold_column={"claims": "bias_refuted"})[0])


def test_the_step_checks_again_and_writes_nothing_for_a_bad_column(tmp_path):
    from maskbench.data.registry import load_dataset
    from maskbench.data.schema import write_prepared
    from maskbench.steps.nlu import precomputed_bias

    config, train = own_config(tmp_path, bad_rows("bias_refuted", 2.0))
    spec = {**config["datasets"]["claims_train"], "source": f"local:{train}"}
    frame, labels = load_dataset("claims_train", spec)
    write_prepared(frame, labels, tmp_path / "train.parquet", {"task": "claims"})
    out = tmp_path / "probs.parquet"
    argv = ["--train", str(tmp_path / "train.parquet"), "--file", str(train), "--source",
            json.dumps(config["bias"]["sources"]["yours"]), "--name", "yours", "--task", "claims", "--out", str(out)]
    with pytest.raises(DataError, match="field 'bias_refuted' has value 2.0 at line 4, outside"):
        precomputed_bias.main(argv)
    assert not out.exists() and list(tmp_path.glob("*probs*")) == []


# ------------------------------------------------------------------------------ the config checks
@pytest.fixture(scope="module")
def template():
    """The template as the workflow sees it: validated (with the schemas' defaults), once."""
    from maskbench.workflow.config_schema import validate_config

    config = validate_config(yaml.safe_load(CONFIG.read_text()), REPO / "schemas")
    check_references(config)
    return config


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c.update(standard_debiasing={"sd_x": {"loss": "poe", "bias": "yours"}}),
     "standard_debiasing.sd_x: model.init is 'finetuned', but standard debiasing fine-tunes the pre-trained model"),
    (lambda c: c["bias"]["sources"].update(hyponly={"kind": "hypothesis_only"}),
     "bias.sources.hyponly.model is required: model.init is 'finetuned'"),
    (lambda c: c["bias"]["sources"]["yours"].update(gold_column={"claims": "bias_refuted"}),
     "a precomputed source gives `columns` (a distribution) or `gold_column`"),
    (lambda c: c["bias"]["sources"]["yours"].update(columns={}),
     "bias.sources.yours.columns has no entry for task 'claims'"),
    (lambda c: c["bias"]["sources"].update(yours={"kind": "precomputed", "gold_column": {"claims": "bias_refuted"}}),
     "masked_debiasing.md_poe has loss 'poe', which reads the bias model's whole distribution"),
    (lambda c: c["report"]["table1"].update(paper="A"),
     "report.table1.columns.dev is not a column of paper A's Table 1"),
    (lambda c: c["report"]["table1"]["row_labels"].update(md_x="X"), "report.table1.row_labels.md_x names a row no method"),
])
def test_what_a_given_model_or_a_precomputed_bias_cannot_do_is_refused_naming_the_key(template, edit, message):
    config = copy.deepcopy(template)
    edit(config)
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_references(config)


# ------------------------------------------------------------------------------ the table
FEVER = {"fever_val": {"task": "fever", "eval_set": "fever_dev", "metric": "accuracy"}}
FEVER_EVALS = [{"row": "baseline", "task": "fever", "eval_set": "fever_dev", "seed": s, "metrics": {"accuracy": a}}
               for s, a in ((1, 71.0), (2, 72.0))]


def test_paper_a_figures_stand_only_beside_a_table_that_declares_paper_a():
    """The issue's case: FEVER-like files of the user's own gave `71.50 ± 0.71 (85.67)`, paper A's FEVER figure."""
    own = build_table1(FEVER_EVALS, FEVER, ["baseline"], paper=None)
    assert math.isnan(own["paper"].iloc[0]) and own["mean"].iloc[0] == 71.5
    assert to_markdown(own, FEVER, paper=None).splitlines()[2] == "| Baseline | 71.50 ± 0.71 |"
    assert r"Baseline & 71.50 $\pm$ 0.71 \\" in to_latex(own, FEVER, paper=None)
    paper_a = build_table1(FEVER_EVALS, FEVER, ["baseline"], paper="A")
    assert paper_a["paper"].iloc[0] == 85.67
    assert to_markdown(paper_a, FEVER).splitlines()[2] == "| Baseline | 71.50 ± 0.71 (85.67) |"


def test_a_hub_id_already_in_the_hub_cache_is_checked_while_planning(tmp_path, monkeypatch):
    from maskbench.miniature.hub_cache import write_repo

    cache = tmp_path / "hub"
    labels = {"id2label": {"0": "supported", "1": "not_enough_info", "2": "refuted"}}
    write_repo(cache, "someone/claims-model", "model", "main", {"config.json": json.dumps(labels).encode()})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config, _ = own_config(tmp_path)
    config["model"]["path"] = "someone/claims-model"
    with pytest.raises(DataError, match=r"snapshots/\w+/config.json: field 'id2label' has value \['supported', "
                                        r"'not_enough_info', 'refuted'\]"):
        check(config)
    # not in the cache, and the Hub off: the import job could not fetch it either, so the plan stops
    config["model"]["path"] = "someone/not-fetched-yet"
    with pytest.raises(DataError, match=re.escape(f"config: model.path has value 'someone/not-fetched-yet', which is "
                                                  f"no folder here and no Hub model in the Hub cache {cache}: copy")):
        check(config)
    # online (huggingface_hub reads the variable once, when first imported): the import job downloads and checks it
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    check(config)


def test_a_missing_model_folder_stops_the_plan_naming_the_copy_step(tmp_path, monkeypatch):
    """docs/your-model.md's step 2 skipped: `models/your-model` reads as a Hub id, but `models/` is a folder here."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    config, _ = own_config(tmp_path)
    (tmp_path / "models").mkdir()
    config["model"]["path"] = "models/your-model"
    with pytest.raises(DataError, match=re.escape("config: model.path has value 'models/your-model', which is no folder "
                                                  "here and no Hub model in the Hub cache")) as err:
        check(config)
    assert "(docs/your-model.md, step 2)" in str(err.value) and "\n" not in str(err.value)
