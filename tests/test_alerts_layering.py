"""Layering (docs/DESIGN.md): alerts may import pipelines and models; flows imports alerts; pipelines, models,
receiver, dashboard and sandbox never import alerts, and alerts never imports flows or sandbox. Ruff's banned-api
covers the first half; alerts imports itself, so its own half is checked here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(package: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        out[str(path.relative_to(ROOT))] = names
    return out


def test_alerts_imports_neither_flows_nor_sandbox() -> None:
    found = {
        path: names & {"flows", "sandbox", "bench", "devtools", "tests"} for path, names in _imports("alerts").items()
    }
    assert {path: names for path, names in found.items() if names} == {}


def test_nothing_below_flows_imports_alerts() -> None:
    for package in ("pipelines", "models", "receiver", "dashboard", "sandbox"):
        offenders = [path for path, names in _imports(package).items() if "alerts" in names]
        assert offenders == [], package
