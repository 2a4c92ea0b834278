"""Text the simulation produces: merge-field rendering and reply records."""

from __future__ import annotations

import re

import numpy as np

from . import vocab
from .directory import Directory
from .model import Campaign, Reply, Workspace, new_uuids

_MERGE = re.compile(r"\{\{\s*([a-zA-Z_]+)\s*(?:\|([^}]*))?\}\}")


def render(template: str, values: dict[str, str]) -> str:
    """Substitute `{{field|fallback}}` and `{{field}}` merge fields."""

    def _one(match: re.Match[str]) -> str:
        value = values.get(match.group(1), "")
        return value or (match.group(2) or "")

    return _MERGE.sub(_one, template)


def render_for(rep: Reply, which: str) -> str:
    """The subject or body variant the replying recipient received, with merge fields filled."""
    c, d = rep.campaign, rep.directory
    r = c.recipients
    person = int(r.person[rep.row])
    variant = max(int(r.variant[rep.row]), 0)
    mb = int(r.mailbox[rep.row])
    values = {
        "first_name": d.first_name(person),
        "last_name": d.last_name(person),
        "company": d.company_of(person),
        "email": d.email(person),
        "sender": rep.mailbox.display_name if mb >= 0 else "",
    }
    templates = c.subject_lines if which == "subject" else c.email_bodies
    return render(templates[variant % len(templates)], values)


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
