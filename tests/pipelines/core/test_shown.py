"""`shown`: text from the service as one line that moves nothing on a terminal (tests/alerts/test_alerts_db.py runs
a command with such a name)."""

from __future__ import annotations

from pipelines.core.shown import shown


def test_control_characters_are_written_out_and_the_rest_kept() -> None:
    assert shown("Acme — café 日本 [EU] | x") == "Acme — café 日本 [EU] | x"
    assert shown("a\nb\r\tc\x1b[2J\x7f\x85") == "a\\x0ab\\x0d\\x09c\\x1b[2J\\x7f\\x85"
    assert shown(42) == "42"
