"""Vectorised past of a seeded campaign: weeks of sends, follow-ups, opens, replies, bounces.

Everything the API shows (totals, variants, daily series, mailbox sent_today, replies) is derived from the
per-recipient arrays written here, so the seeded state obeys the same invariants as the simulation.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from .content import make_replies
from .directory import Directory
from .model import Campaign, Workspace
from .recipients import ACTIVE, BOUNCED, COMPLETED, INF, REPLIED, SENT, UNSUBSCRIBED
from .timeutil import DAY, WEEKDAYS, window_intervals, zone
from .vocab import REPLY_TYPE_WEIGHTS

HOUR = 3600.0
BOUNCE_RATE = 0.025
# the deliverability scenario's workspaces: well under the 2% that sending tools pause at, so only the
# mailbox the scenario damages crosses it
HEALTHY_BOUNCE_RATE = 0.004
FIRST_REPLY_RATE = 0.27
FOLLOW_UP_REPLY_RATE = 0.1
UNSUBSCRIBE_RATE = 0.006
OPEN_RATE = 0.5
CLICK_RATE = 0.22


def first_send_times(c: Campaign, t0: float, t1: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n sorted instants inside the campaign's send windows between t0 and t1."""
    spans = window_intervals(t0, t1, c.timezone, c.window_start, c.window_end, tuple(c.days))
    if not spans or n == 0:
        return np.zeros(0)
    starts = np.array([a for a, _ in spans])
    lengths = np.array([b - a for a, b in spans])
    pick = rng.choice(len(spans), size=n, p=lengths / lengths.sum())
    return np.sort(np.floor(starts[pick] + rng.random(n) * lengths[pick]))


def step_times(c: Campaign, first: np.ndarray, steps: int, gap: float, now: float) -> np.ndarray:
    """Send time of every step (k x steps): each follow-up `gap` after the previous one, moved on to the
    next send day when it falls on a day outside send_window.days (same local time of day)."""
    offset = zone(c.timezone).utcoffset(datetime.fromtimestamp(now, tz=UTC))
    shift = offset.total_seconds() if offset is not None else 0.0
    allowed = np.array([day in c.days for day in WEEKDAYS])
    times = np.empty((first.size, steps))
    times[:, 0] = first
    for j in range(1, steps):
        t = times[:, j - 1] + gap
        for _ in range(7):
            weekday = (np.floor((t + shift) / DAY).astype(np.int64) + 3) % 7  # 1970-01-01 was a Thursday
            bad = ~allowed[weekday]
            if not bad.any():
                break
            t = np.where(bad, t + DAY, t)
        times[:, j] = t
    return times


def bounce_rate_of(ws: Workspace) -> float:
    """The workspace's hard-bounce share of first sends (a scenario may set a healthier one)."""
    return BOUNCE_RATE if ws.bounce_rate is None else ws.bounce_rate


