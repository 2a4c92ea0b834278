"""Unit tests of the flows' building blocks that need no Prefect server: prefect.yaml, key
references, the warehouse writer lock, the retry rule, the artifact markdown, log routing."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from datetime import UTC
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from flows.deployments import build_deployments, deployment_specs, load_entrypoint, load_prefect_yaml
from flows.keys import configured_key_refs, one_ref_per_key, parse_key_ref, resolve_api_key
from flows.run_lock import SYNC_LIMIT, WRITER_TAG
from flows.run_report import StageClock, WorkspaceResult, render_run_markdown
from pipelines.core.errors import (
    ApiUnavailableError,
    AuthError,
    ConfigError,
    ForbiddenError,
    WarehouseError,
    WarehousePathError,
)
from pipelines.warehouse.lock import lock_path_for, warehouse_writer

ROOT = Path(__file__).resolve().parents[2]


# --- prefect.yaml -------------------------------------------------------------------------


def test_prefect_yaml_deploys_module_entrypoints_with_the_worker_side_pull_step() -> None:
    """What `prefect deploy` reads (tests/flows/test_flows_workpool.py runs it against a real server)."""
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert config["pull"] == [{"flows.pull_steps.enter_outreach_home": {}}]
    assert sorted(d["name"] for d in config["deployments"]) == ["batch", "full", "quick", "speed-to-lead"]
    entrypoints = {d["name"]: d["entrypoint"] for d in config["deployments"]}
    assert entrypoints == {
        "quick": "flows.sync_flow.sync_all",
        "full": "flows.sync_flow.sync_all",
        "batch": "flows.sync_flow.sync_batch",
        "speed-to-lead": "flows.alerts_flow.speed_to_lead",
    }
    for deployment in config["deployments"]:
        assert deployment["work_pool"]["name"] == "outreach-pool"
        assert "pull" not in deployment  # one pull step for every deployment, resolved on the worker
    assert load_entrypoint("flows.sync_flow.sync_all") is load_entrypoint("flows/sync_flow.py:sync_all")


def test_deployments_have_the_stated_schedules_and_limits() -> None:
    specs = {s.name: s for s in deployment_specs(load_prefect_yaml(ROOT / "prefect.yaml"))}
    assert specs["quick"].parameters["mode"] == "quick"
    assert specs["full"].parameters["mode"] == "full"
    assert specs["quick"].schedules == [{"cron": "*/15 * * * *", "timezone": "UTC"}]
    assert specs["full"].schedules == [{"cron": "0 2 * * *", "timezone": "UTC"}]
    assert specs["quick"].concurrency_limit == {"limit": 1, "collision_strategy": "CANCEL_NEW"}
    assert specs["full"].concurrency_limit == {"limit": 1, "collision_strategy": "ENQUEUE"}
    # sync_all hands batches of workspaces to the batch deployment: no schedule, no limit of its own
    batch_deployments = {specs[name].parameters["batch_deployment"] for name in ("quick", "full")}
    assert batch_deployments == {"sync-batch/batch"}
    assert specs["batch"].schedules == [] and specs["batch"].concurrency_limit is None
    assert specs["speed-to-lead"].schedules == [{"cron": "*/5 * * * *", "timezone": "UTC"}]

    built = {d.name: d for d in build_deployments(load_prefect_yaml(ROOT / "prefect.yaml"))}
    quick, full = built["quick"], built["full"]
    assert [s.schedule.cron for s in quick.schedules] == ["*/15 * * * *"]
    assert [s.schedule.cron for s in full.schedules] == ["0 2 * * *"]
    assert quick.concurrency_limit == 1 and full.concurrency_limit == 1
    assert quick.concurrency_options.collision_strategy.value == "CANCEL_NEW"
    assert full.concurrency_options.collision_strategy.value == "ENQUEUE"
    assert quick.entrypoint == full.entrypoint == "flows.sync_flow.sync_all"


def test_quick_fires_every_15_minutes_and_full_nightly() -> None:
    from datetime import datetime

    from croniter import croniter

    start = datetime(2026, 1, 5, 0, 7, tzinfo=UTC)
    it = croniter("*/15 * * * *", start)
    runs = [it.get_next(datetime) for _ in range(5)]
    assert runs[0].minute == 15
    assert [(b - a).total_seconds() for a, b in pairwise(runs)] == [900.0] * 4
    nightly = croniter("0 2 * * *", start)
    first, second = nightly.get_next(datetime), nightly.get_next(datetime)
    assert (first.hour, first.minute) == (2, 0) and (second - first).total_seconds() == 86_400


def test_yaml_parameters_exist_on_the_flow_and_limits_match_the_code() -> None:
    config = load_prefect_yaml(ROOT / "prefect.yaml")
    for spec in deployment_specs(config):
        flow_obj = load_entrypoint(spec.entrypoint)
        accepted = set(flow_obj.parameters.properties)
        assert set(spec.parameters) <= accepted, set(spec.parameters) - accepted
    definitions = config["definitions"]
    assert definitions["global_concurrency_limits"] == {SYNC_LIMIT: 1}
    assert definitions["tag_concurrency_limits"] == {WRITER_TAG: 1}


def test_serve_message_lists_schedules_next_runs_and_a_deployment_without_schedule() -> None:
    """A deployment with no schedule (one that another flow hands work to) is served too, and said so."""
    from datetime import UTC, datetime

    from flows.deployments import DeploymentSpec, serve_message
    from flows.prefect_api import PrefectApi

    specs = deployment_specs(load_prefect_yaml(ROOT / "prefect.yaml"))
    specs.append(
        DeploymentSpec(
            name="batch", entrypoint="flows.sync_flow.sync_all", parameters={}, schedules=[], concurrency_limit=None
        )
    )
    runs = {"quick": [datetime(2026, 1, 5, 0, 15, tzinfo=UTC)], "full": []}
    text = serve_message(
        PrefectApi(url="http://127.0.0.1:4321/api", temporary=True),
        ROOT / "prefect.yaml",
        specs,
        {s.name: "sync-all" for s in specs},
        runs,
    )
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("  sync-all/")}
    assert "*/15 * * * * (UTC)" in lines["sync-all/quick"] and "2026-01-05 00:15 UTC" in lines["sync-all/quick"]
    assert "0 2 * * * (UTC)" in lines["sync-all/full"] and "not scheduled yet by the server" in lines["sync-all/full"]
    assert "none (runs when started)" in lines["sync-all/batch"]
    assert "PREFECT_API_URL=http://127.0.0.1:4321/api " in text and "deployment run 'sync-all/quick'" in text
    assert "UI: http://127.0.0.1:4321)" in text


# --- where a worker's run executes (the pull step) ------------------------------------------------


def test_pull_step_enters_outreach_home_when_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.pull_steps import enter_outreach_home

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("OUTREACH_HOME", str(tmp_path))
    assert enter_outreach_home() == {"directory": str(tmp_path.resolve())}
    assert Path.cwd() == tmp_path.resolve()


def test_pull_step_defaults_to_the_checkout_of_the_installed_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.pull_steps import outreach_home

    monkeypatch.delenv("OUTREACH_HOME", raising=False)
    assert outreach_home() == ROOT


def test_pull_step_errors_name_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows import pull_steps

    monkeypatch.setenv("OUTREACH_HOME", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"OUTREACH_HOME=.*missing is not a directory on this worker"):
        pull_steps.outreach_home()
    monkeypatch.delenv("OUTREACH_HOME")
    monkeypatch.setattr(pull_steps, "PROJECT_ROOT", tmp_path)  # as in site-packages: no prefect.yaml beside
    with pytest.raises(ConfigError, match="installed as a package here .*: set OUTREACH_HOME"):
        pull_steps.outreach_home()


# --- what Prefect needs of its dependencies and of its own API --------------------------------------


def test_fastapi_accepts_a_null_body_field() -> None:
    """Prefect 3.8.8's client sends `limit: null` to the filter endpoints; fastapi 0.151+ answers 422.

    flows/README.md "Versions this needs": pyproject pins fastapi<0.151 for this.
    """
    import fastapi
    from fastapi import Body, Depends, FastAPI
    from fastapi.testclient import TestClient

    def get_limit(limit: int = Body(None)) -> int | None:  # the shape of prefect.server.api.dependencies.LimitBody
        return limit

    app = FastAPI()

    @app.post("/filter")
    def read(limit: int = Depends(get_limit), offset: int = Body(0, ge=0)) -> dict[str, object]:
        return {"limit": limit, "offset": offset}

    answer = TestClient(app).post("/filter", json={"limit": None, "offset": 0})
    assert answer.status_code == 200, (
        f"fastapi {fastapi.__version__} rejects a null body field ({answer.status_code}): Prefect 3.8.8's "
        "`prefect deploy`, `deployment ls` and workers get 422s; keep fastapi<0.151 in pyproject.toml"
    )


def test_prefect_refreshes_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins the one Prefect call flows/prefect_api.py uses that Prefect's API reference does not list.

    ``prefect.context.refresh_global_settings_context()`` makes a changed ``PREFECT_API_URL`` visible
    to this process and to threads it starts later (Prefect's log and event workers).
    """
    import prefect.context
    from prefect.settings import get_current_settings

    from flows.prefect_api import process_environment

    assert callable(getattr(prefect.context, "refresh_global_settings_context", None)), (
        "Prefect no longer has prefect.context.refresh_global_settings_context: flows/prefect_api.py "
        "(process_environment) must point this process at its temporary server another way"
    )
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    seen: list[str | None] = []
    with process_environment({"PREFECT_API_URL": "http://127.0.0.1:9/api"}):
        thread = threading.Thread(target=lambda: seen.append(get_current_settings().api.url))
        thread.start()
        thread.join()
    assert seen == ["http://127.0.0.1:9/api"], (
        f"Prefect's settings in a new thread after refresh_global_settings_context(): {seen}; "
        "flows/prefect_api.py relies on it"
    )
    assert "PREFECT_API_URL" not in os.environ


