"""Serve the deployments of prefect.yaml on this machine (``outreach serve``).

prefect.yaml is the one source of truth: names, entrypoints, parameters, schedules, deployment
concurrency limits, and the global/tag concurrency limits declared under ``definitions``.
``prefect deploy --all`` reads the same file to put the deployments on a work pool.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from pipelines.core.errors import ConfigError

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NEXT_RUNS_WAIT_S = 30.0  # the server's scheduler creates a new deployment's runs within seconds


@dataclass(frozen=True)
class DeploymentSpec:
    """One deployment as prefect.yaml states it."""

    name: str
    entrypoint: str
    parameters: dict[str, Any]
    schedules: list[dict[str, Any]]
    concurrency_limit: dict[str, Any] | None
    tags: list[str] = field(default_factory=list)
    description: str = ""


def prefect_yaml_path() -> Path:
    """``$OUTREACH_PREFECT_YAML``, else ./prefect.yaml, else the one in the project root."""
    explicit = os.environ.get("OUTREACH_PREFECT_YAML")
    if explicit:
        return Path(explicit)
    local = Path.cwd() / "prefect.yaml"
    return local if local.exists() else PROJECT_ROOT / "prefect.yaml"


def load_prefect_yaml(path: Path | None = None) -> dict[str, Any]:
    """Parse prefect.yaml (anchors and merge keys resolved)."""
    path = path or prefect_yaml_path()
    if not path.exists():
        raise ConfigError(f"{path} not found: run from the project directory or set OUTREACH_PREFECT_YAML")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"{path} is not valid YAML{where}: fix it, or restore it from the repository") from None
    if not isinstance(data, dict) or not data.get("deployments"):
        raise ConfigError(f"{path} declares no deployments: restore it from the repository")
    return data


def _concurrency(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, int):
        return {"limit": value, "collision_strategy": "ENQUEUE"}
    return {"collision_strategy": "ENQUEUE", **dict(value)}


def deployment_specs(config: dict[str, Any] | None = None) -> list[DeploymentSpec]:
    """The deployments of prefect.yaml as plain specs."""
    config = config or load_prefect_yaml()
    specs = []
    for item in config["deployments"]:
        specs.append(
            DeploymentSpec(
                name=item["name"],
                entrypoint=item["entrypoint"],
                parameters=dict(item.get("parameters") or {}),
                schedules=[dict(s) for s in item.get("schedules") or []],
                concurrency_limit=_concurrency(item.get("concurrency_limit")),
                tags=list(item.get("tags") or []),
                description=item.get("description", ""),
            )
        )
    return specs


def load_entrypoint(entrypoint: str) -> Any:
    """Import a module-path entrypoint (``flows.sync_flow.sync_all``), or a file one (``flows/sync_flow.py:sync_all``)
    as the same module (one module, no copies)."""
    if ":" in entrypoint:
        file_part, _, attr = entrypoint.partition(":")
        module = file_part.removesuffix(".py").replace("/", ".").replace("\\", ".")
    else:
        module, _, attr = entrypoint.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _schedule(spec: dict[str, Any]) -> Any:
    from prefect.schedules import Cron, Interval

    options = {k: spec[k] for k in ("timezone", "active", "parameters", "slug") if k in spec}
    kind = "cron" if "cron" in spec else "interval" if "interval" in spec else None
    if kind is None:
        raise ConfigError(f"prefect.yaml schedule {spec} has neither cron nor interval: use one of them")
    try:
        return Cron(spec["cron"], **options) if kind == "cron" else Interval(spec["interval"], **options)
    except (ValueError, TypeError) as exc:  # Prefect's validation (pydantic's errors are ValueErrors)
        raise ConfigError(
            f"prefect.yaml schedule {kind} {spec[kind]!r} (of {spec}) is not one Prefect takes "
            f"({type(exc).__name__}): fix it in {prefect_yaml_path()}"
        ) from None


def build_deployments(config: dict[str, Any] | None = None) -> list[Any]:
    """RunnerDeployments for ``prefect.serve``, built from prefect.yaml."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.types.entrypoint import EntrypointType

    deployments = []
    for spec in deployment_specs(config):
        limit = None
        if spec.concurrency_limit:
            limit = ConcurrencyLimitConfig(
                limit=int(spec.concurrency_limit["limit"]),
                collision_strategy=ConcurrencyLimitStrategy(spec.concurrency_limit["collision_strategy"]),
            )
        flow_obj = load_entrypoint(spec.entrypoint)
        deployments.append(
            flow_obj.to_deployment(
                name=spec.name,
                parameters=spec.parameters,
                schedules=[_schedule(s) for s in spec.schedules],
                concurrency_limit=limit,
                tags=spec.tags,
                description=spec.description,
                entrypoint_type=EntrypointType.MODULE_PATH,
            )
        )
    return deployments


