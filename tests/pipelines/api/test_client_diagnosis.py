"""Wrong URL or key, broken paging, the service clock and wall-clock rate waits: the API client over real
loopback HTTP: configuration mistakes told apart from outages, the service's clock, the progress."""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import pytest
from loopback import LoopbackServer, json_answer, refusing_port
from typer.testing import CliRunner

from pipelines.api.accounts import connectivity_check
from pipelines.api.client import FIRST_CONTACT_ATTEMPTS, OutreachClient
from pipelines.core.errors import BaseUrlError, ConfigError, PagingError, ServiceUnreachableError

KEY = "sk_test_SECRET_1234567890"


def timed_error(call: Any, error: type[BaseException]) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and KEY not in message
    return message, time.monotonic() - started


def account_answer(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    return json_answer(200, {"data": {"workspace": {"id": "w1", "name": "Acme"}}})


# -- wrong base URL ------------------------------------------------------------------------------------
def test_nothing_listening_is_connection_refused_within_5s() -> None:
    url = "http://127.0.0.1:1/api/v1"
    with OutreachClient(KEY, url, rate_limit_per_minute=0) as client:
        message, seconds = timed_error(lambda: connectivity_check(client), ServiceUnreachableError)
        assert client.stats.snapshot()["requests"] == FIRST_CONTACT_ATTEMPTS
    assert message == "connection refused at http://127.0.0.1:1/api/v1: is the service running, is the URL right?"
    assert seconds < 5


def test_unknown_host_is_named() -> None:
    with OutreachClient(KEY, "http://no-such-host.invalid/api/v1", rate_limit_per_minute=0) as client:
        message, seconds = timed_error(lambda: connectivity_check(client), ServiceUnreachableError)
    assert message.startswith("host no-such-host.invalid not found (DNS)") and seconds < 5


@contextlib.contextmanager
def raw_server(answers: list[bytes]) -> Iterator[tuple[str, list[int]]]:
    """A server at a loopback port that reads each connection's request and answers with the next of `answers` (the
    last one from then on), whatever it is, then hangs up; its URL and a list with a 1 per connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            answer = answers[min(len(accepted), len(answers) - 1)]
            accepted.append(1)  # before the answer: the client may count the connections once it has it
            with conn:
                conn.recv(65536)
                conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/api/v1", accepted
    finally:
        listener.close()


def test_a_server_that_does_not_speak_http_is_said_at_first_contact() -> None:
    """A base URL at another service's port (here one that greets in SSH's way and hangs up) was retried 8 times
    over 29 s, then 'the API is unavailable or overloaded; retry later'."""
    with raw_server([b"SSH-2.0-OpenSSH_9.6\r\n"]) as (url, accepted):
        with OutreachClient(KEY, url, rate_limit_per_minute=0) as client:
            message, seconds = timed_error(lambda: connectivity_check(client), ServiceUnreachableError)
    assert len(accepted) == FIRST_CONTACT_ATTEMPTS and seconds < 5
    assert message.startswith(f"{url} closed the connection without an HTTP answer (")
    assert message.endswith(
        f", {FIRST_CONTACT_ATTEMPTS} times: is the service running there, and are the base URL's host and port the "
        "API's?"
    )


def test_an_answer_cut_short_at_first_contact_is_retried_as_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    """A status line came: an HTTP server is there, and a body it cut short is a fault to retry, not another
    service at the port."""
    import pipelines.api.client as client_mod

    monkeypatch.setattr(client_mod, "backoff_wait", lambda state: 0.01)
    cut = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"data": {'
    body = b'{"data": {"workspace": {"id": "w1", "name": "Acme"}}}'
    whole = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with raw_server([cut, cut, cut, whole]) as (url, accepted):
        with OutreachClient(KEY, url, rate_limit_per_minute=0, max_attempts=5) as client:
            assert connectivity_check(client)["workspace"]["name"] == "Acme"
    assert len(accepted) == 4 > FIRST_CONTACT_ATTEMPTS


def test_an_html_page_is_not_the_api_and_is_not_retried() -> None:
    def html(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": "text/html; charset=utf-8"}, b"<!doctype html><html><body>Welcome</body></html>"

    with LoopbackServer(html) as server, OutreachClient(KEY, server.url + "/app/api/v1", rate_limit_per_minute=0) as c:
        message, seconds = timed_error(lambda: connectivity_check(c), BaseUrlError)
        assert len(server.requests) == 1
    assert message.startswith("this URL answers HTML, not the API") and "the base URL must end in /api/v1" in message
    assert seconds < 5


def test_a_login_page_answering_401_in_html_is_the_url_not_the_key() -> None:
    def login(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 401, {"Content-Type": "text/html"}, b"<html>Please log in</html>"

    with LoopbackServer(login) as server, OutreachClient(KEY, server.url + "/api/v1", rate_limit_per_minute=0) as c:
        message, _ = timed_error(lambda: connectivity_check(c), BaseUrlError)
    assert "answers HTML, not the API" in message


def test_a_url_without_api_v1_is_refused_before_any_request() -> None:
    with LoopbackServer(account_answer) as server:
        message, seconds = timed_error(lambda: OutreachClient(KEY, server.url + "/"), BaseUrlError)
        assert server.requests == []
    assert message == (
        f"the base URL {server.url}/ does not end in /api/v1: the API lives under it; use e.g. {server.url}/api/v1"
    )
    assert seconds < 1


def test_a_404_on_account_is_the_base_url_not_a_missing_id() -> None:
    def not_here(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return json_answer(404, {"detail": "Not Found"})

    with (
        LoopbackServer(not_here) as server,
        OutreachClient(KEY, server.url + "/v2/api/v1", rate_limit_per_minute=0) as c,
    ):
        message, _ = timed_error(lambda: connectivity_check(c), BaseUrlError)
        assert len(server.requests) == 1
    assert "answered 404: this is not the API's base URL" in message and "does not exist" not in message


def test_a_redirect_names_where_it_points() -> None:
    def moved(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 301, {"Location": "https://api.example.com/api/v1/account"}, b""

    with LoopbackServer(moved) as server, OutreachClient(KEY, server.url + "/api/v1", rate_limit_per_minute=0) as c:
        message, _ = timed_error(lambda: connectivity_check(c), BaseUrlError)
    assert "redirects (301) to https://api.example.com/api/v1/account" in message


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("ftp://host/api/v1", "is not an http(s) URL"),
        ("https://user:pw@host/api/v1", "holds a user name or password"),
        ("https://host/api/v1?token=s3cr3t", "has a query (?...) or fragment"),
        ("host/api/v1", "is not an http(s) URL"),
    ],
)
def test_url_shape_is_checked_locally(url: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        OutreachClient(KEY, url)
    assert fragment in str(info.value) and "pw" not in str(info.value) and "s3cr3t" not in str(info.value)


# -- wrong key -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "what"),
    [
        ("sk_test_SECRET\n_1234567890", "a line break at character 15 of 26"),
        ("sk_test_SECRET 1234567890", "a space or tab at character 15"),
        ("sk_test_SECRET\u20141234567890", "a non-ASCII character"),
        ("sk_test_SECRET\x001234567890", "a control character"),
    ],
)
def test_a_key_with_invalid_characters_fails_locally(key: str, what: str) -> None:
    with LoopbackServer(account_answer) as server:
        with pytest.raises(ConfigError) as info:
            OutreachClient(key, server.url + "/api/v1")
        assert server.requests == []
    assert what in str(info.value)
    assert "SECRET" not in str(info.value) and "1234567890" not in str(info.value)


def test_surrounding_whitespace_of_a_key_is_dropped() -> None:
    seen: list[str] = []

    with LoopbackServer(account_answer) as server:
        with OutreachClient(f"  {KEY}\n", server.url + "/api/v1", rate_limit_per_minute=0) as client:
            assert connectivity_check(client)["workspace"]["name"] == "Acme"
        seen = [r[1] for r in server.requests]
    assert seen == ["/api/v1/account"]


def test_cli_sync_gives_one_line_within_5s_for_each_mistake(tmp_path: Any) -> None:
    from flows.cli import app

    def html(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": "text/html"}, b"<html></html>"

    runner = CliRunner()
    with LoopbackServer(html) as server:
        cases = [
            (
                ["--base-url", "http://127.0.0.1:1/api/v1", "--api-key", KEY],
                "connection refused at http://127.0.0.1:1/api/v1",
            ),
            (["--base-url", server.url + "/api/v1", "--api-key", KEY], "this URL answers HTML, not the API"),
            (["--base-url", server.url, "--api-key", KEY], "does not end in /api/v1"),
            (["--base-url", server.url + "/api/v1", "--api-key", "abc\ndef"], "the API key has a line break"),
        ]
        # the 5 s are the checks' budget, not the first import of dlt and dbt in this process
        runner.invoke(app, ["sync", *cases[0][0], "--duckdb", str(tmp_path / "w.duckdb"), "--no-progress"])
        for args, fragment in cases:
            started = time.monotonic()
            result = runner.invoke(app, ["sync", *args, "--duckdb", str(tmp_path / "w.duckdb"), "--no-progress"])
            assert time.monotonic() - started < 5, args
            assert result.exit_code == 1, result.output
            assert result.output.count("\n") == 1 and fragment in result.output, result.output
            assert KEY not in result.output and "abc" not in result.output


def test_connection_lost_after_first_contact_is_retried_as_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    import pipelines.api.client as client_mod

    monkeypatch.setattr(client_mod, "backoff_wait", lambda state: 0.01)
    with LoopbackServer(account_answer) as server:
        client = OutreachClient(KEY, server.url + "/api/v1", rate_limit_per_minute=0, max_attempts=4)
        connectivity_check(client)
    with refusing_port() as port:
        client.base_url = f"http://127.0.0.1:{port}/api/v1"
        client._http.base_url = client.base_url  # the service goes away mid-run
        with pytest.raises(ServiceUnreachableError) as info:
            client.get_data("/campaigns")
    assert client.stats.snapshot()["requests"] == 1 + 4
    assert "failed 4 times (connection refused at" in str(info.value) and "retry later" in str(info.value)
    client.close()


# -- the service clock -----------------------------------------------------------------------------------
def test_server_time_is_the_newest_date_header() -> None:
    dates = iter([datetime(2031, 5, 1, 12, 0, 5, tzinfo=UTC), datetime(2031, 5, 1, 12, 0, 1, tzinfo=UTC)])

    def dated(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        status, headers, body = account_answer(method, path, query)
        return status, {**headers, "Date": format_datetime(next(dates), usegmt=True)}, body

    with LoopbackServer(dated) as server, OutreachClient(KEY, server.url + "/api/v1", rate_limit_per_minute=0) as c:
        assert c.server_time() is None
        connectivity_check(c)
        connectivity_check(c)
        assert c.server_time() == datetime(2031, 5, 1, 12, 0, 5, tzinfo=UTC)


# -- paging ------------------------------------------------------------------------------------------------
ROWS = [{"id": f"r{i:03d}"} for i in range(250)]


def paged(ignore_page: bool = False, lie_about_page: bool = False, drop_page: int | None = None) -> Any:
    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        per_page = int(query.get("per_page", 25))
        asked = int(query.get("page", 1))
        served = 1 if ignore_page else asked
        rows = ROWS[(served - 1) * per_page : served * per_page]
        if drop_page == asked:
            rows = rows[:-5]
        current = asked if lie_about_page else served
        meta = {"current_page": current, "last_page": math.ceil(len(ROWS) / per_page), "total": len(ROWS)}
        return json_answer(200, {"data": rows, "meta": meta})

    return answer


def read_all(url: str) -> list[str]:
    with OutreachClient(KEY, url + "/api/v1", rate_limit_per_minute=0) as client:
        return [row["id"] for page in client.iter_pages("/campaigns", per_page=100) for row in page.items]


def test_paging_as_documented_reads_every_row() -> None:
    with LoopbackServer(paged()) as server:
        assert read_all(server.url) == [r["id"] for r in ROWS]


def test_an_api_that_ignores_page_fails_naming_the_endpoint() -> None:
    with LoopbackServer(paged(ignore_page=True)) as server:
        with pytest.raises(PagingError) as info:
            read_all(server.url)
    assert str(info.value).startswith("GET /campaigns asked for page 2 but the API answered page 1 (meta.current_page)")


def test_an_api_that_ignores_page_and_echoes_it_in_meta_fails_too() -> None:
    with LoopbackServer(paged(ignore_page=True, lie_about_page=True)) as server:
        with pytest.raises(PagingError) as info:
            read_all(server.url)
    assert str(info.value).startswith(
        "GET /campaigns: page 2 holds the same 100 rows as page 1: the API ignores `page`"
    )


def test_rows_missing_under_a_stable_total_fail_loudly() -> None:
    with LoopbackServer(paged(drop_page=2)) as server:
        with pytest.raises(PagingError) as info:
            read_all(server.url)
    assert str(info.value).startswith("GET /campaigns: 245 distinct rows over 3 page(s), but meta.total is 250")


def test_a_paged_answer_without_meta_fails() -> None:
    def bare(method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return json_answer(200, {"data": ROWS[:100]})

    with LoopbackServer(bare) as server, pytest.raises(PagingError, match="no paging `meta`"):
        read_all(server.url)


def test_pages_read_and_known_are_counted_for_the_eta() -> None:
    with LoopbackServer(paged()) as server, OutreachClient(KEY, server.url + "/api/v1", rate_limit_per_minute=0) as c:
        first = c.page("/campaigns/a/leads", 1, 100)
        assert first.last_page == 3
        c.page("/campaigns/b/leads", 1, 200)
        snap = c.stats.snapshot()
    assert snap["pages_read"] == 2 and snap["pages_known"] == 3 + 2


# -- wall-clock rate wait ---------------------------------------------------------------------------------
def test_rate_wait_is_wall_clock_not_summed_over_threads() -> None:
    with LoopbackServer(account_answer) as server:
        client = OutreachClient(KEY, server.url + "/api/v1", rate_limit_per_minute=1200)  # 20 a second, burst 4
        started = time.monotonic()
        threads = [threading.Thread(target=lambda: [client.get("/account") for _ in range(10)]) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        snap = client.stats.snapshot()
        client.close()
    assert snap["requests"] == 40
    assert 1.0 < snap["rate_wait_s"] <= elapsed + 0.05
    assert snap["rate_wait_thread_s"] > 2.5 * snap["rate_wait_s"]


def test_a_line_break_inside_the_key_setting_is_named_not_split_into_two_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from flows.cli import app

    with LoopbackServer(account_answer) as server:
        monkeypatch.setenv("SOURCES__OUTREACH__BASE_URL", server.url + "/api/v1")
        monkeypatch.setenv("SOURCES__OUTREACH__API_KEY", "sk_test_SECRET\n_1234567890\n")
        result = CliRunner().invoke(app, ["sync", "--duckdb", str(tmp_path / "w.duckdb"), "--no-progress"])
        assert server.requests == []
    assert result.exit_code == 1
    assert result.output == (
        "error: the API key has a line break at character 15 of 26: copy the key again exactly "
        "(API keys are printable ASCII without spaces)\n"
    )
