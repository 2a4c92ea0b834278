"""How a command fails: one line on stderr naming the root cause and the fix, never a traceback."""

from __future__ import annotations

import contextlib
import logging
import select
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

log = logging.getLogger("outreach")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a one-line reason on stderr and exit non-zero."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def fail_explained(exc: BaseException, duckdb: Path | None) -> NoReturn:
    """One line from `pipelines.warehouse.diagnose.explain` (the traceback goes to the debug log only)."""
    from pipelines.core.deadline import SyncInterrupted
    from pipelines.core.errors import OutreachError

    log.debug("failed", exc_info=exc)
    if isinstance(exc, SyncInterrupted):  # what did load, then the line, with the signal's exit status
        if exc.report is not None:
            typer.echo(exc.report.summary())
        fail(str(exc), exc.exit_code)
    if isinstance(exc, OutreachError):  # says it already; and no dlt import on this path (a bad key: < 2 s)
        fail(str(exc))
    from pipelines.warehouse.diagnose import configured_path, explain

    fail(explain(exc, configured_path(duckdb)))


def fail_build(exc: BaseException) -> NoReturn:
    """How `outreach models` fails: a failed build says each failing model or test on a line of its own, then its
    summary and what it left; a Ctrl-C (BuildInterrupted, or a KeyboardInterrupt before the build) says in one line
    what the build left; another of our errors is its one line."""
    from models.errors import BuildFailed, BuildInterrupted

    if isinstance(exc, KeyboardInterrupt):
        stopped = exc if isinstance(exc, BuildInterrupted) else BuildInterrupted()
        fail(str(stopped), stopped.exit_code)
    if isinstance(exc, BuildFailed):
        for line in exc.problems:
            typer.echo(f"error: {line}", err=True)
        typer.echo(exc.report.summary())
        typer.echo(
            f"models failed ({len(exc.problems)} problem(s)); the published reporting tables and the BI file "
            "are unchanged",
            err=True,
        )
        raise typer.Exit(1) from None
    fail(str(exc))


@contextlib.contextmanager
def stopped_by_ctrl_c() -> Iterator[None]:
    """For a server served until stopped: Ctrl-C is how it ends, not an error (exit 130, no line)."""
    try:
        yield
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


class _OneLineRecords(logging.Filter):
    """A library's log record with a traceback prints as its message and its root cause in one line: dlt's warning
    that it could not save its run's trace (a full disk mid-load) put some 70 lines of two tracebacks before the
    command's own line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            from pipelines.core.root_cause import one_line, root_cause

            record.msg, record.args = f"{record.getMessage()} ({one_line(root_cause(error))})", None
            record.exc_info = record.exc_text = None
        return True


_ONE_LINE_RECORDS = _OneLineRecords()


class OneLineErrors(TyperGroup):
    """Every command's unexpected failure becomes one line naming its root cause
    (`pipelines.warehouse.diagnose.explain`); the traceback goes to the debug log
    only. Commands still say their known errors themselves."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context
        # libraries' warnings (pandas' deprecations, met while dbt runs) are for their developers, not for our
        # users: logged (a configured handler still gets them), never printed on their own
        logging.captureWarnings(True)
        logging.getLogger("py.warnings").addHandler(logging.NullHandler())
        logging.getLogger("dlt").addFilter(_ONE_LINE_RECORDS)
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):  # usage errors and exits: click says them
            raise
        except BrokenPipeError as exc:
            # the reader of our output left (`outreach ... | head`): click's own handling ends the command quietly
            # (exit 1), as it does for a pipe closed outside a command; a pipe of another kind (a socket) is a
            # failure to explain
            if _stdout_reader_gone():
                raise
            _explain_and_exit(exc)
        except KeyboardInterrupt:  # typer would exit 130 without a word (sync, models and demo say more themselves)
            log.debug("interrupted", exc_info=True)
            command = " ".join(filter(None, [ctx.info_name, ctx.invoked_subcommand]))
            typer.echo(f"error: {command} interrupted by SIGINT before it finished; run it again", err=True)
            raise typer.Exit(130) from None
        except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback reaches a user
            _explain_and_exit(exc)


def _explain_and_exit(exc: BaseException) -> NoReturn:
    """`exc` in one line (`pipelines.warehouse.diagnose.explain`); its traceback goes to the debug log only."""
    from pipelines.warehouse.diagnose import explain

    log.debug("failed", exc_info=exc)
    typer.echo(f"error: {explain(exc)}", err=True)
    raise typer.Exit(1) from None


def _stdout_reader_gone() -> bool:
    """Standard output is a pipe whose reading end is closed: Linux polls such a pipe as POLLERR."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLERR)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError):  # no file descriptor (captured output) or one that cannot be polled
        return False
