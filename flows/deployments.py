"""Serve the deployments of prefect.yaml on this machine (``outreach serve``).

prefect.yaml is the one source of truth: names, entrypoints, parameters, schedules, deployment
concurrency limits, and the global/tag concurrency limits declared under ``definitions``.
``prefect deploy --all`` reads the same file to put the deployments on a work pool.
"""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipelines.errors import ConfigError

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[1]


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
    data = yaml.safe_load(path.read_text())
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
    """Import ``flows/sync_flow.py:sync_all`` as ``flows.sync_flow.sync_all`` (one module, no copies)."""
    file_part, _, attr = entrypoint.partition(":")
    module = file_part.removesuffix(".py").replace("/", ".").replace("\\", ".")
    return getattr(importlib.import_module(module), attr)


def _schedule(spec: dict[str, Any]) -> Any:
    from prefect.schedules import Cron, Interval

    options = {k: spec[k] for k in ("timezone", "active", "parameters", "slug") if k in spec}
    if "cron" in spec:
        return Cron(spec["cron"], **options)
    if "interval" in spec:
        return Interval(spec["interval"], **options)
    raise ConfigError(f"prefect.yaml schedule {spec} has neither cron nor interval: use one of them")


def build_deployments(config: dict[str, Any] | None = None) -> list[Any]:
    """RunnerDeployments for ``prefect.serve``, built from prefect.yaml."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.deployments.runner import EntrypointType

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


def serve_deployments() -> None:
    """Serve every deployment of prefect.yaml with its schedules until stopped (Ctrl-C)."""
    from prefect import serve

    from flows.logs import route_library_logs_to_prefect

    route_library_logs_to_prefect()
    config = load_prefect_yaml()
    ensure_concurrency_limits(config)
    serve(*build_deployments(config))
