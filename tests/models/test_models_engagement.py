"""The engagement marts (human reply rate, reply classes, send times) checked against values computed
independently in pandas from the raw tables.

Reply classes, human reply rate, lead_timeline, campaign_event_daily, campaign_weekly, launch_cohorts,
send_time_performance, company_rollup and workspace_credits_daily. `check_engagement_marts(warehouse)`
is reused by the sandbox tests (test_models_engagement_sandbox.py: events from real signed deliveries).
The pandas code reads only raw `outreach` tables; `reporting` is read only to compare.
"""

from __future__ import annotations

import zoneinfo
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from test_models_marts import RATE_TOL, _compare, _ratio, _read

from devtools.synthetic import make_raw_warehouse
from models.build import build

#: the documented default of the var reply_classes (models/dbt_project.yml), written out independently
DEFAULT_REPLY_CLASSES = {
    "interested": "positive", "meeting_booked": "positive", "meeting_request": "positive", "positive": "positive",
    "wrong_person": "neutral", "neutral": "neutral",
    "not_interested": "negative", "unsubscribe": "negative", "negative": "negative",
    "out_of_office": "auto_reply", "auto_reply": "auto_reply",
    "bounce": "bounce", "bounced": "bounce", "undeliverable": "bounce",
}  # fmt: skip
MACHINE = {"auto_reply", "bounce"}
LEAD_EVENTS = (
    "lead.opened",
    "lead.clicked",
    "lead.unsubscribed",
    "lead.bounced",
    "lead.replied",
)
FREE_MAIL = {
    "gmail.com",
    "outlook.com",
    "hotmail.com",
    "yahoo.com",
}  # a few of the var's defaults


def reply_class(values: pd.Series, classes: dict[str, str] | None = None) -> pd.Series:
    mapping = classes or DEFAULT_REPLY_CLASSES
    return values.map(
        lambda v: mapping.get(str(v).strip().lower(), "unclassified") if isinstance(v, str) else "unclassified"
    )


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    return {r[0] for r in con.execute(
        "select column_name from information_schema.columns where table_schema = 'outreach' and table_name = ?",
        [table]).fetchall()}  # fmt: skip


def _ts(series: pd.Series) -> pd.Series:
    return pd.to_datetime(series, utc=True)


def _day(series: pd.Series) -> pd.Series:
    return _ts(series).dt.date


