"""Independent conformance check of webhook delivery (spec parts 5.6 and 6) against a real receiver.

A tiny HTTP receiver runs on a loopback port; the sandbox (``insecure_hooks=True``) delivers to it
while its clock is advanced. Headers, the HMAC signature and the lead.replied payload are checked.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from test_spec_conformance_support import (
    DAYS,
    advance,
    api,
    error_fields,
    fetch_keys,
    has_numeric_utc_offset,
    is_str,
    is_uuid,
    ok_data,
    valid_campaign_body,
)


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    raw: bytes


@dataclass
class Receiver:
    port: int
    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on(self, path: str) -> list[Delivery]:
        with self.lock:
            return [d for d in self.deliveries if d.path == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A loopback HTTP server that records every POST; answers 500 under /fail, else 200."""
    state = Receiver(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with state.lock:
                state.deliveries.append(Delivery(self.path, {k.lower(): v for k, v in self.headers.items()}, raw))
            self.send_response(500 if self.path.startswith("/fail") else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="conformance-receiver", daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _start_sending_campaign(rw: Any, size: int = 200, name: str = "Delivery check") -> str:
    """Create, fill and launch a campaign without follow-ups that sends all day, every day."""
    mailboxes = [m["id"] for m in ok_data(rw.get("/email-accounts", params={"active": "true"}))]
    campaign = ok_data(
        rw.post(
            "/campaigns",
            json=valid_campaign_body(
                name=name,
                timezone="UTC",
                send_days=list(DAYS),
                send_window_start="00:00",
                send_window_end="23:59",
                delay_between_emails=60,
                follow_up_enabled=False,
                email_account_ids=mailboxes,
            ),
        ),
        201,
    )
    people = ok_data(rw.post("/search/people/import", json={"list_name": f"{name} list", "total": size}), 201)
    assert ok_data(rw.post(f"/campaigns/{campaign['id']}/leads", json={"list_id": people["list_id"]}))["added"] > 0
    assert ok_data(rw.post(f"/campaigns/{campaign['id']}/launch"))["status"] == "active"
    return str(campaign["id"])


def _advance_until(sb: Any, done: Callable[[], bool], step_seconds: int, max_steps: int, wall_seconds: float) -> None:
    """Advance the clock step by step until ``done()`` or a step/wall-time bound."""
    deadline = time.monotonic() + wall_seconds
    for _ in range(max_steps):
        if done() or time.monotonic() > deadline:
            return
        advance(sb, step_seconds)
        time.sleep(0.02)


def _check_headers_and_signature(delivery: Delivery, secret: str, event: str) -> None:
    """Part 6 headers and the part 5.6 signature: v1= hex HMAC-SHA256(secret, f"{ts}.{raw body}")."""
    h = delivery.headers
    assert h.get("content-type", "").split(";")[0].strip() == "application/json"
    assert h.get("user-agent") == "Service-Webhooks/1.0"
    assert h.get("x-service-event") == event
    ts = h.get("x-service-timestamp", "")
    assert ts.isdigit() and int(ts) > 1_500_000_000, f"X-Service-Timestamp is Unix seconds, got {ts!r}"
    expected = "v1=" + hmac.new(secret.encode(), f"{ts}.".encode() + delivery.raw, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(h.get("x-service-signature", ""), expected), "part 5.6: signature mismatch"
    assert secret not in delivery.raw.decode(errors="replace"), "the signing secret must not be in the payload"


def test_webhook_delivery(make_sandbox: Callable[..., Any], receiver: Receiver, subtests: Any) -> None:
    """One sending campaign feeds two subscriptions: lead.replied to a 200 endpoint, lead.opened to a 500 one."""
    sb = make_sandbox(scale="tiny", insecure_hooks=True, rate_limit=0)
    keys = fetch_keys(sb)
    secret = keys.a_rw.signing_secret
    ok_path, fail_path = "/hooks/replied", "/fail/opened"
    with api(sb, keys.a_rw) as rw:
        refused = rw.post("/hooks", json={"target_url": "http://example.com/h", "event": "lead.replied"})
        assert error_fields(refused) == {"target_url"}, "insecure hooks allow http on loopback only"
        subs = {}
        for path, event in ((ok_path, "lead.replied"), (fail_path, "lead.opened")):
            sub = rw.post("/hooks", json={"target_url": f"http://127.0.0.1:{receiver.port}{path}", "event": event})
            assert sub.status_code in (200, 201), f"subscribe to a loopback http target: {sub.text[:200]}"
            subs[path] = sub.json()["id"]
        done_path = "/hooks/completed"
        sub = rw.post(
            "/hooks", json={"target_url": f"http://127.0.0.1:{receiver.port}{done_path}", "event": "campaign.completed"}
        )
        assert sub.status_code in (200, 201), sub.text[:200]
        short_id = _start_sending_campaign(rw, size=3, name="Short campaign")  # first: imports dedupe people
        _start_sending_campaign(rw)
        _advance_until(
            sb,
            lambda: bool(receiver.on(ok_path)) and bool(receiver.on(done_path)),
            step_seconds=6 * 3600,
            max_steps=120,
            wall_seconds=20,
        )
        # Retry timing is not shown (the sandbox README: 0.5/1/2 s of wall time), so wait in wall time.
        deadline = time.monotonic() + 20
        while len(receiver.on(fail_path)) < 15 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # let an attempt already under way land

        replied = receiver.on(ok_path)
        with subtests.test(msg="lead.replied delivery: headers, signature, payload"):
            assert replied, "no lead.replied delivery arrived within 30 simulated days"
            for delivery in replied:
                _check_headers_and_signature(delivery, secret, "lead.replied")
            _check_replied_payload(rw, json.loads(replied[0].raw))

        with subtests.test(msg="campaign.completed fires when a campaign finishes sending"):
            assert ok_data(rw.get(f"/campaigns/{short_id}"))["status"] == "completed", "3 recipients, no follow-ups"
            completed = receiver.on(done_path)
            assert completed, "no campaign.completed delivery"
            for delivery in completed:
                _check_headers_and_signature(delivery, secret, "campaign.completed")
                assert json.loads(delivery.raw)["event"] == "campaign.completed"
                assert has_numeric_utc_offset(json.loads(delivery.raw)["created_at"])

        failing = receiver.on(fail_path)
        with subtests.test(msg="failed deliveries are retried"):
            assert len(failing) >= 15, f"only {len(failing)} attempts reached a failing endpoint"
            for delivery in failing:
                _check_headers_and_signature(delivery, secret, "lead.opened")
            bodies = [d.raw for d in failing]
            assert len(set(bodies)) < len(bodies), "part 6: a failed delivery is retried"

        assert rw.delete(f"/hooks/{subs[ok_path]}").status_code in (200, 202, 204)
        seen_ok, seen_fail = len(receiver.on(ok_path)), len(receiver.on(fail_path))
        for _ in range(4):
            advance(sb, 6 * 3600)
        time.sleep(1.0)
        with subtests.test(msg="DELETE /hooks/{id} stops deliveries"):
            assert len(receiver.on(ok_path)) == seen_ok
        with subtests.test(msg="an endpoint failing 15 times in a row is paused"):
            assert len(receiver.on(fail_path)) == seen_fail, "deliveries continued to a failing endpoint"
            assert seen_fail <= 15, (
                f"part 6: 'an endpoint that fails 15 times in a row is paused', yet it got {seen_fail} failing attempts"
            )


def _check_replied_payload(rw: Any, payload: dict[str, Any]) -> None:
    """Part 6 payload: event, created_at with a numeric UTC offset, and the lead.replied data fields."""
    assert payload["event"] == "lead.replied"
    assert has_numeric_utc_offset(payload["created_at"]), f"created_at with a numeric offset: {payload['created_at']!r}"
    data = payload["data"]
    assert is_uuid(data.get("lead_id")) and is_uuid(data.get("campaign_id"))
    for name in ("email", "first_name", "company", "subject", "reply_type", "reply", "body"):
        assert is_str(data.get(name)), f"lead.replied data.{name} is a string, got {data.get(name)!r}"
    assert "@" in data["email"]
    assert len(data["body"]) >= len(data["reply"]), "body is the reply text with the quoted earlier message"
    ok_data(rw.get(f"/campaigns/{data['campaign_id']}"))  # the campaign belongs to this workspace
