"""The documentation cannot rot silently: README.md stays one or two screens, no page links outside the project or
names an issue, every `snakemake` command a page shows plans against the config it names (its rules and target
files are in that plan), the job counts of the pages' config tables are those the configs plan today, and every
generated section's stamp is a commit whose code is HEAD's — or the section says through which later commit it was
checked (and that commit's code is HEAD's) in one short stamp that links its record in docs/provenance.md."""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess

import pytest
from test_workflow import REPO, planned_jobs

PAGES = sorted([REPO / "README.md", REPO / "CHANGELOG.md", REPO / "results" / "README.md",
                *(REPO / "docs").glob("*.md")])
# what decides a run's outputs (as maskbench.tools.readme_tables stamps them)
CODE_PATHS = ("src", "rules", "schemas", "configs", "config.yaml", "Snakefile")
SECTION = re.compile(r"<!-- generated:(\w+) -->\n(.*?)<!-- /generated:\1 -->", re.S)
# the one-paragraph stamp over a generated section (maskbench.report.captions.stamp): the run's commit(s), its command,
# the date, the commit through which its plan (or the code it times) is known unchanged, and its record's link
STAMP = re.compile(r"^\*Run at ((?:`[0-9a-f]{7,40}`(?:, )?)+) ·\s`([^`]+)` ·\s(\d{4}-\d\d-\d\d) ·\s(?:plan|timed code) "
                   r"unchanged through `([0-9a-f]{7,40})` ·\s\[provenance\]\(((?:docs/)?provenance\.md)#([\w-]+)\)\*$", re.M)
# options of a shown command that take a value, and which of them name rules
VALUED = {"--mode", "--target-jobs", "--configfile", "--profile", "--cores", "-c", "--jobs", "-j", "--forcerun", "-R", "--until", "-U",
          "--omit-from", "-O", "--allowed-rules", "--report", "--directory", "-d", "--groups", "--group-components",
          "--resources", "--set-threads", "--default-resources"}
RULE_OPTIONS = {"--forcerun", "-R", "--until", "-U", "--omit-from", "-O", "--allowed-rules"}
SLURM_ENV = {"MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
             "MASKBENCH_SLURM_GPU_PARTITION": "gpu"}


def page_ids(pages):
    return [str(p.relative_to(REPO)) for p in pages]


def shown_commands(text: str) -> list[str]:
    """The snakemake commands a page shows: lines of its code blocks and inline code spans that start with
    `snakemake` (a trailing `# comment` and a `&& ...` tail cut off)."""
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        found += [part for line in block.splitlines() for part in line.split("&&") if part.strip().startswith("snakemake")]
    outside = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
    found += [span for span in re.findall(r"`([^`\n]+)`", outside) if span.startswith("snakemake ")]
    commands = []
    for command in found:
        command = command.split(" #")[0].strip()
        for part in command.split("&&"):
            if part.strip().startswith("snakemake"):
                commands.append(part.strip())
    return commands


def parse(command: str) -> dict:
    """A shown command's config, profile, rule names and target files; `<...>` placeholders are left out."""
    words = shlex.split(command)[1:]
    parsed = {"configfile": None, "profile": None, "rules": [], "targets": [], "command": command}
    i = 0
    while i < len(words):
        word = words[i]
        if word in VALUED:
            values = []
            while i + 1 < len(words) and not words[i + 1].startswith("-"):
                values.append(words[i + 1])
                i += 1
            if word == "--configfile":
                parsed["configfile"] = values[0]
            elif word == "--profile":
                parsed["profile"] = values[0]
            elif word in RULE_OPTIONS:
                parsed["rules"] += values
        elif not word.startswith("-"):
            parsed["targets"].append(word)
        i += 1
    parsed["rules"] = [r for r in parsed["rules"] if "<" not in r and "..." not in r]
    parsed["targets"] = [t for t in parsed["targets"] if "<" not in t and "..." not in t]
    return parsed


def declared_rules() -> set[str]:
    """Rule names written literally in the rules (`rule name:`, `use rule x as name`); rules named in a loop
    (`evaluate_mnli`) are found in the plans instead."""
    names = set()
    for path in [REPO / "Snakefile", *sorted((REPO / "rules").rglob("*.smk"))]:
        text = path.read_text()
        names |= set(re.findall(r"^\s*(?:local)?rule (\w+):", text, re.M))
        names |= set(re.findall(r"^\s*use rule \w+ as (\w+)", text, re.M))
    return names


