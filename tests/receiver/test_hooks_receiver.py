"""The receiver over real HTTP on loopback: refusals, replays, bursts, and the spool -> events load."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import pytest
from dlt.pipeline.exceptions import PipelineStepFailed
from test_hooks_support import SECRET, burst, deliver, event_rows, load, make_pipeline, payload, signed

from pipelines.events.loading import events_resource, load_spool, mark_spool_loaded, spool, spool_reader
from receiver.app import MAX_NESTING
from receiver.server import ReceiverServer
from receiver.signature import sign


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[ReceiverServer]:
    with ReceiverServer(signing_secret=SECRET, spool_dir=tmp_path / "spool", max_body_bytes=64 * 1024) as server:
        yield server


def _spooled(spool_dir: Path) -> list[dict]:
    snap = spool_reader.snapshot(spool_dir)
    return [r for f in (*snap.sealed, *snap.live) for r in spool_reader.read_records(f)]


def test_valid_delivery_is_acknowledged_after_spooling(receiver: ReceiverServer, tmp_path: Path) -> None:
    body = payload()
    with httpx.Client() as client:
        resp = deliver(client, receiver.url, body)
    assert resp.status_code == 200 and resp.json()["status"] == "accepted"
    records = _spooled(tmp_path / "spool")
    assert [r["payload"] for r in records] == [body]
    assert records[0]["event_id"] == resp.json()["event_id"] == spool.event_id_for(body)


def test_refusals_have_the_documented_status_and_spool_nothing(receiver: ReceiverServer, tmp_path: Path) -> None:
    good = json.dumps(payload()).encode()
    now = int(time.time())
    cases: list[tuple[str, bytes, dict[str, str], int]] = [
        ("forged signature", good, signed(good, secret="not-the-secret"), 401),
        ("tampered body", good.replace(b"Ada", b"Eve"), signed(good), 401),
        ("no signature", good, {k: v for k, v in signed(good).items() if k != "X-Service-Signature"}, 401),
        ("no timestamp", good, {k: v for k, v in signed(good).items() if k != "X-Service-Timestamp"}, 401),
        ("stale timestamp", good, signed(good, ts=now - 301), 401),
        (
            "future timestamp",
            good,
            signed(good, ts=now + 360),
            401,
        ),  # a margin: `now` is truncated and the loop takes time
        ("oversize body", b" " * (64 * 1024 + 1), signed(b" " * (64 * 1024 + 1)), 413),
        ("not json", b"{oops", signed(b"{oops"), 400),
        (
            "no data object",
            b'{"event":"lead.replied","created_at":"x"}',
            signed(b'{"event":"lead.replied","created_at":"x"}'),
            400,
        ),
    ]
    unknown = json.dumps(payload(event="lead.teleported")).encode()
    cases.append(("unknown event", unknown, signed(unknown, event="lead.teleported"), 422))
    cases.append(("header/body event mismatch", good, signed(good, event="lead.opened"), 422))
    with httpx.Client() as client:
        for name, body, headers, status in cases:
            resp = client.post(receiver.url, content=body, headers=headers)
            assert resp.status_code == status, name
            assert "error" in resp.json(), name
        # a streamed (chunked, no Content-Length) oversize body is cut off too
        big = b"x" * (200 * 1024)
        resp = client.post(
            receiver.url, content=iter([big[i : i + 8192] for i in range(0, len(big), 8192)]), headers=signed(big)
        )
        assert resp.status_code == 413
        # inside the tolerance is fine
        assert deliver(client, receiver.url, payload(), ts=now - 290).status_code == 200
    assert len(_spooled(tmp_path / "spool")) == 1


def test_deeply_nested_signed_body_is_a_400_and_spools_nothing(receiver: ReceiverServer, tmp_path: Path) -> None:
    """Nested past the parser's recursion limit (was a 500 RecursionError) or just past MAX_NESTING: both 400."""

    def nested(depth: int) -> bytes:
        return (
            '{"event":"lead.replied","created_at":"2026-03-02T10:00:00+00:00","data":{"x":'
            + "[" * depth
            + "]" * depth
            + "}}"
        ).encode()

    with httpx.Client() as client:
        for depth in (30_000, 900, MAX_NESTING - 1):  # payload and data are two levels already (64 KiB limit here)
            resp = client.post(receiver.url, content=nested(depth), headers=signed(nested(depth)))
            assert resp.status_code == 400, depth
            assert resp.json() == {
                "error": f"body nests objects or arrays more than {MAX_NESTING} levels deep; a service event nests 3"
            }
        assert not _spooled(tmp_path / "spool")
        ok = client.post(receiver.url, content=nested(MAX_NESTING - 2), headers=signed(nested(MAX_NESTING - 2)))
        assert ok.status_code == 200  # exactly at the limit is still taken
        assert client.get(receiver.url.replace("/webhooks", "/healthz")).json()["counters"]["refused_400"] == 3
    assert len(_spooled(tmp_path / "spool")) == 1


