"""A logged chain checked and locked for resuming: its spec, its journal, its tools and approvals.

`ready(store, chain_id, ...)` is what every resume does before anything is sent (`cf.resume`, a
`map`/`eval` row whose chain did not end): find the chain in the log, take its lock (one process
at a time continues a chain, chain/_lock.py), read its spec and its calls (the journal,
chain/_journal.py), bind the tools given again by name and check the approvals against its pending
calls. Anything wrong raises ResumeError (or SpecError) at once, the lock let go and the log
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from chainform._lineage import Parent
from chainform.chain._approval import Approval, Approved, decided
from chainform.chain._journal import Journal, ResumeError
from chainform.chain._lock import ChainLock
from chainform.chain._spec import ChainSpec, SpecError
from chainform.chain._tools import normalize_tools
from chainform.output import OutputSpec
from chainform.store import CallRecord, ChainRow, Store


@dataclass
class Ready:
    """A chain checked and locked for resuming (the caller lets `lock` go when the chain ends)."""

    row: ChainRow
    spec: ChainSpec
    journal: Journal
    tools: list[Any]
    approvals: dict[str, Approval]
    lock: ChainLock
    store: Store
    parent: Parent | None = None  # a subagent's: the chain and tool call that started it, from the log


def ready(
    store: Store,
    chain_id: str,
    tools: Sequence[Any],
    approvals: Mapping[str, Approval] | None,
    schema: Any,
) -> Ready:
    """Chain `chain_id` (an id or a unique prefix) of `store`, checked and locked for resuming."""
    found = store.chains(chain_id)
    if not found:
        raise ResumeError(
            f"no logged chain with id {chain_id!r} in {store.path} (`chainform logs --unfinished` lists them)"
        )
    if len(found) > 1:
        raise ResumeError(f"chain id prefix {chain_id!r} is ambiguous; give more characters")
    lock = ChainLock(store.path, found[0].id)
    if not lock.acquire():
        raise ResumeError(
            f"chain {found[0].id} is running in another process; it cannot be resumed twice at once"
        )
    try:
        return _checked(store, store.chains(found[0].id)[0], tools, approvals, schema, lock)
    except BaseException:
        lock.release()
        raise


def _checked(
    store: Store,
    row: ChainRow,
    tools: Sequence[Any],
    approvals: Mapping[str, Approval] | None,
    schema: Any,
    lock: ChainLock,
) -> Ready:
    # a done chain sends nothing again: its files are not read
    spec = ChainSpec.from_json(row.spec, None if row.status == "done" else _files(store, row.id))
    unknown = sorted(set(spec.stop_at_tools) - {t.name for t in spec.tools})
    if unknown:  # the engine would refuse it only once the chain started
        raise SpecError(
            f"the chain's spec is malformed (stop_at_tools names {unknown}, not tools of the chain)"
        )
    if schema is not None:
        wanted = OutputSpec.from_user(schema)
        if spec.output is None or wanted.schema != spec.output.schema:
            raise ResumeError(f"schema= differs from the schema chain {row.id} was asked for")
        spec = replace(spec, output=wanted)
    live = {t.name: t for t in normalize_tools(tools)}
    records = sorted(store.recent(None, chain_id=row.id), key=lambda r: r.seq)
    journal = Journal.of(_without_failed_tail(records))
    if row.status != "done":
        missing = [t.name for t in spec.tools if t.name not in live]
        if missing:
            raise ResumeError(
                f"tool(s) {', '.join(map(repr, missing))} of chain {row.id} are missing: give them again "
                "(tools=[...]; in the CLI -T or --functions)"
            )
    bound = [live.get(t.name) or _absent(t.name, t.description, t.parameters) for t in spec.tools]
    approved = _approvals(row, spec, approvals or {})
    return Ready(row, spec, journal, bound, approved, lock, store, _parent(store, records))


def _parent(store: Store, records: Sequence[CallRecord]) -> Parent | None:
    """A subagent chain's link to the chain and tool call that started it, as its logged calls
    hold it; its depth is the number of logged parents above it (None: not a subagent, or no
    call of it was logged)."""
    first = next((r for r in records if r.parent_chain_id is not None), None)
    if first is None or first.agent_name is None:
        return None
    depth, above, seen = 1, first.parent_chain_id, {first.chain_id}
    while above is not None and above not in seen:  # a hand-edited log cannot loop here
        seen.add(above)
        link = next((r for r in store.recent(None, chain_id=above) if r.parent_chain_id), None)
        if link is None:
            break
        depth, above = depth + 1, link.parent_chain_id
    return Parent(first.agent_name, depth, first.parent_chain_id, first.parent_conversation_id,
                  first.parent_tool_call_id)  # fmt: skip


def _files(store: Store, chain_id: str) -> Callable[[str], bytes]:
    """The lookup of the files chain `chain_id`'s spec holds by sha256: ResumeError when the log
    lacks one (removed, or logged as a reference to a file that changed or is gone)."""

    def read(sha256: str) -> bytes:
        data = store.attachment(sha256)
        if data is None:
            raise ResumeError(
                f"a file the prompt of chain {chain_id} holds (sha256 {sha256[:12]}) is not in the log, or was "
                "logged as a path that changed or is gone: the chain cannot be resumed"
            )
        return data

    return read


def _without_failed_tail(records: list[CallRecord]) -> list[CallRecord]:
    """The calls to replay: a failure the chain ended on is tried again, not replayed."""
    end = len(records)
    while end and (
        records[end - 1].failure is not None
        or (records[end - 1].error and not records[end - 1].text and not records[end - 1].tool_calls)
    ):
        end -= 1
    return records[:end]


def _approvals(row: ChainRow, spec: ChainSpec, given: Mapping[str, Approval]) -> dict[str, Approval]:
    from chainform.schema.validate import validate

    pending = {p["id"]: p for p in row.pending}
    unknown = [call for call in given if call not in pending]
    if unknown:
        waits = ", ".join(pending) or "none"
        raise ResumeError(
            f"no pending call {', '.join(map(repr, unknown))} in chain {row.id} (pending: {waits})"
        )
    out: dict[str, Approval] = {}
    for call_id, approval in given.items():
        try:
            answer = decided(approval)
        except TypeError as exc:
            raise ResumeError(str(exc)) from None
        if isinstance(answer, Approved) and answer.arguments is not None:
            tool = pending[call_id]["tool"]
            ref = next((t for t in spec.tools if t.name == tool), None)
            problems = validate(answer.arguments, ref.parameters) if ref is not None else []
            if problems:
                raise ResumeError(
                    f"the arguments given for {call_id} ({tool}) do not fit its schema: {'; '.join(problems)}"
                )
        out[call_id] = answer
    return out


def _absent(name: str, description: str, parameters: dict[str, Any]) -> Any:
    """A stand-in for a tool not given again: offered as the spec names it, never run."""
    from chainform.tools import Tool

    def absent(**_: Any) -> Any:
        raise ResumeError(f"tool {name!r} was not given to the resume")

    return Tool.from_schema(name, description, parameters, absent)


__all__ = ["Ready", "ready"]
