"""The control plane at /_sandbox/ (no key; DESIGN.md's contract plus documented extensions)."""

from __future__ import annotations

import random
from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import malform
from ..deps import runtime
from ..drift import FLAGS
from ..errors import JSON, invalid
from ..scenario import PARTS
from ..settings import SCENARIOS
from ..timeutil import iso

router = APIRouter(prefix="/_sandbox", tags=["control"])


async def read_json(request: Request) -> dict[str, Any]:
    """The JSON object body of a request ({} when empty); 422 when it is not an object."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = orjson.loads(raw)
    except ValueError as exc:
        raise invalid({"body": ["The body must be a JSON object."]}) from exc
    if not isinstance(body, dict):
        raise invalid({"body": ["The body must be a JSON object."]})
    return body


@router.get("/health")
async def health() -> Response:
    return JSON({"data": {"status": "ok"}})


@router.get("/keys")
async def keys(request: Request) -> Response:
    st = runtime(request).state
    out = []
    for k in st.keys.values():
        ws = st.workspace(k.workspace_id)
        out.append(
            {
                "key": k.key,
                "workspace_id": ws.id,
                "workspace_name": ws.name,
                "level": k.level,
                "role": k.role,
                "signing_secret": ws.signing_secret,
            }
        )
    return JSON({"data": out})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return JSON({"data": runtime(request).metrics.snapshot()})


@router.post("/metrics/reset")
async def metrics_reset(request: Request) -> Response:
    rt = runtime(request)
    rt.metrics.reset()
    return JSON({"data": rt.metrics.snapshot()})


@router.post("/clock")
async def clock(request: Request) -> Response:
    rt = runtime(request)
    body = await read_json(request)
    seconds = body.get("advance_seconds", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise invalid({"advance_seconds": ["advance_seconds must be a number of seconds >= 0."]})
    now = rt.advance(float(seconds))
    return JSON({"data": {"now": iso(now)}})


@router.post("/faults")
async def faults(request: Request) -> Response:
    rt = runtime(request)
    body = await read_json(request)
    errors: dict[str, list[str]] = {}
    rates = {}
    for name in ("error_rate", "timeout_rate", "truncate_rate"):
        v = body.get(name, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            errors[name] = [f"{name} must be a number from 0 to 1."]
        rates[name] = float(v) if not errors.get(name) else 0.0
    if sum(rates.values()) > 1:
        errors["error_rate"] = ["error_rate + timeout_rate + truncate_rate must be at most 1."]
    statuses = body.get("statuses", [500, 502, 503])
    if (
        not isinstance(statuses, list)
        or not statuses
        or not all(isinstance(s, int) and 400 <= s <= 599 for s in statuses)
    ):
        errors["statuses"] = ["statuses must be a non-empty list of HTTP error codes (400-599)."]
    ints = {}
    defaults = (("latency_ms", 0), ("hang_ms", 30_000), ("seed", 0), ("retry_after_s", 1), ("drip_ms", 0))
    for name, default in (*defaults, ("drip_after", 0)):
        v = body.get(name, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            errors[name] = [f"{name} must be an integer >= 0."]
        ints[name] = v if name not in errors else default
    ignore_page = body.get("ignore_page", False)
    if not isinstance(ignore_page, bool):
        errors["ignore_page"] = ["ignore_page must be true or false."]
    if errors:
        raise invalid(errors)
    f = rt.faults
    with f.lock:
        f.error_rate, f.timeout_rate, f.truncate_rate = (
            rates["error_rate"],
            rates["timeout_rate"],
            rates["truncate_rate"],
        )
        f.statuses = tuple(statuses)
        f.latency_ms, f.hang_ms, f.seed = ints["latency_ms"], ints["hang_ms"], ints["seed"]
        f.ignore_page = ignore_page
        f.retry_after_s, f.drip_ms, f.drip_after, f.answered = (
            ints["retry_after_s"],
            ints["drip_ms"],
            ints["drip_after"],
            0,
        )
        f.rng = random.Random(f.seed)
        f.version += 1
    return JSON({"data": f.as_dict()})


@router.get("/faults")
async def get_faults(request: Request) -> Response:
    return JSON({"data": runtime(request).faults.as_dict()})


@router.post("/drift")
async def set_drift(request: Request) -> Response:
    rt = runtime(request)
    body = await read_json(request)
    errors = {name: [f"{name} must be true or false."] for name in FLAGS if not isinstance(body.get(name, False), bool)}
    errors.update({name: [f"unknown setting; use {', '.join(FLAGS)}."] for name in body if name not in FLAGS})
    if errors:
        raise invalid(errors)
    rt.drift.set(**body)
    return JSON({"data": rt.drift.as_dict()})


@router.get("/drift")
async def get_drift(request: Request) -> Response:
    return JSON({"data": runtime(request).drift.as_dict()})


@router.post("/malform")
async def set_malform(request: Request) -> Response:
    """Malformed records from now on (sandbox/malform.py); `{}` turns it off."""
    rt = runtime(request)
    body = await read_json(request)
    errors = malform.problems(body)
    if errors:
        raise invalid(errors)
    rt.malform.set(**body)
    return JSON({"data": rt.malform.as_dict()})


@router.get("/malform")
async def get_malform(request: Request) -> Response:
    return JSON({"data": runtime(request).malform.as_dict()})


@router.post("/rate_limit")
async def rate_limit(request: Request) -> Response:
    rt = runtime(request)
    body = await read_json(request)
    n = body.get("per_minute")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise invalid({"per_minute": ["per_minute must be an integer >= 0 (0 turns the limit off)."]})
    rt.limiter.set_limit(n)
    return JSON({"data": {"per_minute": n}})


@router.post("/credits")
async def credits(request: Request) -> Response:
    rt = runtime(request)
    body = await read_json(request)
    ws_id, balance = body.get("workspace_id"), body.get("balance")
    errors: dict[str, list[str]] = {}
    if ws_id not in rt.state.workspace_by_id:
        errors["workspace_id"] = ["workspace_id must be the id of a sandbox workspace (see /_sandbox/keys)."]
    if isinstance(balance, bool) or not isinstance(balance, int) or balance < 0:
        errors["balance"] = ["balance must be an integer >= 0."]
    if errors:
        raise invalid(errors)
    with rt.state.lock:
        rt.state.workspace(ws_id).credits = balance
    return JSON({"data": {"workspace_id": ws_id, "balance": balance}})


@router.post("/scenario")
async def scenario(request: Request) -> Response:
    """Apply a named scenario now (sandbox/scenario.py); the answer names every id it touched."""
    body = await read_json(request)
    name = body.get("name")
    parts = body.get("parts")
    if name not in SCENARIOS:
        raise invalid({"name": [f"name must be one of {', '.join(SCENARIOS)}."]})
    if parts is not None and (not isinstance(parts, list) or not parts or not set(parts) <= set(PARTS)):
        raise invalid({"parts": [f"parts must be a non-empty list of {', '.join(PARTS)}."]})
    return JSON({"data": runtime(request).apply_scenario(name, tuple(parts) if parts else None)})


@router.get("/scenario")
async def last_scenario(request: Request) -> Response:
    """What the last scenario changed (null when none was applied)."""
    return JSON({"data": runtime(request).scenario})


@router.get("/hooks/deliveries")
async def deliveries(request: Request) -> Response:
    rt = runtime(request)
    items, pending = rt.webhooks.snapshot()
    return JSON({"data": items, "pending": pending})
