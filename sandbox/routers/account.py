"""GET /account."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import views
from ..deps import caller
from ..errors import JSON

router = APIRouter(tags=["account"])


@router.get("/account")
async def get_account(request: Request) -> Response:
    _, _, ws = caller(request)
    return JSON({"data": views.account(ws)})