# --- the demo's warehouse guard -------------------------------------------------------------------


def test_demo_guard_refuses_only_unlisted_workspaces_of_a_marked_warehouse(tmp_path: Path) -> None:
    from pipelines.warehouse.demo_guard import marker_path, read_marker, refuse_foreign_workspaces, write_marker

    warehouse = tmp_path / "outreach.duckdb"
    ours, other = {"workspace": {"id": "ws-demo", "name": "Demo"}}, {"workspace": {"id": "ws-real", "name": "Acme"}}
    refuse_foreign_workspaces(warehouse, [other])  # not a demo warehouse: anything goes
    write_marker(warehouse, ["ws-demo"])
    assert read_marker(warehouse) is not None and read_marker(warehouse).workspace_ids == {"ws-demo"}  # type: ignore[union-attr]
    refuse_foreign_workspaces(warehouse, [ours, AuthError("a failed key is reported elsewhere")])
    refuse_foreign_workspaces(None, [other])  # a non-DuckDB destination
    with pytest.raises(ConfigError) as excinfo:
        refuse_foreign_workspaces(warehouse, [ours, other])
    message = str(excinfo.value)
    assert "\n" not in message and "key #2" in message and "'Acme' (ws-real)" in message and "--duckdb" in message
    assert marker_path(warehouse).name == "outreach.duckdb.demo"


