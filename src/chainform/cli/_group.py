"""The top-level click group (`cli`, its class `DefaultGroup`): a default `prompt` command, `--debug`
anywhere, errors as exit codes; chainform/cli/__init__.py adds the commands.

Users type `chainform "question" -m model` as with `llm`: anything that is not a subcommand name
goes to the `prompt` command. Errors become one line on stderr and a distinct exit code, so scripts
can tell a usage mistake from a provider outage from a schema the model never satisfied.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click
import click_default_group

from chainform._version import __version__

EXIT_OTHER = 1
EXIT_USAGE = 2
EXIT_PROVIDER = 3
EXIT_STRUCTURED = 4
EXIT_CHAIN = 5
EXIT_BELOW_FLOOR = 6  # `eval --fail-under`: a figure fell below its floor
EXIT_COST_CAP = 7  # `eval --max-cost` stopped the eval before every row ran
EXIT_WAITING = 8  # the chain waits for a person to approve tool calls (`chainform resume`)
EXIT_INTERRUPTED = 130

DEFAULT_COMMAND = "prompt"
_DEBUG_KEY = "chainform.debug"


def exit_code_for(exc: BaseException) -> int:
    """The exit code that names the phase which failed."""
    from chainform import errors
    from chainform.chain._approval import ChainWaitingError
    from chainform.chain._journal import ResumeError
    from chainform.chain._spec import SpecError
    from chainform.store import StoreError

    if isinstance(
        exc,
        errors.SchemaError
        | click.UsageError
        | StoreError
        | errors.HomeError
        | errors.AttachmentError
        | errors.HostedToolError
        | errors.PricingError
        | ResumeError
        | SpecError,
    ):
        return EXIT_USAGE
    if isinstance(exc, ChainWaitingError):
        return EXIT_WAITING
    if isinstance(exc, errors.ProviderError | errors.MissingKeyError | errors.ModelNotFoundError):
        return EXIT_PROVIDER
    if isinstance(exc, errors.StructuredOutputError | errors.FormattingError):
        return EXIT_STRUCTURED
    if isinstance(exc, errors.ChainError | errors.ToolError | errors.GuardrailError):
        return EXIT_CHAIN
    if isinstance(exc, KeyboardInterrupt | errors.ChainInterruptedError):
        return EXIT_INTERRUPTED
    return EXIT_OTHER


def error_line(exc: BaseException) -> str:
    """One line (no traceback) that says what failed; expected errors read as sentences."""
    from chainform.errors import ChainformError

    if isinstance(exc, KeyboardInterrupt):
        return "Interrupted."
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
        if "--debug" in args[: args.index("--") if "--" in args else len(args)]:
            args.remove("--debug")
            ctx.meta[_DEBUG_KEY] = True
        self.default_if_no_args = not sys.stdin.isatty()  # `echo question | chainform`
        rest: list[str] = super().parse_args(ctx, args)
        return rest

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[PROMPT] [OPTIONS] | COMMAND [ARGS]...")

    def invoke(self, ctx: click.Context) -> Any:
        # Model text may hold lone surrogates: print them escaped rather than lose the answer.
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            if debug_enabled(ctx):
                raise
            if isinstance(exc, click.UsageError):
                raise
            click.echo(error_line(exc), err=True)
            sys.stdout.flush()
            raise click.exceptions.Exit(exit_code_for(exc)) from None


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="chainform")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors (works anywhere on the line).")
def cli(debug: bool) -> None:
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
