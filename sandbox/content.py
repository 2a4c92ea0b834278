"""Reply records the simulation produces, built in bulk."""

from __future__ import annotations

import numpy as np

from . import vocab
from .directory import Directory
from .model import Campaign, Reply, Workspace
from .recipients import new_uuids


def make_replies(
    ws: Workspace,
    campaign: Campaign,
    rows: np.ndarray,
    received: np.ndarray,
    type_codes: np.ndarray,
    d: Directory,
    rng: np.random.Generator,
    now: float,
) -> list[Reply]:
    """Reply records of the recipients `rows` (one reply per recipient), built in bulk."""
    n = int(rows.size)
    if n == 0:
        return []
    ids = new_uuids(rng, n)
    seeds = rng.integers(0, 1_000, n).tolist()
    read = (rng.random(n) < np.where(now - received > 2 * 86_400, 0.85, 0.25)).tolist()
    mbs = campaign.recipients.mailbox[rows].tolist()
    out = []
    for i, (row, t, code) in enumerate(zip(rows.tolist(), received.tolist(), type_codes.tolist(), strict=True)):
        mailbox = ws.mailboxes[mbs[i]] if mbs[i] >= 0 else ws.mailboxes[0]
        out.append(
            Reply(
                id=ids[i],
                campaign=campaign,
                row=row,
                mailbox=mailbox,
                reply_type=vocab.REPLY_TYPES[code],
                text_seed=seeds[i],
                is_read=read[i],
                received_at=float(t),
                directory=d,
            )
        )
    return out
