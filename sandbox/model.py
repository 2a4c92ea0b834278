"""The sandbox's state: workspaces, keys, campaigns with columnar recipients, mailboxes, replies, hooks."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .merge_fields import render
from .recipients import (
    INF,
    STATUSES,
    Recipients,
)
from .timeutil import iso
from .vocab import REPLY_TEXTS


@dataclass
class Mailbox:
    id: str
    email: str
    display_name: str
    provider: str
    is_active: bool
    daily_send_limit: int
    sent_today: int
    reputation_score: float
    warmup_enabled: bool
    warmup_health: float
    created_at: float
    index: int
    next_free: float = 0.0
    reputation_hit: float = 0.0  # points a scenario takes off the score at the next UTC midnight
    bounces_today: int = 0


@dataclass
class Campaign:
    id: str
    workspace_id: str
    name: str
    status: str
    campaign_type: str
    schedule_type: str
    scheduled_at: float | None
    subject_lines: list[str]
    email_bodies: list[str]
    window_start: str
    window_end: str
    days: list[str]
    timezone: str
    follow_up_enabled: bool
    follow_up_delay_days: int
    max_follow_ups: int
    stop_on_reply: bool
    delay_between_emails: int
    track_opens: bool
    email_account_ids: list[str]
    created_at: float
    recipients: Recipients
    launched_at: float | None = None
    completed_at: float | None = None
    sent: int = 0
    variant_sent: np.ndarray = field(default_factory=lambda: np.zeros(5, dtype=np.int64))
    variant_replied: np.ndarray = field(default_factory=lambda: np.zeros(5, dtype=np.int64))
    daily: dict[int, int] = field(default_factory=dict)  # UTC day number -> emails sent
    next_event: float = INF  # earliest scheduled open/click/reply/unsubscribe
    version: int = 0
    stalled: bool = False  # a scenario's silent stall: active, recipients due, nothing sent
    _stats_cache: tuple[int, dict[str, int]] | None = None

    @property
    def total_steps(self) -> int:
        return 1 + (self.max_follow_ups if self.follow_up_enabled else 0)

    def touch(self) -> None:
        self.version += 1

    def counts(self) -> dict[str, int]:
        """Recipient counts by status, plus opened/clicked (cached until the campaign changes)."""
        if self._stats_cache is not None and self._stats_cache[0] == self.version:
            return self._stats_cache[1]
        r = self.recipients
        by_status = np.bincount(r.status, minlength=len(STATUSES)) if len(r) else np.zeros(len(STATUSES), int)
        counts = {name: int(by_status[code]) for code, name in enumerate(STATUSES)}
        counts["recipients"] = len(r)
        counts["opened"] = int(np.count_nonzero(~np.isnan(r.opened)))
        counts["clicked"] = int(np.count_nonzero(~np.isnan(r.clicked)))
        counts["contacted"] = int(np.count_nonzero(r.step > 0))
        self._stats_cache = (self.version, counts)
        return counts


@dataclass(slots=True)
class Reply:
    """One reply per recipient. Text fields are rendered on access from the campaign row (cheap to hold)."""

    id: str
    campaign: Campaign
    row: int
    mailbox: Mailbox
    reply_type: str
    text_seed: int
    is_read: bool
    received_at: float
    directory: Any

    @property
    def campaign_id(self) -> str:
        return self.campaign.id

    @property
    def email_account_id(self) -> str:
        return self.mailbox.id

    @property
    def lead_id(self) -> str:
        return self.campaign.recipients.id_of(self.row)

    @property
    def sender(self) -> str:
        return str(self.directory.email(int(self.campaign.recipients.person[self.row])))

    def _rendered(self, which: str) -> str:
        """The subject or body variant this recipient received, with merge fields filled."""
        c, d = self.campaign, self.directory
        r = c.recipients
        person = int(r.person[self.row])
        variant = max(int(r.variant[self.row]), 0)
        mb = int(r.mailbox[self.row])
        values = {
            "first_name": d.first_name(person),
            "last_name": d.last_name(person),
            "company": d.company_of(person),
            "email": d.email(person),
            "sender": self.mailbox.display_name if mb >= 0 else "",
        }
        templates = c.subject_lines if which == "subject" else c.email_bodies
        return render(templates[variant % len(templates)], values)

    @property
    def subject(self) -> str:
        return "Re: " + self._rendered("subject")

    @property
    def text(self) -> str:
        texts = REPLY_TEXTS[self.reply_type]
        return texts[self.text_seed % len(texts)]

    @property
    def quoted(self) -> str:
        sent = (iso(float(self.campaign.recipients.last_sent[self.row])) or "")[:10]
        lines = [
            f"On {sent}, {self.mailbox.display_name} <{self.mailbox.email}> wrote:",
            *self._rendered("body").splitlines(),
        ]
        return "\n".join("> " + line for line in lines)

    @property
    def snippet(self) -> str:
        text = self.text
        return text if len(text) <= 80 else text[:77] + "..."

    @property
    def body(self) -> str:
        return f"{self.text}\n\n{self.quoted}"


def _key(r: Reply) -> tuple[float, str]:
    """Sort key for newest first, ties by id ascending: compare (-received_at, id) ascending."""
    return (-r.received_at, r.id)


def _newest_first(items: list[Reply]) -> list[Reply]:
    return sorted(items, key=_key)


@dataclass
class Hook:
    id: str
    workspace_id: str
    event: str
    target: str
    consecutive_failures: int = 0
    paused: bool = False


@dataclass
class LeadList:
    id: str
    name: str
    kind: str  # "people" or "companies"
    created_at: float
    rows: np.ndarray  # person or company indices
    lead_base: int

    def lead_id(self, row: int) -> str:
        return str(uuid.UUID(int=self.lead_base | row))


@dataclass(frozen=True)
class ApiKey:
    key: str
    workspace_id: str
    level: str  # "rw" | "read"
    role: str  # "admin" | "former_admin"


@dataclass
class Workspace:
    id: str
    name: str
    created_at: float
    plan: str
    credits: int
    signing_secret: str
    person_last_contact: np.ndarray  # per directory person: last send time (NaN = never)
    in_workspace: np.ndarray  # per directory person: held in a list or campaign already
    mailboxes: list[Mailbox] = field(default_factory=list)
    campaigns: list[Campaign] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)  # sorted newest first, ties by id
    lists: dict[str, LeadList] = field(default_factory=dict)
    company_in_workspace: set[int] = field(default_factory=set)
    hooks: dict[str, Hook] = field(default_factory=dict)
    blacklist: set[int] = field(default_factory=set)  # person indices
    campaign_by_id: dict[str, Campaign] = field(default_factory=dict)
    reply_by_id: dict[str, Reply] = field(default_factory=dict)
    mailbox_by_id: dict[str, Mailbox] = field(default_factory=dict)
    lead_index: dict[str, tuple[str, int]] = field(default_factory=dict)  # lead id -> (list id, row)
    replies_dirty: bool = False
    _sorted_upto: int = 0  # replies[:_sorted_upto] are sorted; later ones were appended since
    replies_version: int = 0  # bumped when a reply is added or marked read
    _reply_views: dict[tuple[str | None, bool], list[Reply]] = field(default_factory=dict)
    _reply_views_version: int = -1
    rng: np.random.Generator | None = None  # this workspace's simulation randomness (None: the state's shared one)
    bounce_rate: float | None = None  # share of first sends that hard-bounce (None: history.BOUNCE_RATE)

    def add_campaign(self, campaign: Campaign) -> None:
        self.campaigns.append(campaign)
        self.campaign_by_id[campaign.id] = campaign

    def add_mailbox(self, mailbox: Mailbox) -> None:
        self.mailboxes.append(mailbox)
        self.mailbox_by_id[mailbox.id] = mailbox

    def add_reply(self, reply: Reply) -> None:
        self.replies.append(reply)
        self.reply_by_id[reply.id] = reply
        self.replies_dirty = True
        self.replies_version += 1

    def sorted_replies(self) -> list[Reply]:
        """Replies newest first by received_at, ties by id. New replies are usually all newer than the sorted
        ones (the clock only moves forward), so they are sorted alone and put in front."""
        if self.replies_dirty:
            fresh = _newest_first(self.replies[self._sorted_upto :])
            old = self.replies[: self._sorted_upto]
            if not old or not fresh or _key(fresh[-1]) <= _key(old[0]):
                self.replies = fresh + old
            else:
                self.replies = _newest_first(self.replies)
            self._sorted_upto = len(self.replies)
            self.replies_dirty = False
        return self.replies

    def filtered_replies(self, campaign_id: str | None, unread: bool) -> list[Reply]:
        """Replies newest first, optionally of one campaign and/or unread only (cached between changes)."""
        items = self.sorted_replies()
        if not campaign_id and not unread:
            return items
        if self._reply_views_version != self.replies_version:
            self._reply_views = {}
            self._reply_views_version = self.replies_version
        key = (campaign_id, unread)
        if key not in self._reply_views:
            self._reply_views[key] = [
                r for r in items if (not campaign_id or r.campaign.id == campaign_id) and (not unread or not r.is_read)
            ]
        return self._reply_views[key]

    def add_list(self, lead_list: LeadList) -> None:
        self.lists[lead_list.id] = lead_list
        if lead_list.kind == "people":
            for row in range(lead_list.rows.size):
                self.lead_index[lead_list.lead_id(row)] = (lead_list.id, row)
            self.in_workspace[lead_list.rows] = True
        else:
            self.company_in_workspace.update(int(c) for c in lead_list.rows)


@dataclass
class State:
    """All mutable state of one sandbox; built by `seed.build_state`, owned by the app."""

    now: float
    workspaces: list[Workspace]
    keys: dict[str, ApiKey]
    directory: Any  # directory.Directory
    rng: np.random.Generator  # the simulation's randomness (clock advances only)
    rng_ids: np.random.Generator  # ids and choices made by API writes
    lock: threading.RLock = field(default_factory=threading.RLock)
    workspace_by_id: dict[str, Workspace] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workspace_by_id = {w.id: w for w in self.workspaces}

    def workspace(self, workspace_id: str) -> Workspace:
        return self.workspace_by_id[workspace_id]
