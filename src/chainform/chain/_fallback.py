"""Fallback across models: when a model's call fails for a reason another model may not share
(rate limited after the SDK's retries, a server error, a dropped connection, a timeout), the chain
goes on with the next model of the plan, from the transcript it has so far.

A `FallbackPlan` is made once with the model (`cf.get_model(..., fallback=[...])`): every entry is
resolved then, so an unknown name, a missing key or a model naming itself fails before any call.
A `Route` is one chain's walk along it; the engine asks it for the next model after a failure and
chooses the output strategy again for that model's profile. Errors that are the caller's fault
(bad request, auth, a refused format) stay with the model unless `fallback_on` names their kind;
`fallback_on` may also name "output": a model that gave no valid value moves the chain on too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from chainform.clients.base import ChatClient
from chainform.clients.registry import resolve_name
from chainform.errors import (
    AllModelsFailedError,
    ChainformError,
    MissingKeyError,
    ModelNotFoundError,
    ProviderError,
    ProviderErrorKind,
)
from chainform.output._select import Refusals
from chainform.types import ModelProfile

DEFAULT_FALLBACK_ON: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})
"""The kinds that go to the next model unless `fallback_on` says otherwise: failures of the
provider, not of the request (a 529 "overloaded" is a server error)."""

OUTPUT = "output"
"""The `fallback_on` kind for bad output: a value still invalid after the re-asks, a truncated
answer, a failed formatting call (StructuredOutputError, FormattingError)."""
FALLBACK_KINDS: tuple[str, ...] = (*get_args(ProviderErrorKind), OUTPUT)
FallbackKind = ProviderErrorKind | Literal["output"]
"""What `fallback_on` may name: a provider error's kind, or "output" (no valid value)."""


@dataclass(frozen=True)
class Candidate:
    """One model a chain may run on: its client, capabilities, name and learnt refusals."""

    client: ChatClient
    profile: ModelProfile
    name: str
    refusals: Refusals

    @classmethod
    def of(cls, model: Any) -> Candidate:
        """The candidate for a Model/AsyncModel (read by its attributes: models.py sits above)."""
        return cls(model.client, model.profile, model.name, model.refusals)


@dataclass(frozen=True)
class FallbackPlan:
    """The models after the first, in order, and the error kinds that move a chain along."""

    models: tuple[Candidate, ...]
    on: frozenset[str] = DEFAULT_FALLBACK_ON

    @classmethod
    def build(
        cls,
        name: str,
        entries: Sequence[Any],
        fallback_on: Iterable[str] | None,
        make: Any,
    ) -> FallbackPlan | None:
        """Resolve `entries` (model ids, or models already made) for the model called `name`;
        `make(id)` builds a model from an id. Every problem is raised here, before any call."""
        if isinstance(entries, str):
            entries = [entries]
        on = frozenset([fallback_on] if isinstance(fallback_on, str) else fallback_on or ())
        on = on if fallback_on is not None else DEFAULT_FALLBACK_ON
        unknown = sorted(on - set(FALLBACK_KINDS))
        if unknown:
            kinds = ", ".join(FALLBACK_KINDS)
            raise ValueError(f"fallback_on: unknown error kind(s) {', '.join(unknown)}; choose from {kinds}")
        entries = list(entries)
        if OUTPUT in on and not entries:
            raise ValueError("fallback_on=['output'] needs a model to fall back to: give fallback=[...]")
        _check_distinct(name, entries)  # before any is made: a missing key must not hide a repeat
        models: list[Candidate] = []
        for entry in entries:
            label = entry if isinstance(entry, str) else entry.name
            if isinstance(entry, str):
                try:
                    entry = make(entry)
                except (ModelNotFoundError, MissingKeyError, ValueError) as exc:
                    raise type(exc)(f"fallback {label!r}: {exc}") from exc
            models.append(Candidate.of(entry))
        return cls(tuple(models), on) if models else None


def _check_distinct(name: str, entries: list[Any]) -> None:
    """ValueError for a fallback id naming the model itself or an id before it, or one model
    object given twice (it would only fail again the same way)."""
    seen = {_canonical(name): name}
    objects: list[Any] = []
    for entry in entries:
        label = entry if isinstance(entry, str) else getattr(entry, "name", None)
        if not isinstance(label, str):
            raise TypeError(f"a fallback is a model id or a model, not {type(entry).__name__}")
        if not isinstance(entry, str):
            if any(entry is other for other in objects):
                raise ValueError(f"fallback {label!r}: the same model object is given twice")
            objects.append(entry)
            continue
        same = seen.get(_canonical(label))
        if same is not None:
            what = "the model itself" if same == name else f"{same!r} again"
            raise ValueError(f"fallback {label!r} names {what}")
        seen[_canonical(label)] = label


def _canonical(name: str) -> str:
    """provider/model for a name or alias ("4.1-mini" is "openai/gpt-4.1-mini"); unknown: as given."""
    try:
        return "/".join(resolve_name(name))
    except ModelNotFoundError:
        return name


class Route:
    """One chain's walk along its models: the one in use, and the failures that moved it on."""

    def __init__(self, first: Candidate, plan: FallbackPlan) -> None:
        self.models = (first, *plan.models)
        self.on = plan.on
        self.at = 0
        self.failures: list[tuple[str, ProviderError]] = []

    def after_output(self, exc: ChainformError) -> Candidate | None:
        """The next model after the current one gave no valid value (`exc`: StructuredOutputError,
        FormattingError), when `fallback_on` holds "output"; None: `exc` stands (also when no
        model is left: the last model's own error says what went wrong)."""
        if OUTPUT not in self.on or self.at + 1 >= len(self.models):
            return None
        self.at += 1
        return self.models[self.at]

    def after(self, exc: ProviderError) -> Candidate | None:
        """The next model after `exc` on the current one; None when `exc` is not a kind that
        moves on. Raises `AllModelsFailedError` (naming each model and its error) when none is left."""
        if exc.kind not in self.on or isinstance(exc, AllModelsFailedError):
            return None
        self.failures.append((self.models[self.at].name, exc))
        if self.at + 1 >= len(self.models):
            raise AllModelsFailedError(self.failures) from exc
        self.at += 1
        return self.models[self.at]
