"""`chainform logs --tree`: conversations with the subagent conversations they started, nested.

A subagent's rows name their parent conversation, chain and tool call (store migration 4), so the
tree is rebuilt from the log alone; rows written before that carry no link and print as top level.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from chainform.cli._output import shorten

if TYPE_CHECKING:
    from chainform.store import CallRecord

Link = tuple[str | None, str | None]  # (parent chain id, parent tool call id)


class _Tree:
    def __init__(self, rows: list[CallRecord]) -> None:
        self.calls: dict[str, list[CallRecord]] = defaultdict(list)  # conversation -> calls, oldest first
        for row in rows:
            self.calls[row.conversation_id].append(row)
        self.children: dict[str, list[str]] = defaultdict(list)  # parent conversation -> subagent ones
        self.roots: list[str] = []
        for cid, calls in self.calls.items():
            parent = calls[0].parent_conversation_id
            if parent is not None and parent != cid:
                self.children[parent].append(cid)
            else:
                self.roots.append(cid)

    def link(self, cid: str) -> Link:
        first = self.calls[cid][0]
        return first.parent_chain_id, first.parent_tool_call_id

    def render(self, cid: str, depth: int, seen: set[str]) -> list[str]:
        seen.add(cid)
        pad = "    " * depth
        calls = self.calls.get(cid, [])
        agent = calls[0].agent_name if calls else None
        lines = [f"{pad}conversation {cid}" + (f" · agent {agent}" if agent else "")]
        pending = [c for c in self.children.get(cid, []) if c not in seen]
        for row in calls:
            lines.append(f"{pad}  - {row.purpose} · {row.model} · {shorten(row.error or row.text or '', 80)}")
            for call in row.tool_calls:
                lines.append(f"{pad}      tool {call.name} [{call.call_id}]")
                for child in [c for c in pending if self.link(c) == (row.chain_id, call.call_id)]:
                    pending.remove(child)
                    lines += self.render(child, depth + 2, seen)
        for child in pending:  # a link whose tool call is not in the log (deleted rows)
            lines += self.render(child, depth + 1, seen)
        return lines


def render_tree(rows: list[CallRecord], *, count: int | None, conversation: str | None) -> str:
    """The conversations of `rows` (oldest first) as an indented tree: the last `count` top-level
    ones, or the one `conversation` with its subagents."""
    tree = _Tree(rows)
    if conversation is not None:
        roots = [conversation] if conversation in tree.calls else []
    else:
        roots = tree.roots[-count:] if count else tree.roots
    seen: set[str] = set()
    return "\n\n".join("\n".join(tree.render(cid, 0, seen)) for cid in roots)
