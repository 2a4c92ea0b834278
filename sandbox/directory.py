"""A seeded directory of people and companies: recipients, lead lists and search all draw from it.

People and companies are columns of small integers into the word lists of `vocab`, so a directory of a
million people costs tens of megabytes and every text field is built only when a row is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import vocab

_TLDS = ("com", "io", "de", "co.uk", "net", "co", "ch", "us")
SENIORITY_KEYS = tuple(vocab.SENIORITY_LABELS)
_TITLE_SENIORITY = np.array([SENIORITY_KEYS.index(s) for _, s in vocab.TITLES], dtype=np.int8)


@dataclass
class Directory:
    # companies
    company_name: npt.NDArray[np.object_]  # of str
    company_domain: npt.NDArray[np.object_]  # of str ("" = unknown domain)
    company_industry: npt.NDArray[np.int8]
    company_size: npt.NDArray[np.int8]
    company_country: npt.NDArray[np.int8]
    company_city: npt.NDArray[np.int8]
    company_open_roles: npt.NDArray[np.int16]
    company_hiring: npt.NDArray[np.int16]  # title index the company hires for (-1 none)
    # people
    first: npt.NDArray[np.int16]
    last: npt.NDArray[np.int16]
    company: npt.NDArray[np.int32]
    prev_company: npt.NDArray[np.int32]
    title: npt.NDArray[np.int8]
    has_email: npt.NDArray[np.bool_]

    @property
    def people(self) -> int:
        return int(self.first.size)

    @property
    def companies(self) -> int:
        return int(self.company_name.size)

    # ---- text of one person -------------------------------------------------------------------
    def first_name(self, p: int) -> str:
        return vocab.FIRST_NAMES[int(self.first[p])]

    def last_name(self, p: int) -> str:
        return vocab.LAST_NAMES[int(self.last[p])]

    def company_of(self, p: int) -> str:
        return str(self.company_name[self.company[p]])

    def email(self, p: int) -> str:
        c = self.company[p]
        domain = self.company_domain[c] or f"mail{c}.example.com"
        return f"{self.first_name(p)}.{self.last_name(p)}{p}@{domain}".lower()

    def person_location(self, p: int) -> str:
        c = self.company[p]
        country = int(self.company_country[c])
        return f"{vocab.CITIES[country][(p + int(self.company_city[c])) % 5]}, {vocab.COUNTRIES[country]}"

    def person_preview(self, p: int) -> dict[str, object]:
        c = int(self.company[p])
        title, seniority = vocab.TITLES[self.title[p]]
        return {
            "first_name": self.first_name(p),
            "last_name": self.last_name(p),
            "job_title": title,
            "seniority": vocab.SENIORITY_LABELS[seniority],
            "company": str(self.company_name[c]),
            "domain": str(self.company_domain[c]),
            "location": self.person_location(p),
            "has_email": bool(self.has_email[p]),
        }

    def company_preview(self, c: int) -> dict[str, object]:
        country = int(self.company_country[c])
        return {
            "name": str(self.company_name[c]),
            "domain": str(self.company_domain[c]),
            "industry": vocab.INDUSTRIES[self.company_industry[c]],
            "size": vocab.SIZES[self.company_size[c]],
            "location": f"{vocab.CITIES[country][int(self.company_city[c])]}, {vocab.COUNTRIES[country]}",
            "open_roles": int(self.company_open_roles[c]),
        }

    # ---- vectorised filters -------------------------------------------------------------------
    def companies_matching_text(self, text: str) -> npt.NDArray[np.bool_]:
        """Boolean mask over companies whose name or domain contains text (case-insensitive)."""
        needle = text.lower()
        names = np.char.lower(self.company_name.astype(str))
        domains = np.char.lower(self.company_domain.astype(str))
        return (np.char.find(names, needle) >= 0) | (np.char.find(domains, needle) >= 0)

    def companies_matching_any(self, values: list[str]) -> npt.NDArray[np.bool_]:
        """Companies whose name or domain equals (case-insensitive) or contains one of values."""
        mask = np.zeros(self.companies, dtype=bool)
        for value in values:
            mask |= self.companies_matching_text(value.strip())
        return mask


def _vocab_mask(words: tuple[str, ...], needle: str) -> npt.NDArray[np.bool_]:
    return np.array([needle in w.lower() for w in words], dtype=bool)


def title_mask_containing(text: str) -> npt.NDArray[np.bool_]:
    """Boolean mask over vocab.TITLES whose title contains text (case-insensitive)."""
    return _vocab_mask(tuple(t for t, _ in vocab.TITLES), text.lower())


def people_matching_text(d: Directory, text: str) -> npt.NDArray[np.bool_]:
    """People whose name, title or company contains text."""
    needle = text.lower().strip()
    first_ok = _vocab_mask(tuple(vocab.FIRST_NAMES), needle)[d.first]
    last_ok = _vocab_mask(tuple(vocab.LAST_NAMES), needle)[d.last]
    title_ok = title_mask_containing(needle)[d.title]
    company_ok = d.companies_matching_text(needle)[d.company]
    full = np.zeros(d.people, dtype=bool)
    if " " in needle:  # "maria lopez"
        a, _, b = needle.partition(" ")
        full = _vocab_mask(tuple(vocab.FIRST_NAMES), a)[d.first] & _vocab_mask(tuple(vocab.LAST_NAMES), b)[d.last]
    return first_ok | last_ok | title_ok | company_ok | full


def seniority_of(d: Directory) -> npt.NDArray[np.int8]:
    """Seniority index (into SENIORITY_KEYS) of every person."""
    return _TITLE_SENIORITY[d.title]


def build_directory(rng: np.random.Generator, people: int) -> Directory:
    """A deterministic directory with `people` people spread over realistic companies."""
    combos = [
        (a, b, s)
        for s in range(len(vocab.COMPANY_SUFFIX))
        for a in vocab.COMPANY_WORDS_A
        for b in vocab.COMPANY_WORDS_B
    ]
    n_companies = int(min(len(combos), max(200, people // 25)))
    order = rng.permutation(len(combos))[:n_companies]
    names = np.empty(n_companies, dtype=object)
    domains = np.empty(n_companies, dtype=object)
    no_domain = rng.random(n_companies) < 0.03
    for i, k in enumerate(order.tolist()):
        a, b, s = combos[k]
        names[i] = f"{a} {b}{vocab.COMPANY_SUFFIX[s]}"
        domains[i] = "" if no_domain[i] else f"{a}{b}.{_TLDS[s]}".lower()
    # Company sizes skew small; people concentrate in bigger companies.
    size = rng.choice(len(vocab.SIZES), size=n_companies, p=[0.2, 0.25, 0.2, 0.12, 0.09, 0.08, 0.04, 0.02])
    weight = np.array([1, 2, 4, 7, 10, 14, 18, 24], dtype=float)[size]
    weight /= weight.sum()
    hiring = np.where(rng.random(n_companies) < 0.4, rng.integers(0, len(vocab.TITLES), n_companies), -1)
    company = rng.choice(n_companies, size=people, p=weight).astype(np.int32)
    prev = np.where(rng.random(people) < 0.6, rng.integers(0, n_companies, people), company).astype(np.int32)
    title_p = np.array(
        [3, 3, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 2, 2], float
    )
    title_p /= title_p.sum()
    return Directory(
        company_name=names,
        company_domain=domains,
        company_industry=rng.integers(0, len(vocab.INDUSTRIES), n_companies).astype(np.int8),
        company_size=size.astype(np.int8),
        company_country=rng.choice(
            len(vocab.COUNTRIES),
            size=n_companies,
            p=[0.34, 0.12, 0.1, 0.07, 0.05, 0.05, 0.07, 0.04, 0.05, 0.05, 0.03, 0.03],
        ).astype(np.int8),
        company_city=rng.integers(0, 5, n_companies).astype(np.int8),
        company_open_roles=np.where(hiring >= 0, rng.integers(1, 40, n_companies), 0).astype(np.int16),
        company_hiring=hiring.astype(np.int16),
        first=rng.integers(0, len(vocab.FIRST_NAMES), people).astype(np.int16),
        last=rng.integers(0, len(vocab.LAST_NAMES), people).astype(np.int16),
        company=company,
        prev_company=prev,
        title=rng.choice(len(vocab.TITLES), size=people, p=title_p).astype(np.int8),
        has_email=rng.random(people) < 0.9,
    )
