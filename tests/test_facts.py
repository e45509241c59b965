"""One truth per number: no two pages disagree about a fact the project records (job counts per config, wall times,
seeds per paper, time limits, GPU-check results, cost totals), the pages stay short enough to read, and the checker
itself finds a mismatch put there on purpose. Fast: no planning, no run (docs/facts.json's job counts are checked
against today's plans in tests/test_docs.py)."""

from __future__ import annotations

import json
import re

import pytest
from test_workflow import REPO

from maskbench.report.captions import MAX_LINE
from maskbench.report.facts import FACTS_FILE, disagreements, facts, planned_configs, sentences

# CHANGELOG.md and docs/history.md (its older part) are dated history (what a commit changed, with its numbers then); the provenance page is the records
PAGES = sorted([REPO / "README.md", REPO / "results" / "README.md",
                *(p for p in (REPO / "docs").glob("*.md") if p.name not in ("provenance.md", "history.md"))])
ALL_PAGES = sorted([*PAGES, REPO / "CHANGELOG.md", REPO / "docs" / "history.md", REPO / "docs" / "provenance.md"])
LIMITS = {"docs/paper-a.md": 400}
MAX_PAGE = 450


@pytest.fixture(scope="module")
def recorded():
    return facts(REPO)


def test_the_facts_file_names_every_config(recorded):
    assert set(json.loads((REPO / FACTS_FILE).read_text())["jobs"]) == set(planned_configs(REPO))
    assert recorded["seeds"]["configs/paper.yaml"] == {"A": 5, "B": 5, "C": 4, "D": 5}
    # the suite's measured run (2992fba) planned today's jobs: a change to the plan changes this line until the suite
    # runs again
    assert recorded["jobs"]["config.yaml"] - recorded["suite"]["jobs"] == 0


def test_the_checker_finds_each_kind_of_mismatch(recorded):
    """A test of the checker: sentences built from the records pass, the same sentences one number off fail."""
    jobs = recorded["jobs"]["configs/paper.yaml"]
    limits = recorded["time_limits_h"]
    longest_not_c = max(h for k, h in limits.items() if not k.startswith("srnet"))
    wall = recorded["suite"]["wall"]
    ok_check = next(c for c in recorded["gpu_checks"] if c["status"] == "ok")
    gpu_h = recorded["cost"]["gpu_hours"]
    right = [f"The paper config plans {jobs:,} jobs.",
             "`configs/paper.yaml` runs 5 seeds for papers A, B and D and 4 for paper C.",
             f"The paper config asks for at most {longest_not_c:g} h a job (paper C's sweeps 24 h).",
             f"`config.yaml` took {wall} on 2 CPU cores.",
             f"The smoke DAG passed on an H100 at {ok_check['commit'][:7]}.",
             f"The cost sheet prices the paper config at {gpu_h:,} GPU-h in total.",
             f"Fine-tuning ran at {recorded['gpu_rates'][0]:.1f} steps/s on the H100."]
    wrong = [f"The paper config plans {jobs + 1:,} jobs.",
             "`configs/paper.yaml` runs 5 seeds, all four papers.",
             "The paper config asks for at most 12 h a job (paper C's sweeps 24 h).",
             "`config.yaml` took 3 h 22 min 35 s on 2 CPU cores.",
             "The smoke DAG ran end to end on one H100.",
             f"The cost sheet prices the paper config at {gpu_h + 1:,} GPU-h in total.",
             f"Fine-tuning ran at {recorded['gpu_rates'][0] + 1:.1f} steps/s on the H100."]
    assert disagreements([("README.md", " ".join(right))], recorded) == []
    for sentence in wrong:
        found = disagreements([("README.md", sentence)], recorded)
        assert len(found) == 1, (sentence, found)
    # one page against another: two pages giving the paper config different counts cannot both pass
    two = [("docs/a.md", f"The paper config plans {jobs:,} jobs."), ("docs/b.md", f"The paper config: {jobs - 15:,} jobs.")]
    assert [line.split(":")[0] for line in disagreements(two, recorded)] == ["docs/b.md"]
    # history is not a claim about today; a page's own paper decides which seed count holds there
    assert disagreements([("README.md", f"At 90e9758 the paper config planned {jobs - 1:,} jobs.")], recorded) == []
    assert disagreements([("docs/paper-c.md", "`configs/paper.yaml`: 4 seeds.")], recorded) == []
    assert len(disagreements([("docs/paper-c.md", "`configs/paper.yaml`: 5 seeds.")], recorded)) == 1


