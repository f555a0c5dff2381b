"""Where parameter descriptions come from: trailing comments (docments style) and docstring sections.

Docstring sections are docstring-parser's job. The comments beside parameters and fields are ours:
no kept library reads them (they are not in the AST; the tokenizer sees them). Both sources are
best effort: source code may be unavailable (REPL, ``exec``) and docstrings follow conventions
loosely, so every function here returns what it found and never raises.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import textwrap
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RETURN = "return"


@dataclass
class DocInfo:
    """What a docstring says: the summary text, per-parameter text and the return text."""

    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str = ""


def _tokens(obj: Any) -> list[tokenize.TokenInfo]:
    try:
        source = textwrap.dedent(inspect.getsource(obj))
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError, IndentationError):
        return []


def _comment_text(tok: tokenize.TokenInfo) -> str:
    return tok.string.lstrip("#").strip()


def _standalone(tok: tokenize.TokenInfo, prev: tokenize.TokenInfo | None) -> bool:
    """A comment alone on its line (describes what follows) rather than trailing code."""
    return prev is None or prev.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)


def _attach(found: dict[str, str], name: str, text: str) -> None:
    found[name] = f"{found[name]} {text}" if name in found else text


def function_comments(fn: Any) -> dict[str, str]:
    """Map parameter name (and ``"return"``) to the comment written beside it in the signature.

    A comment trailing a parameter describes it; a comment on its own line describes the next
    parameter; a comment after the closing parenthesis (on the ``def`` line) describes the result.
    """
    toks = [t for t in _tokens(fn) if t.type != tokenize.ENCODING]
    start = next((i for i, t in enumerate(toks) if t.type == tokenize.NAME and t.string == "def"), None)
    if start is None:
        return {}
    found: dict[str, str] = {}
    depth = 0
    last_param: str | None = None
    pending: list[str] = []
    expect_name = False
    prev: tokenize.TokenInfo | None = None
    closed = False
    for tok in toks[start + 1 :]:
        if closed:
            if tok.type == tokenize.COMMENT:
                _attach(found, RETURN, _comment_text(tok))
            if tok.type == tokenize.NEWLINE:
                break
        elif tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
            expect_name = depth == 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
            closed = depth == 0
        elif depth == 1 and tok.type == tokenize.OP and tok.string in (",", "*", "**", "/"):
            expect_name = True
        elif depth == 1 and tok.type == tokenize.NAME and expect_name:
            last_param, expect_name = tok.string, False
            if pending:
                found.setdefault(last_param, " ".join(pending))
                pending = []
        elif depth >= 1 and tok.type == tokenize.COMMENT:
            if _standalone(tok, prev) or last_param is None:
                pending.append(_comment_text(tok))
            else:
                # a trailing comment wins over a comment on the line above
                if last_param in found and prev is not None and prev.start[0] == tok.start[0]:
                    found.pop(last_param)
                _attach(found, last_param, _comment_text(tok))
        if tok.type not in (tokenize.COMMENT,):
            prev = tok
    return found


def class_comments(cls: type) -> dict[str, str]:
    """Map field name to the comment beside ``name: type`` lines in a class body (dataclass style)."""
    toks = [t for t in _tokens(cls) if t.type != tokenize.ENCODING]
    found: dict[str, str] = {}
    level = depth = 0
    at_start = False
    current: str | None = None
    pending: list[str] = []
    prev: tokenize.TokenInfo | None = None
    for i, tok in enumerate(toks):
        if tok.type == tokenize.INDENT:
            level += 1
            at_start = True
        elif tok.type == tokenize.DEDENT:
            level -= 1
            at_start = True
        elif tok.type == tokenize.NEWLINE:
            at_start, current = True, None
        elif tok.type == tokenize.COMMENT:
            if level == 1 and _standalone(tok, prev):
                pending.append(_comment_text(tok))
            elif level == 1 and current is not None:
                _attach(found, current, _comment_text(tok))
            continue
        elif tok.type != tokenize.NL:
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
            if at_start and level == 1:
                nxt = toks[i + 1] if i + 1 < len(toks) else None
                if tok.type == tokenize.NAME and nxt is not None and nxt.string == ":" and depth == 0:
                    current = tok.string
                    if pending:
                        found[current] = " ".join(pending)
                pending = []
            at_start = False
        prev = tok
    return found


@functools.cache
def _parsers() -> tuple[Callable[[str], Any], ...]:
    """docstring-parser's styles; Google's also reads "Keyword Args" sections (as parameters)."""
    from docstring_parser import epydoc, google, numpydoc, rest

    keyword = [
        google.Section(t, "key", google.SectionType.MULTIPLE) for t in ("Keyword Args", "Keyword Arguments")
    ]
    return (
        google.GoogleParser([*google.DEFAULT_SECTIONS, *keyword]).parse,
        numpydoc.parse,
        rest.parse,
        epydoc.parse,
    )


def parse_docstring(doc: str | None) -> DocInfo:
    """Read a Google, NumPy or Sphinx/reST docstring's sections with docstring-parser: every style
    is tried and the reading that finds the most sections wins (docstring-parser's own rule)."""
    from docstring_parser import Docstring, ParseError

    if not doc:
        return DocInfo()
    readings: list[Docstring] = []
    for parse in _parsers():
        with contextlib.suppress(ParseError):
            readings.append(parse(doc))
    if not readings:  # malformed sections: the text still describes the tool
        return DocInfo(summary=inspect.cleandoc(doc))
    parsed = max(readings, key=lambda d: len(d.meta))
    gap = "\n\n" if parsed.blank_after_short_description else "\n"
    summary = gap.join(p for p in (parsed.short_description, parsed.long_description) if p)
    info = DocInfo(summary=summary.strip())
    for param in parsed.params:
        for name in param.arg_name.split(","):  # NumPy's "x, y : int"
            if name.strip().lstrip("*") and param.description:
                info.params.setdefault(name.strip().lstrip("*"), " ".join(param.description.split()))
    if parsed.returns is not None and parsed.returns.description:
        info.returns = " ".join(parsed.returns.description.split())
    return info
