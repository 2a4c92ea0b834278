"""Body validation for campaign create/update: one error entry per offending field (422)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from .timeutil import WEEKDAYS, is_valid_timezone

HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
CAMPAIGN_TYPES = ("outbound", "nurture", "reengagement")
SCHEDULE_TYPES = ("immediate", "scheduled")

# field -> (kind, rule)
FIELDS: dict[str, tuple[str, Any]] = {
    "name": ("str", None),
    "subject_lines": ("strlist", (1, 5)),
    "email_bodies": ("strlist", (1, 5)),
    "timezone": ("tz", None),
    "send_days": ("days", None),
    "send_window_start": ("hhmm", None),
    "send_window_end": ("hhmm", None),
    "delay_between_emails": ("int", (30, 3600)),
    "follow_up_enabled": ("bool", None),
    "follow_up_delay_days": ("int", (1, 60)),
    "max_follow_ups": ("int", (0, 5)),
    "track_opens": ("bool", None),
    "email_account_ids": ("idlist", None),
    "stop_on_reply": ("bool", None),
    "campaign_type": ("choice", CAMPAIGN_TYPES),
    "schedule_type": ("choice", SCHEDULE_TYPES),
    "scheduled_at": ("datetime", None),
}

DEFAULTS: dict[str, Any] = {
    "timezone": "UTC",
    "send_days": ["mon", "tue", "wed", "thu", "fri"],
    "send_window_start": "09:00",
    "send_window_end": "17:00",
    "delay_between_emails": 120,
    "follow_up_enabled": True,
    "follow_up_delay_days": 3,
    "max_follow_ups": 2,
    "track_opens": True,
    "email_account_ids": [],
    "stop_on_reply": True,
    "campaign_type": "outbound",
    "schedule_type": "immediate",
    "scheduled_at": None,
}


def check_campaign_body(body: dict[str, Any], *, create: bool, mailbox_ids: set[str]) -> dict[str, list[str]]:
    """Per-field errors of a create or update body (empty dict = valid)."""
    errors: dict[str, list[str]] = {}
    if create:
        for name in ("name", "subject_lines", "email_bodies"):
            if body.get(name) is None:
                errors[name] = [f"The {name} field is required."]
    for name, value in body.items():
        if name not in FIELDS or name in errors:
            continue
        if value is None and name == "scheduled_at":
            continue
        problem = _check(name, value, mailbox_ids)
        if problem:
            errors[name] = [problem]
    start, end = body.get("send_window_start"), body.get("send_window_end")
    if isinstance(start, str) and isinstance(end, str) and HHMM.match(start) and HHMM.match(end) and start >= end:
        errors.setdefault("send_window_end", ["The send_window_end must be after send_window_start."])
    if body.get("schedule_type") == "scheduled" and body.get("scheduled_at") is None and create:
        errors.setdefault("scheduled_at", ["The scheduled_at field is required when schedule_type is scheduled."])
    return errors


def _check(name: str, value: Any, mailbox_ids: set[str]) -> str | None:
    kind, rule = FIELDS[name]
    if kind == "str":
        return (
            None
            if isinstance(value, str) and value.strip() and len(value) <= 200
            else f"The {name} must be a non-empty string of at most 200 characters."
        )
    if kind == "strlist":
        low, high = rule
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            return f"The {name} must be a list of non-empty strings."
        return None if low <= len(value) <= high else f"The {name} must have between {low} and {high} items."
    if kind == "tz":
        return (
            None
            if isinstance(value, str) and is_valid_timezone(value)
            else f"The {name} must be a valid IANA timezone (for example Europe/Berlin)."
        )
    if kind == "days":
        if (
            not isinstance(value, list)
            or not value
            or not all(v in WEEKDAYS for v in value)
            or len(set(value)) != len(value)
        ):
            return f"The {name} must be a non-empty list of distinct days from: {', '.join(WEEKDAYS)}."
        return None
    if kind == "hhmm":
        return None if isinstance(value, str) and HHMM.match(value) else f"The {name} must be a time in HH:MM format."
    if kind == "int":
        low, high = rule
        if isinstance(value, bool) or not isinstance(value, int):
            return f"The {name} must be an integer."
        return None if low <= value <= high else f"The {name} must be between {low} and {high}."
    if kind == "bool":
        return None if isinstance(value, bool) else f"The {name} field must be true or false."
    if kind == "idlist":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"The {name} must be a list of email account ids."
        unknown = [v for v in value if v not in mailbox_ids]
        return f"Unknown email account ids in this workspace: {', '.join(unknown)}." if unknown else None
    if kind == "choice":
        return None if value in rule else f"The {name} must be one of: {', '.join(rule)}."
    if kind == "datetime":
        try:
            datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return f"The {name} must be an ISO 8601 timestamp."
        return None
    return None


def parse_time(value: str) -> float:
    t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.timestamp()
