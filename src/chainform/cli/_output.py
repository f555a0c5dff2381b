"""Terminal output shared by the commands: JSON pretty on a terminal and compact in a pipe."""

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


def format_json(value: Any, *, pretty: bool | None = None) -> str:
    """Indented for people (terminal), one line for programs (pipe); `pretty` forces either."""
    from chainform.store._serialize import to_jsonable

    if pretty is None:
        pretty = stdout_is_terminal()
    if pretty:
        return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)
    return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))


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
