"""The soak's processes: the real CLI in a child process (with its peak RSS), and the BI reader
(`bench.bi_reader`) in its own, with what each reports."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import ROOT, with_checkout_on_path
from bench.peak import cli_with_peak, split_peak

PEAK_MARK = "SOAK_PEAK_RSS_MB="
CLI_TIMEOUT_S = 600
READER_START_S = 60

_CLI = cli_with_peak(PEAK_MARK)  # `outreach` in a child process, its peak RSS printed at exit


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
        peak, lines = split_peak(proc.stderr, PEAK_MARK)
        return CliRun(round(time.perf_counter() - started, 2), proc.returncode, peak, proc.stdout, lines)


def cli_env(base_url: str, keys: Sequence[str], home: Path, request_timeout_s: float) -> dict[str, str]:
    """The environment of every CLI call: keys as a JSON list (the documented way for several), no pacing
    (the sandbox has no limit), a short request time-out (so held requests are real time-outs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(
        SOURCES__OUTREACH__API_KEYS=json.dumps(list(keys)),
        SOURCES__OUTREACH__BASE_URL=base_url,
        SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0",
        SOURCES__OUTREACH__REQUEST_TIMEOUT=str(request_timeout_s),
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
