"""Build a deterministic sandbox state for a seed and scale."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import vocab
from .directory import Directory, build_directory
from .history import HEALTHY_BOUNCE_RATE, seed_history
from .model import ApiKey, Campaign, LeadList, Mailbox, State, Workspace
from .recipients import Recipients, new_uuid
from .settings import SCALES, SandboxSettings, Scale
from .timeutil import DAY

STATUS_PATTERN = (
    "active",
    "completed",
    "paused",
    "draft",
    "active",
    "active",
    "completed",
    "active",
    "paused",
    "active",
    "draft",
    "active",
)
WORKSPACES = (("Northwind Growth", "growth", "northwind-mail.com"), ("Bluebird Studio", "starter", "bluebird-hq.io"))
PLAN_ROW_LIMITS = {"starter": 1_000, "growth": 10_000, "scale": 50_000}
PEOPLE_SEARCH_INDUSTRY_PLANS = {"growth", "scale"}


AGENCY_WORDS = (
    "Growth",
    "Studio",
    "Partners",
    "Digital",
    "Media",
    "Labs",
    "Agency",
    "Collective",
    "Works",
    "Ventures",
    "Consulting",
    "Outreach",
)
EXTRA_PLANS = ("growth", "starter", "scale")


@dataclass(frozen=True)
class Sizes:
    """What one workspace holds at the start."""

    campaigns: int
    recipients: int
    mailboxes: int
    lists: int
    list_rows: int

    @property
    def people(self) -> int:
        """Directory people the workspace takes (recipients and lead-list rows, all distinct)."""
        return self.recipients + self.lists * self.list_rows


def workspace_sizes(scale: Scale) -> tuple[Sizes, Sizes]:
    """(first, second): the scale's totals split two thirds (rounded up) / one third. Every workspace after the
    second has the first one's size: that is "one workspace of the scale"."""

    def two_thirds(n: int) -> int:
        return math.ceil(n * 2 / 3)

    first = Sizes(
        two_thirds(scale.campaigns),
        two_thirds(scale.recipients),
        two_thirds(scale.mailboxes),
        lists=scale.lists,
        list_rows=scale.list_rows,
    )
    second = Sizes(
        scale.campaigns - first.campaigns,
        scale.recipients - first.recipients,
        scale.mailboxes - first.mailboxes,
        lists=scale.lists,
        list_rows=scale.list_rows,
    )
    return first, second


def extra_workspace_name(k: int) -> tuple[str, str]:
    """(name, mail domain) of workspace number k >= 2 (0-based); distinct for every k."""
    i = k - 2
    n_a, n_b = len(vocab.COMPANY_WORDS_A), len(AGENCY_WORDS)
    cycle, i = divmod(i, n_a * n_b)
    q, r = divmod(i, n_a)
    a, b = vocab.COMPANY_WORDS_A[r], AGENCY_WORDS[(q + r) % n_b]  # for each word a, q -> b is a bijection
    suffix = f" {cycle + 1}" if cycle else ""
    return f"{a} {b}{suffix}", f"{a}{b}{cycle + 1 if cycle else ''}.com".lower()


def _uuid_base(rng: np.random.Generator) -> int:
    import uuid

    return uuid.UUID(new_uuid(rng)).int & ~0xFFFFFFFF


