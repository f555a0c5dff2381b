"""`chainform resume CHAIN_ID`: go on with a logged chain (after a crash, Ctrl-C, or an approval).

The chain's spec and calls come from the log (`cf.resume`, docs/durable.md): nothing logged is
sent or run again. Its tools are given again as for the prompt (`-T`, `--functions`, `--mcp`);
the model, its fallbacks and every setting come from the spec, the key from the environment,
the key store or `--key`. A chain already done prints its value (exit 0).
"""

from __future__ import annotations

import json
from typing import Any

import click

from chainform.cli import _prompt
from chainform.cli._options import model_option
from chainform.cli._prompt import fallback_kwargs, open_log, show_chain
from chainform.cli._tools import chain_tool_options


def _pairs(values: tuple[str, ...], option: str, *, need_value: bool) -> dict[str, str | None]:
    """`CALL=VALUE` (or a bare `CALL` where the value is optional) for each given value."""
    out: dict[str, str | None] = {}
    for value in values:
        call, sep, rest = value.partition("=")
        if not call.strip() or (need_value and not sep):
            form = "CALL=JSON" if need_value else "CALL or CALL=REASON"
            raise click.BadParameter(f"{value!r} is not {form}", param_hint=option)
        out[call.strip()] = rest if sep else None
    return out


def approvals_from_cli(
    pending: list[dict[str, Any]], approve: tuple[str, ...], deny: tuple[str, ...], args: tuple[str, ...]
) -> dict[str, Any]:
    """The approvals of `--approve CALL|all`, `--deny CALL[=reason]` and `--args CALL=JSON`."""
    from chainform.chain._approval import Approved, Denied

    approved = {p["id"] for p in pending} if "all" in approve else set(approve)
    out: dict[str, Any] = {call: Approved() for call in approved}
    for call, text in _pairs(args, "--args", need_value=True).items():
        try:
            arguments = json.loads(text or "")
        except ValueError as exc:
            raise click.BadParameter(
                f"the arguments for {call} are not JSON ({exc})", param_hint="--args"
            ) from None
        if not isinstance(arguments, dict):
            raise click.BadParameter(f"the arguments for {call} must be a JSON object", param_hint="--args")
        out[call] = Approved(arguments)
    for call, reason in _pairs(deny, "--deny", need_value=False).items():
        if call in out:
            raise click.BadParameter(f"{call} is both approved and denied", param_hint="--deny")
        out[call] = Denied(reason)
    return out


@click.command(name="resume")
@click.argument("chain_id")
@chain_tool_options
@click.option(
    "--approve",
    "approve",
    multiple=True,
    metavar="CALL|all",
    help="Run this pending call (or all); repeatable.",
)
@click.option(
    "--deny", "deny", multiple=True, metavar="CALL[=REASON]", help="Refuse this pending call; repeatable."
)
@click.option(
    "--args", "args", multiple=True, metavar="CALL=JSON", help="Run this pending call with these arguments."
)
@model_option("Go on with this model instead of the chain's own (its fallbacks are kept).")
@click.option("--key", help="API key (else environment, else `chainform keys set`); never logged.")
@click.option("--base-url", help="Provider endpoint (OpenAI-compatible servers, proxies).")
@click.option(
    "--td", "--tools-debug", "tools_debug", is_flag=True, help="Show each tool call and result (stderr)."
)
@click.option("-u", "--usage", "show_usage", is_flag=True, help="Print token usage and cost (stderr).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document, as for the prompt.")
def resume_command(
    chain_id: str,
    tool_names: tuple[str, ...],
    python_isolation: str,
    functions: tuple[str, ...],
    mcp_values: tuple[str, ...],
    approve: tuple[str, ...],
    deny: tuple[str, ...],
    args: tuple[str, ...],
    model_name: str | None,
    key: str | None,
    base_url: str | None,
    tools_debug: bool,
    show_usage: bool,
    as_json: bool,
) -> None:
    """Go on with logged chain CHAIN_ID: nothing logged is sent or run again."""
    from chainform.chain._spec import ChainSpec
    from chainform.cli._tools import cli_tools, mcp_servers
    from chainform.durable import ResumeError, resume

    tools: list[Any] = cli_tools(tool_names, functions, python_isolation=python_isolation)
    tools += mcp_servers(mcp_values)
    store = open_log(required=True, wanted=True)
    assert store is not None
    found = store.chains(chain_id)
    if len(found) != 1:
        raise ResumeError(
            f"no logged chain with id {chain_id!r} (`chainform logs --unfinished` lists them)"
            if not found
            else f"chain id prefix {chain_id!r} is ambiguous; give more characters"
        )
    row = found[0]
    approvals = approvals_from_cli(row.pending, approve, deny, args)
    spec = ChainSpec.from_json(row.spec)
    fallbacks = fallback_kwargs(spec.fallbacks)
    model = _prompt.resolve_model(model_name or spec.model, key=key, base_url=base_url, **fallbacks)
    leased = [t for t in tools if hasattr(t, "acquire")]
    for source in leased:  # an MCP server's tools, listed now (resume binds tools by name)
        tools.remove(source)
        tools.extend(source.acquire())
    try:
        response = resume(row.id, tools=tools, approvals=approvals, model=model, log_path=store.path)
        show_chain(
            response,
            store=store,
            has_schema=spec.output is not None,
            as_json=as_json,
            no_stream=False,
            tools_debug=tools_debug,
            show_usage=show_usage,
            fallbacks=len(spec.fallbacks),
        )
    finally:
        for source in leased:
            source.release()
