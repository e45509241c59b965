"""The project's recorded facts in one place, and the prose claims about them that the pages make.

``facts(repo)`` reads what is recorded — each config's seeds (per paper), the paper config's time limits, the wall
times of the runs the pages show (their records in docs/provenance.md and results/benchmarks/suite_wall.json), the GPU
checks (results/benchmarks/gpu_check*.json), the cost sheet's totals (its generated section) — and the job counts of
docs/facts.json, which ``python -m maskbench.tools.facts`` writes from ``snakemake -n`` of every config (the docs
tests check them against today's plans). ``disagreements(pages, facts)`` reads the pages' prose sentence by sentence
and returns every claim of one of those kinds whose number is not the recorded one. A sentence that names a commit
or says "then" / "was" / "before" is history, not a claim about today, and is left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

FACTS_FILE = "docs/facts.json"
PAPERS = ("A", "B", "C", "D")
# the paper config's compute: keys that set a time limit, and the words that name what each one limits
LIMITS = {"train_runtime_min": ("training", "mask search", "paper a"), "gender_runtime_min": ("paper b", "gender"),
          "srnet_runtime_min": ("paper c", "sweeps", "srnet"), "srnet_eval_runtime_min": ("paper c", "srnet"),
          "eval_runtime_min": ("evaluation",)}
WALL = re.compile(r"\b(?:\d+ h )?\d+ min(?: \d+ s)?\b|\b\d+ h \d+ min\b")
COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
HISTORY = re.compile(r"\b(then|was|were|before|earlier|used to|at the time|retired)\b", re.I)
CONFIG_REF = re.compile(r"`?(configs/[\w-]+\.yaml|(?<![/\w])config\.yaml)`?|\b(the paper config|the offline suite|"
                        r"the default config|the smoke DAG)\b", re.I)
NAMED = {"the paper config": "configs/paper.yaml", "the offline suite": "config.yaml",
         "the default config": "config.yaml", "the smoke DAG": "configs/smoke.yaml"}  # lower case but "DAG"
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def number(text: str) -> int:
    return NUMBER_WORDS[text.lower()] if text.lower() in NUMBER_WORDS else int(text.replace(",", ""))


def seeds_per_paper(config: Mapping) -> dict[str, int]:
    """How many seeds each paper's rows of a config run: A, B and D the config's ``seeds``, C ``srnets.seeds`` (or
    the config's), each only where the config plans that paper's track."""
    tracks = config.get("track", [])
    tracks = [tracks] if isinstance(tracks, str) else list(tracks)
    n = len(config.get("seeds", []))
    out = {}
    if "nlu" in tracks:
        out["A"] = n
        if "srnets" in config:
            out["C"] = len(config["srnets"].get("seeds", config.get("seeds", [])))
    if "gender" in tracks:
        out["B"] = n
    if "vision" in tracks:
        out["D"] = n
    return out


def config_files(repo: Path) -> list[str]:
    return ["config.yaml", *sorted(str(p.relative_to(repo)) for p in (repo / "configs").glob("*.yaml"))]


# planned only on the inputs its driver stands in (python -m maskbench.tools.miniature), not in an empty folder
NOT_PLANNED_ALONE = ("configs/paper-miniature.yaml",)


def planned_configs(repo: Path) -> list[str]:
    """The configs whose job count docs/facts.json records: every one that plans in an empty folder."""
    return [c for c in config_files(repo) if c not in NOT_PLANNED_ALONE]


def provenance_walls(repo: Path) -> dict[str, list[str]]:
    """{config: the wall times its run records in docs/provenance.md name (the total and its parts)}."""
    page = repo / "docs" / "provenance.md"
    walls: dict[str, list[str]] = {}
    if not page.is_file():
        return walls
    for record in re.split(r"^### ", page.read_text(encoding="utf-8"), flags=re.M)[1:]:
        flat = " ".join(record.split())
        run = re.search(r"Run at commits? [^:]*: `([^`]*)`, (.*?) wall clock", flat)
        if run is None:
            continue
        config = re.search(r"--configfile (\S+)", run.group(1))
        walls.setdefault(config.group(1) if config else "config.yaml", []).extend(WALL.findall(run.group(2)))
    return walls


def gpu_checks(repo: Path) -> list[dict]:
    """Each recorded GPU check's smoke DAG: its commit, status and jobs done of planned (None when not recorded)."""
    out = []
    for path in sorted((repo / "results" / "benchmarks").glob("gpu_check*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        for name, section in record.get("sections", {}).items():
            if not name.startswith("smoke_dag"):
                continue
            commit = section.get("commit") or (name.removeprefix("smoke_dag_at_") if name.startswith("smoke_dag_at_")
                                               else record["commit"])
            out.append({"file": path.name, "section": name, "commit": commit, "status": section.get("status"),
                        "jobs_done": section.get("jobs_done", section.get("steps_done")),
                        "jobs_planned": section.get("jobs_planned", section.get("steps_total"))})
    return out


def gpu_rates(repo: Path) -> list[float]:
    """Every rate a recorded GPU check measured (steps or pairs per second, any section and variant, and each round
    and median of its side-by-side section)."""
    rates = []
    for path in sorted((repo / "results" / "benchmarks").glob("gpu_check*.json")):
        for section in json.loads(path.read_text(encoding="utf-8")).get("sections", {}).values():
            for variant in (section.get("variants") or {}).values():
                rates += [float(v) for k, v in variant.items() if k in ("steps_per_s", "pairs_per_s")]
            for batch in (section.get("batches") or {}).values():  # side_by_side's interleaved rounds
                for values in (batch.get("rates") or {}).values():
                    rates += [float(v) for v in values]
                rates += [float(v) for v in (batch.get("medians") or {}).values()]
    return rates


def cost_totals(repo: Path) -> dict:
    """The cost sheet's total row (jobs priced, GPU-hours) from its generated section, and the GPU-hours at each
    measured card's rates where docs/cost.md records them."""
    for page in (repo / "docs").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        total = re.search(r"<!-- generated:cost_paper -->.*?^\| \*\*total\*\* \| ([\d,]+) \| \*\*([\d,]+)\*\*", text,
                          re.S | re.M)
        if total:
            return {"jobs": number(total.group(1)), "gpu_hours": number(total.group(2))}
    return {}


def facts(repo: Path) -> dict:
    """Every recorded fact the pages may state (see the module's docstring)."""
    repo = Path(repo)
    configs = {name: yaml.safe_load((repo / name).read_text(encoding="utf-8")) for name in config_files(repo)}
    compute = configs["configs/paper.yaml"].get("compute", {})
    written = repo / FACTS_FILE
    stored = json.loads(written.read_text(encoding="utf-8")) if written.is_file() else {}
    jobs = stored.get("jobs", {})
    cost = cost_totals(repo)
    if cost:
        cost["gpu_hours_by_card"] = stored.get("gpu_hours_by_card", {})
    suite = json.loads((repo / "results/benchmarks/suite_wall.json").read_text(encoding="utf-8"))
    walls = provenance_walls(repo)
    walls.setdefault(suite["config"], []).extend([suite["total_wall"].split(" (")[0],
                                                  *(i["wall"] for i in suite["invocations"])])
    return {"jobs": jobs,
            "seeds": {name: seeds_per_paper(config) for name, config in configs.items()},
            "time_limits_h": {key: compute[key] / 60 for key in LIMITS if key in compute},
            "walls": {name: sorted(set(found)) for name, found in walls.items()},
            "suite": {"jobs": suite["jobs_planned"], "wall": suite["total_wall"].split(" (")[0]},
            "gpu_checks": gpu_checks(repo),
            "gpu_rates": gpu_rates(repo),
            "cost": cost}


def prose(text: str) -> str:
    """A page's prose: code blocks, generated sections and HTML comments taken out (they are records or commands)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!-- generated:(\w+) -->.*?<!-- /generated:\1 -->", "", text, flags=re.S)
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def sentences(text: str) -> list[str]:
    """The prose's sentences: paragraphs (and list items, table rows) joined into one line each, cut after ". " or
    "; " before a capital or a backtick."""
    units = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |\|))", prose(text)):
        units += re.split(r"(?<=[.;])\s+(?=[A-Z`*(\[])", " ".join(block.split()))
    return [u for u in units if u]


def configs_named(sentence: str) -> list[tuple[int, str]]:
    """(position, config file) of every config the sentence names."""
    return [(m.start(), m.group(1) or NAMED[m.group(2).lower().replace("dag", "DAG")])
            for m in CONFIG_REF.finditer(sentence)]


def claims_of(sentence: str, page: str, recorded: Mapping) -> list[str]:
    """What in ``sentence`` (of ``page``) contradicts ``recorded``: one line per disagreement."""
    if COMMIT.search(sentence) and not re.search(r"smoke DAG", sentence) or HISTORY.search(sentence):
        return []
    wrong = []
    named = configs_named(sentence)
    if sentence.startswith("|") and named:
        named = named[:1]  # a table row is about the config of its first cell
    lower = sentence.lower()
    # job counts: "N jobs" belongs to the config named last before it (not "X of N jobs", "for N jobs")
    for m in re.finditer(r"(?<!of )(?<!for )(?<![\d,])(\d[\d,]*) jobs\b", sentence):
        before = [(at, config) for at, config in named if at < m.start()]
        if not before or before[-1][1] not in recorded["jobs"]:
            continue
        between = sentence[before[-1][0]:m.start()]
        if re.search(r"\bpaper [A-D]'s\b|\balone\b|\bcolumn\b|\bof them\b|`[a-z_]+`", between):
            continue  # a part of the config's plan (a paper's, a rule's), not its total
        before = [config for _, config in before]
        if number(m.group(1)) != recorded["jobs"][before[-1]]:
            wrong.append(f"{before[-1]} plans {recorded['jobs'][before[-1]]:,} jobs, not {m.group(1)}")
    # seeds: the counts a sentence gives a config must be the seeds of that config's papers (on a paper's page,
    # that paper's); one count for "all four papers" must hold for every paper
    for m in re.finditer(r"\b(\d|one|two|three|four|five) seeds\b", sentence, re.I):
        before = [config for at, config in named if at < m.start()] or [c for _, c in named]
        if not before or before[-1] not in recorded["seeds"]:
            continue
        per_paper = recorded["seeds"][before[-1]]
        said = number(m.group(1))
        paper = re.search(r"paper-([a-d])\.md$", page)
        others = re.findall(r"\bpaper ([A-D])'?s?\b", sentence[max(0, m.start() - 80):m.end() + 40])
        if paper and paper.group(1).upper() in per_paper and not others:
            allowed = {per_paper[paper.group(1).upper()]}
        elif "all four papers" in lower:
            allowed = set(per_paper.values()) if len(set(per_paper.values())) == 1 else set()
        else:
            allowed = set(per_paper.values())
        if said not in allowed and per_paper:
            wrong.append(f"{before[-1]} runs {per_paper} seeds per paper; the sentence says {said}")
    # time limits: "at most N h" of the paper config is the longest limit of what the sentence does not set apart
    if "configs/paper.yaml" in [c for _, c in named]:
        for m in re.finditer(r"at most (\d+) ?h\b", sentence):
            apart = {key for key, words in LIMITS.items() if any(w in lower for w in words)} - {"train_runtime_min"}
            limits = [h for key, h in recorded["time_limits_h"].items() if key not in apart]
            if limits and float(m.group(1)) != max(limits):
                wrong.append(f"the paper config's longest limit (those named apart: {sorted(apart)}) is "
                             f"{max(limits):g} h, not {m.group(1)} h")
    # wall times: a wall time beside one config is one its run's record names
    configs = {c for _, c in named}
    if len(configs) == 1 and next(iter(configs)) in recorded["walls"] and not re.search(r"gpu|h100|cuda", lower):
        config = next(iter(configs))
        for wall in WALL.findall(sentence):
            if wall not in recorded["walls"][config] and re.search(r"\d+ h|\d+ min \d+ s", wall):
                wrong.append(f"{config}'s run took {recorded['walls'][config]}, not {wall}")
    # the GPU check's smoke DAG: "X of N jobs" is a recorded check's; a pass names the commit of a check that passed
    if "smoke dag" in lower and re.search(r"gpu|h100|cuda", lower):
        checks = recorded["gpu_checks"]
        for m in re.finditer(r"(\d+) of (\d+) jobs", sentence):
            pair = (int(m.group(1)), int(m.group(2)))
            if checks and pair not in {(c["jobs_done"], c["jobs_planned"]) for c in checks}:
                wrong.append(f"no GPU check recorded the smoke DAG at {pair[0]} of {pair[1]} jobs")
        if re.search(r"end to end|passed|all \d+ jobs", lower):
            passed = {c["commit"][:7] for c in checks if c["status"] == "ok"}
            if not passed & set(COMMIT.findall(sentence)):
                wrong.append(f"the smoke DAG passed on a GPU only at {sorted(passed)}; the sentence names none")
    # a measured rate is one a recorded GPU check measured, at the digits shown (an assumed rate says so)
    if not re.search(r"assum|a100", lower):
        for m in re.finditer(r"(\d[\d,]*(?:\.(\d+))?) (?:steps|pairs)/s\b", sentence):
            value, digits = number(m.group(1).split(".")[0]) + float("0." + (m.group(2) or "0")), len(m.group(2) or "")
            if recorded.get("gpu_rates") and not any(abs(round(r, digits) - value) < 1e-9 for r in recorded["gpu_rates"]):
                wrong.append(f"no recorded GPU check measured {m.group(1)} {m.group(0).split()[-1]}")
    # the cost sheet's total GPU-hours
    if recorded["cost"] and re.search(r"total|in all|paper config|cost sheet", lower):
        for m in re.finditer(r"(\d[\d,]*) GPU-h(?:ours)?\b", sentence):
            allowed = {recorded["cost"]["gpu_hours"], *recorded["cost"].get("gpu_hours_by_card", {}).values()}
            if number(m.group(1)) not in allowed:
                wrong.append(f"the cost sheet prices {sorted(allowed)} GPU-hours, not {m.group(1)}")
    return wrong


def disagreements(pages: Iterable[tuple[str, str]], recorded: Mapping) -> list[str]:
    """``page: sentence: what disagrees`` for every claim of the pages (name, text) that the record contradicts."""
    out = []
    for name, text in pages:
        for sentence in sentences(text):
            out += [f"{name}: {sentence[:160]!r}: {why}" for why in claims_of(sentence, name, recorded)]
    return out
