"""Resource shapes of the API (part 2 of the spec), built from the state."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .directory import Directory
from .model import Campaign, Mailbox, Reply, Workspace
from .recipients import STATUSES
from .timeutil import DAY, day_string, iso, iso_many


def _rate(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def campaign(c: Campaign) -> dict[str, Any]:
    counts = c.counts()
    return {
        "id": c.id,
        "name": c.name,
        "status": c.status,
        "campaign_type": c.campaign_type,
        "schedule_type": c.schedule_type,
        "scheduled_at": iso(c.scheduled_at),
        "subject_lines": list(c.subject_lines),
        "email_bodies": list(c.email_bodies),
        "send_window": {"start": c.window_start, "end": c.window_end, "days": list(c.days), "timezone": c.timezone},
        "follow_up": {"enabled": c.follow_up_enabled, "delay_days": c.follow_up_delay_days, "max": c.max_follow_ups},
        "stop_on_reply": c.stop_on_reply,
        "delay_between_emails": c.delay_between_emails,
        "track_opens": c.track_opens,
        "email_account_ids": list(c.email_account_ids),
        "stats": {
            "total_leads": counts["recipients"],
            "sent": c.sent,
            "opened": counts["opened"],
            "clicked": counts["clicked"],
            "replied": counts["replied"],
            "bounced": counts["bounced"],
        },
        "created_at": iso(c.created_at),
    }


def stats(c: Campaign, now: float) -> dict[str, Any]:
    counts = c.counts()
    contacted = counts["contacted"]
    today = int(now // DAY)
    variants = []
    for i, subject in enumerate(c.subject_lines):
        sent, replied = int(c.variant_sent[i]), int(c.variant_replied[i])
        variants.append(
            {"index": i, "subject": subject, "sent": sent, "replied": replied, "reply_rate": _rate(replied, sent)}
        )
    return {
        "campaign": {"id": c.id, "name": c.name, "status": c.status},
        "totals": {
            "recipients": counts["recipients"],
            "sent": c.sent,
            "delivered": c.sent - counts["bounced"],
            "opened": counts["opened"],
            "clicked": counts["clicked"],
            "replied": counts["replied"],
            "bounced": counts["bounced"],
            "unsubscribed": counts["unsubscribed"],
            "pending": counts["pending"],
            "failed": 0,
        },
        "rates": {
            "open": _rate(counts["opened"], contacted),
            "click": _rate(counts["clicked"], contacted),
            "reply": _rate(counts["replied"], contacted),
            "bounce": _rate(counts["bounced"], contacted),
            "unsubscribe": _rate(counts["unsubscribed"], contacted),
            "progress": _rate(contacted, counts["recipients"]),
        },
        "variants": variants,
        "daily": [{"date": day_string(day), "sent": c.daily.get(day, 0)} for day in range(today - 13, today + 1)],
    }


def recipients_page(c: Campaign, rows: np.ndarray, d: Directory) -> list[dict[str, Any]]:
    r = c.recipients
    person = r.person[rows]
    status = r.status[rows].tolist()
    step = r.step[rows].tolist()
    cols = {name: iso_many(getattr(r, name)[rows]) for name in ("last_sent", "opened", "clicked", "replied", "bounced")}
    out = []
    for i, (row, p) in enumerate(zip(rows.tolist(), person.tolist(), strict=True)):
        out.append(
            {
                "id": r.id_of(row),
                "email": d.email(p),
                "first_name": d.first_name(p),
                "last_name": d.last_name(p),
                "company": d.company_of(p),
                "status": STATUSES[status[i]],
                "current_step": step[i],
                "last_sent_at": cols["last_sent"][i],
                "opened_at": cols["opened"][i],
                "clicked_at": cols["clicked"][i],
                "replied_at": cols["replied"][i],
                "bounced_at": cols["bounced"][i],
            }
        )
    return out


def reply(rep: Reply, with_body: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": rep.id,
        "campaign_id": rep.campaign_id,
        "email_account_id": rep.email_account_id,
        "from": rep.sender,
        "subject": rep.subject,
        "snippet": rep.snippet,
        "reply_type": rep.reply_type,
        "is_read": rep.is_read,
        "received_at": iso(rep.received_at),
    }
    if with_body:
        out["body"] = rep.body
    return out


def mailbox(m: Mailbox) -> dict[str, Any]:
    return {
        "id": m.id,
        "email": m.email,
        "display_name": m.display_name,
        "provider": m.provider,
        "is_active": m.is_active,
        "daily_send_limit": m.daily_send_limit,
        "sent_today": m.sent_today,
        "reputation_score": m.reputation_score,
        "warmup": {"enabled": m.warmup_enabled, "health_score": m.warmup_health},
        "created_at": iso(m.created_at),
    }


def account(ws: Workspace) -> dict[str, Any]:
    return {
        "workspace": {"id": ws.id, "name": ws.name, "created_at": iso(ws.created_at)},
        "plan": ws.plan,
        "credits": {"balance": ws.credits},
        "counts": {"campaigns": len(ws.campaigns), "email_accounts": len(ws.mailboxes), "lists": len(ws.lists)},
    }


def meta(page: int, per_page: int, total: int) -> dict[str, int]:
    return {"current_page": page, "last_page": max(1, math.ceil(total / per_page)), "total": total}
