"""N = 1,000 tiny workspaces in one process on DuckDB, with N = 10 in the same run as the baseline of the
ratios: ``python -m bench.scale_out --n 10,1000`` as a named scenario (``python -m bench --scenario
scale_out_1000``), stored apart from the N = 1 to 200 run."""

from __future__ import annotations

import sys

from bench.scale_out import main

if __name__ == "__main__":
    sys.exit(main(["--n", "10,1000"]))
