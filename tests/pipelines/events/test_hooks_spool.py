"""The spool format: durable appends, rotation, torn tails, dead writers, marking done."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from test_hooks_support import payload

from pipelines.events import spool, spool_reader


def _record(i: int) -> dict:
    return spool.make_record(payload(email=f"p{i}@example.com"))


def test_append_is_readable_and_sealed_on_close(tmp_path: Path) -> None:
    writer = spool.SpoolWriter(tmp_path)
    records = [_record(i) for i in range(5)]
    for r in records:
        writer.append(r)
    snap = spool_reader.snapshot(tmp_path)
    assert snap.sealed == () and len(snap.live) == 1  # the writer still holds it
    assert [r["event_id"] for r in spool_reader.read_records(snap.live[0])] == [r["event_id"] for r in records]
    writer.close()
    snap = spool_reader.snapshot(tmp_path)
    assert snap.live == () and len(snap.sealed) == 1
    assert len(list(spool_reader.read_records(snap.sealed[0]))) == 5
    with pytest.raises(spool.SpoolWriteError):
        writer.append(_record(99))


def test_rotation_by_size_and_age(tmp_path: Path) -> None:
    writer = spool.SpoolWriter(tmp_path, max_bytes=2000, max_age_s=3600)
    for i in range(20):
        writer.append(_record(i))
    assert len(spool_reader.snapshot(tmp_path).sealed) >= 3
    writer.close()
    files = spool_reader.snapshot(tmp_path).sealed
    ids = [r["event_id"] for f in files for r in spool_reader.read_records(f)]
    assert len(ids) == 20 == len(set(ids))

    aged = spool.SpoolWriter(tmp_path / "aged", max_age_s=0.0)
    aged.append(_record(1))  # sealed right after its write: max age 0
    assert len(spool_reader.snapshot(tmp_path / "aged").sealed) == 1
    aged.close()


def test_torn_tail_and_corrupt_lines_are_never_read(tmp_path: Path) -> None:
    good = [_record(i) for i in range(3)]
    path = tmp_path / "events-20260101T000000000000-1-0000.jsonl"
    torn = spool.encode_record(_record(9))[:-20]
    path.write_bytes(
        spool.encode_record(good[0]) + b"{not json\n" + b"".join(spool.encode_record(r) for r in good[1:]) + torn
    )
    got = [r["event_id"] for r in spool_reader.read_records(path)]
    assert got == [r["event_id"] for r in good]


def test_a_file_with_lines_that_are_no_record_is_kept_apart_never_pruned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its good lines load; its other lines were acknowledged to the service, which does not send them again. It
    went to done/ with the rest and was deleted a week later: now it is kept in rejected/, said in a warning. A torn
    tail (never acknowledged: the service sends it again) is no reason to keep a file."""
    good = [_record(i) for i in range(3)]
    damaged = tmp_path / "events-20260101T000000000000-1-0000.jsonl"
    damaged.write_bytes(spool.encode_record(good[0]) + b"{not json\n" + b'{"v": 1}\n' + spool.encode_record(good[1]))
    torn = tmp_path / "events-20260101T000000000001-1-0000.jsonl"
    torn.write_bytes(spool.encode_record(good[2]) + spool.encode_record(_record(9))[:-20])
    assert [spool_reader.unreadable_lines(p) for p in (damaged, torn)] == [2, 0]
    moved = spool_reader.mark_loaded(tmp_path, [damaged, torn])
    assert moved == [tmp_path / "rejected" / damaged.name, tmp_path / "done" / torn.name]
    assert f"{damaged.name}: 2 line(s) are no spool record and were not loaded; the file is kept in " in caplog.text
    assert spool_reader.prune_done(tmp_path, older_than_s=-1) == 1
    assert [p.name for p in (tmp_path / "rejected").iterdir()] == [damaged.name]
    assert spool_reader.snapshot(tmp_path).sealed == ()  # not loaded again unless moved back


def test_dead_writer_file_is_sealed_live_file_is_not(tmp_path: Path) -> None:
    orphan = tmp_path / "events-20260101T000000000000-1-0000.jsonl.open"  # nobody holds its lock
    orphan.write_bytes(spool.encode_record(_record(1)) + b'{"v": 1, "event_')
    live_writer = spool.SpoolWriter(tmp_path)  # seals the orphan on start
    live_writer.append(_record(2))
    snap = spool_reader.snapshot(tmp_path)
    assert [p.name for p in snap.sealed] == ["events-20260101T000000000000-1-0000.jsonl"]
    assert len(snap.live) == 1 and snap.live[0] == live_writer.current_path
    assert len(list(spool_reader.read_records(snap.sealed[0]))) == 1
    live_writer.close()


def test_mark_loaded_moves_only_sealed_files_and_is_idempotent(tmp_path: Path) -> None:
    writer = spool.SpoolWriter(tmp_path)
    writer.append(_record(1))
    writer.rotate()
    writer.append(_record(2))
    snap = spool_reader.snapshot(tmp_path)
    moved = spool_reader.mark_loaded(tmp_path, [*snap.sealed, *snap.live])
    assert [p.name for p in moved] == [snap.sealed[0].name]
    assert (tmp_path / "done" / snap.sealed[0].name).exists() and snap.live[0].exists()
    assert spool_reader.mark_loaded(tmp_path, snap.sealed) == []
    writer.close()


def test_concurrent_appends_share_fsyncs_and_lose_nothing(tmp_path: Path) -> None:
    writer = spool.SpoolWriter(tmp_path)
    records = [_record(i) for i in range(400)]
    threads = [threading.Thread(target=lambda rs=records[i::16]: [writer.append(r) for r in rs]) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    ids = [r["event_id"] for f in spool_reader.snapshot(tmp_path).sealed for r in spool_reader.read_records(f)]
    assert sorted(ids) == sorted(r["event_id"] for r in records)
    assert 0 < writer.fsyncs <= 400


def test_event_id_is_stable_across_key_order_and_differs_by_content() -> None:
    a = payload(lead_id="L1", campaign_id="C1")
    b = {"data": dict(reversed(list(a["data"].items()))), "created_at": a["created_at"], "event": a["event"]}
    assert spool.event_id_for(a) == spool.event_id_for(b)
    assert spool.event_id_for(a) != spool.event_id_for({**a, "created_at": "2026-03-02T10:00:01+00:00"})


def test_failed_write_is_refused_and_its_partial_line_stays_a_torn_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = spool.SpoolWriter(tmp_path)
    first = _record(1)
    writer.append(first)
    real_write_all = spool._write_all

    def disk_full(fd: int, data: bytes) -> None:  # half the line reaches the file, then ENOSPC
        real_write_all(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spool, "_write_all", disk_full)
    with pytest.raises(spool.SpoolWriteError, match="disk space"):
        writer.append(_record(2))
    monkeypatch.setattr(spool, "_write_all", real_write_all)
    third = _record(3)
    writer.append(third)  # goes to a fresh file, not after the partial line
    writer.close()
    files = spool_reader.snapshot(tmp_path).sealed
    assert len(files) == 2
    assert [[r["event_id"] for r in spool_reader.read_records(f)] for f in files] == [
        [first["event_id"]],
        [third["event_id"]],
    ]
