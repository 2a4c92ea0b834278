"""Build dashboard/assets/plotly.min.js: plotly.js with only the trace types the dashboard draws.

The report inlines plotly.js in every page, and parsing and running all of plotly.js (4.59 MB, every trace type,
maps and WebGL included) was most of the time a browser took to draw the page: no bundle that plotly.js publishes
has all of bar, scatter, heatmap, funnel and indicator. This one is plotly.js's own documented way to a smaller
bundle ("partial bundles": `plotly.js/lib/core` with the trace modules registered), built with esbuild, of the
plotly.js version the installed plotly Python package ships (its figures are that version's JSON).

    .venv/bin/python -m devtools.plotly_bundle     # needs node and npm; writes the file, prints its size

Run it after an upgrade of plotly (tests/dashboard/test_plotly_bundle.py fails until then).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from plotly.offline import get_plotlyjs_version

from dashboard.page import PLOTLY_TRACES, plotly_js_path

ESBUILD_VERSION = "0.28.2"


def _entry(traces: tuple[str, ...]) -> str:
    # scatter is part of plotly.js's core
    modules = "".join(f"    require('plotly.js/lib/{trace}'),\n" for trace in traces if trace != "scatter")
    return f"var Plotly = require('plotly.js/lib/core');\nPlotly.register([\n{modules}]);\nmodule.exports = Plotly;\n"


def _banner(full_bundle: Path, version: str) -> str:
    """plotly.js's own banner (its copyright and license), naming the bundle as partial."""
    match = re.match(r"/\*\*.*?\*/", full_bundle.read_text(encoding="utf-8")[:1000], re.S)
    if match is None or f"plotly.js v{version}" not in match.group(0):
        raise SystemExit(f"plotly.js's banner not found in {full_bundle}")
    return match.group(0).replace(
        f"plotly.js v{version}", f"plotly.js (partial bundle: {', '.join(PLOTLY_TRACES)} - minified) v{version}"
    )


def build(out: Path) -> int:
    version = get_plotlyjs_version()
    with tempfile.TemporaryDirectory(prefix="plotly-bundle-") as tmp:
        work = Path(tmp)
        (work / "package.json").write_text('{"name": "plotly-bundle", "version": "1.0.0", "private": true}\n')
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", f"plotly.js@{version}",
             f"esbuild@{ESBUILD_VERSION}"],
            cwd=work, check=True,
        )  # fmt: skip
        (work / "entry.js").write_text(_entry(PLOTLY_TRACES))
        banner = _banner(work / "node_modules" / "plotly.js" / "dist" / "plotly.min.js", version)
        subprocess.run(
            [str(work / "node_modules" / ".bin" / "esbuild"), "entry.js", "--bundle", "--minify", "--format=iife",
             "--global-name=Plotly", "--target=es2018", "--define:global=window", "--loader:.css=empty",
             "--legal-comments=eof", f"--banner:js={banner}", "--outfile=plotly.min.js"],
            cwd=work, check=True,
        )  # fmt: skip
        shutil.copyfile(work / "plotly.min.js", out)
    print(f"{out}: plotly.js {version}, {', '.join(PLOTLY_TRACES)}; {out.stat().st_size / 2**20:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(build(plotly_js_path()))
