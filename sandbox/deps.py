"""Shared route helpers: the runtime, the caller's key and workspace, query parsing with 422s."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from .errors import ApiError, invalid
from .model import ApiKey, Workspace

FORBIDDEN_READ = "Forbidden: this API key is read-only; use a read and write key for changes."
FORBIDDEN_FORMER = (
    "Forbidden: this key was made by someone who is no longer an owner or admin of the workspace; create a new key."
)


def runtime(request: Request) -> Any:
    return request.app.state.sandbox


def caller(request: Request) -> tuple[Any, ApiKey, Workspace]:
    """(runtime, key, workspace) of an authenticated /api/v1 request (the gate put the key in scope)."""
    rt = runtime(request)
    key: ApiKey = request.scope["state"]["api_key"]
    return rt, key, rt.state.workspace(key.workspace_id)


def writer(request: Request) -> tuple[Any, ApiKey, Workspace]:
    """Like `caller`, but the key must be allowed to change data (403 otherwise)."""
    rt, key, ws = caller(request)
    if key.level != "rw":
        raise ApiError(403, FORBIDDEN_READ)
    if key.role != "admin":
        raise ApiError(403, FORBIDDEN_FORMER)
    return rt, key, ws


def int_param(
    request: Request, name: str, default: int, low: int, high: int | None, errors: dict[str, list[str]]
) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        errors[name] = [f"The {name} must be an integer."]
        return default
    if value < low or (high is not None and value > high):
        errors[name] = [
            f"The {name} must be between {low} and {high}."
            if high is not None
            else f"The {name} must be at least {low}."
        ]
        return default
    return value


def bool_param(request: Request, name: str, errors: dict[str, list[str]]) -> bool | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    errors[name] = [f"The {name} field must be true or false."]
    return None


def paging(request: Request, max_per_page: int, default: int, errors: dict[str, list[str]]) -> tuple[int, int]:
    """(page, per_page); with the `ignore_page` fault the page parameter is not read at all: always page 1."""
    per_page = int_param(request, "per_page", default, 1, max_per_page, errors)
    if runtime(request).faults.ignore_page:
        return 1, per_page
    page = int_param(request, "page", 1, 1, None, errors)
    return page, per_page


def raise_if(errors: dict[str, list[str]]) -> None:
    if errors:
        raise invalid(errors)
