"""`outreach sandbox`: the local, stateful sandbox of the whole API, served until stopped."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from flows.errors import stopped_by_ctrl_c


class Scale(StrEnum):
    tiny = "tiny"
    small = "small"
    medium = "medium"
    large = "large"


def sandbox(
    host: str = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port; 0 picks a free one.")] = 8765,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the generated data: one seed, one dataset.")] = 7,
    scale: Scale = Scale.small,
    workspaces: Annotated[
        int, typer.Option(min=1, help="Workspaces, each the size of one workspace of the scale.")
    ] = 2,
    rate_limit: Annotated[int, typer.Option(help="Requests a minute per key; 0 turns the limit off.")] = 120,
    latency_ms: int = 0,
    insecure_hooks: Annotated[bool, typer.Option(help="Also allow http webhook targets on loopback.")] = False,
    scenario: Annotated[str | None, typer.Option(help="Start in a scenario: deliverability.")] = None,
) -> None:
    """Serve a local, stateful sandbox of the whole API until stopped."""
    from sandbox.server import serve

    with stopped_by_ctrl_c():
        serve(
            host=host,
            port=port,
            seed=seed,
            scale=scale.value,
            rate_limit=rate_limit,
            latency_ms=latency_ms,
            insecure_hooks=insecure_hooks,
            workspaces=workspaces,
            scenario=scenario,
        )
