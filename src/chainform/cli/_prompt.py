"""The default command: run a prompt (a tool chain when tools are given) and print the answer.

Text streams to stdout as it arrives; with a schema, the validated JSON is printed at the end
(pretty on a terminal, one line in a pipe). Tool activity (`--td`), approvals (`--ta`) and usage
(`-u`) go to stderr so stdout stays clean for the next program in the pipe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, get_args

import click

from chainform.cli._attach import attachment_options, attachments_from_cli
from chainform.cli._fragments import fragment_value, resolve_fragment
from chainform.cli._group import EXIT_WAITING
from chainform.cli._money import apply_price, money_options
from chainform.cli._options import (
    CONTEXT_CHOICES,
    OPTION_ALIASES,
    chain_limit_option,
    choice_option,
    model_option,
    model_options_option,
    otel_option,
    provider_options,
    renamed_count_option,
    retry_max_tokens_option,
    start_tracing,
    stop_at_option,
    strategy_option,
)
from chainform.cli._output import echo_json, echo_untrusted, format_json
from chainform.cli._show import Approver, show_tool_event, summary, usage_text
from chainform.cli._templates import Template, functions_value, load_template, save_template
from chainform.cli._tools import chain_tool_options
from chainform.errors import ProviderErrorKind

if TYPE_CHECKING:
    from chainform.models import Model
    from chainform.response import ChainResponse
    from chainform.store import Store


def resolve_model(
    name: str, *, key: str | None, base_url: str | None, fallback: Sequence[str] = (), **settings: Any
) -> Model:
    """Build the model (tests replace this to run the CLI on a ScriptedClient); `settings`: the
    provider's (timeout), given only when set."""
    from chainform.models import get_model

    with model_arguments():
        return get_model(name, key=key, base_url=base_url, fallback=fallback, **settings)


