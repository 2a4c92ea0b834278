"""`shown`: text from the service as one line that moves nothing on a terminal (tests/alerts/test_alerts_db.py runs
a command with such a name)."""

from __future__ import annotations

from pipelines.core.shown import shown


def test_control_characters_are_written_out_and_the_rest_kept() -> None:
    assert shown("Acme — café 日本 [EU] | x") == "Acme — café 日本 [EU] | x"
    assert shown("a\nb\r\tc\x1b[2J\x7f\x85") == "a\\x0ab\\x0d\\x09c\\x1b[2J\\x7f\\x85"
    assert shown(42) == "42"


def test_the_sync_s_summary_and_markdown_show_a_name_on_its_own_line_and_cell() -> None:
    """The sync's summary and its Prefect artifact's table show the service's workspace name: a newline in it started
    a line of its own, and a `|` ended its table cell."""
    from pipelines.core.report import SyncReport, WorkspaceReport

    report = SyncReport(mode="quick", workspaces=[WorkspaceReport("w1", "A|B\nC", "p1", "quick")])
    assert "\n| A\\|B\\x0aC | 0 | 0 | 0 | 0.0 | " in report.to_markdown()
    assert any(line.startswith("- A|B\\x0aC (w1, pipeline p1): ") for line in report.summary().splitlines())
