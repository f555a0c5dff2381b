"""Tool calls that wait for a person: what a waiting chain lists, and the answers a resume gives.

A tool marked `requires_approval` (on the Tool, or by name on the chain: `requires_approval=[...]`,
CLI `--approve-later TOOL`) is not run when the model calls it: the chain's other calls of that
turn run, then the chain ends as "waiting" with its `pending` calls. `cf.resume(chain_id,
approvals={call_id: True | cf.Approved(arguments) | cf.Denied(reason)})` goes on from the log:
an approved call runs (with the new arguments when given), a denied one reaches the model as the
tool's refused result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from chainform.errors import ChainformError


@dataclass(frozen=True)
class Approved:
    """Run the pending call; with `arguments`, run it with these instead of the model's."""

    arguments: dict[str, Any] | None = None


@dataclass(frozen=True)
class Denied:
    """Do not run the pending call; the model is told it was refused (and why, when given)."""

    reason: str | None = None


Approval = Union[bool, Approved, Denied]


@dataclass(frozen=True)
class PendingCall:
    """A tool call that waits for approval: its id (what approvals name), tool and arguments."""

    id: str
    tool: str
    arguments: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "arguments": self.arguments}


class ChainWaiting(Exception):
    """Raised inside the engine when a turn's calls wait for approval; never reaches the caller."""

    def __init__(self, pending: list[PendingCall]) -> None:
        super().__init__(f"{len(pending)} tool call(s) wait for approval")
        self.pending = pending


class ChainWaitingError(ChainformError):
    """The chain's value was asked for, but the chain waits for a person to approve tool calls:
    resume it with `cf.resume(chain_id, approvals=...)` (`.pending` lists them)."""

    def __init__(self, chain_id: str, pending: list[PendingCall]) -> None:
        names = ", ".join(f"{p.tool} ({p.id})" for p in pending)
        super().__init__(
            f"chain {chain_id} waits for approval of {names}; resume it with `chainform resume {chain_id} "
            "--approve CALL` or cf.resume(chain_id, approvals={...})"
        )
        self.chain_id = chain_id
        self.pending = pending


def decided(approval: Approval) -> Approved | Denied:
    """An approval as Approved or Denied (`True`: approved as called; `False`: denied)."""
    if approval is True:
        return Approved()
    if approval is False:
        return Denied()
    if isinstance(approval, Approved | Denied):
        return approval
    raise TypeError(
        f"an approval is True, False, cf.Approved(arguments) or cf.Denied(reason), not {approval!r}"
    )
