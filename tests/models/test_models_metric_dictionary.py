"""The metric dictionary (models/metrics.yml) is the one place a metric is defined, and the marts use it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from models.metric_docs import DICTIONARY, RENDERED, block_name, load, render

ROOT = Path(__file__).resolve().parents[2]
MARTS = ROOT / "models" / "marts" / "marts.yml"
RATES_TEST = ROOT / "models" / "tests" / "rates_in_range.sql"
_DOC = re.compile(r"doc\('(metric_[a-z0-9_]+)'\)")


def _mart_columns() -> dict[str, dict[str, str]]:
    data = yaml.safe_load(MARTS.read_text(encoding="utf-8"))
    return {m["name"]: {c["name"]: str(c.get("description", "")) for c in m["columns"]} for m in data["models"]}


def test_the_rendered_docs_blocks_are_current() -> None:
    assert RENDERED.read_text(encoding="utf-8") == render(load()), "run `python -m models.metric_docs`"


def test_every_metric_is_complete_and_named_once() -> None:
    metrics = load()["metrics"]
    names = [m["name"] for m in metrics]
    assert len(names) == len(set(names))
    for m in metrics:
        assert {"name", "kind", "unit", "service", "marts"} <= set(m), m["name"]
        assert ("numerator" in m and "denominator" in m) or "definition" in m, m["name"]
        if m["kind"] == "rate":
            assert "numerator" in m and "denominator" in m, m["name"]
    primary = {m["name"]: m for m in metrics}
    for rate in ("open_rate", "click_rate", "reply_rate", "bounce_rate", "unsubscribe_rate", "progress_rate"):
        assert "rates." in primary[rate]["service"] and "/ 100" in primary[rate]["service"], rate
    for rate in ("human_reply_rate", "positive_reply_rate"):
        assert primary[rate]["denominator"] == primary["reply_rate"]["denominator"]


def test_every_mart_column_of_a_metric_references_the_dictionary() -> None:
    """Each metric's marts document its columns with its docs block; every rate column uses one."""
    known = {block_name(m["name"]) for m in load()["metrics"]}
    columns = _mart_columns()
    used: dict[str, set[str]] = {}
    for mart, cols in columns.items():
        for column, text in cols.items():
            for block in _DOC.findall(text):
                assert block in known, (mart, column, block)
                used.setdefault(block, set()).add(mart)
            if column.endswith("_rate") or re.search(r"_rate_\d+d$", column) or column.startswith("pct_"):
                assert _DOC.search(text), f"{mart}.{column} does not reference the metric dictionary"
    for m in load()["metrics"]:
        assert used.get(block_name(m["name"]), set()) == set(m["marts"]), m["name"]


def test_the_readme_links_the_dictionary() -> None:
    assert "(models/metrics.yml)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert DICTIONARY.name == "metrics.yml" and "(metrics.yml)" in (ROOT / "models" / "README.md").read_text()


def test_every_rate_and_percentage_of_a_mart_is_range_checked() -> None:
    """marts.yml's units (a *_rate a fraction 0-1, a pct_* / *_pct a percentage 0-100) hold as data only where the
    data test rates_in_range lists the column: a rate added to a mart and not to its list is never checked."""
    listed = {
        (model, column)
        for model, columns in re.findall(r"\('(\w+)', '\w+', \[([^\]]*)\]\)", RATES_TEST.read_text(encoding="utf-8"))
        for column in re.findall(r"'(\w+)'", columns)
    }
    unit = re.compile(r"(^|_)rate($|_)|^pct_|_pct$|p_value$")
    by_convention = {(m, c) for m, columns in _mart_columns().items() for c in columns if unit.search(c)}
    # utilisation may exceed 100: a daily limit lowered below what was already sent that day (rates_in_range.sql)
    left_out = {("mailbox_health", "utilisation_pct"), ("mailbox_daily", "max_utilisation_pct")}
    assert by_convention - left_out - listed == set()
    assert listed - by_convention == set()  # a listed column that no mart has any more
