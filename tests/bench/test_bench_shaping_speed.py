"""bench/shaping_speed.py: both sides type every recipient, each with its own `pipelines` package."""

from __future__ import annotations

from bench.shaping_speed import run


def test_both_sides_type_every_recipient_and_the_ratio_is_of_their_medians() -> None:
    line = run("HEAD", rows=2_000, rounds=1)
    assert line["rows"] == 2_000 and line["baseline"] == "HEAD"
    this, base = line["rows_per_s"]["this"], line["rows_per_s"]["HEAD"]
    assert len(this) == len(base) == 1 and this[0] > 0 and base[0] > 0
    assert line["ratio_this_to_baseline"] == round(this[0] / base[0], 2)


def test_a_batch_size_that_does_not_divide_the_rows_still_types_every_row() -> None:
    line = run("HEAD", rows=400, rounds=1, batch=7)  # run() stops unless each side typed all 400
    assert line["batch"] == 7 and line["rows"] == 400
    assert all(len(rates) == 1 and rates[0] > 0 for rates in line["rows_per_s"].values())
