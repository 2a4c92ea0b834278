"""On DuckDB an incremental model's table is renamed aside for the build, not copied, with an undo record of
the rows it replaces (models/macros/incremental_atomic.sql): a failed build puts the table back as it was, and
a build that was killed while the table was aside is put back by the next build's start."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devtools.synthetic import make_raw_warehouse
from models import PROJECT_DIR, change_share
from models.build import build
from models.errors import DataTestFailure
from tests.duckdb_sql import read_sql

pytestmark = pytest.mark.timeout(300)


def _execute(path: Path, sql: str) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute(sql)
    finally:
        con.close()


def _leads(path: Path) -> list[tuple[Any, ...]]:
    return read_sql(path, "select * from reporting.lead_engagement order by all")


def _scratch(path: Path) -> list[str]:
    """What a build leaves beside the published tables: `__next` relations and undo records."""
    rows = read_sql(
        path,
        "select table_schema || '.' || table_name from information_schema.tables "
        "where (table_schema = 'reporting' and table_name like '%\\_\\_next' escape '\\') "
        "or (table_schema = 'reporting_inputs' and (table_name like 'incremental\\_undo\\_%' escape '\\' "
        "or table_name like 'incremental\\_touched\\_%' escape '\\')) order by 1",
    )
    return [r[0] for r in rows]


def _touch_leads(path: Path) -> None:
    """A sync that rewrote a tenth of the recipients: a new `synced_at` and a new first name."""
    _execute(
        path,
        "update outreach.campaign_recipients set synced_at = now(), first_name = 'A touched name' "
        "where hash(id) % 10 = 0",
    )


def _variant_sent(path: Path, change: int) -> None:
    """Break (+5) or mend (-5) the data test variant_sent_adds_up on one campaign."""
    campaign = read_sql(path, "select min(campaign_id) from outreach.campaign_stats")[0][0]
    _execute(
        path,
        f"update outreach.campaign_variants set sent = sent + {change} "
        f"where campaign_id = '{campaign}' and \"index\" = 0",
    )


@pytest.fixture(autouse=True)
def _always_incremental(monkeypatch: pytest.MonkeyPatch) -> None:
    """The undo record is what is checked here: a tenth of the recipients re-written, near the share past which
    `outreach models` builds from every row (models/change_share.py), stays incremental."""
    monkeypatch.setattr(change_share, "why_every_row", lambda target, fingerprint: "")


@pytest.fixture
def built(tmp_path: Path) -> Path:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    assert build(path, publish=False).passed
    return path


def _fails_then_passes_as_a_full_refresh(path: Path, before: list[tuple[Any, ...]]) -> None:
    """A failing build leaves lead_engagement as `before`; once mended, the incremental build publishes the
    change, which equals a full refresh."""
    _variant_sent(path, +5)
    with pytest.raises(DataTestFailure):
        build(path, publish=False)
    assert _leads(path) == before, "the touched leads' rows are back as they were"
    assert _scratch(path) == []

    _variant_sent(path, -5)
    assert build(path, publish=False).passed
    after = _leads(path)
    assert after != before, "the touch changes lead_engagement, so the check above could fail"
    assert _scratch(path) == []
    assert build(path, publish=False, full_refresh=True).passed
    assert _leads(path) == after


def test_a_killed_build_is_put_back_by_the_next_and_a_failed_one_puts_the_table_back(
    built: Path, tmp_path: Path
) -> None:
    # a build that ends without its on-run-end hook (no swap, no clean-up) is one killed after its last model
    project = tmp_path / "project"
    shutil.copytree(PROJECT_DIR, project, ignore=shutil.ignore_patterns("__pycache__", "*.py", "target", "logs"))
    config = project / "dbt_project.yml"
    hook = '  - "{{ outreach_finish_build(results) }}"'
    assert hook in config.read_text()
    config.write_text(config.read_text().replace(hook, ""))
    before = _leads(built)
    _touch_leads(built)
    build(built, publish=False, project_dir=project)

    scratch = _scratch(built)
    assert "reporting.lead_engagement__next" in scratch
    assert "reporting_inputs.incremental_undo_lead_engagement" in scratch
    assert read_sql(built, "select count(*) from information_schema.tables where table_name = 'lead_engagement'") == [
        (0,)
    ]
    # the next build's start puts the table back before anything else, then moves it aside again: when that
    # build fails, the table is back as it was before the killed build
    _fails_then_passes_as_a_full_refresh(built, before)
