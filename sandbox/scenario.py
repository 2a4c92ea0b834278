"""Named scenarios: put the sandbox in a situation the product must notice (POST /_sandbox/scenario).

`deliverability`, in the first workspace:
- every workspace's later sends bounce at a healthy HEALTHY_BOUNCE_RATE (started with `--scenario`, the seeded
  history too), so only the damaged mailbox crosses the 2% that sending tools pause at;
- one mailbox's bounces climb: a sixth of the recipients it sent to in the last 28 days, in the campaigns it
  sends for alone (so a warehouse can attribute them exactly), hard-bounce, each with its `lead.bounced` delivery;
- another mailbox's reputation score drops by REPUTATION_DROP points at the next UTC midnight (a warehouse that
  read it before sees the fall), and a warming mailbox's warmup health falls to WARMUP_HEALTH (warmup turned
  on if no other mailbox warms);
- an active campaign with recipients not yet contacted stalls: it stays active and sends nothing;
- a recipient of an active campaign answers "interested" now, and the reply stays unread.
The answer names every id it touched, so a test or the demo can look for exactly those.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .content import make_replies
from .history import HEALTHY_BOUNCE_RATE
from .model import Campaign, Mailbox, State, Workspace
from .recipients import ACTIVE, BOUNCED, INF, PENDING, REPLIED, SENT
from .timeutil import DAY, iso
from .vocab import REPLY_TYPES

REPUTATION_DROP = 15.0
WARMUP_HEALTH = 72.0  # below the 80 that warmup tools call unhealthy; it recovers 0.4 a day
BOUNCED_SHARE = 1 / 6
WINDOW_DAYS = 28


PARTS = ("bounces", "reputation", "stall", "positive_reply")


def apply(name: str, state: State, simulator: Any, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """Apply scenario `name` (one of settings.SCENARIOS) now, all of its PARTS or some; returns what it changed."""
    if name != "deliverability":
        raise ValueError(f"unknown scenario {name!r}")
    with state.lock:
        for ws in state.workspaces:
            ws.bounce_rate = HEALTHY_BOUNCE_RATE
        ws = state.workspaces[0]
        out: dict[str, Any] = {"scenario": name, "workspace_id": ws.id, "at": iso(state.now)}
        if "bounces" in parts:
            out.update(_bounces(ws, simulator, state.now))
        if "reputation" in parts:
            out.update(_reputation(ws, exclude=out.get("bounce_mailbox_id")))
        if "stall" in parts:
            out.update(_stall(ws, exclude=out.get("bounce_campaign_ids", [])))
        if "positive_reply" in parts:
            out.update(_positive_reply(ws, simulator, state))
        for w in state.workspaces:
            w.sorted_replies()
        return out


def _sole_campaigns(ws: Workspace, m: Mailbox) -> list[Campaign]:
    return [c for c in ws.campaigns if c.email_account_ids == [m.id] and c.status != "draft"]


def _bounceable(c: Campaign, m: Mailbox, now: float) -> np.ndarray:
    """Rows last sent to by `m` in the window that have not replied, bounced or ended."""
    r = c.recipients
    if len(r) == 0:
        return np.array([], dtype=np.int64)
    recent = np.nan_to_num(r.last_sent, nan=-INF) >= now - WINDOW_DAYS * DAY
    quiet = np.isnan(r.replied) & np.isnan(r.bounced) & np.isinf(r.reply_due) & np.isinf(r.unsub_due)
    status = (r.status == SENT) | (r.status == ACTIVE)
    return np.flatnonzero((r.mailbox == m.index) & recent & quiet & status)


def _bounces(ws: Workspace, simulator: Any, now: float) -> dict[str, Any]:
    found = _bounce_target(ws, now)
    if found is None:
        # no campaign sends from one mailbox alone: the busiest active campaign is set to send from its first
        # active mailbox only (a user's edit), so the warehouse can attribute its bounces exactly
        busy = [c for c in ws.campaigns if c.status == "active" and len(c.email_account_ids) > 1]
        if busy:
            c = max(busy, key=lambda c: c.sent)
            m = next((ws.mailbox_by_id[i] for i in c.email_account_ids if ws.mailbox_by_id[i].is_active), None)
            if m is not None:
                c.email_account_ids = [m.id]
                c.touch()
        found = _bounce_target(ws, now)
    if found is None:
        return {"bounce_mailbox_id": None, "bounces_added": 0}
    m, targets = found
    return _bounce_rows(ws, simulator, m, targets)


def _bounce_target(ws: Workspace, now: float) -> tuple[Mailbox, list[tuple[Campaign, np.ndarray]]] | None:
    """The active mailbox with the most recipients to bounce in campaigns it sends for alone."""
    best: tuple[int, Mailbox, list[tuple[Campaign, np.ndarray]]] | None = None
    for m in ws.mailboxes:
        if not m.is_active:
            continue
        found = [(c, _bounceable(c, m, now)) for c in _sole_campaigns(ws, m)]
        total = sum(rows.size for _, rows in found)
        if total and (best is None or total > best[0]):
            best = (total, m, found)
    return None if best is None else (best[1], best[2])


def _bounce_rows(ws: Workspace, simulator: Any, m: Mailbox, found: list[tuple[Campaign, np.ndarray]]) -> dict[str, Any]:
    added, campaigns = 0, []
    for c, rows in found:
        chosen = rows[: int(np.ceil(rows.size * BOUNCED_SHARE))]
        if chosen.size == 0:
            continue
        r = c.recipients
        r.status[chosen] = BOUNCED
        r.bounced[chosen] = r.last_sent[chosen] + 30
        r.next_due[chosen] = INF
        r.open_due[chosen] = r.click_due[chosen] = r.unsub_due[chosen] = INF
        c.touch()
        campaigns.append(c.id)
        added += int(chosen.size)
        for row in chosen.tolist():
            simulator._emit(ws, "lead.bounced", c, row, float(r.bounced[row]), {"bounced_at": iso(r.bounced[row])})
    return {
        "bounce_mailbox_id": m.id,
        "bounce_mailbox_email": m.email,
        "bounces_added": added,
        "bounce_campaign_ids": campaigns,
    }


def _reputation(ws: Workspace, exclude: str | None) -> dict[str, Any]:
    """At the next UTC midnight (when the service recomputes scores) one mailbox loses REPUTATION_DROP points, and
    another's warmup health falls to WARMUP_HEALTH now: a warehouse that synced before sees both changes."""
    out: dict[str, Any] = {"reputation_mailbox_id": None, "warmup_mailbox_id": None}
    active = [m for m in ws.mailboxes if m.is_active and m.id != exclude]
    if active:
        m = active[0]
        m.reputation_hit = REPUTATION_DROP
        out.update(reputation_mailbox_id=m.id, reputation_from=m.reputation_score)
    others = [m for m in ws.mailboxes if m.id != exclude]
    if others:
        w = max(others, key=lambda m: (m.warmup_enabled, m.index))
        out.update(warmup_mailbox_id=w.id, warmup_health_from=w.warmup_health if w.warmup_enabled else None)
        w.warmup_enabled, w.warmup_health = True, WARMUP_HEALTH
    return out