ALL_COMMANDS = [(page, cmd) for page in PAGES if page.exists() for cmd in shown_commands(page.read_text())]


@pytest.mark.parametrize("page", PAGES, ids=page_ids(PAGES))
def test_every_page_exists(page):
    assert page.is_file(), f"{page.relative_to(REPO)} is missing"


def test_the_readme_is_one_or_two_screens():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"


@pytest.mark.parametrize("page", PAGES, ids=page_ids(PAGES))
def test_no_page_links_outside_the_project_or_names_an_issue(page):
    # the verdict row's placeholder names the work that will generate it; the generated row replaces it
    text = re.sub(r"<!-- generated:suite_verdict -->.*?<!-- /generated:suite_verdict -->", "", page.read_text(), flags=re.S)
    assert "../shared" not in text, f"{page.relative_to(REPO)} points to ../shared, which users do not have"
    issue = re.search(r"(?<![\w/&])#\d+\b|\b[Ii]ssues? \d+", text)
    assert issue is None, f"{page.relative_to(REPO)} names an issue: {issue.group(0)!r}"


def test_the_pages_show_commands():
    # the extraction itself: the README shows the run of each paper and the SLURM command
    readme = [c for p, c in ALL_COMMANDS if p.name == "README.md" and p.parent == REPO]
    assert any("configs/gender.yaml" in c for c in readme) and any("--profile profiles/slurm" in c for c in readme)
    line = "snakemake x.csv --configfile configs/real.yaml --cores 2 --forcerun search_mask table1"
    assert parse(line) == {"configfile": "configs/real.yaml", "profile": None, "rules": ["search_mask", "table1"],
                           "targets": ["x.csv"], "command": line}
    assert shown_commands("run `snakemake -n --cores 2  # plan` then\n```bash\nx && snakemake -f a.csv\n```\n") == [
        "snakemake -f a.csv", "snakemake -n --cores 2"]  # code blocks first, then inline spans


@pytest.mark.parametrize("page,command", ALL_COMMANDS,
                         ids=[f"{p.relative_to(REPO)}: {c[:70]}" for p, c in ALL_COMMANDS])
def test_every_shown_command_plans_against_its_config(page, command, dry_run, paper_dry_run):
    shown = parse(command)
    where = f"{page.relative_to(REPO)} shows `{command}`"
    if shown["configfile"]:
        assert (REPO / shown["configfile"]).is_file(), f"{where}: no such config"
    if shown["profile"]:
        assert (REPO / shown["profile"] / "config.yaml").is_file(), f"{where}: no such profile"
    if shown["profile"] == "profiles/slurm":
        assert shown["configfile"] == "configs/paper.yaml", f"{where}: the docs test plans the SLURM profile " \
                                                             f"with the paper config only"
        plan = paper_dry_run.stdout
    else:
        plan = dry_run(shown["configfile"])
    rules = set(planned_jobs(plan)) | declared_rules()
    for rule in shown["rules"]:
        assert rule in rules, f"{where}: no rule {rule!r} in that config's plan or the rules"
    for target in shown["targets"]:
        assert target in rules or target in plan, f"{where}: {target!r} is neither a rule nor a planned file"


JOBS_HEADERS = ("jobs (`snakemake -n`)", "jobs then (today)")


