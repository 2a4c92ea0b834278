"""Text from the service shown on a terminal or in a log line: a name is the service's, and may hold anything."""

from __future__ import annotations

import re

#: C0 and C1 control characters (a newline, an escape sequence's ESC, a carriage return) and DEL
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown(text: object) -> str:
    """`text` as one line that moves nothing on a terminal: each control character written as `\\xNN`. A name with
    a newline started a line of its own (one that could read "all checks passed"), and an escape sequence could
    clear the screen or retitle the window."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", str(text))
