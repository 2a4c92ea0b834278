"""A Prefect work pool for bench/scale_out.py: a real ``prefect server start``, a `process` pool, ``prefect
deploy --all`` from prefect.yaml, and k workers (``prefect worker start --pool outreach-pool --limit 2``), each
in its own process, loading one PostgreSQL database (devtools/pgserver.py).

`sync(mode)` starts a ``sync-all/<mode>`` run, as ``prefect deployment run`` does, and waits for it: sync-all
hands the workspaces out as runs of ``sync-batch/batch`` that the workers share, then builds the models
once. While it runs, a sampler reads /proc every 0.2 s for the resident memory of every process under the
workers (the flow-run processes): the largest single process and the largest sum.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from prefect.client.schemas.objects import FlowRun

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
POOL = "outreach-pool"
SAMPLE_S = 0.2


def _prefect(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [str(BIN / "prefect"), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"prefect {' '.join(args)} failed:\n{(done.stdout + done.stderr)[-2000:]}")
    return done.stdout


def _rss_tree(roots: list[int]) -> tuple[float, float]:
    """Resident MB of every descendant of `roots` (not the roots): the largest process and the sum."""
    parents: dict[int, int] = {}
    rss: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        parents[int(entry)] = int(fields.get("PPid", "0").strip() or 0)
        kb = fields.get("VmRSS", "0 kB").strip().split()[0]
        rss[int(entry)] = int(kb) / 1024
    wanted = set(roots)
    found: set[int] = set()
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in wanted | found and pid not in found and pid not in wanted:
                found.add(pid)
                changed = True
    values = [rss.get(pid, 0.0) for pid in found]
    return (max(values, default=0.0), sum(values))


@dataclass
class Sampler:
    roots: list[int]
    peak_process_mb: float = 0.0
    peak_total_mb: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            largest, total = _rss_tree(self.roots)
            self.peak_process_mb = max(self.peak_process_mb, largest)
            self.peak_total_mb = max(self.peak_total_mb, total)
            self._stop.wait(SAMPLE_S)

    @contextmanager
    def sampling(self) -> Iterator[Sampler]:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()


@dataclass
class WorkPool:
    """The server, the deployed pool and the running workers of one bench run."""

    api_url: str
    env: dict[str, str]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start_workers(self, k: int, worker_env: dict[str, str], home: Path) -> None:
        for i in range(k):
            log = (home / f"worker-{i}.log").open("wb")
            self.workers.append(
                subprocess.Popen(
                    [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--limit", "2"],
                    cwd=home,
                    env={**self.env, **worker_env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def stop_workers(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
        for worker in self.workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(timeout=10)
        self.workers = []

    def sync(self, mode: str, timeout_s: float = 3600) -> dict[str, Any]:
        """Run ``sync-all/<mode>`` once; wall seconds from its creation to its end, its batch runs, memory."""
        from prefect.client.orchestration import get_client
        from prefect.deployments import run_deployment

        sampler = Sampler([w.pid for w in self.workers])
        started = time.perf_counter()
        with sampler.sampling():
            run = cast("FlowRun", run_deployment(f"sync-all/{mode}", timeout=0, as_subflow=False))
            with get_client(sync_client=True) as client:
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline:
                    run = client.read_flow_run(run.id)
                    if run.state is not None and run.state.is_final():
                        break
                    time.sleep(0.5)
                wall = time.perf_counter() - started
                batch = client.read_deployment_by_name("sync-batch/batch")
                children = [
                    r
                    for r in client.read_flow_runs(limit=200)
                    if r.deployment_id == batch.id and r.created and run.created and r.created >= run.created
                ]
        return {
            "wall_s": round(wall, 2),
            "state": run.state_name,
            "message": (run.state.message or "")[:300] if run.state and not run.state.is_completed() else "",
            "batch_runs": len(children),
            "peak_rss_mb": round(sampler.peak_process_mb, 1),
            "peak_rss_total_mb": round(sampler.peak_total_mb, 1),
        }


@contextmanager
def work_pool(home: Path) -> Iterator[WorkPool]:
    """A temporary Prefect server with the outreach-pool deployed from prefect.yaml (stopped at the end)."""
    from flows.prefect_api import process_environment, start_local_server

    server = start_local_server(home / "prefect-server", ui=False)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SOURCES__", "DESTINATION__"))}
        env.update(
            PREFECT_API_URL=server.api_url,
            PREFECT_HOME=str(home / "prefect-client"),
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
            PREFECT_WORKER_QUERY_SECONDS="1",
        )
        _prefect(["work-pool", "create", POOL, "--type", "process"], env)
        _prefect(["gcl", "create", "outreach-sync", "--limit", "1"], env)
        _prefect(["deploy", "--all"], env)
        for name in ("sync-all/quick", "sync-all/full"):  # only the runs the bench starts: no scheduled one
            _prefect(["deployment", "schedule", "clear", name, "--accept-yes"], env)
        with process_environment({"PREFECT_API_URL": server.api_url}):
            yield WorkPool(api_url=server.api_url, env=env)
    finally:
        server.stop()


def worker_settings(sandbox_url: str, keys: list[str], pg_credentials: str, home: Path) -> dict[str, str]:
    """The workers' environment: the API, its keys (JSON list), PostgreSQL, and a home of their own."""
    return {
        "OUTREACH_HOME": str(home),
        "SOURCES__OUTREACH__API_KEYS": json.dumps(keys),
        "SOURCES__OUTREACH__BASE_URL": sandbox_url,
        "SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE": "0",
        "SOURCES__OUTREACH__DESTINATION": "postgres",
        "SOURCES__OUTREACH__PIPELINES_DIR": str(home / "pipelines"),
        "SOURCES__OUTREACH__SPOOL_DIR": str(home / "no-spool"),
        "DESTINATION__POSTGRES__CREDENTIALS": pg_credentials,
    }
