"""The Prefect flows against real sandboxes over loopback, a real DuckDB file and a Prefect
test server (one per file: the ``prefect_harness`` fixture of conftest.py)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

import pipelines.sync.load
import pipelines.sync.run
from flows import stages

FAST_PACE = 100_000  # requests a minute: the sandboxes here run with the limit off


def _read_keys(sandbox: Any) -> list[dict[str, Any]]:
    """One read-only key per workspace, in workspace order."""
    by_ws: dict[str, dict[str, Any]] = {}
    for entry in sandbox.keys():
        if entry["level"] == "read":
            by_ws.setdefault(entry["workspace_id"], entry)
    assert len(by_ws) >= 2, "the sandbox contract promises at least two workspaces"
    return list(by_ws.values())


def _save_secret(name: str, value: str) -> str:
    from prefect.blocks.system import Secret

    Secret(value=value).save(name, overwrite=True)
    return f"secret:{name}"


def _api_campaign_total(sandbox: Any, key: str) -> int:
    response = httpx.get(
        f"{sandbox.base_url}/campaigns", params={"per_page": 1}, headers={"Authorization": f"Bearer {key}"}
    )
    response.raise_for_status()
    return int(response.json()["meta"]["total"])


async def _gather_run(flow_run_id: Any) -> dict[str, Any]:
    """A flow run, its subflows, their logs, artifacts and task runs.

    Every filter, sort and limit is explicit: this server rejects the clients' None defaults.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, FlowRunFilter, LogFilter, TaskRunFilter
    from prefect.client.schemas.sorting import ArtifactSort, FlowRunSort, LogSort, TaskRunSort

    async with get_client() as client:
        runs = [await client.read_flow_run(flow_run_id)]
        runs += await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id={"any_": [flow_run_id]}),
            sort=FlowRunSort.START_TIME_ASC,
            limit=50,
            offset=0,
        )
        run_ids = [run.id for run in runs]
        logs = await client.read_logs(
            log_filter=LogFilter(flow_run_id={"any_": run_ids}), limit=200, offset=0, sort=LogSort.TIMESTAMP_ASC
        )
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id={"any_": run_ids}),
            flow_run_filter=FlowRunFilter(),
            task_run_filter=TaskRunFilter(),
            sort=ArtifactSort.CREATED_DESC,
            limit=50,
            offset=0,
        )
        task_runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id={"any_": run_ids}),
            sort=TaskRunSort.EXPECTED_START_TIME_DESC,
            limit=100,
            offset=0,
        )
    return {"runs": runs, "logs": logs, "artifacts": artifacts, "task_runs": task_runs}