def test_no_page_disagrees_with_the_record(recorded):
    pages = [(str(p.relative_to(REPO)), p.read_text(encoding="utf-8")) for p in PAGES]
    found = disagreements(pages, recorded)
    assert not found, "\n".join(found)


def test_sentences_leave_out_code_and_generated_sections():
    text = "A `config.yaml` run. Then more.\n\n```bash\nsnakemake 5 jobs\n```\n<!-- generated:x -->\n9 jobs\n" \
           "<!-- /generated:x -->\n- an item; Two."
    assert sentences(text) == ["A `config.yaml` run.", "Then more.", "- an item;", "Two."]


def prose_lines(text: str) -> list[str]:
    """Lines of prose: not a table row, not in a code block, not an HTML comment, not a heading (a generated table's
    title may be long; a heading cannot be wrapped)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced and not line.lstrip().startswith(("|", "<!--", "#")):
            out.append(line)
    return out


@pytest.mark.parametrize("page", ALL_PAGES, ids=[str(p.relative_to(REPO)) for p in ALL_PAGES])
def test_pages_and_lines_stay_short(page):
    name = str(page.relative_to(REPO))
    text = page.read_text(encoding="utf-8")
    limit = LIMITS.get(name, MAX_PAGE)
    assert len(text.split("\n")) - 1 <= limit, f"{name} has {len(text.splitlines())} lines (at most {limit})"
    long = [line[:80] for line in prose_lines(text) if len(line) > MAX_LINE]
    assert not long, f"{name}: {len(long)} prose lines over {MAX_LINE} characters: {long[:3]}"


def test_the_limits_check_sees_a_long_line():
    assert prose_lines("x\n| " + "t " * 200 + "|\n```\n" + "c" * 300 + "\n```\n" + "p" * 161) == ["x", "p" * 161]
    assert re.fullmatch(r"p+", prose_lines("p" * 161)[0]) and len(prose_lines("p" * 161)[0]) > MAX_LINE


def test_the_side_by_side_rounds_are_recorded_rates():
    """A rate quoted from the GPU check's interleaved rounds (each round's and each median) is a recorded one."""
    from maskbench.report.facts import gpu_rates

    check = json.loads((REPO / "results/benchmarks/gpu_check.json").read_text())
    rounds = check["sections"]["side_by_side"]["batches"]["128"]
    rates = gpu_rates(REPO)
    assert set(rounds["rates"]["finetune_bf16"]) <= set(rates) and rounds["medians"]["reference_bf16"] in rates


def test_the_cost_pages_card_table_is_the_facts_files():
    """Each row of docs/cost.md's table of GPU checks prices the paper config as docs/facts.json records it
    (`python -m maskbench.tools.facts --cost`): a check's file by its name, the row without one by the sheet's
    assumed rates."""
    from maskbench.tools.facts import ASSUMED

    by_card = json.loads((REPO / FACTS_FILE).read_text())["gpu_hours_by_card"]
    rows = re.findall(r"^\| (`results/benchmarks/(gpu_check[\w.]*\.json)`|none [^|]*) \|[^|]*\| ([\d,]+) \|$",
                      (REPO / "docs" / "cost.md").read_text(), re.M)
    shown = {name or ASSUMED: int(hours.replace(",", "")) for _, name, hours in rows}
    assert shown == by_card
