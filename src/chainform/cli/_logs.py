"""`chainform logs`: read the call log, as Markdown for people or JSON for programs.

Rows are printed oldest first, so the most recent call is the last thing on screen.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from typing import TYPE_CHECKING, Any

import click

from chainform.cli._money import cost_text
from chainform.cli._options import F
from chainform.cli._output import echo_json, echo_untrusted, shorten

if TYPE_CHECKING:
    from pathlib import Path

    from chainform.store import CallRecord, ChainRow, Store


def _usage_line(row: CallRecord) -> str:
    usage = row.usage
    if usage is None:
        return "not reported"
    parts = [f"{usage.input_tokens} input", f"{usage.output_tokens} output", f"{usage.total_tokens} total"]
    parts += [f"{v} {k}" for k, v in sorted(usage.additional_counts.items())]
    return ", ".join(parts)


def render(row: CallRecord, *, usage: bool, format_context: bool) -> str:
    when = dt.datetime.fromtimestamp(row.created_at).strftime("%Y-%m-%dT%H:%M:%S")
    head = f"## {when} · {row.model} · {row.purpose}"
    if row.strategy:
        head += f" · strategy {row.strategy}"
    lines = [
        head,
        "",
        f"id `{row.id}` · conversation `{row.conversation_id}` · chain `{row.chain_id}` call {row.seq}",
    ]
    if row.duration_ms is not None:
        lines[-1] += f" · {row.duration_ms:.0f} ms"
    if row.usage is not None:
        lines[-1] += f" · {cost_text(row.usage.cost)}"
    if row.schema_id:
        lines.append(f"schema `{row.schema_id[:12]}`")
    if row.system:
        lines += ["", "### System", "", row.system]
    if row.prompt is not None:
        lines += ["", "### Prompt", "", row.prompt]
    if row.attachments:
        lines += ["", "### Attachments", ""]
        lines += [
            f"- {a.summary()} · sha256 `{a.sha256[:12]}`" + (f" · ref {a.ref}" if a.ref else "")
            for a in row.attachments
        ]
    if row.format_context is not None:
        policy = row.format_context_policy or "?"
        if format_context:
            lines += ["", f"### Format context (policy {policy})", "", row.format_context]
        else:
            lines += [
                "",
                f"Format context: policy {policy}, {len(row.format_context)} characters (--format-context shows it)",
            ]
    lines += ["", "### Response", "", row.text or "(no text)"]
    if row.tool_calls:
        lines += ["", "### Tool calls", ""]
        for call in row.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False)
            lines.append(f"- `{call.name}({args})` [{call.call_id}]")
    if row.tool_results:
        lines += ["", "### Tool results", ""]
        for result in row.tool_results:
            shown = f"error: {result.error}" if result.error else shorten(result.output, 500)
            lines.append(f"- `{result.name}` [{result.call_id}]: {shown}")
    if row.parsed is not None:
        lines += [
            "",
            "### Parsed",
            "",
            "```json",
            json.dumps(row.parsed, indent=2, ensure_ascii=False),
            "```",
        ]
    if row.error:
        lines += ["", f"**Error:** {row.error}"]
    if usage:
        lines += ["", f"Usage: {_usage_line(row)}"]
    return "\n".join(lines)


def _list_options(command: F) -> F:
    """The options of `logs` and `logs list` (the same command)."""
    decorators = [
        click.option(
            "-n",
            "--count",
            type=click.IntRange(0, 2**63 - 1),  # SQLite's LIMIT is a signed 64-bit integer
            default=3,
            show_default=True,
            help="How many calls (0 for all).",
        ),
        click.option(
            "--json", "as_json", is_flag=True, help="Output JSON: every column, tool calls and results."
        ),
        click.option(
            "-q", "--query", help="Full-text search over prompts and responses (every word must match)."
        ),
        click.option("--cid", "--conversation", "conversation", help="Only this conversation."),
        click.option("-c", "--current", is_flag=True, help="Only the most recent conversation."),
        click.option("--chain", "chain_id", help="Only this chain (every call of one prompt)."),
        click.option(
            "--schema", "schema", help="Only calls with this schema (id or prefix, or a schema to match)."
        ),
        click.option("-m", "--model", "model", help="Only calls of this model (a name or an alias)."),
        click.option(
            "--since", help="Only calls since a date (YYYY-MM-DD) or a span back from now (7d, 12h)."
        ),
        click.option("-t", "--tools", "with_tools", is_flag=True, help="Only chains that called a tool."),
        click.option(
            "--run", "runs", multiple=True, help="Only the calls of this map run (its run id); repeatable."
        ),
        click.option("--eval", "eval_id", help="Only the calls of this eval (its id or a unique prefix)."),
        click.option(
            "-s", "--short", is_flag=True, help="One line per call: time, model, purpose, prompt, answer."
        ),
        click.option("-r", "--response", is_flag=True, help="Only the latest matching call's answer."),
        click.option(
            "-x",
            "--extract",
            is_flag=True,
            help="Only the first fenced code block of the latest matching answer.",
        ),
        click.option(
            "--format-context", "format_context", is_flag=True, help="Show what each formatting call saw."
        ),
        click.option(
            "-u", "--usage", is_flag=True, help="Show token usage of each call (`logs cost` sums costs)."
        ),
        click.option(
            "--tree", is_flag=True, help="Conversations with the subagent conversations they started, nested."
        ),
        click.option(
            "--unfinished",
            is_flag=True,
            help="Chains that did not end (running, interrupted, waiting for approval), with the command that resumes each.",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@click.group(name="logs", invoke_without_command=True)
@_list_options
@click.pass_context
def logs_command(ctx: click.Context, /, **options: Any) -> None:
    """Show logged calls, most recent last (every call of a chain: retries and formatting too);
    `logs list` is the same."""
    if ctx.invoked_subcommand is None:
        show_logs(**options)


@logs_command.command(name="list")
@_list_options
def logs_list(**options: Any) -> None:
    """Show logged calls (the same as `chainform logs`)."""
    show_logs(**options)


def _wanted(
    model: str | None, since: str | None, eval_id: str | None, runs: tuple[str, ...]
) -> dict[str, Any]:
    """The store filters of -m (an alias resolved to its model), --since and --eval / --run."""
    out: dict[str, Any] = {"runs": list(runs)}
    if model is not None:
        from chainform.clients.registry import aliases

        known = aliases()
        names, current = {model}, model
        while (target := known.get(current)) is not None and target not in names:  # an alias's model
            names.add(target)
            current = target
        out["models"] = sorted(names | {alias for alias, target in known.items() if target in names})
    if since is not None:
        from chainform.cli._money import since_time

        out["since"] = since_time(since)
    if eval_id is not None:
        from chainform.evals import EvalInputError, load_report

        try:
            report = load_report(eval_id)
        except EvalInputError as exc:
            raise click.BadParameter(str(exc), param_hint="--eval") from None
        out["runs"] += [cell.run_id for cell in report.cells]
    return out


def show_logs(
    count: int,
    as_json: bool,
    query: str | None,
    conversation: str | None,
    current: bool,
    chain_id: str | None,
    schema: str | None,
    model: str | None,
    since: str | None,
    with_tools: bool,
    runs: tuple[str, ...],
    eval_id: str | None,
    short: bool,
    response: bool,
    extract: bool,
    format_context: bool,
    usage: bool,
    tree: bool,
    unfinished: bool,
) -> None:
    """`logs` with its options: the matching calls, oldest first."""
    from chainform.store import Store, schema_id

    store = Store()
    if unfinished:
        _unfinished(store, count, as_json)
        return
    if current:
        conversation = conversation or store.last_conversation_id()
        if conversation is None:
            _say_none(store.path)
            return
    if tree:
        from chainform.cli._logtree import render_tree

        rows = store.recent(None)
        rows.reverse()
        echo_untrusted(render_tree(rows, count=count or None, conversation=conversation))
        return
    wanted_schema = None
    if schema is not None:
        from chainform.cli._schemas import resolve_cli_schema

        found = store.get_schema(schema)
        wanted_schema = (
            schema if found is not None else schema_id(resolve_cli_schema(schema, store=None).schema)
        )
    filters = _wanted(model, since, eval_id, runs)
    if (runs or eval_id) and not filters["runs"]:
        filters["runs"] = ["-"]  # an eval of no cell: nothing matches
    rows = store.recent(
        1 if response or extract else count or None,
        conversation_id=conversation,
        query=query,
        schema_id=wanted_schema,
        chain_id=chain_id,
        with_tools=with_tools,
        **filters,
    )
    rows.reverse()
    filtered = any((query, conversation, chain_id, schema, model, since, with_tools, runs, eval_id))
    if as_json:
        echo_json([r.to_dict() for r in rows])  # the CallRecord as written: one shape everywhere
        return
    if not rows:
        _say_none(store.path, filtered=filtered)
        return
    if response or extract:
        answer = rows[-1].text if rows[-1].parsed is None else json.dumps(rows[-1].parsed, ensure_ascii=False)
        block = first_code_block(answer) if extract else answer
        if block is None:
            click.echo("The latest matching answer has no fenced code block.", err=True)
            return
        echo_untrusted(block)
        return
    if short:
        echo_untrusted("\n".join(short_line(r) for r in rows))
        return
    echo_untrusted("\n\n".join(render(r, usage=usage, format_context=format_context) for r in rows))


_FENCE = re.compile(
    r"^(?P<fence>```+|~~~+)[^\n`]*\n(?P<code>.*?)^(?P=fence)[ \t]*$", re.DOTALL | re.MULTILINE
)


def first_code_block(text: str) -> str | None:
    """The content of the first fenced code block (``` or ~~~) of `text`, as llm's `-x` takes it."""
    found = _FENCE.search(text)
    return found.group("code").rstrip("\n") if found else None


def short_line(row: CallRecord) -> str:
    when = dt.datetime.fromtimestamp(row.created_at).strftime("%Y-%m-%dT%H:%M:%S")
    answer = row.text if row.parsed is None else json.dumps(row.parsed, ensure_ascii=False)
    tools = f" · tools {', '.join(c.name for c in row.tool_calls)}" if row.tool_calls else ""
    error = f" · error {shorten(row.error, 80)}" if row.error else ""
    return (
        f"{when} · {row.model} · {row.purpose} · chain {row.chain_id[:10]}{tools}{error} · "
        f"{shorten(row.prompt or '', 60)!r} -> {shorten(answer or '', 80)!r}"
    )


def _unfinished(store: Store, count: int, as_json: bool) -> None:
    """`logs --unfinished`: chains that did not end, newest first. A "running" chain no process
    holds (its lock is free: killed outright) is shown as "stopped": resume it."""
    from chainform.chain._lock import ChainLock

    rows = store.unfinished_chains(count or None)
    shown: list[tuple[ChainRow, str]] = []
    for row in rows:
        state: str = row.status
        if state == "running" and not ChainLock(store.path, row.id).held_elsewhere():
            state = "stopped"
        shown.append((row, state))
    if as_json:
        echo_json([{**row.to_dict(), "state": state} for row, state in shown])
        return
    if not shown:
        click.echo(f"No unfinished chain in {store.path}.", err=True)
        return
    for row, state in shown:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.created_at))
        line = f"{row.id}  {when}  {state:<11}  {row.model}"
        if row.pending:
            line += "  waits for: " + ", ".join(f"{p['tool']} ({p['id']})" for p in row.pending)
        echo_untrusted(line)  # tool names and call ids are the model's
        if state != "running":
            click.echo(f"  resume: chainform resume {row.id}")


def _say_none(path: Path, *, filtered: bool = False) -> None:
    """Tell (on stderr, so a pipe reads nothing) that there is no call to show, and why that may be."""
    from chainform.store import logging_enabled

    what = "No logged call matches" if filtered else "No calls logged yet"
    off = "" if logging_enabled() else " Logging is off: `chainform logs on` turns it back on."
    click.echo(f"{what} in {path}.{off}", err=True)


@logs_command.command(name="path")
def logs_path() -> None:
    """Print the path of the log database."""
    from chainform.store import default_path

    click.echo(str(default_path()))


@logs_command.command(name="backup")
@click.argument("path", type=click.Path(dir_okay=False, writable=True))
def logs_backup(path: str) -> None:
    """Copy the log to PATH (SQLite online backup: safe while chains are writing)."""
    from chainform.store import Store

    with Store() as store:
        click.echo(f"Backed up {store.path} to {store.backup(path)}")


@logs_command.command(name="repair")
@click.option("--force", is_flag=True, help="Rebuild the log even when it is not damaged.")
def logs_repair(force: bool) -> None:
    """Save what SQLite can read of a damaged log into a new log; the damaged one is kept beside it."""
    from chainform.store import default_path, repair

    done = repair(default_path(), force=force)
    if done.intact and not done.kept:
        click.echo(f"The log at {done.path} is not damaged (PRAGMA quick_check: ok); nothing to repair.")
        return
    calls = done.rows.get("responses", 0)
    click.echo(
        f"Saved {calls} call{'s' if calls != 1 else ''} in {done.rows.get('conversations', 0)} conversations "
        f"into a new log at {done.path}"
        + (f"; {done.skipped} unreadable rows (or runs of rows) left behind" if done.skipped else "")
        + "."
    )
    click.echo("The damaged log is kept as " + ", ".join(str(p) for p in done.kept) + ".")


def _timestamp(value: str) -> float:
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a date (use YYYY-MM-DD or YYYY-MM-DDTHH:MM)", param_hint="--before"
        ) from None
    return when.timestamp()


@logs_command.command(name="rm")
@click.argument("ids", nargs=-1)
@click.option("--cid", "--conversation", "conversation", help="Every call of this conversation.")
@click.option("--before", help="Every call logged before this date (YYYY-MM-DD, local time).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def logs_rm(ids: tuple[str, ...], conversation: str | None, before: str | None, yes: bool) -> None:
    """Delete logged calls: by id, by conversation, or older than a date."""
    from chainform.store import Store

    if not (ids or conversation or before):
        raise click.UsageError("give call ids, --cid or --before")
    cutoff = _timestamp(before) if before is not None else None
    if not yes:
        click.confirm("Delete the matching calls from the log?", abort=True, err=True)
    with Store() as store:
        count = store.remove(list(ids), conversation_id=conversation, before=cutoff)
    click.echo(f"Removed {count} call{'s' if count != 1 else ''}.")


@logs_command.command(name="off")
def logs_off() -> None:
    """Stop logging calls (every chain of this user, the library's too)."""
    from chainform.store import set_logging

    set_logging(False)
    click.echo("Logging is off.")


@logs_command.command(name="on")
def logs_on() -> None:
    """Log calls again (the default)."""
    from chainform.store import set_logging

    set_logging(True)
    click.echo("Logging is on.")


@logs_command.command(name="status")
def logs_status() -> None:
    """Say whether logging is on, where the log is and how much it holds."""
    from chainform.store import Store, lock_timeout, logging_enabled

    lock_timeout()  # a bad CHAINFORM_LOG_TIMEOUT is refused here as by every command (exit 2)
    with Store() as store:
        click.echo(f"Logging is {'on' if logging_enabled() else 'off'}.")
        click.echo(f"Log: {store.path}")
        if store.path.exists():
            counts = store.counts()
            click.echo(
                f"{counts['responses']} calls in {counts['conversations']} conversations, "
                f"{store.path.stat().st_size / 1024:.0f} KiB"
            )