def seed_history(c: Campaign, ws: Workspace, d: Directory, rng: np.random.Generator, now: float) -> None:
    """Fill the past of a non-draft campaign whose recipients are already appended."""
    r = c.recipients
    n = len(r)
    if c.status == "completed":
        launched = now - rng.uniform(55, 85) * DAY  # first sends end >= 41 days ago: every follow-up is done
        first_end, stop, frac = launched + rng.uniform(7, 14) * DAY, INF, 1.0
    elif c.status == "paused":
        launched = now - rng.uniform(20, 50) * DAY
        first_end = stop = now - rng.uniform(1, 8) * DAY
        frac = rng.uniform(0.3, 0.7)
    else:
        launched = now - rng.uniform(18, 60) * DAY
        first_end, stop, frac = now, now, rng.uniform(0.45, 0.85)
    c.launched_at = float(np.floor(launched))
    c.created_at = float(np.floor(launched - rng.uniform(0.5, 4) * DAY))
    if c.schedule_type == "scheduled":
        c.scheduled_at = c.launched_at
    first = first_send_times(c, launched, first_end, int(round(n * frac)), rng)
    k = first.size
    if k == 0:
        return
    steps = c.total_steps
    gap = c.follow_up_delay_days * DAY
    active_mb = [m.index for m in ws.mailboxes if m.id in c.email_account_ids]
    mailbox = rng.choice(active_mb, size=k).astype(np.int16)
    variant = rng.integers(0, len(c.subject_lines), k).astype(np.int8)
    bounce = rng.random(k) < bounce_rate_of(ws)

    # Which step (if any) draws a reply or an unsubscribe; the earlier one wins, reply on a tie.
    rates = np.array([FIRST_REPLY_RATE] + [FOLLOW_UP_REPLY_RATE] * (steps - 1))
    reply_hit = rng.random((k, steps)) < rates
    unsub_hit = rng.random((k, steps)) < UNSUBSCRIBE_RATE
    reply_step = np.where(reply_hit.any(1), reply_hit.argmax(1), steps)
    unsub_step = np.where(unsub_hit.any(1), unsub_hit.argmax(1), steps)
    is_reply = (reply_step < steps) & (reply_step <= unsub_step)
    is_unsub = (unsub_step < steps) & ~is_reply
    ev_step = np.where(is_reply, reply_step, unsub_step)
    max_lag = gap - HOUR if steps > 1 else 5 * DAY
    lag = np.clip(rng.exponential(6 * HOUR, k), 300, max_lag)
    times = step_times(c, first, steps, gap, now)
    ev_time = np.floor(times[np.arange(k), np.minimum(ev_step, steps - 1)] + lag)

    steps_due = np.maximum((times <= stop).sum(axis=1), 1)
    stops = (is_reply & c.stop_on_reply) | is_unsub
    steps_sent = np.where(bounce, 1, np.where(stops, np.minimum(steps_due, ev_step + 1), steps_due))
    has_event = (is_reply | is_unsub) & ~bounce & (ev_step < steps_sent)
    happened = has_event & (ev_time <= now)
    future = has_event & (ev_time > now)

    status = np.where(steps_sent < steps, ACTIVE, SENT).astype(np.int8)
    last_sent = times[np.arange(k), steps_sent - 1]
    next_due = np.where(steps_sent < steps, last_sent + gap, INF)
    status[happened & is_reply] = REPLIED
    status[happened & is_unsub] = UNSUBSCRIBED
    next_due[happened & stops] = INF
    status[bounce] = BOUNCED
    next_due[bounce] = INF
    if c.status == "completed":
        status[status == SENT] = COMPLETED
        next_due[:] = INF

    rows = slice(0, k)
    r.step[rows] = steps_sent
    r.status[rows] = status
    r.variant[rows] = variant
    r.mailbox[rows] = mailbox
    r.next_due[rows] = next_due
    r.last_sent[rows] = last_sent
    r.bounced[rows] = np.where(bounce, first + 30, np.nan)
    r.replied[rows] = np.where(happened & is_reply, ev_time, np.nan)
    r.reply_due[rows] = np.where(future & is_reply, ev_time, INF)
    r.unsub_due[rows] = np.where(future & is_unsub, ev_time, INF)
    reply_type = np.where(is_reply, rng.choice(len(REPLY_TYPE_WEIGHTS), size=k, p=REPLY_TYPE_WEIGHTS), -1)
    r.reply_type[rows] = reply_type

    if c.track_opens:
        opened = ~bounce & ((rng.random(k) < OPEN_RATE) | (happened & is_reply))
        open_t = np.floor(first + np.clip(rng.exponential(4 * HOUR, k), 60, 3 * DAY))
        open_t = np.where(happened & is_reply, np.minimum(open_t, ev_time - 60), open_t)
        clicked = opened & (rng.random(k) < CLICK_RATE)
        click_t = np.floor(open_t + np.clip(rng.exponential(2400, k), 30, DAY))
        r.opened[rows] = np.where(opened & (open_t <= now), open_t, np.nan)
        r.open_due[rows] = np.where(opened & (open_t > now), open_t, INF)
        r.clicked[rows] = np.where(clicked & (click_t <= now), click_t, np.nan)
        r.click_due[rows] = np.where(clicked & (click_t > now), click_t, INF)

    # Aggregates that follow from the sends.
    today = np.floor(now / DAY) * DAY
    for j in range(steps):
        sel = steps_sent > j
        t = times[sel, j]
        days, counts = np.unique((t // DAY).astype(np.int64), return_counts=True)
        for day, count in zip(days.tolist(), counts.tolist(), strict=True):
            c.daily[day] = c.daily.get(day, 0) + count
        mb_today = np.bincount(mailbox[sel][t >= today], minlength=len(ws.mailboxes))
        for m in ws.mailboxes:
            m.sent_today += int(mb_today[m.index])
    c.sent = int(steps_sent.sum())
    c.variant_sent = np.bincount(variant, weights=steps_sent, minlength=5).astype(np.int64)
    c.variant_replied = np.bincount(variant[happened & is_reply], minlength=5).astype(np.int64)
    ws.person_last_contact[r.person[rows]] = last_sent
    if c.status == "completed":
        c.completed_at = float(last_sent.max())
    dues = [r.open_due[rows], r.click_due[rows], r.reply_due[rows], r.unsub_due[rows]]
    c.next_event = float(min(x.min() for x in dues))

    reply_rows = np.flatnonzero(happened & is_reply)
    for rep in make_replies(ws, c, reply_rows, ev_time[reply_rows], reply_type[reply_rows], d, rng, now):
        ws.add_reply(rep)
    for row in np.flatnonzero(happened & is_unsub).tolist():
        ws.blacklist.add(int(r.person[row]))
    for row in np.flatnonzero(happened & is_reply & (reply_type == 4)).tolist():
        ws.blacklist.add(int(r.person[row]))
    c.touch()
