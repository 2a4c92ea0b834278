"""Recipients of a campaign, stored by column: status codes, uuids and the `Recipients` table."""

from __future__ import annotations

import uuid

import numpy as np

# Recipient status codes (index = code).
STATUSES = ("pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed")
PENDING, ACTIVE, SENT, REPLIED, BOUNCED, UNSUBSCRIBED, COMPLETED = range(7)
STATUS_CODE = {name: code for code, name in enumerate(STATUSES)}
CAMPAIGN_STATUSES = ("draft", "active", "paused", "completed")
INF = np.inf

_FLOAT_COLUMNS = (
    "next_due",
    "last_sent",
    "opened",
    "clicked",
    "replied",
    "bounced",
    "open_due",
    "click_due",
    "reply_due",
    "unsub_due",
)


def new_uuid(rng: np.random.Generator) -> str:
    """A version-4 uuid drawn from a seeded generator (deterministic)."""
    return str(uuid.UUID(bytes=rng.bytes(16), version=4))


def new_uuids(rng: np.random.Generator, n: int) -> list[str]:
    """n version-4 uuids at once (vectorised; for seeding large scales)."""
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    out = []
    for h in (row.tobytes().hex() for row in raw):
        out.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return out


class Recipients:
    """Columnar recipients of one campaign (numpy arrays, one row per recipient, creation order).

    Ids are `base | row` (base is a v4 uuid with the low 32 bits cleared), so no string is stored per row.
    Times are float Unix seconds; NaN = null; `*_due` = time of a scheduled future event (inf = none).
    `next_due` is when the next step may be sent (0 = never contacted, inf = nothing left to send).
    """

    # The float columns (_FLOAT_COLUMNS), made in __init__ and append by name.
    next_due: np.ndarray
    last_sent: np.ndarray
    opened: np.ndarray
    clicked: np.ndarray
    replied: np.ndarray
    bounced: np.ndarray
    open_due: np.ndarray
    click_due: np.ndarray
    reply_due: np.ndarray
    unsub_due: np.ndarray

    def __init__(self, base: int) -> None:
        self._prefix = str(uuid.UUID(int=base))[:-8]
        self.person = np.zeros(0, dtype=np.int32)
        self.status = np.zeros(0, dtype=np.int8)
        self.step = np.zeros(0, dtype=np.int8)
        self.variant = np.zeros(0, dtype=np.int8)
        self.mailbox = np.zeros(0, dtype=np.int16)  # index into Workspace.mailboxes, -1 = none yet
        self.reply_type = np.zeros(0, dtype=np.int8)
        for name in _FLOAT_COLUMNS:
            setattr(self, name, np.zeros(0, dtype=np.float64))

    def __len__(self) -> int:
        return int(self.person.size)

    def append(self, persons: np.ndarray) -> None:
        """Append never-contacted recipients for the given people."""
        n = int(persons.size)
        self.person = np.concatenate([self.person, persons.astype(np.int32)])
        self.status = np.concatenate([self.status, np.full(n, PENDING, dtype=np.int8)])
        self.step = np.concatenate([self.step, np.zeros(n, dtype=np.int8)])
        self.variant = np.concatenate([self.variant, np.full(n, -1, dtype=np.int8)])
        self.mailbox = np.concatenate([self.mailbox, np.full(n, -1, dtype=np.int16)])
        self.reply_type = np.concatenate([self.reply_type, np.full(n, -1, dtype=np.int8)])
        self.next_due = np.concatenate([self.next_due, np.zeros(n)])
        for name in _FLOAT_COLUMNS[1:6]:
            setattr(self, name, np.concatenate([getattr(self, name), np.full(n, np.nan)]))
        for name in _FLOAT_COLUMNS[6:]:
            setattr(self, name, np.concatenate([getattr(self, name), np.full(n, INF)]))

    def id_of(self, row: int) -> str:
        return f"{self._prefix}{row:08x}"
