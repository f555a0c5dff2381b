"""Terminal output shared by the commands: JSON pretty on a terminal and compact in a pipe, and
text chainform does not control made inert on a terminal (byte-exact in a pipe)."""

from __future__ import annotations

import errno
import json
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def stderr_is_terminal() -> bool:
    """Whether people read stderr (progress bars, warnings said once); not a pipe or a file."""
    return sys.stderr.isatty()


_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))  # C0, DEL, C1
_VISIBLE = {code: f"\\x{code:02x}" for code in _CONTROLS if code not in (0x09, 0x0A)}  # tab, newline kept
_JSON_VISIBLE = {code: f"\\u{code:04x}" for code in _CONTROLS if code >= 0x7F}  # JSON escapes C0 itself


def visible_controls(text: str) -> str:
    """`text` with each control character (C0 but newline and tab, DEL, C1) written as `\\xNN`
    (ESC as `\\x1b`): a terminal shows it instead of obeying it."""
    return text.translate(_VISIBLE)


def untrusted(text: str, *, err: bool = False) -> str:
    """Text chainform does not control (model answers, tool results, logged rows, documents, errors
    that quote them) as it goes to stdout (`err`: stderr): with its controls made visible when
    that stream is a terminal, so it cannot move the cursor, clear the screen, set the title or
    write the clipboard; exactly as given into a pipe or a file. Character by character: an
    escape sequence split across streamed chunks is made inert too."""
    terminal = stderr_is_terminal() if err else stdout_is_terminal()
    return visible_controls(text) if terminal else text


def echo_untrusted(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Print untrusted text (see `untrusted`). A pipe gets it byte for byte: click.echo alone
    would strip what looks like a colour code from it there."""
    click.echo(untrusted(text, err=err), err=err, nl=nl, color=True)


def format_json(value: Any, *, pretty: bool | None = None) -> str:
    """Indented for people (terminal), one line for programs (pipe); `pretty` forces either.
    JSON escapes C0 controls; on a terminal DEL and C1 are escaped too (`\\u009b`)."""
    from chainform.store._serialize import to_jsonable

    terminal = stdout_is_terminal()
    if pretty is None:
        pretty = terminal
    if pretty:
        text = json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)
    else:
        text = json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))
    return text.translate(_JSON_VISIBLE) if terminal else text


def echo_json(value: Any, *, pretty: bool | None = None) -> None:
    click.echo(format_json(value, pretty=pretty))


def console(*, err: bool = False) -> Console:
    """A rich console on the current stdout/stderr (click's test runner swaps those streams)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """The reader went away: raised on, so the command ends as every command does then
            (quietly, exit 0; rich's own way exits 1)."""
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    stream = sys.stderr if err else sys.stdout
    return _Console(
        file=stream,
        # Piped output is read by programs and greps: never truncate it to an 80-column guess.
        width=None if stream.isatty() else 200,
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
