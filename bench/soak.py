"""Soak: many quick syncs in a row under faults, a model build after each, a BI reader throughout.

    python -m bench.soak [--rounds 50] [--scale small] [--workspaces 2] [--advance-s 7200] [--fault-rate 0.10]
                         [--workdir DIR]

One sandbox (out of process, `--workspaces` workspaces, rate limit off) and one DuckDB warehouse. Setup: a
full sync and a model build with the real CLI (`outreach sync`, `outreach models`, each in its own process),
then a BI reader process (`bench/bi_reader.py`) holding the BI file open read-only and querying it every
0.2 s until the end. Then `--rounds` times:

1. the sandbox's clock moves `--advance-s` simulated seconds (sends, opens, replies, bounces, mailbox counters);
2. faults are switched on for `--fault-rate` of the API calls (`POST /_sandbox/faults`, a new seed each round):
   70% of them errors (429, 500, 502, 503), 20% truncated JSON bodies, 10% held past the client's time-out
   (`request_timeout` is 2 s here, the hang 2.5 s: a real read time-out);
3. `outreach sync` (quick) runs; the sandbox counts its requests and 429s; its summary gives the retries;
4. faults off, the warehouse is compared with the API (`bench.truth` against an independent snapshot of each
   workspace, as the bench scenarios do; quick's documented blind spots, `is_read` and campaigns whose
   list fingerprint did not move, are tolerated and counted), every stored reply body with the API's, and
   every table is searched for duplicates (a primary key repeated; more than one current scd2 row per id; the
   same scd2 version twice);
5. `outreach models` builds and publishes the BI file; the reader's errors of the round are collected.

Each round prints one JSON line (stdout); the last line is the summary (``"summary": true``) with the targets:
0 reader errors, 0 duplicates, 0 truth failures, every sync and build passed, the reader saw every publish, and
flat memory (median peak RSS of the sync process, and of the models process, over the last 10 rounds / the first
10 at most `MEMORY_RATIO_MAX`; the reader's RSS, the one process living through the soak, is reported beside).
Exit status 1 when a target is missed. `python -m bench --scenario soak` runs it and stores the lines in
results.json / RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import httpx

from bench import ROOT, with_checkout_on_path
from bench.bound import unchanged_fingerprints
from bench.snapshot import Snapshot, take_snapshot
from bench.truth import WAREHOUSE_ALIAS, check_warehouse, connect_warehouse

logger = logging.getLogger(__name__)

PEAK_MARK = "SOAK_PEAK_RSS_MB="
MEMORY_RATIO_MAX = 1.10  # "flat": the last rounds' median peak within 10% of the first rounds'
MEMORY_WINDOW = 10
CLI_TIMEOUT_S = 600
READER_START_S = 60

# The CLI itself (flows.cli's typer app, what `outreach` runs), with its peak RSS (VmHWM) printed at exit.
_CLI = (
    "import atexit, sys\n"
    "from bench.peak import peak_rss_mb\n"
    f"atexit.register(lambda: print('{PEAK_MARK}' + str(peak_rss_mb()), file=sys.stderr, flush=True))\n"
    "from flows.cli import app\n"
    "sys.argv = ['outreach', *sys.argv[1:]]\n"
    "app()\n"
)

# Primary keys of the raw tables (pipelines/SCHEMA.md); scd2 tables are checked apart.
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "workspaces": ("id",),
    "campaign_recipients": ("id",),
    "campaign_stats": ("campaign_id",),
    "campaign_variants": ("campaign_id", "index"),
    "campaign_daily_sends": ("campaign_id", "date"),
    "replies": ("id",),
    "webhook_event_types": ("workspace_id", "key"),
    "sync_state": ("workspace_id",),
    "events": ("event_id",),
}
SCD2_TABLES = ("campaigns", "email_accounts")


@dataclass(frozen=True)
class SoakConfig:
    """What a soak runs: rounds, data size, faults, the reader's pace."""

    rounds: int = 50
    scale: str = "small"
    workspaces: int = 2
    advance_s: int = 7200
    fault_rate: float = 0.10
    request_timeout_s: float = 2.0
    hang_ms: int = 2500
    reader_interval_s: float = 0.2
    seed: int = 7

    def faults(self, round_no: int) -> dict[str, Any]:
        """The round's `/_sandbox/faults` body: errors (429 and 5xx), truncation, time-outs; its own seed."""
        return {
            "error_rate": round(self.fault_rate * 0.7, 4),
            "statuses": [429, 500, 502, 503],
            "truncate_rate": round(self.fault_rate * 0.2, 4),
            "timeout_rate": round(self.fault_rate * 0.1, 4),
            "hang_ms": self.hang_ms,
            "seed": self.seed * 1000 + round_no,
        }


