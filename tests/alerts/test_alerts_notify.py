"""Notifications: a JSON webhook target receives them; a target that refuses or times out is retried, logged in
one line, and recorded, never raised; `outreach alerts test` reports each target."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alerts.notify import message, notify_all, outcome
from alerts.settings import AlertSettings, masked_target, resolve_alert_settings
from flows.cli import app
from pipelines.core.errors import ConfigError
from tests.alerts_support import refused_url, sink

INCIDENT = {
    "incident_id": "abc123def456",
    "rule": "mailbox_bounce_rate",
    "subject_type": "mailbox",
    "subject_id": "m-1",
    "subject_label": "ann@example.com",
    "value": 0.066,
    "threshold": 0.02,
    "is_estimate": True,
    "workspace_id": "w-1",
    "detail": "16.7 bounces over 252 sends in 28 days",
}


def _settings(*targets: str, **kw: object) -> AlertSettings:
    return resolve_alert_settings(targets=list(targets), notify_retries=1, notify_timeout_s=1.0, **kw)


def test_a_json_webhook_receives_the_incident_with_rule_and_subject_in_the_title() -> None:
    with sink() as s:
        title, body = message("opened", INCIDENT)
        deliveries = notify_all(title, body, _settings(s.url))
    assert [d.ok for d in deliveries] == [True]
    assert s.titles() == ["[outreach] OPEN mailbox_bounce_rate: mailbox ann@example.com"]
    assert "(estimated)" in s.received[0]["message"] and "outreach alerts ack abc123def456" in s.received[0]["message"]
    assert outcome(deliveries) == "json://127.0.0.1:" + str(s.port) + "/…: sent"


def test_a_refusing_target_is_retried_said_in_one_line_and_the_others_still_get_it() -> None:
    with refused_url() as bad, sink() as s:
        deliveries = notify_all("t", "b", _settings(bad, s.url))
    assert [d.ok for d in deliveries] == [False, True]
    assert deliveries[0].attempts == 2  # notify_retries = 1
    line = deliveries[0].line()
    assert "failed after 2 attempt(s): " in line and "\n" not in line
    # Apprise's message alone: its log format put its time and level before it ("2026-11-30 18:15:35,356 - WARNING")
    assert deliveries[0].reason[:1].isalpha() and " - WARNING - " not in line, line
    assert len(s.received) == 1


def test_a_target_that_times_out_fails_within_its_timeout_and_retries() -> None:
    with sink(delay_s=3.0) as slow:
        started = time.monotonic()
        (delivery,) = notify_all("t", "b", _settings(slow.url))
        elapsed = time.monotonic() - started
    assert not delivery.ok and delivery.attempts == 2
    assert elapsed < 6.0, elapsed  # two 1 s timeouts and one back-off, not two 3 s answers


def test_targets_come_from_the_environment_as_a_json_list_and_are_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ALERTS__TARGETS", '["slack://TokenA/TokenB/TokenC", "json://localhost:9/x"]')
    settings = resolve_alert_settings()
    assert settings.target_list() == ["slack://TokenA/TokenB/TokenC", "json://localhost:9/x"]
    assert "Token" not in repr(settings) and masked_target("mailtos://user:secret@smtp.example.com/x") == (
        "mailtos://user:****@smtp.example.com/…"
    )
    assert settings.auto_pause is False and settings.max_pauses_per_run == 3
    monkeypatch.setenv("ALERTS__MAX_PAUSES_PER_RUN", "-1")
    with pytest.raises(ConfigError, match="max_pauses_per_run"):
        resolve_alert_settings()
    monkeypatch.delenv("ALERTS__MAX_PAUSES_PER_RUN")
    # 2 meant as 2%: the rule would never have fired (a bounce rate is at most 1)
    monkeypatch.setenv("ALERTS__CAMPAIGN_BOUNCE_RATE", "2")
    with pytest.raises(ConfigError) as info:
        resolve_alert_settings()
    assert (
        str(info.value) == "alerts.campaign_bounce_rate must be a fraction above 0 and at most 1 (0.02 is 2%), got 2.0"
    )


def test_outreach_alerts_test_reports_each_target(monkeypatch: pytest.MonkeyPatch) -> None:
    with refused_url() as bad, sink() as s:
        monkeypatch.setenv("ALERTS__TARGETS", f'["{s.url}", "{bad}"]')
        monkeypatch.setenv("ALERTS__NOTIFY_RETRIES", "0")
        result = CliRunner().invoke(app, ["alerts", "test"])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].endswith(": sent") and "failed after 1 attempt(s)" in lines[1]
    assert s.titles() == ["[outreach] test notification"]
    monkeypatch.delenv("ALERTS__TARGETS")
    result = CliRunner().invoke(app, ["alerts", "test"])
    assert result.exit_code == 1 and "no targets" in result.output


def test_outreach_alerts_test_says_a_failure_once() -> None:
    """As a user runs it: the failed target's line was printed twice, once more by a warning on stderr."""
    with refused_url() as bad:
        env = {**os.environ, "ALERTS__TARGETS": f'["{bad}"]', "ALERTS__NOTIFY_RETRIES": "0"}
        outreach = str(Path(sys.executable).with_name("outreach"))
        result = subprocess.run([outreach, "alerts", "test"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stderr == "", result
    assert len(result.stdout.splitlines()) == 1 and "failed after 1 attempt(s): " in result.stdout, result


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # the token where a host would be: shown whole as "the host" (tgram://123456789:SECRET.../…)
        ("tgram://123456789:SECRETtelegramtokenABCDEFGHIJKLMN/12345", "tgram://1...N/…"),
        ("pover://SECRETuserkeyAAAAAAAAAAAAAAAAAAAA@SECRETtokenBBBBBBBBBBBBBBBBBBBBBB", "pover://S...A@S...B/…"),
        ("slack://T1SECRETAA/B2SECRETBB/C3SECRETCCCCCCCCCCCCCCCC", "slack://T...A/…"),
        # a webhook's secret in its path or its options
        ("json://hooks.example.com/hooks/catch/123/SECRETPATH/", "json://hooks.example.com/…"),
        ("json://user:SECRETpw@host:8080/path?token=SECRET", "json://user:****@host:8080/…"),
        ("mailto://user:SECRETpw@127.0.0.1:9?to=a@b.c", "mailto://…"),  # one Apprise cannot load
    ],
)
def test_a_shown_target_holds_no_secret(url: str, shown: str) -> None:
    assert masked_target(url) == shown and "SECRET" not in shown


def test_a_target_apprise_cannot_load_is_refused_when_the_settings_are_read() -> None:
    """It was taken, and every evaluation then owed it a notification it could never send."""
    targets = '["json://127.0.0.1:9/hook", "mailto://user:SECRETpw@127.0.0.1:9?to=a@b.c"]'
    said = (
        "alerts.targets #2 (mailto://…) is not a URL Apprise can load: check its scheme and parts against Apprise's "
        "list of services (https://github.com/caronc/apprise/wiki)"
    )
    with pytest.raises(ConfigError) as info:
        resolve_alert_settings(targets=targets)
    assert str(info.value) == said
    env = {**os.environ, "ALERTS__TARGETS": targets}
    outreach = str(Path(sys.executable).with_name("outreach"))
    result = subprocess.run([outreach, "alerts", "test"], env=env, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", f"error: {said}\n"), result
    assert len(resolve_alert_settings(targets='["json://127.0.0.1:9/hook"]').target_list()) == 1
