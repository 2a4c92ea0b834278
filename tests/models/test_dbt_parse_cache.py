"""The suite's cache of dbt's partial-parse manifest (devtools/dbt_parse_cache.py): keyed by every input dbt
checks, and a new warehouse's first dbt command takes the cached manifest instead of parsing the project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from devtools.dbt_parse_cache import CACHE, cache_key, install
from models import PROJECT_DIR
from models.build import ATOMIC_VARS
from models.dbt_invoke import invoke
from models.settings import dbt_state_dir
from pipelines.warehouse.destination import Warehouse


def _args(project: Path, dbt_vars: str = "") -> list[str]:
    return ["parse", "--project-dir", str(project), "--target-path", "t"] + (["--vars", dbt_vars] if dbt_vars else [])


def test_the_key_changes_with_every_input_dbt_checks(tmp_path: Path) -> None:
    project = tmp_path / "models"
    shutil.copytree(PROJECT_DIR, project, ignore=shutil.ignore_patterns("__pycache__"))
    key = cache_key(_args(project))
    assert key is not None and key == cache_key(_args(project))
    assert cache_key(_args(project, '{"atomic_build": true}')) != key
    assert cache_key(_args(PROJECT_DIR)) != key  # another project path
    model = next(project.glob("marts/*.sql"))
    model.write_text(model.read_text() + "\n-- changed\n")
    assert cache_key(_args(project)) != key
    assert cache_key(["parse"]) is None  # no project: nothing to key by


def _parse(warehouse: Path) -> tuple[set[str], str]:
    target = Warehouse(destination="duckdb", duckdb_path=warehouse)
    outcome = invoke(["parse"], target, dbt_vars=ATOMIC_VARS, write_json=True)
    assert outcome.success, outcome.exception
    nodes = json.loads((dbt_state_dir(target) / "target" / "manifest.json").read_text())["nodes"]
    return set(nodes), (dbt_state_dir(target) / "logs" / "dbt.log").read_text()


def test_a_new_warehouse_takes_the_cached_parse(tmp_path: Path) -> None:
    install()
    first_nodes, _ = _parse(tmp_path / "a" / "outreach.duckdb")
    assert len(list(CACHE.glob("*.msgpack"))) >= 1
    nodes, log = _parse(tmp_path / "b" / "outreach.duckdb")
    assert "Unable to do partial parsing" not in log and "Starting full parse" not in log, log[-2000:]
    assert nodes == first_nodes and any(n.startswith("model.") for n in nodes)


def test_processes_the_tests_start_use_the_cache_too() -> None:
    """conftest.py puts tests/_site first on PYTHONPATH: a child Python wraps dbt's runner once it imports it,
    and only then (a process that never runs dbt imports nothing of dbt's)."""
    import os
    import subprocess
    import sys

    assert os.environ["PYTHONPATH"].split(os.pathsep)[0].endswith("_site")
    code = (
        "import sys; assert 'dbt' not in sys.modules; import dbt.cli.main as m; "
        "print(getattr(m.dbtRunner, 'parse_cached', False))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "True", out.stderr
