"""Where a setting's value comes from, by dlt's providers (an environment variable, a `.dlt/*.toml` file):
`outreach check` shows it beside each value, and the error about a value that cannot be read names it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipelines.core.root_cause import chain, one_line, root_cause

#: a field's type -> what its value must be, in words
KINDS: dict[Any, str] = {bool: "true or false", int: "a whole number", float: "a number", list: "a list"}


def origin(name: str, sections: Sequence[str], *, secret: bool) -> tuple[Any, str]:
    """(value, where it came from) of ``[<sections>] <name>`` by dlt's providers; (None, "") if unset."""
    import dlt

    accessor = dlt.secrets if secret else dlt.config
    try:
        providers = accessor.config_providers
    except Exception:  # noqa: BLE001 - a settings file that does not parse: the problem line says which
        return None, "unreadable: a settings file does not parse (below)"
    for provider in providers:
        if provider.is_empty:
            continue
        try:
            value, _ = provider.get_value(name, Any, None, *sections)
        except Exception as exc:  # noqa: BLE001 - any provider failure is the answer: unreadable, with its type
            return None, f"{provider.name}: unreadable ({type(exc).__name__})"
        if value is not None:
            if provider.name == "Environment Variables":
                return value, "env " + "__".join(part.upper() for part in (*sections, name))
            return value, _file_of(provider, provider.get_value_location(name, None, *sections))
    return None, ""


def uncoercible(exc: BaseException, sections: Sequence[str]) -> str | None:
    """The line for a value dlt could not read as its field's type (``workers = "abc"``): the setting, where it
    was set and what it must be; never the value, which may be a secret. None for any other error."""
    from dlt.common.configuration.exceptions import ConfigValueCannotBeCoercedException

    found = next((e for e in chain(exc) if isinstance(e, ConfigValueCannotBeCoercedException)), None)
    if found is None:
        return None
    where = origin(found.field_name, sections, secret=False)[1] or origin(found.field_name, sections, secret=True)[1]
    kind = KINDS.get(getattr(found.hint, "__origin__", found.hint), f"of type {found.hint}")
    return f"[{'.'.join(sections)}] {found.field_name} ({where or 'given'}) is not {kind}: set it to {kind}"


def _file_of(provider: Any, location: str) -> str:
    """The file a toml provider read a value from: dlt names it by file name (``global:`` for the global
    dir); its `present_locations` hold the paths."""
    is_global = location.startswith("global:")
    name = location.removeprefix("global:") or provider.name
    for path in provider.present_locations:
        if Path(path).name == name and is_global != str(path).startswith("."):
            return relative(path)
    return name


def relative(location: str) -> str:
    """A path relative to the working directory when under it."""
    try:
        return str(Path(location).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return location


def unreadable(exc: BaseException, sections: Sequence[str], label: str) -> str:
    """The line for settings (`label`, e.g. "[alerts]") dlt could not read. A TOML file that does not parse: which
    file and where (the parser's line and column, never its text, which quotes the file: a secrets.toml holds keys);
    a value of the wrong kind: `uncoercible`."""
    from dlt.common.configuration.providers.toml import TomlProviderReadException

    toml = next((e for e in chain(exc) if isinstance(e, TomlProviderReadException)), None)
    if toml is None:
        return uncoercible(exc, sections) or f"{label} settings cannot be read: {one_line(exc)}"
    root = root_cause(exc)
    where = f"line {root.line}, column {root.col}" if hasattr(root, "line") and hasattr(root, "col") else "somewhere"
    return (
        f"{toml.file_name} is not valid TOML ({type(root).__name__} at {where}; read from "
        f"{' or '.join(toml.full_paths)}): fix the file"
    )
