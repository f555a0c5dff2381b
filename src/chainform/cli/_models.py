"""`chainform models`: what can be called, with capabilities; and the default model.

The default model is, in order: `-m`, `$CHAINFORM_MODEL`, the name saved by
`chainform models default NAME` (`<home>/default_model.txt`), then "local" (the embedded model,
which needs no key and no network).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from chainform.cli._output import echo_json

FALLBACK_MODEL = "local"


def _default_file() -> Path:
    from chainform._paths import home

    return home() / "default_model.txt"


def default_model() -> str:
    env = os.environ.get("CHAINFORM_MODEL", "").strip()
    if env:
        return env
    path = _default_file()
    if path.is_file():
        saved: str = path.read_text(encoding="utf-8").strip()
        if saved:
            return saved
    return FALLBACK_MODEL


def _entry(item: Any) -> dict[str, Any]:
    """A listing row from whatever the registry returns (a name, or an object with a profile)."""
    if isinstance(item, str):
        return {"name": item}
    if isinstance(item, dict):
        return dict(item)
    out: dict[str, Any] = {"name": str(getattr(item, "name", item))}
    for attr in ("aliases", "provider", "description", "needs_key"):
        value = getattr(item, attr, None)
        if value is not None:
            out[attr] = list(value) if isinstance(value, list | tuple | set | frozenset) else value
    profile = getattr(item, "profile", None)
    if profile is not None and hasattr(profile, "capabilities"):
        out["capabilities"] = profile.capabilities()
    return out


_SHOWN = ("supports_tools", "supports_json_schema", "supports_tools_with_schema", "supports_streaming")


_FILTERS = {"tools": "supports_tools", "schemas": "supports_json_schema"}


def _listing(*, tools: bool = False, schemas: bool = False) -> list[dict[str, Any]]:
    """The known models as rows; `tools`/`schemas`: only those that call tools / answer in a
    JSON schema natively (any model answers in a schema through the prompted strategy)."""
    try:
        from chainform.clients.registry import list_models
    except ImportError:
        raise click.ClickException(
            "the model registry (chainform.clients.registry) is not installed"
        ) from None
    entries = [_entry(item) for item in list_models()]
    wanted = [
        capability
        for flag, capability in ((tools, "supports_tools"), (schemas, "supports_json_schema"))
        if flag
    ]
    return [e for e in entries if all(e.get("capabilities", {}).get(c) for c in wanted)]


def _print_models(entries: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        echo_json(entries)
        return
    from rich.table import Table
    from rich.text import Text

    from chainform.cli._output import console, untrusted

    current = default_model()
    table = Table(
        "model", "aliases", *(s.removeprefix("supports_") for s in _SHOWN), box=None, pad_edge=False
    )
    for entry in entries:
        caps = entry.get("capabilities", {})
        name = entry["name"] + (" (default)" if entry["name"] == current else "")
        marks = ["yes" if caps.get(s) else ("no" if s in caps else "?") for s in _SHOWN]
        table.add_row(Text(untrusted(name)), Text(untrusted(", ".join(entry.get("aliases", [])))), *marks)
    console().print(table)


_json_option = click.option("--json", "as_json", is_flag=True, help="Output every capability as JSON.")


@click.group(name="models", invoke_without_command=True)
@_json_option
@click.pass_context
def models_command(ctx: click.Context, as_json: bool) -> None:
    """List the models chainform knows, with their capabilities (also `models list`)."""
    if ctx.invoked_subcommand is None:
        _print_models(_listing(), as_json)


@models_command.command(name="list")
@click.option("--tools", is_flag=True, help="Only models that can call tools.")
@click.option("--schemas", is_flag=True, help="Only models that answer in a JSON schema natively.")
@_json_option
def models_list(tools: bool, schemas: bool, as_json: bool) -> None:
    """List the models chainform knows (as llm's `models list`), optionally only those with tools
    or native schemas."""
    _print_models(_listing(tools=tools, schemas=schemas), as_json)


@models_command.command(name="options")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Output the options as JSON.")
def models_options(name: str, as_json: bool) -> None:
    """The `-o KEY VALUE` options NAME takes: type, bounds, and whether the model accepts each."""
    from chainform.cli._options import OPTION_ALIASES
    from chainform.clients.registry import list_models, resolve_name
    from chainform.types._options import option_specs

    provider, model = resolve_name(name)
    full = f"{provider}/{model}" if model else provider
    profile = next((m.profile for m in list_models() if m.name == full), None)
    rows: list[dict[str, Any]] = []
    for spec in option_specs():
        high = spec.high
        if spec.name == "max_output_tokens" and profile is not None and profile.max_output_tokens:
            high = profile.max_output_tokens
        rows.append(
            {
                "name": spec.name,
                "aliases": sorted(a for a, target in OPTION_ALIASES.items() if target == spec.name),
                "type": spec.type,
                "min": spec.low,
                "max": high,
                "supported": None if profile is None else spec.name not in profile.unsupported_options,
            }
        )
    if as_json:
        echo_json({"model": full, "listed": profile is not None, "options": rows})
        return
    click.echo(
        f"{full}" + ("" if profile is not None else " (not a listed model: what it accepts is unknown)")
    )
    for row in rows:
        aliases = f" (or {', '.join(row['aliases'])})" if row["aliases"] else ""
        bounds = [f">= {row['min']:g}"] if row["min"] is not None else []
        bounds += [f"<= {row['max']:g}"] if row["max"] is not None else []
        bounded = f" {', '.join(bounds)}" if bounds else ""
        refused = "  not accepted by this model" if row["supported"] is False else ""
        click.echo(f"  {row['name']}{aliases}: {row['type']}{bounded}{refused}")
    click.echo("Other keys go to the provider as they are (extras).")


@models_command.command(name="default")
@click.argument("name", required=False)
@click.option("--clear", is_flag=True, help="Forget the saved default (back to 'local').")
def models_default(name: str | None, clear: bool) -> None:
    """Show the default model, or save NAME as the default."""
    path = _default_file()
    if clear:
        path.unlink(missing_ok=True)
    elif name:
        from chainform.clients.registry import resolve_name

        resolve_name(name)  # an unknown name is refused now, not at every later prompt
        path.write_text(name.strip() + "\n", encoding="utf-8")
    click.echo(default_model())
