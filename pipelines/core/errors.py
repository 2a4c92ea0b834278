"""Typed errors of the sync. Each message is one line naming the cause and the fix.

Messages never contain an API key: build them from status codes, paths and the
API's own error text only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipelines.core.root_cause import one_line
from pipelines.core.shown import shown


class OutreachError(Exception):
    """Base of every error the pipeline raises on purpose."""


class ConfigError(OutreachError):
    """A required setting is missing or malformed."""


class AuthError(OutreachError):
    """401: the key is missing or invalid."""


class ForbiddenError(OutreachError):
    """403: the key may not perform this operation."""


class NotFoundError(OutreachError):
    """404: the id is not in this key's workspace."""


class InvalidRequestError(OutreachError):
    """422: the API refused the input; `errors` holds the API's per-field list."""

    def __init__(self, message: str, errors: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.errors: dict[str, Any] = dict(errors or {})


class ApiUnavailableError(OutreachError):
    """The API kept failing (5xx, 429, time-outs, bad JSON) after every retry."""


class ServiceUnreachableError(ApiUnavailableError):
    """No HTTP answer at the base URL: connection refused, unknown host, TLS or connect time-out."""


class BaseUrlError(ConfigError):
    """The base URL answers, but not as the API: HTML, a redirect, or 404 on GET /account."""


class PagingError(OutreachError):
    """A paged list broke its own `meta`: a page other than the one asked for, or rows missing."""


class WarehouseError(OutreachError):
    """The warehouse cannot be written: bad path, read-only, not DuckDB, locked, or the disk is full."""


class WarehousePathError(WarehouseError):
    """A warehouse only its owner can mend: not a DuckDB file, damaged, a directory, read-only, no permission, no
    space. A retry cannot pass (a file another process holds is a plain WarehouseError: that process ends)."""


def postgres_unreachable(label: str, exc: BaseException) -> str:
    """The line for a PostgreSQL warehouse that could not be connected to (no server, no such database or role, a
    wrong password): libpq's own reason, which names no password, and where to fix it."""
    return (
        f"cannot connect to PostgreSQL {label}: {one_line(exc)} (check DESTINATION__POSTGRES__CREDENTIALS: host, "
        "port, user, password and an existing database; and that the server is running)"
    )


def auth_error(path: str) -> AuthError:
    return AuthError(
        f"API key rejected (401) on GET {path}: check SOURCES__OUTREACH__API_KEY (or __API_KEYS, --api-key, "
        "[sources.outreach] api_key or api_keys in .dlt/secrets.toml)"
    )


def forbidden_error(method: str, path: str) -> ForbiddenError:
    return ForbiddenError(
        f"API key not allowed to {method} {path} (403): use a read-and-write key made by a "
        "current workspace owner or admin"
    )


def not_found_error(method: str, path: str) -> NotFoundError:
    return NotFoundError(
        f"{method} {path} not found (404): the id does not exist in this key's workspace; "
        "check the id and that the key belongs to the right workspace"
    )


def invalid_request_error(method: str, path: str, body: Any) -> InvalidRequestError:
    message = ""
    errors: Mapping[str, Any] = {}
    if isinstance(body, Mapping):
        message = str(body.get("message") or "")
        raw = body.get("errors")
        if isinstance(raw, Mapping):
            errors = raw
    detail = shown("; ".join(f"{field}: {_flatten(msgs)}" for field, msgs in errors.items()))
    text = f"{method} {path} refused (422): {shown(message) or 'invalid input'}"
    if detail:
        text += f" [{detail}]"
    return InvalidRequestError(text + ": fix the listed fields and retry", errors)


def _flatten(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)