def job_counts(text: str) -> list[tuple[str, str]]:
    """(config, the count a table gives for today's plan) from every table whose header has a jobs column: in
    `jobs (`snakemake -n`)` the cell's leading number, in speed.md's `jobs then (today)` the number in parentheses;
    cells without one (`—`, words) are not counts."""
    found = []
    for table in re.findall(r"(?:^\|.*\|\n)+", text, re.M):
        lines = table.splitlines()
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        column = next((i for i, c in enumerate(header) if c in JOBS_HEADERS), None)
        if column is None:
            continue
        pattern = r"\(([\d,]+)\)" if header[column] == "jobs then (today)" else r"^([\d,]+)\b"
        for line in lines[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            config = re.match(r"`([\w./-]+\.yaml)`", cells[0])
            count = re.search(pattern, cells[column])
            if config and count:
                found.append((config.group(1), count.group(1).replace(",", "")))
    return found


def test_job_counts_are_found_in_the_config_tables():
    text = ("| config | jobs (`snakemake -n`) | time |\n|---|---|---|\n| `a.yaml` (default) | 1,234 (all) | 1 s |\n"
            "| `b.yaml` | — | x |\n\n| config | jobs then (today) |\n|---|---:|\n| `c.yaml` | 5 (7) |\n")
    assert job_counts(text) == [("a.yaml", "1234"), ("c.yaml", "7")]


COUNTED = [(page, config, count) for page in PAGES if page.exists() and page.parent.name == "docs"
           for config, count in job_counts(page.read_text())]


@pytest.mark.parametrize("page,config,count", COUNTED,
                         ids=[f"{p.relative_to(REPO)}: {c}" for p, c, _ in COUNTED])
def test_a_config_tables_job_count_is_todays_plan(page, config, count, dry_run, paper_dry_run):
    if config == "configs/paper.yaml":
        plan = paper_dry_run.stdout
    else:
        plan = dry_run(None if config == "config.yaml" else config)
    planned = planned_jobs(plan)["total"]
    assert int(count) == planned, f"{page.relative_to(REPO)} gives {config} {count} jobs; snakemake -n plans {planned}"


FACT_JOBS = sorted(json.loads((REPO / "docs" / "facts.json").read_text())["jobs"].items())


@pytest.mark.parametrize("config,count", FACT_JOBS, ids=[c for c, _ in FACT_JOBS])
def test_the_facts_files_job_counts_are_todays_plans(config, count, dry_run, paper_dry_run):
    """docs/facts.json (python -m maskbench.tools.facts), which tests/test_facts.py checks the pages' prose against."""
    plan = paper_dry_run.stdout if config == "configs/paper.yaml" else dry_run(None if config == "config.yaml" else config)
    planned = planned_jobs(plan)["total"]
    assert count == planned, f"docs/facts.json gives {config} {count} jobs; snakemake -n plans {planned}: rerun the tool"


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)


def code_equals_head(commit: str) -> bool:
    return git("diff", "--quiet", commit, "HEAD", "--", *CODE_PATHS).returncode == 0


# the sections made from a run's outputs (the departures table is made from a file the tests check on every run; a
# section its run has not yet written says "Not generated yet" and nothing else; the provenance page holds the
# records the stamps link)
SECTIONS = [(page, name, body) for page in PAGES if page.exists() and page.name != "provenance.md"
            for name, body in SECTION.findall(page.read_text())
            if "departures_readme" not in body and not body.startswith("**Not generated yet")]
PROVENANCE = REPO / "docs" / "provenance.md"


def test_the_generated_sections_are_found():
    names = {name for _, name, _ in SECTIONS}
    assert {"real_table1", "matrix_matrix", "suite_table1", "cost_paper", "gpu_check"} <= names, sorted(names)


def test_the_stamp_pattern_reads_a_wrapped_stamp():
    body = ("*Run at `abc1234`, `def5678` · `snakemake --cores 2` · 2026-11-27 · plan unchanged through `0123abc` ·\n"
            "[provenance](provenance.md#suite)*\ncaption\n")
    assert STAMP.findall(body) == [("`abc1234`, `def5678`", "snakemake --cores 2", "2026-11-27", "0123abc",
                                    "provenance.md", "suite")]
    assert STAMP.findall("*Run at commit `abc1234`: `c`, 1 min wall clock.*") == []  # the old long form


@pytest.mark.parametrize("page,name,body", SECTIONS, ids=[f"{p.name}:{n}" for p, n, _ in SECTIONS])
def test_every_generated_section_has_one_short_stamp_whose_plan_is_heads(page, name, body):
    where = f"{page.relative_to(REPO)}: generated:{name}"
    stamps = list(STAMP.finditer(body))
    assert len(stamps) == 1, f"{where} has {len(stamps)} stamps, not one"
    stamp = stamps[0]
    assert body.startswith(stamp.group(0)), f"{where}: the stamp is not the section's first line"
    assert all(len(line) <= 160 for line in stamp.group(0).split("\n")), f"{where}: a stamp line over 160 characters"
    assert "Checked through" not in body and "Report written by" not in body, f"{where}: a long record (provenance.md)"
    link, record = stamp.group(5), stamp.group(6)
    assert (page.parent / link).resolve() == PROVENANCE, f"{where} links {link}, not docs/provenance.md"
    assert f"### {record}\n" in PROVENANCE.read_text(), f"{where}: no record {record!r} in docs/provenance.md"
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone has not the stamped commits")
    commits = re.findall(r"[0-9a-f]{7,40}", stamp.group(1)) + [stamp.group(4)]
    for commit in commits:
        assert git("cat-file", "-e", commit + "^{commit}").returncode == 0, f"{where}: no commit {commit}"
    assert code_equals_head(stamp.group(4)) or name in not_rerun(), (
        f"{where}: its plan is said unchanged through {stamp.group(4)}, but the code changed since: rerun, check the "
        "plan again and restamp, or list it under docs/provenance.md's 'Not rerun since the code changed' with what "
        "changed")


