"""bench.demo_interrupt: a tree's line counts only the demos the signal stopped, and says how each ended."""

from __future__ import annotations

from typing import Any

from bench.demo_interrupt import summary


def _trial(seconds: float, exit_code: int = 130, *, tracebacks: int = 0, left: list[str] | None = None,
           finished: bool = False) -> dict[str, Any]:  # fmt: skip
    return {"finished_before_the_signal": finished, "exit": exit_code, "seconds_to_exit": seconds,
            "tracebacks": tracebacks, "left_running": left or []}  # fmt: skip


def test_the_summary_counts_the_stopped_demos_and_how_they_ended() -> None:
    trials = [
        _trial(1.5),
        _trial(91.1, tracebacks=2),
        _trial(3.0, 1, left=["python -m flows.prefect_server"]),
        _trial(14.7, 0),
        _trial(0.0, 0, finished=True),  # ended before the signal came: not a Ctrl-C at all
    ]
    got = summary(trials, "before")
    assert got == {"tree": "before", "trials": 4, "exit_130": 2, "median_s": 8.85, "max_s": 91.1,
                   "with_traceback": 1, "left_a_process": 1}  # fmt: skip
