"""The sections of bench/RESULTS.md that time whole commands as a user runs them: `outreach demo` and `make test`."""

from __future__ import annotations

from typing import Any

from bench.results_sections import fmt


def demo_section(records: list[dict[str, Any]]) -> list[str]:
    """RESULTS.md's section: one row per demo run of every stored label, then the `outreach sync` reference."""
    out = [
        "",
        "## `outreach demo`: wall and CPU seconds per run (`python -m bench.demo_time --save LABEL`)",
        "",
        "No Prefect or outreach settings, as a new user runs it; the runs of one label share a directory (runs saved",
        "before 2026-11-26 each had a fresh one, so dbt parsed the project in full every time). Wall seconds stretch",
        "with the machine's load (its 2 cores are shared with other work: see the load averages); CPU seconds are",
        "the work of the demo and every process it started and waited for, which load inflates far less (not",
        "wholly: the Prefect server's services run every second, so a longer run spends more CPU). A first",
        "run is `first (cold)` when no Prefect database was cached (an empty `XDG_CACHE_HOME`, as on a new machine).",
        "Steps: sandbox and Prefect API / full sync / a simulated day / quick sync / models, tests, BI file and",
        "dashboard.",
        "",
        "| label | run | measured | wall s | CPU s | load before → after | steps s | full sync req | quick sync req |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cli_lines = []
    for stored in records:
        rec, label = stored["result"], stored["scale"].partition(" ")[2]
        for run in rec.get("demo", []):
            steps = " / ".join(str(step.get("seconds", "?")) for step in run["steps"])
            syncs = run.get("syncs", {})
            out.append(
                f"| {label} | {run['run']} | {rec['date']} | {run['seconds']} | {run.get('cpu_seconds', '-')} "
                f"| {run['loadavg_before']} → {run['loadavg_after']} | {steps} "
                f"| {syncs.get('full', {}).get('requests', '-')} | {syncs.get('quick', {}).get('requests', '-')} |"
            )
        cli = rec.get("cli")
        if cli:
            cli_lines.append(
                f"- {label}, {rec['date']}: `outreach sync` of a sandbox like the demo's, "
                f"full {cli['full']['seconds']} s "
                f"({cli['full']['requests']} requests), quick {cli['quick']['seconds']} s "
                f"({cli['quick']['requests']} requests), process start included; load {cli['loadavg_before']} → "
                f"{cli['loadavg_after']}"
            )
    return out + (["", *cli_lines] if cli_lines else [])


def suite_time_section(rec: dict[str, Any]) -> list[str]:
    """bench/suite_time.py: one row per fresh-clone run of `.ci/run`."""
    out = [
        "",
        "## `make test` on a fresh clone (`python -m bench.suite_time`)",
        "",
        "Each run: a fresh clone of the commit, then `.ci/run` (setup from the lock file, lint, the suite on 3",
        "workers in a random order). Wall time of `.ci/run`; CPU minutes of it and every process it waited for; busy",
        "cores = the machine's average over the run (sampled every 5 s; 2 cores, shared with other work).",
        "",
        "| commit | started | wall | goal 12 min | pytest s | CPU user + system min | busy cores | load before / after "
        "| seed | tests |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for line in rec["result"]:
        minutes, seconds = divmod(round(line["wall_s"]), 60)
        counts = ", ".join(f"{n} {what}" for what, n in line["counts"].items()) or "-"
        out.append(
            f"| {line['rev']} | {line['date']} | {minutes} min {seconds:02d} s "
            f"| {'met' if line['met'] else 'missed'}{'' if line['passed'] else ' (FAILED)'} | {fmt(line['pytest_s'])} "
            f"| {line['user_cpu_s'] / 60:.1f} + {line['system_cpu_s'] / 60:.1f} | {fmt(line['busy_cores'], 2)} "
            f"| {line['load_avg_1m'][0]} / {line['load_avg_1m'][1]} | {line['seed']} | {counts} |"
        )
    return out
