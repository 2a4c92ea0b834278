"""The sync's guards inside Prefect flow runs. The demo-warehouse guard: every flow syncs through
`pipelines.sync.run.sync`, which refuses a key of another workspace before anything is loaded into a warehouse
the demo marked. The warehouse preflight: a file only its owner can mend fails the run at once, unretried."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.warehouse import demo_guard

FAST_PACE = 100_000  # requests a minute: the sandbox runs with the limit off


def _workspaces_loaded(warehouse: Path) -> set[str]:
    if not warehouse.exists():
        return set()
    return demo_guard.workspaces_in(warehouse)


def _run_params(sandbox: Any, warehouse: Path, tmp_path: Path) -> dict[str, Any]:
    return {
        "mode": "full",
        "duckdb_path": str(warehouse),
        "base_url": sandbox.base_url,
        "rate_limit_per_minute": FAST_PACE,
        "pipelines_dir": str(tmp_path / "dlt"),
    }


@pytest.mark.parametrize("flow_name", ["sync_all", "sync_batch"])
def test_a_flow_run_refuses_a_foreign_workspace_in_a_demo_warehouse_and_loads_a_listed_one(
    flow_name: str, prefect_harness: str, make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows import sync_flow

    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    key = next(k for k in sandbox.keys() if k["level"] == "read")
    monkeypatch.setenv("OUTREACH_GUARD_TEST_KEY", key["key"])
    refs = ["env:OUTREACH_GUARD_TEST_KEY"]
    warehouse = tmp_path / "demo.duckdb"
    demo_guard.write_marker(warehouse, ["ws_the_demo_made"])
    flow = getattr(sync_flow, flow_name)
    params = _run_params(sandbox, warehouse, tmp_path)
    if flow_name == "sync_all":
        params["build_models"] = False  # the guard is the subject here; test_flows.py covers the build

    state = flow(key_refs=refs, **params, return_state=True)

    assert state.is_failed()
    message = state.message or ""
    assert "is the demo's warehouse" in message and key["workspace_id"] in message, message
    assert key["key"] not in message
    assert _workspaces_loaded(warehouse) == set(), "the guard must refuse before anything is loaded"

    # The same run with the workspace listed loads it: the refusal above came from the guard, nothing else.
    demo_guard.write_marker(warehouse, [key["workspace_id"]])
    state = flow(key_refs=refs, **params, return_state=True)
    assert state.is_completed(), state.message
    assert _workspaces_loaded(warehouse) == {key["workspace_id"]}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select count(*) from outreach.campaigns").fetchone()[0] > 0  # type: ignore[index]


def test_a_warehouse_only_its_owner_can_mend_fails_the_flow_run_at_once(
    prefect_harness: str, make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry cannot turn a spreadsheet into a warehouse: before, the sync task tried it 4 times (2 + 10 + 30 s
    apart) before the run failed with the line that names the fix."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter

    from flows.sync_flow import sync_workspace

    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    key = next(k for k in sandbox.keys() if k["level"] == "read")
    monkeypatch.setenv("OUTREACH_GUARD_TEST_KEY", key["key"])
    warehouse = tmp_path / "sheet.duckdb"
    warehouse.write_bytes(b"a spreadsheet, not a database\n" * 100)
    params = {**_run_params(sandbox, warehouse, tmp_path), "build_models": False}

    started = time.monotonic()
    state = sync_workspace(key_ref="env:OUTREACH_GUARD_TEST_KEY", **params, return_state=True)

    assert state.is_failed()
    assert "is not a valid DuckDB database file" in (state.message or ""), state.message
    assert time.monotonic() - started < 10, "the run waited for retries"
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id={"any_": [state.state_details.flow_run_id]}), limit=50, offset=0
        )
    syncs = [run for run in runs if run.name.startswith("sync")]
    assert len(syncs) == 1 and syncs[0].run_count == 1, [(run.name, run.run_count) for run in runs]
    assert warehouse.read_bytes() == b"a spreadsheet, not a database\n" * 100
