"""Helpers for the spec-conformance checks (no tests here).

Written from the API's interface description and the control-plane contract in DESIGN.md only,
without reading the sandbox's code. Every predicate below names the spec rule it encodes.
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx

Predicate = Callable[[Any], bool]

CAMPAIGN_STATUSES = ("draft", "active", "paused", "completed")
RECIPIENT_STATUSES = ("pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed")
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
EVENT_KEYS = {
    "lead.replied",
    "lead.bounced",
    "lead.unsubscribed",
    "lead.opened",
    "lead.clicked",
    "campaign.completed",
}
SENIORITIES = (
    "owner",
    "founder",
    "c_suite",
    "partner",
    "vp",
    "head",
    "director",
    "manager",
    "senior",
    "entry",
    "intern",
)
COMPANY_SIZES = ("1-10", "11-50", "51-200", "201-500", "501-1000", "1001-5000", "5001-10000", "10001+")

_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$")
_NUMERIC_OFFSET_RE = re.compile(r"[+-]\d{2}:?\d{2}$")
_HHMM_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


# ---------------------------------------------------------------- predicates (part 2 types)


def is_uuid(value: Any) -> bool:
    """uuid: the canonical 8-4-4-4-12 hex form."""
    return isinstance(value, str) and bool(_UUID_RE.match(value))


def is_str(value: Any) -> bool:
    return isinstance(value, str)


def is_email(value: Any) -> bool:
    return isinstance(value, str) and re.match(r"^[^@\s]+@[^@\s]+\.[^@\s]+$", value) is not None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def parse_timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def is_utc_timestamp(value: Any) -> bool:
    """ISO 8601 UTC timestamp: date, 'T', time and a zone designator equal to UTC."""
    if not isinstance(value, str) or not _ISO_RE.match(value):
        return False
    try:
        parsed = parse_timestamp(value)
    except ValueError:
        return False
    offset = parsed.utcoffset()
    return offset is not None and offset.total_seconds() == 0


def is_utc_timestamp_or_null(value: Any) -> bool:
    return value is None or is_utc_timestamp(value)


def has_numeric_utc_offset(value: Any) -> bool:
    """Part 6: the delivered created_at 'carries a numeric UTC offset' (e.g. +00:00, not Z)."""
    return is_utc_timestamp(value) and bool(_NUMERIC_OFFSET_RE.search(value))


def is_hhmm(value: Any) -> bool:
    return isinstance(value, str) and bool(_HHMM_RE.match(value))


def is_date(value: Any) -> bool:
    if not isinstance(value, str) or not _DATE_RE.match(value):
        return False
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        return False
    return True


def is_iana_timezone(value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def one_of(*allowed: str) -> Predicate:
    def check(value: Any) -> bool:
        return value in allowed

    check.__name__ = f"one of {allowed}"
    return check


def list_of(item: Predicate, min_len: int = 0, max_len: int | None = None) -> Predicate:
    def check(value: Any) -> bool:
        if not isinstance(value, list) or len(value) < min_len:
            return False
        if max_len is not None and len(value) > max_len:
            return False
        return all(item(v) for v in value)

    check.__name__ = f"list of {item.__name__} [{min_len}..{max_len}]"
    return check


# ---------------------------------------------------------------- shapes (part 2)

WORKSPACE_SHAPE: dict[str, Predicate] = {
    "workspace.id": is_uuid,
    "workspace.name": is_str,
    "workspace.created_at": is_utc_timestamp,
    "plan": is_str,
    "credits.balance": is_int,
    "counts.campaigns": is_int,
    "counts.email_accounts": is_int,
    "counts.lists": is_int,
}

CAMPAIGN_SHAPE: dict[str, Predicate] = {
    "id": is_uuid,
    "name": is_str,
    "status": one_of(*CAMPAIGN_STATUSES),
    "campaign_type": is_str,
    "schedule_type": is_str,
    "scheduled_at": is_utc_timestamp_or_null,
    "subject_lines": list_of(is_str, 1, 5),
    "email_bodies": list_of(is_str, 1, 5),
    "send_window.start": is_hhmm,
    "send_window.end": is_hhmm,
    "send_window.days": list_of(one_of(*DAYS)),
    "send_window.timezone": is_iana_timezone,
    "follow_up.enabled": is_bool,
    "follow_up.delay_days": is_int,
    "follow_up.max": is_int,
    "stop_on_reply": is_bool,
    "stats.total_leads": is_int,
    "stats.sent": is_int,
    "stats.opened": is_int,
    "stats.clicked": is_int,
    "stats.replied": is_int,
    "stats.bounced": is_int,
    "created_at": is_utc_timestamp,
}

RECIPIENT_SHAPE: dict[str, Predicate] = {
    "id": is_uuid,
    "email": is_email,
    "first_name": is_str,
    "last_name": is_str,
    "company": is_str,
    "status": one_of(*RECIPIENT_STATUSES),
    "current_step": is_int,
    "last_sent_at": is_utc_timestamp_or_null,
    "opened_at": is_utc_timestamp_or_null,
    "clicked_at": is_utc_timestamp_or_null,
    "replied_at": is_utc_timestamp_or_null,
    "bounced_at": is_utc_timestamp_or_null,
}

REPLY_SHAPE: dict[str, Predicate] = {
    "id": is_uuid,
    "campaign_id": is_uuid,
    "email_account_id": is_uuid,
    "from": is_email,
    "subject": is_str,
    "snippet": is_str,
    "reply_type": is_str,
    "is_read": is_bool,
    "received_at": is_utc_timestamp,
}

MAILBOX_SHAPE: dict[str, Predicate] = {
    "id": is_uuid,
    "email": is_email,
    "display_name": is_str,
    "provider": is_str,
    "is_active": is_bool,
    "daily_send_limit": is_int,
    "sent_today": is_int,
    "reputation_score": is_number,
    "warmup.enabled": is_bool,
    "warmup.health_score": is_number,
    "created_at": is_utc_timestamp,
}

STATS_SHAPE: dict[str, Predicate] = {
    "campaign.id": is_uuid,
    "campaign.name": is_str,
    "campaign.status": one_of(*CAMPAIGN_STATUSES),
    **{
        f"totals.{k}": is_int
        for k in (
            "recipients",
            "sent",
            "delivered",
            "opened",
            "clicked",
            "replied",
            "bounced",
            "unsubscribed",
            "pending",
            "failed",
        )
    },
    **{f"rates.{k}": is_number for k in ("open", "click", "reply", "bounce", "unsubscribe", "progress")},
    "variants": list_of(lambda v: isinstance(v, dict)),
    "daily": list_of(lambda v: isinstance(v, dict)),
}

VARIANT_SHAPE: dict[str, Predicate] = {
    "index": is_int,
    "subject": is_str,
    "sent": is_int,
    "replied": is_int,
    "reply_rate": is_number,
}

DAILY_SHAPE: dict[str, Predicate] = {"date": is_date, "sent": is_int}

PERSON_PREVIEW_SHAPE: dict[str, Predicate] = {
    "first_name": is_str,
    "last_name": is_str,
    "job_title": is_str,
    "seniority": is_str,
    "company": is_str,
    "domain": is_str,
    "location": is_str,
    "has_email": is_bool,
}

COMPANY_PREVIEW_SHAPE: dict[str, Predicate] = {
    "name": is_str,
    "domain": is_str,
    "industry": is_str,
    "size": is_str,
    "location": is_str,
    "open_roles": is_int,
}

PEOPLE_IMPORT_SHAPE: dict[str, Predicate] = {
    "list_id": is_uuid,
    "list_name": is_str,
    **{k: is_int for k in ("matched", "imported", "duplicate", "suppressed", "unsendable")},
}

COMPANY_IMPORT_SHAPE: dict[str, Predicate] = {
    "list_id": is_uuid,
    "list_name": is_str,
    **{k: is_int for k in ("matched", "imported", "duplicate", "failed")},
}

META_SHAPE: dict[str, Predicate] = {"current_page": is_int, "last_page": is_int, "total": is_int}

KEY_SHAPE: dict[str, Predicate] = {
    "key": is_str,
    "workspace_id": is_str,
    "workspace_name": is_str,
    "level": one_of("rw", "read"),
    "role": one_of("admin", "former_admin"),
    "signing_secret": is_str,
}

_MISSING = object()


def _dig(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, Mapping) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def shape_problems(obj: Any, shape: Mapping[str, Predicate]) -> list[str]:
    """Every field of ``shape`` that is missing or has the wrong type, as readable lines."""
    if not isinstance(obj, Mapping):
        return [f"expected an object, got {type(obj).__name__}: {obj!r:.200}"]
    problems: list[str] = []
    for path, predicate in shape.items():
        value = _dig(obj, path)
        if value is _MISSING:
            problems.append(f"missing field {path!r}")
        elif not predicate(value):
            problems.append(f"{path}={value!r:.120} fails {predicate.__name__}")
    return problems


def assert_shape(obj: Any, shape: Mapping[str, Predicate], what: str) -> None:
    problems = shape_problems(obj, shape)
    assert not problems, f"{what} does not match the spec's shape: " + "; ".join(problems)


# ---------------------------------------------------------------- keys and HTTP


@dataclass(frozen=True)
class Key:
    key: str
    workspace_id: str
    workspace_name: str
    level: str
    role: str
    signing_secret: str


@dataclass(frozen=True)
class Keys:
    """The keys listed by GET /_sandbox/keys, with the selections the contract promises."""

    all: tuple[Key, ...]

    @property
    def workspaces(self) -> list[str]:
        seen: list[str] = []
        for k in self.all:
            if k.workspace_id not in seen:
                seen.append(k.workspace_id)
        return seen

    def pick(self, workspace_id: str, level: str, role: str = "admin") -> Key:
        for k in self.all:
            if k.workspace_id == workspace_id and k.level == level and k.role == role:
                return k
        raise AssertionError(f"/_sandbox/keys lists no {level}/{role} key for workspace {workspace_id}")

    @property
    def a_rw(self) -> Key:
        return self.pick(self.workspaces[0], "rw")

    @property
    def a_read(self) -> Key:
        return self.pick(self.workspaces[0], "read")

    @property
    def a_former_admin(self) -> Key:
        return self.pick(self.workspaces[0], "rw", "former_admin")

    @property
    def b_rw(self) -> Key:
        assert len(self.workspaces) >= 2, "the contract promises at least two workspaces"
        return self.pick(self.workspaces[1], "rw")


def control_url(sb: Any, path: str) -> str:
    return f"{str(sb.url).rstrip('/')}/_sandbox/{path.lstrip('/')}"


@functools.lru_cache(maxsize=1)
def _control_client() -> httpx.Client:
    """One client for all control-plane calls: building an httpx.Client costs ~50-100 ms (SSL context)."""
    return httpx.Client(timeout=120)


def control_get(sb: Any, path: str) -> Any:
    resp = _control_client().get(control_url(sb, path))
    assert resp.status_code == 200, f"GET /_sandbox/{path}: {resp.status_code} {resp.text[:300]}"
    return resp.json()


def control_post(sb: Any, path: str, body: Any) -> Any:
    resp = _control_client().post(control_url(sb, path), json=body)
    assert resp.status_code == 200, f"POST /_sandbox/{path}: {resp.status_code} {resp.text[:300]}"
    return resp.json()


def fetch_keys(sb: Any) -> Keys:
    body = control_get(sb, "keys")
    assert isinstance(body, dict) and isinstance(body.get("data"), list), f"keys body: {body!r:.300}"
    for item in body["data"]:
        assert_shape(item, KEY_SHAPE, "a /_sandbox/keys entry")
    return Keys(tuple(Key(**{f: item[f] for f in KEY_SHAPE}) for item in body["data"]))


def advance(sb: Any, seconds: int) -> str:
    """Advance the sandbox clock; return the `now` it reports."""
    body = control_post(sb, "clock", {"advance_seconds": seconds})
    return str(body["data"]["now"])


def api(sb: Any, key: Key | str | None, timeout: float = 30.0) -> httpx.Client:
    """An httpx client on {base_url}; ``key`` None sends no Authorization header."""
    headers: dict[str, str] = {}
    if key is not None:
        raw = key.key if isinstance(key, Key) else key
        headers["Authorization"] = f"Bearer {raw}"
    return httpx.Client(base_url=str(sb.base_url).rstrip("/"), headers=headers, timeout=timeout)


def body_of(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except json.JSONDecodeError as exc:
        raise AssertionError(
            f"{resp.request.method} {resp.request.url.path}: body is not JSON: {resp.text[:200]!r}"
        ) from exc


def ok_data(resp: httpx.Response, status: int = 200) -> Any:
    """Assert the status and the `data` wrapper; return `data`."""
    where = f"{resp.request.method} {resp.request.url.path}?{resp.request.url.query.decode()}"
    assert resp.status_code == status, f"{where}: expected {status}, got {resp.status_code}: {resp.text[:300]}"
    body = body_of(resp)
    assert isinstance(body, dict) and "data" in body, f"{where}: result not wrapped in `data`: {body!r:.300}"
    return body["data"]


def paged(resp: httpx.Response) -> tuple[list[Any], dict[str, Any]]:
    """Assert a paged list response; return (data, meta)."""
    data = ok_data(resp)
    body = resp.json()
    assert isinstance(data, list), f"`data` should be a list, got {type(data).__name__}"
    assert "meta" in body, f"paged list without `meta`: keys {sorted(body)}"
    assert_shape(body["meta"], META_SHAPE, "meta")
    return data, body["meta"]


def error_fields(resp: httpx.Response) -> set[str]:
    """Assert a part-7 422 body (`message` string, `errors` object); return the error keys."""
    where = f"{resp.request.method} {resp.request.url.path}"
    assert resp.status_code == 422, f"{where}: expected 422, got {resp.status_code}: {resp.text[:300]}"
    body = body_of(resp)
    assert isinstance(body, dict), f"{where}: 422 body is not an object"
    assert isinstance(body.get("message"), str) and body["message"], f"{where}: 422 without a `message`: {body!r:.300}"
    assert isinstance(body.get("errors"), dict), f"{where}: 422 `errors` is not an object: {body!r:.300}"
    return set(body["errors"])


def all_pages(client: httpx.Client, path: str, per_page: int, **params: Any) -> Iterator[list[Any]]:
    page = 1
    while True:
        data, meta = paged(client.get(path, params={**params, "per_page": per_page, "page": page}))
        yield data
        if page >= meta["last_page"]:
            return
        page += 1
        assert page < 10_000, "paging does not end"


def random_uuid() -> str:
    return str(uuid.uuid4())


def valid_campaign_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Conformance check",
        "subject_lines": ["Quick question, {{first_name|there}}"],
        "email_bodies": ["Hi {{first_name|there}}, a note for {{company}}."],
    }
    body.update(overrides)
    return body
