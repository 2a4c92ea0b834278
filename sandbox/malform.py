"""Malformed records on /api/v1 responses (`POST /_sandbox/malform`): what a careless release, or a proxy
that alters answers, sends. A client must quarantine such records, never lose or fake data because of them.

* ``null_id``: a list of listings (`LISTINGS`); the first record of page 1 of each named listing is sent
  with ``"id": null`` (``variants``: the first variant of every stats answer with ``"index": null``).
* ``timestamps``: every timestamp field (a string field named ``*_at``) of every record is sent in another
  form, the same instant: ``space`` (``2026-11-20 14:03:00``), ``offset`` (``+01:00``), ``rfc2822``
  (``Fri, 20 Nov 2026 14:03:00 GMT``), ``epoch_s``, ``epoch_ms``; or ``garbage`` (``not a date``), which is
  no timestamp at all. ``timestamp_fields`` limits it to the named fields.

The choice of records is fixed, so a test can predict it. ``{}`` turns it all off.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

#: listing name -> the route it is read from
LISTINGS: dict[str, str] = {
    "campaigns": "GET /campaigns",
    "leads": "GET /campaigns/{id}/leads",
    "replies": "GET /replies",
    "email_accounts": "GET /email-accounts",
}
TIMESTAMP_FORMS = ("iso", "space", "offset", "rfc2822", "epoch_s", "epoch_ms", "garbage")
SETTINGS = ("null_id", "timestamps", "timestamp_fields")

#: routes whose records it rewrites, and whether `data` is a list of them
ROUTES: dict[str, bool] = {
    "GET /account": False,
    "GET /campaigns": True,
    "GET /campaigns/{id}": False,
    "GET /campaigns/{id}/leads": True,
    "GET /campaigns/{id}/stats": False,
    "GET /replies": True,
    "GET /replies/{id}": False,
    "GET /email-accounts": True,
    "GET /email-accounts/{id}": False,
}


@dataclass
class Malform:
    """The current setting of one sandbox (off by default)."""

    null_id: tuple[str, ...] = ()
    timestamps: str = "iso"
    timestamp_fields: tuple[str, ...] = ()
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def active(self) -> bool:
        return bool(self.null_id) or self.timestamps != "iso"

    def set(
        self, null_id: list[str] | None = None, timestamps: str = "iso", timestamp_fields: list[str] | None = None
    ) -> None:
        with self.lock:
            self.null_id = tuple(null_id or ())
            self.timestamps = timestamps
            self.timestamp_fields = tuple(timestamp_fields or ())

    def as_dict(self) -> dict[str, Any]:
        return {
            "null_id": list(self.null_id),
            "timestamps": self.timestamps,
            "timestamp_fields": list(self.timestamp_fields),
        }


def problems(body: dict[str, Any]) -> dict[str, list[str]]:
    """Per-field errors of a `POST /_sandbox/malform` body (empty when it is valid)."""
    errors: dict[str, list[str]] = {}
    for name in body:
        if name not in SETTINGS:
            errors[name] = [f"unknown setting; use {', '.join(SETTINGS)}."]
    null_id = body.get("null_id", [])
    allowed = (*LISTINGS, "variants")
    if not isinstance(null_id, list) or any(item not in allowed for item in null_id):
        errors["null_id"] = [f"null_id must be a list of: {', '.join(allowed)}."]
    if body.get("timestamps", "iso") not in TIMESTAMP_FORMS:
        errors["timestamps"] = [f"timestamps must be one of: {', '.join(TIMESTAMP_FORMS)}."]
    fields = body.get("timestamp_fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        errors["timestamp_fields"] = ["timestamp_fields must be a list of field names."]
    return errors


def _form(moment: datetime, form: str) -> Any:
    utc = moment.astimezone(UTC)
    forms: dict[str, Callable[[], Any]] = {
        "space": lambda: utc.strftime("%Y-%m-%d %H:%M:%S"),
        "offset": lambda: utc.astimezone(timezone(timedelta(hours=1))).isoformat(),
        "rfc2822": lambda: format_datetime(utc, usegmt=True),
        "epoch_s": lambda: int(utc.timestamp()),
        "epoch_ms": lambda: int(utc.timestamp() * 1000),
        "garbage": lambda: "not a date",
    }
    return forms[form]()


def _timestamps(node: Any, m: Malform) -> None:
    if isinstance(node, list):
        for item in node:
            _timestamps(item, m)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if isinstance(value, (dict, list)):
            _timestamps(value, m)
        elif key.endswith("_at") and isinstance(value, str) and (not m.timestamp_fields or key in m.timestamp_fields):
            try:
                moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            node[key] = _form(moment, m.timestamps)


def apply(route: str, body: Any, m: Malform, page: int) -> Any:
    """The body of a successful response to `route` (`page` asked), malformed in place."""
    many = ROUTES.get(route)
    if many is None or not isinstance(body, dict):
        return body
    data = body.get("data")
    records = data if many and isinstance(data, list) else [data]
    if many and page == 1 and records and isinstance(records[0], dict):
        if any(LISTINGS[name] == route for name in m.null_id):
            records[0]["id"] = None
    if route == "GET /campaigns/{id}/stats" and "variants" in m.null_id and isinstance(data, dict):
        variants = data.get("variants")
        if isinstance(variants, list) and variants and isinstance(variants[0], dict):
            variants[0]["index"] = None
    if m.timestamps != "iso":
        _timestamps(records, m)
    return body
