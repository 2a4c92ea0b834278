"""Sustained webhook deliveries per second into the receiver on loopback, and the fsyncs they cost.

Starts ``outreach hooks listen`` in a subprocess (its own process, like
production), fires N signed deliveries with C in flight from an async client,
with a minimal keep-alive HTTP/1.1 client, then checks every one was acknowledged and is in the spool exactly once.
Prints one JSON line; the baseline is the same client against a bare ASGI
app that acknowledges without verifying or spooling, measured in the same run,
so the ratio shows what verification + fsynced spooling cost.

fsyncs are counted outside the spool code: the receiver process runs with ``os.fsync`` and ``os.fdatasync``
wrapped by a counter (every call, data and directory), read before and after each burst. The same number of
deliveries is then sent again at each concurrency of ``--sweep`` (1 = one delivery in flight at a time, as
the service sends to one subscription), since group commit can only share an fsync among deliveries in flight.

    python -m bench.receiver_throughput [--deliveries 3000] [--concurrency 32] [--sweep 1,4]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from bench.http_burst import post_burst
from pipelines.core.ports import free_port
from pipelines.events import spool, spool_reader
from receiver.signature import sign

SECRET = "bench-secret-not-real"


def _bodies(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        payload = {
            "event": "lead.replied",
            "created_at": "2026-03-02T10:00:00+00:00",
            "data": {
                "lead_id": str(uuid.uuid4()),
                "email": f"lead{i}@example.com",
                "campaign_id": str(uuid.uuid4()),
                "first_name": "Ada",
                "company": "Analytical",
                "subject": "Re: hi",
                "reply_type": "interested",
                "reply": "Sounds good",
                "body": "Sounds good\n> hi " + "x" * 400,
            },
        }
        out.append(json.dumps(payload).encode())
    return out


def _blast(port: int, bodies: list[bytes], concurrency: int) -> tuple[float, list[int]]:
    """Sign every body now (well inside the receiver's 300 s tolerance) and fire them."""
    ts = str(int(time.time()))
    headers = {"Content-Type": "application/json", "X-Service-Event": "lead.replied", "X-Service-Timestamp": ts}
    requests = [(body, {**headers, "X-Service-Signature": sign(SECRET, ts, body)}) for body in bodies]
    return post_burst(f"http://127.0.0.1:{port}/webhooks", requests, concurrency=concurrency)


def _start(cmd: list[str], port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"server did not start: {proc.stderr.read().decode() if proc.stderr else ''}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


_BARE_APP = """
import sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"21")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b'{"status":"accepted"}'})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


# `outreach hooks listen` with os.fsync / os.fdatasync counted; SIGUSR1 writes the counts to argv[1] (atomically).
_COUNTING_LISTEN = """
import json, os, signal, sys, threading
calls, lock = {"fsync": 0, "fdatasync": 0}, threading.Lock()
def counting(name, real):
    def call(fd):
        with lock:
            calls[name] += 1
        return real(fd)
    return call
os.fsync, os.fdatasync = counting("fsync", os.fsync), counting("fdatasync", os.fdatasync)
def dump(*_):
    with lock:
        text = json.dumps(calls)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(text)
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
signal.signal(signal.SIGUSR1, dump)
from flows.cli import app
app(args=sys.argv[2:], prog_name="outreach")
"""


def _fsync_calls(proc: subprocess.Popen[bytes], counts: Path) -> int:
    """fsync + fdatasync calls the receiver process has made so far."""
    counts.unlink(missing_ok=True)
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not counts.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the receiver did not report its fsync count")
        time.sleep(0.01)
    calls = json.loads(counts.read_text())
    return int(calls["fsync"]) + int(calls["fdatasync"])


def _data_fsyncs(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
        return int(json.load(resp)["fsyncs"])


def run(deliveries: int, concurrency: int, sweep: list[int]) -> dict[str, Any]:
    rounds = [concurrency, *(c for c in sweep if c != concurrency)]
    bodies = {c: _bodies(deliveries) for c in rounds}
    env = {**os.environ, "SOURCES__OUTREACH__SIGNING_SECRET": SECRET}
    with tempfile.TemporaryDirectory() as tmp:
        spool_dir = Path(tmp) / "spool"
        port = free_port()
        bare_port = free_port()
        bare = _start([sys.executable, "-c", _BARE_APP, str(bare_port)], bare_port, env)
        try:
            _blast(bare_port, bodies[concurrency][:200], concurrency)  # warm-up
            bare_s, bare_status = _blast(bare_port, bodies[concurrency], concurrency)
        finally:
            _stop(bare)
        counts = Path(tmp) / "fsync_counts.json"
        cmd = [
            sys.executable,
            "-c",
            _COUNTING_LISTEN,
            str(counts),
            "hooks",
            "listen",
            "--port",
            str(port),
            "--spool",
            str(spool_dir),
        ]
        proc = _start(cmd, port, env)
        results: dict[int, dict[str, Any]] = {}
        try:
            warm = _bodies(200)
            _blast(port, warm, concurrency)
            for c in rounds:
                calls, data = _fsync_calls(proc, counts), _data_fsyncs(port)
                elapsed, statuses = _blast(port, bodies[c], c)
                calls, data = _fsync_calls(proc, counts) - calls, _data_fsyncs(port) - data
                results[c] = {
                    "concurrency": c,
                    "seconds": round(elapsed, 3),
                    "deliveries_per_s": round(deliveries / elapsed, 1),
                    "acknowledged": statuses.count(200),
                    "fsync_calls": calls,
                    "data_fsyncs": data,
                    "fsyncs_per_delivery": round(calls / deliveries, 3),
                }
        finally:
            _stop(proc)
        snap = spool_reader.snapshot(spool_dir)
        ids = [r["event_id"] for f in (*snap.sealed, *snap.live) for r in spool_reader.read_records(f)]
        expected = {spool.event_id_for(json.loads(b)) for c in rounds for b in bodies[c]}
    main_round = results[concurrency]
    bare_rate = deliveries / bare_s
    return {
        "bench": "receiver_throughput",
        "deliveries": deliveries,
        "concurrency": concurrency,
        "acknowledged": main_round["acknowledged"],
        "spooled_exactly_once": len(ids) == len(set(ids)) == len(expected) + 200 and expected <= set(ids),
        "seconds": main_round["seconds"],
        "deliveries_per_s": main_round["deliveries_per_s"],
        "baseline_bare_asgi_per_s": round(bare_rate, 1),
        "ratio_to_baseline": round(main_round["deliveries_per_s"] / bare_rate, 3),
        "baseline_ok": bare_status.count(200) == deliveries,
        "fsync_calls": main_round["fsync_calls"],
        "fsyncs_per_delivery": main_round["fsyncs_per_delivery"],
        "sweep": [results[c] for c in sorted(results)],
        "cpu_count": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sweep", default="1,4", help="more concurrencies to measure fsyncs at (comma-separated)")
    args = parser.parse_args()
    sweep = [int(c) for c in args.sweep.split(",") if c.strip()]
    print(json.dumps(run(args.deliveries, args.concurrency, sweep)))


if __name__ == "__main__":
    main()
