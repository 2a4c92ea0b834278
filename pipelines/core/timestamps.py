"""The one reader of timestamps: every timestamp field of the API, of the warehouse and of webhook events
goes through `parse_instant`, so one instant written in any accepted form is one UTC value.

Accepted: ISO 8601 / RFC 3339 with any offset or ``Z`` (``T`` or a space between date and time, fractions
of a second), a date and time without an offset (taken as UTC, as the API's own are), RFC 2822 (``Fri, 20
Nov 2026 14:03:00 GMT``), and epoch seconds or milliseconds (a number, or digits as text). Anything else
raises `TimestampError`: the caller rejects the record (pipelines.source.quarantine), never loads a NULL for it.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

# epoch values above this are milliseconds: 1e11 s is the year 5138, 1e11 ms is March 1973
_MS_THRESHOLD = 100_000_000_000
_EPOCH = re.compile(r"[+-]?\d+(\.\d+)?")
_ISO_DATE = re.compile(r"\d{4}-\d\d-\d\d")
# RFC 2822 starts with an optional weekday then a day number and a month name: "Fri, 20 Nov 2026 ..."
_RFC2822 = re.compile(r"([A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s")


class TimestampError(ValueError):
    """A value that is no timestamp in any accepted form."""


def parse_instant(value: Any) -> datetime:
    """`value` as an aware UTC datetime; `TimestampError` when it is not a timestamp.

    A datetime without a zone is taken as UTC (DuckDB hands back naive UTC values)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, bool):
        raise TimestampError(f"a boolean is not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        return _from_epoch(float(value))
    if not isinstance(value, str):
        raise TimestampError(f"a {type(value).__name__} is not a timestamp")
    text = value.strip()
    if _ISO_DATE.match(text):  # the API's own form, first: neither an epoch nor an RFC 2822 date starts so
        return _from_iso(text)
    if _EPOCH.fullmatch(text):
        return _from_epoch(float(text))
    if _RFC2822.match(text):
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError) as exc:
            raise TimestampError(f"not an RFC 2822 date: {_brief(text)}") from exc
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return _from_iso(text)


def parse_optional(value: Any) -> datetime | None:
    """`parse_instant`, with None and the empty string as None (a field the API left empty)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return parse_instant(value)


def _from_iso(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
    except ValueError as exc:
        raise TimestampError(f"not a timestamp (ISO 8601, RFC 2822 or epoch): {_brief(text)}") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _from_epoch(seconds: float) -> datetime:
    if not math.isfinite(seconds):
        raise TimestampError("not a finite epoch value")
    if abs(seconds) >= _MS_THRESHOLD:
        seconds /= 1000.0
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise TimestampError("epoch value out of range") from exc


def _brief(text: str) -> str:
    # the value's length and shape only: a rejected value may carry anything (never echo it whole)
    return f"{len(text)} characters" if len(text) > 40 else repr(text)