@dataclass
class CliRun:
    """One `outreach ...` process: wall seconds, exit code, peak RSS, its output."""

    wall_s: float
    exit: int
    peak_rss_mb: float | None
    stdout: str
    stderr: list[str]

    def error(self) -> str | None:
        if self.exit == 0:
            return None
        return (self.stderr[-1] if self.stderr else f"exit {self.exit}")[:400]


class Cli:
    """Runs the real CLI in a child process with the soak's settings in its environment."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd

    def run(self, *args: str) -> CliRun:
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _CLI, *args],
                env=self.env,
                cwd=str(self.cwd),
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            return CliRun(round(time.perf_counter() - started, 2), -9, None, "", [f"timed out after {exc.timeout} s"])
        peak = None
        lines = []
        for line in proc.stderr.splitlines():
            if line.startswith(PEAK_MARK):
                peak = float(line[len(PEAK_MARK) :])
            elif line.strip():
                lines.append(line.strip())
        return CliRun(round(time.perf_counter() - started, 2), proc.returncode, peak, proc.stdout, lines)


def cli_env(base_url: str, keys: Sequence[str], home: Path, config: SoakConfig) -> dict[str, str]:
    """The environment of every CLI call: keys as a JSON list (the documented way for several), no pacing
    (the sandbox has no limit), a short request time-out (so held requests are real time-outs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(
        SOURCES__OUTREACH__API_KEYS=json.dumps(list(keys)),
        SOURCES__OUTREACH__BASE_URL=base_url,
        SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0",
        SOURCES__OUTREACH__REQUEST_TIMEOUT=str(config.request_timeout_s),
        SOURCES__OUTREACH__PIPELINES_DIR=str(home / "pipelines"),
        SOURCES__OUTREACH__SPOOL_DIR=str(home / "no-spool"),
    )
    return with_checkout_on_path(env)


_RETRIES = re.compile(r"\bretries (\d+)\b")
_DEFERRED = re.compile(r"\bdeferred (\d+)\b")
_TESTS = re.compile(r"data tests: (\d+)/(\d+) passed")


def sync_figures(stdout: str) -> dict[str, int]:
    """Retries and deferred reply bodies from the sync's printed summary (the sandbox counts requests)."""
    retries = _RETRIES.search(stdout)
    return {
        "retries": int(retries.group(1)) if retries else -1,
        "bodies_deferred": sum(int(n) for n in _DEFERRED.findall(stdout)),
    }


def tests_passed(stdout: str) -> str | None:
    found = _TESTS.search(stdout)
    return f"{found.group(1)}/{found.group(2)}" if found else None


# --- the reader ---------------------------------------------------------------------------------------


class ReaderProcess:
    """`bench.bi_reader` in its own process; its counters read from the status file it rewrites each tick."""

    def __init__(self, bi_file: Path, status: Path, interval: float) -> None:
        self.status = status
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.bi_reader", str(bi_file), str(status), "--interval", str(interval)],
            cwd=str(ROOT),
            env=with_checkout_on_path(os.environ),
        )

    def counters(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.status.read_text()))
        except (FileNotFoundError, ValueError):
            return {}

    def wait_reading(self, timeout: float = READER_START_S) -> None:
        """Until the reader has queried the BI file once (its first open is not a soak round's)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the BI reader exited with {self.proc.returncode}")
            if self.counters().get("queries", 0) > 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"the BI reader did not read the BI file within {timeout:.0f} s: {self.counters()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> dict[str, Any]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.counters()


def reader_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The reader's counts during one round."""
    keys = ("queries", "opens", "lock_errors", "read_errors", "errors")
    delta: dict[str, Any] = {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in keys}
    delta["publishes_seen"] = int(after.get("publishes_seen", 0))
    new_examples = after.get("examples", [])[len(before.get("examples", [])) :]
    if new_examples:
        delta["examples"] = new_examples
    return delta


