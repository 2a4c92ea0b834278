"""The sections of bench/RESULTS.md: one function per benchmark's records, each returning its lines."""

from __future__ import annotations

from typing import Any


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def ratio_x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def by_n(values: dict[Any, Any], n: Any) -> Any:
    """A per-N figure of a summary: its keys are ints as printed, strings once read back from JSON."""
    return values.get(n, values.get(str(n)))


def scale_out_section(rec: dict[str, Any], command: str = "python -m bench --scenario scale_out") -> list[str]:
    """bench/scale_out.py: one row per N and sync, then the summary's ratios and the projection or targets."""
    rows = [r for r in rec["result"] if not r.get("summary")]
    summary: dict[str, Any] = next((r for r in rec["result"] if r.get("summary")), {})
    ns = ", ".join(str(n) for n in sorted({r["n"] for r in rows}))
    out = [
        "",
        f"## Scale-out: `outreach sync` over N = {ns} tiny workspaces, DuckDB, one process ({rec.get('date')})",
        "",
        f"`{command}`. Wall time of the CLI process (start included); requests counted by the sandbox; peak RSS = "
        "VmHWM; CPU s = user + system seconds of the CLI process; load = the machine's 1-minute load average "
        "before and after the sync (2 cores, shared with the other engineers' jobs).",
        "",
        "| engine | N | sync | wall s | s per workspace | CPU s | requests | per workspace | peak MB | load "
        "| warehouse ok | file MB | tables |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        load = r.get("load_avg_1m")
        warehouse = r.get("warehouse") or {}
        out.append(
            f"| {r.get('side', 'ours')} | {r['n']} | {r['mode']} | {r['wall_s']} | {r['s_per_workspace']} "
            f"| {fmt(r.get('cpu_s'), 2)} | {r['requests']} "
            f"| {r['requests_per_workspace']} | {fmt(r.get('peak_rss_mb'), 0)} "
            f"| {'-' if not load else f'{load[0]:.1f} / {load[1]:.1f}'} "
            f"| {fmt(warehouse.get('ok')) if not r.get('exit') else 'sync failed'} "
            f"| {fmt(warehouse.get('file_mb'))} | {fmt(warehouse.get('tables'))} |"
        )
    if summary.get("targets"):
        t, base = summary["targets"], summary.get("base_n")
        out += [
            "",
            f"N={summary.get('top_n')} measured: idle quick sync {summary.get('idle_quick_s_at_top')} s, "
            f"{by_n(summary['idle_s_per_workspace'], summary['top_n'])} s per workspace (target at most "
            f"{t['idle_s_per_workspace_max']}: {'met' if t['idle_met'] else 'MISSED'}), "
            f"{ratio_x(summary.get('idle_s_per_workspace_top_vs_base'))} the time per workspace at N={base}; "
            f"peak RSS (full or quick) {ratio_x(summary.get('peak_rss_top_vs_base'))} that at N={base} "
            f"(target at most {t['peak_rss_ratio_max']}x: {'met' if t['peak_rss_met'] else 'MISSED'}). "
            f"CPU seconds of the CLI per workspace, idle quick: "
            + ", ".join(f"N={n} {v}" for n, v in (summary.get("idle_cpu_s_per_workspace") or {}).items())
            + ".",
        ]
    elif summary and summary.get("projected_idle_quick_s_at_1000") is None:  # an N failed: no ratio to give
        failed = sorted({r["n"] for r in rows if r.get("exit")})
        out += ["", f"No summary ratios: the sync failed at N = {', '.join(map(str, failed)) or '-'} (see below)."]
    elif summary:
        fit = summary.get("idle_fit") or {}
        out += [
            "",
            f"Idle quick sync, time per workspace at N={summary.get('top_n')} vs N={summary.get('base_n')}: "
            f"{ratio_x(summary.get('idle_s_per_workspace_top_vs_base'))}; peak RSS (full or quick) "
            f"{ratio_x(summary.get('peak_rss_top_vs_base'))}. Fit of the idle quick sync: {fit.get('fixed_s')} s + "
            f"{fit.get('per_workspace_s')} s x N, projecting N=1,000 (measured in its own section) at about "
            f"{summary.get('projected_idle_quick_s_at_1000')} s "
            f"on this machine, in one process (a 15-minute schedule holds it: "
            f"{fmt(summary.get('projected_fits_15_min_schedule'))}).",
        ]
        base = summary.get("baseline")
        if base:
            idle = base.get("idle_wall_ours_vs_baseline") or {}
            full = base.get("full_wall_ours_vs_baseline") or {}
            out += [
                "",
                "Against the baseline (the engine before batching: a dlt pipeline and load per workspace, a thread "
                "per key), same run, same sandbox: wall time ours/baseline, idle quick "
                + ", ".join(f"N={n} {ratio_x(v)}" for n, v in sorted(idle.items(), key=lambda kv: int(kv[0])))
                + "; full "
                + ", ".join(f"N={n} {ratio_x(v)}" for n, v in sorted(full.items(), key=lambda kv: int(kv[0])))
                + ".",
            ]
    return out


def soak_section(rec: dict[str, Any]) -> list[str]:
    """bench/soak.py: the targets with their figures, then one row per round."""
    lines = rec["result"] if isinstance(rec.get("result"), list) else []
    rounds = [r for r in lines if "round" in r]
    s: dict[str, Any] = next((r for r in lines if r.get("summary")), {})
    targets = s.get("targets") or {}
    mem = {k: s.get(k) or {} for k in ("sync_rss", "models_rss", "reader_rss")}
    out = [
        "",
        f"## Soak: quick syncs under faults, a model build after each, a BI reader throughout ({rec.get('date')})",
        "",
        f"`bench/soak.py`: {s.get('rounds')} rounds, scale {s.get('scale')}, {s.get('workspaces')} workspaces, clock "
        f"+{s.get('advance_s')} s and {fmt(100 * float(s.get('fault_rate') or 0), 0)}% of API calls faulted per round "
        f"(errors, truncated bodies, time-outs), then the warehouse compared with the API, then `outreach models`; "
        f"a BI reader queried the BI file every {s.get('reader_interval_s')} s throughout. Wall {s.get('wall_s')} s; "
        f"{'every target met' if s.get('ok') else 'TARGETS MISSED'}.",
        "",
        "| target | figure | met |",
        "|---|---|---|",
        f"| reader lock errors 0 | {s.get('reader_lock_errors')} lock, {s.get('reader_errors')} in all, over "
        f"{s.get('reader_queries')} queries and {s.get('reader_opens')} opens "
        f"| {fmt(targets.get('reader_errors_0'))} |",
        f"| reader saw every publish | {s.get('reader_publishes_seen')} files | "
        f"{fmt(targets.get('reader_saw_every_publish'))} |",
        f"| duplicates 0 | {s.get('duplicates')} | {fmt(targets.get('duplicates_0'))} |",
        f"| truth failures 0 | {s.get('truth_failures')} ({s.get('truth_tolerated')} quick blind-spot rows tolerated) "
        f"| {fmt(targets.get('truth_failures_0'))} |",
        f"| syncs passed | {len(rounds) - int(s.get('sync_failures') or 0)}/{len(rounds)} ({s.get('faulted')} of "
        f"{s.get('requests')} requests faulted, {s.get('retries')} retries) | {fmt(targets.get('syncs_ok'))} |",
        f"| builds passed | {len(rounds) - int(s.get('model_build_failures') or 0)}/{len(rounds)} | "
        f"{fmt(targets.get('builds_ok'))} |",
    ]
    for key, what in (("sync_rss", "sync"), ("models_rss", "models"), ("reader_rss", "reader (RSS now)")):
        m = mem[key]
        out.append(
            f"| memory flat: {what} | median peak MB, first {m.get('window')} rounds {m.get('first_median_mb')}, last "
            f"{m.get('window')} {m.get('last_median_mb')}: {ratio_x(m.get('ratio'))} "
            f"(max {s.get('memory_ratio_max')}x) | "
            + (fmt(targets.get("memory_flat")) if key != "reader_rss" else "not a target")
            + " |"
        )
    out += [
        "",
        "| round | sync s | requests | faulted | retries | truth | dup | models s | tests | reader errors "
        "| sync MB | models MB | reader MB |",
        "|" + "---|" * 13,
    ]
    for r in rounds:
        out.append(
            f"| {r['round']} | {r['sync_wall_s']} | {r['requests']} | {r['faulted']} | {r['retries']} "
            f"| {fmt(r['truth_ok'])} | {r['duplicates']} | {r['models_wall_s']} | {r.get('models_tests') or '-'} "
            f"| {r['reader']['errors']} | {fmt(r.get('sync_peak_rss_mb'), 0)} "
            f"| {fmt(r.get('models_peak_rss_mb'), 0)} | {fmt(r.get('reader_rss_mb'), 0)} |"
        )
    return out


#: the marts whose own times the incremental section shows: the incremental ones, the one that reads
#: lead_engagement, and the largest of those that read every recipient in every build
INCREMENTAL_MARTS_SHOWN = ("lead_engagement", "lead_timeline", "company_rollup", "campaign_performance")


def incremental_section(rec: dict[str, Any]) -> list[str]:
    """bench/models_incremental.py: the full build and the incremental one after a 1% change, per case."""
    out = [
        "",
        f"## Models: full build vs incremental build after a quick sync changed 1% of rows ({rec['date']})",
        "",
        "`python -m bench.models_incremental`: synthetic warehouse (devtools/synthetic.py); before each build a",
        "simulated quick sync re-writes 1% of recipients and replies (new `synced_at` and load id) and 1% of",
        "events; the full build is `outreach models --full-refresh`, the incremental one `outreach models`, each in",
        "its own process (wall time with start-up; peak RSS is VmHWM). The machine is shared with other",
        "engineers' jobs: the 1-minute load average before and after each build is given (2 CPUs).",
        "",
        "`tree` is `this` (the commit measured) or a git revision (`--baseline REV`: that revision's dbt project,",
        "run right after on the same-seed warehouse). CPU: the build process's user and system seconds, every",
        "thread's (runs from 2026-11-28T21:38Z on). Keys touched: of the campaigns, email domains and leads that",
        "the marts group recipients by, how many the incremental build's change touched (a rebuild keyed on",
        "them recomputes those). BI publish (runs from 2026-11-29T17:56Z on): the BI file's publish after each",
        "build, in a process of its own: after the full build from nothing, after the incremental one from the",
        "previous file.",
        "",
        "| case | tree | started | full s | incremental s | incr/full | incr/full CPU | target | full peak MB "
        "| incr peak MB | BI publish after full / incr s "
        + "".join(f"| {mart} full / incr s " for mart in INCREMENTAL_MARTS_SHOWN)
        + "| keys touched: campaigns; domains; leads | load avg (full; incr) |",
        "|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(INCREMENTAL_MARTS_SHOWN) + "---|---|",
    ]
    for line in rec["result"]:
        full, incr = line["full"], line["incremental"]
        load = line["load_avg_1m"]
        marts = " | ".join(f"{full['mart_s'].get(m)} / {incr['mart_s'].get(m)}" for m in INCREMENTAL_MARTS_SHOWN)
        keys = line["touch_incremental"].get("touched_keys")
        touched = "; ".join(f"{k[0]:,} of {k[1]:,}" for k in keys.values()) if keys else "-"
        out.append(
            f"| {line['recipients']:,} recipients | {line.get('tree', 'this')} | {line.get('date', '-')} "
            f"| {full['wall_s']} | {incr['wall_s']} | {ratio_x(line['ratio_wall'])} "
            f"| {ratio_x(line['ratio_cpu']) if 'ratio_cpu' in line else '-'} "
            f"| <= {line['target_ratio']}x | {full['peak_rss_mb']:.0f} "
            f"| {incr['peak_rss_mb']:.0f} | {full.get('publish_s', '-')} / {incr.get('publish_s', '-')} "
            f"| {marts} | {touched} | {load[0]}-{load[1]}; {load[2]}-{load[3]} |"
        )
    if rec.get("note"):
        out += ["", str(rec["note"])]
    return out


def incremental_pg_section(rec: dict[str, Any]) -> list[str]:
    """bench/models_incremental_pg.py: the same two builds on PostgreSQL, in one process, per run and project."""
    out = [
        "",
        f"## Models on PostgreSQL: full build vs incremental build after a 1% change ({rec['date']})",
        "",
        f"`{rec['command']}`: the synthetic warehouse copied into a throwaway server, the same change and builds as",
        "above, each build in the bench's process with 4 dbt threads. CPU: the build process's and the server's.",
        "",
        "| recipients | tree | started | full s | incremental s | incr/full | incr/full CPU (build; server) "
        "| lead_engagement full / incr s | tests summed full / incr s | load avg (full; incr) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for line in rec["result"]:
        full, incr = line["full"], line["incremental"]
        load = [*full["load_avg_1m"], *incr["load_avg_1m"]]
        out.append(
            f"| {line['recipients']:,} | {line['tree']} | {line['date']} | {full['wall_s']} | {incr['wall_s']} "
            f"| {ratio_x(line['ratio_wall'])} | {ratio_x(line['ratio_cpu'])}; {ratio_x(line['ratio_server_cpu'])} "
            f"| {full['mart_s'].get('lead_engagement')} / {incr['mart_s'].get('lead_engagement')} "
            f"| {full['tests_s_summed']} / {incr['tests_s_summed']} | {load[0]}-{load[1]}; {load[2]}-{load[3]} |"
        )
    return out + (["", str(rec["note"])] if rec.get("note") else [])


def scenarios_rows(scenarios: dict[str, Any]) -> list[str]:
    """The sync scenarios' table rows, then their failures as measured."""
    out: list[str] = []
    for rec in sorted(scenarios.values(), key=lambda r: (r["scale"], r["scenario"])):
        out.append(
            "| "
            + " | ".join(
                [
                    rec["scenario"] + (" (ours FAILED)" if rec.get("ours_ok") is False else ""),
                    rec["scale"],
                    fmt(rec.get("rate_limit_per_minute") or "off"),
                    fmt(rec["ours_requests"]),
                    fmt(rec["baseline_requests"]) + (" (failed)" if rec.get("baseline_ok") is False else ""),
                    ratio_x(rec.get("requests_ratio_baseline_to_ours")),
                    fmt(rec["bound_requests"]),
                    ratio_x(rec.get("ours_to_bound_requests")),
                    fmt(rec.get("ours_body_requests")),
                    fmt(rec["ours_wall_s"]),
                    fmt(rec["baseline_wall_s"]),
                    fmt(rec["bound_wall_s"]),
                    ratio_x(rec.get("ours_to_bound_wall")),
                    fmt(rec.get("ours_429")),
                    fmt(rec.get("baseline_429")),
                    fmt(rec.get("ours_rows")),
                    fmt(rec.get("baseline_rows")),
                    fmt(rec["ours_peak_mb"], 0),
                    fmt(rec.get("baseline_peak_mb"), 0),
                    fmt(rec["truth_ok"]),
                    fmt(rec.get("baseline_truth_ok")),
                    rec["date"],
                ]
            )
            + " |"
        )
    errors = [
        f"- {r['scenario']}/{r['scale']}: "
        + "; ".join(f"{side}: {r[side + '_error']}" for side in ("ours", "baseline") if r.get(side + "_error"))
        for r in scenarios.values()
        if r.get("ours_error") or r.get("baseline_error")
    ]
    if errors:
        out += ["", "Failures (as measured):", *errors]
    return out


def local_speed_section(speed: dict[str, Any] | None) -> list[str]:
    """bench/local_speed.py: rows per second of each dlt path."""
    if not speed or not speed.get("result"):
        return []
    res = speed["result"]
    out = [
        "",
        f"## Local speed: recipients through dlt extract, normalize, load into DuckDB, merge on id ({speed['date']})",
        "",
        f"Fastest path keeping every row exactly once: `{res.get('fastest')}`, "
        f"{ratio_x(res.get('speedup_vs_default'))} dlt's default path in rows/s. Extract includes building the rows.",
        "",
        "| path | rows | extract s | normalize s | load s | total s | rows/s | peak MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in res.get("paths") or []:
        if "error" in p:
            out.append(f"| {p['path']} | {p['rows']} | failed: {p['error']} | | | | | |")
            continue
        out.append(
            f"| {p['path']} | {p['rows']} | {p['extract_s']} | {p['normalize_s']} | {p['load_s']} "
            f"| {p['total_s']} | {p['rows_per_s']} | {p['peak_mb']:.0f} |"
        )
    return out
