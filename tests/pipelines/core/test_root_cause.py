"""One line of an error's message (pipelines/core/root_cause.py)."""

from __future__ import annotations

from pipelines.core.root_cause import one_line


def test_a_long_message_is_cut_between_words_and_says_so() -> None:
    """Cut at a fixed length, `... from location 4468736` read `... from location )` inside a line's brackets."""
    error = OSError("attempted to read 262144 bytes from location 4468736")
    assert one_line(error) == str(error)
    assert one_line(error, 47) == "attempted to read 262144 bytes from location…"
    assert len(one_line(error, 47)) <= 47
    assert one_line(OSError("x" * 50), 10) == "x" * 9 + "…"  # no space to cut at
    long_path = "cannot open /" + "a" * 400
    assert one_line(OSError(long_path)) == long_path[:299] + "…"  # a path is kept as far as it fits, not dropped
    assert one_line(ValueError("first\n\n  second  ")) == "first"
    assert one_line(ValueError("first\nsecond"), all_lines=True) == "first second"
    assert one_line(ValueError("")) == "ValueError"


def test_a_message_that_quotes_the_service_moves_nothing_on_a_terminal() -> None:
    """A library's message may quote the service (a 422's text, a name): its escape sequences reached the terminal."""
    from pipelines.core.errors import invalid_request_error

    assert one_line(ValueError("bad \x1b[2Jname\nsecond line")) == "bad \\x1b[2Jname"
    refused = invalid_request_error("POST", "/hooks", {"message": "no\x1b]0;x\x07", "errors": {"f": ["bad\rworse"]}})
    assert (
        str(refused)
        == "POST /hooks refused (422): no\\x1b]0;x\\x07 [f: bad\\x0dworse]: fix the listed fields and retry"
    )
