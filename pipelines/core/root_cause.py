"""The real cause of a failure: the exception chain walked to its root (through dlt's wrappers), and an
OSError said in one line by its errno, never by matching message text."""

from __future__ import annotations

import errno

from pipelines.core.shown import shown


def chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what it wraps: dlt's ``.exception`` (PipelineStepFailed and friends), then ``__cause__``,
    then an unsuppressed ``__context__``; outermost first, each once."""
    out: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out.append(current)
        wrapped = getattr(current, "exception", None)
        if isinstance(wrapped, BaseException):
            current = wrapped
        elif current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None
    return out


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of :func:`chain`."""
    return chain(exc)[-1]


def explain_oserror(error: OSError) -> str | None:
    where = f" ({error.filename})" if error.filename else ""
    # a copy or a rename that cannot write names its source first: the disk meant is its destination's
    written = f" ({error.filename2 or error.filename})" if error.filename else ""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on device{written}: free space on that disk (or point the path elsewhere) and rerun"
    if error.errno == errno.EROFS:
        return f"read-only file system{written}: point the path at a writable directory (or remount it read-write)"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied{where}: give this user write access there, or choose another path"
    if error.errno == errno.EISDIR:
        return f"a directory is where a file should be{where}: give a file path, or move the directory away"
    if error.errno == errno.ENOTDIR:
        return f"a part of the path{where} is a file, not a directory: choose another path"
    if error.errno == errno.EFBIG:
        return f"file too large{where}: a file-size limit (ulimit -f) stopped the write; raise it and rerun"
    if error.errno == errno.ENOENT:
        return f"no such file or directory{where}: check the path"
    if error.errno == errno.EEXIST:
        return f"a file is in the way{where}: move it, or choose another path"
    if error.errno == errno.ENAMETOOLONG:
        return f"a name in the path is too long{where}: file systems take 255 bytes a name; choose a shorter path"
    return None


def explain_sqlstate(error: BaseException) -> str | None:
    """A PostgreSQL error's line with the fix, by its SQLSTATE (psycopg2's `pgcode`), never by its text."""
    if getattr(error, "pgcode", None) == "42501":  # insufficient_privilege
        return (
            f"{one_line(error)}: the PostgreSQL user lacks that privilege: grant it (a first sync creates the "
            "`outreach` schema and a build `reporting`: `GRANT CREATE ON DATABASE <database> TO <user>`), or "
            "connect as a user who has it (DESTINATION__POSTGRES__CREDENTIALS)"
        )
    return None


def one_line(error: BaseException, limit: int = 300, *, all_lines: bool = False) -> str:
    """An error's message in one line, at most `limit` characters (a longer one cut, ending in …); the error's type
    name when it has no message.
    Its first non-empty line (what follows is most libraries' detail), or with `all_lines` every line joined
    (dbt puts the cause below a generic first line). Every one-line error of the product quotes a library's
    message through this."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = shown(" ".join(lines) if all_lines else (lines[0] if lines else ""))  # a library may quote the service
    if len(text) > limit:  # marked: a number cut short reads as whole
        cut = text[: limit - 1]
        space = cut.rfind(" ")
        if space >= max(1, limit - 40):  # between words when one ends near the limit; a long path keeps what fits
            cut = cut[:space]
        text = cut + "…"
    return text or type(error).__name__
