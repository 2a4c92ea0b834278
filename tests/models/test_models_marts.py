"""Every mart checked against values computed independently in pandas from the raw tables.

`check_marts(warehouse)` is reused by the sandbox-synced test (test_models_sandbox.py).
The pandas code below never reads the `reporting` schema except to compare.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from devtools.synthetic import make_raw_warehouse
from models.build import build

POSITIVE = {"interested", "meeting_booked", "meeting_request", "positive"}
#: reply types whose class is auto_reply or bounce (dbt_project.yml's reply_classes): not written by a person
MACHINE_TYPES = {"out_of_office", "auto_reply", "bounce", "bounced", "undeliverable"}
STATUSES = {"pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed"}


def _read(con: duckdb.DuckDBPyConnection, sql: str) -> pd.DataFrame:
    # three-part names: in `outreach.duckdb` the name `outreach.x` is ambiguous (catalog or schema)
    catalog = con.execute("select current_database()").fetchall()[0][0]
    sql = sql.replace("outreach.", f'"{catalog}".outreach.').replace("reporting.", f'"{catalog}".reporting.')
    return con.execute(sql).df()


def _pct(num: pd.Series, den: pd.Series) -> pd.Series:
    num = num.astype("float64")
    den = den.astype("float64")
    out = (100.0 * num / den.replace(0, np.nan)).round(2)
    return out


def _ratio(num: pd.Series, den: pd.Series, when_empty: float = np.nan) -> pd.Series:
    """A rate as the metric dictionary defines it: a fraction 0 to 1, rounded as the service rounds (Python's
    round of the percentage to 2 decimals, / 100); `when_empty` over 0."""
    out = [
        when_empty if not d or d != d else round(100.0 * float(n) / float(d), 2) / 100
        for n, d in zip(num, den, strict=True)
    ]
    return pd.Series(out, index=num.index, dtype="float64")


RATE_TOL = 1e-12


def _utc_date(series: pd.Series) -> pd.Series:
    return pd.to_datetime(series, utc=True).dt.tz_convert("UTC").dt.date


def _compare(actual: pd.DataFrame, expected: pd.DataFrame, keys: list[str], label: str, tol: float = 0.011) -> None:
    """Same keys, same values (numbers within tol) for every column of `expected`."""
    assert len(actual) == len(expected), f"{label}: {len(actual)} rows, expected {len(expected)}"
    merged = actual.merge(expected, on=keys, how="outer", suffixes=("", "__exp"), indicator=True)
    assert (merged["_merge"] == "both").all(), f"{label}: keys differ\n{merged[merged['_merge'] != 'both'][keys]}"
    for col in expected.columns:
        if col in keys:
            continue
        got, exp = merged[col], merged[f"{col}__exp"]
        if pd.api.types.is_numeric_dtype(exp) and not pd.api.types.is_bool_dtype(exp):
            g = pd.to_numeric(got, errors="coerce").astype("float64")
            e = pd.to_numeric(exp, errors="coerce").astype("float64")
            bad = ~((g.isna() & e.isna()) | ((g - e).abs() <= tol))
        else:
            g = got.astype("object").where(got.notna(), None)
            e = exp.astype("object").where(exp.notna(), None)
            bad = pd.Series([a != b for a, b in zip(g, e, strict=True)], index=merged.index)
        assert not bad.any(), f"{label}.{col} differs:\n{merged.loc[bad, keys + [col, f'{col}__exp']].head()}"


def raw_frames(con: duckdb.DuckDBPyConnection) -> dict[str, pd.DataFrame]:
    """The raw rows the marts should be built from, in pandas (current rows only)."""
    tables = {
        r[0]
        for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'outreach'"
        ).fetchall()
    }

    def cols(table: str) -> set[str]:
        return {
            r[0]
            for r in con.execute(
                "select column_name from information_schema.columns where table_schema='outreach' and table_name=?",
                [table],
            ).fetchall()
        }

    def not_deleted(table: str) -> str:
        return "where deleted_at is null" if "deleted_at" in cols(table) else ""

    f: dict[str, pd.DataFrame] = {}
    f["campaigns"] = _read(con, "select * from outreach.campaigns where _dlt_valid_to is null")
    f["campaign_versions"] = _read(con, "select id from outreach.campaigns")
    f["stats"] = _read(con, f"select * from outreach.campaign_stats {not_deleted('campaign_stats')}")
    f["recipients"] = _read(con, f"select * from outreach.campaign_recipients {not_deleted('campaign_recipients')}")
    f["replies"] = _read(con, f"select * from outreach.replies {not_deleted('replies')}")
    f["variants"] = _read(con, f"select * from outreach.campaign_variants {not_deleted('campaign_variants')}")
    f["daily"] = _read(con, "select * from outreach.campaign_daily_sends")
    f["mailboxes"] = _read(con, "select * from outreach.email_accounts")
    f["workspaces"] = _read(con, "select * from outreach.workspaces")
    assert "campaign_recipients" in tables
    f["recipients"]["email_l"] = f["recipients"]["email"].str.strip().str.lower()
    f["replies"]["email_l"] = f["replies"]["from"].str.strip().str.lower()
    f["replies"]["reply_type"] = f["replies"]["reply_type"].fillna("unclassified")
    f["replies"]["is_positive"] = f["replies"]["reply_type"].str.lower().isin(POSITIVE)
    for name in ("recipients", "replies", "variants", "daily", "stats"):
        df = f[name]
        f[name] = df[df["campaign_id"].isin(f["campaigns"]["id"])] if name != "replies" else df
    return f


def expected_campaign_performance(f: dict[str, pd.DataFrame]) -> pd.DataFrame:
    c = f["campaigns"].set_index("id")
    s = f["stats"].set_index("campaign_id")
    out = pd.DataFrame(index=c.index)
    has = out.index.isin(s.index)
    out["has_api_stats"] = has

    def pick(stat: str, running: str | None) -> pd.Series:
        api = s[stat].reindex(out.index)
        fallback = c[running] if running else pd.Series(0, index=out.index)
        return api.where(pd.Series(has, index=out.index), fallback).fillna(0)

    out["count_recipients"] = pick("totals__recipients", "stats__total_leads")
    out["count_sent"] = pick("totals__sent", "stats__sent")
    out["count_delivered"] = (
        s["totals__delivered"]
        .reindex(out.index)
        .where(pd.Series(has, index=out.index), c["stats__sent"].fillna(0) - c["stats__bounced"].fillna(0))
    )
    out["count_opened"] = pick("totals__opened", "stats__opened")
    out["count_clicked"] = pick("totals__clicked", "stats__clicked")
    out["count_replied"] = pick("totals__replied", "stats__replied")
    out["count_bounced"] = pick("totals__bounced", "stats__bounced")
    out["count_unsubscribed"] = pick("totals__unsubscribed", None)
    rep = f["replies"]
    out["count_replies"] = rep.groupby("campaign_id").size().reindex(out.index).fillna(0)
    r = f["recipients"]
    contacted_rows = r[r["current_step"].fillna(0) > 0].groupby("campaign_id").size().reindex(out.index).fillna(0)
    out["count_contacted"] = (out["count_recipients"] - s["totals__pending"].reindex(out.index).fillna(0)).where(
        pd.Series(has, index=out.index), contacted_rows
    )
    # human and positive repliers: the campaign's replied recipients whose replies include such a class
    replied = r[r["replied_at"].notna()][["campaign_id", "email_l"]].drop_duplicates()
    classes = replied.merge(rep[["campaign_id", "email_l", "reply_type", "is_positive"]], on=["campaign_id", "email_l"])
    human = classes[~classes["reply_type"].str.lower().isin(MACHINE_TYPES)]
    out["count_human_replied"] = human.groupby("campaign_id")["email_l"].nunique().reindex(out.index).fillna(0)
    out["count_positive_replies"] = (
        classes[classes["is_positive"]].groupby("campaign_id")["email_l"].nunique().reindex(out.index).fillna(0)
    )
    step = r["current_step"].fillna(0)
    out["count_reached_follow_up"] = r[step >= 2].groupby("campaign_id").size().reindex(out.index).fillna(0)
    out["max_step_reached"] = step.groupby(r["campaign_id"]).max().reindex(out.index).fillna(0)
    hours = pd.to_datetime(r["replied_at"], utc=True) - pd.to_datetime(r["last_sent_at"], utc=True)
    hours = hours.dt.total_seconds() / 3600.0
    out["median_hours_to_reply"] = hours[hours >= 0].groupby(r["campaign_id"]).median().reindex(out.index).round(2)
    out["workspace_id"] = c["workspace_id"]
    out["workspace_name"] = c["workspace_id"].map(f["workspaces"].set_index("id")["name"])
    out["campaign_status"] = c["status"]
    return out.rename_axis("campaign_id").reset_index()


def expected_campaign_rates(cp: pd.DataFrame) -> pd.DataFrame:
    """The rates of the metric dictionary from the expected counts (0 over 0 contacted, as the service)."""
    out = cp[["campaign_id"]].copy()
    contacted = cp["count_contacted"]
    for rate, count in (
        ("open_rate", "count_opened"),
        ("click_rate", "count_clicked"),
        ("reply_rate", "count_replied"),
        ("bounce_rate", "count_bounced"),
        ("unsubscribe_rate", "count_unsubscribed"),
        ("human_reply_rate", "count_human_replied"),
        ("positive_reply_rate", "count_positive_replies"),
    ):
        out[rate] = _ratio(cp[count], contacted, 0.0)
    out["progress_rate"] = _ratio(contacted, cp["count_recipients"], 0.0)
    out["delivery_rate"] = _ratio(cp["count_delivered"], cp["count_sent"])
    out["reply_rate_per_delivered_message"] = _ratio(cp["count_replied"], cp["count_delivered"])
    out["human_reply_rate_per_delivered_message"] = _ratio(cp["count_human_replied"], cp["count_delivered"])
    return out


def _wilson(x: int, n: int) -> tuple[float, float]:
    z = norm.ppf(0.975)
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _holm(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def expected_variants(f: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The A/B test per estimated recipient, from scipy's normal distribution and Holm written out here."""
    stats = f["stats"].set_index("campaign_id")
    rows = []
    for cid, group in f["variants"].groupby("campaign_id"):
        g = group.assign(sent=group["sent"].fillna(0).astype(int), replied=group["replied"].fillna(0).astype(int))
        recs = []
        for _, v in g.sort_values("index").iterrows():
            rec: dict[str, object] = {
                "campaign_id": cid,
                "variant_index": int(v["index"]),
                "count_sent": v["sent"],
                "count_replied": v["replied"],
                "estimated_recipients": np.nan,
                "reply_rate": np.nan,
                "reply_rate_ci_low": np.nan,
                "reply_rate_ci_high": np.nan,
                "p_value": np.nan,
                "adjusted_p_value": np.nan,
                "is_winner": False,
            }
            if cid in stats.index:
                st = stats.loc[cid]
                contacted = int(st["totals__recipients"]) - int(st["totals__pending"])
                if st["totals__sent"] > 0 and contacted > 0:
                    est = max(round(v["sent"] * contacted / st["totals__sent"]), int(v["replied"]))
                    rec["estimated_recipients"] = est
                    if est:
                        rec["reply_rate"] = v["replied"] / est
                        rec["reply_rate_ci_low"], rec["reply_rate_ci_high"] = _wilson(int(v["replied"]), est)
            recs.append(rec)
        estimates = [r["estimated_recipients"] for r in recs]
        if len(recs) > 1 and all(e == e and e for e in estimates):  # type: ignore[comparison-overlap]
            leader = max(recs, key=lambda r: (r["reply_rate"], r["estimated_recipients"], -r["variant_index"]))  # type: ignore[operator]
            others = [r for r in recs if r is not leader]
            raw = []
            for o in others:
                x1, n1 = int(leader["count_replied"]), int(leader["estimated_recipients"])  # type: ignore[call-overload]
                x2, n2 = int(o["count_replied"]), int(o["estimated_recipients"])  # type: ignore[call-overload]
                if 0 < x1 + x2 < n1 + n2:
                    pool = (x1 + x2) / (n1 + n2)
                    z = (x1 / n1 - x2 / n2) / np.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2))
                    o["p_value"] = 2 * norm.sf(abs(z))
                raw.append(1.0 if o["p_value"] != o["p_value"] else float(o["p_value"]))  # type: ignore[arg-type]
            adjusted = _holm(raw)
            for o, adj in zip(others, adjusted, strict=True):
                o["adjusted_p_value"] = adj if o["p_value"] == o["p_value"] else np.nan
            weakest = max(range(len(others)), key=lambda i: (raw[i], adjusted[i]))
            leader["p_value"] = others[weakest]["p_value"]
            leader["adjusted_p_value"] = others[weakest]["adjusted_p_value"]
            leader["is_winner"] = (
                min(estimates) >= 100
                and all(a < 0.05 for a in adjusted)
                and all(  # type: ignore[type-var]
                    o["p_value"] == o["p_value"] for o in others
                )
            )
        rows.extend(recs)
    return pd.DataFrame(rows)


