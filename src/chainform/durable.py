"""Resume a logged chain: after a crash, a Ctrl-C, or a person's answer to its pending tool calls.

`cf.resume(chain_id, tools=[...])` (and `cf.aresume`, `chainform resume CHAIN_ID`) reads the
chain's spec and calls from the log and runs the same engine over them (chain/_journal.py): every
logged call is served from the log, never sent again; every logged tool result is reused, the tool
is not run again; the chain goes on for real from the first step the log does not hold. A chain
already done replays to its value without sending anything. See docs/durable.md.

One process at a time continues a chain (chain/_lock.py): a second resume meanwhile is refused
with ResumeError, and a resume that got the lock reads the chain's row again under it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chainform.chain._approval import Approval, Approved, Denied, decided
from chainform.chain._engine import Bound
from chainform.chain._journal import Journal, ResumeError
from chainform.chain._lock import ChainLock
from chainform.chain._spec import ChainSpec, SpecError
from chainform.chain._tools import AfterCall, BeforeCall, normalize_tools
from chainform.models import AsyncModel, Launch, Model, get_model
from chainform.output import OutputSpec
from chainform.output._select import around_hosted
from chainform.response import AsyncChainResponse, ChainResponse
from chainform.store import CallRecord, ChainRow, Store

__all__ = ["Approved", "Denied", "ResumeError", "aresume", "resume"]


@dataclass
class _Ready:
    """A chain checked and locked for resuming."""

    row: ChainRow
    spec: ChainSpec
    journal: Journal
    tools: list[Any]
    approvals: dict[str, Approval]
    lock: ChainLock
    store: Store


def resume(
    chain_id: str,
    *,
    tools: Sequence[Any] = (),
    approvals: Mapping[str, Approval] | None = None,
    model: Model | None = None,
    schema: Any = None,
    key: str | None = None,
    base_url: str | None = None,
    log_path: Path | str | None = None,
    before_call: BeforeCall | None = None,
    after_call: AfterCall | None = None,
) -> ChainResponse:
    """Go on with logged chain `chain_id` (an id or a unique prefix) from where its log ends.

    `tools`: the chain's tools again (by name; a tool whose every call is logged may be left out).
    `approvals`: for a waiting chain, `{call_id: True | cf.Approved(arguments) | cf.Denied(reason)}`
    (a pending call left out keeps waiting). `model`: the model to go on with (else the spec's, by
    name, its key from the environment or the key store, or `key`). `schema`: the chain's schema as
    a Python type, to get its value as that type. Raises ResumeError (or SpecError) at once when
    the chain cannot be resumed; nothing is sent then and the log is unchanged.
    """
    response: ChainResponse = _start(Model, _ready(chain_id, tools, approvals, schema, log_path), model, key,
                                     base_url, before_call, after_call)  # fmt: skip
    return response


def aresume(
    chain_id: str,
    *,
    tools: Sequence[Any] = (),
    approvals: Mapping[str, Approval] | None = None,
    model: AsyncModel | None = None,
    schema: Any = None,
    key: str | None = None,
    base_url: str | None = None,
    log_path: Path | str | None = None,
    before_call: BeforeCall | None = None,
    after_call: AfterCall | None = None,
) -> AsyncChainResponse:
    """The async twin of `resume`: an AsyncChainResponse to await (checks and the lock happen now)."""
    response: AsyncChainResponse = _start(AsyncModel, _ready(chain_id, tools, approvals, schema, log_path),
                                          model, key, base_url, before_call, after_call)  # fmt: skip
    return response


def _start(
    cls: Any,
    ready: _Ready,
    given: Any,
    key: str | None,
    base_url: str | None,
    before_call: BeforeCall | None,
    after_call: AfterCall | None,
) -> Any:
    """The response of the resumed chain on a `cls` model; the chain's lock is let go when it ends."""
    try:
        runner = _model(cls, ready, given, key, base_url)
        spec = ready.spec
        around_hosted(  # the model gone on with has the chain's hosted tools: HostedToolError now, not mid-chain
            runner.profile,
            [t.kind for t in spec.hosted_tools],
            has_functions=bool(spec.tools),
            has_schema=spec.output is not None,
            requested=spec.strategy,
        )
    except BaseException:
        ready.lock.release()
        raise
    launch = Launch(
        ready.spec,
        Bound(ready.tools, before_call, after_call),
        ready.row.conversation_id,
        ready.row.id,
        journal=ready.journal,
        approvals=ready.approvals,
        lock=ready.lock,
    )

    async def run(events: Any) -> Any:
        try:
            return await runner._run_logged(launch, events)
        finally:
            ready.lock.release()

    return runner._response_of(run, ready.row.id)


def _model(cls: Any, ready: _Ready, given: Any, key: str | None, base_url: str | None) -> Any:
    """The model to go on with, logging to the chain's own log."""
    if given is None:
        made = get_model(
            ready.spec.model, key=key, base_url=base_url, fallback=list(ready.spec.fallbacks) or None
        )
        given = made
    runner = cls(given.client, given._profile, name=given.name, fallback=given.fallback)
    runner.log_to(ready.store)
    return runner


def _ready(
    chain_id: str,
    tools: Sequence[Any],
    approvals: Mapping[str, Approval] | None,
    schema: Any,
    log_path: Path | str | None,
) -> _Ready:
    store = Store(log_path)
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
) -> _Ready:
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
    return _Ready(row, spec, journal, bound, _approvals(row, spec, approvals or {}), lock, store)


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
