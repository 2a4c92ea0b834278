"""The work-pool path of flows/README.md, run as written: a real Prefect server (the session's
test server), a `process` work pool, `prefect deploy --all` from prefect.yaml, and two workers, each
started in its own checkout at another path than the deploy (two machines as far as the code can
tell), sharing one PostgreSQL warehouse: `sync-all/full` syncs a first batch of the sandbox's
workspaces and hands the others out as runs of `sync-batch/batch`, both workers sync workspaces, every
workspace is synced once, and the warehouse equals the API.

The commands come from the README's blocks marked ``<!-- tested: ... -->`` (``<server>`` replaced
by the test server, ``.venv/bin/`` by this interpreter's bin directory). Each worker's checkout is
a copy of the project's code in a temp directory, put first on ``PYTHONPATH`` as that checkout's
own editable install would be, with its own ``.dlt/`` naming the sandbox and the PostgreSQL server.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from doc_blocks import doc_block
from test_sync_support import (
    admin_keys,
    api_truth,
    assert_no_duplicates,
    assert_warehouse_equals_api,
    query,
)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PRODUCT_DIRS = ("flows", "pipelines", "models", "receiver", "sandbox", "dashboard")


def readme_block(tag: str) -> str:
    """The shell block that follows ``<!-- tested: tag -->`` in flows/README.md."""
    return doc_block("flows/README.md", tag)


def run_block(tag: str, api_url: str, cwd: Path, env: dict[str, str], *, extra: str = "", timeout: float = 180) -> str:
    """Run a README block with bash (``set -e``), as a user would paste it; return its output."""
    script = readme_block(tag).replace("http://<server>:4200/api", api_url).replace(".venv/bin/", f"{BIN}/")
    if extra:
        script = script.rstrip("\n") + f" {extra}\n"
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"README block {tag!r} failed ({done.returncode}):\n{script}\n{output[-4000:]}"
    return output


def cli(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [str(BIN / "prefect"), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, f"prefect {' '.join(args)} failed:\n{(done.stdout + done.stderr)[-3000:]}"
    return done.stdout


@pytest.fixture
def cli_env(prefect_harness: str, tmp_path: Path) -> dict[str, str]:
    """A user's shell: no Prefect settings but a home of its own (PREFECT_API_URL comes from the README's export)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SOURCES__", "DESTINATION__"))}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    return env


@pytest.fixture
def clean_server(prefect_harness: str) -> Iterator[None]:
    """Remove what the README steps create, so other tests on the session's server see none of it."""
    yield
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        for name in ("sync-all/quick", "sync-all/full", "sync-batch/batch"):
            try:
                client.delete_deployment(client.read_deployment_by_name(name).id)
            except ObjectNotFound:
                pass
        for cleanup in (
            lambda: client.delete_global_concurrency_limit_by_name("outreach-sync"),
            lambda: client.delete_concurrency_limit_by_tag("outreach-warehouse-writer"),
            lambda: client.delete_work_pool("outreach-pool"),
        ):
            try:
                cleanup()
            except ObjectNotFound:
                pass


N_WORKSPACES = 6
RUN_TIMEOUT_S = 400.0


PG_PLACEHOLDER = "postgresql://<user>:<password>@<db host>:5432/<database>"


def _worker_checkout(where: Path, sandbox: Any, keys: list[str]) -> Path:
    """A checkout at another path, with its own .dlt/ settings as for `outreach sync`: the sandbox's URL and keys."""
    checkout = where / "outreach-elt"
    for name in PRODUCT_DIRS:
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "prefect.yaml", checkout / "prefect.yaml")
    (checkout / ".dlt").mkdir()
    (checkout / ".dlt" / "config.toml").write_text(
        f'[runtime]\nlog_level = "WARNING"\n\n[sources.outreach]\nbase_url = "{sandbox.base_url}"\n'
        "rate_limit_per_minute = 100000\nreply_body_cap = 100000\n"
    )
    quoted = ", ".join(f'"{k}"' for k in keys)
    (checkout / ".dlt" / "secrets.toml").write_text(f"[sources.outreach]\napi_keys = [{quoted}]\n")
    return checkout


