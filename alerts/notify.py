"""Notifications: every Apprise target of `[alerts] targets`, and a Prefect event per incident.

A failing target (refused, timed out, an error status) is retried `notify_retries` times, then logged in one
line that names the target by `masked_target` only (its URL may hold a token), and the outcome is returned for
the incident's row: a notification never fails the sync or the build, and stays owed until a later evaluation
delivers it (`alerts/outbox.py`). The Prefect events
`outreach.alert.opened` / `outreach.alert.resolved` carry the rule and the subject as related resources, so a
Prefect automation can act on them (README, "Alerts").
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apprise

from alerts.settings import AlertSettings, masked_target

log = logging.getLogger(__name__)

EVENT_OPENED = "outreach.alert.opened"
EVENT_RESOLVED = "outreach.alert.resolved"
RETRY_DELAYS_S = (0.5, 2.0, 5.0)


@dataclass
class Delivery:
    target: str  # masked
    ok: bool
    attempts: int
    reason: str = ""

    def line(self) -> str:
        return (
            f"{self.target}: sent"
            if self.ok
            else f"{self.target}: failed after {self.attempts} attempt(s): {self.reason}"
        )


def _with_timeouts(url: str, timeout_s: float) -> str:
    """Apprise's HTTP targets take `cto` (connect) and `rto` (read) timeouts as URL arguments."""
    if "rto=" in url or "://" not in url:
        return url
    return f"{url}{'&' if '?' in url else '?'}cto={timeout_s:g}&rto={timeout_s:g}"


def send_one(url: str, title: str, body: str, settings: AlertSettings) -> Delivery:
    """Send to one target with retries; never raises."""
    shown = masked_target(url)
    reason = "not an Apprise URL Apprise can load"
    attempts = 0
    for attempt in range(settings.notify_retries + 1):
        attempts = attempt + 1
        bundle = apprise.Apprise()
        if not bundle.add(_with_timeouts(url, settings.notify_timeout_s)):
            break  # a malformed URL does not get better with retries
        # the message alone: Apprise's own format starts each line with its time and level
        with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:  # type: ignore[no-untyped-call]
            ok = bundle.notify(title=title, body=body)
        if ok:
            return Delivery(shown, True, attempts)
        reason = _last_line(captured.getvalue()) or "the target refused the notification"
        if attempt < settings.notify_retries:
            time.sleep(RETRY_DELAYS_S[min(attempt, len(RETRY_DELAYS_S) - 1)])
    return Delivery(shown, False, attempts, reason)


def _last_line(text: Any) -> str:
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    return lines[-1][-300:] if lines else ""


def notify_all(title: str, body: str, settings: AlertSettings) -> list[Delivery]:
    return [send_one(url, title, body, settings) for url in settings.target_list()]


def outcome(deliveries: list[Delivery]) -> str:
    """The incident row's record of one notification."""
    if not deliveries:
        return "no targets"
    return "; ".join(d.line() for d in deliveries)


def message(kind: str, incident: dict[str, Any]) -> tuple[str, str]:
    """Title and body of an incident's notification; the title names the rule and the subject."""
    rule, label = incident["rule"], incident.get("subject_label") or incident["subject_id"]
    verb = "OPEN" if kind == "opened" else "RESOLVED"
    title = f"[outreach] {verb} {rule}: {incident['subject_type']} {label}"
    body = "\n".join(
        [
            f"{incident.get('detail') or ''}".strip(),
            f"value {_fmt(incident.get('value'))}, threshold {_fmt(incident.get('threshold'))}"
            + (" (estimated)" if incident.get("is_estimate") else ""),
            f"workspace {incident.get('workspace_id')}, incident {incident['incident_id']} "
            f"(outreach alerts ack {incident['incident_id']})",
        ]
    )
    return title, body


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{float(value):.4g}"


def prefect_configured() -> bool:
    """A Prefect API to send events to (PREFECT_API_URL, set in served and deployed runs). Prefect is imported
    only where one may be configured (`_prefect_may_have_an_api`)."""
    if not _prefect_may_have_an_api():
        return False
    from prefect.settings import PREFECT_API_URL

    return bool(PREFECT_API_URL.value())


def emit_prefect_event(kind: str, incident: dict[str, Any]) -> bool:
    """`outreach.alert.opened|resolved` with the incident as resource and the rule and subject as related
    resources; False (logged once) when Prefect cannot take it. Never raises. Only with a Prefect API to send to
    (PREFECT_API_URL, set in served and deployed runs): without one, Prefect would start a temporary server."""
    if not _prefect_may_have_an_api():
        log.debug("alerts: no Prefect API configured, no Prefect event for %s", incident["rule"])
        return False
    from prefect.events import emit_event

    if not prefect_configured():
        log.debug("alerts: no PREFECT_API_URL, no Prefect event for %s", incident["rule"])
        return False

    rule, subject = incident["rule"], incident["subject_id"]
    try:
        event = emit_event(
            event=EVENT_OPENED if kind == "opened" else EVENT_RESOLVED,
            resource={
                "prefect.resource.id": f"outreach.alert.{incident['incident_id']}",
                "prefect.resource.name": f"{rule} {incident.get('subject_label') or subject}",
                "outreach.rule": rule,
                "outreach.subject": str(subject),
            },
            related=[
                {"prefect.resource.id": f"outreach.rule.{rule}", "prefect.resource.role": "rule"},
                {
                    "prefect.resource.id": f"outreach.{incident['subject_type']}.{subject}",
                    "prefect.resource.role": "subject",
                },
            ],
            payload={
                "value": incident.get("value"),
                "threshold": incident.get("threshold"),
                "workspace_id": incident.get("workspace_id"),
                "detail": incident.get("detail"),
            },
        )
    except Exception as exc:  # noqa: BLE001 - an event that cannot be sent never fails the build
        log.warning("alerts: Prefect event for %s not emitted: %s", rule, str(exc).splitlines()[0] if str(exc) else exc)
        return False
    return event is not None


def _prefect_may_have_an_api() -> bool:
    """Whether Prefect can have an API URL, decided without importing Prefect where it cannot: importing it
    creates its home (~/.prefect), and where that fails (a read-only or missing HOME: cron, containers) it
    prints a warning on every `outreach models`. The URL comes from the environment, a profile in that home
    (or at PREFECT_PROFILES_PATH), or the working directory's .env, prefect.toml or pyproject.toml
    ([tool.prefect]); with none of them, there is nothing to send to. Once Prefect is imported (a flow run, a
    test's settings), it answers itself."""
    if os.environ.get("PREFECT_API_URL") or "prefect.settings" in sys.modules:
        return True
    home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    if profiles.is_file() or Path(".env").is_file() or Path("prefect.toml").is_file():
        return True
    pyproject = Path("pyproject.toml")
    return pyproject.is_file() and "[tool.prefect" in pyproject.read_text(errors="replace")
