"""Rows for `model.map`: lazy readers for JSONL, CSV and plain lines, keys, and prompt templates.

Everything here is a generator, so a 50,000-line file is never held in memory. A row that cannot
be read or filled in becomes a row with an `input` error instead of stopping the run: files are read
as bytes and decoded line by line, so one byte that is not UTF-8 costs its own line, not the run.
A template that could fill no row at all is refused before any row runs (`check_template`).
"""

from __future__ import annotations

import csv
import functools
import json
import re
import string
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from chainform.errors import ChainformError
from chainform.types import Attachment, ConversionLimits


class MapInputError(ChainformError, ValueError):
    """A row could not be read or its prompt could not be filled in (bad JSON, a missing field)."""


@dataclass
class Row:
    """One input: its position, its key (for resume) and the data its prompt is filled from."""

    index: int
    key: str
    data: str | dict[str, Any]
    error: MapInputError | None = None

    def prompt(self, template: str | None) -> str:
        """The prompt for this row: `template` filled from its fields, or the row's own text."""
        if template is None:
            if isinstance(self.data, str):
                return self.data
            raise MapInputError("rows are objects: give a prompt template such as 'Summarize: {text}'")
        data = self.data if isinstance(self.data, dict) else {"text": self.data}
        for name in check_template(template):
            if name not in data:
                raise MapInputError(f"the prompt template names {name!r}, which this row does not have")
            if data[name] is None:
                raise MapInputError(f"the row's {name!r} is null: nothing to fill the prompt template with")
        try:
            return template.format_map(data)
        except KeyError as exc:
            raise MapInputError(f"the prompt template names {exc}, which this row does not have") from None
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            raise MapInputError(f"cannot fill the prompt template: {exc}") from None

    def attachments(
        self, field: str | None, base: Path | None, limits: ConversionLimits | None = None
    ) -> list[Attachment]:
        """The files or URLs in `field` (several separated by commas), a path taken relative to
        `base` (the input file's folder, or --attach-root) and refused unless it stays inside it
        (`..`, an absolute path, `~` or a symlink out of it): a data file cannot send other local
        files to a provider. Each converted within `limits` (the limit flags). MapInputError when
        the row has none or one is outside."""
        if field is None:
            return []
        value = self.data.get(field) if isinstance(self.data, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise MapInputError(
                f"the row has no {field!r} to attach (a path or URL, several separated by commas)"
            )
        out = []
        for item in (part.strip() for part in value.split(",")):
            if "://" in item:
                out.append(Attachment(url=item, limits=limits))
            elif item:
                out.append(Attachment(path=_inside(item, base), limits=limits))
        return out


def _inside(item: str, root: Path | None) -> Path:
    """`item` as a path under `root`, refused when it resolves outside; any path when no root."""
    if root is None:
        return Path(item).expanduser()
    top = root.resolve()
    path = (top / Path(item).expanduser()).resolve()
    if not path.is_relative_to(top):
        raise MapInputError(
            f"{item!r} is outside {top}: attached paths must stay inside the input file's folder "
            "(give --attach-root DIR, or attach_base=, to allow another)"
        )
    return path


@functools.lru_cache(maxsize=32)
def check_template(template: str) -> tuple[str, ...]:
    """The row fields `template` fills from; MapInputError when it could fill no row at all
    (an unclosed brace, a positional `{}` or `{0}`, an unknown conversion such as `{x!z}`)."""
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise MapInputError(f"the prompt template {template!r} is broken: {exc}") from None
    for _text, field, _spec, conversion in parsed:
        if field is None:
            continue
        root = re.split(r"[.\[]", field, maxsplit=1)[0]
        if not root or root.isdigit():
            raise MapInputError(
                f"the prompt template {template!r} has a positional field {{{field}}}: "
                "name a row field instead, e.g. {text}"
            )
        if conversion not in (None, "r", "s", "a"):
            raise MapInputError(f"the prompt template {template!r} has an unknown conversion !{conversion}")
        names.append(root)
    return tuple(dict.fromkeys(names))


def record_of(data: str | dict[str, Any]) -> dict[str, Any]:
    """A row as a JSON object: plain strings become `{"text": ...}` (what `{text}` fills from)."""
    return dict(data) if isinstance(data, dict) else {"text": data}


def rows(data: Iterable[Any], id_field: str | None = None, start: int = 0) -> Iterator[Row]:
    """Number the inputs (from `start`) and key them by `id_field` (when given) or by position.

    A key met a second time makes that row an input error (a lazy source cannot be checked before
    the run; `check_unique_ids` checks a file or a list first): two rows under one key would leave
    one of them for ever "done" on resume."""
    seen: dict[str, int] = {}
    for index, item in enumerate(data, start):
        if isinstance(item, Row):
            yield item
            continue
        error = None
        key = str(index)
        if isinstance(item, MapInputError):
            error, item = item, ""
        elif not isinstance(item, str | dict):
            error, item = MapInputError(f"an input must be a str or a dict, got {type(item).__name__}"), ""
        elif id_field is not None:
            if isinstance(item, dict) and item.get(id_field) not in (None, ""):
                key = str(item[id_field])
                if (first := seen.setdefault(key, index)) != index:
                    error = MapInputError(
                        f"the {id_field!r} {key!r} is also row {first}'s: ids must be unique"
                    )
            else:
                error = MapInputError(f"the row has no {id_field!r} field to key it by")
        yield Row(index, key, item, error)


def check_unique_ids(numbered: Iterable[tuple[int, Any]], id_field: str, where: str) -> None:
    """Refuse (MapInputError) two rows with one `id_field` value, naming both of their `where`s
    (`numbered`: (line or row number, row) pairs, e.g. `read_numbered`). Rows without the field
    are left to fail on their own."""
    seen: dict[str, int] = {}
    for number, item in numbered:
        if isinstance(item, dict) and item.get(id_field) not in (None, ""):
            key = str(item[id_field])
            first = seen.setdefault(key, number)
            if first != number:
                raise MapInputError(
                    f"{where} {first} and {number} have the same {id_field!r} ({key!r}): "
                    f"each row needs its own {id_field!r} (a resume keys rows by it)"
                )


def read_file(path: str, fmt: str | None = None) -> Iterator[str | dict[str, Any] | MapInputError]:
    """Lazily read INPUT: `.jsonl`/`.json` lines, `.csv` rows, or `-`/other: one prompt per line.

    Read as bytes (stdin too): a line that is not UTF-8 is an input error naming its number."""
    return (item for _number, item in read_numbered(path, fmt))


def read_numbered(
    path: str, fmt: str | None = None
) -> Iterator[tuple[int, str | dict[str, Any] | MapInputError]]:
    """`read_file`'s rows, each with its line number (a CSV record's last line)."""
    kind = fmt or format_of(path)
    handle: IO[bytes] = _stdin_bytes() if path == "-" else open(path, "rb")  # noqa: SIM115
    try:
        if kind == "csv":
            yield from _csv(handle)
        elif kind == "jsonl":
            yield from _jsonl(handle)
        else:
            for number, text in _decoded(handle):
                if isinstance(text, MapInputError):
                    yield number, text
                elif text.strip():
                    yield number, text.rstrip("\r\n")
    finally:
        if path != "-":
            handle.close()


def count_rows(path: str, fmt: str | None = None) -> int | None:
    """How many rows INPUT holds (for the progress bar's ETA); None for stdin."""
    if path == "-":
        return None
    if (fmt or format_of(path)) == "csv":
        return sum(1 for _ in read_file(path, "csv"))
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def _stdin_bytes() -> IO[bytes]:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a replaced text-only stdin (an embedding app): its text, encoded back
        import io

        return io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))
    return buffer  # type: ignore[no-any-return]