def _stall(ws: Workspace, exclude: list[str]) -> dict[str, Any]:
    """An active campaign with recipients not yet contacted (one the bounces did not touch, when there is one)
    stalls: it stays active and sends nothing."""
    due = [c for c in ws.campaigns if c.status == "active" and bool((c.recipients.status == PENDING).any())]
    due.sort(key=lambda c: c.id in exclude)
    if not due:
        return {"stalled_campaign_id": None}
    due[0].stalled = True
    due[0].touch()
    return {"stalled_campaign_id": due[0].id}


def _positive_reply(ws: Workspace, simulator: Any, state: State) -> dict[str, Any]:
    code = REPLY_TYPES.index("interested")
    for c in ws.campaigns:
        r = c.recipients
        if c.status != "active" or len(r) == 0:
            continue
        free = np.flatnonzero(
            ((r.status == SENT) | (r.status == ACTIVE)) & np.isnan(r.replied) & np.isinf(r.reply_due) & (r.mailbox >= 0)
        )
        if free.size == 0:
            continue
        row, t = int(free[0]), state.now
        r.status[row] = REPLIED
        r.replied[row] = t
        r.reply_type[row] = code
        if c.stop_on_reply:
            r.next_due[row] = INF
        c.variant_replied[max(int(r.variant[row]), 0)] += 1
        rng = simulator.rng_of(ws)
        rep = make_replies(ws, c, np.array([row]), np.array([t]), np.array([code]), state.directory, rng, t)[0]
        rep.is_read = False
        ws.add_reply(rep)
        c.touch()
        extra = {"subject": rep.subject, "reply_type": rep.reply_type, "reply": rep.text, "body": rep.body}
        simulator._emit(ws, "lead.replied", c, row, t, extra)
        return {"reply_id": rep.id, "reply_campaign_id": c.id, "reply_lead_email": rep.sender}
    return {"reply_id": None}