# --- checks on the warehouse ----------------------------------------------------------------------------


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "select table_name from information_schema.tables where table_catalog = ? and table_schema = 'outreach'",
        [WAREHOUSE_ALIAS],
    ).fetchall()
    return {r[0] for r in rows}


def duplicates(db: Path) -> dict[str, int]:
    """Rows beyond the first per primary key, per table; scd2: ids with more than one current row, and
    versions (id, valid from) stored twice. Only non-zero counts are returned."""
    con = connect_warehouse(db)
    try:
        present = _tables(con)
        found: dict[str, int] = {}
        for table, key in TABLE_KEYS.items():
            if table not in present:
                continue
            cols = ", ".join(f'"{k}"' for k in key)
            found[table] = _one(
                con, f"select coalesce(sum(n - 1), 0) from (select count(*) n from outreach.{table} group by {cols})"
            )
        for table in SCD2_TABLES:
            if table not in present:
                continue
            found[f"{table} current"] = _one(
                con,
                f"select coalesce(sum(n - 1), 0) from (select count(*) n from outreach.{table} "
                "where _dlt_valid_to is null group by id)",
            )
            found[f"{table} versions"] = _one(
                con,
                f"select coalesce(sum(n - 1), 0) from (select count(*) n from outreach.{table} "
                "group by id, _dlt_valid_from)",
            )
        return {k: v for k, v in found.items() if v}
    finally:
        con.close()


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


class BodyCache:
    """Reply bodies from the API, each fetched once (a body never changes)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.bodies: dict[str, Any] = {}

    def body(self, key: str, reply_id: str) -> Any:
        if reply_id not in self.bodies:
            response = httpx.get(
                f"{self.base_url}/replies/{reply_id}", headers={"Authorization": f"Bearer {key}"}, timeout=30
            )
            self.bodies[reply_id] = response.raise_for_status().json()["data"]["body"]
        return self.bodies[reply_id]


def check_bodies(db: Path, snaps: dict[str, Snapshot], keys: dict[str, str], cache: BodyCache) -> dict[str, int]:
    """Stored reply bodies against the API's: how many are null, how many differ."""
    con = connect_warehouse(db)
    try:
        rows = con.execute("select workspace_id, id, body from outreach.replies where deleted_at is null").fetchall()
    finally:
        con.close()
    null = differ = 0
    for workspace_id, reply_id, body in rows:
        if body is None:
            null += 1
        elif workspace_id in snaps and body != cache.body(keys[workspace_id], str(reply_id)):
            differ += 1
    return {"bodies_null": null, "bodies_differ": differ}


def check_truth(
    db: Path,
    snaps: dict[str, Snapshot],
    previous: dict[str, Snapshot] | None,
    keys: dict[str, str],
    cache: BodyCache,
    *,
    bodies_deferred: int,
) -> dict[str, Any]:
    """The warehouse against the API, every workspace: `bench.truth` (quick's blind spots tolerated when
    there is a previous snapshot) and the reply bodies. ok = no mismatch, no body differing, no body
    missing beyond those the sync said it deferred."""
    out: dict[str, Any] = {"ok": True, "tolerated": 0, "mismatches": []}
    for workspace_id, snap in snaps.items():
        before = (previous or {}).get(workspace_id)
        tolerate = unchanged_fingerprints(before, snap) if before is not None else frozenset()
        report = check_warehouse(db, snap, ignore_is_read=before is not None, tolerate_campaigns=tolerate)
        out["tolerated"] += report.tolerated
        if not report.ok:
            out["ok"] = False
            out["mismatches"] += [f"{workspace_id}: {line}" for line in report.summary().splitlines()
                                  if "MISMATCH" in line or line.startswith("    e.g.")]  # fmt: skip
    bodies = check_bodies(db, snaps, keys, cache)
    out.update(bodies)
    if bodies["bodies_differ"] or bodies["bodies_null"] > bodies_deferred:
        out["ok"] = False
    if not out["mismatches"]:
        del out["mismatches"]
    return out


