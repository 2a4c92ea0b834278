"""The PostgreSQL warehouse's credentials, read the dlt way (`DESTINATION__POSTGRES__CREDENTIALS`, or
`[destination.postgres] credentials` in .dlt/secrets.toml), and why they cannot be used when they cannot: read
before the first request, and never quoted (the URL holds the password)."""

from __future__ import annotations

from typing import Any

from pipelines.core.errors import ConfigError
from pipelines.core.root_cause import chain, root_cause


def read_credentials() -> Any:
    """dlt's resolved PostgreSQL credentials, through dlt's public destination factory (holds the password)."""
    import dlt
    from dlt.common.configuration.exceptions import InvalidNativeValue

    creds = None
    try:
        creds = dlt.destinations.postgres().configuration(None, accept_partial=True).credentials  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - any other failure to resolve counts as missing, said below
        if any(isinstance(e, InvalidNativeValue) for e in chain(exc)):
            # `from None`: dlt's errors around it may quote the value, password included
            raise ConfigError(_unreadable_url(exc)) from None
    if creds is not None and "@" in (creds.host or ""):
        # the URL's first @ ended the password: the rest of it became the host, which errors would then show
        raise ConfigError(
            "DESTINATION__POSTGRES__CREDENTIALS holds an @ in its user or password, read as the start of the "
            "host: percent-encode it there as %40 (postgresql://user:p%40ss@host:5432/database)"
        )
    if creds is not None and not creds.is_resolved() and creds.password is None:
        if creds.username and creds.host and creds.database:
            # no password: trust or peer authentication, or ~/.pgpass; dlt requires one, libpq takes an
            # empty one as none given and looks it up itself
            creds.password = ""
            creds.resolve()
    if creds is None or not creds.is_resolved():
        raise ConfigError(
            "PostgreSQL credentials missing or incomplete: set DESTINATION__POSTGRES__CREDENTIALS "
            "(postgresql://user:password@host:5432/database) or [destination.postgres] credentials "
            "in .dlt/secrets.toml"
        )
    return creds


def _unreadable_url(exc: BaseException) -> str:
    """Why dlt could not read the credentials' URL, never quoting it (it holds the password). The parser converts
    the port with int(): a ValueError at the root is a port that is not a number, or a password whose unencoded
    `@` or `:` moved where the parser looks for the port."""
    why = (
        "what it reads as the port is not a number: give the server's port, and percent-encode"
        if isinstance(root_cause(exc), ValueError)
        else "percent-encode"
    )
    return (
        "DESTINATION__POSTGRES__CREDENTIALS is not a connection URL dlt can read "
        f"(postgresql://user:password@host:5432/database): {why} @ : / # ? % in the user and password "
        "(@ as %40, : as %3A, / as %2F, # as %23)"
    )
