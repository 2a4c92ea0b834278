"""Discover the SQL models and order them from the tables each one reads (parsed with sqlglot)."""

from __future__ import annotations

from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import sqlglot
from sqlglot import exp

from models.errors import ModelBuildError

REPORTING = "reporting"
RAW = "outreach"
MODELS_DIR = Path(__file__).resolve().parent

#: subfolder -> how its models are materialised
KINDS = {"staging": "view", "marts": "table"}


@dataclass(frozen=True)
class Model:
    """One SQL file: `models/<folder>/<name>.sql` builds `reporting.<name>`."""

    name: str
    kind: str  # "view" or "table"
    path: Path
    sql: str
    depends_on: frozenset[str] = field(default_factory=frozenset)  # other models
    raw_tables: frozenset[str] = field(default_factory=frozenset)  # tables of schema `outreach`


def referenced_tables(sql: str, path: Path | str = "<sql>") -> set[tuple[str, str]]:
    """(schema, table) pairs a query reads, leaving out its own CTE names."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise ModelBuildError(str(path), f"sqlglot cannot parse it: {str(exc).splitlines()[0]}") from exc
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    return {
        (table.db.lower(), table.name.lower())
        for table in tree.find_all(exp.Table)
        if table.name and (table.db or table.name not in ctes)
    }


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'



def load_models(models_dir: Path = MODELS_DIR) -> list[Model]:
    """Every model under staging/ and marts/, in build order (dependencies first)."""
    found: dict[str, Model] = {}
    for folder, kind in KINDS.items():
        for path in sorted((models_dir / folder).glob("*.sql")):
            name = path.stem
            if name in found:
                raise ModelBuildError(str(path), f"a model named {name} already exists in {found[name].path}")
            sql = path.read_text().strip().rstrip(";")
            refs = referenced_tables(sql, path)
            found[name] = Model(
                name=name,
                kind=kind,
                path=path,
                sql=sql,
                depends_on=frozenset(t for s, t in refs if s == REPORTING),
                raw_tables=frozenset(t for s, t in refs if s == RAW),
            )
    for model in found.values():
        unknown = sorted(model.depends_on - found.keys())
        if unknown:
            raise ModelBuildError(
                str(model.path), f"reads reporting.{unknown[0]}, which no model builds (add models/*/{unknown[0]}.sql)"
            )
    sorter = TopologicalSorter({m.name: set(m.depends_on) for m in found.values()})
    try:
        order = list(sorter.static_order())
    except CycleError as exc:
        cycle = " -> ".join(exc.args[1])
        raise ModelBuildError(str(models_dir), f"models depend on each other in a cycle: {cycle}") from exc
    return [found[name] for name in order]


def macro_files(models_dir: Path = MODELS_DIR) -> list[Path]:
    """SQL files of macros, created before any model."""
    return sorted((models_dir / "macros").glob("*.sql"))


def data_test_files(models_dir: Path = MODELS_DIR) -> list[Path]:
    """SQL data tests: each must return no rows."""
    return sorted((models_dir / "tests").glob("*.sql"))