# --- the soak -----------------------------------------------------------------------------------------


@dataclass
class SoakRun:
    """Every round's record and the summary."""

    config: SoakConfig
    setup: dict[str, Any] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    reader_final: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        return summarise(self)


def workspace_keys(sandbox: Any, n: int) -> dict[str, str]:
    """workspace id -> its rw admin key, the first `n` workspaces."""
    keys: dict[str, str] = {}
    for entry in sandbox.keys():
        if entry["level"] == "rw" and entry["role"] == "admin":
            keys.setdefault(entry["workspace_id"], entry["key"])
    if len(keys) < n:
        raise RuntimeError(f"the sandbox has {len(keys)} workspaces, {n} were asked for")
    return dict(list(keys.items())[:n])


def take_snapshots(base_url: str, keys: dict[str, str]) -> dict[str, Snapshot]:
    return {workspace_id: take_snapshot(base_url, key) for workspace_id, key in keys.items()}


def run_soak(
    config: SoakConfig,
    workdir: Path,
    *,
    emit: Callable[[dict[str, Any]], None] = lambda record: None,
) -> SoakRun:
    """Set up, run every round, stop the reader; `emit` gets each round's record as it ends."""
    from sandbox.server import SandboxProcess

    started = time.perf_counter()
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "outreach.duckdb"
    run = SoakRun(config)
    sandbox = SandboxProcess(scale=config.scale, seed=config.seed, rate_limit=0, workspaces=config.workspaces)
    sandbox.start()
    reader: ReaderProcess | None = None
    try:
        keys = workspace_keys(sandbox, config.workspaces)
        cli = Cli(cli_env(sandbox.base_url, list(keys.values()), workdir, config), workdir)
        cache = BodyCache(sandbox.base_url)
        run.setup = _setup(cli, db, sandbox, keys, cache)
        emit({"setup": True, **run.setup})
        if run.setup["sync"]["exit"] != 0 or run.setup["models"]["exit"] != 0:
            return run
        reader = ReaderProcess(db.with_name(f"{db.stem}_bi.duckdb"), workdir / "reader.json", config.reader_interval_s)
        reader.wait_reading()
        previous = take_snapshots(sandbox.base_url, keys)
        for round_no in range(1, config.rounds + 1):
            record, previous = _round(round_no, config, cli, db, sandbox, keys, cache, reader, previous)
            run.rounds.append(record)
            emit(record)
    finally:
        if reader is not None:
            run.reader_final = reader.stop()
        sandbox.stop()
        run.wall_s = round(time.perf_counter() - started, 1)
    return run


def _setup(cli: Cli, db: Path, sandbox: Any, keys: dict[str, str], cache: BodyCache) -> dict[str, Any]:
    """A full sync and a model build (no faults), and the warehouse checked."""
    sync = cli.run("sync", "--mode", "full", "--duckdb", str(db), "--no-progress")
    out: dict[str, Any] = {"sync": _cli_record(sync)}
    if sync.exit == 0:
        snaps = take_snapshots(sandbox.base_url, keys)
        out["duplicates"] = duplicates(db)
        out["truth"] = check_truth(
            db, snaps, None, keys, cache, bodies_deferred=sync_figures(sync.stdout)["bodies_deferred"]
        )
    models = cli.run("models", "--duckdb", str(db))
    out["models"] = {**_cli_record(models), "tests": tests_passed(models.stdout)}
    return out


def _cli_record(run: CliRun) -> dict[str, Any]:
    record: dict[str, Any] = {"wall_s": run.wall_s, "exit": run.exit, "peak_rss_mb": run.peak_rss_mb}
    if run.exit != 0:
        record["error"] = run.error()
    return record


