"""A warehouse path in a folder that does not exist (a typo): every command that reads the warehouse says so and
makes nothing there. `outreach models` and `docs` made the folder and a lock file in it (their wait for a first sync
still making the file), `outreach report` the folder of its page, `alerts replies` both."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app


@pytest.mark.parametrize(
    "command",
    [
        ["models", "--no-progress"],
        ["docs"],
        ["report"],
        ["status"],
        ["alerts"],
        ["alerts", "ack", "some-incident"],
        ["alerts", "guard", "--dry-run"],
        ["alerts", "replies"],
    ],
)
def test_a_warehouse_in_a_missing_folder_is_said_missing_and_nothing_is_made(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "typo" / "w.duckdb"
    done = CliRunner().invoke(app, [*command, "--duckdb", str(path)])
    # status reports a state ("nothing synced yet"); the others cannot do what was asked
    assert done.exit_code == (0 if command == ["status"] else 1), done.output
    said = done.output.strip().splitlines()
    assert len(said) == 1 and "does not exist" in said[0] and str(path.parent) in said[0], said
    assert list(tmp_path.iterdir()) == []
