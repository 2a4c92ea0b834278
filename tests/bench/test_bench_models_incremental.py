"""bench/models_incremental.py's measurements that are not dbt's: a child's age, and the keys a touch touched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb

from devtools.synthetic import make_raw_warehouse


def test_a_child_reports_its_age_from_its_own_start() -> None:
    code = "import time; time.sleep(0.5); from bench.models_build import process_age; print(process_age())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 0.5 <= float(out) < 20, out


def test_a_touch_counts_the_campaigns_domains_and_leads_it_touched(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=2000)
    command = [sys.executable, "-m", "bench.models_incremental", "--child-touch", str(path), "1"]
    line = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute(
            "select campaign_id, workspace_id, email, _dlt_load_id = '1800000001.5' "
            "from outreach.campaign_recipients where deleted_at is null"
        ).fetchall()
        (written,) = con.execute(
            "select count(*) from outreach.campaign_recipients where _dlt_load_id = '1800000001.5'"
        ).fetchone() or (0,)
    keys = {
        "campaigns": lambda r: r[0],
        "email_domains": lambda r: r[2].lower().split("@")[1],
        "leads": lambda r: (r[1], r[2].lower()),
    }
    expected = {kind: [len({key(r) for r in rows if r[3]}), len({key(r) for r in rows})] for kind, key in keys.items()}
    assert line["touched_keys"] == expected
    assert 0 < expected["leads"][0] < expected["leads"][1]
    assert line["touched"]["campaign_recipients"] == written


def test_a_saved_run_goes_first_named_by_its_commit_and_keeps_the_analysis(tmp_path: Path) -> None:
    from bench.models_incremental import save
    from bench.results import RESULTS_JSON

    stored_line, line = json.loads(RESULTS_JSON.read_text())["other"]["models_incremental/-"]["result"][:2]
    stored = {"name": "models_incremental", "date": stored_line["date"], "command": "an older run", "note": "analysis"}
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"scenarios": {}, "machine": {}, "other": {
        "models_incremental/-": {**stored, "result": [stored_line]}}}))  # fmt: skip
    ours = {**line, "tree": "this", "date": "2026-12-01T00:00:00Z"}
    baseline = {**line, "tree": "abc1234", "date": "2026-12-01T00:05:00Z"}

    save([ours, baseline], "python -m bench.models_incremental --cases 1k", out_dir=tmp_path)

    record = json.loads(results.read_text())["other"]["models_incremental/-"]
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=True)
    assert [r["tree"] for r in record["result"]] == [commit.stdout.strip(), "abc1234", stored_line["tree"]]
    assert record["date"] == "2026-12-01T00:00:00Z" and record["note"] == "analysis"
    assert record["command"] == "python -m bench.models_incremental --cases 1k (2026-12-01T00:00:00Z); an older run"
    markdown = (tmp_path / "RESULTS.md").read_text()
    assert "(2026-12-01T00:00:00Z)" in markdown and f"| {commit.stdout.strip()} | 2026-12-01T00:00:00Z |" in markdown