def not_rerun() -> set[str]:
    """The sections docs/provenance.md lists as not rerun since the code changed (each named in backquotes in that
    part of the page, after what changed)."""
    text = PROVENANCE.read_text()
    if "## Not rerun since the code changed\n" not in text:
        return set()
    part = text.split("## Not rerun since the code changed\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(\w+)`", part.split("Sections:", 1)[1])) if "Sections:" in part else set()


CELL = re.compile(r"^(-?\d+(?:\.\d+)?)(?: ± (\d+(?:\.\d+)?))?")


def table_grid(markdown: str) -> dict[tuple[str, str], str]:
    """The first Markdown table of ``markdown``: (row label, column heading) -> cell text."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    heads = [c.strip() for c in lines[0].strip("|").split("|")]
    grid = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        grid.update({(cells[0], head): cell for head, cell in zip(heads[1:], cells[1:], strict=True)})
    return grid


def test_the_table_grid_reads_cells_by_row_and_column():
    grid = table_grid("text\n| Method | A | B |\n|:---|---:|---:|\n| Baseline | 1.00 ± 0.50 (2) | – |\n")
    assert grid == {("Baseline", "A"): "1.00 ± 0.50 (2)", ("Baseline", "B"): "–"}


def within_spread(shown: str, fresh: str, seeds: int, floor: float) -> bool:
    """Two cells "mean ± std" agree when their means differ by at most 2 standard errors of the difference
    (sqrt(s1²/n + s2²/n) over n seeds each) or ``floor``, whichever is larger; "–" only matches "–"."""
    a, b = CELL.match(shown), CELL.match(fresh)
    if a is None or b is None:
        return a is None and b is None
    s1, s2 = float(a.group(2) or 0.0), float(b.group(2) or 0.0)
    se = math.sqrt(s1 ** 2 / seeds + s2 ** 2 / seeds)
    return abs(float(a.group(1)) - float(b.group(1))) <= max(2 * se, floor)


def test_within_spread_by_hand():
    # 2 seeds, stds 1 and 1: SE = sqrt(1/2 + 1/2) = 1, so 2 points apart is within, 2.5 is not (floor 1)
    assert within_spread("50.00 ± 1.00 (61.97)", "52.00 ± 1.00", 2, 1.0)
    assert not within_spread("50.00 ± 1.00", "52.50 ± 1.00", 2, 1.0)
    assert within_spread("24.00 ± 0.00", "25.00 ± 0.00", 2, 1.0)      # zero spread: one example's worth
    assert not within_spread("24.00 ± 0.00", "25.01 ± 0.00", 2, 1.0)
    assert within_spread("–", "–", 2, 1.0) and not within_spread("–", "3.00 ± 0.00", 2, 1.0)


def test_a_fresh_smoke_run_matches_the_testing_page_within_the_spread(smoke_run):
    """The session's fresh smoke run against the smoke Table 1 docs/testing.md shows: same rows and columns, every
    cell within its spread (bit-identical on the machine that wrote the page; within the seeds' noise elsewhere)."""
    import pandas as pd

    page = dict((name, body) for name, body in SECTION.findall((REPO / "docs" / "testing.md").read_text()))
    tables = smoke_run / "results/smoke" / "tables"

    def unlabelled(grid: dict) -> dict:
        # a row labelled "(not engaged ...)" (since 609e2f9) is the same row: which seeds engage may differ by machine
        return {(re.sub(r" \(not engaged[^)]*\)$", "", row), col): cell for (row, col), cell in grid.items()}

    shown = unlabelled(table_grid(page["smoke_table1"]))
    fresh = unlabelled(table_grid((tables / "table1.md").read_text()))
    assert shown.keys() == fresh.keys(), sorted(set(shown) ^ set(fresh))
    floor = 100.0 / int(pd.read_csv(tables / "datasets.csv")["n_examples"].min())  # one example, in points
    seeds = int(pd.read_csv(tables / "table1.csv")["n_seeds"].max())
    outside = {key: (shown[key], fresh[key]) for key in shown if not within_spread(shown[key], fresh[key], seeds, floor)}
    assert not outside, f"cells outside their spread (page, fresh): {outside}"


def misshapen_rows(markdown: str) -> list[str]:
    """The rows of ``markdown``'s tables that have more or fewer cells than their header: an unescaped ``|`` inside
    a cell splits it, and a renderer drops the cells past the header's last (``\\|`` stays inside its cell)."""

    def width(line: str) -> int:
        return len(re.split(r"(?<!\\)\|", line.strip().removeprefix("|").removesuffix("|")))

    lines, found = markdown.splitlines(), []
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and re.match(r"\|\s*:?-{3,}", lines[i + 1]) and (i == 0 or not lines[i - 1].startswith("|")):
            header = width(line)
            for number, row in enumerate(lines[i + 2:], start=i + 3):
                if not row.startswith("|"):
                    break
                if width(row) != header:
                    found.append(f"line {number}: {width(row)} cells under a header of {header}: {row[:80]}")
    return found


def test_misshapen_rows_by_hand():
    table = "| paper | figure | verdict |\n|---|---|---|\n| B | mean |SEAT| 0.6 | gain |\n| B | mean \\|SEAT\\| 0.6 | gain |\n"
    assert misshapen_rows(table) == ["line 3: 5 cells under a header of 3: | B | mean |SEAT| 0.6 | gain |"]
    assert misshapen_rows("| a | b |\n|:---|---:|\n| 1 | 2 |\n\ntext | not a table\n") == []


@pytest.mark.parametrize("page", PAGES, ids=page_ids(PAGES))
def test_every_table_row_has_its_headers_cells(page):
    assert misshapen_rows(page.read_text()) == [], page.relative_to(REPO)


def test_every_table_the_smoke_run_writes_has_rows_as_wide_as_its_header(smoke_run):
    tables = sorted((smoke_run / "results/smoke").rglob("*.md"))
    assert {"table1.md", "verdict.md", "matrix.md", "engagement.md"} <= {t.name for t in tables}
    assert {str(t.relative_to(smoke_run)): misshapen_rows(t.read_text()) for t in tables if misshapen_rows(t.read_text())} == {}


def heading_anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings as GitHub makes them: lower case, every character but letters, digits,
    spaces, hyphens and underscores dropped, spaces made hyphens; a repeated heading gets -1, -2, ...; code blocks
    skipped."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def test_heading_anchors_by_hand():
    page = "# The GPU check\n## Determinism and checking files\n```\n# not a heading\n```\n## `tools/` · two\n## Two\n## Two\n"
    assert heading_anchors(page) == {"the-gpu-check", "determinism-and-checking-files", "tools--two", "two", "two-1"}


@pytest.mark.parametrize("page", PAGES, ids=page_ids(PAGES))
def test_every_link_within_the_project_finds_its_file_and_heading(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in heading_anchors(file.read_text()):
            broken.append(target)
    assert broken == [], f"{page.relative_to(REPO)}: links that lead nowhere: {broken}"


def test_the_map_of_outputs_names_every_config():
    """results/README.md's "Where each config writes" table has a row for every config file, with its results folder."""
    import yaml

    text = (REPO / "results" / "README.md").read_text()
    table = text[text.index("## Where each config writes"):text.index("## In every config")]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    for path in [REPO / "config.yaml", *sorted((REPO / "configs").glob("*.yaml"))]:
        name = str(path.relative_to(REPO))
        row = next((r for r in rows if f"`{name}`" in r.split(" | ")[0]), None)
        assert row is not None, f"results/README.md lists no row for {name}"
        folder = (yaml.safe_load(path.read_text()) or {}).get("results", "results/default")
        assert f"`{folder.rstrip('/')}/`" in row, f"results/README.md: {name}'s row does not name {folder}/"