def _round(
    round_no: int,
    config: SoakConfig,
    cli: Cli,
    db: Path,
    sandbox: Any,
    keys: dict[str, str],
    cache: BodyCache,
    reader: ReaderProcess,
    previous: dict[str, Snapshot],
) -> tuple[dict[str, Any], dict[str, Snapshot]]:
    started = time.perf_counter()
    reader_before = reader.counters()
    now = sandbox.advance(config.advance_s)
    sandbox.set_faults(**config.faults(round_no))
    sandbox.reset_metrics()
    sync = cli.run("sync", "--duckdb", str(db), "--no-progress")
    metrics = sandbox.metrics()
    sandbox.set_faults()
    by_status = {str(k): int(v) for k, v in (metrics.get("by_status") or {}).items()}
    figures = sync_figures(sync.stdout)
    record: dict[str, Any] = {
        "round": round_no,
        "service_time": now,
        "sync_wall_s": sync.wall_s,
        "sync_exit": sync.exit,
        "sync_peak_rss_mb": sync.peak_rss_mb,
        "requests": int(metrics.get("requests", 0)),
        "faulted": sum(n for status, n in by_status.items() if status != "200"),
        "status_429": by_status.get("429", 0),
        "retries": figures["retries"],
        "bodies_deferred": figures["bodies_deferred"],
    }
    if sync.exit != 0:
        record["sync_error"] = sync.error()
    snaps = take_snapshots(sandbox.base_url, keys)
    found = duplicates(db)
    record["duplicates"] = sum(found.values())
    if found:
        record["duplicates_by_table"] = found
    truth = check_truth(db, snaps, previous, keys, cache, bodies_deferred=figures["bodies_deferred"])
    record["truth_ok"] = truth.pop("ok")
    record["truth"] = truth
    models = cli.run("models", "--duckdb", str(db))
    record.update(
        models_exit=models.exit,
        models_wall_s=models.wall_s,
        models_peak_rss_mb=models.peak_rss_mb,
        models_tests=tests_passed(models.stdout),
    )
    if models.exit != 0:
        record["models_error"] = models.error()
    time.sleep(2 * config.reader_interval_s)  # the reader's ticks after the publish belong to this round
    delta = reader_delta(reader_before, reader.counters())
    record["reader"] = delta
    record["reader_rss_mb"] = reader.counters().get("rss_mb")
    record["reader_alive"] = reader.alive()
    record["round_wall_s"] = round(time.perf_counter() - started, 1)
    logger.info(
        "round %d: sync %.1f s (%s), %d requests, %d faulted, truth %s, dup %d, models %s, reader errors %d",
        round_no, sync.wall_s, sync.exit, record["requests"], record["faulted"], record["truth_ok"],
        record["duplicates"], models.exit, delta["errors"],
    )  # fmt: skip
    return record, snaps


def _median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return round(statistics.median(found), 1) if found else None


