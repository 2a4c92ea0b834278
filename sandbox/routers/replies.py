"""Replies: list (newest first), one with body, mark read."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import views
from ..deps import bool_param, caller, paging, raise_if, writer
from ..errors import JSON, not_found
from ..model import Reply, Workspace

router = APIRouter(prefix="/replies", tags=["replies"])


def _find(ws: Workspace, reply_id: str) -> Reply:
    rep = ws.reply_by_id.get(reply_id)
    if rep is None:
        raise not_found("Reply")
    return rep


@router.get("")
async def list_replies(request: Request) -> Response:
    _, _, ws = caller(request)
    errors: dict[str, list[str]] = {}
    page, per_page = paging(request, 100, 25, errors)
    unread = bool_param(request, "unread", errors)
    campaign_id = request.query_params.get("campaign_id")
    if campaign_id is not None and campaign_id not in ws.campaign_by_id:
        errors["campaign_id"] = ["The selected campaign_id is not a campaign of this workspace."]
    raise_if(errors)
    items = ws.filtered_replies(campaign_id, bool(unread))
    chunk = items[(page - 1) * per_page : page * per_page]
    return JSON({"data": [views.reply(r) for r in chunk], "meta": views.meta(page, per_page, len(items))})


@router.get("/{reply_id}")
async def get_reply(reply_id: str, request: Request) -> Response:
    _, _, ws = caller(request)
    return JSON({"data": views.reply(_find(ws, reply_id), with_body=True)})


@router.post("/{reply_id}/read")
async def mark_read(reply_id: str, request: Request) -> Response:
    _, _, ws = writer(request)
    rep = _find(ws, reply_id)
    if not rep.is_read:
        rep.is_read = True
        ws.replies_version += 1
    return JSON({"message": "Reply marked as read.", "data": views.reply(rep)})
