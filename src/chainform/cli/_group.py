"""The top-level click group (`cli`, its class `DefaultGroup`): a default `prompt` command, `--debug`
anywhere, errors as exit codes; chainform/cli/__init__.py adds the commands.

Users type `chainform "question" -m model` as with `llm`: anything that is not a subcommand name
goes to the `prompt` command. Errors become one line on stderr and a distinct exit code, so scripts
can tell a usage mistake from a provider outage from a schema the model never satisfied.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import sys
import warnings
from typing import Any

import click
import click_default_group

from chainform._version import __version__
from chainform.cli._exit import ExitCode, exit_code_for, exit_with

EXIT_OTHER = ExitCode.OTHER
EXIT_USAGE = ExitCode.USAGE
EXIT_PROVIDER = ExitCode.PROVIDER
EXIT_STRUCTURED = ExitCode.STRUCTURED
EXIT_CHAIN = ExitCode.CHAIN
EXIT_BELOW_FLOOR = ExitCode.BELOW_FLOOR
EXIT_COST_CAP = ExitCode.COST_CAP
EXIT_WAITING = ExitCode.WAITING
EXIT_INTERRUPTED = ExitCode.INTERRUPTED

DEFAULT_COMMAND = "prompt"
_DEBUG_KEY = "chainform.debug"
_VERBOSE_KEY = "chainform.verbose"
_ISOLATION_SHOWN = "chainform.isolation-warning-shown"
_ISOLATION = "chainform: the python tool runs with isolation "
_PYTHON_FORMAT = warnings.formatwarning
_BARE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def error_line(exc: BaseException) -> str:
    """One line (no traceback) that says what failed; expected errors read as sentences."""
    from chainform.errors import ChainformError, MissingKeyError

    if isinstance(exc, KeyboardInterrupt):
        return "Interrupted."
    if isinstance(exc, MissingKeyError) and exc.key_name is not None:  # the library's names Python's way
        env = f", set ${exc.env_var}" if exc.env_var else ""
        return (
            f"Error: No API key for {exc.key_name!r}: pass --key KEY{env}, "
            f"or store one with `chainform keys set {exc.key_name}`."
        )
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ChainformError | OSError | ValueError):
        return f"Error: {text}"
    return f"Error: {type(exc).__name__}: {text}"


def debug_enabled(ctx: click.Context | None = None) -> bool:
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is not None and ctx.find_root().meta.get(_DEBUG_KEY):
        return True
    return os.environ.get("CHAINFORM_DEBUG", "") not in ("", "0")


class DefaultGroup(click_default_group.DefaultGroup):  # type: ignore[misc]  # untyped library
    """click-default-group's group (anything that is no subcommand goes to `prompt`), plus
    `--debug` anywhere on the line and `prompt` reading stdin when no argument is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("default", DEFAULT_COMMAND)
        super().__init__(*args, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = list(args)
        end = args.index("--") if "--" in args else len(args)
        for flags, key in ((("--debug",), _DEBUG_KEY), (("-v", "--verbose"), _VERBOSE_KEY)):
            for flag in flags:
                if flag in args[:end]:
                    args.remove(flag)
                    end -= 1
                    ctx.meta[key] = True
        self.default_if_no_args = not sys.stdin.isatty()  # `echo question | chainform`
        if len(args) == 1 and _BARE_WORD.fullmatch(args[0]) and args[0] not in self.commands:
            self._no_such_command(ctx, args[0])
        rest: list[str] = super().parse_args(ctx, args)
        return rest

    def _no_such_command(self, ctx: click.Context, word: str) -> None:
        """`chainform WORD` alone, WORD no command: a mistyped command far more often than a prompt
        of one word, so it is refused (one line, exit 2) with the nearest command names."""
        import difflib

        names = [name for name in self.list_commands(ctx) if name != DEFAULT_COMMAND]
        near = difflib.get_close_matches(word.lower(), names, n=3, cutoff=0.5) or names
        click.echo(
            f"Error: no such command {word!r} (nearest: {', '.join(near)}); "
            f"for a one-word prompt: chainform prompt {word}, or chainform -- {word}",
            err=True,
        )
        raise exit_with(ExitCode.USAGE)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[PROMPT] [OPTIONS] | COMMAND [ARGS]...")

    def invoke(self, ctx: click.Context) -> Any:
        # Model text may hold lone surrogates: print them escaped rather than lose the answer.
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")
        python_format = warnings.formatwarning
        warnings.formatwarning = functools.partial(warning_line, ctx=ctx)  # tools warn from other threads
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except OSError as exc:
            if exc.errno != errno.EPIPE or debug_enabled(ctx):
                return self._failed(ctx, exc)
            _quiet_stdout()  # the reader closed the pipe (`| head -1`): done, as git log is
            raise exit_with(ExitCode.OK) from None
        except (Exception, KeyboardInterrupt) as exc:
            return self._failed(ctx, exc)
        finally:
            warnings.formatwarning = python_format

    def _failed(self, ctx: click.Context, exc: BaseException) -> Any:
        """An error as one `Error:` line and its exit code (a traceback with --debug)."""
        if debug_enabled(ctx) or isinstance(exc, click.UsageError):
            raise exc
        from chainform.cli._output import echo_untrusted

        echo_untrusted(error_line(exc), err=True)  # it may quote a model's answer or a document
        sys.stdout.flush()
        raise exit_with(exit_code_for(exc)) from None


def warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
    *,
    ctx: click.Context | None = None,
) -> str:
    """A warning as one `Warning:` line: Python's default adds the file, line and source that raised
    it, which `--debug` / `CHAINFORM_DEBUG=1` keep. The python tool's isolation warning is said once
    per command, short (`-v`: what is missing), and not at all on a pipe unless `-v`."""
    ctx = ctx or click.get_current_context(silent=True)
    if debug_enabled(ctx) or "--debug" in sys.argv[1:]:
        return _PYTHON_FORMAT(message, category, filename, lineno, line)
    from chainform.cli._output import stderr_is_terminal, untrusted

    text = str(message)
    if not text.startswith(_ISOLATION):  # a tool's warning may quote what it read
        return f"Warning: {untrusted(text.removeprefix('chainform: '), err=True)}\n"
    root = ctx.find_root() if ctx is not None else None
    verbose = bool(root and root.meta.get(_VERBOSE_KEY))

    if (not verbose and not stderr_is_terminal()) or (root and root.meta.get(_ISOLATION_SHOWN)):
        return ""
    if root is not None:
        root.meta[_ISOLATION_SHOWN] = True
    detail = text.removeprefix(_ISOLATION)
    if verbose:
        return f"Warning: the python tool runs with isolation {detail}\n"
    return f"Warning: the python tool runs with isolation {detail.split(' ', 1)[0]}, not every OS guard (-v says which)\n"


def _quiet_stdout() -> None:
    """After the reader of stdout went away: what is still buffered goes nowhere, so neither the
    exit nor the interpreter's last flush reports the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind stdout (a test's captured stream)
        pass


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="chainform")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors (works anywhere on the line).")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Say more: warnings in full, on a pipe too (works anywhere on the line).",
)
def cli(debug: bool, verbose: bool) -> None:
    """Ask a model, let it call your tools, get back data that matches your schema.

    \b
    chainform "Capital of France?"                         # prompt (the default command)
    chainform "Invent a dog" --schema 'name, age int'      # structured output
    chainform "What time is it in Tokyo?" -T current_time --td
    chainform logs -n 3                                    # every call of recent chains
    """


class InputError(click.ClickException):
    """Input the command cannot use (a missing template, `chat` without a terminal): one `Error:`
    line and exit 2, without click's usage text."""

    exit_code = EXIT_USAGE
