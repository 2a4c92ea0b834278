"""Webhook deliveries from a real sandbox to a real loopback receiver: signatures, retries, pausing."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest


class Receiver:
    """A loopback HTTP server recording deliveries; answers with `status` (settable)."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.status = 200
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.got.append((dict(self.headers), body))
                self.send_response(outer.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _rw(sb: Any) -> tuple[httpx.Client, str]:
    k = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    return httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {k['key']}"}), k["signing_secret"]


def _wait(sb: Any, timeout: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        body = httpx.get(sb.url + "/_sandbox/hooks/deliveries").json()
        if body["pending"] == 0 or time.monotonic() > deadline:
            return list(body["data"])
        time.sleep(0.05)


def test_signed_deliveries_verify(make_sandbox: Any, receiver: Receiver) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, insecure_hooks=True)
    c, secret = _rw(sb)
    for event in (
        "lead.replied",
        "lead.opened",
        "lead.bounced",
        "lead.clicked",
        "lead.unsubscribed",
        "campaign.completed",
    ):
        assert c.post("/hooks", json={"target_url": receiver.url, "event": event}).status_code == 201
    started = time.time()
    sb.advance(3 * 86_400)
    records = _wait(sb)
    assert records and all(r["status"] == "delivered" for r in records)
    assert len(receiver.got) == len(records)
    events = set()
    for headers, body in receiver.got:
        ts = headers["X-Service-Timestamp"]
        expected = "v1=" + hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["X-Service-Signature"], expected)
        assert abs(int(ts) - started) < 120  # real wall-clock time, not simulation time
        assert headers["User-Agent"] == "Service-Webhooks/1.0" and headers["Content-Type"] == "application/json"
        payload = json.loads(body)
        assert headers["X-Service-Event"] == payload["event"]
        assert payload["created_at"].endswith("+00:00") and payload["created_at"].startswith("2026-03-1")
        events.add(payload["event"])
        if payload["event"] == "lead.replied":
            assert set(payload["data"]) == {
                "lead_id",
                "email",
                "first_name",
                "company",
                "campaign_id",
                "subject",
                "reply_type",
                "reply",
                "body",
            }
            assert payload["data"]["body"].startswith(payload["data"]["reply"]) and ">" in payload["data"]["body"]
    assert {"lead.replied", "lead.opened"} <= events
    replied = [json.loads(b) for _, b in receiver.got if json.loads(b)["event"] == "lead.replied"]
    one = replied[0]["data"]
    leads = c.get(f"/campaigns/{one['campaign_id']}/leads", params={"status": "replied", "per_page": 200}).json()[
        "data"
    ]
    assert one["lead_id"] in {r["id"] for r in leads}


def test_failed_deliveries_retry_then_pause(make_sandbox: Any, receiver: Receiver) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, insecure_hooks=True)
    sb.app.state.sandbox.webhooks.retry_delays = (0.01, 0.01, 0.01)  # same logic, shorter waits
    receiver.status = 500
    c, _ = _rw(sb)
    hook = c.post("/hooks", json={"target_url": receiver.url, "event": "lead.opened"}).json()["id"]
    sb.advance(86_400)
    records = [r for r in _wait(sb) if r["subscription_id"] == hook]
    attempted = [r for r in records if r["attempts"]]
    assert attempted[0]["status"] == "failed" and len(attempted[0]["attempts"]) == 4  # 1 try + 3 retries
    assert sum(len(r["attempts"]) for r in records) == 15  # paused after 15 consecutive failures
    assert len(receiver.got) == 15
    assert records[-1]["status"] == "paused" and not records[-1]["attempts"]


def test_recovering_endpoint_is_delivered(make_sandbox: Any, receiver: Receiver) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, insecure_hooks=True)
    sb.app.state.sandbox.webhooks.retry_delays = (0.3, 0.3, 0.3)
    receiver.status = 503
    c, _ = _rw(sb)
    c.post("/hooks", json={"target_url": receiver.url, "event": "lead.replied"})
    sb.advance(6 * 3600)
    time.sleep(0.1)
    receiver.status = 204
    records = _wait(sb)
    assert records and all(r["status"] == "delivered" for r in records)
    assert any(len(r["attempts"]) > 1 and r["attempts"][0]["status_code"] == 503 for r in records)


def test_http_targets_only_on_loopback_with_insecure_hooks(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, insecure_hooks=True)
    c, _ = _rw(sb)
    for url in ("http://127.0.0.1:9/x", "http://localhost:9/x", "http://[::1]:9/x", "https://hooks.example.com/x"):
        assert c.post("/hooks", json={"target_url": url, "event": "lead.replied"}).status_code == 201, url
    for url in ("http://example.com/x", "http://10.0.0.1/x", "ftp://127.0.0.1/x", "not a url"):
        r = c.post("/hooks", json={"target_url": url, "event": "lead.replied"})
        assert r.status_code == 422 and "target_url" in r.json()["errors"], url
