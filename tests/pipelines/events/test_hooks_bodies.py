"""Matching lead.replied events to replies (the payload has no reply id)."""

from __future__ import annotations

from datetime import timedelta

from pipelines.events.loading import event_bodies_for


def _reply(rid: str, at: str, sender: str = "Ada@Example.com", campaign: str = "c1") -> dict:
    return {"id": rid, "campaign_id": campaign, "from": sender, "received_at": at}


def _event(body: str, at: str, email: str = "ada@example.com", campaign: str = "c1") -> dict:
    return {"campaign_id": campaign, "email": email, "created_at": at, "body": body, "reply": body[:5]}


def test_match_on_campaign_email_case_insensitively_and_nearest_time() -> None:
    replies = [_reply("r1", "2026-03-02T10:00:00Z"), _reply("r2", "2026-03-02T12:00:00Z")]
    events = [
        _event("second", "2026-03-02T12:00:00+00:00"),
        _event("first", "2026-03-02T10:00:02+00:00"),
        _event("other campaign", "2026-03-02T10:00:00+00:00", campaign="c2"),
        _event("other person", "2026-03-02T10:00:00+00:00", email="bob@example.com"),
    ]
    assert event_bodies_for(replies, events) == {"r1": "first", "r2": "second"}


def test_each_event_is_used_once_and_far_events_are_ignored() -> None:
    replies = [_reply("r1", "2026-03-02T10:00:00Z"), _reply("r2", "2026-03-02T10:00:30Z")]
    one_event = [_event("only", "2026-03-02T10:00:25+00:00")]
    assert event_bodies_for(replies, one_event) == {"r2": "only"}
    far = [_event("late", "2026-03-02T13:00:00+00:00")]
    assert event_bodies_for(replies, far) == {}
    assert event_bodies_for(replies, far, max_skew=timedelta(hours=4)) == {"r2": "late"}


def test_incomplete_inputs_are_skipped() -> None:
    replies = [
        {"id": "r1", "campaign_id": "c1", "from": None, "received_at": "2026-03-02T10:00:00Z"},
        _reply("r2", "bad time"),
    ]
    events = [
        _event("x", "2026-03-02T10:00:00+00:00"),
        {"campaign_id": "c1", "email": "ada@example.com", "created_at": "2026-03-02T10:00:00+00:00"},
    ]
    assert event_bodies_for(replies, events) == {}