# --- key references -------------------------------------------------------------------------


def test_parse_key_ref_forms() -> None:
    assert str(parse_key_ref("secret:acme")) == "secret:acme"
    assert str(parse_key_ref("acme")) == "secret:acme"
    assert str(parse_key_ref("config:1")) == "config:1"
    assert str(parse_key_ref(2)) == "config:2"
    assert str(parse_key_ref("env:MY_KEY")) == "env:MY_KEY"
    with pytest.raises(ConfigError, match="config:<n> takes an index"):
        parse_key_ref("config:first")
    with pytest.raises(ConfigError, match="empty"):
        parse_key_ref(" ")


def test_config_and_env_references_resolve_without_naming_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", "key-aaa-111, key-bbb-222")
    assert configured_key_refs() == ["config:0", "config:1"]
    assert resolve_api_key("config:1") == "key-bbb-222"
    assert resolve_api_key("0") == "key-aaa-111"
    with pytest.raises(ConfigError) as excinfo:
        resolve_api_key("config:5")
    assert "holds 2 key(s)" in str(excinfo.value) and "key-aaa-111" not in str(excinfo.value)

    monkeypatch.delenv("SOURCES__OUTREACH__API_KEYS")
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEY", "single-key-333")
    assert configured_key_refs() == ["config:0"] and resolve_api_key("config:0") == "single-key-333"

    monkeypatch.setenv("OUTREACH_TEST_KEY", "env-key-444")
    assert resolve_api_key("env:OUTREACH_TEST_KEY") == "env-key-444"
    with pytest.raises(ConfigError, match="OUTREACH_MISSING_KEY is empty or unset"):
        resolve_api_key("env:OUTREACH_MISSING_KEY")


