"""Sustained webhook deliveries per second into the receiver on loopback.

Starts ``outreach hooks listen`` in a subprocess (its own process, like
production), fires N signed deliveries with C in flight from an async client,
with a minimal keep-alive HTTP/1.1 client, then checks every one was acknowledged and is in the spool exactly once.
Prints one JSON line; the baseline is the same client against a bare ASGI
app that acknowledges without verifying or spooling, measured in the same run,
so the ratio shows what verification + fsynced spooling cost.

    python -m bench.receiver_throughput [--deliveries 3000] [--concurrency 32]
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
from pipelines import spool
from receiver.signature import sign

SECRET = "bench-secret-not-real"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bodies(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        payload = {
            "event": "lead.replied",
            "created_at": "2026-03-02T10:00:00+00:00",
            "data": {"lead_id": str(uuid.uuid4()), "email": f"lead{i}@example.com", "campaign_id": str(uuid.uuid4()),
                     "first_name": "Ada", "company": "Analytical", "subject": "Re: hi", "reply_type": "interested",
                     "reply": "Sounds good", "body": "Sounds good\n> hi " + "x" * 400},
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
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json"), (b"content-length", b"21")]})
    await send({"type": "http.response.body", "body": b'{"status":"accepted"}'})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def run(deliveries: int, concurrency: int) -> dict[str, Any]:
    bodies = _bodies(deliveries)
    env = {**os.environ, "SOURCES__OUTREACH__SIGNING_SECRET": SECRET}
    with tempfile.TemporaryDirectory() as tmp:
        spool_dir = Path(tmp) / "spool"
        port = _free_port()
        bare_port = _free_port()
        bare = _start([sys.executable, "-c", _BARE_APP, str(bare_port)], bare_port, env)
        try:
            _blast(bare_port, bodies[:200], concurrency)  # warm-up
            bare_s, bare_status = _blast(bare_port, bodies, concurrency)
        finally:
            _stop(bare)
        cmd = [sys.executable, "-m", "flows.cli", "hooks", "listen", "--port", str(port), "--spool", str(spool_dir)]
        proc = _start(cmd, port, env)
        try:
            warm = _bodies(200)
            _blast(port, warm, concurrency)
            elapsed, statuses = _blast(port, bodies, concurrency)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
                health = json.load(resp)
        finally:
            _stop(proc)
        snap = spool.snapshot(spool_dir)
        ids = [r["event_id"] for f in (*snap.sealed, *snap.live) for r in spool.read_records(f)]
        expected = {spool.event_id_for(json.loads(b)) for b in bodies}
    receiver_rate = deliveries / elapsed
    bare_rate = deliveries / bare_s
    return {
        "bench": "receiver_throughput",
        "deliveries": deliveries,
        "concurrency": concurrency,
        "acknowledged": statuses.count(200),
        "spooled_exactly_once": len(ids) == len(set(ids)) == len(expected) + 200 and expected <= set(ids),
        "seconds": round(elapsed, 3),
        "deliveries_per_s": round(receiver_rate, 1),
        "baseline_bare_asgi_per_s": round(bare_rate, 1),
        "ratio_to_baseline": round(receiver_rate / bare_rate, 3),
        "baseline_ok": bare_status.count(200) == deliveries,
        "fsyncs_per_delivery": round(health["fsyncs"] / (deliveries + 200), 3),
        "cpu_count": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    print(json.dumps(run(args.deliveries, args.concurrency)))


if __name__ == "__main__":
    main()
