"""Campaign changes: create, update, launch, pause, resume, add recipients."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import views, vocab
from ..deps import writer
from ..errors import JSON, ApiError, invalid
from ..model import Campaign, Workspace
from ..recipients import Recipients, new_uuid
from ..validate import DEFAULTS, check_campaign_body, parse_time
from .campaigns import find_campaign
from .control import read_json

router = APIRouter(prefix="/campaigns", tags=["campaigns"])

COOLING_DAYS = 30
LEAD_FILTERS = ("company", "industry", "job_title", "location")


@router.post("")
async def create_campaign(request: Request) -> Response:
    rt, _, ws = writer(request)
    body = await read_json(request)
    errors = check_campaign_body(body, create=True, mailbox_ids=set(ws.mailbox_by_id))
    if errors:
        raise invalid(errors)
    v = {**DEFAULTS, **{k: body[k] for k in DEFAULTS if k in body and body[k] is not None}}
    c = Campaign(
        id=new_uuid(rt.state.rng_ids),
        workspace_id=ws.id,
        name=body["name"].strip(),
        status="draft",
        campaign_type=v["campaign_type"],
        schedule_type=v["schedule_type"],
        scheduled_at=parse_time(v["scheduled_at"]) if v["scheduled_at"] else None,
        subject_lines=list(body["subject_lines"]),
        email_bodies=list(body["email_bodies"]),
        window_start=v["send_window_start"],
        window_end=v["send_window_end"],
        days=list(v["send_days"]),
        timezone=v["timezone"],
        follow_up_enabled=v["follow_up_enabled"],
        follow_up_delay_days=v["follow_up_delay_days"],
        max_follow_ups=v["max_follow_ups"],
        stop_on_reply=v["stop_on_reply"],
        delay_between_emails=v["delay_between_emails"],
        track_opens=v["track_opens"],
        email_account_ids=list(dict.fromkeys(v["email_account_ids"])),
        created_at=float(int(rt.state.now)),
        recipients=Recipients(uuid.UUID(new_uuid(rt.state.rng_ids)).int & ~0xFFFFFFFF),
    )
    with rt.state.lock:
        ws.add_campaign(c)
    return JSON({"data": views.campaign(c)}, status_code=201)


@router.patch("/{campaign_id}")
async def update_campaign(campaign_id: str, request: Request) -> Response:
    rt, _, ws = writer(request)
    c = find_campaign(ws, campaign_id)
    body = await read_json(request)
    if c.status == "completed":
        raise invalid({"status": ["A completed campaign cannot be changed; create a new campaign instead."]})
    merged_window = {
        "send_window_start": body.get("send_window_start", c.window_start),
        "send_window_end": body.get("send_window_end", c.window_end),
    }
    errors = check_campaign_body({**body, **merged_window}, create=False, mailbox_ids=set(ws.mailbox_by_id))
    for name in ("name", "subject_lines", "email_bodies"):
        if name in body and body[name] is None:
            errors[name] = [f"The {name} field cannot be null."]
    used = int(np.flatnonzero(c.variant_sent > 0).max() + 1) if c.variant_sent.any() else 0
    if "subject_lines" in body and "subject_lines" not in errors and len(body["subject_lines"]) < used:
        errors["subject_lines"] = [
            f"The campaign has already sent {used} subject variants; send at least {used} subject lines."
        ]
    if errors:
        raise invalid(errors)
    with rt.state.lock:
        _apply_update(c, body)
        c.touch()
    return JSON({"data": views.campaign(c)})


def _apply_update(c: Campaign, body: dict[str, Any]) -> None:
    simple = {
        "name": "name",
        "subject_lines": "subject_lines",
        "email_bodies": "email_bodies",
        "timezone": "timezone",
        "send_days": "days",
        "send_window_start": "window_start",
        "send_window_end": "window_end",
        "delay_between_emails": "delay_between_emails",
        "follow_up_enabled": "follow_up_enabled",
        "follow_up_delay_days": "follow_up_delay_days",
        "max_follow_ups": "max_follow_ups",
        "track_opens": "track_opens",
        "stop_on_reply": "stop_on_reply",
        "campaign_type": "campaign_type",
        "schedule_type": "schedule_type",
    }
    for field, attr in simple.items():
        if field in body and body[field] is not None:
            value = body[field]
            setattr(
                c,
                attr,
                value.strip()
                if isinstance(value, str) and field == "name"
                else (list(value) if isinstance(value, list) else value),
            )
    if "email_account_ids" in body and body["email_account_ids"] is not None:
        c.email_account_ids = list(dict.fromkeys(body["email_account_ids"]))
    if "scheduled_at" in body:
        c.scheduled_at = parse_time(body["scheduled_at"]) if body["scheduled_at"] else None


def _blockers(ws: Workspace, c: Campaign) -> list[dict[str, str]]:
    out = []
    if c.status != "draft":
        out.append(
            {
                "code": "not_draft",
                "message": f"The campaign is {c.status};"
                " only a draft can be launched (use resume for a paused campaign).",
            }
        )
    if len(c.recipients) == 0:
        out.append(
            {
                "code": "no_recipients",
                "message": "The campaign has no recipients; add leads with POST /campaigns/{id}/leads.",
            }
        )
    if not any(i in ws.mailbox_by_id for i in c.email_account_ids):
        out.append(
            {
                "code": "no_mailbox",
                "message": "The campaign has no mailbox; set email_account_ids with PATCH /campaigns/{id}.",
            }
        )
    if ws.credits <= 0:
        out.append({"code": "no_credits", "message": "The workspace has no credits left; top up the balance."})
    return out


_BLOCKER_FIELD = {
    "not_draft": "status",
    "no_recipients": "recipients",
    "no_mailbox": "email_account_ids",
    "no_credits": "credits",
}


@router.post("/{campaign_id}/launch")
async def launch(campaign_id: str, request: Request) -> Response:
    rt, _, ws = writer(request)
    c = find_campaign(ws, campaign_id)
    with rt.state.lock:
        blockers = _blockers(ws, c)
        if blockers:
            raise ApiError(
                422,
                "The campaign is not ready to launch: " + "; ".join(b["code"] for b in blockers) + ".",
                {_BLOCKER_FIELD[b["code"]]: [b["message"]] for b in blockers},
                blockers=blockers,
            )
        c.status = "active"
        c.launched_at = rt.state.now
        c.touch()
    return JSON({"message": "Campaign launched: sending starts inside its send window.", "data": views.campaign(c)})


def _transition(rt: Any, c: Campaign, want_from: str, to: str) -> None:
    with rt.state.lock:
        if c.status != want_from:
            raise invalid(
                {
                    "status": [
                        f"The campaign is {c.status}; only a {want_from} campaign can be"
                        f" {'paused' if to == 'paused' else 'resumed'}."
                    ]
                },
                message=f"The campaign cannot move from {c.status} to {to}.",
            )
        c.status = to
        c.touch()


@router.post("/{campaign_id}/pause")
async def pause(campaign_id: str, request: Request) -> Response:
    rt, _, ws = writer(request)
    c = find_campaign(ws, campaign_id)
    _transition(rt, c, "active", "paused")
    return JSON({"message": "Campaign paused: sending stops, nothing is lost.", "data": views.campaign(c)})


@router.post("/{campaign_id}/resume")
async def resume(campaign_id: str, request: Request) -> Response:
    rt, _, ws = writer(request)
    c = find_campaign(ws, campaign_id)
    _transition(rt, c, "paused", "active")
    return JSON({"message": "Campaign resumed: sending continues.", "data": views.campaign(c)})


@router.post("/{campaign_id}/leads")
async def add_leads(campaign_id: str, request: Request) -> Response:
    rt, _, ws = writer(request)
    c = find_campaign(ws, campaign_id)
    body = await read_json(request)
    persons = _source_people(rt, ws, c, body)
    with rt.state.lock:
        persons = np.unique(persons)  # the same person twice in one request is one recipient
        r = c.recipients
        in_campaign = np.isin(persons, r.person)
        suppressed = np.isin(persons, np.fromiter(ws.blacklist, dtype=np.int64, count=len(ws.blacklist)))
        last = ws.person_last_contact[persons]
        recent = ~np.isnan(last) & (rt.state.now - last < COOLING_DAYS * 86_400) & ~in_campaign & ~suppressed
        add = persons[~in_campaign & ~suppressed & ~recent]
        r.append(add.astype(np.int32))
        ws.in_workspace[add] = True
        c.touch()
        result = {
            "added": int(add.size),
            "skipped": int(np.count_nonzero(in_campaign | suppressed)),
            "cooling": int(np.count_nonzero(recent)),
            "total_recipients": len(r),
        }
    return JSON({"data": result})


def _source_people(rt: Any, ws: Workspace, c: Campaign, body: dict[str, Any]) -> np.ndarray:
    errors: dict[str, list[str]] = {}
    list_id, lead_ids = body.get("list_id"), body.get("lead_ids")
    filters = {k: body[k] for k in LEAD_FILTERS if body.get(k) not in (None, "", [])}
    if c.status == "completed":
        errors["campaign"] = ["A completed campaign cannot take new recipients; create a new campaign."]
    if list_id is None and lead_ids is None:
        errors["list_id"] = ["The list_id field is required unless lead_ids is present."]
        errors["lead_ids"] = ["The lead_ids field is required unless list_id is present."]
    elif list_id is not None and lead_ids is not None:
        errors["list_id"] = ["Send either list_id or lead_ids, not both."]
    lead_list = None
    if list_id is not None and "list_id" not in errors:
        lead_list = ws.lists.get(list_id) if isinstance(list_id, str) else None
        if lead_list is None:
            errors["list_id"] = ["The selected list_id is not a lead list of this workspace."]
        elif lead_list.kind != "people":
            errors["list_id"] = ["The selected list holds companies, not people; import people to add them as leads."]
    if lead_ids is not None and "list_id" not in errors:
        if not isinstance(lead_ids, list) or not all(isinstance(x, str) for x in lead_ids) or not lead_ids:
            errors["lead_ids"] = ["The lead_ids must be a non-empty list of lead ids."]
        elif len(lead_ids) > 1000:
            errors["lead_ids"] = ["The lead_ids may not have more than 1000 items."]
        else:
            unknown = [x for x in lead_ids if x not in ws.lead_index]
            if unknown:
                errors["lead_ids"] = [f"{len(unknown)} of the lead_ids are not leads of this workspace."]
        for k in filters:
            errors[k] = [f"The {k} filter applies only together with list_id."]
    for k, v in filters.items():
        if not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))):
            errors.setdefault(k, [f"The {k} filter must be a string or a list of strings."])
    if errors:
        raise invalid(errors)
    if lead_list is not None:
        return _filter_people(rt.state.directory, lead_list.rows, filters)
    assert isinstance(lead_ids, list)  # validated above: no list, so lead_ids
    rows = [ws.lists[lid].rows[row] for lid, row in (ws.lead_index[x] for x in lead_ids)]
    return np.array(rows, dtype=np.int64)


def _filter_people(d: Any, people: np.ndarray, filters: dict[str, Any]) -> np.ndarray:
    def _any(values: Any, haystack: list[str]) -> np.ndarray:
        values = [values] if isinstance(values, str) else values
        return np.array([any(v.lower() in h.lower() for v in values) for h in haystack], dtype=bool)

    mask = np.ones(people.size, dtype=bool)
    if "company" in filters:
        mask &= _any(filters["company"], [d.company_of(int(p)) for p in people])
    if "industry" in filters:
        mask &= _any(filters["industry"], [vocab.INDUSTRIES[d.company_industry[d.company[p]]] for p in people])
    if "job_title" in filters:
        mask &= _any(filters["job_title"], [vocab.TITLES[d.title[p]][0] for p in people])
    if "location" in filters:
        mask &= _any(filters["location"], [d.person_location(int(p)) for p in people])
    return people[mask].astype(np.int64)
