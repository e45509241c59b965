"""The package's import graph, read from the AST of every module under src/maskbench (imports inside functions
included): no circle, no arrow from a lower layer up to a higher one, no track importing another, no step importing
another, and the rules' parse-time imports free of the report code and the heavy libraries."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = "maskbench"

# From the bottom up; a module may import its own layer and the layers below it. The first matching prefix wins.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("maskbench.cli", "maskbench.compute", "maskbench.runtime", "maskbench.resume", "maskbench.stop",
              "maskbench.metrics", "maskbench.objectives", "maskbench.config_checks", "maskbench.errors",
              "maskbench.precision", "maskbench.progress", "maskbench._version")),
    ("library", ("maskbench.data", "maskbench.masking", "maskbench.ffw", "maskbench.checkpoints", "maskbench.checkpoint_integrity",
                 "maskbench.training", "maskbench.hub", "maskbench.miniature", "maskbench.config_files")),
    ("shared", ("maskbench.text", "maskbench.report", "maskbench.matrix")),
    ("tracks", ("maskbench.tracks",)),
    ("api", ("maskbench.api",)),  # the public Python API: a facade over the layers below
    # the workflow glue: what only the Snakefile and rules/ use (and the steps' launcher, the tools); no layer below
    # imports it
    ("workflow", ("maskbench.workflow",)),
    ("entry points", ("maskbench.steps", "maskbench.tools", "maskbench.benchmarks", "maskbench.console")),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The maskbench modules `path` imports anywhere in its body (`from a import b` counts as a.b when a.b is a
    module). Relative imports are resolved against the module's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import maskbench.a.b as c` names a module
                target = target.rpartition(".")[0]
            if target.startswith(PACKAGE) and target != name:
                found.add(target)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each module's imports of the package's modules (parsed once per session; the tests only read it)."""
    found = modules()
    known = set(found)
    return {name: imports_of(path, name, known) for name, path in found.items()}


def layer(name: str) -> str | None:
    for layer_name, prefixes in LAYERS:
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return layer_name
    return None


def shared_schema() -> dict:
    import yaml

    return yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())


# every name that is a track somewhere: a package of tracks/, a name in the shared schema's list, a track's own schema
# (so a fifth track that misses one of its places is checked, not passed over)
TRACKS = sorted({p.name for p in (SRC / PACKAGE / "tracks").iterdir() if p.is_dir() and any(p.glob("*.py"))}
                | set(shared_schema()["definitions"]["track_name"]["enum"])
                | {p.name.removesuffix(".schema.yaml") for p in (REPO / "schemas").glob("*.schema.yaml")} - {"config"})


def track_of(name: str) -> str | None:
    m = re.match(r"maskbench\.(?:tracks|steps)\.(\w+)", name)
    return m.group(1) if m and m.group(1) in TRACKS else None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


# ------------------------------------------------------------------------------------------- the checker itself

def test_the_graph_reader_resolves_module_and_name_imports(tmp_path):
    pkg = tmp_path / "src" / "maskbench"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("from . import b\n")
    (pkg / "a" / "b.py").write_text("def f():\n    from maskbench.c import thing\n")
    (pkg / "c.py").write_text("import maskbench.a.b as bee\nfrom maskbench.a import b\n")
    known = {"maskbench", "maskbench.a", "maskbench.a.b", "maskbench.c"}
    assert imports_of(pkg / "a" / "__init__.py", "maskbench.a", known) == {"maskbench.a.b"}
    assert imports_of(pkg / "a" / "b.py", "maskbench.a.b", known) == {"maskbench.c"}  # inside a function
    assert imports_of(pkg / "c.py", "maskbench.c", known) == {"maskbench.a.b"}


def test_the_cycle_finder_finds_circles_and_only_them():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"b"}}) == []
    assert sorted(cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}})) == [["a", "b"], ["c", "d"]]


def test_every_module_has_a_layer():
    assert [m for m in modules() if m != PACKAGE and layer(m) is None] == []


# ------------------------------------------------------------------------------------------- the package

def test_no_import_circle():
    assert cycles(graph()) == []


def test_no_import_circle_between_packages():
    """The package view (each subpackage of maskbench and each top-level module one room): no circle either, e.g. no
    base class of hub.py's errors in data/ while data/ imports hub.py (a shared base error lives in errors.py)."""
    def room(name: str) -> str:
        return ".".join(name.split(".")[:2])

    rooms: dict[str, set[str]] = {}
    for a, targets in graph().items():
        rooms.setdefault(room(a), set()).update(room(b) for b in targets if room(b) != room(a))
    assert cycles(rooms) == []


def test_the_library_never_imports_the_workflow_glue():
    """maskbench.workflow sits above the library, the tracks and the API: only the steps, the tools and the console
    (and the rules) import it."""
    upward = [f"{a} -> {b}" for a, targets in graph().items() for b in sorted(targets)
              if b.startswith("maskbench.workflow") and not a.startswith(("maskbench.workflow", "maskbench.steps",
                                                                          "maskbench.tools", "maskbench.benchmarks",
                                                                          "maskbench.console"))]
    assert upward == []


