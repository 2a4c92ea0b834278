"""The demo's services: its sandbox, started in a process of its own, its keys kept as Prefect Secret blocks, and
the later steps' imports made while the services start (flows/demo.py `start_services` runs them)."""

from __future__ import annotations

import importlib
import logging
from typing import Any

from pipelines.core.errors import ConfigError, OutreachError

logger = logging.getLogger(__name__)

DEMO_RATE_LIMIT = 6000  # requests a minute, sandbox and client alike

#: What the sandbox's start imports, imported by the main thread before the thread that starts it: two threads
#: importing modules of one package at once can deadlock on the package's import cycles (Python then raises
#: _DeadlockError in one of them; the test suite's demo once failed so, in `prefect`).
SANDBOX_IMPORTS = ("sandbox.server",)

#: What the later steps import (the sync flow with dlt, the build with dbt: seconds of one core), imported while
#: the demo mostly waits for the Prefect API and the sandbox to start.
LATER_IMPORTS = ("flows.sync_flow", "flows.build_flow", "models.build", "dbt.cli.main")


def new_sandbox(scale: str) -> Any:
    from sandbox.server import SandboxProcess

    return SandboxProcess(scale=scale, rate_limit=DEMO_RATE_LIMIT)


def start_sandbox(sandbox: Any) -> Any:
    """Start the demo's sandbox (`new_sandbox`), in a process of its own: it serves while this process syncs (two
    cores, not one)."""
    try:
        return sandbox.start()
    except (RuntimeError, TimeoutError) as exc:  # its own error output, above, says more
        raise OutreachError(f"the demo's sandbox did not start ({exc}): rerun `outreach demo`") from None


def import_ahead() -> None:
    """Import LATER_IMPORTS now. Only a head start: a module that fails here is imported again, and fails with
    its own error, in the step that needs it."""
    for module in LATER_IMPORTS:
        try:
            importlib.import_module(module)
        except Exception:  # the step that needs the module reports why it cannot be imported
            logger.debug("import ahead of %s failed; its step imports it again", module, exc_info=True)


def sandbox_workspace_ids(keys: list[dict[str, Any]]) -> list[str]:
    """The workspace ids the sandbox lists at /_sandbox/keys."""
    return sorted({str(entry["workspace_id"]) for entry in keys})


def store_keys_as_secrets(keys: list[dict[str, Any]], prefix: str = "outreach-demo") -> list[str]:
    """Save one read key per workspace as a Prefect Secret block; return the references."""
    from prefect.blocks.system import Secret

    refs: list[str] = []
    seen: set[str] = set()
    for entry in keys:
        if entry.get("level") != "read" or entry["workspace_id"] in seen:
            continue
        seen.add(entry["workspace_id"])
        name = f"{prefix}-{len(refs) + 1}"
        Secret(value=entry["key"]).save(name, overwrite=True)
        refs.append(f"secret:{name}")
    if not refs:
        raise ConfigError("the sandbox listed no read keys at /_sandbox/keys: restart it")
    return refs
