"""Find people and companies in the directory; import a search as a new lead list."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import vocab
from ..deps import caller, writer
from ..directory import SENIORITY_KEYS, people_matching_text, seniority_of, title_mask_containing
from ..errors import JSON, invalid
from ..model import LeadList, Workspace
from ..recipients import new_uuid
from ..seed import PEOPLE_SEARCH_INDUSTRY_PLANS, PLAN_ROW_LIMITS
from .control import read_json

router = APIRouter(prefix="/search", tags=["search"])

PREVIEW = 25
COMPANY_MODES = ("current", "previous", "either")
# List filters and the most items each may have (None = no cap).
PEOPLE_LISTS: dict[str, int | None] = {
    "titles": 12,
    "seniorities": None,
    "countries": 12,
    "industries": 12,
    "companies": 25,
}
COMPANY_LISTS: dict[str, int | None] = {"industries": None, "countries": None, "sizes": None}


def _query_lists(request: Request, names: dict[str, int | None]) -> dict[str, Any]:
    """Array filters from `name[]=a&name[]=b` (plain `name=` accepted too), scalars as given."""
    q = request.query_params
    out: dict[str, Any] = {}
    for name in names:
        values = q.getlist(f"{name}[]") + q.getlist(name)
        if values:
            out[name] = values
    for name, value in q.items():
        if not name.endswith("[]") and name not in names:
            out[name] = value
    for name in ("total", "per_company"):
        if name in out:
            try:
                out[name] = int(out[name])
            except ValueError:
                pass
    return out


def _check_common(params: dict[str, Any], lists: dict[str, int | None], errors: dict[str, list[str]]) -> None:
    for name, cap in lists.items():
        v = params.get(name)
        if v is None:
            continue
        if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
            errors[name] = [f"The {name} must be a list of strings."]
        elif cap is not None and len(v) > cap:
            errors[name] = [f"The {name} may not have more than {cap} items."]
    for name in ("q", "list_name", "job_title", "company_mode"):
        if name in params and params[name] is not None and not isinstance(params[name], str):
            errors[name] = [f"The {name} must be a string."]
    for name in ("total", "per_company"):
        v = params.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            errors[name] = [f"The {name} must be an integer of at least 1."]


def _people_mask(rt: Any, ws: Workspace, p: dict[str, Any], errors: dict[str, list[str]]) -> np.ndarray:
    d = rt.state.directory
    if p.get("seniorities") and "seniorities" not in errors:
        bad = [s for s in p["seniorities"] if s not in SENIORITY_KEYS]
        if bad:
            errors["seniorities"] = [f"Unknown seniorities: {', '.join(bad)}; use any of {', '.join(SENIORITY_KEYS)}."]
    if p.get("industries") and ws.plan not in PEOPLE_SEARCH_INDUSTRY_PLANS:
        errors["industries"] = [
            f"The industries filter needs a plan with People search; the {ws.plan} plan does not include it."
        ]
    mode = p.get("company_mode", "current")
    if mode not in COMPANY_MODES:
        errors["company_mode"] = [f"The company_mode must be one of: {', '.join(COMPANY_MODES)}."]
    elif "company_mode" in p and not p.get("companies"):
        errors["company_mode"] = ["The company_mode applies only together with companies."]
    if errors:
        raise invalid(errors)
    mask = np.ones(d.people, dtype=bool)
    if p.get("q"):
        mask &= people_matching_text(d, p["q"])
    if p.get("titles"):
        tm = np.zeros(len(vocab.TITLES), dtype=bool)
        for t in p["titles"]:
            tm |= title_mask_containing(t)
        mask &= tm[d.title]
    if p.get("seniorities"):
        allowed = np.array([k in p["seniorities"] for k in SENIORITY_KEYS])
        mask &= allowed[seniority_of(d)]
    if p.get("countries"):
        cm = np.array([c.lower() in {x.lower() for x in p["countries"]} for c in vocab.COUNTRIES])
        mask &= cm[d.company_country[d.company]]
    if p.get("industries"):
        im = np.array([i.lower() in {x.lower() for x in p["industries"]} for i in vocab.INDUSTRIES])
        mask &= im[d.company_industry[d.company]]
    if p.get("companies"):
        comp = d.companies_matching_any(p["companies"])
        if mode == "current":
            mask &= comp[d.company]
        elif mode == "previous":
            mask &= comp[d.prev_company] & (d.prev_company != d.company)
        else:
            mask &= comp[d.company] | comp[d.prev_company]
    return mask


def _take_people(rt: Any, ws: Workspace, mask: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """Matches capped per company, then to `total` (default 100, capped by the plan row limit)."""
    d = rt.state.directory
    idx = np.flatnonzero(mask)
    per_company = int(p.get("per_company") or 10)
    total = min(int(p.get("total") or 100), PLAN_ROW_LIMITS[ws.plan])
    companies = d.company[idx]
    order = np.argsort(companies, kind="stable")
    sorted_c = companies[order]
    starts = np.searchsorted(sorted_c, sorted_c, side="left")
    rank = np.empty(idx.size, dtype=np.int64)
    rank[order] = np.arange(idx.size) - starts
    return idx[rank < per_company][:total]


@router.get("/people")
async def search_people(request: Request) -> Response:
    rt, _, ws = caller(request)
    p = _query_lists(request, PEOPLE_LISTS)
    errors: dict[str, list[str]] = {}
    _check_common(p, PEOPLE_LISTS, errors)
    mask = _people_mask(rt, ws, p, errors)
    idx = np.flatnonzero(mask)
    d = rt.state.directory
    return JSON({"data": {"total": int(idx.size), "preview": [d.person_preview(int(i)) for i in idx[:PREVIEW]]}})


@router.post("/people/import")
async def import_people(request: Request) -> Response:
    rt, _, ws = writer(request)
    p = await read_json(request)
    errors: dict[str, list[str]] = {}
    _check_common(p, PEOPLE_LISTS, errors)
    _require_list_name(p, errors)
    mask = _people_mask(rt, ws, p, errors)
    d = rt.state.directory
    with rt.state.lock:
        taken = _take_people(rt, ws, mask, p)
        unsendable = ~d.has_email[taken]
        suppressed = ~unsendable & np.isin(taken, np.fromiter(ws.blacklist, dtype=np.int64, count=len(ws.blacklist)))
        duplicate = ~unsendable & ~suppressed & ws.in_workspace[taken]
        keep = taken[~unsendable & ~suppressed & ~duplicate]
        lead_list = LeadList(
            id=new_uuid(rt.state.rng_ids),
            name=p["list_name"].strip(),
            kind="people",
            created_at=rt.state.now,
            rows=keep.astype(np.int32),
            lead_base=_base(rt),
        )
        ws.add_list(lead_list)
    return JSON(
        {
            "data": {
                "list_id": lead_list.id,
                "list_name": lead_list.name,
                "matched": int(taken.size),
                "imported": int(keep.size),
                "duplicate": int(duplicate.sum()),
                "suppressed": int(suppressed.sum()),
                "unsendable": int(unsendable.sum()),
            }
        },
        status_code=201,
    )


def _require_list_name(p: dict[str, Any], errors: dict[str, list[str]]) -> None:
    name = p.get("list_name")
    if not isinstance(name, str) or not name.strip():
        errors["list_name"] = ["The list_name field is required."]


def _base(rt: Any) -> int:
    return uuid.UUID(new_uuid(rt.state.rng_ids)).int & ~0xFFFFFFFF


def _company_mask(rt: Any, p: dict[str, Any], errors: dict[str, list[str]]) -> np.ndarray:
    d = rt.state.directory
    if p.get("sizes") and "sizes" not in errors:
        bad = [s for s in p["sizes"] if s not in vocab.SIZES]
        if bad:
            errors["sizes"] = [f"Unknown sizes: {', '.join(bad)}; use any of {', '.join(vocab.SIZES)}."]
    if errors:
        raise invalid(errors)
    mask = np.ones(d.companies, dtype=bool)
    if p.get("q"):
        mask &= d.companies_matching_text(p["q"].strip())
    if p.get("industries"):
        im = np.array([i.lower() in {x.lower() for x in p["industries"]} for i in vocab.INDUSTRIES])
        mask &= im[d.company_industry]
    if p.get("countries"):
        cm = np.array([c.lower() in {x.lower() for x in p["countries"]} for c in vocab.COUNTRIES])
        mask &= cm[d.company_country]
    if p.get("sizes"):
        sm = np.array([s in p["sizes"] for s in vocab.SIZES])
        mask &= sm[d.company_size]
    if p.get("job_title"):
        tm = np.append(title_mask_containing(p["job_title"]), False)  # index -1 = not hiring
        mask &= tm[d.company_hiring]
    return mask


@router.get("/companies")
async def search_companies(request: Request) -> Response:
    rt, _, _ = caller(request)
    p = _query_lists(request, COMPANY_LISTS)
    errors: dict[str, list[str]] = {}
    _check_common(p, COMPANY_LISTS, errors)
    idx = np.flatnonzero(_company_mask(rt, p, errors))
    d = rt.state.directory
    return JSON({"data": {"total": int(idx.size), "preview": [d.company_preview(int(i)) for i in idx[:PREVIEW]]}})


@router.post("/companies/import")
async def import_companies(request: Request) -> Response:
    rt, _, ws = writer(request)
    p = await read_json(request)
    errors: dict[str, list[str]] = {}
    _check_common(p, COMPANY_LISTS, errors)
    _require_list_name(p, errors)
    mask = _company_mask(rt, p, errors)
    d = rt.state.directory
    with rt.state.lock:
        total = min(int(p.get("total") or 100), PLAN_ROW_LIMITS[ws.plan])
        taken = np.flatnonzero(mask)[:total]
        failed = np.array([not d.company_domain[c] for c in taken], dtype=bool)
        duplicate = ~failed & np.array([int(c) in ws.company_in_workspace for c in taken], dtype=bool)
        keep = taken[~failed & ~duplicate]
        lead_list = LeadList(
            id=new_uuid(rt.state.rng_ids),
            name=p["list_name"].strip(),
            kind="companies",
            created_at=rt.state.now,
            rows=keep.astype(np.int32),
            lead_base=_base(rt),
        )
        ws.add_list(lead_list)
    return JSON(
        {
            "data": {
                "list_id": lead_list.id,
                "list_name": lead_list.name,
                "matched": int(taken.size),
                "imported": int(keep.size),
                "duplicate": int(duplicate.sum()),
                "failed": int(failed.sum()),
            }
        },
        status_code=201,
    )
