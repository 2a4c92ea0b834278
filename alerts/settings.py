"""The settings of alerting and the guard: section ``[alerts]`` of ``.dlt/config.toml``, the dlt way.

dlt fills each field from ``ALERTS__<NAME>`` environment variables or ``[alerts]`` in ``.dlt/config.toml``
(``ALERTS__TARGETS`` as a JSON list of Apprise URLs). Apprise URLs may hold tokens and passwords: they are
secrets, never logged or shown whole (`masked_target` shows Apprise's privacy form).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from dlt.common.configuration import configspec, resolve_configuration
from dlt.common.configuration.specs import BaseConfiguration

from pipelines.core.errors import ConfigError
from pipelines.core.setting_bounds import Bound, check_bounds
from pipelines.core.setting_origin import unreadable


@configspec
class AlertSettings(BaseConfiguration):
    """Every setting of `[alerts]`; each rule's threshold has its own (README, "Alerts")."""

    targets: list[str] | None = None
    """Apprise URLs notified on open and resolve: a TOML list, or a JSON list in ALERTS__TARGETS"""
    auto_pause: bool = False
    """the guard pauses mailboxes and campaigns with an open bounce-rate incident (needs a read-write key)"""
    max_pauses_per_run: int = 3
    """the guard pauses at most this many mailboxes and campaigns per run"""
    notify_retries: int = 2
    """retries of a failing notification target (after the first attempt)"""
    notify_timeout_s: float = 10.0
    """seconds a notification target may take to answer"""
    mailbox_bounce_rate: float = 0.02
    """bounces over sends in the last 28 days, per mailbox (fraction)"""
    campaign_bounce_rate: float = 0.02
    """bounced over contacted recipients in the last 28 days, per campaign (fraction)"""
    min_sends: int = 20
    """the bounce-rate rules judge a mailbox or campaign only from this many sends in the window"""
    mailbox_reputation_drop: float = 10.0
    """points the reputation score fell within 7 days"""
    warmup_health_low: float = 80.0
    """warmup health score below this, with warmup on"""
    mailbox_at_limit: int = 3
    """days in a row that sent_today reached daily_send_limit"""
    campaign_stalled: float = 48.0
    """hours an active campaign with pending recipients sent nothing"""
    positive_reply_waiting: float = 2.0
    """hours a positive reply stays unread"""
    sync_stale: float = 30.0
    """minutes since a workspace's last successful sync (twice the quick sync's 15-minute schedule)"""

    __section__: ClassVar[str] = "alerts"

    def __repr__(self) -> str:  # targets hidden: they carry tokens
        return f"AlertSettings(targets={len(self.target_list())}, auto_pause={self.auto_pause})"

    def target_list(self) -> list[str]:
        """The Apprise URLs: a list, or a JSON list in a string; a single URL string is one target."""
        value: Any = self.targets
        if not value:
            return []
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    value = json.loads(text)
                except ValueError:
                    raise ConfigError(
                        "alerts.targets is not a JSON list: set ALERTS__TARGETS='[\"json://host/path\"]'"
                    ) from None
            else:
                value = [text]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError('alerts.targets must be a list of Apprise URLs, e.g. ["json://localhost:8080/hook"]')
        return [v.strip() for v in value]

    def threshold(self, rule: str) -> float:
        return float(getattr(self, rule))


FRACTION = Bound(0, False, "a fraction above 0 and at most 1 (0.02 is 2%)", high=1)
HOURS = Bound(0, False, "more than 0 hours")
#: `[alerts]`: a threshold out of its range would never fire, or fire on everything
BOUNDS: dict[str, Bound] = {
    "max_pauses_per_run": Bound(0, True, "0 or more"),
    "notify_retries": Bound(0, True, "0 or more"),
    "notify_timeout_s": Bound(0, False, "more than 0 seconds"),
    "mailbox_bounce_rate": FRACTION,
    "campaign_bounce_rate": FRACTION,
    "min_sends": Bound(0, True, "0 or more"),
    "mailbox_reputation_drop": Bound(0, False, "above 0 and at most 100 points", high=100),
    "warmup_health_low": Bound(0, False, "a score above 0 and at most 100", high=100),
    "mailbox_at_limit": Bound(1, True, "at least 1 day"),
    "campaign_stalled": HOURS,
    "positive_reply_waiting": HOURS,
    "sync_stale": Bound(0, False, "more than 0 minutes"),
}


def resolve_alert_settings(**explicit: Any) -> AlertSettings:
    """`[alerts]` settings: `explicit` values (None = not given) over dlt configuration over defaults."""
    given = {k: v for k, v in explicit.items() if v is not None}
    try:
        settings = resolve_configuration(AlertSettings(), explicit_value=given or None)
    except Exception as exc:  # noqa: BLE001 - dlt's coercion errors name the field; keep one line
        raise ConfigError(unreadable(exc, ("alerts",), "[alerts]")) from None
    check_bounds({name: getattr(settings, name) for name in BOUNDS}, BOUNDS, "alerts")
    for number, url in enumerate(settings.target_list(), start=1):  # a malformed list fails here, at the edge
        if not loadable(url):  # it would fail every notification, each run, for as long as it is set
            raise ConfigError(
                f"alerts.targets #{number} ({masked_target(url)}) is not a URL Apprise can load: check its scheme "
                "and parts against Apprise's list of services (https://github.com/caronc/apprise/wiki)"
            )
    return settings


def loadable(url: str) -> bool:
    """Whether Apprise makes a target of `url` (a known scheme with the parts that service needs)."""
    import apprise

    return apprise.Apprise.instantiate(url, suppress_exceptions=True) is not None


def masked_target(url: str) -> str:
    """What a line may show of an Apprise URL: the scheme and the first part of Apprise's own privacy form (a token
    as its first and last character, a password as ****); never the path or the options, where webhooks carry their
    secret (json://hooks.example.com/catch/<secret>). The host of the URL as given is no safe part either: many
    services carry their token there (tgram://<bot token>/<chat>). The scheme alone for a URL Apprise cannot load."""
    import apprise

    scheme, sep, _ = url.partition("://")
    plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
    if plugin is None:
        return f"{scheme}://…" if sep else "<target>"
    private = str(plugin.url(privacy=True))  # type: ignore[no-untyped-call]
    first = private.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0]
    return f"{scheme}://{first}/…"


def check_lines() -> list[str]:
    """`outreach check`'s lines for `[alerts]`, read as a build reads them (a setting it refuses raises ConfigError):
    where notifications go, each target masked, and whether the guard pauses."""
    settings = resolve_alert_settings()
    targets = [masked_target(url) for url in settings.target_list()]
    return [
        f"targets: {len(targets)} ({', '.join(targets)})" if targets
        else "targets: none (incidents are listed by `outreach alerts`, not sent)",
        f"auto_pause: {'on' if settings.auto_pause else 'off'} (the deliverability guard)",
    ]  # fmt: skip
