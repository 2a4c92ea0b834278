"""The service's clock: every sandbox response carries one `Date` header, in simulated time (RFC 7231)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

START = datetime(2026, 3, 10, 15, 0, 0, tzinfo=UTC)


def _dates(response: httpx.Response) -> list[str]:
    return response.headers.get_list("date")


def _answers(sb: Any) -> list[httpx.Response]:
    """One response of every kind: 200, 401, 404 (unknown id and unknown path), 422, 403, and the control plane."""
    rw = next(k["key"] for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    read = next(k["key"] for k in sb.keys() if k["level"] == "read")
    with httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {rw}"}) as c:
        out = [
            c.get("/account"),
            c.get("/campaigns/not-an-id"),
            c.get("/nowhere"),
            c.get("/campaigns", params={"page": 0}),
        ]
    out.append(httpx.get(sb.base_url + "/account"))
    out.append(httpx.post(sb.base_url + "/campaigns", json={}, headers={"Authorization": f"Bearer {read}"}))
    out.append(httpx.get(sb.url + "/_sandbox/health"))
    assert [r.status_code for r in out] == [200, 404, 404, 422, 401, 403, 200]
    return out


def test_date_is_the_simulated_clock_before_and_after_an_advance(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    for r in _answers(sb):
        assert _dates(r) == ["Tue, 10 Mar 2026 15:00:00 GMT"], r.request.url  # one header, not uvicorn's as well
    now = sb.advance(90_061.5)
    assert now == "2026-03-11T16:01:01Z"
    for r in _answers(sb):
        assert _dates(r) == ["Wed, 11 Mar 2026 16:01:01 GMT"]
        assert parsedate_to_datetime(_dates(r)[0]) == START + timedelta(seconds=90_061)


def test_faulted_and_rate_limited_answers_are_dated_too(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=1)
    key = next(k["key"] for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    sb.advance(3600)
    with httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {key}"}) as c:
        assert c.get("/account").status_code == 200
        limited = c.get("/account")
        sb.set_faults(error_rate=1.0, statuses=[503])
        faulted = c.get("/account")
    assert (limited.status_code, faulted.status_code) == (429, 503)
    assert _dates(limited) == _dates(faulted) == ["Tue, 10 Mar 2026 16:00:00 GMT"]
