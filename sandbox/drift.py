"""Schema drift on /api/v1 responses (`POST /_sandbox/drift`): new fields, unknown enum values, numbers as strings.

A real service changes under its clients: it adds fields, grows its enums and, in a careless release, sends
numbers as text. The sandbox rewrites the JSON body of its resource responses so a pipeline can be tested
against exactly that, over HTTP. The choices (which records, which values) are written in sandbox/README.md.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FLAGS = ("new_fields", "unknown_enums", "string_numbers")

#: One in DRIFT_EVERY records (chosen by a hash of the record's id, so always the same ones) shows an unknown value.
DRIFT_EVERY = 5

CAMPAIGN_STATUS = {"draft": "in_review", "active": "running", "paused": "on_hold", "completed": "archived"}
RECIPIENT_STATUS = {
    "pending": "queued",
    "active": "in_progress",
    "sent": "delivered",
    "replied": "engaged",
    "bounced": "hard_bounced",
    "unsubscribed": "opted_out",
    "completed": "finished",
}
PROVIDER = {"google": "google_workspace", "microsoft": "microsoft_365", "smtp": "custom_smtp"}
REPLY_TYPE_SUFFIX = "_v2"  # out_of_office -> out_of_office_v2


@dataclass
class Drift:
    """The current drift setting of one sandbox (all off by default)."""

    new_fields: bool = False
    unknown_enums: bool = False
    string_numbers: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def active(self) -> bool:
        return self.new_fields or self.unknown_enums or self.string_numbers

    def set(self, **flags: bool) -> None:
        with self.lock:
            for name in FLAGS:
                setattr(self, name, bool(flags.get(name, False)))

    def as_dict(self) -> dict[str, bool]:
        return {name: bool(getattr(self, name)) for name in FLAGS}


def drifts(record_id: object) -> bool:
    """Whether this record shows an unknown enum value (about one record in DRIFT_EVERY, stable across calls)."""
    return zlib.crc32(str(record_id).encode()) % DRIFT_EVERY == 0


def _strings(obj: dict[str, Any], names: tuple[str, ...] | None = None) -> None:
    """Integers of `obj` (all, or those named) as JSON strings."""
    for name, value in obj.items():
        if (names is None or name in names) and isinstance(value, int) and not isinstance(value, bool):
            obj[name] = str(value)


def _score(record_id: object) -> int:
    return zlib.crc32(b"score" + str(record_id).encode()) % 100


def _campaign(c: dict[str, Any], d: Drift) -> None:
    if d.new_fields:
        c["priority"] = 1 + _score(c["id"]) % 3
        c["owner"] = {"name": "Sandbox Owner", "email": "owner@sandbox.example"}
    if d.unknown_enums and drifts(c["id"]):
        c["status"] = CAMPAIGN_STATUS.get(c["status"], c["status"])
    if d.string_numbers and isinstance(c.get("stats"), dict):
        _strings(c["stats"])


def _recipient(r: dict[str, Any], d: Drift) -> None:
    if d.new_fields:
        r["lead_score"] = _score(r["id"])
        r["custom_fields"] = {"source": "sandbox", "tier": "abc"[_score(r["id"]) % 3]}
    if d.unknown_enums and drifts(r["id"]):
        r["status"] = RECIPIENT_STATUS.get(r["status"], r["status"])
    if d.string_numbers:
        _strings(r, ("current_step",))


def _stats(s: dict[str, Any], d: Drift) -> None:
    camp = s.get("campaign") or {}
    if d.new_fields:
        s["benchmarks"] = {"industry_reply_rate": 4.5, "industry_open_rate": 38.0}
    if d.unknown_enums and "id" in camp and drifts(camp["id"]):
        camp["status"] = CAMPAIGN_STATUS.get(camp["status"], camp["status"])
    if d.string_numbers and isinstance(s.get("totals"), dict):
        _strings(s["totals"])


def _reply(r: dict[str, Any], d: Drift) -> None:
    if d.new_fields:
        score = _score(r["id"])
        r["sentiment"] = {"label": ("negative", "neutral", "positive")[score % 3], "score": round(score / 100, 2)}
        r["thread_id"] = r["id"][:8]
    if d.unknown_enums and drifts(r["id"]) and isinstance(r.get("reply_type"), str):
        r["reply_type"] = r["reply_type"] + REPLY_TYPE_SUFFIX


def _mailbox(m: dict[str, Any], d: Drift) -> None:
    if d.new_fields:
        m["signature_enabled"] = True
        m["tracking_domain"] = {
            "host": "track." + str(m["email"]).rpartition("@")[2],
            "verified": _score(m["id"]) % 4 != 0,
        }
    if d.unknown_enums and drifts(m["id"]):
        m["provider"] = PROVIDER.get(m["provider"], m["provider"])
    if d.string_numbers:
        _strings(m, ("daily_send_limit",))


def _account(a: dict[str, Any], d: Drift) -> None:
    if d.new_fields:
        a["features"] = {"ai_replies": True, "unified_inbox": True}
        if isinstance(a.get("workspace"), dict):
            a["workspace"]["timezone"] = "UTC"


Shape = Callable[[dict[str, Any], Drift], None]

#: Route template -> (how to drift one record, whether `data` is a list of them).
ROUTES: dict[str, tuple[Shape, bool]] = {
    "GET /account": (_account, False),
    "GET /campaigns": (_campaign, True),
    "POST /campaigns": (_campaign, False),
    "GET /campaigns/{id}": (_campaign, False),
    "PATCH /campaigns/{id}": (_campaign, False),
    "POST /campaigns/{id}/launch": (_campaign, False),
    "POST /campaigns/{id}/pause": (_campaign, False),
    "POST /campaigns/{id}/resume": (_campaign, False),
    "GET /campaigns/{id}/leads": (_recipient, True),
    "GET /campaigns/{id}/stats": (_stats, False),
    "GET /replies": (_reply, True),
    "GET /replies/{id}": (_reply, False),
    "POST /replies/{id}/read": (_reply, False),
    "GET /email-accounts": (_mailbox, True),
    "GET /email-accounts/{id}": (_mailbox, False),
    "POST /email-accounts/{id}/pause": (_mailbox, False),
    "POST /email-accounts/{id}/resume": (_mailbox, False),
}


def apply(route: str, body: Any, d: Drift) -> Any:
    """The body of a successful response to `route`, drifted in place (other routes are returned unchanged)."""
    spec = ROUTES.get(route)
    if spec is None or not isinstance(body, dict):
        return body
    shape, many = spec
    data = body.get("data")
    for record in data if many and isinstance(data, list) else [data]:
        if isinstance(record, dict):
            shape(record, d)
    return body
