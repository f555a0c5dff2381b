"""Where parameter descriptions come from: trailing comments (docments style) and docstring sections.

Both sources are best effort. Source code may be unavailable (REPL, ``exec``) and docstrings follow
conventions loosely, so every function here returns what it found and never raises.
"""

from __future__ import annotations

import inspect
import io
import re
import textwrap
import tokenize
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


_GOOGLE_HEADS = {
    "args": "params",
    "arguments": "params",
    "parameters": "params",
    "params": "params",
    "attributes": "params",
    "keyword args": "params",
    "keyword arguments": "params",
    "returns": "returns",
    "return": "returns",
    "yields": "returns",
}
_OTHER_HEADS = {"raises", "examples", "example", "notes", "note", "see also", "references", "warnings"}
_RETURN_TYPE = re.compile(r"^[\w.|\[\]]+(?:,\s*[\w.|\[\]]+)*:\s+")  # Google's "int: the total"
_SPHINX = re.compile(
    r"^:(param|parameter|arg|argument|key|keyword|returns?|type|rtype|raises?)\b([^:]*):(.*)$"
)


def _norm_name(raw: str) -> str:
    return raw.strip().lstrip("*").split("(")[0].split(":")[0].strip()


def _sections(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Split into (kind, lines) where kind is summary/params/returns/other; Google and NumPy heads."""
    out: list[tuple[str, list[str]]] = [("summary", [])]
    i = 0
    while i < len(lines):
        line = lines[i]
        head = line.strip().lower()
        underline = i + 1 < len(lines) and re.fullmatch(r"\s*-{3,}\s*", lines[i + 1]) is not None
        google = head.endswith(":") and head[:-1] in {*_GOOGLE_HEADS, *_OTHER_HEADS}
        if underline and head in {*_GOOGLE_HEADS, *_OTHER_HEADS}:
            out.append((_GOOGLE_HEADS.get(head, "other") + ":numpy", []))
            i += 2
            continue
        if google and not line.startswith((" ", "\t")):
            out.append((_GOOGLE_HEADS.get(head[:-1], "other") + ":google", []))
        else:
            out[-1][1].append(line)
        i += 1
    return out


def _items(body: list[str], numpy: bool) -> list[tuple[str, str]]:
    """Entries of a section: a head line at the lowest indent followed by indented continuation."""
    lines = [ln for ln in body if ln.strip()]
    if not lines:
        return []
    base = min(len(ln) - len(ln.lstrip()) for ln in lines)
    items: list[tuple[str, list[str]]] = []
    for ln in lines:
        indent = len(ln) - len(ln.lstrip())
        if indent == base:
            head, sep, rest = ln.strip().partition(" : " if numpy else ":")
            if numpy and not sep:
                head, sep, rest = ln.strip().partition(":")
            items.append((head, [rest.strip()] if rest.strip() and not numpy else []))
        elif items:
            items[-1][1].append(ln.strip())
    return [(h, " ".join(t)) for h, t in items]


def parse_docstring(doc: str | None) -> DocInfo:
    """Read Google, NumPy or Sphinx/reST sections out of a docstring."""
    info = DocInfo()
    if not doc:
        return info
    lines = inspect.cleandoc(doc).splitlines()
    sphinx_lines: list[str] = []
    plain: list[str] = []
    for ln in lines:
        m = _SPHINX.match(ln.strip())
        if m or (sphinx_lines and ln.startswith((" ", "\t")) and ln.strip()):
            sphinx_lines.append(ln.strip() if m else " " + ln.strip())
        else:
            plain.append(ln)
    for entry in " \n".join(sphinx_lines).replace("\n ", " ").split("\n"):
        m = _SPHINX.match(entry.strip())
        if not m:
            continue
        kind, target, text = m.group(1), m.group(2).split(), " ".join(m.group(3).split())
        if kind.startswith("return"):
            info.returns = text
        elif kind in ("param", "parameter", "arg", "argument", "key", "keyword") and target:
            info.params[target[-1]] = text
    summary: list[str] = []
    for kind, body in _sections(plain):
        if kind == "summary":
            summary = body
        elif kind.startswith("params"):
            for head, text in _items(body, kind.endswith("numpy")):
                for name in head.split(","):
                    if _norm_name(name) and text:
                        info.params.setdefault(_norm_name(name), text)
        elif kind.startswith("returns"):
            entries = _items(body, kind.endswith("numpy"))
            if kind.endswith("numpy"):
                info.returns = " ".join(t for _, t in entries)
            else:
                text = " ".join(" ".join(ln.split()) for ln in body if ln.strip())
                info.returns = _RETURN_TYPE.sub("", text, count=1)
    info.summary = "\n".join(summary).strip()
    return info