def test_replayed_delivery_makes_one_row(receiver: ReceiverServer, tmp_path: Path) -> None:
    body = payload()
    with httpx.Client() as client:
        first = deliver(client, receiver.url, body)
        replay = deliver(client, receiver.url, body, ts=int(time.time()) - 5)  # a retry: new timestamp, same event
    assert first.status_code == replay.status_code == 200
    assert replay.json()["event_id"] == first.json()["event_id"]
    assert load(tmp_path, tmp_path / "spool") == 1
    assert [r[0] for r in event_rows(tmp_path)] == [first.json()["event_id"]]


def test_secret_never_reaches_spool_logs_or_warehouse(
    receiver: ReceiverServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with httpx.Client() as client:
        deliver(client, receiver.url, payload())
        deliver(client, receiver.url, payload(), secret="wrong")
    load(tmp_path, tmp_path / "spool")
    assert SECRET not in caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_burst_of_1000_deliveries_none_lost_or_duplicated(receiver: ReceiverServer, tmp_path: Path) -> None:
    bodies = [payload(email=f"lead{i}@example.com") for i in range(1000)]
    bodies += bodies[:50]  # retries mixed into the burst

    started = time.perf_counter()
    statuses = burst(receiver.url, [json.dumps(b).encode() for b in bodies], concurrency=32)
    elapsed = time.perf_counter() - started
    assert statuses == [200] * len(bodies)
    assert load(tmp_path, tmp_path / "spool") == 1000
    rows = event_rows(tmp_path, "event_id, email")
    assert len(rows) == 1000 and {r[1] for r in rows} == {f"lead{i}@example.com" for i in range(1000)}
    logging.getLogger(__name__).info("1050 deliveries in %.2f s", elapsed)


def test_one_delivery_at_a_time_is_not_held_by_a_delayed_ack(receiver: ReceiverServer) -> None:
    """The service sends one delivery at a time per subscription, on one keep-alive connection. Without
    TCP_NODELAY on the accepted connection each response's body waits for the sender's delayed ACK: at least
    40 ms a delivery on Linux, so 40 deliveries took 1.6 s or more; with it, a few ms each."""
    bodies = [json.dumps(payload(email=f"serial{i}@example.com")).encode() for i in range(40)]
    started = time.perf_counter()
    statuses = burst(receiver.url, bodies, concurrency=1)
    elapsed = time.perf_counter() - started
    assert statuses == [200] * len(bodies)
    assert elapsed / len(bodies) < 0.035, f"{elapsed / len(bodies) * 1000:.1f} ms a delivery, one at a time"


def test_spool_loads_exactly_once_and_marks_only_after_commit(receiver: ReceiverServer, tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    with httpx.Client() as client:
        for i in range(10):
            assert deliver(client, receiver.url, payload(email=f"a{i}@example.com")).status_code == 200
        receiver.app.state.spool_writer.rotate()  # seal: these 10 are now a finished file
        for i in range(5):
            assert deliver(client, receiver.url, payload(email=f"b{i}@example.com")).status_code == 200

    # A load that fails in the load step (a table whose event_id is an integer) marks nothing.
    broken = tmp_path / "broken"
    broken.mkdir()
    with duckdb.connect(str(broken / "w.duckdb")) as con:
        con.execute(
            "create schema outreach; create table outreach.events (event_id bigint not null, created_at bigint)"
        )
    with pytest.raises(PipelineStepFailed) as failed:
        load_spool(make_pipeline(broken, "broken_events"), spool_dir)
    assert failed.value.step == "load"
    snap = spool_reader.snapshot(spool_dir)
    assert len(snap.sealed) == 1 and len(snap.live) == 1 and all(p.exists() for p in snap.sealed)

    # A crash between commit and marking: the file is loaded again, no row is doubled.
    make_pipeline(tmp_path).run(events_resource(spool_dir, snapshot=snap))
    assert len(event_rows(tmp_path)) == 15
    assert load(tmp_path, spool_dir) == 15
    assert len(event_rows(tmp_path)) == 15
    assert not snap.sealed[0].exists() and (spool_dir / "done" / snap.sealed[0].name).exists()
    assert snap.live[0].exists()  # the receiver's live file stays until it is sealed

    # Rerun with nothing new: still 15, and the live file's events are not doubled.
    load(tmp_path, spool_dir)
    assert len(event_rows(tmp_path)) == 15
    assert mark_spool_loaded(spool_dir, snap) == 0


def test_events_table_columns(receiver: ReceiverServer, tmp_path: Path) -> None:
    body = payload(email="Grace@Example.com", reply_type="not_interested")
    with httpx.Client() as client:
        assert deliver(client, receiver.url, body).status_code == 200
        bounced = payload(event="lead.bounced")
        assert deliver(client, receiver.url, bounced).status_code == 200
    load(tmp_path, tmp_path / "spool")
    rows = event_rows(
        tmp_path, "event, created_at, received_at, workspace_id, campaign_id, lead_id, email, reply_type, data"
    )
    by_event = {r[0]: r for r in rows}
    replied = by_event["lead.replied"]
    assert replied[1].isoformat() == "2026-03-02T10:00:00+00:00"
    assert abs(replied[2].timestamp() - time.time()) < 60
    assert replied[3] is None  # one unnamed secret: workspace unknown
    assert replied[4:8] == (body["data"]["campaign_id"], body["data"]["lead_id"], "Grace@Example.com", "not_interested")
    assert json.loads(replied[8]) == body["data"]
    assert set(by_event) == {"lead.replied", "lead.bounced"}


def test_several_workspace_secrets_name_the_workspace(tmp_path: Path) -> None:
    secrets = {"ws-a": "secret-a", "ws-b": "secret-b"}
    with ReceiverServer(signing_secret=secrets, spool_dir=tmp_path / "spool") as server, httpx.Client() as client:
        assert deliver(client, server.url, payload(email="a@x.io"), secret="secret-a").status_code == 200
        assert deliver(client, server.url, payload(email="b@x.io"), secret="secret-b").status_code == 200
        assert deliver(client, server.url, payload(email="c@x.io"), secret="secret-c").status_code == 401
    load(tmp_path, tmp_path / "spool")
    assert sorted(r[1:] for r in event_rows(tmp_path, "event_id, email, workspace_id")) == [
        ("a@x.io", "ws-a"),
        ("b@x.io", "ws-b"),
    ]


def test_signature_header_may_carry_several_values() -> None:
    from receiver.signature import NO_MATCH, verify

    body, ts = b'{"a":1}', "1700000000"
    header = "v1=deadbeef, " + sign("s1", ts, body)
    assert verify({None: "s1"}, ts, body, header) is None
    assert verify({None: "s2"}, ts, body, header) is NO_MATCH


def test_listen_without_a_secret_fails_with_the_setting_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.chdir(tmp_path)  # no .dlt/secrets.toml here
    monkeypatch.delenv("SOURCES__OUTREACH__SIGNING_SECRET", raising=False)
    monkeypatch.delenv("SOURCES__OUTREACH__SIGNING_SECRETS", raising=False)
    result = CliRunner().invoke(app, ["hooks", "listen", "--port", "0", "--spool", str(tmp_path / "s")])
    assert result.exit_code != 0
    assert "SOURCES__OUTREACH__SIGNING_SECRET" in str(result.exception) + result.output


def test_listen_on_a_port_in_use_fails_in_one_line_naming_the_option(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "SOURCES__OUTREACH__SIGNING_SECRET": SECRET}
        proc = subprocess.run(
            [sys.executable, "-m", "flows.cli", "hooks", "listen", "--port", str(port), "--spool", str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: 127.0.0.1:{port} is in use (another `outreach hooks listen`?): stop it, or pass --port with another "
        "port (0 takes a free one)"
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--host", "192.0.2.1"], "cannot listen on 192.0.2.1: not an address of this machine ("),
        (["--host", "no-such-host.invalid"], "cannot listen on no-such-host.invalid: not an address of this machine ("),
        (["--spool", "{file}"], "cannot use {file} as the webhook spool: a file is in the way ({file}): move it"),
        (["--spool", "   "], "--spool is blank: give a path"),  # it served into a folder named that
    ],
)
def test_listen_where_it_cannot_fails_in_one_line_naming_the_option(args: list[str], said: str, tmp_path: Path) -> None:
    """These were `error: OSError: [Errno 99] Cannot assign requested address`, `error: gaierror: [Errno -2] Name or
    service not known` and `error: FileExistsError: [Errno 17] File exists: '...'`."""
    import os
    import subprocess
    import sys

    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a directory")
    args = [a.format(file=in_the_way) for a in args]
    env = {**os.environ, "SOURCES__OUTREACH__SIGNING_SECRET": SECRET}
    proc = subprocess.run(
        [sys.executable, "-m", "flows.cli", "hooks", "listen", "--port", "0", "--spool", str(tmp_path / "s"), *args],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"error: {said.format(file=in_the_way)}"), (
        proc.stderr
    )


def test_listen_expands_a_home_folder_in_the_spool_as_the_settings_do(tmp_path: Path) -> None:
    """`--spool=~/spool` (a shell expands no ~ after `=`) spooled into a folder named `~` beside the command, where
    no sync looks for deliveries."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "SOURCES__OUTREACH__SIGNING_SECRET": SECRET, "HOME": str(tmp_path / "home")}
    with subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "hooks", "listen", "--port", "0", "--spool=~/spool"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert first.rstrip().endswith(f"spooling to {tmp_path / 'home' / 'spool'}/"), first
    assert not (tmp_path / "~").exists()
