"""The simulation clock: sends inside send windows, then opens, clicks, replies, bounces, unsubscribes.

Time advances in ticks of at most 10 minutes, split at UTC midnight (when mailbox day counters roll over).
In each tick every active campaign that is inside its local send window sends to due recipients (follow-ups
first, then never-contacted ones) from its active mailboxes, spaced by delay_between_emails per mailbox and
capped by each mailbox's daily limit and the workspace credits. Each send may schedule future events; events
that fall due are applied and delivered to webhook subscribers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import views
from .content import make_replies
from .history import CLICK_RATE, FIRST_REPLY_RATE, FOLLOW_UP_REPLY_RATE, OPEN_RATE, UNSUBSCRIBE_RATE, bounce_rate_of
from .model import Campaign, State, Workspace
from .recipients import ACTIVE, BOUNCED, COMPLETED, INF, REPLIED, SENT, UNSUBSCRIBED
from .timeutil import DAY, WEEKDAYS, hhmm_minutes, iso, iso_offset, local_position
from .vocab import REPLY_TYPE_WEIGHTS, REPLY_TYPES

TICK = 600.0
HOUR = 3600.0
_OPEN_TO = (ACTIVE, SENT, COMPLETED)  # statuses a reply or an unsubscribe can still change


class Simulator:
    def __init__(self, state: State, webhooks: Any) -> None:
        self.state = state
        self.webhooks = webhooks
        self.rng = state.rng

    def rng_of(self, ws: Workspace) -> np.random.Generator:
        """The workspace's own generator (workspaces after the second), else the shared one."""
        return ws.rng if ws.rng is not None else self.rng

    # ---- driver ------------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        st = self.state
        end = st.now + seconds
        t = st.now
        while t < end:
            midnight = (math.floor(t / DAY) + 1) * DAY
            t1 = min(t + TICK, end, midnight)
            self._tick(t, t1)
            if t1 == midnight:
                self._new_day()
            t = t1
        st.now = end
        for ws in st.workspaces:
            ws.sorted_replies()

    def _tick(self, t0: float, t1: float) -> None:
        for ws in self.state.workspaces:
            for c in ws.campaigns:
                changed = False
                if c.status == "active":
                    changed = self._send(ws, c, t0, t1)
                if c.next_event <= t1:
                    self._events(ws, c, t1)
                    changed = True
                if c.status == "active" and (changed or c.launched_at is not None and c.launched_at >= t0):
                    self._maybe_complete(ws, c, t1)

    def _new_day(self) -> None:
        for ws in self.state.workspaces:
            for m in ws.mailboxes:
                bounce_rate = m.bounces_today / m.sent_today if m.sent_today else 0.0
                m.reputation_score = round(float(np.clip(m.reputation_score + 0.3 - 40 * bounce_rate, 40, 100)), 1)
                if m.reputation_hit:
                    m.reputation_score, m.reputation_hit = (
                        round(max(0.0, m.reputation_score - m.reputation_hit), 1),
                        0.0,
                    )
                if m.warmup_enabled:
                    m.warmup_health = round(min(100.0, m.warmup_health + 0.4), 1)
                m.sent_today = 0
                m.bounces_today = 0

    # ---- sending -----------------------------------------------------------------------------
    def _window(self, c: Campaign, t0: float, t1: float) -> tuple[float, float] | None:
        """The part of [t0, t1) inside the campaign's send window, or None."""
        weekday, secs = local_position(t0, c.timezone)
        if WEEKDAYS[weekday] not in c.days:
            return None
        start, end = hhmm_minutes(c.window_start) * 60, hhmm_minutes(c.window_end) * 60
        begin = t0 + max(0.0, start - secs)
        stop = min(t1, t0 + (end - secs))
        return (begin, stop) if stop > begin else None

    def _send(self, ws: Workspace, c: Campaign, t0: float, t1: float) -> bool:
        if c.scheduled_at is not None and c.scheduled_at > t0:
            return False
        if ws.credits <= 0 or len(c.recipients) == 0 or c.stalled:
            return False
        window = self._window(c, t0, t1)
        if window is None:
            return False
        begin, stop = window
        mailboxes = [m for m in (ws.mailbox_by_id.get(i) for i in c.email_account_ids) if m is not None and m.is_active]
        if not mailboxes:
            return False
        r = c.recipients
        due = np.flatnonzero(r.next_due <= begin)
        if due.size == 0:
            return False
        times: list[float] = []
        owners: list[int] = []
        for m in mailboxes:
            start = max(begin, m.next_free)
            n = max(0, min(math.ceil((stop - start) / c.delay_between_emails), m.daily_send_limit - m.sent_today))
            times.extend(start + i * c.delay_between_emails for i in range(n))
            owners.extend([m.index] * n)
        if not times:
            return False
        order = np.argsort(np.array(times), kind="stable")
        k = min(order.size, due.size, ws.credits)
        follow = due[r.step[due] > 0]
        follow = follow[np.argsort(r.next_due[follow], kind="stable")]
        rows = np.concatenate([follow, due[r.step[due] == 0]])[:k]
        slot_times = np.floor(np.array(times)[order[:k]])
        slot_mb = np.array(owners, dtype=np.int16)[order[:k]]
        for m in mailboxes:
            used = slot_times[slot_mb == m.index]
            if used.size:
                m.next_free = float(used.max()) + c.delay_between_emails
        self._apply_sends(ws, c, rows, slot_times, slot_mb)
        return True

    def _apply_sends(self, ws: Workspace, c: Campaign, rows: np.ndarray, times: np.ndarray, mbs: np.ndarray) -> None:
        rng, r, k = self.rng_of(ws), c.recipients, rows.size
        first = r.step[rows] == 0
        r.variant[rows[first]] = rng.integers(0, len(c.subject_lines), int(first.sum()))
        r.step[rows] += 1
        r.last_sent[rows] = times
        r.mailbox[rows] = mbs
        more = r.step[rows] < c.total_steps
        was_replied = r.status[rows] == REPLIED
        r.next_due[rows] = np.where(more, times + c.follow_up_delay_days * DAY, INF)
        r.status[rows] = np.where(was_replied, REPLIED, np.where(more, ACTIVE, SENT))

        bounce = first & (rng.random(k) < bounce_rate_of(ws))
        b_rows = rows[bounce]
        r.status[b_rows] = BOUNCED
        r.bounced[b_rows] = times[bounce] + 30
        r.next_due[b_rows] = INF
        ok = ~bounce
        lag = np.floor(np.clip(rng.exponential(6 * HOUR, k), 300, max(300.0, c.follow_up_delay_days * DAY - HOUR)))
        rate = np.where(first, FIRST_REPLY_RATE, FOLLOW_UP_REPLY_RATE)
        free = ok & ~was_replied & np.isinf(r.reply_due[rows]) & np.isinf(r.unsub_due[rows])
        reply = free & (rng.random(k) < rate)
        unsub = free & ~reply & (rng.random(k) < UNSUBSCRIBE_RATE)
        r.reply_due[rows[reply]] = times[reply] + lag[reply]
        r.unsub_due[rows[unsub]] = times[unsub] + lag[unsub]
        if c.track_opens:
            fresh = ok & np.isnan(r.opened[rows]) & np.isinf(r.open_due[rows])
            opens = fresh & ((rng.random(k) < OPEN_RATE) | reply)
            open_t = np.floor(times + np.clip(rng.exponential(4 * HOUR, k), 60, 3 * DAY))
            open_t = np.where(reply, np.minimum(open_t, times + lag - 60), open_t)
            r.open_due[rows[opens]] = open_t[opens]
            clicks = opens & np.isnan(r.clicked[rows]) & (rng.random(k) < CLICK_RATE)
            r.click_due[rows[clicks]] = open_t[clicks] + np.floor(
                np.clip(rng.exponential(2400, int(clicks.sum())), 30, DAY)
            )

        c.sent += k
        c.variant_sent += np.bincount(r.variant[rows], minlength=5)[:5]
        days, counts = np.unique((times // DAY).astype(np.int64), return_counts=True)
        for day, count in zip(days.tolist(), counts.tolist(), strict=True):
            c.daily[day] = c.daily.get(day, 0) + count
        per_mb = np.bincount(mbs, minlength=len(ws.mailboxes))
        bounced_mb = np.bincount(mbs[bounce], minlength=len(ws.mailboxes))
        for index in np.flatnonzero(per_mb).tolist():
            m = ws.mailboxes[index]
            m.sent_today += int(per_mb[m.index])
            m.bounces_today += int(bounced_mb[m.index])
        ws.credits -= k
        ws.person_last_contact[r.person[rows]] = times
        c.next_event = min(c.next_event, self._min_due(c, rows))
        c.touch()
        for row in b_rows.tolist():
            self._emit(ws, "lead.bounced", c, row, float(r.bounced[row]), {"bounced_at": iso(r.bounced[row])})

    @staticmethod
    def _min_due(c: Campaign, rows: np.ndarray | None = None) -> float:
        r = c.recipients
        if len(r) == 0:
            return INF
        cols = (r.open_due, r.click_due, r.reply_due, r.unsub_due)
        return float(min((x if rows is None else x[rows]).min(initial=INF) for x in cols))

    # ---- events ------------------------------------------------------------------------------
    def _events(self, ws: Workspace, c: Campaign, t1: float) -> None:
        r, d, rng = c.recipients, self.state.directory, self.rng_of(ws)
        rows = np.flatnonzero(r.open_due <= t1)
        for row in rows.tolist():
            t = float(r.open_due[row])
            r.open_due[row] = INF
            if np.isnan(r.opened[row]):
                r.opened[row] = t
                self._emit(ws, "lead.opened", c, row, t, {"opened_at": iso(t)})
        rows = np.flatnonzero(r.click_due <= t1)
        for row in rows.tolist():
            t = float(r.click_due[row])
            r.click_due[row] = INF
            if np.isnan(r.opened[row]):
                r.opened[row] = t
            if np.isnan(r.clicked[row]):
                r.clicked[row] = t
                self._emit(ws, "lead.clicked", c, row, t, {"clicked_at": iso(t)})
        rows = np.flatnonzero(r.reply_due <= t1)
        for row in rows.tolist():
            t = float(r.reply_due[row])
            r.reply_due[row] = INF
            if int(r.status[row]) not in _OPEN_TO:
                continue
            code = int(rng.choice(len(REPLY_TYPES), p=REPLY_TYPE_WEIGHTS))
            r.status[row] = REPLIED
            r.replied[row] = t
            r.reply_type[row] = code
            if c.stop_on_reply:
                r.next_due[row] = INF
            if np.isnan(r.opened[row]) and c.track_opens:
                r.opened[row] = t - 60
            c.variant_replied[max(int(r.variant[row]), 0)] += 1
            rep = make_replies(ws, c, np.array([row]), np.array([t]), np.array([code]), d, rng, self.state.now)[0]
            ws.add_reply(rep)
            if REPLY_TYPES[code] == "unsubscribe":
                ws.blacklist.add(int(r.person[row]))
            self._emit(
                ws,
                "lead.replied",
                c,
                row,
                t,
                lambda rep=rep: {
                    "subject": rep.subject,
                    "reply_type": rep.reply_type,
                    "reply": rep.text,
                    "body": rep.body,
                },
            )
        rows = np.flatnonzero(r.unsub_due <= t1)
        for row in rows.tolist():
            t = float(r.unsub_due[row])
            r.unsub_due[row] = INF
            if int(r.status[row]) not in _OPEN_TO:
                continue
            r.status[row] = UNSUBSCRIBED
            r.next_due[row] = INF
            ws.blacklist.add(int(r.person[row]))
            self._emit(ws, "lead.unsubscribed", c, row, t, {"unsubscribed_at": iso(t)})
        c.next_event = self._min_due(c)
        c.touch()

    def _maybe_complete(self, ws: Workspace, c: Campaign, t1: float) -> None:
        r = c.recipients
        if len(r) == 0 or np.isfinite(r.next_due).any():
            return
        c.status = "completed"
        sent = r.last_sent[~np.isnan(r.last_sent)]
        c.completed_at = float(sent.max()) if sent.size else t1
        r.status[r.status == SENT] = COMPLETED
        c.touch()
        self._emit_campaign(ws, c)

    # ---- webhooks ----------------------------------------------------------------------------
    def _emit(self, ws: Workspace, event: str, c: Campaign, row: int, t: float, extra: Any) -> None:
        """Deliver a lead event to the workspace's subscribers; `extra` is a dict or a callable making it."""
        hooks = [h for h in ws.hooks.values() if h.event == event]
        if not hooks:
            return
        if callable(extra):
            extra = extra()
        d, r = self.state.directory, c.recipients
        p = int(r.person[row])
        data = {
            "lead_id": r.id_of(row),
            "email": d.email(p),
            "first_name": d.first_name(p),
            "company": d.company_of(p),
            "campaign_id": c.id,
            **extra,
        }
        payload = {"event": event, "created_at": iso_offset(t), "data": data}
        for hook in hooks:
            self.webhooks.emit(hook, ws.signing_secret, payload)

    def _emit_campaign(self, ws: Workspace, c: Campaign) -> None:
        hooks = [h for h in ws.hooks.values() if h.event == "campaign.completed"]
        if not hooks:
            return
        view = views.campaign(c)
        data = {
            "campaign_id": c.id,
            "name": c.name,
            "status": c.status,
            "completed_at": iso(c.completed_at),
            "stats": view["stats"],
        }
        payload = {
            "event": "campaign.completed",
            "created_at": iso_offset(c.completed_at or self.state.now),
            "data": data,
        }
        for hook in hooks:
            self.webhooks.emit(hook, ws.signing_secret, payload)
