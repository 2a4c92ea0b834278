"""Delivery signatures (api-spec part 5): ``v1=`` + hex HMAC-SHA256 of ``timestamp + "." + body``."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping


class NoMatch:
    """Sentinel: no configured secret produced the signature."""

    def __repr__(self) -> str:
        return "NO_MATCH"


NO_MATCH = NoMatch()


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Service-Signature`` value the service sends for this body and timestamp."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def _candidates(header: str) -> list[str]:
    """The ``v1=`` hex values in a header (several may be sent during a secret rotation)."""
    out = []
    for part in header.replace(";", ",").split(","):
        scheme, _, value = part.strip().partition("=")
        if scheme == "v1" and value:
            out.append(value.strip().lower())
    return out


def verify(secrets: Mapping[str | None, str], timestamp: str, body: bytes, header: str) -> str | None | NoMatch:
    """The workspace whose secret signed this delivery (None for an unnamed secret), or NO_MATCH.

    Every secret is checked with `hmac.compare_digest`, whatever matched before,
    so the time taken says nothing about which secret or how much of it matched.
    """
    given = _candidates(header)
    found: str | None | NoMatch = NO_MATCH
    for workspace_id, secret in secrets.items():
        expected = sign(secret, timestamp, body)[3:]
        for value in given:
            if hmac.compare_digest(expected.encode("ascii"), value.encode("ascii", "replace")) and found is NO_MATCH:
                found = workspace_id
    return found
