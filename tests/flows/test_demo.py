"""`outreach demo` as a new user runs it (a subprocess, no Prefect server configured), and the
rule that keeps it apart from real data, both ways: a second sandbox (other workspace ids)
stands in for the real service."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from demo_support import prefect_servers, temp_homes, user_env
from doc_blocks import as_run_here, doc_block

from pipelines.warehouse import demo_guard

ROOT = Path(__file__).resolve().parents[2]
OUTREACH = str(Path(sys.executable).with_name("outreach"))


@dataclass
class DemoRun:
    cwd: Path
    done: subprocess.CompletedProcess[str]
    tmp: Path  # the demo's TMPDIR, where its temporary Prefect home goes

    @property
    def warehouse(self) -> Path:
        return self.cwd / "data" / "outreach.duckdb"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`outreach demo --scale tiny` once, in a fresh directory, with the default warehouse path."""
    cwd = tmp_path_factory.mktemp("demo")
    tmp = tmp_path_factory.mktemp("demo-tmp")
    done = subprocess.run(
        [OUTREACH, "demo", "--scale", "tiny"],
        cwd=cwd,
        env={**user_env(), "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return DemoRun(cwd, done, tmp)


def _workspaces(warehouse: Path) -> set[str]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(f"select distinct workspace_id from {warehouse.stem}.outreach.workspaces").fetchall()
    return {row[0] for row in rows}


def _foreign_sandbox(make_sandbox: Any) -> tuple[Any, dict[str, Any]]:
    """A sandbox standing in for the real service: another seed, so other workspace ids."""
    sandbox = make_sandbox(scale="tiny", rate_limit=0, seed=8)
    key = next(k for k in sandbox.keys() if k["level"] == "read")
    return sandbox, key


def _sync_env(sandbox: Any, key: dict[str, Any]) -> dict[str, str]:
    return {
        **user_env(),
        "SOURCES__OUTREACH__BASE_URL": sandbox.base_url,
        "SOURCES__OUTREACH__API_KEY": key["key"],
        "SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE": "100000",
    }


def test_demo_exits_0_prints_the_summary_and_leaves_no_process(demo_run: DemoRun) -> None:
    done = demo_run.done
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.lower()
    for needle in (
        "campaigns",
        "sends",
        "reply rate",
        "top variant",
        "mailbox",
        "full sync done",
        "quick sync done",
        "duckdb",
        "sources__outreach__api_key",
        "alerts:",  # the deliverability scenario's incident, notified to the demo's local JSON webhook
        "open mailbox_bounce_rate: mailbox",
    ):
        assert needle in out, f"{needle!r} missing from the demo output:\n{done.stdout[-3000:]}"
    # progress per step, each with its time
    steps = re.findall(r"^\[(\d+)/(\d+)\] .+ \.\.\.\n(?:  .*\n)*?  done in \d+\.\d s$", done.stdout, flags=re.M)
    assert len(steps) >= 4 and [int(n) for n, _ in steps] == list(range(1, len(steps) + 1)), done.stdout[-3000:]
    assert all(int(total) == len(steps) for _, total in steps), done.stdout[-3000:]
    # no step failed and was retried on its way (the second workspace's sync once met the first one's
    # half-created warehouse file)
    retried = [line for line in done.stderr.splitlines() if "failed with exception" in line]
    assert not retried, retried[:3]
    leaked = [line for line in (done.stdout + done.stderr).splitlines() if "leaked" in line]
    assert not leaked, f"nanobind leak lines after the demo: {leaked[:3]}"
    bi = demo_run.warehouse.with_name("outreach_bi.duckdb")
    with duckdb.connect(str(bi), read_only=True) as con:
        assert con.execute("select count(*) from reporting.campaign_performance").fetchone()[0] > 0
    assert not prefect_servers(demo_run.tmp), "the demo left its Prefect server running"
    assert not temp_homes(demo_run.tmp), "the demo left its temporary Prefect home behind"


def test_demo_marks_its_warehouse_with_the_sandbox_workspaces(demo_run: DemoRun) -> None:
    marker = demo_guard.read_marker(demo_run.warehouse)
    assert marker is not None and len(marker.workspace_ids) >= 2
    assert _workspaces(demo_run.warehouse) == set(marker.workspace_ids)


def test_the_readme_command_finds_the_demo_pipelines(demo_run: DemoRun) -> None:
    """README.md's `dlt pipeline --pipelines-dir data/.outreach_demo_dlt ...` block, run as written in the
    demo's directory: it lists one pipeline per sandbox workspace and `info` finds the first."""
    assert demo_run.done.returncode == 0, demo_run.done.stderr[-3000:]
    names = sorted(f"outreach_{wid.replace('-', '_')}" for wid in _workspaces(demo_run.warehouse))
    script = as_run_here(
        doc_block("README.md", "demo-pipelines"), Path(sys.executable).parent, {"outreach_<workspace_id>": names[0]}
    )
    env = {k: v for k, v in user_env().items() if not k.startswith("DLT_")}
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=demo_run.cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{script}\n{output[-3000:]}"
    listing, _, info = output.partition("Found pipeline")
    assert all(name in listing for name in names), output
    assert f" {names[0]} in data/.outreach_demo_dlt\n" in info, output  # the demo's directory, as given
    assert "dataset_name: outreach" in info, output


def test_a_sync_of_another_workspace_into_the_demo_warehouse_refuses_in_one_line(
    demo_run: DemoRun, make_sandbox: Any
) -> None:
    """What a new user did after the demo: `outreach sync --mode full` in the same directory."""
    before = _workspaces(demo_run.warehouse)
    mtime = demo_run.warehouse.stat().st_mtime_ns
    sandbox, key = _foreign_sandbox(make_sandbox)
    done = subprocess.run(
        [OUTREACH, "sync", "--mode", "full", "--no-progress"],
        cwd=demo_run.cwd,
        env=_sync_env(sandbox, key),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "demo's warehouse" in lines[0] and key["workspace_id"] in lines[0] and "--duckdb" in lines[0]
    assert key["key"] not in done.stderr + done.stdout
    assert _workspaces(demo_run.warehouse) == before and demo_run.warehouse.stat().st_mtime_ns == mtime


def test_the_printed_next_steps_sync_a_real_workspace_apart_and_the_demo_then_refuses_to_reset_it(
    demo_run: DemoRun, make_sandbox: Any
) -> None:
    """The demo's own suggestion, run as printed, and then `outreach demo` pointed at that warehouse."""
    sandbox, key = _foreign_sandbox(make_sandbox)
    line = next(line.strip() for line in demo_run.done.stdout.splitlines() if " sync --mode full --duckdb " in line)
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=demo_run.cwd,
        env=_sync_env(sandbox, key),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    mine = demo_run.cwd / shlex.split(line)[shlex.split(line).index("--duckdb") + 1]
    assert _workspaces(mine) == {key["workspace_id"]}
    assert _workspaces(demo_run.warehouse) == set(demo_guard.read_marker(demo_run.warehouse).workspace_ids)  # type: ignore[union-attr]

    # A warehouse that a demo marked but that holds a real workspace (the old trap): the demo leaves it alone.
    demo_guard.write_marker(mine, demo_guard.read_marker(demo_run.warehouse).workspace_ids)  # type: ignore[union-attr]
    size = mine.stat().st_size
    refused = subprocess.run(
        [OUTREACH, "demo", "--scale", "tiny", "--duckdb", str(mine)],
        cwd=demo_run.cwd,
        env=user_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "did not create" in lines[0] and key["workspace_id"] in lines[0], refused.stderr
    assert _workspaces(mine) == {key["workspace_id"]} and mine.stat().st_size == size


def test_a_warehouse_without_the_demo_marker_is_never_touched(demo_run: DemoRun, tmp_path: Path) -> None:
    warehouse = tmp_path / "data" / "outreach.duckdb"
    warehouse.parent.mkdir()
    shutil.copy(demo_run.warehouse, warehouse)
    refused = subprocess.run(
        [OUTREACH, "demo", "--scale", "tiny"],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().count("\n") == 0 and "was not made by the demo" in refused.stderr
    assert warehouse.exists() and not demo_guard.marker_path(warehouse).exists()


def test_the_demo_replaces_its_own_warehouse(demo_run: DemoRun, tmp_path: Path) -> None:
    """Only its own: every workspace in it is listed in the marker (function level; the full rerun is the fixture's)."""
    from flows.demo_warehouse import demo_pipelines_dir, prepare_warehouse

    warehouse = tmp_path / "outreach.duckdb"
    shutil.copy(demo_run.warehouse, warehouse)
    shutil.copy(demo_guard.marker_path(demo_run.warehouse), demo_guard.marker_path(warehouse))
    shutil.copy(demo_run.warehouse.with_name("outreach_bi.duckdb"), tmp_path / "outreach_bi.duckdb")
    demo_pipelines_dir(warehouse).mkdir()
    prepare_warehouse(warehouse)
    assert not warehouse.exists() and not (tmp_path / "outreach_bi.duckdb").exists()
    assert not demo_guard.marker_path(warehouse).exists() and not demo_pipelines_dir(warehouse).exists()


def test_a_demo_marker_without_a_list_protects_every_workspace(demo_run: DemoRun, tmp_path: Path) -> None:
    """Markers written before they listed workspaces: nothing in such a warehouse counts as the demo's."""
    from flows.demo_warehouse import prepare_warehouse
    from pipelines.core.errors import ConfigError

    warehouse = tmp_path / "outreach.duckdb"
    shutil.copy(demo_run.warehouse, warehouse)
    demo_guard.marker_path(warehouse).write_text("made by `outreach demo`; the next demo run replaces this warehouse\n")
    with pytest.raises(ConfigError, match="did not create"):
        prepare_warehouse(warehouse)
    assert warehouse.exists()
