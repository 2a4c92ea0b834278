"""The shell blocks of the project's docs, for the tests that run them as written.

A fenced block in a checked document is preceded by one marker line:

* ``<!-- tested: TAG -->``: a test runs the block (it calls ``doc_block(path, "TAG")``);
* ``<!-- not run: REASON -->``: nobody runs it, for the reason given (e.g. it needs a real API key).

``tests/test_docs_commands.py`` fails on a shell block with neither, on a ``tested`` tag that no test
reads, and on a fence without a language (which could hide commands).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the documents whose every command is run by a test or marked with a reason
CHECKED_DOCS = ("README.md", "pipelines/README.md", "flows/README.md", "docs/DESIGN.md", "docs/CATALOG.md")
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console", "zsh"})

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"<!--\s*(tested|not run):\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text and the marker line before it (if any)."""

    path: str
    line: int
    language: str
    text: str
    marker: str | None
    value: str

    @property
    def is_shell(self) -> bool:
        return self.language in SHELL_LANGUAGES


def blocks(path: str) -> list[Block]:
    """Every fenced block of a document (path relative to the repository root)."""
    text = (ROOT / path).read_text()
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        found.append(
            Block(
                path=path,
                line=text[: match.start()].count("\n") + 1,
                language=match.group(1).strip(),
                text=match.group(2),
                marker=marker.group(1) if marker else None,
                value=marker.group(2) if marker else "",
            )
        )
    return found


def doc_block(path: str, tag: str) -> str:
    """The text of the shell block marked ``<!-- tested: tag -->`` in a document."""
    tagged = [b for b in blocks(path) if b.marker == "tested" and b.value == tag]
    assert len(tagged) == 1, f"{path} has {len(tagged)} blocks marked <!-- tested: {tag} -->, expected 1"
    return tagged[0].text


def as_run_here(script: str, bin_dir: Path, substitutions: dict[str, str] | None = None) -> str:
    """A block as this test environment runs it: ``.venv/bin/`` is the running interpreter's bin directory,
    placeholders (``<key>``...) are replaced; every other character is the document's."""
    script = script.replace(".venv/bin/", f"{bin_dir}/")
    for placeholder, value in (substitutions or {}).items():
        assert placeholder in script, f"the block no longer contains {placeholder!r}:\n{script}"
        script = script.replace(placeholder, value)
    return script