def _not_utf8(number: int, exc: UnicodeDecodeError) -> MapInputError:
    return MapInputError(
        f"line {number} is not valid UTF-8 (byte {exc.object[exc.start]:#04x} at column {exc.start + 1})"
    )


def _decoded(handle: IO[bytes]) -> Iterator[tuple[int, str | MapInputError]]:
    for number, raw in enumerate(handle, 1):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield number, _not_utf8(number, exc)


def _jsonl(handle: IO[bytes]) -> Iterator[tuple[int, dict[str, Any] | MapInputError]]:
    for number, line in _decoded(handle):
        if isinstance(line, MapInputError):
            yield number, line
            continue
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            yield number, MapInputError(f"line {number} is not JSON: {exc}")
            continue
        except RecursionError:
            yield number, MapInputError(f"line {number} is nested too deeply to read")
            continue
        yield (
            number,
            value if isinstance(value, dict) else MapInputError(f"line {number} is not a JSON object"),
        )


def _csv(handle: IO[bytes]) -> Iterator[tuple[int, dict[str, Any] | MapInputError]]:
    """CSV rows under their header's names. Bytes that are not UTF-8 ride through the csv module
    escaped (a quoted field may span lines) and make their row an input error; a row shorter
    than the header lacks the missing columns (a template naming one fails that row), a longer
    one is an error unless the extra fields are empty."""
    lines = (raw.decode("utf-8", "surrogateescape") for raw in handle)
    reader = csv.DictReader(lines)
    for record in reader:
        number = reader.line_num  # where the record ends (a quoted field may span lines)
        bad = next((v for v in record.values() if isinstance(v, str) and not _utf8(v)), None)
        if bad is not None:
            try:
                bad.encode("utf-8", "surrogateescape").decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, _not_utf8(number, exc)
            continue
        extra = record.pop(None, None)  # type: ignore[call-overload]
        if extra and any(str(v).strip() for v in extra):
            width = len(reader.fieldnames or ())
            yield number, MapInputError(f"line {number} has {width + len(extra)} fields, the header {width}")
            continue
        yield number, {name: value for name, value in record.items() if value is not None}


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def format_of(path: str) -> str:
    """`jsonl`, `csv` or `lines`, by the file's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    return "lines"
