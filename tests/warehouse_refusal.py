"""A path that is no warehouse, given as `--duckdb`: every command that opens the warehouse refuses it in the same
one line, before any API request. No tests here; the `test_*_given.py` files import it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

OUTREACH = str(Path(sys.executable).with_name("outreach"))


def assert_every_command_refuses(path: Path, said: str, api: list[str]) -> None:
    """Each command exits 1 with `error: <said>` alone (check: the line among its problems), within a minute."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    commands = (
        ["sync", "--no-progress", *api],
        ["models", "--no-progress"],
        ["docs"],
        ["status"],
        ["alerts"],
        ["alerts", "ack", "some-incident"],
    )
    for command in commands:
        done = subprocess.run(
            [OUTREACH, *command, "--duckdb", str(path)], capture_output=True, text=True, timeout=60, env=env,
            check=False,
        )  # fmt: skip
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {said}\n"), command
    checked = subprocess.run(
        [OUTREACH, "check", "--duckdb", str(path), *api], capture_output=True, text=True, timeout=60, env=env,
        check=False,
    )  # fmt: skip
    assert checked.returncode == 1 and f"  problem: {said}" in checked.stdout.splitlines(), checked.stdout