def raw(con: duckdb.DuckDBPyConnection, classes: dict[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """Raw rows as the models should see them (rows the API stopped returning left out)."""
    f: dict[str, pd.DataFrame] = {}
    f["history"] = _read(con, "select * from outreach.campaigns")
    f["campaigns"] = f["history"][f["history"]["_dlt_valid_to"].isna()]
    f["stats"] = _read(con, "select * from outreach.campaign_stats where deleted_at is null")
    rec = _read(con, "select * from outreach.campaign_recipients where deleted_at is null")
    rec["email_l"] = rec["email"].str.strip().str.lower()
    rec["current_step"] = rec["current_step"].fillna(0)
    f["all_recipients"] = rec
    f["recipients"] = rec[rec["campaign_id"].isin(f["campaigns"]["id"])]
    rep = _read(con, "select * from outreach.replies where deleted_at is null")
    rep["email_l"] = rep["from"].str.strip().str.lower()
    rep["reply_class"] = reply_class(rep["reply_type"], classes)
    rep["is_positive"] = rep["reply_class"] == "positive"
    rep["is_human"] = ~rep["reply_class"].isin(MACHINE)
    f["replies"] = rep
    f["daily"] = _read(con, "select * from outreach.campaign_daily_sends")
    f["workspaces"] = _read(con, "select * from outreach.workspaces")
    # the account's versions: raw workspace_history (scd2), else (synced before it existed) raw workspaces
    has_history = bool(con.execute(
        "select count(*) from information_schema.tables where table_schema = 'outreach' "
        "and table_name = 'workspace_history'"
    ).fetchall()[0][0])  # fmt: skip
    if has_history:
        hist = _read(con, "select * from outreach.workspace_history")
        fallback = f["workspaces"][~f["workspaces"]["id"].isin(hist["id"])]
        f["workspace_versions"] = pd.concat([hist, fallback], ignore_index=True)
    else:
        f["workspace_versions"] = f["workspaces"]
    has_events = bool(con.execute(
        "select count(*) from information_schema.tables where table_schema = 'outreach' and table_name = 'events'"
    ).fetchall()[0][0])  # fmt: skip
    ev = _read(con, "select * from outreach.events") if has_events else pd.DataFrame(
        columns=["event_id", "event", "workspace_id", "campaign_id", "lead_id", "email", "reply_type", "created_at",
                 "received_at"])  # fmt: skip
    owner = f["history"].groupby("id")["workspace_id"].min()
    ev["workspace_id"] = ev["workspace_id"].where(ev["workspace_id"].notna(), ev["campaign_id"].map(owner))
    ev["email_l"] = ev["email"].str.strip().str.lower()
    f["events"] = ev
    f["workspace_columns"] = pd.DataFrame({"name": sorted(_columns(con, "workspaces"))})
    return f


def service_now(f: dict[str, pd.DataFrame]) -> pd.Timestamp:
    """The newest observed time: observed_at of the sync, else the newest service timestamp in the data."""
    r, ws = f["all_recipients"], f["workspaces"]
    candidates = [_ts(r[c]).max() for c in ("last_sent_at", "opened_at", "clicked_at", "replied_at", "bounced_at")]
    candidates += [
        _ts(f["replies"]["received_at"]).max(),
        _ts(f["events"]["created_at"]).max(),
    ]
    if "observed_at" in ws:
        current = ws[ws["_dlt_valid_to"].isna()] if "_dlt_valid_to" in ws else ws
        candidates.append(_ts(current["observed_at"]).max())
    return max(t for t in candidates if not pd.isna(t))


def contacted(f: dict[str, pd.DataFrame]) -> pd.Series:
    """Per current campaign: the API's recipients - pending, else recipient rows with current_step > 0."""
    c, s, r = f["campaigns"], f["stats"].set_index("campaign_id"), f["recipients"]
    rows = r[r["current_step"] > 0].groupby("campaign_id").size()
    out = {}
    for cid in c["id"]:
        out[cid] = (
            (s.at[cid, "totals__recipients"] - s.at[cid, "totals__pending"]) if cid in s.index else rows.get(cid, 0)
        )
    return pd.Series(out, dtype="float64")


def first_sent_at(f: dict[str, pd.DataFrame]) -> pd.Series:
    """The earliest send observed (never last_sent_at): the first day with sends (00:00 UTC), the first open,
    click, reply or bounce of a recipient, the first reply, the first webhook event, the first version seen
    active or completed."""
    d = f["daily"][f["daily"]["sent"].fillna(0) > 0]
    r = f["recipients"]
    candidates = [pd.to_datetime(d.groupby("campaign_id")["date"].min()).dt.tz_localize("UTC")]
    for column in ("opened_at", "clicked_at", "replied_at", "bounced_at"):
        candidates.append(_ts(r[column]).groupby(r["campaign_id"]).min())
    rep, ev, hist = f["replies"], f["events"], f["history"]
    candidates.append(_ts(rep["received_at"]).groupby(rep["campaign_id"]).min())
    candidates.append(_ts(ev["created_at"]).groupby(ev["campaign_id"]).min())
    sending = hist[hist["status"].isin(["active", "completed"])]
    candidates.append(_ts(sending["_dlt_valid_from"]).groupby(sending["id"]).min())
    both = pd.concat([c.rename(str(i)) for i, c in enumerate(candidates)], axis=1)
    return both.min(axis=1).reindex(f["campaigns"]["id"]).dropna()


def week_start(days: pd.Series) -> pd.Series:
    d = pd.to_datetime(days)
    return (d - pd.to_timedelta(d.dt.day_of_week, unit="D")).dt.date


def check_engagement_marts(warehouse: Path, classes: dict[str, str] | None = None) -> dict[str, int]:
    """The engagement marts against the pandas reference; returns rows per mart (AssertionError on a difference)."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        f = raw(con, classes)
        names = ("campaign_performance", "reply_outcomes", "lead_timeline", "campaign_event_daily", "campaign_weekly",
                 "launch_cohorts", "send_time_performance", "company_rollup", "workspace_credits_daily")  # fmt: skip
        mart = {name: _read(con, f"select * from reporting.{name}") for name in names}
    finally:
        con.close()
    now = service_now(f)
    current = set(f["campaigns"]["id"])
    rep, r, ev = f["replies"], f["recipients"], f["events"]
    rc = rep[rep["campaign_id"].isin(current)]

    # campaign_performance: contacted, human repliers, auto and unclassified replies, human_reply_rate
    cp = pd.DataFrame(index=pd.Index(sorted(current), name="campaign_id"))
    cp["count_contacted"] = contacted(f).reindex(cp.index)
    # human repliers: the campaign's replied recipients with a human reply from their address
    replied = r[r["replied_at"].notna()][["campaign_id", "email_l"]].drop_duplicates()
    human_repliers = replied.merge(rc[rc["is_human"]][["campaign_id", "email_l"]].drop_duplicates())
    cp["count_human_replied"] = human_repliers.groupby("campaign_id").size().reindex(cp.index).fillna(0)
    cp["auto_reply_count"] = (
        (rc["reply_class"] == "auto_reply").groupby(rc["campaign_id"]).sum().reindex(cp.index).fillna(0)
    )
    cp["unclassified_reply_count"] = (
        (rc["reply_class"] == "unclassified").groupby(rc["campaign_id"]).sum().reindex(cp.index).fillna(0)
    )
    cp["human_reply_rate"] = _ratio(cp["count_human_replied"], cp["count_contacted"], 0.0)
    _compare(
        mart["campaign_performance"],
        cp.reset_index(),
        ["campaign_id"],
        "campaign_performance (engagement columns)",
        tol=RATE_TOL,
    )

    # reply_outcomes: the class of each reply_type
    outcomes = rc.assign(reply_type=rc["reply_type"].str.strip().replace("", np.nan).fillna("unclassified"))
    outcomes = outcomes.groupby(["campaign_id", "reply_type"]).agg(reply_class=("reply_class", "first")).reset_index()
    outcomes["is_positive"] = outcomes["reply_class"] == "positive"
    _compare(
        mart["reply_outcomes"],
        outcomes,
        ["campaign_id", "reply_type"],
        "reply_outcomes.reply_class",
    )

    # lead_timeline: every lead.* event, numbered per lead in time order
    lead = ev[ev["event"].str.startswith("lead.", na=False)].copy()
    lead["event_at"] = _ts(lead["created_at"])
    lead = lead.sort_values(["event_at", "event_id"])
    lead["event_number"] = lead.groupby(["workspace_id", "email_l"], dropna=False).cumcount() + 1
    lead["reply_class"] = np.where(lead["event"] == "lead.replied", reply_class(lead["reply_type"], classes), None)
    timeline = lead.rename(columns={"email_l": "lead_email", "event": "event_key"})[
        [
            "event_id",
            "workspace_id",
            "lead_email",
            "lead_id",
            "campaign_id",
            "event_key",
            "event_number",
            "reply_class",
        ]
    ]
    _compare(mart["lead_timeline"], timeline, ["event_id"], "lead_timeline")

    # campaign_event_daily: events per kind and day beside the API's recipient timestamps and stats totals
    parts = []
    ce = ev[ev["campaign_id"].isin(current) & ev["event"].isin(LEAD_EVENTS) & ev["created_at"].notna()]
    for key, name in zip(LEAD_EVENTS, ("events_opened", "events_clicked", "events_unsubscribed", "events_bounced",
                                       "events_replied"), strict=True):  # fmt: skip
        sub = ce[ce["event"] == key]
        parts.append(sub.assign(d=_day(sub["created_at"])).groupby(["campaign_id", "d"]).size().rename(name))
    for col, name in (("opened_at", "api_opened"), ("clicked_at", "api_clicked"), ("bounced_at", "api_bounced"),
                      ("replied_at", "api_replied")):  # fmt: skip
        sub = r[r[col].notna()]
        parts.append(sub.assign(d=_day(sub[col])).groupby(["campaign_id", "d"]).size().rename(name))
    ced = pd.concat(parts, axis=1).fillna(0).reset_index().rename(columns={"d": "activity_date"})
    ced = ced.sort_values(["campaign_id", "activity_date"])
    for kind in ("opened", "clicked", "unsubscribed", "bounced"):
        ced[f"cumulative_events_{kind}"] = ced.groupby("campaign_id")[f"events_{kind}"].cumsum()
    totals = f["stats"].set_index("campaign_id")
    for kind in ("opened", "clicked", "unsubscribed", "bounced"):
        ced[f"api_total_{kind}"] = ced["campaign_id"].map(totals[f"totals__{kind}"])
    got = mart["campaign_event_daily"].assign(activity_date=_day(mart["campaign_event_daily"]["activity_date"]))
    _compare(got, ced, ["campaign_id", "activity_date"], "campaign_event_daily")

    # campaign_weekly
    d = f["daily"][f["daily"]["campaign_id"].isin(current)]
    dw = d.assign(w=week_start(d["date"]))
    weekly_parts = [
        dw.groupby(["campaign_id", "w"])["sent"].sum().rename("count_sent"),
        dw.groupby(["campaign_id", "w"])["date"].nunique().rename("count_observed_days"),
    ]
    rw = rc[rc["received_at"].notna()].assign(w=lambda x: week_start(_day(x["received_at"])))
    weekly_parts += [
        rw.groupby(["campaign_id", "w"]).size().rename("count_replies"),
        rw[rw["is_human"]].groupby(["campaign_id", "w"]).size().rename("count_human_replies"),
        rw[rw["is_positive"]].groupby(["campaign_id", "w"]).size().rename("count_positive_replies"),
        rw[rw["reply_class"] == "auto_reply"].groupby(["campaign_id", "w"]).size().rename("count_auto_replies"),
    ]
    b = r[r["bounced_at"].notna()]
    weekly_parts.append(
        b.assign(w=week_start(_day(b["bounced_at"]))).groupby(["campaign_id", "w"]).size().rename("count_bounced")
    )
    weekly = pd.concat(weekly_parts, axis=1).fillna(0).reset_index().rename(columns={"w": "week_start"})
    # the grain: a week with any send, reply or bounce; sends unknown (null) on a week no day of which was observed
    weekly = weekly[(weekly["count_sent"] > 0) | (weekly["count_replies"] > 0) | (weekly["count_bounced"] > 0)]
    weekly["count_sent"] = weekly["count_sent"].where(weekly["count_observed_days"] > 0)
    iso = pd.to_datetime(weekly["week_start"]).dt.isocalendar()
    weekly["iso_year"], weekly["iso_week"] = (
        iso["year"].astype("int64"),
        iso["week"].astype("int64"),
    )
    got = mart["campaign_weekly"].assign(week_start=_day(mart["campaign_weekly"]["week_start"]))
    _compare(got, weekly, ["campaign_id", "week_start"], "campaign_weekly")

    # launch_cohorts
    launch = first_sent_at(f)
    contact = contacted(f)
    positive_rc = rc.merge(replied, on=["campaign_id", "email_l"])  # among the replied recipients
    first_positive = positive_rc[positive_rc["is_positive"] & positive_rc["received_at"].notna()].groupby(
        ["campaign_id", "email_l"])[
        "received_at"].min().map(lambda t: pd.Timestamp(t).tz_convert("UTC") if pd.Timestamp(t).tzinfo else
                                 pd.Timestamp(t).tz_localize("UTC")).reset_index()  # fmt: skip
    rows = []
    for week, ids in launch.groupby(week_start(launch.dt.date)).groups.items():
        row: dict[str, object] = {"launch_week": week, "count_campaigns": len(ids),
                                  "count_contacted": contact.reindex(ids).sum()}  # fmt: skip
        for days in (7, 14, 28):
            mature = [cid for cid in ids if launch[cid] + pd.Timedelta(days=days) <= now]
            den = contact.reindex(mature).sum()
            replied = sum(int((_ts(r.loc[r["campaign_id"] == cid, "replied_at"])
                               <= launch[cid] + pd.Timedelta(days=days)).sum()) for cid in mature)  # fmt: skip
            positive = sum(int((_ts(first_positive.loc[first_positive["campaign_id"] == cid, "received_at"])
                                <= launch[cid] + pd.Timedelta(days=days)).sum()) for cid in mature)  # fmt: skip
            row[f"count_campaigns_{days}d"] = len(mature)
            row[f"reply_rate_{days}d"] = round(100.0 * replied / den, 2) / 100 if den else np.nan
            row[f"positive_reply_rate_{days}d"] = round(100.0 * positive / den, 2) / 100 if den else np.nan
        rows.append(row)
    cohorts = pd.DataFrame(rows)
    got = mart["launch_cohorts"].assign(launch_week=_day(mart["launch_cohorts"]["launch_week"]))
    _compare(got, cohorts, ["launch_week"], "launch_cohorts", tol=RATE_TOL)
    assert (_ts(mart["launch_cohorts"]["as_of_at"]) == now).all(), "launch_cohorts.as_of_at is the service's now"

    # send_time_performance: each contacted recipient at the local weekday and hour of its last send (a zone
    # missing or unknown: UTC)
    known = zoneinfo.available_timezones()
    zones = f["campaigns"].set_index("id")["send_window__timezone"].map(lambda z: z if z in known else "UTC")
    sent = r[(r["current_step"] > 0) & r["last_sent_at"].notna()].copy()
    human = set(zip(rc.loc[rc["is_human"], "campaign_id"], rc.loc[rc["is_human"], "email_l"], strict=True))
    local = [ts.tz_convert(zones[cid]) for ts, cid in zip(_ts(sent["last_sent_at"]), sent["campaign_id"], strict=True)]
    sent["weekday"] = [t.isoweekday() for t in local]
    sent["hour"] = [t.hour for t in local]
    sent["opened"] = sent["opened_at"].notna()
    sent["replied"] = sent["replied_at"].notna()
    sent["human"] = [(c, e) in human for c, e in zip(sent["campaign_id"], sent["email_l"], strict=True)]
    stp = (
        sent.groupby(["workspace_id", "weekday", "hour"])
        .agg(
            sends=("id", "size"),
            opens=("opened", "sum"),
            replies=("replied", "sum"),
            human_replies=("human", "sum"),
        )
        .reset_index()
    )
    stp["human_reply_rate"] = _ratio(stp["human_replies"], stp["sends"])
    stp["reply_rate"] = _ratio(stp["replies"], stp["sends"])
    stp["open_rate"] = _ratio(stp["opens"], stp["sends"])
    _compare(
        mart["send_time_performance"],
        stp,
        ["workspace_id", "weekday", "hour"],
        "send_time_performance",
        tol=RATE_TOL,
    )

    # company_rollup: domains of recipients and repliers; campaigns in the 30 days up to the service's now
    rr = r.assign(company_domain=r["email_l"].str.split("@").str[1].replace("", np.nan).fillna("(none)"))
    reached = rr[rr["current_step"] > 0]
    window = reached[
        (_ts(reached["last_sent_at"]) > now - pd.Timedelta(days=30)) & (_ts(reached["last_sent_at"]) <= now)
    ]
    keys = ["workspace_id", "company_domain"]
    company = pd.concat([
        rr.groupby(keys)["email_l"].nunique().rename("count_contacts"),
        reached.groupby(keys)["email_l"].nunique().rename("count_contacts_reached"),
        reached.groupby(keys)["campaign_id"].nunique().rename("count_campaigns_reached"),
        window.groupby(keys)["campaign_id"].nunique().rename("count_campaigns_last_30d"),
    ], axis=1)  # fmt: skip
    ra = rep.assign(company_domain=rep["email_l"].str.split("@").str[1].replace("", np.nan).fillna("(none)"))
    company = company.join(pd.concat([
        ra.groupby(keys).size().rename("count_replies"),
        ra[ra["is_positive"]].groupby(keys).size().rename("count_positive_replies"),
        ra.groupby(keys)["email_l"].nunique().rename("count_contacts_replied"),
    ], axis=1), how="outer").fillna(0).reset_index()  # fmt: skip
    # a free-mail domain is unrelated people, never an over-contacted company
    company["is_multi_campaign_30d"] = (company["count_campaigns_last_30d"] > 1) & ~company["company_domain"].isin(
        FREE_MAIL
    )
    _compare(mart["company_rollup"], company, keys, "company_rollup")
    free = mart["company_rollup"][mart["company_rollup"]["company_domain"].isin(FREE_MAIL)]
    assert free["is_free_mail_domain"].all()

    # workspace_credits_daily
    credits = mart["workspace_credits_daily"]
    _compare(
        credits.assign(activity_date=_day(credits["activity_date"])),
        expected_credits(f, now),
        ["workspace_id", "activity_date"],
        "workspace_credits_daily",
    )
    return {name: len(frame) for name, frame in mart.items()}


def expected_credits(f: dict[str, pd.DataFrame], now: pd.Timestamp) -> pd.DataFrame:
    ws = f["workspace_versions"].copy()
    valid_from = ws["_dlt_valid_from"] if "_dlt_valid_from" in ws else pd.Series(pd.NaT, index=ws.index)
    observed = ws["observed_at"] if "observed_at" in ws else pd.Series(pd.NaT, index=ws.index)
    # a series ends at the last sync's observation: the current `workspaces` row's observed_at
    rows = f["workspaces"]
    current_rows = rows[rows["_dlt_valid_to"].isna()] if "_dlt_valid_to" in rows else rows
    last_seen = (
        current_rows.set_index("id")["observed_at"] if "observed_at" in current_rows else pd.Series(dtype=object)
    )
    ws["from_at"] = _ts(valid_from.where(valid_from.notna(), observed)).fillna(now)
    ws["valid_to"] = _ts(ws["_dlt_valid_to"]) if "_dlt_valid_to" in ws else pd.NaT
    ws["current"] = ws["valid_to"].isna()
    sends = f["daily"].assign(d=pd.to_datetime(f["daily"]["date"]).dt.date).groupby(["workspace_id", "d"])["sent"].sum()
    pos = f["replies"][f["replies"]["is_positive"] & f["replies"]["received_at"].notna()]
    positives = pos.assign(d=_day(pos["received_at"])).groupby(["workspace_id", "d"]).size()
    frames = []
    for wid, versions in ws.sort_values("from_at").groupby("id"):
        versions = versions.assign(day=versions["from_at"].dt.date, prev=versions["credits__balance"].shift())
        first = versions["day"].min()
        if versions["current"].any():
            seen = _ts(pd.Series([last_seen.get(wid)])).iloc[0]
            last = max(first, (now if pd.isna(seen) else seen).date())
        else:
            last = versions["valid_to"].max().date()
        days = pd.date_range(first, last, freq="D").date
        out = pd.DataFrame({"workspace_id": wid, "activity_date": days})
        drop = (versions["prev"] - versions["credits__balance"]).clip(lower=0)
        rise = (versions["credits__balance"] - versions["prev"]).clip(lower=0)
        per_day = pd.DataFrame({"day": versions["day"], "used": drop.fillna(0), "added": rise.fillna(0),
                                "balance": versions["credits__balance"]})  # fmt: skip
        by_day = per_day.groupby("day").agg(used=("used", "sum"), added=("added", "sum"), n=("used", "size"),
                                            balance=("balance", "last"))  # fmt: skip
        out["credits_balance"] = by_day["balance"].reindex(days).ffill().to_numpy()
        known = out["activity_date"] > first
        out["credits_used"] = by_day["used"].reindex(days).fillna(0).to_numpy()
        out["credits_added"] = by_day["added"].reindex(days).fillna(0).to_numpy()
        out.loc[~known, ["credits_used", "credits_added"]] = np.nan
        out["count_versions"] = by_day["n"].reindex(days).fillna(0).to_numpy()
        out["count_sent"] = [sends.get((wid, d), 0) for d in days]
        out["count_positive_replies"] = [positives.get((wid, d), 0) for d in days]
        out["credits_per_positive_reply"] = (
            out["credits_used"] / out["count_positive_replies"].replace(0, np.nan)
        ).round(2)
        out["cumulative_credits_used"] = out["credits_used"].fillna(0).cumsum().where(known.cumsum() > 0)
        out["cumulative_positive_replies"] = (
            out["count_positive_replies"].where(known, 0).cumsum().where(known.cumsum() > 0)
        )
        out["cumulative_credits_per_positive_reply"] = (
            out["cumulative_credits_used"] / out["cumulative_positive_replies"].replace(0, np.nan)
        ).round(2)
        frames.append(out)
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def synthetic_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = make_raw_warehouse(tmp_path_factory.mktemp("eng") / "outreach.duckdb", recipients=4000, seed=11,
                              workspace_history=True)  # fmt: skip
    con = duckdb.connect(str(path))
    try:  # a few addresses at free mail domains, and replies of an unknown and of a mixed-case type
        con.execute("update outreach.outreach.campaign_recipients set email = 'someone' || id[1:4] || '@gmail.com' "
                    "where hash(id) % 50 = 0")  # fmt: skip
        con.execute("update outreach.outreach.replies set reply_type = 'Out_Of_Office ' where hash(id) % 9 = 1")
        con.execute("update outreach.outreach.replies set reply_type = 'vacation_responder' where hash(id) % 9 = 2")
        con.execute("update outreach.outreach.campaigns set send_window__timezone = 'Mars/Olympus' "
                    "where id = (select min(campaign_id) from outreach.outreach.campaign_stats)")  # fmt: skip
    finally:
        con.close()
    report = build(path)
    assert report.passed
    return path


def test_engagement_marts_match_pandas_on_synthetic_history(
    synthetic_history: Path,
) -> None:
    rows = check_engagement_marts(synthetic_history)
    assert all(rows.values()), rows
    con = duckdb.connect(str(synthetic_history), read_only=True)
    try:
        unclassified = con.execute(
            "select sum(unclassified_reply_count) from reporting.campaign_performance"
        ).fetchall()
        mature = con.execute(
            "select count(*) from reporting.launch_cohorts where reply_rate_28d is not null"
        ).fetchall()
        young = con.execute("select count(*) from reporting.launch_cohorts where reply_rate_28d is null").fetchall()
        used = con.execute("select count(*) from reporting.workspace_credits_daily where credits_per_positive_reply > 0"
                           ).fetchall()  # fmt: skip
    finally:
        con.close()
    # both branches of each rule are exercised: unknown types, mature and young cohorts, credits per reply
    assert unclassified[0][0] > 0 and mature[0][0] > 0 and young[0][0] > 0 and used[0][0] > 0


def test_unknown_reply_type_warns_naming_it_and_counts_as_unclassified(
    synthetic_history: Path,
) -> None:
    from models.build import build as rebuild

    report = rebuild(synthetic_history, publish=False)
    warned = [t for t in report.tests if t.status == "warn" and t.name.startswith("known_reply_type_stg_replies")]
    assert len(warned) == 1, [t.name for t in report.tests if t.status == "warn"]
    assert "value_field=vacation_responder" in warned[0].problem_line()
    assert "Out_Of_Office" not in warned[0].sample, "a known type in other case and blanks is not unknown"
    assert f"warning: {warned[0].problem_line()}" in report.summary()
    zones = [t for t in report.tests if t.status == "warn" and t.name.startswith("known_timezone")]
    assert len(zones) == 1 and "value_field=Mars/Olympus n_records=" in zones[0].sample


def test_a_reply_class_outside_the_five_fails_naming_it(
    synthetic_history: Path,
) -> None:
    from models.errors import ModelBuildError

    with pytest.raises(
        ModelBuildError,
        match="extra_reply_classes: 'vacation_responder' maps to 'great', which is not one of positive",
    ):
        build(
            synthetic_history,
            publish=False,
            dbt_vars={"extra_reply_classes": {"vacation_responder": "great"}},
        )
