"""`chainform chat`: an interactive session on one conversation (as llm's `chat`), with tools and
a schema on every turn.

Each line is one chain of the same conversation (one conversation id in the log; `-c`/`--cid`
go on with a logged one). `!multi` starts several lines, sent at `!end`; `!edit` writes the
message in $EDITOR; `!exit`, `!quit` or Ctrl-D end the session. Ctrl-C during a turn cancels
that turn (its finished calls stay logged, and it adds nothing to the history) and the session
goes on; at the prompt it clears the line.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any

import click

from chainform.cli._group import InputError, error_line
from chainform.cli._options import (
    chain_limit_option,
    model_option,
    model_options_option,
    provider_options,
    strategy_option,
)
from chainform.cli._tools import python_isolation_option

if TYPE_CHECKING:
    from chainform.models import Conversation
    from chainform.output._spec import OutputSpec

PROMPT = "> "
CONTINUATION = "... "
HELP = (
    "Type a message and press Enter. !multi: several lines until !end; !edit: write it in $EDITOR; "
    "!exit or Ctrl-D: end. Ctrl-C cancels a turn."
)


@click.command(name="chat")
@model_option("Model name or alias (default: $CHAINFORM_MODEL, `models default`, else local).")
@click.option("-s", "--system", help="System prompt, sent with every turn.")
@click.option(
    "--schema", help="Every answer as JSON of this schema (JSON, a .json file, the DSL or a saved id)."
)
@click.option(
    "-T", "--tool", "tool_names", multiple=True, help="Tool by name (see `chainform tools`); repeatable."
)
@click.option("--functions", multiple=True, help="Python file or code whose public functions become tools.")
@python_isolation_option("How the python tool confines code (see `chainform tools`).")
@chain_limit_option
@strategy_option
@model_options_option
@click.option(
    "-t", "--template", "template_name", help="Start from the saved template NAME (its prompt is not sent)."
)
@click.option(
    "-f",
    "--fragment",
    "fragment_values",
    multiple=True,
    help="Text sent with the first message: a file, URL or fragment id.",
)
@click.option(
    "--sf",
    "--system-fragment",
    "system_fragment_values",
    multiple=True,
    help="Like -f, in the system prompt of every turn.",
)
@click.option(
    "--allow-private-urls", is_flag=True, help="Let -f/--sf download from private or loopback addresses."
)
@click.option("--td", "--tools-debug", "tools_debug", is_flag=True, help="Show each tool call and result.")
@click.option("-c", "--continue", "continue_", is_flag=True, help="Go on with the most recent conversation.")
@click.option("--cid", "--conversation", "cid", help="Go on with the conversation with this id.")
@click.option("-n", "--no-log", is_flag=True, help="Do not log the session.")
@click.option("--key", help="API key (else environment, else `chainform keys set`).")
@click.option("--base-url", help="Provider endpoint (OpenAI-compatible servers, proxies).")
@provider_options
def chat_command(
    model_name: str | None,
    system: str | None,
    schema: str | None,
    tool_names: tuple[str, ...],
    functions: tuple[str, ...],
    python_isolation: str,
    chain_limit: int,
    strategy: str,
    option_pairs: tuple[tuple[str, str], ...],
    template_name: str | None,
    fragment_values: tuple[str, ...],
    system_fragment_values: tuple[str, ...],
    allow_private_urls: bool,
    tools_debug: bool,
    continue_: bool,
    cid: str | None,
    no_log: bool,
    key: str | None,
    base_url: str | None,
    provider_settings: dict[str, Any],
) -> None:
    """Chat with a model in the terminal: one conversation, tools and a schema on every turn."""
    from chainform.cli._fragments import resolve_fragment
    from chainform.cli._models import default_model
    from chainform.cli._prompt import _conversation, open_log, parse_options, resolve_model
    from chainform.cli._schemas import resolve_cli_schema
    from chainform.cli._templates import Template, load_template
    from chainform.cli._tools import cli_tools
    from chainform.store import message_with

    if not _stdin_is_terminal():
        raise InputError(
            "chat needs a terminal on stdin; from a pipe or a script send one prompt with "
            "`chainform PROMPT` and go on with `chainform PROMPT -c`"
        )
    if continue_ and cid:
        raise click.UsageError("give -c/--continue or --cid, not both")
    template = load_template(template_name) if template_name is not None else Template()
    system = system if system is not None else template.system
    options = {**template.checked_options(), **parse_options(option_pairs)}
    tools: list[Any] = cli_tools(
        (*template.tools, *tool_names), (*template.functions, *functions), python_isolation=python_isolation
    )
    fragment_values = (*template.fragments, *fragment_values)
    system_fragment_values = (*template.system_fragments, *system_fragment_values)
    store = open_log(
        required=not no_log or continue_ or cid is not None,
        wanted=schema is not None or bool(fragment_values or system_fragment_values),
    )
    output: OutputSpec | None = None
    if schema is not None:
        output = resolve_cli_schema(schema, store=store)
    elif template.schema is not None:
        output = template.output()
    fragments = [resolve_fragment(v, store, allow_private_urls=allow_private_urls) for v in fragment_values]
    system_fragments = [
        resolve_fragment(v, store, allow_private_urls=allow_private_urls) for v in system_fragment_values
    ]
    conversation_id, history = _conversation(store, continue_, cid)
    if system_fragments:  # in the history, so every turn sends it (and the log keeps it once)
        history = [message_with(system_fragments, None, role="system"), *history]
    name = model_name or template.model or default_model()
    model = resolve_model(name, key=key, base_url=base_url, **provider_settings)
    if store is not None:
        model.log_to(store)
    conversation = model.conversation(conversation_id, history)
    settings: dict[str, Any] = {
        "system": system,
        "tools": tools or None,
        "schema": output,
        "strategy": strategy,
        "chain_limit": chain_limit,
        "options": options or None,
        "log": not no_log,
    }
    click.echo(f"Chatting with {name} (conversation {conversation.id}). {HELP}", err=True)
    while True:
        text = _read_message()
        if text is None:
            break
        if text:
            sent = message_with(fragments, text) if fragments else text  # -f: with the first message
            fragments = []
            _turn(conversation, sent, settings, tools_debug=tools_debug, as_json=output is not None)


def _read_message() -> str | None:
    """The next message: a line, or the lines of `!multi` ... `!end`, or what `!edit` wrote; "" for
    nothing to send (an empty line, Ctrl-C at the prompt, `!help`); None to end the session."""
    try:
        line = input(PROMPT)
    except EOFError:
        click.echo()
        return None
    except KeyboardInterrupt:
        click.echo()
        return ""
    command = line.strip()
    if command in ("!exit", "!quit", "exit", "quit"):
        return None
    if command == "!help":
        click.echo(HELP, err=True)
        return ""
    if command == "!edit":
        return (click.edit("") or "").strip()
    if command == "!multi":
        lines: list[str] = []
        try:
            while (more := input(CONTINUATION)).strip() != "!end":
                lines.append(more)
        except (EOFError, KeyboardInterrupt):
            click.echo()
            return ""  # an unfinished message is dropped, not sent
        return "\n".join(lines).strip()
    return line.strip()


def _turn(
    conversation: Conversation, text: Any, settings: dict[str, Any], *, tools_debug: bool, as_json: bool
) -> None:
    """One chain of the conversation, streamed; Ctrl-C cancels it and the session goes on."""
    from chainform.cli._output import echo_untrusted, format_json
    from chainform.cli._show import show_tool_event
    from chainform.errors import ChainformError

    response = conversation.chain(text, stream=True, **settings)
    printed = ""
    try:
        for event in response.events(partials=False):
            if event.kind in ("tool_call", "tool_result", "attachment") and tools_debug:
                show_tool_event(event.kind, event.value)
            elif event.kind == "text" and not as_json and event.purpose in ("chain", "retry") and event.text:
                echo_untrusted(event.text, nl=False)
                printed = event.text
        if as_json:
            click.echo(format_json(response.json()))
        elif printed and not printed.endswith("\n"):
            click.echo()
    except KeyboardInterrupt:
        with contextlib.suppress(KeyboardInterrupt):
            response.cancel()
        click.echo("\n[turn cancelled]", err=True)
    except (ChainformError, OSError, ValueError) as exc:  # a failed turn is said; the session goes on
        echo_untrusted(error_line(exc), err=True)


def _stdin_is_terminal() -> bool:
    return sys.stdin.isatty()