def build_state(settings: SandboxSettings) -> State:
    """The seeded state. Workspaces 1 and 2 come from the seed's one generator (as before `--workspaces`), so they
    are the same for every N >= 2; workspace k >= 3 has its own generators (seed, k), so adding workspaces never
    changes earlier ones."""
    rng = np.random.default_rng(settings.seed)
    scale = SCALES[settings.scale]
    now = float(settings.start.timestamp())
    people = max(int(scale.recipients * 1.4) + 4 * scale.lists * scale.list_rows, 20_000)
    d = build_directory(rng, people)
    pool = rng.permutation(np.flatnonzero(d.has_email)).astype(np.int32)
    first, second = workspace_sizes(scale)
    if first.people > pool.size:
        raise ValueError(
            f"scale {settings.scale}: a workspace needs {first.people} people, the directory has {pool.size}"
        )
    cursor = 0
    bounce_rate = HEALTHY_BOUNCE_RATE if settings.scenario == "deliverability" else None
    workspaces: list[Workspace] = []
    keys: dict[str, ApiKey] = {}
    for w, (name, plan, domain) in enumerate(WORKSPACES[: settings.workspaces]):
        ws, cursor = _build_workspace(
            rng, name, plan, domain, (first, second)[w], pool, cursor, d, now, keys, w == 0, bounce_rate
        )
        workspaces.append(ws)
    for k in range(len(WORKSPACES), settings.workspaces):
        wrng = np.random.default_rng([settings.seed, k])
        name, domain = extra_workspace_name(k)
        start = int(wrng.integers(0, pool.size))  # its people: a window of the pool (workspaces may share people)
        window = pool[(start + np.arange(first.people)) % pool.size]
        ws, _ = _build_workspace(
            wrng, name, EXTRA_PLANS[k % len(EXTRA_PLANS)], domain, first, window, 0, d, now, keys, False, bounce_rate
        )
        ws.rng = np.random.default_rng([settings.seed, k, 1])
        workspaces.append(ws)
    return State(
        now=now,
        workspaces=workspaces,
        keys=keys,
        directory=d,
        rng=np.random.default_rng(settings.seed + 1),
        rng_ids=np.random.default_rng(settings.seed + 2),
    )


def _build_workspace(
    rng: np.random.Generator,
    name: str,
    plan: str,
    domain: str,
    size: Sizes,
    pool: np.ndarray,
    cursor: int,
    d: Directory,
    now: float,
    keys: dict[str, ApiKey],
    former_admin: bool,
    bounce_rate: float | None = None,
) -> tuple[Workspace, int]:
    """One seeded workspace (its keys go into `keys`).

    Takes people from pool[cursor:]; returns the workspace and the new cursor.
    """
    ws = Workspace(
        id=new_uuid(rng),
        name=name,
        created_at=float(np.floor(now - rng.uniform(300, 500) * DAY)),
        plan=plan,
        credits=0,
        signing_secret="whsec_" + rng.bytes(16).hex(),
        person_last_contact=np.full(d.people, np.nan),
        in_workspace=np.zeros(d.people, dtype=bool),
        bounce_rate=bounce_rate,
    )
    for level, role in (("rw", "admin"), ("read", "admin")) + ((("rw", "former_admin"),) if former_admin else ()):
        key = ApiKey(key=f"sk_{level}_" + rng.bytes(12).hex(), workspace_id=ws.id, level=level, role=role)
        keys[key.key] = key
    _seed_mailboxes(ws, size.mailboxes, domain, rng)
    cursor = _seed_campaigns(ws, size.campaigns, size.recipients, pool, cursor, d, rng, now)
    for i in range(size.lists):
        rows = pool[cursor : cursor + size.list_rows]
        cursor += size.list_rows
        ws.add_list(
            LeadList(
                id=new_uuid(rng),
                name=f"{vocab.INDUSTRIES[i % len(vocab.INDUSTRIES)]} leads {i + 1}",
                kind="people",
                created_at=float(np.floor(now - rng.uniform(1, 30) * DAY)),
                rows=rows,
                lead_base=_uuid_base(rng),
            )
        )
    for m in ws.mailboxes:  # history may exceed a small limit on a busy day: raise it to a round number
        if m.sent_today > m.daily_send_limit:
            m.daily_send_limit = int(math.ceil(m.sent_today * 1.2 / 50) * 50)
    ws.credits = 10_000 + 3 * sum(len(c.recipients) for c in ws.campaigns)
    ws.sorted_replies()
    return ws, cursor


