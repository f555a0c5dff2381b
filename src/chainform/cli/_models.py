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


@click.group(name="models", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Output every capability as JSON.")
@click.pass_context
def models_command(ctx: click.Context, as_json: bool) -> None:
    """List the models chainform knows, with their capabilities."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        from chainform.clients.registry import list_models  # type: ignore[import-not-found]
    except ImportError:
        raise click.ClickException(
            "the model registry (chainform.clients.registry) is not installed"
        ) from None
    entries = [_entry(item) for item in list_models()]
    if as_json:
        echo_json(entries)
        return
    from rich.table import Table
    from rich.text import Text

    from chainform.cli._output import console

    current = default_model()
    table = Table(
        "model", "aliases", *(s.removeprefix("supports_") for s in _SHOWN), box=None, pad_edge=False
    )
    for entry in entries:
        caps = entry.get("capabilities", {})
        name = entry["name"] + (" (default)" if entry["name"] == current else "")
        marks = ["yes" if caps.get(s) else ("no" if s in caps else "?") for s in _SHOWN]
        table.add_row(Text(name), Text(", ".join(entry.get("aliases", []))), *marks)
    console().print(table)


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