def check_marts(warehouse: Path) -> None:
    """Compare every mart of `warehouse` with the pandas reference; raises AssertionError on a difference."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        f = raw_frames(con)
        mart = {
            name: _read(con, f"select * from reporting.{name}")
            for name in (
                "campaign_performance",
                "campaign_daily",
                "variant_performance",
                "mailbox_health",
                "reply_outcomes",
                "recipient_funnel",
                "workspace_overview",
                "lead_engagement",
                "followup_steps",
                "mailbox_daily",
            )
        }
    finally:
        con.close()
    r, rep = f["recipients"], f["replies"]
    current = set(f["campaigns"]["id"])

    # campaign_performance
    exp_cp = expected_campaign_performance(f)
    _compare(mart["campaign_performance"], exp_cp, ["campaign_id"], "campaign_performance")
    _compare(
        mart["campaign_performance"], expected_campaign_rates(exp_cp), ["campaign_id"], "campaign rates", tol=RATE_TOL
    )

    # variant_performance (the A/B test recomputed with scipy, independent of models/ab_test.py)
    exp_v = expected_variants(f)
    fractions = ["reply_rate", "reply_rate_ci_low", "reply_rate_ci_high", "p_value", "adjusted_p_value"]
    _compare(
        mart["variant_performance"],
        exp_v.drop(columns=fractions),
        ["campaign_id", "variant_index"],
        "variant_performance",
    )
    _compare(
        mart["variant_performance"],
        exp_v[["campaign_id", "variant_index", *fractions]],
        ["campaign_id", "variant_index"],
        "variant_performance rates and p",
        tol=RATE_TOL,
    )

    # recipient_funnel
    funnel = (
        r.groupby(["campaign_id", "status"])
        .agg(
            count_recipients=("id", "size"),
            count_opened=("opened_at", "count"),
            count_clicked=("clicked_at", "count"),
        )
        .reset_index()
        .rename(columns={"status": "recipient_status"})
    )
    funnel["pct_of_recipients"] = _pct(
        funnel["count_recipients"], funnel.groupby("campaign_id")["count_recipients"].transform("sum")
    )
    _compare(mart["recipient_funnel"], funnel, ["campaign_id", "recipient_status"], "recipient_funnel")

    # followup_steps
    steps = r.assign(step=r["current_step"].fillna(0), rep=(r["status"] == "replied"))
    steps = steps.groupby(["campaign_id", "step"]).agg(count_recipients=("id", "size"), count_replied=("rep", "sum"))
    steps = steps.reset_index().rename(columns={"step": "current_step"})
    steps["reply_rate"] = _ratio(steps["count_replied"], steps["count_recipients"]).where(steps["current_step"] > 0)
    _compare(mart["followup_steps"], steps, ["campaign_id", "current_step"], "followup_steps", tol=RATE_TOL)

    # reply_outcomes
    rc = rep[rep["campaign_id"].isin(current)]
    outcomes = (
        rc.groupby(["campaign_id", "reply_type"])
        .agg(
            count_replies=("id", "size"),
            count_unread=("is_read", lambda s: int((~s.fillna(False).astype(bool)).sum())),
            count_leads=("email_l", "nunique"),
        )
        .reset_index()
    )
    outcomes["pct_of_replies"] = _pct(
        outcomes["count_replies"], outcomes.groupby("campaign_id")["count_replies"].transform("sum")
    )
    _compare(mart["reply_outcomes"], outcomes, ["campaign_id", "reply_type"], "reply_outcomes")

    # campaign_daily
    parts = [
        f["daily"]
        .assign(d=pd.to_datetime(f["daily"]["date"]).dt.date)
        .groupby(["campaign_id", "d"])["sent"]
        .sum()
        .rename("count_sent")
    ]
    for col, name in (
        ("opened_at", "count_opened"),
        ("clicked_at", "count_clicked"),
        ("replied_at", "count_replied"),
        ("bounced_at", "count_bounced"),
    ):
        sub = r[r[col].notna()]
        parts.append(sub.assign(d=_utc_date(sub[col])).groupby(["campaign_id", "d"]).size().rename(name))
    parts.append(
        rc.assign(d=_utc_date(rc["received_at"])).groupby(["campaign_id", "d"]).size().rename("count_replies_received")
    )
    daily = pd.concat(parts, axis=1)
    observed = daily["count_sent"].notna()
    daily = daily.fillna(0).assign(is_send_observed=observed).reset_index().rename(columns={"d": "activity_date"})
    daily = daily.sort_values(["campaign_id", "activity_date"])
    daily["cumulative_sent"] = daily.groupby("campaign_id")["count_sent"].cumsum().where(daily["is_send_observed"])
    daily["count_sent"] = daily["count_sent"].where(daily["is_send_observed"])
    # the grain: a day with activity, or an observed day from the campaign's creation on
    created = daily["campaign_id"].map(_utc_date(f["campaigns"].set_index("id")["created_at"]))
    active = daily[["count_opened", "count_clicked", "count_replied", "count_bounced", "count_replies_received"]]
    keep = (daily["count_sent"].fillna(0) > 0) | (active.sum(axis=1) > 0)
    daily = daily[keep | (daily["is_send_observed"] & (daily["activity_date"] >= created))]
    got = mart["campaign_daily"].assign(activity_date=pd.to_datetime(mart["campaign_daily"]["activity_date"]).dt.date)
    _compare(got, daily, ["campaign_id", "activity_date"], "campaign_daily")

    # mailbox_health
    mb = f["mailboxes"].sort_values("_dlt_valid_from")
    cur = mb[mb["_dlt_valid_to"].isna()].set_index("id")
    first = mb.groupby("id").first()
    health = pd.DataFrame(index=cur.index)
    health["utilisation_pct"] = _pct(cur["sent_today"], cur["daily_send_limit"])
    health["reputation_change"] = (cur["reputation_score"] - first["reputation_score"].reindex(cur.index)).round(2)
    health["reputation_trend"] = np.select(
        [health["reputation_change"] > 0, health["reputation_change"] < 0], ["rising", "falling"], "flat"
    )
    health["count_versions"] = mb.groupby("id").size().reindex(cur.index)
    health["max_sent_today_observed"] = mb.groupby("id")["sent_today"].max().reindex(cur.index)
    health["count_replies"] = rep.groupby("email_account_id").size().reindex(cur.index).fillna(0)
    _compare(
        mart["mailbox_health"],
        health.rename_axis("email_account_id").reset_index(),
        ["email_account_id"],
        "mailbox_health",
    )

    # mailbox_daily: one row per day from the first version to the last load; last day = current values
    md = mart["mailbox_daily"]
    last_day = pd.to_datetime(mb["_dlt_valid_from"], utc=True).max().date()
    for mid, row in cur.iterrows():
        days = md[md["email_account_id"] == mid]
        first_day = pd.to_datetime(mb[mb["id"] == mid]["_dlt_valid_from"], utc=True).min().date()
        assert len(days) == (last_day - first_day).days + 1, f"mailbox_daily days for {mid}"
        latest = days.sort_values("activity_date").iloc[-1]
        assert latest["reputation_score"] == pytest.approx(row["reputation_score"])

    # workspace_overview
    cp = exp_cp.groupby("workspace_id").agg(
        count_campaigns=("campaign_id", "size"),
        count_sent=("count_sent", "sum"),
        count_delivered=("count_delivered", "sum"),
        count_contacted=("count_contacted", "sum"),
        count_replied=("count_replied", "sum"),
        count_human_replied=("count_human_replied", "sum"),
        count_bounced=("count_bounced", "sum"),
    )
    cp["count_active_campaigns"] = exp_cp[exp_cp["campaign_status"] == "active"].groupby("workspace_id").size()
    cp["count_mailboxes"] = cur.groupby("workspace_id").size()
    cp["count_replies"] = rep.groupby("workspace_id").size()
    cp = cp.reindex(f["workspaces"]["id"]).fillna(0)
    cp["reply_rate"] = _ratio(cp["count_replied"], cp["count_contacted"], 0.0)
    cp["human_reply_rate"] = _ratio(cp["count_human_replied"], cp["count_contacted"], 0.0)
    cp["bounce_rate"] = _ratio(cp["count_bounced"], cp["count_contacted"], 0.0)
    cp["reply_rate_per_delivered_message"] = _ratio(cp["count_replied"], cp["count_delivered"])
    _compare(
        mart["workspace_overview"],
        cp.rename_axis("workspace_id").reset_index(),
        ["workspace_id"],
        "workspace_overview",
        tol=RATE_TOL,
    )

    # lead_engagement
    rl = r[r["campaign_id"].isin(current)]
    lead = rl.groupby(["workspace_id", "email_l"]).agg(
        count_campaigns=("campaign_id", "nunique"),
        count_campaigns_opened=("opened_at", "count"),
        count_campaigns_replied=("status", lambda s: int((s == "replied").sum())),
        count_campaigns_bounced=("status", lambda s: int((s == "bounced").sum())),
        count_campaigns_other_status=("status", lambda s: int((~s.isin(STATUSES)).sum())),
    )
    names = rl.assign(**{c: rl[c].fillna("") for c in ("first_name", "last_name", "company")})
    named = names.sort_values(["first_name", "last_name", "company"]).groupby(["workspace_id", "email_l"]).first()
    lead["first_name"] = named["first_name"].replace("", None).reindex(lead.index)
    lead["company"] = named["company"].replace("", None).reindex(lead.index)
    lead["count_replies"] = rep.groupby(["workspace_id", "email_l"]).size().reindex(lead.index).fillna(0)
    lead["count_positive_replies"] = (
        rep[rep["is_positive"]].groupby(["workspace_id", "email_l"]).size().reindex(lead.index).fillna(0)
    )
    lead = lead.reset_index().rename(columns={"email_l": "lead_email"})
    _compare(mart["lead_engagement"], lead, ["workspace_id", "lead_email"], "lead_engagement")


@pytest.fixture(scope="module")
def synthetic_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # named like the default warehouse: its catalog `outreach` clashes with the schema `outreach`
    path = make_raw_warehouse(tmp_path_factory.mktemp("syn") / "outreach.duckdb", recipients=4000, seed=11)
    build(path)
    return path


def test_every_mart_matches_pandas_on_synthetic_warehouse(synthetic_build: Path) -> None:
    check_marts(synthetic_build)


def test_synthetic_data_has_a_significant_winner_and_a_fallback_campaign(synthetic_build: Path) -> None:
    """The comparison above covers both branches: a real winner, and a campaign without API stats."""
    con = duckdb.connect(str(synthetic_build), read_only=True)
    try:
        winners = con.execute("select count(*) from reporting.variant_performance where is_winner").fetchall()[0][0]
        not_sig = con.execute("select count(*) from reporting.variant_performance where p_value >= 0.05").fetchall()[0][
            0
        ]
        fallback = con.execute(
            "select count(*) from reporting.campaign_performance where not has_api_stats"
        ).fetchall()[0][0]
    finally:
        con.close()
    assert winners >= 1 and not_sig >= 1 and fallback >= 1
