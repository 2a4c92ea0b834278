"""Off a terminal (cron, nohup, CI) the sync prints plain progress lines on stderr, at most one per workspace
per interval, and a pause says what it waits for."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, sandbox_sync_args

from pipelines.core import progress
from pipelines.sync.edge import run_sync

LINE = re.compile(r"^progress (?P<label>.+?): stage=\S+ pages=\d+/\d+ rows=\d+ requests=\d+ ")


def test_plain_progress_lines_off_a_terminal(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.5)  # the interval (10 s), shortened to keep the test fast
    sb = make_sandbox(scale="tiny", rate_limit=0, latency_ms=40)
    keys = admin_keys(sb)
    started = time.monotonic()
    run_sync(**sandbox_sync_args(sb, keys, tmp_path / "w.duckdb", tmp_path, progress=True, workers=1))
    seconds = time.monotonic() - started
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("progress ")]
    assert lines, err[-2000:]
    assert all(LINE.match(line) for line in lines), lines[:3]
    per_workspace: dict[str, int] = {}
    for line in lines:
        match = LINE.match(line)
        assert match is not None
        per_workspace[match["label"]] = per_workspace.get(match["label"], 0) + 1
    # labelled "key #N" until the workspace is named, then by its name
    assert len([label for label in per_workspace if not label.startswith("key #")]) == len(keys), per_workspace
    assert max(per_workspace.values()) <= seconds / 0.5 + 1, (per_workspace, seconds)