def test_no_import_runs_back_up_a_layer():
    upward = [f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a, targets in graph().items() for b in sorted(targets)
              if a != PACKAGE and b != PACKAGE and RANK[layer(b)] > RANK[layer(a)]]
    assert upward == []


def test_no_track_imports_another_track():
    crossing = [f"{a} -> {b}" for a, targets in graph().items() for b in sorted(targets)
                if track_of(a) and track_of(b) and track_of(a) != track_of(b)]
    assert crossing == []


def test_no_entry_point_imports_another():
    """Steps, tools and benchmarks share library code, never each other's (only the steps package's `run_step`)."""
    entry = ("maskbench.steps.", "maskbench.tools.", "maskbench.benchmarks.")
    crossing = [f"{a} -> {b}" for a, targets in graph().items() if a.startswith(entry)
                for b in sorted(targets) if b.startswith(entry)]
    assert crossing == []


def test_every_step_is_its_arguments_and_a_call_on_the_one_contract():
    """Each step module's entry point is ``@step_main(<its argument dataclass>)`` (steps/__init__.py), parsed by
    ``cli.parse_dataclass``: no step builds a parser of its own, and each ends in ``run_step(main)``."""
    off_contract = []
    for path in sorted((SRC / PACKAGE / "steps").rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text())
        mains = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"]
        decorated = [d for node in mains for d in node.decorator_list
                     if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "step_main"]
        parses = any(isinstance(node, ast.Import | ast.ImportFrom) and "argparse" in ast.unparse(node)
                     for node in ast.walk(tree))
        ends = "\nif __name__ == \"__main__\":\n    run_step(main)\n" in path.read_text()
        if len(decorated) != 1 or parses or not ends:
            off_contract.append(str(path.relative_to(SRC)))
    assert off_contract == []


def rules_imports() -> set[str]:
    found = set()
    for path in [REPO / "Snakefile", *sorted((REPO / "rules").rglob("*.smk"))]:
        found |= set(re.findall(r"^\s*from (maskbench[\w.]*) import", path.read_text(), flags=re.M))
        found |= set(re.findall(r"^\s*import (maskbench[\w.]*)", path.read_text(), flags=re.M))
    return found


def test_the_rules_import_no_report_code_and_no_heavy_library_when_parsed():
    imported = rules_imports()
    assert imported, "the rules import nothing from maskbench: is the reader broken?"
    code = ("import sys\n" + "".join(f"import {m}\n" for m in sorted(imported)) +
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'torch', 'matplotlib', "
            "'transformers', 'numpy') or '.report' in m)\nprint(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"{sorted(imported)} pull in {done.stdout.strip()}"


def test_the_shared_schema_is_the_one_registration_of_the_tracks():
    """A track is its folders; the shared schema's list of track names (with the `allOf` entry that applies the
    track's own schema) is the one place that names them all, and it names exactly the track packages."""
    schema = shared_schema()
    packages = sorted(p.parent.name for p in (SRC / PACKAGE / "tracks").glob("*/__init__.py"))
    assert {"nlu", "gender", "vision"} <= set(TRACKS)  # the three this repository ships, at least
    assert packages == TRACKS
    assert sorted(schema["definitions"]["track_name"]["enum"]) == TRACKS
    applied = sorted(entry["then"]["$ref"].split("/")[-1].removesuffix(".schema.yaml") for entry in schema["allOf"])
    assert applied == TRACKS


@pytest.mark.parametrize("track", TRACKS)
def test_each_track_has_its_steps_rules_report_plan_and_checks_at_home(track):
    for place in (SRC / PACKAGE / "steps" / track / "__init__.py", SRC / PACKAGE / "tracks" / track / "report",
                  SRC / PACKAGE / "tracks" / track / "config_checks.py",
                  SRC / PACKAGE / "tracks" / track / "workflow_plan.py", REPO / "rules" / track / "main.smk",
                  REPO / "schemas" / f"{track}.schema.yaml"):
        assert place.exists(), place
    assert [p.name for p in (SRC / PACKAGE / "steps").glob(f"{track}_*.py")] == []


def test_the_engine_imports_only_itself_and_runtime_and_nothing_inside_a_function():
    """masking/ is the engine every track builds on: a function-level import there would hide a circle, and any
    import beyond the engine and maskbench.runtime would tie it to what builds on it."""
    found = modules()
    for name, path in found.items():
        if not name.startswith("maskbench.masking"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        nested = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                  and node not in tree.body and "maskbench" in ast.dump(node)]
        assert nested == [], f"{name} imports inside a function at lines {nested}"
        outside = sorted(m for m in imports_of(path, name, set(found))
                         if not m.startswith("maskbench.masking") and m != "maskbench.runtime")
        assert outside == [], f"{name} imports {outside}"
