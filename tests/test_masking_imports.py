"""The masking engine's imports, read from the source: no circle among its modules, no import inside a function
(a hidden circle), and no arrow up into the tracks or steps that build on it."""

import ast
from pathlib import Path

import maskbench.masking

ENGINE = Path(maskbench.masking.__file__).parent


def imports_of(path: Path) -> tuple[set[str], list[str]]:
    """(maskbench modules imported at the top level, those imported inside a function or class)."""
    tree = ast.parse(path.read_text())
    top, nested = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("maskbench"):
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("maskbench")]
        else:
            continue
        (top.update(names) if node in tree.body else nested.extend(names))
    return top, nested


def test_the_engine_imports_in_no_circle_and_never_up():
    graph = {}
    for path in sorted(ENGINE.glob("*.py")):
        top, nested = imports_of(path)
        assert not nested, f"{path.name} imports {nested} inside a function"
        up = sorted(m for m in top if not m.startswith("maskbench.masking") and m != "maskbench.runtime")
        assert not up, f"{path.name} imports {up}: the engine imports no track, step or report"
        graph[f"maskbench.masking.{path.stem}"] = {m for m in top if m.startswith("maskbench.masking")}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import circle: {' -> '.join(path + (module,))}"
        if module in done:
            return
        for target in graph.get(module, ()):
            visit(target, path + (module,))
        done.add(module)

    for module in graph:
        visit(module, ())
    assert "maskbench.masking.ranking" in graph["maskbench.masking.deciders"]
