"""Email accounts: list, one, pause, resume."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import views
from ..deps import bool_param, caller, raise_if, writer
from ..errors import JSON, not_found
from ..model import Mailbox, Workspace

router = APIRouter(prefix="/email-accounts", tags=["email-accounts"])


def _find(ws: Workspace, mailbox_id: str) -> Mailbox:
    mb = ws.mailbox_by_id.get(mailbox_id)
    if mb is None:
        raise not_found("Email account")
    return mb


@router.get("")
async def list_mailboxes(request: Request) -> Response:
    _, _, ws = caller(request)
    errors: dict[str, list[str]] = {}
    active = bool_param(request, "active", errors)
    raise_if(errors)
    items = [m for m in ws.mailboxes if active is None or m.is_active == active]
    return JSON({"data": [views.mailbox(m) for m in items]})


@router.get("/{mailbox_id}")
async def get_mailbox(mailbox_id: str, request: Request) -> Response:
    _, _, ws = caller(request)
    return JSON({"data": views.mailbox(_find(ws, mailbox_id))})


@router.post("/{mailbox_id}/pause")
async def pause_mailbox(mailbox_id: str, request: Request) -> Response:
    _, _, ws = writer(request)
    mb = _find(ws, mailbox_id)
    mb.is_active = False
    return JSON(
        {"message": "Email account paused: it sends no campaign email until resumed.", "data": views.mailbox(mb)}
    )


@router.post("/{mailbox_id}/resume")
async def resume_mailbox(mailbox_id: str, request: Request) -> Response:
    _, _, ws = writer(request)
    mb = _find(ws, mailbox_id)
    mb.is_active = True
    return JSON({"message": "Email account resumed.", "data": views.mailbox(mb)})
