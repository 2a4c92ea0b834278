"""Publishing the BI file where its path is a directory: one line, nothing left behind, the old state kept."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from models.errors import PublishError
from models.publish import publish_bi
from models.settings import bi_path_for


def _warehouse(path: Path) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute("create schema reporting")
        con.execute("create table reporting.campaign_performance as select range as id from range(200000)")
    finally:
        con.close()


def test_a_bi_path_that_is_a_directory_is_one_line_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    _warehouse(db)
    bi = bi_path_for(db)
    bi.mkdir()
    with pytest.raises(PublishError) as caught:
        publish_bi(db)
    line = str(caught.value)
    assert str(bi) in line and "is a directory" in line and "\n" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.duckdb", bi.name]
    assert bi.is_dir() and not any(bi.iterdir())


def test_the_bi_file_is_published_when_the_path_is_free(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    _warehouse(db)
    path, rows = publish_bi(db)
    assert path == bi_path_for(db) and rows == {"campaign_performance": 200000}