def memory_ratio(values: Sequence[float | None], window: int = MEMORY_WINDOW) -> dict[str, Any]:
    """Median of the last `window` values over the median of the first `window` (window = at most half)."""
    n = max(1, min(window, len(values) // 2))
    first, last = _median(values[:n]), _median(values[-n:])
    ratio = round(last / first, 3) if first and last else None
    return {"window": n, "first_median_mb": first, "last_median_mb": last, "ratio": ratio}


def summarise(run: SoakRun) -> dict[str, Any]:
    """Totals over the rounds and whether each target was met."""
    rounds = run.rounds
    sync_mem = memory_ratio([r["sync_peak_rss_mb"] for r in rounds])
    models_mem = memory_ratio([r["models_peak_rss_mb"] for r in rounds])
    reader_mem = memory_ratio([r.get("reader_rss_mb") for r in rounds])
    reader_errors = sum(r["reader"]["errors"] for r in rounds)
    lock_errors = sum(r["reader"]["lock_errors"] for r in rounds)
    final = run.reader_final
    setup_ok = bool(
        run.setup.get("sync", {}).get("exit") == 0
        and run.setup.get("models", {}).get("exit") == 0
        and run.setup.get("truth", {}).get("ok")
        and not run.setup.get("duplicates")
    )
    targets = {
        "all_rounds_ran": len(rounds) == run.config.rounds and setup_ok,
        "syncs_ok": all(r["sync_exit"] == 0 for r in rounds),
        "reader_errors_0": reader_errors == 0 and int(final.get("errors", 0)) == 0,
        "reader_saw_every_publish": int(final.get("publishes_seen", 0)) >= len(rounds) + 1,
        "duplicates_0": all(r["duplicates"] == 0 for r in rounds),
        "truth_failures_0": all(r["truth_ok"] for r in rounds),
        "builds_ok": all(r["models_exit"] == 0 for r in rounds),
        "memory_flat": all(m["ratio"] is not None and m["ratio"] <= MEMORY_RATIO_MAX for m in (sync_mem, models_mem)),
    }
    c = run.config
    return {
        "summary": True,
        "rounds": len(rounds),
        "scale": c.scale,
        "workspaces": c.workspaces,
        "advance_s": c.advance_s,
        "fault_rate": c.fault_rate,
        "request_timeout_s": c.request_timeout_s,
        "reader_interval_s": c.reader_interval_s,
        "wall_s": run.wall_s,
        "setup": run.setup,
        "sync_wall_s_median": _median([r["sync_wall_s"] for r in rounds]),
        "sync_wall_s_max": max((r["sync_wall_s"] for r in rounds), default=None),
        "models_wall_s_median": _median([r["models_wall_s"] for r in rounds]),
        "requests": sum(r["requests"] for r in rounds),
        "faulted": sum(r["faulted"] for r in rounds),
        "status_429": sum(r["status_429"] for r in rounds),
        "retries": sum(max(0, r["retries"]) for r in rounds),
        "sync_failures": sum(r["sync_exit"] != 0 for r in rounds),
        "duplicates": sum(r["duplicates"] for r in rounds),
        "truth_failures": sum(not r["truth_ok"] for r in rounds),
        "truth_tolerated": sum(r["truth"]["tolerated"] for r in rounds),
        "bodies_null_max": max((r["truth"]["bodies_null"] for r in rounds), default=0),
        "model_build_failures": sum(r["models_exit"] != 0 for r in rounds),
        "reader_queries": int(final.get("queries", 0)),
        "reader_opens": int(final.get("opens", 0)),
        "reader_publishes_seen": int(final.get("publishes_seen", 0)),
        "reader_errors": reader_errors,
        "reader_lock_errors": lock_errors,
        "reader_examples": final.get("examples", []),
        "sync_rss": sync_mem,
        "models_rss": models_mem,
        "reader_rss": reader_mem,
        "memory_ratio_max": MEMORY_RATIO_MAX,
        "targets": targets,
        "ok": all(targets.values()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=(__doc__ or "").splitlines()[0])
    defaults = SoakConfig()
    parser.add_argument("--rounds", type=int, default=defaults.rounds)
    parser.add_argument("--scale", default=defaults.scale, choices=["tiny", "small", "medium", "large"])
    parser.add_argument("--workspaces", type=int, default=defaults.workspaces)
    parser.add_argument("--advance-s", type=int, default=defaults.advance_s, help="simulated seconds per round")
    parser.add_argument("--fault-rate", type=float, default=defaults.fault_rate, help="share of API calls faulted")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the warehouse here (default: a temp dir)")
    parser.add_argument("-v", "--verbose", action="store_true", help="a log line per round on stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s")  # fmt: skip
    logging.getLogger("httpx").setLevel(logging.WARNING)
    config = SoakConfig(rounds=args.rounds, scale=args.scale, workspaces=args.workspaces, advance_s=args.advance_s,
                        fault_rate=args.fault_rate, seed=args.seed)  # fmt: skip
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="soak-"))
    try:
        run = run_soak(config, workdir, emit=lambda record: print(json.dumps(record), flush=True))
        summary = run.summary()
        print(json.dumps(summary), flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
