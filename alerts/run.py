"""One evaluation: the rules over the warehouse, the incidents they open and resolve, their notifications and
Prefect events, then (opt-in) the guard. What `outreach models` and the sync flow run after every build, and
what the speed-to-lead loop runs when webhook events land (the `positive_reply_waiting` rule alone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alerts import guard, outbox, rules, store
from alerts.db import connect
from alerts.settings import AlertSettings, resolve_alert_settings
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.diagnose import explain

log = logging.getLogger(__name__)

Echo = Callable[[str], None]


@dataclass
class AlertRun:
    """What one evaluation did."""

    now: datetime | None = None
    evaluated: list[str] = field(default_factory=list)
    findings: int = 0
    opened: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # rule: reason, one line each
    paused: int = 0
    events_loaded: int = 0  # webhook events loaded just before (the speed-to-lead loop)
    notified: int = 0  # notifications delivered to every target (owed ones from earlier runs included)
    owed: int = 0  # notifications still owed: a target failed, the next evaluation retries them
    untold: int = 0  # notifications settled with no target set: nobody was told

    def summary(self) -> str:
        text = (
            f"alerts: {len(self.opened)} opened, {len(self.resolved)} resolved, {self.findings} in breach "
            f"({len(self.evaluated)} rules)"
        )
        if self.owed:
            text += f"; {self.owed} notification(s) owed (`outreach alerts` says why; the next run retries)"
        if self.untold:
            text += f"; {self.untold} notification(s) sent nowhere: no targets are set ([alerts] targets)"
        return text + (f"; rules that failed: {'; '.join(self.errors)}" if self.errors else "")


def evaluate(
    warehouse: Warehouse,
    *,
    settings: AlertSettings | None = None,
    only: Sequence[str] | None = None,
    now: datetime | None = None,
    guard_run: bool = True,
    echo: Echo | None = None,
) -> AlertRun:
    """Run the rules (`only` some of them), reconcile the incidents, deliver the notifications owed (earlier
    failures first, then this run's transitions), and run the guard when `auto_pause` is on. `now` (the
    service's clock) defaults to the warehouse's newest timestamp."""
    cfg = settings or resolve_alert_settings()
    say = echo or (lambda line: log.info("%s", line))
    run = AlertRun()
    with connect(warehouse) as db:
        clock = rules.service_now(db)
        run.now = max(t for t in (clock, now) if t is not None) if (clock or now) else None
        if run.now is None:
            run.errors.append("no data: sync first")
            return run
        findings: list[rules.Finding] = []
        for name in only or rules.RULES:
            try:
                findings.extend(rules.REGISTRY[name](db, cfg, run.now))
            except Exception as exc:  # noqa: BLE001 - a broken rule leaves its incidents as they are, said in one line
                run.errors.append(f"{name}: {explain(exc)}")
                if echo is None:  # a caller that shows lines shows the summary, which names it
                    log.warning("alerts: rule %s could not run: %s", name, explain(exc))
                continue
            run.evaluated.append(name)
        run.findings = len(findings)
        for transition in store.reconcile(db, findings, run.evaluated, run.now):
            (run.opened if transition.kind == "opened" else run.resolved).append(transition.incident)
        # saved first, sent after: what a crash or a refusing target leaves owed goes out on the next run
        delivered = outbox.deliver(db, cfg)
        run.notified, run.owed, run.untold = len(delivered.sent), delivered.owed, delivered.untold
        if guard_run and cfg.auto_pause and (only is None or "mailbox_bounce_rate" in only):
            from pipelines.core.config import resolve_settings

            run.paused = guard.run_guard(db, cfg, resolve_settings(), dry_run=False, echo=say)
    return run


def after_build(warehouse: Warehouse, echo: Echo | None = None) -> str:
    """The step after every model build: never raises (a build that passed stays passed); returns one line."""
    try:
        return evaluate(warehouse, echo=echo).summary()
    except Exception as exc:  # noqa: BLE001 - alerting must not fail the build; the line says why it did not run
        line = f"alerts: not evaluated: {explain(exc)}"
        if echo is None:  # a caller that shows lines (`outreach models`) shows the one returned
            log.warning("%s", line)
        return line


def after_events(warehouse: Warehouse, service_clock: datetime | None = None, echo: Echo | None = None) -> AlertRun:
    """Speed to lead: `positive_reply_waiting` alone, right after webhook events were loaded. `service_clock`
    is the service's clock read from the API (its HTTP Date), so an unread reply ages even when no event
    follows it."""
    return evaluate(warehouse, only=["positive_reply_waiting"], now=service_clock, guard_run=False, echo=echo)
