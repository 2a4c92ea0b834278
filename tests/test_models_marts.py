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
    out["count_positive_replies"] = (
        rep[rep["is_positive"]].groupby("campaign_id")["email_l"].nunique().reindex(out.index).fillna(0)
    )
    out["delivery_rate"] = _pct(out["count_delivered"], out["count_sent"])
    out["open_rate"] = _pct(out["count_opened"], out["count_delivered"])
    out["click_rate"] = _pct(out["count_clicked"], out["count_delivered"])
    out["reply_rate"] = _pct(out["count_replied"], out["count_delivered"])
    out["reply_rate_of_delivered"] = out["reply_rate"]
    out["positive_reply_rate"] = _pct(out["count_positive_replies"], out["count_delivered"])
    out["bounce_rate"] = _pct(out["count_bounced"], out["count_sent"])
    out["unsubscribe_rate"] = _pct(out["count_unsubscribed"], out["count_delivered"])
    r = f["recipients"]
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


def expected_variants(f: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    for cid, group in f["variants"].groupby("campaign_id"):
        g = group.assign(sent=group["sent"].fillna(0), replied=group["replied"].fillna(0))
        for _, v in g.iterrows():
            others = g[g["index"] != v["index"]]
            rate = round(100 * v["replied"] / v["sent"], 2) if v["sent"] else np.nan
            rec: dict[str, object] = {
                "campaign_id": cid,
                "variant_index": v["index"],
                "count_sent": v["sent"],
                "count_replied": v["replied"],
                "reply_rate": rate,
                "reply_rate_of_sent": rate,
            }
            z = p = np.nan
            if len(others):
                share = (others["replied"] / others["sent"].replace(0, np.nan)).fillna(-1)
                best = (
                    others.assign(share=share)
                    .sort_values(["share", "sent", "index"], ascending=[False, False, True])
                    .iloc[0]
                )
                rec["compared_variant_index"] = best["index"]
                n1, x1, n2, x2 = v["sent"], v["replied"], best["sent"], best["replied"]
                if n1 > 0 and n2 > 0 and 0 < x1 + x2 < n1 + n2:
                    pool = (x1 + x2) / (n1 + n2)
                    z = (x1 / n1 - x2 / n2) / np.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2))
                    p = 2 * norm.sf(abs(z))
            else:
                rec["compared_variant_index"] = np.nan
            rec["z_score"] = z
            rec["p_value"] = p
            rec["is_winner"] = bool(z > 0 and p < 0.05) if not np.isnan(z) else False
            rows.append(rec)
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

    # variant_performance (p-values from scipy, not the SQL erf approximation)
    exp_v = expected_variants(f)
    _compare(
        mart["variant_performance"],
        exp_v.drop(columns=["z_score", "p_value"]),
        ["campaign_id", "variant_index"],
        "variant_performance",
    )
    _compare(
        mart["variant_performance"],
        exp_v[["campaign_id", "variant_index", "z_score", "p_value"]],
        ["campaign_id", "variant_index"],
        "variant_performance z/p",
        tol=1e-4,
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
    steps["reply_rate"] = _pct(steps["count_replied"], steps["count_recipients"])
    steps["reply_rate_of_recipients"] = steps["reply_rate"]
    _compare(mart["followup_steps"], steps, ["campaign_id", "current_step"], "followup_steps")

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
    daily = pd.concat(parts, axis=1).fillna(0).reset_index().rename(columns={"d": "activity_date"})
    daily = daily.sort_values(["campaign_id", "activity_date"])
    daily["cumulative_sent"] = daily.groupby("campaign_id")["count_sent"].cumsum()
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
        count_replied=("count_replied", "sum"),
        count_bounced=("count_bounced", "sum"),
    )
    cp["count_active_campaigns"] = exp_cp[exp_cp["campaign_status"] == "active"].groupby("workspace_id").size()
    cp["count_mailboxes"] = cur.groupby("workspace_id").size()
    cp["count_replies"] = rep.groupby("workspace_id").size()
    cp = cp.reindex(f["workspaces"]["id"]).fillna(0)
    cp["reply_rate"] = _pct(cp["count_replied"], cp["count_delivered"])
    cp["reply_rate_of_delivered"] = cp["reply_rate"]
    cp["bounce_rate"] = _pct(cp["count_bounced"], cp["count_sent"])
    _compare(
        mart["workspace_overview"], cp.rename_axis("workspace_id").reset_index(), ["workspace_id"], "workspace_overview"
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
