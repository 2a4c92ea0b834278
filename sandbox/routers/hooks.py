"""Webhook subscriptions: events, sample, subscribe, unsubscribe."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..deps import caller, raise_if, writer
from ..errors import JSON, invalid, not_found
from ..model import Hook
from ..recipients import new_uuid
from ..timeutil import iso_offset
from ..webhooks import target_problem
from .control import read_json

router = APIRouter(prefix="/hooks", tags=["hooks"])

EVENTS = (
    ("lead.replied", "A recipient replied"),
    ("lead.bounced", "A message hard-bounced"),
    ("lead.unsubscribed", "A recipient unsubscribed"),
    ("lead.opened", "A recipient opened a message"),
    ("lead.clicked", "A recipient clicked a link"),
    ("campaign.completed", "A campaign finished sending"),
)
EVENT_KEYS = tuple(k for k, _ in EVENTS)


@router.get("/events")
async def list_events(request: Request) -> Response:
    caller(request)
    return JSON({"data": [{"key": k, "label": label} for k, label in EVENTS]})


@router.get("/sample")
async def sample(request: Request) -> Response:
    rt, _, _ = caller(request)
    event = request.query_params.get("event") or "lead.replied"
    errors: dict[str, list[str]] = {}
    if event not in EVENT_KEYS:
        errors["event"] = [f"The event must be one of: {', '.join(EVENT_KEYS)}."]
    raise_if(errors)
    example = {
        "event": event,
        "created_at": iso_offset(rt.state.now),
        "data": {
            "lead_id": "3f2b8c1e-5d4a-4b7e-9c2d-1a6e8f0b4c3d",
            "email": "maria.garcia@acmeanalytics.com",
            "first_name": "Maria",
            "company": "Acme Analytics",
        },
    }
    return JSON({"data": [example]})


@router.post("")
async def subscribe(request: Request) -> Response:
    rt, _, ws = writer(request)
    body = await read_json(request)
    errors: dict[str, list[str]] = {}
    target, event = body.get("target_url"), body.get("event")
    if not isinstance(target, str) or not target:
        errors["target_url"] = ["The target_url field is required."]
    else:
        problem = target_problem(target, rt.settings.insecure_hooks)
        if problem:
            errors["target_url"] = [problem]
    if not isinstance(event, str) or not event:
        errors["event"] = ["The event field is required."]
    elif event not in EVENT_KEYS:
        errors["event"] = [f"The event must be one of: {', '.join(EVENT_KEYS)}."]
    if errors:
        raise invalid(errors)
    assert isinstance(target, str) and isinstance(event, str)  # validated above
    with rt.state.lock:
        hook = Hook(id=new_uuid(rt.state.rng_ids), workspace_id=ws.id, event=event, target=target)
        ws.hooks[hook.id] = hook
    return JSON({"id": hook.id, "event": hook.event, "target": hook.target}, status_code=201)


@router.delete("/{hook_id}")
async def unsubscribe(hook_id: str, request: Request) -> Response:
    rt, _, ws = writer(request)
    with rt.state.lock:
        if hook_id not in ws.hooks:
            raise not_found("Webhook subscription")
        del ws.hooks[hook_id]
    return JSON({"message": "Webhook subscription deleted: no more deliveries go to its target."})
