"""The temporary Prefect server (flows/prefect_server.py): its SQLite transactions take the write lock at BEGIN,
so subflows that run side by side neither fail with a 503 nor wait out the client's 2 s retry."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from flows.prefect_server import take_sqlite_write_lock_at_begin

ROOT = Path(__file__).resolve().parents[2]

# Four `sync_workspace`-like subflows in threads of one parent flow, each with a task that sleeps 3 s, on the
# temporary server that `prefect_api` starts; prints when each subflow's body and task ran, and every 503 that
# Prefect's client logged before retrying.
_SIDE_BY_SIDE = """
import json, logging, time
from prefect import flow, task
from flows.prefect_api import prefect_api
from pipelines.core.fanout import map_in_threads

retried = []
class Retries(logging.Handler):
    def emit(self, record):
        if "retryable status code" in record.getMessage():
            retried.append(record.getMessage())
client_log = logging.getLogger("prefect.client")
client_log.addHandler(Retries())
client_log.setLevel(logging.DEBUG)
spans = {}

@task
def work(name):
    started = time.monotonic()
    time.sleep(3.0)
    spans[name] = (started, time.monotonic())

@flow(persist_result=False)
def child(name):
    work(name)

@flow(persist_result=False)
def parent():
    map_in_threads(child, ["a", "b", "c", "d"], workers=4, name="side-by-side")

with prefect_api(ui=False):
    parent()
print(json.dumps({"spans": spans, "retried": retried}))
"""


def test_subflows_side_by_side_run_together_without_a_retried_request() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}  # its own temporary server
    proc = subprocess.run(
        [sys.executable, "-c", _SIDE_BY_SIDE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["retried"] == [], result["retried"]
    spans = result["spans"]
    assert sorted(spans) == ["a", "b", "c", "d"]
    # every task started before the first one ended: the four ran together, none waited for another's end
    first_end = min(end for _, end in spans.values())
    assert max(start for start, _ in spans.values()) < first_end, spans


class _Session:
    """What `begin_transaction` uses of a SQLAlchemy session: `begin()` as an async context manager."""

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[None]:
        yield


def test_prefects_sqlite_begin_mode_is_what_the_change_relies_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The private names flows/prefect_server.py uses; a Prefect release that changes them fails here."""
    from prefect.server.database.configurations import SQLITE_BEGIN_MODE, AioSqliteConfiguration

    async def mode_inside(config: AioSqliteConfiguration) -> str | None:
        async with config.begin_transaction(_Session()):  # type: ignore[arg-type]
            return SQLITE_BEGIN_MODE.get()

    # restored after the test: the change is the server process's, not this one's
    monkeypatch.setattr(AioSqliteConfiguration, "begin_transaction", AioSqliteConfiguration.begin_transaction)
    config = AioSqliteConfiguration(connection_url="sqlite+aiosqlite:///unused.db")
    assert asyncio.run(mode_inside(config)) == "DEFERRED"  # Prefect's own choice for a plain transaction
    take_sqlite_write_lock_at_begin()
    take_sqlite_write_lock_at_begin()  # idempotent: still one wrapper
    assert asyncio.run(mode_inside(config)) == "IMMEDIATE"
    wrapped = AioSqliteConfiguration.begin_transaction
    assert getattr(wrapped, "_outreach_immediate", False)


def test_a_port_taken_before_the_server_binds_it_is_replaced_by_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A free port picked for the temporary server can be taken (by another test's server, say) before the server
    binds it: the server starts on another port instead of failing."""
    import socket

    import httpx

    from flows import prefect_api
    from pipelines.core import ports
    from pipelines.core.ports import free_port, port_taken

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        assert port_taken(busy)
        picks = iter([busy, free_port()])
        monkeypatch.setattr(ports, "free_port", lambda: next(picks))
        server = prefect_api.start_local_server(tmp_path / "home", ui=False)
    try:
        assert server.port != busy
        assert httpx.get(f"{server.api_url}/health", timeout=10).status_code == 200
    finally:
        server.stop()
    assert not port_taken(server.port)  # stopped: its port is free again


def test_the_test_harness_server_takes_the_write_lock_at_begin_too() -> None:
    """tests/_site/sitecustomize.py changes the server of Prefect's test harness (`uvicorn --factory
    prefect.server.api.server:create_app`) as flows/prefect_server.py changes ours, and no other process."""
    probe = (
        "import sys; from prefect.server.database.configurations import AioSqliteConfiguration as C; "
        "print(getattr(C.begin_transaction, '_outreach_immediate', False))"
    )
    for extra, expected in (("prefect.server.api.server:create_app", "True"), ("something:else", "False")):
        proc = subprocess.run(
            [sys.executable, "-c", probe, extra], cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip() == expected


def test_a_start_interrupted_part_way_kills_the_server_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Part-way through its start a server took 2 to 5 s to act on SIGTERM (by hand, without the cached database):
    a start that is interrupted (a Ctrl-C in the imports run meanwhile) or fails kills it instead, since its
    home is deleted after. A process that ignores SIGTERM is gone at once too."""
    from flows import prefect_api

    ignoring = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"],
        start_new_session=True,
    )
    prefect_api.LocalServer(process=ignoring, home=tmp_path, port=0).stop(at_once=True)  # type: ignore[arg-type]
    assert ignoring.poll() == -9

    stops: list[tuple[bool, int | None]] = []
    real_stop = prefect_api.LocalServer.stop

    def stop(self: prefect_api.LocalServer, *, at_once: bool = False) -> None:
        real_stop(self, at_once=at_once)
        stops.append((at_once, self.process.returncode))

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(prefect_api.LocalServer, "stop", stop)
    with pytest.raises(KeyboardInterrupt):
        prefect_api.start_local_server(tmp_path / "home", ui=False, while_starting=interrupted)
    assert stops == [(True, -9)]  # the real server's process, killed