def _seed_mailboxes(ws: Workspace, count: int, domain: str, rng: np.random.Generator) -> None:
    for i in range(max(count, 1)):
        first = vocab.FIRST_NAMES[int(rng.integers(0, len(vocab.FIRST_NAMES)))]
        last = vocab.LAST_NAMES[int(rng.integers(0, len(vocab.LAST_NAMES)))]
        warm = bool(rng.random() < 0.7)
        ws.add_mailbox(
            Mailbox(
                id=new_uuid(rng),
                email=f"{first}.{last}{i + 1}@{domain}".lower(),
                display_name=f"{first} {last}",
                provider=vocab.PROVIDERS[i % len(vocab.PROVIDERS)],
                is_active=not (count >= 3 and i == count - 1),
                daily_send_limit=int(rng.choice([30, 50, 75, 100, 150])),
                sent_today=0,
                reputation_score=round(float(rng.uniform(82, 99)), 1),
                warmup_enabled=warm,
                warmup_health=round(float(rng.uniform(70, 99)), 1) if warm else 0.0,
                created_at=float(np.floor(ws.created_at + rng.uniform(1, 200) * DAY)),
                index=i,
            )
        )


def _seed_campaigns(
    ws: Workspace,
    count: int,
    recipients: int,
    pool: np.ndarray,
    cursor: int,
    d: Directory,
    rng: np.random.Generator,
    now: float,
) -> int:
    statuses = [STATUS_PATTERN[i % len(STATUS_PATTERN)] for i in range(count)]
    first_draft = statuses.index("draft") if "draft" in statuses else -1
    weights = np.array(
        [rng.lognormal(0, 0.5) if s != "draft" else (0.3 if i == first_draft else 0.0) for i, s in enumerate(statuses)]
    )
    if weights.sum() == 0:
        weights[:] = 1
    sizes = np.floor(recipients * weights / weights.sum()).astype(int)
    sizes[int(np.argmax(weights))] += recipients - int(sizes.sum())
    active_mb = [m for m in ws.mailboxes if m.is_active]
    for i, status in enumerate(statuses):
        tz = vocab.TIMEZONES[
            int(rng.integers(0, 3)) if rng.random() < 0.7 else int(rng.integers(0, len(vocab.TIMEZONES)))
        ]
        start, end, days = vocab.WINDOWS[int(rng.integers(0, len(vocab.WINDOWS)))]
        n_variants = int(rng.integers(1, 4))
        subj = rng.choice(len(vocab.SUBJECTS), size=n_variants, replace=False)
        bodies = rng.choice(len(vocab.BODIES), size=int(rng.integers(1, 3)), replace=False)
        follow = bool(rng.random() < 0.8)
        n_mb = min(len(active_mb), int(rng.integers(1, 4)))
        mbs = [active_mb[j].id for j in rng.choice(len(active_mb), size=n_mb, replace=False)]
        is_empty_draft = status == "draft" and i != first_draft
        c = Campaign(
            id=new_uuid(rng),
            workspace_id=ws.id,
            name=f"{vocab.CAMPAIGN_NAMES[i % len(vocab.CAMPAIGN_NAMES)]}"
            + (f" #{i // len(vocab.CAMPAIGN_NAMES) + 1}" if i >= len(vocab.CAMPAIGN_NAMES) else ""),
            status=status,
            campaign_type=("outbound", "outbound", "nurture", "reengagement")[i % 4],
            schedule_type="scheduled" if i % 5 == 4 else "immediate",
            scheduled_at=None,
            subject_lines=[vocab.SUBJECTS[j] for j in subj],
            email_bodies=[vocab.BODIES[j] for j in bodies],
            window_start=start,
            window_end=end,
            days=list(days),
            timezone=tz,
            follow_up_enabled=follow,
            follow_up_delay_days=int(rng.choice([2, 3, 4, 5, 7])),
            max_follow_ups=int(rng.integers(1, 4)) if follow else 0,
            stop_on_reply=bool(rng.random() < 0.85),
            delay_between_emails=int(rng.choice([60, 120, 180, 300])),
            track_opens=bool(rng.random() < 0.85),
            email_account_ids=[] if is_empty_draft else mbs,
            created_at=float(np.floor(now - rng.uniform(0.2, 5) * DAY)),
            recipients=Recipients(_uuid_base(rng)),
        )
        persons = pool[cursor : cursor + int(sizes[i])]
        cursor += int(sizes[i])
        c.recipients.append(persons)
        ws.in_workspace[persons] = True
        if status != "draft":
            seed_history(c, ws, d, rng, now)
        ws.add_campaign(c)
    return cursor
