"""What an answer of the service means, apart from the client's state: its JSON body, the error a 4xx answer is,
how long a 429 asks to wait, and the service's clock. `pipelines.api.client` sends, retries and keeps the counts."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx

from pipelines.api.client_stats import ClientStats
from pipelines.api.retry import Retryable, parse_retry_after
from pipelines.core.errors import (
    ApiUnavailableError,
    OutreachError,
    auth_error,
    forbidden_error,
    invalid_request_error,
    not_found_error,
)
from pipelines.core.timestamps import TimestampError, parse_instant


def json_body(
    method: str, path: str, response: httpx.Response, *, strict: bool, idempotent: bool, stats: ClientStats
) -> Any:
    """The parsed JSON body; None for none. A truncated or malformed success body (`strict`) is retryable, or, for a
    request that took effect, an error naming that; an error answer's body is best effort."""
    if not response.content:
        return None
    try:
        return json.loads(response.content)
    except ValueError:
        if not strict:
            return None
        stats.add(bad_bodies=1)
        if idempotent:
            raise Retryable("truncated or malformed JSON", kind="body") from None
        raise ApiUnavailableError(
            f"{method} {path} took effect but its answer was malformed JSON; check the result before retrying"
        ) from None


def client_error(method: str, path: str, status: int, body: Any) -> OutreachError | None:
    """The error a 4xx answer is (the key, its permission, the id, the request; never retried), None below 400."""
    if status == 401:
        return auth_error(path)
    if status == 403:
        return forbidden_error(method, path)
    if status == 404:
        return not_found_error(method, path)
    if status == 422:
        return invalid_request_error(method, path, body)
    if status >= 400:
        return OutreachError(f"{method} {path} refused ({status}): unexpected client error; check the request")
    return None


def rate_limit_wait(method: str, path: str, response: httpx.Response, longest: float) -> float | None:
    """The seconds a 429 asks to wait (`Retry-After`), None when it names none; ApiUnavailableError for a wait over
    `longest` (max_retry_after_s), which a sync does not sit out."""
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    if retry_after is not None and retry_after > longest:
        raise ApiUnavailableError(
            f"{method} {path}: the service asked to wait {retry_after:.0f} s before the next request (429, "
            f"Retry-After), longer than max_retry_after_s ({longest:.0f} s): sync again after that wait, or raise "
            "[sources.outreach] max_retry_after_s"
        )
    return retry_after


def answer_date(response: httpx.Response) -> datetime | None:
    """The answer's HTTP `Date` (the service's clock: the sandbox's simulated time); None without a readable one."""
    value = response.headers.get("Date")
    if not value:
        return None
    try:
        return parse_instant(value)  # an HTTP date is RFC 2822's form; "-0000" is UTC
    except TimestampError:
        return None
