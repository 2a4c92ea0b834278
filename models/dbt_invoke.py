"""Run a dbt command on the project through dbt's programmatic runner (`dbtRunner`), never a subprocess.

The profile is models/profiles.yml; the warehouse comes in as the environment variables it reads
(`models.settings.dbt_env`), set for the duration of the run only. dbt's console output is off: the
results, warnings and our hook's notes are collected from dbt's events and result objects.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models import PROJECT_DIR
from models.settings import dbt_env, dbt_state_dir
from pipelines.core.root_cause import chain, explain_sqlstate, one_line
from pipelines.warehouse.destination import Warehouse

log = logging.getLogger(__name__)

#: dbt's runner keeps global state (flags, adapters): one invocation at a time per process
_RUN_LOCK = threading.Lock()
_NOTE_PREFIX = "outreach: "


@dataclass
class Invocation:
    """What one dbt command did."""

    success: bool
    results: list[Any] = field(default_factory=list)  # dbt RunResult / SourceFreshnessResult objects
    exception: BaseException | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines our macros log with the "outreach: " prefix
    seconds: float = 0.0
    manifest: Any = None  # `dbt parse`'s Manifest: the next commands of one build take it instead of loading it again

    def error_line(self, limit: int = 300) -> str:
        """The error dbt stopped on, in one line. PostgreSQL's refusal of a privilege says what to grant. A
        compilation error (a macro of ours refusing a var, through `exceptions.raise_compiler_error`) is its own
        message and the node dbt was compiling: dbt's text wraps it in a generic head and the macros' call stack."""
        from dbt_common.exceptions import CompilationError

        assert self.exception is not None
        explained = next(filter(None, map(explain_sqlstate, chain(self.exception))), None)
        if explained:  # the server's refusal, with its fix: a privilege the warehouse's user lacks
            return explained
        cause = next((e for e in chain(self.exception) if isinstance(e, CompilationError)), None)
        if cause is None or not str(cause.msg).strip():
            return one_line(self.exception, limit, all_lines=True)
        where = f" (compiling {cause.node.resource_type} {cause.node.name})" if cause.node is not None else ""
        return one_line(RuntimeError(f"{cause.msg}{where}"), limit, all_lines=True)


def invoke(
    command: list[str],
    target: Warehouse,
    *,
    dbt_vars: dict[str, Any] | None = None,
    target_dir: str = "target",
    project_dir: Path = PROJECT_DIR,
    manifest: Any = None,
    write_json: bool = False,
    watch: Callable[[Any], None] | None = None,
) -> Invocation:
    """Run `dbt <command>` on the project (models/, or a copy) against `target`; never raises for a failing node.

    `manifest`: a `dbt parse` outcome's, made with the same `dbt_vars` (dbt's documented `dbtRunner(manifest=)`):
    dbt then neither reads its saved parse nor checks the project's files again.
    `write_json`: also write dbt's JSON artifacts (manifest.json, run_results.json) into the target dir. Off by
    default: the results and the manifest come back as objects, and serialising the whole manifest into a file
    nobody reads cost half a second of CPU per command. The docs site is made from them, so it writes them.
    `watch`: also called with each of dbt's events, from dbt's threads (models.progress.BuildProgress).
    """
    dbt_runner = _dbt_runner()
    state = dbt_state_dir(target)
    args = [
        *command,
        "--project-dir", str(project_dir),
        "--profiles-dir", str(project_dir),
        "--target-path", str(state / target_dir),
        "--log-path", str(state / "logs"),
        "--log-level", "none",
        "--log-level-file", "info",
    ]  # fmt: skip
    if not write_json:
        args.append("--no-write-json")
    if dbt_vars:
        args += ["--vars", json.dumps(dbt_vars, sort_keys=True)]
    outcome = Invocation(success=False)

    def on_event(event: Any) -> None:
        name = event.info.name
        if name == "JinjaLogWarning" or "Deprecation" in name:
            outcome.warnings.append(" ".join(str(event.info.msg).split()))
        elif name == "JinjaLogInfo" and str(event.info.msg).startswith(_NOTE_PREFIX):
            outcome.notes.append(str(event.info.msg)[len(_NOTE_PREFIX) :])

    started = time.perf_counter()
    with _RUN_LOCK, _environment(dbt_env(target)):
        state.mkdir(parents=True, exist_ok=True)
        try:
            result = dbt_runner(manifest=manifest, callbacks=[on_event, *([watch] if watch else [])]).invoke(args)
        finally:
            if target.destination == "duckdb":
                from models.duckdb_release import release_duckdb

                release_duckdb()
    if isinstance(result.exception, KeyboardInterrupt):  # dbt's runner caught a Ctrl-C: the caller's to stop on
        raise KeyboardInterrupt
    outcome.seconds = time.perf_counter() - started
    outcome.success = bool(result.success)
    outcome.exception = result.exception
    if command[0] == "parse":
        outcome.manifest = result.result if result.success else None
    else:
        outcome.results = list(getattr(result.result, "results", None) or [])
    log.debug("dbt %s: success=%s in %.2fs", command[0], outcome.success, outcome.seconds)
    return outcome


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the block, then restore what was there."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _dbt_runner() -> Any:
    """dbt's `dbtRunner`. Importing dbt imports its telemetry client (snowplow_tracker), whose modules call
    `logging.basicConfig()`: a handler on the root logger, so that every later warning of any module reached the
    user's terminal as `WARNING:<logger>:<message>`, beside the line the command says itself. The root logger
    keeps the handlers it had."""
    before = list(logging.root.handlers)
    from dbt.cli.main import dbtRunner

    for handler in [h for h in logging.root.handlers if h not in before]:
        logging.root.removeHandler(handler)
    return dbtRunner