def test_a_key_listed_twice_is_synced_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reference was a subflow of its own: a key listed twice synced its workspace twice in one run."""
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", "key-aaa-111, key-bbb-222, key-aaa-111")
    monkeypatch.setenv("OUTREACH_TEST_KEY_B", "key-bbb-222")
    refs = ["config:0", "config:1", "config:2", "env:OUTREACH_TEST_KEY_B", "secret:acme", "acme", "config:9"]
    from pipelines.core.config import resolve_settings

    kept, left_out = one_ref_per_key(refs, resolve_settings())
    assert kept == ["config:0", "config:1", "secret:acme", "config:9"]  # config:9 holds none: its sync says so
    assert left_out == [
        "config:2 holds the same key as config:0: its workspace is synced once",
        "env:OUTREACH_TEST_KEY_B holds the same key as config:1: its workspace is synced once",
        "secret:acme is listed twice: its workspace is synced once",
    ]


# --- the warehouse writer lock ----------------------------------------------------------------


def test_writer_lock_serialises_threads(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    intervals: list[tuple[float, float]] = []

    def write() -> None:
        with warehouse_writer(warehouse):
            start = time.monotonic()
            time.sleep(0.05)
            intervals.append((start, time.monotonic()))

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    intervals.sort()
    assert len(intervals) == 4
    assert all(prev_end <= next_start for (_, prev_end), (next_start, _) in pairwise(intervals))


def test_writer_lock_serialises_processes(tmp_path: Path) -> None:
    """Another process holding the lock (as a served flow run would) makes us wait."""
    warehouse = tmp_path / "w.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; from pipelines.warehouse.lock import warehouse_writer\n"
            f"with warehouse_writer({str(warehouse)!r}):\n print('held', flush=True); time.sleep(1.0)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with warehouse_writer(warehouse) as waited:
            assert holder.poll() is not None or waited > 0.3
        assert waited > 0.3
    finally:
        holder.wait(timeout=10)
    assert lock_path_for(warehouse).name == "w.duckdb.writer.lock"


# --- retries ------------------------------------------------------------------------------------


def _wrapped_terminal() -> BaseException:
    """What the pipeline raises when dlt's load hits a terminal error: a plain OutreachError from it."""
    from dlt.destinations.exceptions import DatabaseTerminalException

    from pipelines.core.errors import OutreachError

    try:
        try:
            raise DatabaseTerminalException(ValueError("Binder Error"))
        except DatabaseTerminalException as inner:
            raise OutreachError("loading workspace w failed: fix the cause and rerun") from inner
    except OutreachError as outer:
        return outer


@pytest.mark.parametrize(
    ("exc", "retry"),
    [
        (AuthError("API key rejected (401)"), False),
        (ForbiddenError("403"), False),
        (ConfigError("no base_url"), False),
        (ApiUnavailableError("503 after retries"), True),
        (httpx.ConnectError("connection refused"), True),
        (TimeoutError("read timed out"), True),
        (_wrapped_terminal(), False),
        (WarehousePathError("warehouse w.duckdb is not a valid DuckDB database file"), False),
        (WarehouseError("warehouse w.duckdb is locked by process 7 (a writer)"), True),
    ],
)
def test_retry_condition(exc: BaseException, retry: bool) -> None:
    from prefect.states import Failed

    from flows.retry import retry_unless_permanent

    assert retry_unless_permanent(None, None, Failed(data=exc)) is retry  # type: ignore[arg-type]


