"""ChainSpec: everything a chain is asked, as one immutable, versioned, JSON-serialisable value.

`Model.chain(**kwargs)` (and through it the CLI, `map`, `eval` and `Agent`) builds the spec once;
the engine reads it and never changes it. The log keeps its JSON beside the chain's calls
(`chains.spec`), so `cf.resume` / `chainform resume` can go on with a chain after a crash or an
approval. A spec never holds a key: keys come from the environment, the key store or `--key` when
the chain is resumed. What is not data (the tools' Python code, `before_call`/`after_call` hooks)
is bound to the run beside the spec: a resumed chain is given its tools again by name.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from chainform.errors import ChainformError
from chainform.output import OutputSpec
from chainform.output.strategies._context import ContextPolicy
from chainform.pricing import Cost, as_cost
from chainform.types import ChatOptions, HostedTool, Message
from chainform.types._options import as_options, check_option, option_specs

if TYPE_CHECKING:
    from collections.abc import Callable

    from chainform.store._attachments import Blobs

SPEC_VERSION = 2
"""The version a spec is written with; a log holding a newer one is refused at resume.
1: the first; 2: `hosted_tools` (a version-1 spec has none, and reads as such)."""


class SpecError(ChainformError):
    """A logged chain spec cannot be read: written by a newer chainform, or edited into a shape
    that is not a spec. Nothing is sent and nothing in the log is changed."""


@dataclass(frozen=True)
class ToolRef:
    """A tool as the spec names it: what the model was offered. The code is bound at run time."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    requires_approval: bool = False


@dataclass(frozen=True)
class Limits:
    """How far a chain may go: model turns with tools, validation re-asks, money (USD), and the
    larger output limit a cut-off answer is asked again with (once)."""

    chain_limit: int = 5
    validation_retries: int = 2  # re-asks after output that fails validation (not transport retries)
    max_cost: Decimal | None = None
    retry_max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.chain_limit < 1:
            raise ValueError("chain_limit must be at least 1")
        if self.validation_retries < 0:
            raise ValueError("validation_retries cannot be negative")


@dataclass(frozen=True)
class FormatSettings:
    """What the deferred formatting call sees (`policy`) and the prompt it is given."""

    policy: ContextPolicy = field(default_factory=ContextPolicy)
    prompt: str | None = None


