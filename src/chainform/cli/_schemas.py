"""`chainform schemas` and how `--schema` is read: a saved id first, else JSON, a file or the DSL."""

from __future__ import annotations

import datetime as dt
import string
from typing import TYPE_CHECKING, get_args

import click

from chainform._dialect_names import SchemaDialect
from chainform.cli._output import echo_json, format_json

if TYPE_CHECKING:
    from chainform.output._spec import OutputSpec
    from chainform.store import Store


def resolve_cli_schema(value: str, *, store: Store | None, as_multi: bool = False) -> OutputSpec:
    """What a `--schema` value means, resolved and checked once: the chain takes the spec as it is.
    A saved schema id (or unique prefix) wins over JSON, a file or the DSL."""
    from chainform.output._spec import OutputSpec
    from chainform.schema.dsl import multi_schema

    text = value.strip()
    saved = None
    if store is not None and len(text) >= 4 and all(c in string.hexdigits for c in text):
        saved = store.get_schema(text)
    spec = OutputSpec.from_user(saved if saved is not None else value)
    return OutputSpec(multi_schema(spec.schema)) if as_multi else spec


def _store() -> Store:
    from chainform.store import Store

    return Store()


@click.group(name="schemas", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Output as JSON.")
@click.pass_context
def schemas_command(ctx: click.Context, as_json: bool) -> None:
    """Schemas used so far (saved automatically, content-addressed); see `schemas list`."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(schemas_list, as_json=as_json)


@schemas_command.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Output as JSON.")
@click.option("-n", "count", type=int, default=None, help="Show at most N schemas.")
def schemas_list(as_json: bool, count: int | None = None) -> None:
    """List saved schemas, most recently used first."""
    infos = _store().list_schemas()[:count]
    if as_json:
        echo_json(
            [
                {
                    "id": i.id,
                    "schema": i.content,
                    "uses": i.uses,
                    "created_at": i.created_at,
                    "last_used": i.last_used,
                }
                for i in infos
            ]
        )
        return
    for info in infos:
        when = dt.datetime.fromtimestamp(info.last_used or info.created_at).strftime("%Y-%m-%d %H:%M")
        click.echo(f"{info.id[:12]}  used {info.uses}x, last {when}")
        click.echo("  " + format_json(info.content, pretty=False))


@schemas_command.command(name="show")
@click.argument("schema_id")
@click.option(
    "--dialect",
    type=click.Choice(get_args(SchemaDialect)),
    default=None,
    help="Print what this provider dialect gets instead: the converted schema and every rewrite (notes). "
    "SCHEMA_ID may then also be a schema (JSON, file or DSL).",
)
def schemas_show(schema_id: str, dialect: str | None = None) -> None:
    """Print a saved schema by id or unique id prefix."""
    store = _store()
    if dialect is not None:
        from chainform.schema.dialects import get_dialect

        conv = get_dialect(dialect).convert(resolve_cli_schema(schema_id, store=store).schema)
        echo_json({"dialect": dialect, "schema": conv.schema, "notes": conv.notes})
        return
    schema = store.get_schema(schema_id)
    if schema is None:
        raise click.BadParameter(f"no saved schema with id {schema_id!r}", param_hint="SCHEMA_ID")
    echo_json(schema)


@schemas_command.command(name="save")
@click.argument("schema")
@click.option("--multi", "as_multi", is_flag=True, help="Save the --schema-multi form (a list of items).")
def schemas_save(schema: str, as_multi: bool) -> None:
    """Save a schema (JSON, file or DSL) and print its id, usable as --schema ID."""
    store = _store()
    click.echo(store.save_schema(resolve_cli_schema(schema, store=None, as_multi=as_multi).schema))


@schemas_command.command(name="dsl")
@click.argument("text")
@click.option("--multi", "as_multi", is_flag=True, help="Wrap it as --schema-multi does.")
def schemas_dsl(text: str, as_multi: bool) -> None:
    """Print the JSON Schema the concise syntax TEXT stands for, e.g. 'name, age int'."""
    from chainform.schema import schema_dsl

    echo_json(schema_dsl(text, multi=as_multi))
