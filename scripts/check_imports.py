"""Check that imports inside the kafkabatch package point down: no circles, no reaching back to the top.

Reads every module under ``python/kafkabatch`` (module-level and function-level
imports alike) and fails when:

- the modules' import graph has a cycle (a package counts as its ``__init__``,
  and importing ``a.b.c`` also runs ``a`` and ``a.b``: those edges count too,
  except a module's own enclosing packages, which Python has already started);
- a module other than the CLI and the demo (the top layer, which uses the
  public API as a user would) imports the top-level ``kafkabatch`` package.

Run by ``make lint``::

    python scripts/check_imports.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "python"
PACKAGE = "kafkabatch"
# The top layer: consumers of the public API, like a user's script.
TOP = ("kafkabatch.cli", "kafkabatch.demo", "kafkabatch.__main__")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, name: str, modules: set[str]) -> set[str]:
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                # importing a.b.c runs a, a.b and a.b.c
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    candidate = ".".join(parts[:i])
                    if candidate in modules and not (name + ".").startswith(candidate + "."):
                        found.add(candidate)
    found.discard(name)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def main() -> int:
    paths = sorted((ROOT / PACKAGE).rglob("*.py"))
    names = {module_name(p): p for p in paths}
    modules = set(names)
    graph = {name: imports(path, name, modules) for name, path in names.items()}
    problems = []
    for name, targets in sorted(graph.items()):
        if PACKAGE in targets and not name.startswith(TOP):
            problems.append(f"{name} imports the top-level package {PACKAGE!r}: import the module that owns the name")
    # The top-level __init__ is imported by whatever imports a submodule; drop it
    # from the cycle search (its own imports are all downward by the rule above).
    graph_wo_root = {n: {t for t in ts if t != PACKAGE} for n, ts in graph.items()}
    cycle = find_cycle(graph_wo_root)
    if cycle:
        problems.append("import circle: " + " -> ".join(cycle))
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"imports point down: {len(modules)} modules, no circles")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
