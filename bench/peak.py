"""Peak resident memory of this process since it started, in MB; the CPU time of its children.

Not `ru_maxrss`: on Linux the kernel carries the high-water mark across exec, so a child's
`ru_maxrss` starts at its parent's RSS at fork, and a child of a big process (the bench holding its
snapshots) reports at least the parent's size. `VmHWM` in /proc/self/status is the peak of the
process's own memory since exec. Elsewhere, `ru_maxrss` is the best there is.
"""

from __future__ import annotations

import resource
import sys


def peak_rss_mb() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)  # kB
    except OSError:
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024, 1)  # bytes on macOS


def children_cpu_s() -> tuple[float, float]:
    """User and system CPU seconds of every child process waited for so far (and of theirs that they waited
    for): the work done, which a loaded machine stretches far less than the wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def cli_with_peak(mark: str) -> str:
    """Python source for ``python -c <source> <args>``: the ``outreach`` command line (flows.cli's typer app) with
    ``<args>``, printing ``<mark><peak MB>`` on stderr at exit (this process's VmHWM)."""
    return (
        "import atexit, sys\n"
        "from bench.peak import peak_rss_mb\n"
        f"atexit.register(lambda: print('{mark}' + str(peak_rss_mb()), file=sys.stderr, flush=True))\n"
        "from flows.cli import app\n"
        "sys.argv = ['outreach', *sys.argv[1:]]\n"
        "app()\n"
    )


def split_peak(stderr: str, mark: str) -> tuple[float | None, list[str]]:
    """A `cli_with_peak` child's stderr: its peak RSS (MB; None when it died before printing it) and its other
    non-blank lines."""
    peak = None
    lines = []
    for line in stderr.splitlines():
        if line.startswith(mark):
            peak = float(line[len(mark) :])
        elif line.strip():
            lines.append(line.strip())
    return peak, lines
