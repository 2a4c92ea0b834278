"""API errors as exceptions, mapped to the documented body shapes in one place."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response


class JSON(Response):
    """A fast JSON response (orjson)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class ApiError(Exception):
    """An error answer: status, a one-line message naming cause and fix, optional per-field errors."""

    def __init__(self, status: int, message: str, errors: dict[str, list[str]] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        self.extra = extra

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message}
        if self.errors is not None:
            out["errors"] = self.errors
        out.update(self.extra)
        return out


def invalid(errors: dict[str, list[str]], message: str = "The given data was invalid.") -> ApiError:
    return ApiError(422, message, errors)


def not_found(what: str) -> ApiError:
    return ApiError(
        404, f"{what} not found in this workspace: check the id and that the key belongs to the right workspace."
    )


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> Response:
        return JSON(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
        errors: dict[str, list[str]] = {}
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path")]
            errors.setdefault(".".join(loc) or "body", []).append(str(e.get("msg", "invalid")))
        return JSON({"message": "The given data was invalid.", "errors": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> Response:
        message = {
            404: "Not found: no such endpoint; see the API reference for paths under /api/v1.",
            405: "Method not allowed on this path.",
        }.get(exc.status_code, str(exc.detail))
        return JSON({"message": message}, status_code=exc.status_code)
