"""The demo's alerting step: a local JSON webhook sink the alerts notify, and the lines the demo prints.

The demo's sandbox runs the deliverability scenario (sandbox/README.md), so its first build opens a real
`mailbox_bounce_rate` incident; the notification goes through Apprise's `json://` target to the sink started
here, exactly as it would go to a team's webhook.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SCENARIO = "deliverability"


class Sink:
    """A loopback HTTP server that records every JSON body POSTed to it and answers 200. `delay_s` answers
    late; `status` other than 200 refuses (counted in `refused`, not received); `hold()` makes it keep each
    request open without an answer, never received, until `release()` (`holding` is set when one arrives)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.received: list[dict[str, Any]] = []
        self.refused = 0
        self.status = 200
        self.holding = threading.Event()
        self._released = threading.Event()
        self._released.set()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not sink._released.is_set():
                    sink.holding.set()
                    sink._released.wait(120)
                    return  # closed without an answer: the sender never learns it arrived
                if delay_s:
                    time.sleep(delay_s)
                if sink.status != 200:
                    sink.refused += 1
                    self.send_response(sink.status)
                    self.end_headers()
                    return
                sink.received.append(json.loads(body or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:  # the demo prints what matters itself
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, name="alert-sink", daemon=True)

    def hold(self) -> None:
        self.holding.clear()
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    @property
    def url(self) -> str:
        """Its Apprise URL (a generic JSON webhook)."""
        return f"json://127.0.0.1:{self.port}/hook"

    def titles(self, word: str = "") -> list[str]:
        return [str(m.get("title")) for m in self.received if word in str(m.get("title"))]


@contextmanager
def sink(delay_s: float = 0.0) -> Iterator[Sink]:
    s = Sink(delay_s)
    s.thread.start()
    try:
        yield s
    finally:
        s.release()
        s.server.shutdown()
        s.server.server_close()


@contextmanager
def alert_sink() -> Iterator[Sink]:
    """A sink that is this process's only alert target (ALERTS__TARGETS) while the block runs."""
    saved = os.environ.get("ALERTS__TARGETS")
    with sink() as s:
        os.environ["ALERTS__TARGETS"] = json.dumps([s.url])
        try:
            yield s
        finally:
            if saved is None:
                os.environ.pop("ALERTS__TARGETS", None)
            else:
                os.environ["ALERTS__TARGETS"] = saved


def alerts_text(warehouse: Path, received: Sink) -> str:
    """The open incidents of the warehouse and the notifications the sink received."""
    from alerts.db import connect
    from alerts.store import list_incidents
    from pipelines.warehouse.destination import warehouse_target

    with connect(warehouse_target(duckdb_path=warehouse)) as db:
        rows = list_incidents(db)
    bounce = [r for r in rows if r["rule"] == "mailbox_bounce_rate"]
    lines = [f"Alerts: {len(rows)} open incident(s) (outreach alerts --duckdb {warehouse} lists them)"]
    for r in bounce:
        lines.append(f"  {r['rule']} {r['subject_label']}: {r['detail']} ({float(r['value']):.1%} > 2%)")
    lines.append(f"  the local JSON webhook {received.url} received {len(received.received)} notification(s), e.g.:")
    lines += [f"    {title}" for title in (received.titles("mailbox_bounce_rate") or received.titles())[:3]]
    return "\n".join(lines)