def _start_worker(
    api_url: str, pg_credentials: str, checkout: Path, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """The README's worker block, left running (in its own session, so it and its flow runs stop together)."""
    script = readme_block("worker").replace("http://<server>:4200/api", api_url).replace(".venv/bin/", f"{BIN}/")
    assert PG_PLACEHOLDER in script, f"the worker block names no {PG_PLACEHOLDER}"
    script = script.replace(PG_PLACEHOLDER, pg_credentials)
    with log.open("wb") as out:
        return subprocess.Popen(
            ["bash", "-e", "-c", script],
            cwd=checkout,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _wait_final(client: Any, flow_run_id: Any, timeout_s: float, logs: list[Path]) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = client.read_flow_run(flow_run_id)
        if run.state is not None and run.state.is_final():
            return run
        time.sleep(2)
    tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in logs)
    raise AssertionError(f"flow run {flow_run_id} did not finish in {timeout_s:.0f} s:\n{tails}")


def _ran_in(flow_run_id: Any, checkouts: list[Path]) -> str:
    """The checkout a batch run executed in, from its own log line "batch run in <directory> on <host>"."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    places = {str(c) for c in checkouts if any(f"batch run in {c} on " in log.message for log in logs)}
    assert len(places) == 1, f"flow run {flow_run_id} names no single checkout: {[log.message for log in logs][:20]}"
    return places.pop()


# Deploy, two workers and a run of 6 workspaces: its own wait (RUN_TIMEOUT_S) must fire before pytest's, with the
# workers' logs.
@pytest.mark.timeout(720)
def test_readme_work_pool_steps_two_workers_elsewhere_share_the_workspaces_of_one_run_into_postgres(
    prefect_harness: str,
    cli_env: dict[str, str],
    clean_server: None,
    make_sandbox: Any,
    pg_dsn: str,
    pg_credentials: str,
    tmp_path: Path,
) -> None:
    from prefect.client.orchestration import get_client

    # Once, from the checkout: pool, limits, `prefect deploy --all` (every deployment, not only the first).
    deploy_output = run_block("deploy", prefect_harness, ROOT, cli_env)
    assert all(name in deploy_output for name in ("sync-all/quick", "sync-all/full", "sync-batch/batch"))
    with get_client(sync_client=True) as client:
        quick = client.read_deployment_by_name("sync-all/quick")
        full = client.read_deployment_by_name("sync-all/full")
        batch = client.read_deployment_by_name("sync-batch/batch")
        assert [s.schedule.cron for s in quick.schedules] == ["*/15 * * * *"]
        assert [s.schedule.cron for s in full.schedules] == ["0 2 * * *"]
        assert batch.schedules == []
        assert quick.parameters["mode"] == "quick" and full.parameters["mode"] == "full"
        assert full.parameters["batch_deployment"] == "sync-batch/batch"
        assert quick.concurrency_options.collision_strategy.value == "CANCEL_NEW"
        for deployment in (quick, full, batch):
            assert deployment.work_pool_name == "outreach-pool"
            # The deploying machine's directory is recorded nowhere: the worker resolves its own.
            assert deployment.pull_steps == [{"flows.pull_steps.enter_outreach_home": {}}]
            assert str(ROOT) not in repr(deployment.pull_steps)
        assert batch.entrypoint == "flows.sync_flow.sync_batch"
        assert client.read_global_concurrency_limit_by_name("outreach-sync").limit == 1
        assert client.read_concurrency_limit_by_tag("outreach-warehouse-writer").concurrency_limit == 1

    # The commands that failed with a 422 under fastapi 0.151+.
    listing_env = {**cli_env, "PREFECT_API_URL": prefect_harness, "COLUMNS": "200"}
    assert "quick" in cli(["deployment", "ls"], listing_env, tmp_path)
    cli(["flow-run", "ls"], listing_env, tmp_path)
    assert "outreach-pool" in cli(["work-pool", "ls"], listing_env, tmp_path)

    # Only the run started below: no scheduled quick run (every 15 min) in between.
    with get_client(sync_client=True) as client:
        for deployment in (quick, full):
            for schedule in deployment.schedules:
                client.delete_deployment_schedule(deployment.id, schedule.id)
            assert client.read_deployment_schedules(deployment.id) == []

    # Two workers, each in its own checkout at another path, one PostgreSQL warehouse.
    sandbox = make_sandbox(scale="tiny", rate_limit=0, workspaces=N_WORKSPACES)
    keys = admin_keys(sandbox)
    assert len(keys) == N_WORKSPACES
    checkouts = [_worker_checkout(tmp_path / f"machine-{m}", sandbox, keys) for m in "ab"]
    root_warehouse = ROOT / "data" / "outreach.duckdb"
    root_warehouse_before = root_warehouse.stat().st_mtime if root_warehouse.exists() else None
    worker_env = {**cli_env, "PREFECT_WORKER_QUERY_SECONDS": "2"}
    logs = [tmp_path / f"worker-{m}.log" for m in "ab"]
    workers = [
        _start_worker(prefect_harness, pg_credentials, checkout, {**worker_env, "PYTHONPATH": str(checkout)}, log)
        for checkout, log in zip(checkouts, logs, strict=True)
    ]
    try:
        run_block("run", prefect_harness, tmp_path, cli_env)
        with get_client(sync_client=True) as client:
            (parent,) = [r for r in client.read_flow_runs(limit=50) if r.deployment_id == full.id]
            parent = _wait_final(client, parent.id, RUN_TIMEOUT_S, logs)
            assert parent.state_type.value == "COMPLETED", (parent.state_name, parent.state.message)
            runs = client.read_flow_runs(limit=200)
            children = [r for r in runs if r.deployment_id == batch.id]
            # the first batch, which the parent syncs itself: the same flow, as its subflow
            (own,) = [r for r in runs if r.deployment_id is None and r.flow_id == children[0].flow_id]
    finally:
        for worker in workers:
            _stop(worker)
    outputs = [log.read_text(errors="replace") for log in logs]

    # The workspaces were synced in batches, each workspace in exactly one: the parent's own and the batch runs
    # handed out to the pool, all completed.
    batch_runs = [own, *children]
    assert len(children) >= 2 and all(r.state_type.value == "COMPLETED" for r in batch_runs)
    handed = sorted(ref for r in batch_runs for ref in r.parameters["key_refs"])
    assert handed == sorted(f"config:{i}" for i in range(N_WORKSPACES))
    # Both workers synced workspaces: each batch logs the directory it ran in, its worker's checkout.
    ran_in = {str(r.id): _ran_in(r.id, checkouts) for r in batch_runs}
    assert set(ran_in.values()) == {str(c) for c in checkouts}, ran_in
    assert all("enter_outreach_home" in out for out in outputs)
    leaked = [line for out in outputs for line in out.splitlines() if "leaked" in line]
    assert not leaked, f"a flow run process printed nanobind leak lines: {leaked[:3]}"

    # Every workspace synced once (one run record each), the warehouse equals the API, models built once.
    records = query(pg_dsn, "select workspace_id, count(*), min(outcome), min(mode) from outreach.sync_runs group by 1")
    truths = [api_truth(sandbox.base_url, k) for k in keys]
    assert sorted(records) == sorted((t["workspace_id"], 1, "ok", "full") for t in truths)
    for truth in truths:
        assert_warehouse_equals_api(pg_dsn, truth)
    assert_no_duplicates(pg_dsn)
    assert query(pg_dsn, "select count(*) from reporting.workspace_overview") == [(N_WORKSPACES,)]
    # Nothing was written in the deploying checkout or beside the workers' checkouts.
    after = root_warehouse.stat().st_mtime if root_warehouse.exists() else None
    assert after == root_warehouse_before, "the run wrote the deploying checkout's warehouse"
    assert not any((c / "data" / "outreach.duckdb").exists() for c in checkouts)
