"""bench/shaping_speed.py: both sides type every recipient, each with its own `pipelines` package."""

from __future__ import annotations

from bench.shaping_speed import run


def test_both_sides_type_every_recipient_and_the_ratio_is_of_their_medians() -> None:
    line = run("HEAD", rows=2_000, rounds=1)
    assert line["rows"] == 2_000 and line["baseline"] == "HEAD"
    this, base = line["rows_per_s"]["this"], line["rows_per_s"]["HEAD"]
    assert len(this) == len(base) == 1 and this[0] > 0 and base[0] > 0
    assert line["ratio_this_to_baseline"] == round(this[0] / base[0], 2)
