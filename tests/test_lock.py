"""The environment the suite runs in is the one requirements.lock pins (`make setup` installs with it as
constraints), compiled at install, and the lock keeps within pyproject.toml's ranges."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line.strip())
        if match:
            pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def test_every_locked_package_is_installed_at_its_locked_version() -> None:
    pins = _locked()
    assert {"duckdb", "dlt", "prefect", "dbt-core", "pytest-xdist"} <= set(pins)
    wrong = {}
    for name, version in pins.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "missing"
        if installed != version:
            wrong[name] = (version, installed)
    assert not wrong, f"installed differs from requirements.lock (locked, installed): {wrong}; run `make setup`"


def test_the_lock_satisfies_the_declared_ranges() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _locked()
    declared = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    outside = []
    for text in declared:
        requirement = Requirement(text)
        version = pins.get(canonicalize_name(requirement.name))
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            outside.append((text, version))
    assert not outside, f"requirements.lock is outside pyproject.toml's ranges: {outside}; run `make upgrade`"


def test_the_installed_packages_carry_their_compiled_bytecode() -> None:
    """`make setup` compiles at install: with PYTHONDONTWRITEBYTECODE set (as on CI), a package without its .pyc
    files is compiled again by every process that imports it."""
    import importlib.util

    import dbt.cli.main
    import prefect.flows

    missing = [
        module.__name__
        for module in (dbt.cli.main, prefect.flows)
        if not Path(importlib.util.cache_from_source(str(module.__file__))).is_file()
    ]
    assert not missing, f"no compiled bytecode for {missing}: run `make clean setup`"