def ensure_concurrency_limits(config: dict[str, Any] | None = None) -> None:
    """Create the global and tag concurrency limits that prefect.yaml declares (idempotent)."""
    from prefect.client.orchestration import get_client

    config = config or load_prefect_yaml()
    definitions = config.get("definitions") or {}
    with get_client(sync_client=True) as client:
        for name, limit in (definitions.get("global_concurrency_limits") or {}).items():
            client.upsert_global_concurrency_limit_by_name(name, int(limit))
            logger.info("global concurrency limit %s = %s", name, limit)
        for tag, limit in (definitions.get("tag_concurrency_limits") or {}).items():
            client.create_concurrency_limit(tag=tag, concurrency_limit=int(limit))
            logger.info("tag concurrency limit %s = %s", tag, limit)


def schedule_text(spec: dict[str, Any]) -> str:
    """A schedule as prefect.yaml states it: ``*/15 * * * * (UTC)`` or ``every 900 s``."""
    zone = f" ({spec['timezone']})" if spec.get("timezone") else ""
    if "cron" in spec:
        return f"{spec['cron']}{zone}"
    return f"every {spec.get('interval')} s{zone}"


def scheduled_runs(
    deployment_ids: dict[str, Any], expect: set[str], wait_s: float = NEXT_RUNS_WAIT_S, per_deployment: int = 3
) -> dict[str, list[datetime]]:
    """The next scheduled runs the server holds per deployment (its scheduler creates them within seconds).

    Waits up to ``wait_s`` for every deployment named in ``expect`` (those with schedules) to have one.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort

    deadline = time.monotonic() + wait_s
    with get_client(sync_client=True) as client:
        while True:
            found: dict[str, list[datetime]] = {}
            for name, deployment_id in deployment_ids.items():
                runs = client.read_flow_runs(
                    deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
                    flow_run_filter=FlowRunFilter(
                        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))
                    ),
                    sort=FlowRunSort.EXPECTED_START_TIME_ASC,
                    limit=per_deployment,
                    offset=0,
                )
                found[name] = [run.expected_start_time for run in runs if run.expected_start_time is not None]
            if all(found.get(name) for name in expect) or time.monotonic() >= deadline:
                return found
            time.sleep(1.0)


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def serve_message(
    api: Any, yaml_path: Path, specs: list[DeploymentSpec], flow_name: dict[str, str], runs: dict[str, list[datetime]]
) -> str:
    """What ``outreach serve`` prints once its deployments are registered."""
    from flows.shell import command, shown_path

    where = (
        f"a temporary local Prefect server, for as long as this command runs (UI: {api.ui_url})"
        if api.temporary
        else f"the Prefect API {api.url}"
    )
    lines = [f"Serving {len(specs)} deployment(s) of {shown_path(yaml_path)} on {where}", ""]
    rows = [("deployment", "schedule", "next runs")]
    for spec in specs:
        schedule = ", ".join(schedule_text(s) for s in spec.schedules) or "none (runs when started)"
        if spec.schedules:
            upcoming = ", ".join(_when(m) for m in runs.get(spec.name, [])) or "not scheduled yet by the server"
        else:
            upcoming = "-"
        rows.append((f"{flow_name[spec.name]}/{spec.name}", schedule, upcoming))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines += [f"  {a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows]
    first = f"{flow_name[specs[0].name]}/{specs[0].name}"
    lines += [
        "",
        "Start a run now, from any shell:",
        f"  PREFECT_API_URL={api.url} {command('prefect')} deployment run '{first}'",
        f"Runs execute here ({Path.cwd()}), in subprocesses of this command, with this directory's .dlt/ settings.",
    ]
    if api.temporary:
        lines.append(
            "The temporary server and its run history go when this command stops; for a lasting one: "
            f"`{command('prefect')} server start`, then export PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    lines.append("Stop with Ctrl-C.")
    return "\n".join(lines)


def serve_deployments() -> None:
    """Serve every deployment of prefect.yaml with its schedules until stopped (Ctrl-C or SIGTERM)."""
    from prefect.runner import Runner

    from flows.logs import route_library_logs_to_prefect
    from flows.prefect_api import prefect_api

    route_library_logs_to_prefect()
    path = prefect_yaml_path()
    config = load_prefect_yaml(path)
    specs = deployment_specs(config)
    with prefect_api(ui=True) as api:
        ensure_concurrency_limits(config)
        runner = Runner(pause_on_shutdown=True)
        deployment_ids: dict[str, Any] = {}
        flow_name: dict[str, str] = {}
        for deployment in build_deployments(config):
            deployment_ids[deployment.name] = runner.add_deployment(deployment)
            flow_name[deployment.name] = str(deployment.flow_name)
        runs = scheduled_runs(deployment_ids, expect={s.name for s in specs if s.schedules})
        sys.stdout.write(serve_message(api, path, specs, flow_name, runs) + "\n")
        sys.stdout.flush()
        try:
            asyncio.run(runner.start())
        except KeyboardInterrupt:
            logger.info("stopping: Ctrl-C")
