"""The house's layering (pipelines/README.md, docs/DESIGN.md): arrows between the sub-packages of `pipelines`
run one way, no module of the product imports itself back through another, no product module is over 400 lines,
and alerts sits between pipelines/models and flows."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("pipelines", "models", "flows", "alerts", "dashboard", "receiver", "sandbox")
HOUSE = (*PRODUCT, "bench", "devtools")  # no import circle in development code either

# What each sub-package of `pipelines` may import, besides itself: a floor (core), the service (api), what is
# read (source), the webhook spool (events), where it is written (warehouse), then what puts them together.
ALLOWED = {
    "core": set(),
    "api": {"core"},
    "source": {"core", "api"},
    "events": {"core"},
    "warehouse": {"core", "events"},
    "sync": {"core", "api", "source", "events", "warehouse"},
    "commands": {"core", "api", "source", "events", "warehouse"},
}


def _modules(packages: tuple[str, ...] = PRODUCT) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def _imported(path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Every product module `path` imports, at the top or inside a function, absolutely or relatively
    (`from .model import x` in sandbox/content.py is `sandbox.model`)."""
    package = list(path.relative_to(ROOT).parent.parts)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            for alias in node.names:
                full = f"{module}.{alias.name}"
                yield full if full in modules else module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


@functools.cache
def _graph(packages: tuple[str, ...] = PRODUCT) -> dict[str, set[str]]:
    modules = _modules(packages)
    return {
        name: {target for target in _imported(path, modules) if target in modules and target != name}
        for name, path in modules.items()
    }


def _subpackage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "pipelines" and len(parts) > 2 else None


def test_pipelines_subpackages_import_only_the_layers_below() -> None:
    assert set(ALLOWED) == {p.name for p in (ROOT / "pipelines").iterdir() if (p / "__init__.py").exists()}
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        if (here := _subpackage(name))
        for target in targets
        if (there := _subpackage(target)) and there != here and there not in ALLOWED[here]
    )
    assert wrong == []


def test_pipelines_subpackages_never_import_the_commands_above_them() -> None:
    """Only `python -m pipelines` and the package's lazy `outreach` sit above the sub-packages."""
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        if _subpackage(name)
        for target in targets
        if target.split(".")[0] in {"flows", "models", "alerts", "dashboard", "receiver", "sandbox"}
    )
    assert wrong == []


def test_no_import_circle_anywhere() -> None:
    graph = _graph(HOUSE)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                circles.append(sorted([node, *component]))

    for node in graph:
        if node not in index:
            visit(node)
    assert circles == []


def test_no_product_module_over_400_lines() -> None:
    long = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > 400}
    assert long == {}


def test_alerts_imports_neither_flows_nor_sandbox() -> None:
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        if name.startswith("alerts")
        for target in targets
        if target.split(".")[0] in {"flows", "sandbox"}
    )
    assert wrong == []


def test_nothing_below_flows_imports_alerts() -> None:
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        if name.split(".")[0] in {"pipelines", "models", "receiver", "dashboard", "sandbox"}
        for target in targets
        if target.startswith("alerts")
    )
    assert wrong == []
