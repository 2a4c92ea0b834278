"""Alerts on the warehouse: rules, incidents (`reporting.alert_incidents`), notifications through Apprise and
Prefect events, and the opt-in deliverability guard (`outreach.guard_actions`). README, "Alerts".

Layering: alerts reads and writes the warehouse through `pipelines` (its API client, settings and warehouse);
`flows` calls it; `pipelines` and `models` never import it.
"""

from alerts.run import AlertRun, after_build, after_events, evaluate
from alerts.settings import AlertSettings, resolve_alert_settings

__all__ = ["AlertRun", "AlertSettings", "after_build", "after_events", "evaluate", "resolve_alert_settings"]
