"""Resume a logged chain: after a crash, a Ctrl-C, or a person's answer to its pending tool calls.

`cf.resume(chain_id, tools=[...])` (and `cf.aresume`, `chainform resume CHAIN_ID`) reads the
chain's spec and calls from the log and runs the same engine over them (chain/_journal.py): every
logged call is served from the log, never sent again; every logged tool result is reused, the tool
is not run again; the chain goes on for real from the first step the log does not hold. A chain
already done replays to its value without sending anything. See docs/durable.md.

The checks and the lock are chain/_resume.py's (what a `map` or `eval` row's resume shares): one
process at a time continues a chain, a second resume meanwhile is refused with ResumeError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chainform.chain._approval import Approval, Approved, Denied
from chainform.chain._journal import ResumeError
from chainform.chain._resume import Ready, ready
from chainform.chain._tools import AfterCall, BeforeCall
from chainform.models import AsyncModel, Model, get_model
from chainform.output._select import around_hosted
from chainform.response import AsyncChainResponse, ChainResponse
from chainform.store import Store

__all__ = ["Approved", "Denied", "ResumeError", "aresume", "resume"]


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
    ready: Ready,
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
    return runner._resumed(ready, before_call, after_call)


def _model(cls: Any, ready: Ready, given: Any, key: str | None, base_url: str | None) -> Any:
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
) -> Ready:
    return ready(Store(log_path), chain_id, tools, approvals, schema)
