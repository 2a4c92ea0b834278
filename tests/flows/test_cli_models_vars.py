"""`outreach models --vars`: the project's dbt vars for one build, checked before the warehouse is opened (dbt
itself ignores a misspelt var). That a changed var reaches every lead: tests/models/test_models_incremental_scope.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.synthetic import make_raw_warehouse
from models import PROJECT_DIR
from models.errors import ConfigError
from models.settings import parse_dbt_vars
from tests.duckdb_sql import run_sql

pytestmark = pytest.mark.timeout(300)

OUTREACH = Path(sys.executable).with_name("outreach")


def _models(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(OUTREACH), "models", "--duckdb", str(path), "--no-publish", "--no-progress", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=path.parent, timeout=240, check=False)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("{extra_reply_classes: {}}", "--vars is not JSON (Expecting property name enclosed in double quotes"),
        ('["free_mail_domains"]', "--vars must be a JSON object of vars"),
        ('{"extra_reply_clases": {}}', "--vars: no var named extra_reply_clases in "),
        # read letter by letter, a string flagged none of gmail.com's addresses; a number failed dbt's compilation
        ('{"free_mail_domains": "gmail.com"}', "--vars: free_mail_domains must be a list of strings, as in "),
        ('{"free_mail_domains": 5}', "--vars: free_mail_domains must be a list of strings, as in "),
        ('{"reply_classes": "x"}', "--vars: reply_classes must be an object, as in "),
        # the build's own: a value given was overridden, unsaid
        (
            '{"atomic_build": false}',
            "--vars: atomic_build is set by the build itself; the vars to set are extra_reply_classes, "
            "free_mail_domains, reply_classes",
        ),
        ('{"atomic_build": false, "build_fingerprint": ""}', "--vars: atomic_build, build_fingerprint are set by"),
    ],
)
def test_bad_vars_are_refused_naming_the_fix(value: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_dbt_vars(value, PROJECT_DIR)
    assert str(refused.value).startswith(says) and "\n" not in str(refused.value)


def test_the_command_refuses_bad_vars_in_one_line_before_the_warehouse_is_read(tmp_path: Path) -> None:
    out = _models(tmp_path / "missing.duckdb", "--vars", "[1]")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "error: --vars must be a JSON object of vars, e.g. "
        """'{"extra_reply_classes": {"out_of_office_v2": "auto_reply"}}'"""
    ]


def test_the_vars_reach_the_build(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    as_positive = json.dumps({"extra_reply_classes": {"not_interested": "positive"}})
    out = _models(path, "--vars", as_positive)
    assert out.returncode == 0, out.stderr[-2000:]
    positive = run_sql(path, "select is_positive, count(*) from reporting.stg_replies "
                             "where reply_type = 'not_interested' group by 1")  # fmt: skip
    assert positive and positive[0][0] is True and len(positive) == 1, positive


def test_vars_the_models_put_into_sql_build_whatever_their_values(tmp_path: Path) -> None:
    """A reply class the models do not know is refused in the models' own words. An empty reply-class map classes
    every reply as unclassified (it was a `case` without a `when`, no SQL), and
    a quote in a free-mail domain is part of the domain (it ended the SQL string: a syntax error)."""
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    # a class outside the five is refused by the models' own check, said as it says it, not in dbt's wrapping
    refused = _models(path, "--vars", json.dumps({"reply_classes": {"interested": "maybe"}}))
    assert refused.returncode == 1
    said = (
        "error: dbt stopped: reply_classes: 'interested' maps to 'maybe', which is not one of positive, neutral, "
        r"negative, auto_reply, bounce \(compiling model (stg_events|stg_replies|reply_classes)\)"
    )
    assert re.fullmatch(said, refused.stderr.splitlines()[0]), refused.stderr
    given = {"reply_classes": {}, "free_mail_domains": ["it's.example", " COMPANY1.example "]}
    out = _models(path, "--vars", json.dumps(given))
    assert out.returncode == 0, out.stderr[-2000:]
    classes = run_sql(path, "select distinct reply_class from reporting.stg_replies")
    assert classes == [("unclassified",)]
    assert run_sql(path, "select count(*) from reporting.reply_classes") == [(0,)]
    free = run_sql(path, "select company_domain from reporting.company_rollup where is_free_mail_domain")
    assert free == [("company1.example",)]
