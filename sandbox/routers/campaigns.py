"""Campaigns: list, create, read, update, launch/pause/resume, recipients, stats."""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import views
from ..deps import caller, paging, raise_if
from ..errors import JSON, not_found
from ..model import Campaign, Workspace
from ..recipients import CAMPAIGN_STATUSES, STATUS_CODE

router = APIRouter(prefix="/campaigns", tags=["campaigns"])


def find_campaign(ws: Workspace, campaign_id: str) -> Campaign:
    c = ws.campaign_by_id.get(campaign_id)
    if c is None:
        raise not_found("Campaign")
    return c


@router.get("")
async def list_campaigns(request: Request) -> Response:
    _, _, ws = caller(request)
    errors: dict[str, list[str]] = {}
    page, per_page = paging(request, 100, 25, errors)
    status = request.query_params.get("status")
    if status is not None and status not in CAMPAIGN_STATUSES:
        errors["status"] = [f"The status must be one of: {', '.join(CAMPAIGN_STATUSES)}."]
    raise_if(errors)
    items = sorted(ws.campaigns, key=lambda c: c.id)
    items.sort(key=lambda c: c.created_at, reverse=True)
    if status:
        items = [c for c in items if c.status == status]
    chunk = items[(page - 1) * per_page : page * per_page]
    return JSON({"data": [views.campaign(c) for c in chunk], "meta": views.meta(page, per_page, len(items))})


@router.get("/{campaign_id}")
async def get_campaign(campaign_id: str, request: Request) -> Response:
    _, _, ws = caller(request)
    return JSON({"data": views.campaign(find_campaign(ws, campaign_id))})


@router.get("/{campaign_id}/leads")
async def list_recipients(campaign_id: str, request: Request) -> Response:
    rt, _, ws = caller(request)
    c = find_campaign(ws, campaign_id)
    errors: dict[str, list[str]] = {}
    page, per_page = paging(request, 200, 50, errors)
    status = request.query_params.get("status")
    if status is not None and status not in STATUS_CODE:
        errors["status"] = [f"The status must be one of: {', '.join(STATUS_CODE)}."]
    raise_if(errors)
    r = c.recipients
    if status:
        rows = np.flatnonzero(r.status == STATUS_CODE[status])
        total = int(rows.size)
        rows = rows[(page - 1) * per_page : page * per_page]
    else:
        total = len(r)
        rows = np.arange((page - 1) * per_page, min(page * per_page, total))
    data = views.recipients_page(c, rows, rt.state.directory)
    return JSON({"data": data, "meta": views.meta(page, per_page, total)})


@router.get("/{campaign_id}/stats")
async def campaign_stats(campaign_id: str, request: Request) -> Response:
    rt, _, ws = caller(request)
    return JSON({"data": views.stats(find_campaign(ws, campaign_id), rt.state.now)})
