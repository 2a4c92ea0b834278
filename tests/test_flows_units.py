"""Unit tests of the flows' building blocks that need no Prefect server: prefect.yaml, key
references, the warehouse writer lock, the retry rule, the artifact markdown, log routing."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from flows.deployments import build_deployments, deployment_specs, load_entrypoint, load_prefect_yaml
from flows.keys import configured_key_refs, parse_key_ref, resolve_api_key
from flows.run_lock import SYNC_LIMIT
from flows.run_report import StageClock, WorkspaceResult, render_run_markdown
from flows.run_lock import WRITER_TAG
from pipelines.errors import ApiUnavailableError, AuthError, ConfigError, ForbiddenError
from pipelines.lock import lock_path_for, warehouse_writer

ROOT = Path(__file__).resolve().parents[1]


# --- prefect.yaml -------------------------------------------------------------------------


def test_prefect_yaml_is_valid_for_prefect_deploy() -> None:
    """Prefect's own prefect.yaml model accepts the file (what `prefect deploy` parses)."""
    from prefect.cli.deploy._models import PrefectYamlModel

    model = PrefectYamlModel.model_validate(yaml.safe_load((ROOT / "prefect.yaml").read_text()))
    assert sorted(d.name for d in model.deployments) == ["full", "quick"]
    for deployment in model.deployments:
        assert deployment.entrypoint == "flows/sync_flow.py:sync_all"
        assert deployment.work_pool is not None and deployment.work_pool.name == "outreach-pool"


def test_deployments_have_the_stated_schedules_and_limits() -> None:
    specs = {s.name: s for s in deployment_specs(load_prefect_yaml(ROOT / "prefect.yaml"))}
    assert specs["quick"].parameters["mode"] == "quick"
    assert specs["full"].parameters["mode"] == "full"
    assert specs["quick"].schedules == [{"cron": "*/15 * * * *", "timezone": "UTC"}]
    assert specs["full"].schedules == [{"cron": "0 2 * * *", "timezone": "UTC"}]
    assert specs["quick"].concurrency_limit == {"limit": 1, "collision_strategy": "CANCEL_NEW"}
    assert specs["full"].concurrency_limit == {"limit": 1, "collision_strategy": "ENQUEUE"}

    built = {d.name: d for d in build_deployments(load_prefect_yaml(ROOT / "prefect.yaml"))}
    quick, full = built["quick"], built["full"]
    assert [s.schedule.cron for s in quick.schedules] == ["*/15 * * * *"]
    assert [s.schedule.cron for s in full.schedules] == ["0 2 * * *"]
    assert quick.concurrency_limit == 1 and full.concurrency_limit == 1
    assert quick.concurrency_options.collision_strategy.value == "CANCEL_NEW"
    assert full.concurrency_options.collision_strategy.value == "ENQUEUE"
    assert quick.entrypoint == full.entrypoint == "flows.sync_flow.sync_all"


def test_quick_fires_every_15_minutes_and_full_nightly() -> None:
    from datetime import datetime, timezone

    from croniter import croniter

    start = datetime(2026, 1, 5, 0, 7, tzinfo=timezone.utc)
    it = croniter("*/15 * * * *", start)
    runs = [it.get_next(datetime) for _ in range(5)]
    assert runs[0].minute == 15
    assert [(b - a).total_seconds() for a, b in zip(runs, runs[1:])] == [900.0] * 4
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
    assert all(prev_end <= next_start for (_, prev_end), (next_start, _) in zip(intervals, intervals[1:]))


def test_writer_lock_serialises_processes(tmp_path: Path) -> None:
    """Another process holding the lock (as a served flow run would) makes us wait."""
    warehouse = tmp_path / "w.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; from pipelines.lock import warehouse_writer\n"
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

    from pipelines.errors import OutreachError

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
    ],
)
def test_retry_condition(exc: BaseException, retry: bool) -> None:
    from prefect.states import Failed

    from flows.sync_flow import retry_unless_permanent

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
    prefect_handlers = logging.getLogger("prefect.extra").handlers
    assert prefect_handlers, "prefect.extra has no handlers to copy"
    for name in ("dlt", "pipelines", "models"):
        assert all(h in logging.getLogger(name).handlers for h in prefect_handlers)
