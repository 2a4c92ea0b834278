"""Serve the Outreach API sandbox.

`python -m sandbox [--host] [--port] [--seed] [--scale] [--workspaces] [--rate-limit] [--latency-ms] [--insecure-hooks]
[--exit-with-parent]`
"""

from __future__ import annotations

import argparse

from .server import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description="Serve the Outreach API sandbox.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", default="small", choices=["tiny", "small", "medium", "large"])
    parser.add_argument(
        "--workspaces", type=int, default=2, help="number of workspaces, each the size of one of the scale"
    )
    parser.add_argument("--rate-limit", type=int, default=120)
    parser.add_argument("--latency-ms", type=int, default=0)
    parser.add_argument("--insecure-hooks", action="store_true")
    parser.add_argument(
        "--exit-with-parent", action="store_true", help="stop once the process that started this one is gone"
    )
    a = parser.parse_args(argv)
    if a.exit_with_parent:
        from pipelines.core.lifeline import exit_with_parent

        exit_with_parent()
    serve(
        host=a.host,
        port=a.port,
        seed=a.seed,
        scale=a.scale,
        rate_limit=a.rate_limit,
        latency_ms=a.latency_ms,
        insecure_hooks=a.insecure_hooks,
        workspaces=a.workspaces,
    )


if __name__ == "__main__":
    main()