@dataclass(frozen=True)
class ChainSpec:
    """What a chain is asked: prompt and history, system, tools, output, strategy, limits,
    formatting, options (the provider-run `hosted_tools` among them), fallbacks and approvals.
    Immutable; `to_json()`/`from_json()` round-trip it."""

    model: str
    prompt: Message | None = None
    system: str | None = None
    history: tuple[Message, ...] = ()
    tools: tuple[ToolRef, ...] = ()
    output: OutputSpec | None = None
    strategy: str = "auto"
    limits: Limits = field(default_factory=Limits)
    formatting: FormatSettings = field(default_factory=FormatSettings)
    options: ChatOptions = field(default_factory=ChatOptions)
    stream: bool = True
    fallbacks: tuple[str, ...] = ()
    requires_approval: tuple[str, ...] = ()  # tool names whose calls wait for a person
    stop_at_tools: tuple[str, ...] = ()  # a call of one of these ends the chain with its result
    version: int = SPEC_VERSION

    @classmethod
    def build(
        cls,
        model: str,
        *,
        prompt: Message | None,
        system: str | None,
        history: Any,
        tools: Any,
        output: OutputSpec | None,
        strategy: str,
        chain_limit: int,
        validation_retries: int,
        max_cost: Cost | None,
        format_context: str | ContextPolicy,
        format_prompt: str | None,
        options: ChatOptions | dict[str, Any] | None,
        stream: bool,
        fallbacks: Any = (),
        requires_approval: Any = (),
        retry_max_tokens: int | None = None,
        stop_at_tools: Any = (),
    ) -> ChainSpec:
        """The spec of a chain from `Model.chain`'s arguments (tools already normalised to Tools)."""
        approval = tuple(dict.fromkeys(requires_approval))
        return cls(
            model=model,
            prompt=prompt,
            system=system,
            history=tuple(history),
            tools=_refs(tools, approval),
            output=output,
            strategy=strategy,
            limits=Limits(
                chain_limit,
                validation_retries,
                as_cost(max_cost) if max_cost is not None else None,
                retry_max_tokens,
            ),
            formatting=FormatSettings(ContextPolicy.parse(format_context), format_prompt),
            options=as_options(options),
            stream=stream,
            fallbacks=tuple(fallbacks),
            requires_approval=approval,
            stop_at_tools=tuple(sorted(stop_at_tools)),
        )

    def with_tools(self, tools: Any) -> ChainSpec:
        """The same spec offering `tools` (Tools): MCP servers list theirs once the chain starts."""
        return replace(self, tools=_refs(tools, self.requires_approval))

    @property
    def hosted_tools(self) -> tuple[HostedTool, ...]:
        """The tools the provider runs itself (web search, code execution...) the chain offers."""
        return tuple(self.options.hosted_tools or ())

    def needs_approval(self, tool_name: str) -> bool:
        return any(t.name == tool_name and t.requires_approval for t in self.tools) or (
            tool_name in self.requires_approval
        )

    # -- JSON -------------------------------------------------------------------------------

    def to_dict(self, blobs: Blobs | None = None) -> dict[str, Any]:
        """The spec as JSON-able data. With `blobs` (the log's way), the messages' inline bytes are
        kept there by their sha256 and each part names its key; without, they are base64 inline."""
        from chainform.store._serialize import redact, stored_message, to_jsonable

        fields = self.options.set_fields()
        options = redact(
            {k: to_jsonable(v) for k, v in fields.items() if k not in ("tools", "cache_key", "hosted_tools")}
        )
        output = None
        if self.output is not None:
            output = {
                "schema": self.output.schema,
                "name": self.output.name,
                "description": self.output.description,
            }
        return {
            "version": self.version,
            "model": self.model,
            "prompt": stored_message(self.prompt, blobs) if self.prompt is not None else None,
            "system": self.system,
            "history": [stored_message(m, blobs) for m in self.history],
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "requires_approval": t.requires_approval,
                }
                for t in self.tools
            ],
            "output": output,
            "strategy": self.strategy,
            "limits": {
                "chain_limit": self.limits.chain_limit,
                "validation_retries": self.limits.validation_retries,
                "max_cost": str(self.limits.max_cost) if self.limits.max_cost is not None else None,
                "retry_max_tokens": self.limits.retry_max_tokens,
            },
            "formatting": {
                "policy": self.formatting.policy.name,
                "budget_tokens": self.formatting.policy.budget_tokens,
                "prompt": self.formatting.prompt,
            },
            "options": options,
            "stream": self.stream,
            "fallbacks": list(self.fallbacks),
            "requires_approval": list(self.requires_approval),
            "stop_at_tools": list(self.stop_at_tools),
            "hosted_tools": [t.to_dict() for t in self.hosted_tools],
        }

    def to_json(self, blobs: Blobs | None = None) -> str:
        """The spec as JSON: option entries under secret-looking names and every loaded key value
        are masked. The log's `chains.spec` is written with `blobs`: each file once by its sha256
        in the `attachments` table, never as base64 (`to_dict`)."""
        from chainform.keys import redact as mask_keys
        from chainform.store._serialize import dumps

        return mask_keys(dumps(self.to_dict(blobs)))

    @classmethod
    def from_json(cls, text: str, files: Callable[[str], bytes] | None = None) -> ChainSpec:
        """A spec back from its JSON; SpecError when it is newer than this chainform or malformed.
        A message part stored by its sha256 gets the bytes `files` gives for that key (a lookup in
        the log, which raises when the log lacks them); without `files` it is left empty, enough to
        read the spec's settings, not to send it. Inline base64 (an older log) reads as it is."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"the chain's spec is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise SpecError("the chain's spec is not a JSON object")
        version = data.get("version")
        if not isinstance(version, int):
            raise SpecError("the chain's spec has no version number")
        if version > SPEC_VERSION:
            raise SpecError(
                f"the chain was started by a newer chainform (spec version {version} > {SPEC_VERSION}); upgrade chainform"
            )
        try:
            return cls._from_dict(data, files)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SpecError(f"the chain's spec is malformed ({type(exc).__name__}: {exc})") from None

    @classmethod
    def _from_dict(cls, data: dict[str, Any], files: Callable[[str], bytes] | None) -> ChainSpec:
        from chainform.schema.validate import compile_validator
        from chainform.store._serialize import message_from_stored

        out = data.get("output")
        output = None
        if out is not None:
            if not isinstance(out.get("schema"), dict):
                raise ValueError("output.schema must be an object")
            compile_validator(out["schema"])  # a schema edited into one that is not: SchemaError now
            output = OutputSpec(
                out["schema"], None, str(out.get("name") or "response"), out.get("description")
            )
        limits, fmt = data["limits"], data["formatting"]
        max_cost = limits.get("max_cost")
        tools = tuple(
            ToolRef(str(t["name"]), str(t.get("description") or ""), dict(t.get("parameters") or {}),
                    bool(t.get("requires_approval", False)))
            for t in data.get("tools") or []
        )  # fmt: skip
        for tool in tools:
            compile_validator(tool.parameters)
        prompt = data.get("prompt")
        return cls(
            model=_text(data["model"], "model"),
            prompt=message_from_stored(prompt, files) if prompt is not None else None,
            system=data.get("system"),
            history=tuple(message_from_stored(m, files) for m in data.get("history") or []),
            tools=tools,
            output=output,
            strategy=_strategy(data.get("strategy", "auto")),
            limits=Limits(
                int(limits["chain_limit"]),
                int(limits["validation_retries"]),
                as_cost(max_cost) if max_cost is not None else None,
                int(limits["retry_max_tokens"]) if limits.get("retry_max_tokens") is not None else None,
            ),
            formatting=FormatSettings(
                replace(
                    ContextPolicy.parse(fmt["policy"]), budget_tokens=int(fmt.get("budget_tokens", 2000))
                ),
                fmt.get("prompt"),
            ),
            options=_options(data.get("options") or {}, data.get("hosted_tools") or []),
            stream=bool(data.get("stream", True)),
            fallbacks=tuple(_text(f, "fallbacks") for f in data.get("fallbacks") or []),
            requires_approval=tuple(
                _text(n, "requires_approval") for n in data.get("requires_approval") or []
            ),
            stop_at_tools=tuple(_text(n, "stop_at_tools") for n in data.get("stop_at_tools") or []),
            version=int(data["version"]),
        )


def _refs(tools: Any, approval: tuple[str, ...]) -> tuple[ToolRef, ...]:
    """The spec's view of Tools: each one's name, description and parameters, and whether its
    calls wait for approval (marked on the tool, or named in `approval`)."""
    marked = set(approval)
    return tuple(
        ToolRef(
            t.name,
            t.description,
            t.parameters,
            bool(getattr(t, "requires_approval", False)) or t.name in marked,
        )
        for t in tools
    )


def _strategy(value: Any) -> str:
    from chainform.output import STRATEGIES

    if value not in STRATEGIES:
        raise ValueError(f"strategy {value!r} is none of {', '.join(STRATEGIES)}")
    return str(value)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text")
    return value


def validation_retries_of(validation_retries: int | None, retries: int | None, *, stacklevel: int = 3) -> int:
    """`validation_retries`, or its deprecated name `retries` (with a DeprecationWarning); else 2.
    Transport retries (a call re-sent after a 429 or a timeout) are another setting: `model.map`'s
    `transport_retries`."""
    if retries is not None:
        warnings.warn(
            "retries= is now validation_retries= (re-asks after output that fails validation)",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        if validation_retries is None:
            validation_retries = retries
    return 2 if validation_retries is None else validation_retries


def _options(data: dict[str, Any], hosted: list[Any]) -> ChatOptions:
    extra = data.get("additional_properties") or {}
    checked = {spec.name for spec in option_specs()}  # a caller's values, checked as `-o` checks them
    named = {k: check_option(k, v) for k, v in data.items() if k in checked}
    options = as_options(
        {**{k: v for k, v in data.items() if k != "additional_properties"}, **named, **extra}
    )
    if not isinstance(hosted, list):
        raise ValueError("hosted_tools must be a list")
    return options.replace(hosted_tools=tuple(HostedTool.from_dict(t) for t in hosted) or None)
