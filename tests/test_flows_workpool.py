"""The work-pool path of flows/README.md, run as written: a real Prefect server (the session's
test server), a `process` work pool, `prefect deploy --all` from prefect.yaml, and a worker
started in another directory than the deploy, running a deployment against a sandbox into DuckDB.

The commands come from the README's blocks marked ``<!-- tested: ... -->`` (``<server>`` replaced
by the test server, ``.venv/bin/`` by this interpreter's bin directory; ``--run-once`` added to
the worker). The worker's "checkout at another path" is a copy of the project's code in a temp
directory, put first on ``PYTHONPATH`` as that checkout's own editable install would be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from doc_blocks import doc_block

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PRODUCT_DIRS = ("flows", "pipelines", "models", "receiver", "sandbox")


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
    done = subprocess.run([str(BIN / "prefect"), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=120)
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
        for name in ("sync-all/quick", "sync-all/full"):
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


def _worker_checkout(tmp_path: Path, sandbox: Any) -> tuple[Path, list[dict[str, Any]]]:
    """A second checkout at another path, with its own .dlt/ settings: the sandbox's URL and read keys."""
    checkout = tmp_path / "elsewhere" / "outreach-elt"
    for name in PRODUCT_DIRS:
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "prefect.yaml", checkout / "prefect.yaml")
    keys: dict[str, dict[str, Any]] = {}
    for entry in sandbox.keys():
        if entry["level"] == "read":
            keys.setdefault(entry["workspace_id"], entry)
    (checkout / ".dlt").mkdir()
    (checkout / ".dlt" / "config.toml").write_text(
        f'[runtime]\nlog_level = "WARNING"\n\n[sources.outreach]\nbase_url = "{sandbox.base_url}"\n'
        "rate_limit_per_minute = 100000\n"
    )
    quoted = ", ".join(f'"{k["key"]}"' for k in keys.values())
    (checkout / ".dlt" / "secrets.toml").write_text(f"[sources.outreach]\napi_keys = [{quoted}]\n")
    return checkout, list(keys.values())


def _api_campaign_total(sandbox: Any, key: str) -> int:
    response = httpx.get(
        f"{sandbox.base_url}/campaigns", params={"per_page": 1}, headers={"Authorization": f"Bearer {key}"}
    )
    response.raise_for_status()
    return int(response.json()["meta"]["total"])


def test_readme_work_pool_steps_deploy_both_deployments_and_a_worker_elsewhere_runs_one(
    prefect_harness: str, cli_env: dict[str, str], clean_server: None, make_sandbox: Any, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client

    # Once, from the checkout: pool, limits, `prefect deploy --all` (both deployments, not only the first).
    deploy_output = run_block("deploy", prefect_harness, ROOT, cli_env)
    assert "sync-all/quick" in deploy_output and "sync-all/full" in deploy_output
    with get_client(sync_client=True) as client:
        quick = client.read_deployment_by_name("sync-all/quick")
        full = client.read_deployment_by_name("sync-all/full")
        assert [s.schedule.cron for s in quick.schedules] == ["*/15 * * * *"]
        assert [s.schedule.cron for s in full.schedules] == ["0 2 * * *"]
        assert quick.parameters["mode"] == "quick" and full.parameters["mode"] == "full"
        assert quick.concurrency_options.collision_strategy.value == "CANCEL_NEW"
        for deployment in (quick, full):
            assert deployment.work_pool_name == "outreach-pool"
            assert deployment.entrypoint == "flows.sync_flow.sync_all"
            # The deploying machine's directory is recorded nowhere: the worker resolves its own.
            assert deployment.pull_steps == [{"flows.pull_steps.enter_outreach_home": {}}]
            assert str(ROOT) not in repr(deployment.pull_steps)
        assert client.read_global_concurrency_limit_by_name("outreach-sync").limit == 1
        assert client.read_concurrency_limit_by_tag("outreach-warehouse-writer").concurrency_limit == 1

    # The commands that failed with a 422 under fastapi 0.151+.
    listing_env = {**cli_env, "PREFECT_API_URL": prefect_harness, "COLUMNS": "200"}
    assert "quick" in cli(["deployment", "ls"], listing_env, tmp_path)
    cli(["flow-run", "ls"], listing_env, tmp_path)
    assert "outreach-pool" in cli(["work-pool", "ls"], listing_env, tmp_path)

    # A worker in another checkout at another path runs a deployment into its own data/ directory.
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    checkout, keys = _worker_checkout(tmp_path, sandbox)
    root_warehouse = ROOT / "data" / "outreach.duckdb"
    root_warehouse_before = root_warehouse.stat().st_mtime if root_warehouse.exists() else None
    run_block("run", prefect_harness, tmp_path, cli_env)
    worker_env = {**cli_env, "PYTHONPATH": str(checkout)}
    worker_output = run_block("worker", prefect_harness, checkout, worker_env, extra="--run-once", timeout=300)

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(limit=20, offset=0)
        mine = [r for r in runs if r.deployment_id == full.id]
        assert len(mine) == 1 and mine[0].state_type.value == "COMPLETED", [(r.name, r.state_name) for r in mine]
    assert "enter_outreach_home" in worker_output
    leaked = [line for line in worker_output.splitlines() if "leaked" in line]
    assert not leaked, f"the flow run process printed nanobind leak lines: {leaked[:3]}"

    warehouse = checkout / "data" / "outreach.duckdb"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        per_ws = dict(
            con.execute(
                "select workspace_id, count(*) from outreach.outreach.campaigns where _dlt_valid_to is null group by 1"
            ).fetchall()
        )
        assert con.execute("select count(*) from outreach.reporting.workspace_overview").fetchone() == (len(keys),)
    assert per_ws == {k["workspace_id"]: _api_campaign_total(sandbox, k["key"]) for k in keys}
    assert (checkout / "data" / "outreach_bi.duckdb").exists()
    after = root_warehouse.stat().st_mtime if root_warehouse.exists() else None
    assert after == root_warehouse_before, "the run wrote the deploying checkout's warehouse"
