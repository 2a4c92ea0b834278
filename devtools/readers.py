"""Other DuckDB readers, as BI tools ship them: older Python `duckdb` releases in their own cached
virtual environments, and DuckDB's Node binding (`@duckdb/node-api`, the family Evidence uses).

Each reader opens a database file read-only and reports a census: every table (catalog-less
``schema.table``) with its row count. Environments are cached outside the clone, under
``$OUTREACH_CACHE_DIR`` (default ``$XDG_CACHE_HOME/outreach-elt`` or ``~/.cache/outreach-elt``), in
folders named by what they install, so a fresh clone (CI) on the same machine installs nothing again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path


def _cache_root() -> Path:
    explicit = os.environ.get("OUTREACH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "outreach-elt"


CACHE = _cache_root() / "readers"

#: Python duckdb releases that BI tools still ship (Metabase's driver, pinned CLIs and notebooks)
OLD_PYTHON_DUCKDB = ("1.1.3", "1.4.1")
#: pinned, so the cached folder (named by it) always holds what the name says
NODE_PACKAGE = "@duckdb/node-api@1.5.6-r.1"

_PY_CENSUS = textwrap.dedent(
    """
    import json, sys
    import duckdb
    con = duckdb.connect(sys.argv[1], read_only=True)
    tables = con.execute(
        "select table_schema, table_name from information_schema.tables "
        "where table_type = 'BASE TABLE' and table_catalog = current_database() order by 1, 2"
    ).fetchall()
    catalog = con.execute("select current_database()").fetchone()[0]
    census = {}
    for schema, name in tables:  # three-part names: a file named like its schema (outreach.duckdb) is ambiguous
        census[f"{schema}.{name}"] = con.execute(f'select count(*) from "{catalog}"."{schema}"."{name}"').fetchone()[0]
    print(json.dumps({"version": duckdb.__version__, "tables": census}))
    """
)

_NODE_CENSUS = textwrap.dedent(
    """
    import { DuckDBInstance, version } from '@duckdb/node-api';
    const instance = await DuckDBInstance.create(process.argv[2], { access_mode: 'READ_ONLY' });
    const con = await instance.connect();
    const list = await con.runAndReadAll(
      "select table_schema, table_name from information_schema.tables " +
      "where table_type = 'BASE TABLE' and table_catalog = current_database() order by 1, 2");
    const tables = {};
    const catalog = (await con.runAndReadAll("select current_database()")).getRows()[0][0];
    for (const [schema, name] of list.getRows()) {
      const n = await con.runAndReadAll(`select count(*) from "${catalog}"."${schema}"."${name}"`);
      tables[`${schema}.${name}`] = Number(n.getRows()[0][0]);
    }
    console.log(JSON.stringify({ version: version(), tables }));
    """
)


class ReaderUnavailable(RuntimeError):
    """A reader could not be installed (no registry access, no node)."""


@dataclass(frozen=True)
class Reader:
    """One way to open a DuckDB file; ``census(path)`` gives {"schema.table": rows}."""

    name: str
    argv: tuple[str, ...]

    def census(self, path: Path) -> dict[str, int]:
        out = subprocess.run([*self.argv, str(path)], capture_output=True, text=True, timeout=120, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{self.name} could not read {path}: {out.stderr.strip()[-800:]}")
        report = json.loads(out.stdout.strip().splitlines()[-1])
        return {str(k): int(v) for k, v in report["tables"].items()}


def _run(argv: list[str], cwd: Path | None = None) -> None:
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise ReaderUnavailable(f"{' '.join(argv[:3])} failed: {(out.stderr or out.stdout).strip()[-800:]}")


def python_reader(version: str) -> Reader:
    """`duckdb==version` in its own cached virtual environment."""
    env = CACHE / f"py{sys.version_info.major}.{sys.version_info.minor}-duckdb-{version}"
    python = env / "bin" / "python"
    stamp = env / ".installed"
    if not stamp.exists():
        shutil.rmtree(env, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(env)])
        _run([str(python), "-m", "pip", "install", "--quiet", f"duckdb=={version}"])
        stamp.touch()
    script = CACHE / "census.py"
    script.write_text(_PY_CENSUS)
    return Reader(f"python duckdb {version}", (str(python), str(script)))


def current_reader() -> Reader:
    """The duckdb release the project itself runs (the newest)."""
    script = CACHE / "census.py"
    CACHE.mkdir(parents=True, exist_ok=True)
    script.write_text(_PY_CENSUS)
    return Reader("python duckdb (project)", (sys.executable, str(script)))


def node_reader() -> Reader:
    """DuckDB's Node binding from npm, in a cached folder."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise ReaderUnavailable(
            "node and npm are needed for the Node reader: run `make test` (devtools/system-deps.sh)"
        )
    folder = CACHE / ("node-" + NODE_PACKAGE.replace("/", "-").replace("@", ""))
    stamp = folder / ".installed"
    if not stamp.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "package.json").write_text('{"name": "outreach-readers", "private": true, "type": "module"}\n')
        _run([npm, "install", "--silent", "--no-audit", "--no-fund", NODE_PACKAGE], cwd=folder)
        stamp.touch()
    script = folder / "census.mjs"
    script.write_text(_NODE_CENSUS)
    return Reader("node @duckdb/node-api", (node, str(script)))


def all_readers() -> list[Reader]:
    """Every reader the compatibility test uses, installing what is missing."""
    return [*(python_reader(v) for v in OLD_PYTHON_DUCKDB), current_reader(), node_reader()]
