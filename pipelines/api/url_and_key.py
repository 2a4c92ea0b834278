"""The API's base URL and key, checked before the first request: a wrong shape or a stray character is a
configuration mistake, told at once, not an outage to retry. Messages never show the key, and show URLs
without user, password, query or fragment (which may carry tokens).
"""

from __future__ import annotations

import re

import httpx

from pipelines.core.errors import BaseUrlError, ConfigError

API_PATH_SUFFIX = "/api/v1"


def check_base_url(base_url: str) -> str:
    """The base URL without a trailing slash, or a ConfigError naming what is wrong with its shape."""
    text = (base_url or "").strip()
    if not text:
        raise ConfigError(
            "no API base URL: set SOURCES__OUTREACH__BASE_URL (ending in /api/v1), "
            "[sources.outreach] base_url in .dlt/config.toml, or pass --base-url"
        )
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise ConfigError(f"the base URL {safe_url(text)!r} is not a URL: use e.g. https://host/api/v1") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"the base URL {safe_url(text)!r} is not an http(s) URL with a host: use e.g. https://host/api/v1"
        )
    shown = safe_url(text)
    if url.userinfo:
        raise ConfigError(
            f"the base URL {shown} holds a user name or password: remove it (the key is sent as a header)"
        )
    if url.query or url.fragment:
        raise ConfigError(
            f"the base URL {shown} has a query (?...) or fragment (#...) after it: use only scheme, host and a path "
            "ending in /api/v1"
        )
    path = url.path.rstrip("/")
    if not path.endswith(API_PATH_SUFFIX):
        # a path that already ends in /api needs only /v1, not a second /api; another version (/api/v2) is
        # replaced, not extended
        head, _, last = path.rpartition("/")
        if re.fullmatch(r"v\d+", last) and head.endswith("/api"):
            path = head.removesuffix("/api")
        missing = API_PATH_SUFFIX.removeprefix("/api") if path.endswith("/api") else API_PATH_SUFFIX
        suggestion = str(url.copy_with(path=path + missing))
        raise BaseUrlError(
            f"the base URL {shown} does not end in {API_PATH_SUFFIX}: the API lives under it; use e.g. {suggestion}"
        )
    return text.rstrip("/")


def check_api_key(api_key: str) -> str:
    """The key without surrounding whitespace, or a ConfigError saying which character is wrong (never the key)."""
    key = (api_key or "").strip()
    if not key:
        raise ConfigError(
            "no API key: set SOURCES__OUTREACH__API_KEY, [sources.outreach] api_key in "
            ".dlt/secrets.toml, or pass --api-key"
        )
    for position, char in enumerate(key, start=1):
        if "!" <= char <= "~":
            continue
        if char in "\r\n":
            what = "a line break"
        elif char.isspace():
            what = "a space or tab"
        elif not char.isascii():
            what = "a non-ASCII character (a typographic quote or dash?)"
        else:
            what = "a control character"
        raise ConfigError(
            f"the API key has {what} at character {position} of {len(key)}: copy the key again exactly "
            "(API keys are printable ASCII without spaces)"
        )
    return key


def safe_url(text: str) -> str:
    """A URL for messages: without user name, password, query and fragment (which may carry tokens)."""
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError):
        return text.split("@")[-1].split("?")[0][:200]
    if url.userinfo or url.query or url.fragment:
        return str(url.copy_with(username=None, password=None, query=None, fragment=None))
    return text


def check_not_a_web_page(
    method: str, path: str, response: httpx.Response, *, base_url: str, api_answered: bool
) -> None:
    """A redirect, or HTML or other non-JSON content, is not the API: the base URL is wrong."""
    status = response.status_code
    if 300 <= status < 400:
        target = response.headers.get("Location", "elsewhere")
        raise BaseUrlError(
            f"{base_url}{path} redirects ({status}) to {safe_url(target)}: use the address it points to "
            "as the base URL (ending in /api/v1)"
        )
    kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if not response.content or not kind or kind.endswith("json"):
        return
    if status < 400 or not api_answered:
        what = "HTML" if "html" in kind else kind
        raise BaseUrlError(
            f"this URL answers {what}, not the API ({method} {base_url}{path} -> {status}): the base URL "
            "must end in /api/v1"
        )
