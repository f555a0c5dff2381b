"""Templates (as llm's): a prompt's settings saved under a name with `--save NAME` and used again
with `-t NAME`; `chainform templates list/show/edit/path`.

A template is one JSON file, `<home>/templates/NAME.json`, holding what the prompt command would
otherwise be told on its line: the prompt, system prompt, model, tools (`-T` names and
`--functions` files or code), the schema (as JSON Schema, so the template does not depend on the
log's saved schemas), `-o` options and fragments. Its prompt and system prompt may name
parameters, `$name`, filled from `-p name value` or the template's `defaults`; `$input` is the
prompt given on the line (or stdin). Anything given on the line wins over the template.
"""

from __future__ import annotations

import re
import string
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import click

from chainform.cli._group import InputError
from chainform.cli._output import echo_json, echo_untrusted

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
MAX_TEMPLATE_BYTES = 1_000_000
"""A template file larger than this is refused (it is settings, not data)."""


class TemplateError(InputError):
    """A template that does not exist or cannot be used: one `Error:` line, exit 2 (usage)."""


@dataclass
class Template:
    """What a template file holds; unknown keys are refused so a misspelt one is not ignored."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    prompt: str | None = None
    system: str | None = None
    model: str | None = None
    tools: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    schema: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    fragments: list[str] = field(default_factory=list)
    system_fragments: list[str] = field(default_factory=list)
    defaults: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The fields that are set, as the file holds them."""
        return {key: value for key, value in asdict(self).items() if value not in (None, [], {})}

    def checked_options(self) -> dict[str, Any]:
        """The template's options, checked as `-o` checks them (a hand-edited file may hold anything)."""
        from chainform.cli._options import OPTION_ALIASES
        from chainform.types._options import check_option

        checked: dict[str, Any] = {}
        for written, value in self.options.items():
            key = OPTION_ALIASES.get(written, written)  # `max_tokens`, `stop` as `-o` takes them
            try:
                checked[key] = check_option(key, value)
            except ValueError as exc:
                why = str(exc).replace(key, written, 1)
                raise TemplateError(f"the template's options: {why}") from None
        return checked

    def output(self) -> Any:
        """The template's schema as the chain takes it (an OutputSpec; SchemaError when it is bad)."""
        from chainform.output._spec import OutputSpec

        return OutputSpec.from_user(self.schema)

    def render(self, given: str | None, params: dict[str, str]) -> tuple[str | None, str | None]:
        """(prompt, system) with `$input` and the parameters filled in. A prompt that does not name
        `$input` gets the given text after it, as llm does."""
        values = {**self.defaults, **params, "input": given or ""}
        prompt = self.prompt
        if prompt is not None and given and "$input" not in prompt and "${input}" not in prompt:
            prompt = f"{prompt}\n\n{given}"
        elif prompt is None:
            prompt = given
        return _fill(prompt, values, "prompt"), _fill(self.system, values, "system prompt")


def _fill(text: str | None, values: dict[str, str], where: str) -> str | None:
    if text is None:
        return None
    try:
        return string.Template(text).substitute(values)
    except KeyError as exc:
        name = exc.args[0]
        raise TemplateError(f"the template's {where} needs ${name}: pass -p {name} VALUE") from None
    except ValueError as exc:  # a lone `$` or `$1`
        raise TemplateError(
            f"the template's {where} has a bad placeholder ({exc}); write $$ for a $"
        ) from None


def templates_dir() -> Path:
    from chainform._paths import home

    path = home() / "templates"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _path(name: str) -> Path:
    if not _NAME.fullmatch(name):
        raise TemplateError(
            f"{name!r} is not a template name (letters, digits, _ . -; not starting with . or -)"
        )
    return templates_dir() / f"{name}.json"


def load_template(name: str) -> Template:
    """The template saved as NAME; a missing or unreadable one is a TemplateError. The file may have
    been edited by hand: it must be a regular file (a FIFO or a link to a device is refused, never
    waited on or read forever) of JSON within the parser's depth limit."""
    from chainform._json import load_json
    from chainform.errors import AttachmentError
    from chainform.types._attachment import read_regular

    path = _path(name)
    if not path.exists() and not path.is_symlink():
        known = ", ".join(sorted(p.stem for p in templates_dir().glob("*.json"))) or "none saved yet"
        raise TemplateError(f"no template {name!r} (templates: {known}; save one with --save {name})")
    try:
        text = read_regular(path, MAX_TEMPLATE_BYTES, f"the template {name!r} ({path})").decode("utf-8")
    except AttachmentError as exc:  # its advice (content=, -a -) is for attachments, not templates
        raise TemplateError(str(exc).split("; give", 1)[0]) from None
    except UnicodeDecodeError as exc:
        raise TemplateError(f"the template {name!r} ({path}) is not UTF-8 text: {exc}") from None
    from pydantic import TypeAdapter, ValidationError  # not at import: `chainform --help` stays light

    try:
        return TypeAdapter(Template).validate_python(load_json(text))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = f" at {'.'.join(str(p) for p in error['loc'])}" if error["loc"] else ""
        raise TemplateError(
            f"the template {name!r} ({path}) is not a valid template{where}: {error['msg']}"
        ) from None
    except ValueError as exc:
        raise TemplateError(f"the template {name!r} ({path}) is not valid JSON: {exc}") from None


def save_template(name: str, template: Template) -> Path:
    from chainform._paths import write_private_json

    path = _path(name)
    write_private_json(path, template.as_json())
    return path


def functions_value(value: str) -> str:
    """A `--functions` value as a template keeps it: a file by its absolute path, code as it is."""
    if value.endswith(".py") and "\n" not in value:
        return str(Path(value).expanduser().resolve())
    return value


@click.group(name="templates", invoke_without_command=True)
@click.pass_context
def templates_command(ctx: click.Context) -> None:
    """Saved prompt templates (`chainform "..." --save NAME`, used with `-t NAME`); also `templates list`."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(templates_list)


@templates_command.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Output every template as JSON.")
def templates_list(as_json: bool = False) -> None:
    """List the saved templates with their prompt or system prompt."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(templates_dir().glob("*.json")):
        try:
            found[path.stem] = load_template(path.stem).as_json()
        except TemplateError as exc:  # one broken file is listed as such, not the end of the listing
            found[path.stem] = {"error": exc.message}
    if as_json:
        echo_json(found)
        return
    for name, data in found.items():
        text = " ".join(str(data.get("prompt") or data.get("system") or data.get("error") or "").split())
        shown = f"{text[:60]}..." if len(text) > 63 else text
        echo_untrusted(f"{name} : {shown}")


@templates_command.command(name="show")
@click.argument("name")
def templates_show(name: str) -> None:
    """Print the template NAME (JSON)."""
    echo_json(load_template(name).as_json(), pretty=True)


@templates_command.command(name="path")
def templates_path() -> None:
    """Print the folder templates are saved in."""
    click.echo(str(templates_dir()))


@templates_command.command(name="edit")
@click.argument("name")
def templates_edit(name: str) -> None:
    """Open the template NAME in $EDITOR (a new one when it does not exist); it is checked when saved."""
    path = _path(name)
    if not path.exists():
        save_template(name, Template(prompt=""))
    click.edit(filename=str(path))
    load_template(name)  # an edit that broke it is said now, not at its next use
    click.echo(f"Template {name!r}: {path}", err=True)