# --- artifact markdown ----------------------------------------------------------------------------


class _Report:
    def __init__(self, text: str) -> None:
        self.text = text

    def to_markdown(self) -> str:
        return self.text


def test_run_markdown_has_outcomes_stages_and_reports() -> None:
    clock = StageClock()
    clock.add("build models", 1.5)
    markdown = render_run_markdown(
        title="outreach sync",
        mode="full",
        workspaces=[
            WorkspaceResult("secret:a", True, "", None, {"extract+normalize": 2.0, "load": 0.5}),
            WorkspaceResult("secret:b", False, "API key rejected (401)"),
        ],
        run_stages=clock.seconds,
        sync_markdown="# Sync\n| table | rows |\n|---|---|\n| campaigns | 12 |",
        build_report=_Report("## Data tests\nall 14 passed"),
    )
    assert "status: **failed**" in markdown
    assert "| secret:b | FAILED: API key rejected (401) |" in markdown
    assert "| secret:a | load | 0.50 |" in markdown and "| run | build models | 1.50 |" in markdown
    assert "### Sync" in markdown and "#### Data tests" in markdown  # nested headings demoted
    assert "| campaigns | 12 |" in markdown


# --- logging --------------------------------------------------------------------------------------


def test_dlt_logs_are_routed_to_prefect(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from flows.logs import route_library_logs_to_prefect

    monkeypatch.setenv("PREFECT_LOGGING_EXTRA_LOGGERS", "other")
    route_library_logs_to_prefect()
    assert set(os.environ["PREFECT_LOGGING_EXTRA_LOGGERS"].split(",")) == {"other", "dlt", "pipelines", "models"}
    prefect_handlers = [
        h for h in logging.getLogger("prefect.extra").handlers if type(h).__module__.startswith("prefect.")
    ]
    assert prefect_handlers, "prefect.extra has no handlers to copy"
    for name in ("dlt", "pipelines", "models"):
        assert all(h in logging.getLogger(name).handlers for h in prefect_handlers)


def test_only_prefects_handlers_are_routed(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest hangs its capture handlers on non-propagating loggers such as prefect.extra: copied onto
    our propagating loggers, every record would be captured twice in every later test."""
    from flows.logs import route_library_logs_to_prefect

    foreign = logging.NullHandler()
    extra = logging.getLogger("prefect.extra")
    extra.addHandler(foreign)
    try:
        route_library_logs_to_prefect(("outreach_test_only",))
    finally:
        extra.removeHandler(foreign)
    routed = logging.getLogger("outreach_test_only").handlers
    assert routed and foreign not in routed
    assert all(type(h).__module__.startswith("prefect.") for h in routed)


# --- handing batches of workspaces to a work pool ---------------------------------------------


def test_batches_cover_every_workspace_once_in_order() -> None:
    from flows.batches import batch_size_for, split

    refs = [f"config:{i}" for i in range(10)]
    assert batch_size_for(10, None, 4) == 3 and batch_size_for(10, 5, 4) == 5 and batch_size_for(1, None, 4) == 1
    batches = split(refs, batch_size_for(len(refs), None, 4))
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    assert [ref for b in batches for ref in b] == refs
    assert split(refs, 0) == [[ref] for ref in refs]


def test_outside_a_deployment_run_sync_all_keeps_the_workspaces_in_its_process() -> None:
    from flows.batches import hand_out_to

    assert hand_out_to(None) is None
    assert hand_out_to("sync-batch/batch") is None  # no flow run here: nothing to hand out from


def test_speed_to_lead_before_the_first_sync_has_nothing_to_check(tmp_path: Path) -> None:
    """`outreach serve` fires the schedule every 5 minutes, possibly before the first sync made the warehouse."""
    from flows.alerts_flow import check_replies_task

    missing = tmp_path / "data" / "outreach.duckdb"
    line = check_replies_task.fn(None, str(missing))
    assert line == f"no warehouse at {missing} yet: nothing to check before the first sync"
    assert not missing.exists()


def test_speed_to_lead_reads_the_service_clock_once_whatever_the_number_of_workspaces(make_sandbox: Any) -> None:
    """The service has one clock: the loop that runs every 5 minutes asks it with the first key that answers, not
    once per workspace (a thousand requests every 5 minutes for an agency of a thousand)."""
    from test_sync_support import admin_keys

    from flows.alerts_flow import service_clock
    from pipelines.core.config import resolve_settings

    sandbox = make_sandbox(scale="tiny", rate_limit=0, workspaces=3)
    keys = admin_keys(sandbox)
    assert len(keys) == 3
    settings = resolve_settings(api_keys=["sk_not_a_key", *keys], base_url=sandbox.base_url)
    sandbox.reset_metrics()
    clock = service_clock(settings)
    assert clock is not None and clock.tzinfo is not None
    assert sandbox.metrics()["requests"] == 2  # the refused key's request, then the first good key's


# --- the demo's head start --------------------------------------------------------------------


def test_the_demo_imports_ahead_past_a_module_that_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A failing import ahead is left to the step that needs the module: it neither raises nor stops the rest."""
    from flows import demo_services

    (tmp_path / "outreach_ahead_probe.py").write_text("VALUE = 1\n")
    (tmp_path / "outreach_ahead_broken.py").write_text("raise ImportError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(demo_services, "LATER_IMPORTS", ("outreach_ahead_broken", "outreach_ahead_probe"))
    for name in ("outreach_ahead_broken", "outreach_ahead_probe"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    demo_services.import_ahead()
    assert "outreach_ahead_probe" in sys.modules and "outreach_ahead_broken" not in sys.modules


def test_the_demo_imports_ahead_in_the_main_thread_while_the_server_starts_and_a_failed_start_ends_the_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sandbox's modules are imported by the main thread before the thread that starts it (two threads
    importing one package at once can deadlock: _DeadlockError); the later steps' modules are imported by the
    main thread while the Prefect server starts, where a Ctrl-C stops them; a start that fails there ends the
    sandbox wherever its start is, then stops it as any."""
    import contextlib
    import importlib

    from flows import demo, demo_services, prefect_api

    events: list[str] = []
    real_import = importlib.import_module

    def import_module(name: str) -> Any:
        events.append(f"import {name}")
        return real_import(name)

    class Stopped(Exception):
        pass

    class Sandbox:
        def cancel(self) -> None:
            events.append("cancel sandbox")

        def stop(self) -> None:
            events.append("stop sandbox")

    def start_sandbox(sandbox: Sandbox) -> Sandbox:
        events.append("start sandbox")
        return sandbox

    def import_ahead() -> None:
        events.append(f"import ahead in {threading.current_thread().name}")

    @contextlib.contextmanager
    def server_fails_once_started(*, ui: bool, while_starting: Any) -> Any:
        while_starting()
        raise Stopped
        yield

    monkeypatch.setattr(demo.importlib, "import_module", import_module)
    monkeypatch.setattr(demo_services, "new_sandbox", lambda scale: Sandbox())
    monkeypatch.setattr(demo_services, "start_sandbox", start_sandbox)
    monkeypatch.setattr(demo_services, "import_ahead", import_ahead)
    monkeypatch.setattr(prefect_api, "prefect_api", server_fails_once_started)
    with contextlib.ExitStack() as stack, pytest.raises(Stopped):
        demo.start_services(demo.Demo(scale="tiny", warehouse=Path("unused.duckdb")), stack)
    assert "sandbox.server" in demo_services.SANDBOX_IMPORTS
    imports = demo_services.SANDBOX_IMPORTS
    assert all(events.index(f"import {name}") < events.index("start sandbox") for name in imports), events
    assert "import ahead in MainThread" in events, events
    assert events.index("cancel sandbox") < events.index("stop sandbox"), events
