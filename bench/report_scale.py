"""The dashboard at scale: file size, write time and render time in headless Chromium; one JSON line.

Default case: the synthetic warehouse of 500 campaigns, 1M recipients and 200 mailboxes (devtools/synthetic.py)
built by the models, or ``--warehouse PATH`` for an existing warehouse with its BI file (e.g. one
synced from the `large` sandbox). The baseline, measured in the same run and the same browser, is a
page holding plotly.js and one small chart: ``render_vs_plotly_only`` is the report's render time
over it (what the report's data and charts add on top of loading plotly.js at all), and
``size_vs_plotly_js`` the report's size over plotly.js's.

    .venv/bin/python bench/report_scale.py                       # 1M synthetic recipients, 500 campaigns
    .venv/bin/python bench/report_scale.py --warehouse data/outreach.duckdb --runs 5
    .venv/bin/python bench/report_scale.py --baseline 88e72a4      # the write time against that revision's
    .venv/bin/python bench/report_scale.py --workspaces 1000 --campaigns 3000 --recipients 300000 --mailboxes 3

Write time: ``write_report`` alone, timed inside a process of its own (imports excluded). With ``--baseline
REV`` the same BI file is also written by the ``dashboard`` package of git revision REV, alternating with this
checkout's (``--write-runs`` each): ``write_vs_baseline`` is the ratio of their medians, one run's before and after.

Render time: wall clock from navigation to the page's "every chart drawn" signal, median of
``--runs`` loads (each in a new tab of one browser; the first load is also reported; with ``--baseline``, REV's
page too, in turn with this one's: ``render_vs_baseline``). Limits (a
dashboard a reader opens from a mail or a share): under 10 MB and under 3 s; the exit status is 1 when either
is exceeded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the repo's packages (and devtools) import from its root
    sys.path.insert(0, str(ROOT))

from dashboard import bi_path_for  # noqa: E402 - after the sys.path line above, for script runs
from devtools.browser import HeadlessChromium  # noqa: E402 - likewise
from devtools.runner_parity import runner_tree  # noqa: E402 - likewise

MAX_MB = 10.0
MAX_RENDER_S = 3.0
READY = "document.body.dataset.rendered === 'true' || document.body.dataset.renderError !== undefined"
OUT_DIR = ROOT / "bench" / "out"


def _synthetic_warehouse(path: Path, recipients: int, campaigns: int, workspaces: int, mailboxes: int) -> Path:
    """The synthetic raw warehouse (devtools/synthetic.py)."""
    from devtools.synthetic import make_raw_warehouse

    return Path(
        make_raw_warehouse(
            path, recipients=recipients, campaigns=campaigns, workspaces=workspaces, mailboxes_per_workspace=mailboxes
        )
    )


def _build_models(warehouse: Path) -> None:
    """Build the reporting tables and publish the BI file (the one call into the models' build)."""
    from models.build import build

    report = build(warehouse)
    if not report.passed:
        raise SystemExit("the models' data tests failed on the bench warehouse")


#: where the baseline revision's report is written, beside this checkout's report.html
BASELINE_PAGE = "report_baseline.html"


def _timed_write(bi: Path, out: Path, tree: Path = ROOT) -> float:
    """Seconds ``write_report`` takes in a process of its own whose ``dashboard`` package is the one in `tree`."""
    code = (
        "import sys, time; import dashboard; from dashboard import write_report; started = time.perf_counter(); "
        "write_report(sys.argv[1], sys.argv[2]); print(dashboard.__file__); print(time.perf_counter() - started)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(tree), str(ROOT)]))}
    done = subprocess.run(
        [sys.executable, "-c", code, str(bi), str(out)], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"writing the report with {tree} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    *_, package, seconds = done.stdout.strip().splitlines()
    if not Path(package).is_relative_to(tree):  # the script's directory comes first on sys.path: not this one's
        raise SystemExit(f"the report was written by {package}, not by the dashboard of {tree}")
    return float(seconds)


def _write_times(bi: Path, workdir: Path, runs: int, baseline: str | None) -> tuple[Path, dict[str, Any]]:
    """This checkout's report (and, with a baseline, REV's), written `runs` times each, alternating."""
    report = workdir / "report.html"
    ours: list[float] = []
    theirs: list[float] = []
    with runner_tree(baseline, "dashboard") if baseline else nullcontext() as tree:
        for _ in range(runs):
            ours.append(_timed_write(bi, report, ROOT))
            if tree is not None:
                theirs.append(_timed_write(bi, workdir / BASELINE_PAGE, tree))
    result: dict[str, Any] = {"write_s": round(statistics.median(ours), 2), "write_runs_s": [round(s, 2) for s in ours]}
    if theirs:
        result.update(
            baseline_rev=baseline,
            baseline_write_s=round(statistics.median(theirs), 2),
            baseline_write_runs_s=[round(s, 2) for s in theirs],
            write_vs_baseline=round(statistics.median(ours) / statistics.median(theirs), 3),
        )
    return report, result


def _plotly_only_page(path: Path) -> Path:
    """The baseline: the report's plotly.js inlined and one small chart, drawn and flagged like the report."""
    from dashboard.page import plotly_js

    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'></head><body><div id='c'></div>"
        f"<script>{plotly_js()}</script><script>Plotly.newPlot('c', [{{type: 'bar', x: [1, 2], y: [3, 4]}}])"
        ".then(function () { document.body.dataset.rendered = 'true'; });</script></body></html>",
        encoding="utf-8",
    )
    return path


def _render(browser: HeadlessChromium, pages: list[Path], runs: int) -> list[dict[str, Any]]:
    """Each page loaded `runs` times, the pages in turn (so the machine's load falls on each alike)."""
    seconds: list[list[float]] = [[] for _ in pages]
    in_page_ms: list[list[float]] = [[] for _ in pages]
    errors: list[list[str]] = [[] for _ in pages]
    for _ in range(runs):
        for index, page in enumerate(pages):
            opened = browser.open(page, ready=READY, timeout_s=60)
            errors[index] += opened.console_errors + [f"outside request {url}" for url in opened.outside_requests]
            render_error = opened.evaluate("document.body.dataset.renderError")
            if render_error:
                errors[index].append(str(render_error))
            seconds[index].append(opened.seconds_to_ready)
            in_page_ms[index].append(float(opened.evaluate("window.reportRenderMs || performance.now()")))
            opened.page.close()
    return [
        {
            "first_s": round(seconds[index][0], 3),
            "median_s": round(statistics.median(seconds[index]), 3),
            "in_page_median_ms": round(statistics.median(in_page_ms[index]), 1),
            "errors": errors[index],
        }
        for index in range(len(pages))
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", type=Path, help="an existing warehouse whose BI file to draw (skips generation)")
    parser.add_argument("--recipients", type=int, default=1_000_000)
    parser.add_argument("--campaigns", type=int, default=500)
    parser.add_argument("--workspaces", type=int, default=2, help="an agency's: 1,000 (with --campaigns 3000)")
    parser.add_argument("--mailboxes", type=int, default=100, help="per workspace: the large sandbox has 200 in two")
    parser.add_argument("--runs", type=int, default=3, help="page loads to take the median of")
    parser.add_argument("--baseline", metavar="REV", help="also write the report with this git revision's dashboard")
    parser.add_argument("--write-runs", type=int, default=1, help="report writes to take the median of (each tree)")
    parser.add_argument("--workdir", type=Path, help="where the warehouse goes (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="report_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"bench": "report_scale"}
    try:
        if args.warehouse:
            warehouse = args.warehouse
            result["case"] = f"warehouse {warehouse}"
        else:
            result["case"] = (
                f"synthetic {args.recipients:,} recipients, {args.campaigns} campaigns, {args.workspaces} workspaces, "
                f"{args.workspaces * args.mailboxes} mailboxes"
            )
            started = time.perf_counter()
            warehouse = _synthetic_warehouse(
                workdir / "outreach.duckdb", args.recipients, args.campaigns, args.workspaces, args.mailboxes
            )
            _build_models(warehouse)
            result["generate_and_build_s"] = round(time.perf_counter() - started, 2)
        report, written = _write_times(bi_path_for(warehouse), workdir, args.write_runs, args.baseline)
        result.update(written)
        size = report.stat().st_size
        from dashboard.page import plotly_js

        plotly_bytes = len(plotly_js().encode("utf-8"))
        result.update(
            size_mb=round(size / 2**20, 2),
            plotly_js_mb=round(plotly_bytes / 2**20, 2),
            size_vs_plotly_js=round(size / plotly_bytes, 2),
        )
        baseline = _plotly_only_page(workdir / "plotly_only.html")
        theirs = workdir / BASELINE_PAGE
        with HeadlessChromium(workdir / "profile") as browser:
            if args.baseline:
                result["plotly_only"], result["report"], result["baseline_report"] = _render(
                    browser, [baseline, report, theirs], args.runs
                )
                result["render_vs_baseline"] = round(
                    result["report"]["median_s"] / result["baseline_report"]["median_s"], 3
                )
                result["baseline_size_mb"] = round(theirs.stat().st_size / 2**20, 2)
            else:
                result["plotly_only"], result["report"] = _render(browser, [baseline, report], args.runs)
            shot = browser.open(report, ready=READY, timeout_s=60)
            OUT_DIR.mkdir(parents=True, exist_ok=True)
            shot.page.screenshot(path=str(OUT_DIR / "report_scale.png"), full_page=True)
        result["render_vs_plotly_only"] = round(result["report"]["median_s"] / result["plotly_only"]["median_s"], 2)
        result["under_10_mb"] = size / 2**20 < MAX_MB
        result["under_3_s"] = result["report"]["median_s"] < MAX_RENDER_S
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    against, drawn_against = "", ""
    if "baseline_rev" in result:
        against = f" ({result['write_vs_baseline']}x {result['baseline_rev']}'s {result['baseline_write_s']} s)"
        drawn_against = f", {result['render_vs_baseline']}x {result['baseline_report']['median_s']} s for its page"
    print(
        f"report: {result['size_mb']} MB ({result['size_vs_plotly_js']}x plotly.js alone), written in "
        f"{result['write_s']} s{against}, rendered in {result['report']['median_s']} s median "
        f"({result['render_vs_plotly_only']}x a plotly.js-only page{drawn_against}); screenshot "
        f"{OUT_DIR / 'report_scale.png'}",
        file=sys.stderr,
    )
    print(json.dumps(result))
    ok = result["under_10_mb"] and result["under_3_s"] and not result["report"]["errors"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
