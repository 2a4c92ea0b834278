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
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.snapshot import Snapshot, take_snapshot
from bench.soak_checks import BodyCache, check_truth, duplicates
from bench.soak_processes import Cli, CliRun, ReaderProcess, cli_env, reader_delta, sync_figures, tests_passed

logger = logging.getLogger(__name__)

MEMORY_RATIO_MAX = 1.10  # "flat": the last rounds' median peak within 10% of the first rounds'
MEMORY_WINDOW = 10


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
        cli = Cli(cli_env(sandbox.base_url, list(keys.values()), workdir, config.request_timeout_s), workdir)
        cache = BodyCache(sandbox.http, sandbox.base_url)
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