def _run_flow(flow_fn: Any, **params: Any) -> tuple[Any, Any]:
    """Run a flow under a unique run name; return its in-memory result and its flow run id.

    The result is not read back from the final state: results are not persisted, and a state
    the engine re-reads from a slow test server carries no data.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter

    name = f"test-{uuid.uuid4().hex[:12]}"
    result = flow_fn.with_options(flow_run_name=name)(**params)
    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(name={"any_": [name]}), limit=1, offset=0)
    return result, run.id


def _gather(flow_run_id: Any) -> dict[str, Any]:
    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()
    time.sleep(1.0)  # the log worker sends asynchronously
    return asyncio.run(_gather_run(flow_run_id))


def test_sync_all_loads_two_workspaces_builds_models_once_and_never_overlaps_loads(
    prefect_harness: str, make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.sync_flow import sync_all

    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    first, second = _read_keys(sandbox)[:2]
    refs = [_save_secret("flows-test-ws-a", first["key"])]
    monkeypatch.setenv("OUTREACH_FLOWS_TEST_KEY_B", second["key"])
    refs.append("env:OUTREACH_FLOWS_TEST_KEY_B")
    monkeypatch.setenv("OUTREACH_FLOWS_TEST_KEY_B_AGAIN", second["key"])  # listed twice: synced once
    refs.append("env:OUTREACH_FLOWS_TEST_KEY_B_AGAIN")
    # the read-write key of the same workspace, in a subflow of its own: that workspace was synced twice
    second_rw = next(k for k in sandbox.keys() if k["level"] == "rw" and k["workspace_id"] == second["workspace_id"])
    monkeypatch.setenv("OUTREACH_FLOWS_TEST_KEY_B_RW", second_rw["key"])
    refs.append("env:OUTREACH_FLOWS_TEST_KEY_B_RW")

    # Record every load's interval; a short sleep inside widens any overlap a broken lock allows.
    intervals: list[tuple[float, float, str]] = []
    builds: list[float] = []
    real_load, real_build = pipelines.sync.load.load_batch, stages.build_models

    def recording_load(extracted: Any) -> Any:
        start = time.monotonic()
        time.sleep(0.3)
        result = real_load(extracted)
        intervals.append((start, time.monotonic(), ",".join(p.workspace_id for p in extracted.batch.plans)))
        return result

    def recording_build(path: str) -> Any:
        builds.append(time.monotonic())
        return real_build(path)

    monkeypatch.setattr(pipelines.sync.load, "load_batch", recording_load)
    monkeypatch.setattr(stages, "build_models", recording_build)

    warehouse = tmp_path / "w.duckdb"
    results, run_id = _run_flow(
        sync_all,
        mode="full",
        key_refs=refs,
        duckdb_path=str(warehouse),
        base_url=sandbox.base_url,
        rate_limit_per_minute=FAST_PACE,
        pipelines_dir=str(tmp_path / "dlt"),
    )
    assert [r.ok for r in results] == [True, True, True]
    assert sum(r.sync_report is None for r in results) == 1  # one of the second workspace's two keys synced it

    # Two loads, one per workspace (one subflow each), never overlapping; models built once, after both loads.
    intervals.sort()
    assert sorted(i[2] for i in intervals) == sorted([first["workspace_id"], second["workspace_id"]])
    assert intervals[0][1] <= intervals[1][0], f"loads overlapped: {intervals}"
    assert len(builds) == 1 and builds[0] >= intervals[1][1]

    # The warehouse holds both workspaces, as the API has them; reporting is built and published.
    with duckdb.connect(str(warehouse), read_only=True) as con:
        per_ws = dict(
            con.execute(
                "select workspace_id, count(*) from outreach.campaigns where _dlt_valid_to is null group by 1"
            ).fetchall()
        )
        assert per_ws == {
            first["workspace_id"]: _api_campaign_total(sandbox, first["key"]),
            second["workspace_id"]: _api_campaign_total(sandbox, second["key"]),
        }
        assert con.execute("select count(*) from reporting.workspace_overview").fetchone() == (2,)
        assert con.execute("select count(*) from reporting.campaign_performance").fetchone() == (sum(per_ws.values()),)
    bi = stages.bi_path_for(warehouse)
    with duckdb.connect(str(bi), read_only=True) as con:
        assert con.execute("select count(*) from reporting.campaign_performance").fetchone() == (sum(per_ws.values()),)

    # The artifact: rows per table, requests, 429s, bodies deferred, data tests, time per stage.
    gathered = _gather(run_id)
    # A POST that the slow SQLite test server committed but answered after the client's timeout is sent again
    # by Prefect's client (its own retries): the same artifact twice. What the flow controls is one publish
    # per run: one artifact of each content.
    published = {(a.key, str(a.data)) for a in gathered["artifacts"]}
    keyed = [data for key, data in published if key == "outreach-sync-full"]
    assert len(keyed) == 1, [a.key for a in gathered["artifacts"]]
    markdown = keyed[0]
    for needle in (
        "Time per stage",
        "extract+normalize",
        "| load |",
        "build models",
        "data tests",
        "publish BI",
        "429s",
        "deferred",
        "| campaign_recipients |",
        "Models and data tests",
        f"[report.html]({(tmp_path / 'report.html').resolve().as_uri()})",
    ):
        assert needle in markdown, f"{needle!r} missing from the artifact"

    # No key in any parameter, log line or artifact of the run or its subflows.
    texts = [repr(run.parameters) for run in gathered["runs"]]
    texts += [log.message for log in gathered["logs"]] + [str(a.data) for a in gathered["artifacts"]]
    assert len(gathered["runs"]) == 4 and len(published) == 3  # the subflow that synced nothing published nothing
    assert any("models built" in t for t in texts), "the models logger did not reach the run logs"
    said = "env:OUTREACH_FLOWS_TEST_KEY_B_AGAIN holds the same key as env:OUTREACH_FLOWS_TEST_KEY_B: its workspace is "
    assert any(said + "synced once" in t for t in texts), "the key listed twice was not named in the run's log"
    said = f"({second['workspace_id']}) is synced once in this run, with another of its keys"
    assert any(said in t for t in texts), [t for t in texts if "synced once" in t]
    for key in (first["key"], second["key"], second_rw["key"]):
        assert not [t for t in texts if key in t], "an API key leaked into the run's logs/artifacts/parameters"


def test_bad_key_fails_its_subflow_at_once_while_the_other_workspace_loads(
    prefect_harness: str, make_sandbox: Any, tmp_path: Path
) -> None:
    from flows.sync_flow import sync_all

    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    good = _read_keys(sandbox)[0]
    refs = [_save_secret("flows-test-good", good["key"]), _save_secret("flows-test-bad", "not-a-valid-key")]
    warehouse = tmp_path / "w.duckdb"
    state = sync_all(
        mode="full",
        key_refs=refs,
        duckdb_path=str(warehouse),
        base_url=sandbox.base_url,
        rate_limit_per_minute=FAST_PACE,
        pipelines_dir=str(tmp_path / "dlt"),
        return_state=True,
    )
    assert state.is_failed()
    assert "1 of 2 workspace(s) failed" in state.message and "secret:flows-test-bad" in state.message
    assert "401" in state.message, state.message

    gathered = _gather(state.state_details.flow_run_id)
    by_ref = {run.parameters["key_ref"]: run for run in gathered["runs"][1:]}
    bad, ok = by_ref["secret:flows-test-bad"], by_ref["secret:flows-test-good"]
    assert ok.state_type.value == "COMPLETED"
    assert bad.state_type.value == "FAILED" and "401" in (bad.state.message or "")
    # Retries would add 2 + 10 + 30 s; under load a first attempt still ends well inside 10 s.
    assert (bad.end_time - bad.start_time).total_seconds() < 10, "the bad key was not failed at once"
    assert "Prefect Secret block 'flows-test-bad'" in (bad.state.message or "")
    syncs = [t for t in gathered["task_runs"] if t.flow_run_id == bad.id and t.name.startswith("sync")]
    assert len(syncs) == 1 and syncs[0].run_count == 1, "a bad key must not be retried"
    assert syncs[0].state_type.value == "FAILED"

    # The good workspace's data stays, and the models were built from it.
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select distinct workspace_id from outreach.workspaces").fetchall() == [
            (good["workspace_id"],)
        ]
        assert con.execute("select count(*) from reporting.workspace_overview").fetchone() == (1,)


def test_sync_workspace_alone_runs_every_stage_retrying_a_network_error(
    prefect_harness: str, make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.sync_flow import sync_workspace

    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    key = _read_keys(sandbox)[1]
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", key["key"])
    # The first sync attempt meets a network error: the task retries it (a retry helps there).
    real_sync, calls = pipelines.sync.run.sync, []

    def flaky_sync(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("connection reset by peer (injected)")
        return real_sync(*args, **kwargs)

    monkeypatch.setattr(pipelines.sync.run, "sync", flaky_sync)
    warehouse = tmp_path / "w.duckdb"
    result, run_id = _run_flow(
        sync_workspace,
        mode="full",
        key_ref="config:0",
        duckdb_path=str(warehouse),
        base_url=sandbox.base_url,
        rate_limit_per_minute=FAST_PACE,
        pipelines_dir=str(tmp_path / "dlt"),
    )
    assert set(result.stages) == {
        "extract+normalize",
        "load",
        "build models",
        "data tests",
        "alerts",
        "publish BI",
        "dashboard",
    }
    gathered = _gather(run_id)
    names = {t.name.rsplit("-", 1)[0] for t in gathered["task_runs"]}
    assert {"sync", "build-models-and-data-tests", "publish-bi", "write-dashboard", "publish-report"} <= names
    syncs = [t for t in gathered["task_runs"] if t.name.rsplit("-", 1)[0] == "sync"]
    assert len(calls) == 2 and len(syncs) == 1 and syncs[0].run_count == 2
    with duckdb.connect(str(stages.bi_path_for(warehouse)), read_only=True) as con:
        assert con.execute("select workspace_id from reporting.workspace_overview").fetchall() == [
            (key["workspace_id"],)
        ]
    assert len(gathered["artifacts"]) == 1 and "| data test |" in str(gathered["artifacts"][0].data)
    # The dashboard, drawn after the good build from the BI file, linked from the artifact.
    dashboard = tmp_path / "report.html"
    assert dashboard.stat().st_size > 100_000
    assert f"## Dashboard\n\n[report.html]({dashboard.resolve().as_uri()})" in str(gathered["artifacts"][0].data)


def test_prefect_yaml_deployments_register_and_the_no_overlap_limits_hold(prefect_harness: str) -> None:
    """The deployments as the server stores them, the limits `outreach serve` creates, and the run slot."""
    from prefect.client.orchestration import get_client
    from prefect.concurrency.sync import concurrency

    from flows.deployments import build_deployments, ensure_concurrency_limits, load_prefect_yaml
    from flows.run_lock import SYNC_LIMIT, WRITER_TAG, exclusive_sync_run

    config = load_prefect_yaml(Path(__file__).resolve().parents[2] / "prefect.yaml")
    ids = {d.name: d.apply() for d in build_deployments(config)}
    ensure_concurrency_limits(config)
    try:
        with get_client(sync_client=True) as client:
            quick, full = client.read_deployment(ids["quick"]), client.read_deployment(ids["full"])
            assert [s.schedule.cron for s in quick.schedules] == ["*/15 * * * *"]
            assert [s.schedule.cron for s in full.schedules] == ["0 2 * * *"]
            assert quick.global_concurrency_limit.limit == 1 and full.global_concurrency_limit.limit == 1
            assert quick.concurrency_options.collision_strategy.value == "CANCEL_NEW"
            assert quick.parameters["mode"] == "quick" and full.parameters["mode"] == "full"
            assert client.read_global_concurrency_limit_by_name(SYNC_LIMIT).limit == 1
            assert client.read_concurrency_limit_by_tag(WRITER_TAG).concurrency_limit == 1
        with exclusive_sync_run() as held:
            assert held
            with pytest.raises(TimeoutError):  # a second run cannot get in while the first holds the slot
                with concurrency(SYNC_LIMIT, occupy=1, timeout_seconds=1, strict=True):
                    pass
    finally:
        with get_client(sync_client=True) as client:
            client.delete_global_concurrency_limit_by_name(SYNC_LIMIT)
            client.delete_concurrency_limit_by_tag(WRITER_TAG)
            for deployment_id in ids.values():
                client.delete_deployment(deployment_id)


def test_secret_block_references_resolve_and_a_missing_block_names_the_fix(prefect_harness: str) -> None:
    from flows.keys import resolve_api_key
    from pipelines.core.errors import ConfigError

    ref = _save_secret("flows-test-roundtrip", "rt-key-123")
    assert resolve_api_key(ref) == "rt-key-123" and resolve_api_key("flows-test-roundtrip") == "rt-key-123"
    with pytest.raises(ConfigError, match=r"Secret block 'flows-test-missing' not found: create it"):
        resolve_api_key("secret:flows-test-missing")


def test_lines_the_sync_logs_from_its_threads_reach_the_flow_run(prefect_harness: str) -> None:
    """The batches, the workspaces and the requests run on threads; their `pipelines` log lines belong to the
    flow run that started them (a thread without its context has no flow run: the line is dropped, with a
    warning in the worker's output)."""
    import logging
    import warnings

    from prefect import flow

    from flows.logs import route_library_logs_to_prefect
    from pipelines.core.fanout import fan_out, map_in_threads

    route_library_logs_to_prefect()
    log = logging.getLogger("pipelines.sync.batches")
    marker = uuid.uuid4().hex

    @flow(name="threads-log")
    def threads_log() -> int:
        mapped = map_in_threads(lambda n: log.info("%s mapped %d", marker, n), range(3), workers=2, name="t")

        def task(emit: Any) -> None:
            log.info("%s fanned", marker)
            emit(1)

        return len(mapped) + sum(fan_out([task, task], workers=2))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, run_id = _run_flow(threads_log)
    assert result == 5
    assert not [w for w in caught if "flow run id" in str(w.message)], [str(w.message) for w in caught]
    # from the marker on: a formatter an earlier test of this process set on the handler may prefix each line
    lines = [
        entry.message[entry.message.index(marker) :] for entry in _gather(run_id)["logs"] if marker in entry.message
    ]
    assert sorted(lines) == sorted([f"{marker} mapped {n}" for n in range(3)] + [f"{marker} fanned"] * 2)
