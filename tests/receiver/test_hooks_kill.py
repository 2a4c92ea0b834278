"""The receiver SIGKILLed mid-burst: every acknowledged event is loaded, nothing torn is."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from test_hooks_support import SECRET, event_rows, load, payload, signed

from pipelines.events import spool


def _start_receiver(spool_dir: Path, cwd: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`outreach hooks listen --port 0`: it binds a free port itself and names it in its first line (a port picked
    here and handed over could be taken by another test's server meanwhile)."""
    env = {**os.environ, "SOURCES__OUTREACH__SIGNING_SECRET": SECRET}
    cmd = [sys.executable, "-m", "flows.cli", "hooks", "listen", "--port", "0", "--spool", str(spool_dir)]
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    first = proc.stdout.readline().decode()  # "outreach hooks: receiving at http://127.0.0.1:<port>/webhooks, ..."
    match = re.search(r"http://127\.0\.0\.1:(\d+)/webhooks", first)
    if match is None:
        proc.kill()
        raise AssertionError(f"receiver did not start: {first!r} {proc.communicate()[1].decode()[-2000:]}")
    port = int(match.group(1))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                return proc, port
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"receiver did not start: {proc.communicate()[1].decode()[-2000:]}")


def test_sigkill_mid_burst_loses_no_acknowledged_event_and_loads_nothing_torn(tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    proc, port = _start_receiver(spool_dir, Path(__file__).resolve().parents[2])
    url = f"http://127.0.0.1:{port}/webhooks"
    acked: set[str] = set()
    sent = 0
    lock = threading.Lock()
    stop = threading.Event()

    def sender(worker: int) -> None:
        nonlocal sent
        with httpx.Client(timeout=5) as client:
            i = 0
            while not stop.is_set():
                body = json.dumps(payload(email=f"w{worker}-{i}@example.com")).encode()
                i += 1
                try:
                    resp = client.post(url, content=body, headers=signed(body))
                except httpx.TransportError:
                    return  # the receiver is gone: this delivery was never acknowledged
                with lock:
                    sent += 1
                    if resp.status_code == 200:
                        acked.add(resp.json()["event_id"])

    threads = [threading.Thread(target=sender, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(acked) < 100 and time.monotonic() < deadline:  # kill only once the burst is in full flow
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # mid-burst: deliveries are in flight
    proc.wait(timeout=10)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    assert len(acked) >= 100, "the burst did not get going before the kill"

    # The dead receiver left its live file open; add a torn half-record as a write cut mid-way would.
    live = sorted(spool_dir.glob("*.jsonl.open"))
    assert live, "SIGKILL should leave the live file unsealed"
    with open(live[-1], "ab") as fh:
        fh.write(spool.encode_record(spool.make_record(payload(email="torn@example.com")))[:57])

    loaded = load(tmp_path, spool_dir)
    rows = event_rows(tmp_path, "event_id, email")
    ids = {r[0] for r in rows}
    assert acked <= ids, f"{len(acked - ids)} acknowledged events lost"
    assert len(rows) == len(ids) == loaded
    assert "torn@example.com" not in {r[1] for r in rows}
    assert not list(spool_dir.glob("*.jsonl.open")) and not list(spool_dir.glob("*.jsonl"))  # sealed, loaded, done

    # A restarted receiver on the same spool keeps going; a second load adds only the new event.
    proc, port = _start_receiver(spool_dir, Path(__file__).resolve().parents[2])
    try:
        body = json.dumps(payload(email="after@example.com")).encode()
        assert httpx.post(f"http://127.0.0.1:{port}/webhooks", content=body, headers=signed(body)).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    # uvicorn shuts down gracefully on SIGTERM, then re-raises it (exit -15)
    assert proc.returncode in (0, -signal.SIGTERM), err.decode()[-2000:]
    assert not list(spool_dir.glob("*.jsonl.open")), "a graceful stop seals the live file"
    assert SECRET.encode() not in out + err
    assert load(tmp_path, spool_dir) == 1
    assert len(event_rows(tmp_path)) == len(ids) + 1