@contextlib.contextmanager
def model_arguments() -> Iterator[None]:
    """Around building the model: arguments it refuses (a fallback naming the model itself or one
    twice, a profile for an in-process or non-OpenAI model, a key beside user:password in the URL)
    are usage errors (exit 2)."""
    try:
        yield
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def fallback_value(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """`--fallback NAME` (repeatable): a blank name is a usage error, not a model lookup."""
    if any(not name.strip() for name in value):
        raise click.BadParameter("a fallback model name is empty")
    return value


FALLBACK_HELP = (
    "A model to go on with when the one before fails (rate limited, server error, connection, "
    "timeout); repeatable, tried in order."
)


FALLBACK_KINDS = (*get_args(ProviderErrorKind), "output")
FALLBACK_ON_HELP = (
    "What moves the chain to the next --fallback model: an error kind, or 'output' (no valid value "
    "after the re-asks, an answer cut at the token limit, a failed formatting call); repeatable, "
    "replaces the default (rate_limit, server, timeout, connection)."
)


def fallback_kwargs(fallback: tuple[str, ...], fallback_on: tuple[str, ...] = ()) -> dict[str, Any]:
    """`fallback=` (and `fallback_on=`) for resolve_model/map_model, only when given; 'output'
    with no --fallback model is a usage error, before any call."""
    if "output" in fallback_on and not fallback:
        raise click.BadParameter(
            "'output' needs a model to fall back to: give --fallback MODEL", param_hint="--fallback-on"
        )
    kwargs: dict[str, Any] = {"fallback": list(fallback)} if fallback else {}
    if fallback_on:
        kwargs["fallback_on"] = list(fallback_on)
    return kwargs


def check_retry_max_tokens(retry_max_tokens: int | None, options: dict[str, Any]) -> None:
    """`--retry-max-tokens` at most `-o max_tokens` is a usage error, before any call."""
    from chainform.models import check_growth

    try:
        check_growth(retry_max_tokens, options.get("max_output_tokens"))
    except ValueError as exc:
        raise click.BadParameter(str(exc).replace("retry_max_tokens", "--retry-max-tokens", 1)) from None


def hosted_values(specs: tuple[str, ...]) -> tuple[Any, ...]:
    """`--hosted KIND` (repeatable) as hosted tool objects; a name that is none is a usage error."""
    if not specs:
        return ()
    from chainform.types import hosted_tool

    try:
        return tuple(hosted_tool(spec) for spec in specs)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--hosted") from None


def check_stop_at(stop_at: tuple[str, ...], tools: list[Any], *, mcp: bool) -> None:
    """`--stop-at` naming a tool not offered is a usage error before any call (an MCP server's
    tools are known only when the chain starts: the chain checks those then)."""
    from chainform.chain._engine import unknown_stop_tools
    from chainform.chain._tools import normalize_tools
    from chainform.errors import UnknownToolError

    if not stop_at or mcp:
        return
    try:
        unknown_stop_tools(frozenset(stop_at), {t.name: t for t in normalize_tools(tools)})
    except UnknownToolError as exc:
        raise click.BadParameter(str(exc).replace("stop_at_tools", "--stop-at", 1)) from None


def parse_options(pairs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """`-o KEY VALUE` pairs as chat options; values are JSON when they parse, else strings. Named
    options are checked against their type and range (ChatOptions), before anything is sent."""
    from chainform.types._options import check_option

    out: dict[str, Any] = {}
    for raw_key, raw_value in pairs:
        key = OPTION_ALIASES.get(raw_key, raw_key)
        try:
            value: Any = json.loads(raw_value)
        except ValueError:
            value = raw_value
        try:
            out[key] = check_option(key, value)
        except ValueError as exc:
            why = str(exc).replace(key, raw_key, 1) if key != raw_key else str(exc)
            raise click.BadParameter(why, param_hint="-o") from None
    return out


def utf8_text(value: str, where: str) -> str:
    """`value` from the command line; bytes that were not UTF-8 (kept by Python as lone
    surrogates) are a usage error here, before any model call or log row."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise click.UsageError(f"{where} is not valid UTF-8 (at character {exc.start})") from None
    return value


def read_prompt(prompt: str | None, *, stdin_reserved: bool, required: bool = True) -> str:
    """The prompt argument, text piped on stdin, or both (stdin first, as context for the question).
    Not `required` (a template holds the prompt): "" when neither is given."""
    stdin = sys.stdin
    piped = ""
    if not stdin.isatty() and not (stdin_reserved and prompt):
        data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode("utf-8")
        try:
            piped = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"stdin is not valid UTF-8 (byte {exc.start})") from None
    if prompt is not None:
        utf8_text(prompt, "the prompt")
    parts = [p for p in (piped.strip("\n"), prompt) if p and not p.isspace()]
    if not parts:
        if not required:
            return ""
        if piped or prompt:
            raise click.UsageError("the prompt is empty (only whitespace): nothing to send")
        raise click.UsageError("no prompt given: pass PROMPT or pipe text on stdin")
    return "\n\n".join(parts)


def _conversation(store: Store | None, continue_: bool, cid: str | None) -> tuple[str | None, list[Any]]:
    if not continue_ and cid is None:
        return None, []
    from chainform.store import Store

    store = store or Store()
    if cid is None:
        cid = store.last_conversation_id()
        if cid is None:
            raise click.UsageError("no logged conversation to continue")
    from chainform.chain._history import of_conversation

    history = of_conversation(store, cid)
    if not history and not store.recent(1, conversation_id=cid):
        raise click.BadParameter(f"no logged conversation with id {cid!r}", param_hint="--cid")
    return cid, history


def conversation_settings(store: Store, cid: str) -> tuple[str | None, dict[str, Any]]:
    """The model and model options of a conversation's latest chain call, as logged: what `-c`
    goes on with unless `-m` is given. Options chainform sets itself, and redacted ones, are left out."""
    from chainform.types._options import check_option

    rows = [row for row in store.recent(None, conversation_id=cid) if row.purpose == "chain"]
    if not rows:
        return None, {}
    logged = dict(rows[0].options)
    logged |= logged.pop("additional_properties", None) or {}
    options: dict[str, Any] = {}
    for name, value in logged.items():
        if value == "[redacted]":
            continue
        try:
            options[name] = check_option(name, value)
        except ValueError:  # tools, tool_mode, response_format...: set by the chain itself
            continue
    return rows[0].model, options


def open_log(*, required: bool, wanted: bool) -> Store | None:
    """The log, checked before the model is called: an unusable file is reported with the way on,
    instead of a chain whose calls silently go unlogged. `wanted` only (a saved schema id may be
    looked up there): None when it cannot be used."""
    if not (required or wanted):
        return None
    from chainform.store import Store, StoreError

    store = Store()
    try:
        store.check()
    except StoreError as exc:
        if not required:
            return None
        raise StoreError(f"{exc}; or run with --no-log") from None  # the error says the way on for its cause
    click.get_current_context().call_on_close(store.close)  # calls it could not log: one warning
    return store


@click.command(name="prompt")
@click.argument("prompt", required=False)
@model_option("Model name or alias (default: $CHAINFORM_MODEL, `models default`, else local).")
@click.option("--fallback", "fallback", multiple=True, callback=fallback_value, help=FALLBACK_HELP)
@click.option(
    "--fallback-on", "fallback_on", multiple=True, type=click.Choice(FALLBACK_KINDS), help=FALLBACK_ON_HELP
)
@otel_option
@click.option("-s", "--system", help="System prompt.")
@click.option(
    "--schema",
    help="Output schema: JSON, a .json file, the concise DSL ('name, age int') or a saved schema id.",
)
@click.option("--schema-multi", help="Like --schema, but the answer is a list of such objects under 'items'.")
@chain_tool_options
@click.option(
    "--hosted",
    "hosted",
    multiple=True,
    metavar="TOOL",
    callback=lambda ctx, param, value: hosted_values(value),
    help="A tool the provider runs itself: web_search, code_execution, url_context or "
    "file_search:STORE_ID; repeatable (which model has which: docs/providers.md).",
)
@stop_at_option("the chain", "the answer")
@chain_limit_option
@strategy_option
@click.option(
    "--format-prompt",
    help="Instruction for the deferred formatting call ({schema} and {context} are filled in).",
)
@choice_option(
    "--format-context",
    choices=CONTEXT_CHOICES,
    default="compact",
    help="What the deferred formatting call sees.",
)
@renamed_count_option(
    "--validation-retries",
    "--retries",
    minimum=0,
    default=2,
    help="Re-asks after output that fails validation.",
)
@retry_max_tokens_option("an answer", "fail with the text so far, exit 4")
@click.option(
    "--td", "--tools-debug", "tools_debug", is_flag=True, help="Show each tool call and result (stderr)."
)
@click.option("--ta", "--tools-approve", "tools_approve", is_flag=True, help="Ask before each tool call.")
@click.option(
    "--approve-later",
    "approve_later",
    multiple=True,
    metavar="TOOL",
    help="Do not run TOOL's calls: the chain waits (exit 8) until `chainform resume ID --approve ...`; repeatable.",
)
@model_options_option
@click.option("--no-stream", is_flag=True, help="Print the answer when complete instead of streaming it.")
@click.option("-n", "--no-log", is_flag=True, help="Do not write this chain to the log.")
@click.option("-c", "--continue", "continue_", is_flag=True, help="Continue the most recent conversation.")
@click.option("--cid", "--conversation", "cid", help="Continue the conversation with this id.")
@click.option("--key", help="API key for this call (else environment, else `chainform keys set`).")
@click.option("--base-url", help="Provider endpoint (OpenAI-compatible servers, proxies).")
@provider_options
@click.option("-u", "--usage", "show_usage", is_flag=True, help="Print token usage and cost (stderr).")
@money_options("End the chain between calls once it has cost this (USD).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document: answer, value, strategy, usage, calls."
)
@attachment_options
@click.option(
    "-t", "--template", "template_name", help="Use the saved template NAME (`chainform templates`)."
)
@click.option(
    "-f",
    "--fragment",
    "fragment_values",
    multiple=True,
    help="Text to put before the prompt: a file, an http(s) URL or a logged fragment's id; repeatable.",
)
@click.option(
    "--sf",
    "--system-fragment",
    "system_fragment_values",
    multiple=True,
    help="Like -f, added to the system prompt; repeatable.",
)
@click.option(
    "-p",
    "--param",
    "params",
    type=(str, str),
    multiple=True,
    help="A template parameter: -p name value fills $name; repeatable.",
)
@click.option(
    "--save", "save_name", help="Save this prompt's settings as the template NAME instead of running it."
)
def prompt_command(
    prompt: str | None,
    model_name: str | None,
    fallback: tuple[str, ...],
    fallback_on: tuple[str, ...],
    otel: bool,
    system: str | None,
    schema: str | None,
    schema_multi: str | None,
    tool_names: tuple[str, ...],
    python_isolation: str,
    functions: tuple[str, ...],
    mcp_values: tuple[str, ...],
    hosted: tuple[Any, ...],
    stop_at: tuple[str, ...],
    chain_limit: int,
    strategy: str,
    format_prompt: str | None,
    format_context: str,
    validation_retries: int,
    retry_max_tokens: int | None,
    tools_debug: bool,
    tools_approve: bool,
    approve_later: tuple[str, ...],
    option_pairs: tuple[tuple[str, str], ...],
    no_stream: bool,
    no_log: bool,
    continue_: bool,
    cid: str | None,
    key: str | None,
    base_url: str | None,
    provider_settings: dict[str, Any],
    show_usage: bool,
    price: tuple[Decimal, Decimal] | None,
    max_cost: Decimal | None,
    as_json: bool,
    template_name: str | None,
    fragment_values: tuple[str, ...],
    system_fragment_values: tuple[str, ...],
    params: tuple[tuple[str, str], ...],
    save_name: str | None,
    **attaching: Any,
) -> None:
    """Run PROMPT (or stdin) on a model, with tools and a schema if given."""
    from chainform.cli._models import default_model
    from chainform.cli._schemas import resolve_cli_schema
    from chainform.cli._tools import cli_tools, mcp_servers

    if schema is not None and schema_multi is not None:
        raise click.UsageError("give --schema or --schema-multi, not both")
    if continue_ and cid:
        raise click.UsageError("give -c/--continue or --cid, not both")
    schema_text = schema if schema is not None else schema_multi
    for value, where in ((system, "--system"), (schema_text, "--schema"), (format_prompt, "--format-prompt")):
        if value is not None:
            utf8_text(value, where)
    if schema_text is not None and not schema_text.strip():
        raise click.BadParameter("the schema is empty", param_hint="--schema")
    if params and template_name is None and save_name is None:
        raise click.UsageError("-p/--param fills a template's parameters: give -t NAME (or --save NAME)")
    template = load_template(template_name) if template_name is not None else Template()
    if save_name is not None:
        _save_template(
            save_name,
            template,
            prompt,
            system,
            model_name,
            tool_names,
            functions,
            schema_text,
            schema_multi is not None,
            option_pairs,
            params,
            python_isolation,
            fragment_values,
            system_fragment_values,
            attaching.get("allow_private_urls", False),
        )
        return
    attach = attachments_from_cli(prompt, **attaching)  # before stdin: `-a -` reads it as a file
    given = read_prompt(
        prompt, stdin_reserved=tools_approve or attach.reads_stdin, required=template.prompt is None
    )
    text, template_system = template.render(given or None, dict(params))
    if not text:
        raise click.UsageError("no prompt given: pass PROMPT or pipe text on stdin")
    system = system if system is not None else template_system
    model_name = model_name or template.model
    options = {**template.checked_options(), **parse_options(option_pairs)}
    check_retry_max_tokens(retry_max_tokens, options)
    start_tracing(otel)
    tool_names, functions = (*template.tools, *tool_names), (*template.functions, *functions)
    tools: list[Any] = cli_tools(tool_names, functions, python_isolation=python_isolation)
    check_stop_at(stop_at, tools, mcp=bool(mcp_values))
    tools += mcp_servers(mcp_values)
    unknown = sorted(set(approve_later) - {t.name for t in tools if hasattr(t, "name")})
    if unknown and not mcp_values:  # an MCP server's tools are listed once the chain starts
        raise click.BadParameter(f"no tool named {', '.join(unknown)} is given", param_hint="--approve-later")
    tools += hosted
    fragment_values = (*template.fragments, *fragment_values)
    system_fragment_values = (*template.system_fragments, *system_fragment_values)
    store = open_log(
        required=not no_log or continue_ or cid is not None,
        wanted=schema_text is not None or bool(fragment_values or system_fragment_values),
    )
    output = None
    if schema_text is not None:
        output = resolve_cli_schema(schema_text, store=store, as_multi=schema_multi is not None)
    elif template.schema is not None:
        output = template.output()
    private = attaching.get("allow_private_urls", False)
    fragments = [resolve_fragment(v, store, allow_private_urls=private) for v in fragment_values]
    system_fragments = [
        resolve_fragment(v, store, allow_private_urls=private) for v in system_fragment_values
    ]
    conversation_id, history = _conversation(store, continue_, cid)
    if conversation_id is not None and model_name is None and store is not None:
        model_name, logged_options = conversation_settings(store, conversation_id)
        options = logged_options | options  # -o given now wins over the conversation's
    from chainform.store import message_with

    if system_fragments:  # a system message of its own, after -s: every provider joins them
        history = [message_with(system_fragments, None, role="system"), *history]
    sent: Any = text
    if fragments and attach.chain_kwargs():  # with -a the prompt is a list: fragments go inline
        sent = [*(f.text for f in fragments), text]
    elif fragments:
        sent = message_with(fragments, text)

    name = model_name or default_model()
    if price is not None:
        apply_price(name, price)
    model = resolve_model(
        name, key=key, base_url=base_url, **fallback_kwargs(fallback, fallback_on), **provider_settings
    )
    if store is not None:
        model.log_to(store)  # the command's one log
    response = model.chain(
        sent,
        system=system,
        tools=tools or None,
        schema=output,
        strategy=strategy,
        chain_limit=chain_limit,
        validation_retries=validation_retries,
        before_call=Approver() if tools_approve else None,
        format_prompt=format_prompt,
        format_context=format_context,
        options=options or None,
        stream=not no_stream,
        log=not no_log,
        conversation_id=conversation_id,
        history=history,
        max_cost=max_cost,
        requires_approval=approve_later,
        retry_max_tokens=retry_max_tokens,
        stop_at_tools=stop_at,
        **attach.chain_kwargs(),
    )
    show_chain(
        response,
        store=store,
        has_schema=output is not None,
        as_json=as_json,
        no_stream=no_stream,
        tools_debug=tools_debug,
        show_usage=show_usage,
        fallbacks=len(fallback),
    )


def show_chain(
    response: ChainResponse,
    *,
    store: Store | None,
    has_schema: bool,
    as_json: bool,
    no_stream: bool,
    tools_debug: bool,
    show_usage: bool,
    fallbacks: int,
) -> None:
    """Print a chain as it runs and its answer (`prompt` and `resume`). A chain that waits for
    approval prints its pending calls as JSON (stdout) and how to resume it (stderr), exit 8;
    Ctrl-C marks the chain interrupted and prints the command that resumes it (exit 130)."""
    from chainform.errors import ChainInterruptedError

    try:
        _follow(response, has_schema, as_json, no_stream, tools_debug, fallbacks)
    except (KeyboardInterrupt, ChainInterruptedError) as exc:
        if store is not None and response.chain_id is not None:
            if isinstance(exc, KeyboardInterrupt):  # the chain's own thread may not get to say so
                with contextlib.suppress(Exception):  # the process ends now: its lock goes with it
                    store.set_chain_status(response.chain_id, "interrupted", error="KeyboardInterrupt")
            click.echo(f"Resume with: chainform resume {response.chain_id}", err=True)
        raise
    if response.status == "waiting":
        echo_json([p.to_dict() for p in response.pending])
        ids = " ".join(p.id for p in response.pending)  # call ids as the model or provider gave them
        echo_untrusted(f"Chain {response.chain_id} waits for approval of: {ids}", err=True)
        click.echo(
            f"Resume with: chainform resume {response.chain_id} --approve all (or --approve CALL / --deny CALL[=reason])",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_WAITING)
    if as_json:
        echo_json(summary(response, has_schema))
    elif has_schema:
        click.echo(format_json(response.json()))
    elif no_stream:
        echo_untrusted(response.text())
    if tools_debug and response.strategy is not None and has_schema:
        choice = response.strategy
        click.echo(f"Strategy: {choice.name} ({choice.reason})", err=True)
    if show_usage:
        usage = response.usage
        click.echo(usage_text(usage, usage.by_purpose), err=True)


def _follow(
    response: ChainResponse,
    has_schema: bool,
    as_json: bool,
    no_stream: bool,
    tools_debug: bool,
    fallbacks: int,
) -> None:
    """Stream the chain's text (no schema) and tool activity (`--td`) while it runs."""
    stream_text = not (as_json or has_schema or no_stream)
    printed = ""  # the last chunk printed: does the output end with a newline?
    cut = False  # text of the call under way was printed
    switches = 0  # calls that failed: the models fallen back from
    for event in response.events(partials=False):
        if event.kind in ("tool_call", "tool_result", "attachment") and tools_debug:
            show_tool_event(event.kind, event.value)
        elif event.kind == "text" and stream_text and event.purpose in ("chain", "retry") and event.text:
            echo_untrusted(event.text, nl=False)
            printed = event.text
            cut = True
        elif event.kind == "call_end":
            if event.text and cut:  # a call failed mid-answer: what follows (a fallback's) starts over
                click.echo()
                printed = ""
                if switches < fallbacks:
                    echo_untrusted(
                        f"[{event.text}; the answer starts again from the fallback model]", err=True
                    )
            switches += bool(event.text)
            cut = False
    if stream_text and printed and not printed.endswith("\n"):
        click.echo()


def _save_template(
    name: str,
    template: Template,
    prompt: str | None,
    system: str | None,
    model_name: str | None,
    tool_names: tuple[str, ...],
    functions: tuple[str, ...],
    schema_text: str | None,
    multi: bool,
    option_pairs: tuple[tuple[str, str], ...],
    params: tuple[tuple[str, str], ...],
    python_isolation: str,
    fragment_values: tuple[str, ...],
    system_fragment_values: tuple[str, ...],
    allow_private_urls: bool,
) -> None:
    """`--save NAME`: the line's settings over those of `-t` (if given), checked as a run would
    check them (the schema resolved, tools loaded, options typed), then written; nothing is sent."""
    from chainform.cli._schemas import resolve_cli_schema
    from chainform.cli._tools import cli_tools

    if prompt is not None:
        utf8_text(prompt, "the prompt")
    tools, code = [*template.tools, *tool_names], [*template.functions, *map(functions_value, functions)]
    cli_tools(tuple(tools), tuple(code), python_isolation=python_isolation)
    schema_json = template.schema
    store = open_log(
        required=False, wanted=schema_text is not None or bool(fragment_values or system_fragment_values)
    )
    if schema_text is not None:
        schema_json = resolve_cli_schema(schema_text, store=store, as_multi=multi).schema
    for value in (*fragment_values, *system_fragment_values):  # each must resolve now, as at a run
        resolve_fragment(value, store, allow_private_urls=allow_private_urls)
    saved = dataclasses.replace(
        template,
        prompt=prompt if prompt is not None else template.prompt,
        system=system if system is not None else template.system,
        model=model_name or template.model,
        tools=tools,
        functions=code,
        schema=schema_json,
        options={**template.checked_options(), **parse_options(option_pairs)},
        defaults={**template.defaults, **dict(params)},
        fragments=[*template.fragments, *map(fragment_value, fragment_values)],
        system_fragments=[*template.system_fragments, *map(fragment_value, system_fragment_values)],
    )
    path = save_template(name, saved)
    click.echo(f"Template {name!r} saved: {path}", err=True)
