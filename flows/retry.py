"""Which failures a flow's sync task retries, and errors that name the workspace they belong to.

Retries are for trouble a retry can fix: network errors, time-outs, an API that stayed unavailable after
the client's own retries, and a warehouse another process holds. A bad key, a missing permission, bad
configuration, a warehouse only its owner can mend (not DuckDB, damaged, read-only, no space) or a dlt terminal
error fails on the first attempt: retrying would only delay the message that names the fix.
"""

from __future__ import annotations

from typing import Any

from prefect.client.schemas.objects import State, TaskRun
from prefect.tasks import Task

from flows.keys import parse_key_ref, where_the_key_lives
from pipelines.core.errors import (
    AuthError,
    ConfigError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    OutreachError,
    WarehousePathError,
)
from pipelines.warehouse.diagnose import chain

#: Errors that a retry cannot fix: the task fails on the first attempt.
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (
    AuthError,
    ForbiddenError,
    ConfigError,
    NotFoundError,
    InvalidRequestError,
    WarehousePathError,
)

SYNC_RETRY_DELAYS: list[float] = [2, 10, 30]


def is_permanent(exc: BaseException) -> bool:
    """A bad key, no permission, bad config, or a dlt terminal error anywhere in the cause chain."""
    from dlt.common.exceptions import TerminalException

    return any(isinstance(e, (*PERMANENT_ERRORS, TerminalException)) for e in chain(exc))


def retry_unless_permanent(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """``retry_condition_fn``: retry network and server trouble, never a bad key or bad config."""
    try:
        state.result(raise_on_failure=True)
    except BaseException as exc:  # noqa: BLE001 - classify whatever the task raised
        return not is_permanent(exc)
    return True


def with_ref(exc: OutreachError, key_ref: str) -> OutreachError:
    """The same error type, its message naming the workspace's key reference (and where the key lives)."""
    ref = parse_key_ref(key_ref)
    message = f"workspace {ref}: {exc}"
    if isinstance(exc, (AuthError, ForbiddenError)):
        message += f" ({where_the_key_lives(ref)})"
    return retitled(exc, message)


def retitled(exc: OutreachError, message: str) -> OutreachError:
    """An error of the same type (so retry rules still see it) with ``message``; ours if the type can't take one."""
    try:
        return type(exc)(message)
    except TypeError:
        return OutreachError(message)
