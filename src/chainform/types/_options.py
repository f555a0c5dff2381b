"""What a caller asks of one call (ChatOptions; how long it may wait, Timeout) and what a model
can do (ModelProfile)."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, Union, runtime_checkable

from chainform._dialect_names import SchemaDialect as SchemaDialect  # re-exported by chainform.types
from chainform.types._hosted import HostedTool

if TYPE_CHECKING:
    from chainform.schema.dialects import Dialect


@runtime_checkable
class ToolSpec(Protocol):
    """What a client needs to offer a tool to a model. `chainform.Tool` satisfies it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class FunctionSpec:
    """A plain tool declaration (no Python behind it), e.g. the output tool of the tool strategy."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ResponseFormat:
    """Plain text, or JSON constrained by a schema (`strict` asks the provider to enforce it)."""

    kind: Literal["text", "json_schema", "json_object"] = "text"
    schema: dict[str, Any] | None = None
    name: str = "response"
    description: str | None = None
    strict: bool = True

    TEXT: ClassVar[ResponseFormat]

    @classmethod
    def json_schema(
        cls,
        schema: dict[str, Any],
        *,
        name: str = "response",
        description: str | None = None,
        strict: bool = True,
    ) -> ResponseFormat:
        return cls("json_schema", schema, name, description, strict)

    @classmethod
    def json_object(cls) -> ResponseFormat:
        return cls("json_object")


ResponseFormat.TEXT = ResponseFormat()


@dataclass(frozen=True)
class ToolMode:
    """auto (model decides), none (no tool calls), required (some tool, or the one named)."""

    mode: Literal["auto", "none", "required"] = "auto"
    function_name: str | None = None

    AUTO: ClassVar[ToolMode]
    NONE: ClassVar[ToolMode]
    REQUIRED_ANY: ClassVar[ToolMode]

    @classmethod
    def required(cls, function_name: str | None = None) -> ToolMode:
        return cls("required", function_name)


ToolMode.AUTO = ToolMode("auto")
ToolMode.NONE = ToolMode("none")
ToolMode.REQUIRED_ANY = ToolMode("required")


@dataclass
class ChatOptions:
    """Per-call settings. `None` means "the provider's default"; `additional_properties` holds extras."""

    allow_multiple_tool_calls: bool | None = None
    frequency_penalty: float | None = None
    max_output_tokens: int | None = field(default=None, metadata={"min": 1})
    model_id: str | None = None
    presence_penalty: float | None = None
    response_format: ResponseFormat | None = None
    seed: int | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = field(default=None, metadata={"min": 0})
    tool_mode: ToolMode | None = None
    tools: Sequence[ToolSpec] | None = None
    hosted_tools: Sequence[HostedTool] | None = None  # tools the provider runs itself (types/_hosted.py)
    top_k: int | None = field(default=None, metadata={"min": 1})
    top_p: float | None = field(default=None, metadata={"min": 0, "max": 1})
    # prompt caching (docs/production.md): True marks the stable prefix for providers that charge
    # for cache writes (Anthropic, Bedrock); False sends no cache hint at all; None: the default
    cache: bool | None = None
    cache_key: str | None = None  # OpenAI's prompt_cache_key (chainform sends the conversation id)
    additional_properties: dict[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> ChatOptions:
        """A copy with some fields changed (the original is never mutated)."""
        return dataclasses.replace(self, **changes)

    def set_fields(self) -> dict[str, Any]:
        """The fields that are set (for logs and for 'unsupported option' checks; every call asks,
        so the field names are listed once, not looked up by `dataclasses.fields` each time)."""
        values = self.__dict__
        out = {name: values[name] for name in OPTION_NAMES if values[name] is not None}
        if self.additional_properties:
            out["additional_properties"] = self.additional_properties
        return out


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ChatOptions) if f.name != "additional_properties")
"""The named options of ChatOptions (every field but the `additional_properties` extras)."""

_VALUE_OPTIONS = {"bool": bool, "int": int, "float": float, "list[str]": list}
_OPTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def as_options(options: ChatOptions | dict[str, Any] | None) -> ChatOptions:
    """ChatOptions from a dict (`-o KEY VALUE` style); unknown keys become provider extras."""
    if options is None:
        return ChatOptions()
    if isinstance(options, ChatOptions):
        return options
    known = {k: v for k, v in options.items() if k in OPTION_NAMES}
    extra = {k: v for k, v in options.items() if k not in OPTION_NAMES}
    return ChatOptions(**known, additional_properties=extra)


_INT64 = 2**63 - 1


@dataclass(frozen=True)
class OptionSpec:
    """One option a caller may set (`-o NAME VALUE`): its value type and bounds (None: unbounded)."""

    name: str
    type: str
    low: float | None = None
    high: float | None = None


def option_specs() -> list[OptionSpec]:
    """The named ChatOptions a caller sets as options, as `check_option` checks them (the fields
    chainform sets itself, such as tools and response_format, are left out)."""
    out = []
    for spec in dataclasses.fields(ChatOptions):
        kind = str(spec.type).removesuffix(" | None")
        if kind in _VALUE_OPTIONS:
            out.append(OptionSpec(spec.name, kind, spec.metadata.get("min"), spec.metadata.get("max")))
    return out


def check_option(name: str, value: Any) -> Any:
    """`value` (as JSON gives it) for the option `name`, checked against the ChatOptions field's
    type and range and converted (an integral 5.0 for an int, one string for a list of them);
    ValueError saying what is wrong. Other names are provider extras, passed on as given."""
    if not _OPTION_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not an option name (letters, digits, _ . -; not empty)")
    if name == "timeout":  # else sent to the provider as an extra field of the request
        raise ValueError("timeout is chainform's own, not a model option: use --timeout")
    spec = next((f for f in dataclasses.fields(ChatOptions) if f.name == name), None)
    if spec is None or name == "additional_properties":
        return value
    kind = _VALUE_OPTIONS.get(str(spec.type).removesuffix(" | None"))
    if kind is None:
        raise ValueError(f"{name} is set by chainform itself, not as an option")
    if kind is list:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise ValueError(f"{name} must be a string or a list of strings, got {value!r}")
        return items
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        return value
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None or not math.isfinite(number) or (kind is int and number != int(number)):
        raise ValueError(f"{name} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    low, high = spec.metadata.get("min"), spec.metadata.get("max")
    if kind is int and abs(number) > _INT64:  # no provider takes more; JSON numbers past it lose digits
        raise ValueError(f"{name} must be an integer between -{_INT64} and {_INT64}, got {value!r}")
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{name} must be {bounds}, got {value!r}")
    return kind(number)


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
"""The image formats every vision API takes."""


@dataclass(frozen=True)
class MediaSupport:
    """What a model reads beside text, as data: checked before anything is sent.

    `types` are the media types it takes (anything else is converted to text locally, or refused);
    `max_bytes` bounds one inline attachment, `max_count` the attachments of one request;
    `url_types` are the types the provider downloads itself when given a URL (others are
    downloaded by chainform and sent inline). The adapter layer checks every part against these
    before sending (clients/_media.py).
    """

    types: frozenset[str] = frozenset()
    max_bytes: int | None = None
    max_count: int | None = None
    url_types: frozenset[str] = frozenset()
    # tighter limits for some types, e.g. (("image/png", 5_000_000),)
    type_limits: tuple[tuple[str, int], ...] = ()
    # at most n of these types in one request, e.g. ((frozenset({"application/pdf"}), 5),)
    count_limits: tuple[tuple[frozenset[str], int], ...] = ()

    def accepts(self, media_type: str) -> bool:
        return media_type in self.types

    def limit(self, media_type: str) -> int | None:
        """The most bytes one attachment of `media_type` may have inline (None: no limit known)."""
        return dict(self.type_limits).get(media_type, self.max_bytes)

    def fetches(self, media_type: str) -> bool:
        return media_type in self.url_types

    def describe(self) -> str:
        """`image/png, application/pdf (at most 20 MB each)`, or `text only`."""
        if not self.types:
            return "text only"
        limit = f" (at most {self.max_bytes / 1_000_000:g} MB each)" if self.max_bytes else ""
        return ", ".join(sorted(self.types)) + limit


@dataclass(frozen=True)
class ModelProfile:
    """A model's capabilities as data. Output-strategy selection reads only this."""

    name: str = "unknown"
    provider: str = "unknown"
    supports_tools: bool = True
    supports_parallel_tool_calls: bool = True
    supports_json_schema: bool = False
    supports_tools_with_schema: bool = False
    supports_tool_choice_required: bool = True
    # a forced tool choice is sent when the caller asks, but the output strategies do not rely on it
    # (a server nothing is known of may ignore it): `auto` does not pick the output tool
    tool_choice_untrusted: bool = False
    supports_strict_schema: bool = False
    supports_streaming: bool = True
    supports_seed: bool = False
    supports_reasoning: bool = False
    # the assistant turn that calls tools is sent with content "" instead of null (servers whose
    # request model types content as a string, e.g. llama-cpp-python, refuse null)
    empty_tool_turn_content: bool = False
    # the request takes OpenAI's prompt_cache_key (routes requests that share a prefix together)
    prompt_cache_key: bool = False
    # Bedrock Converse takes cachePoint blocks for this model (Claude 3.7 on, Nova)
    cache_points: bool = False
    schema_dialect: SchemaDialect = "jsonschema"
    # tool names the provider accepts; others are renamed on the wire and back (clients/base.py `to_wire`)
    tool_name_pattern: str = r"[A-Za-z0-9_-]{1,64}"
    context_window: int | None = None
    max_output_tokens: int | None = None
    unsupported_options: frozenset[str] = frozenset()
    # tools the provider runs itself (types/_hosted.py) and what they combine with in one request
    hosted_tools: frozenset[str] = frozenset()
    hosted_with_functions: bool = False
    hosted_with_schema: bool = False
    # what it reads beside text (images, PDFs...): everything else is converted or refused
    media: MediaSupport = MediaSupport()

    def replace(self, **changes: Any) -> ModelProfile:
        return dataclasses.replace(self, **changes)

    @property
    def dialect(self) -> Dialect:
        """The schema language of `schema_dialect`: adapters convert schemas through it and the chain
        restores outputs through the same object (as a model profile carries its schema transformer)."""
        from chainform.schema.dialects import get_dialect

        return get_dialect(self.schema_dialect)

    @property
    def supports_images(self) -> bool:
        return bool(self.media.types & IMAGE_TYPES)

    def capabilities(self) -> dict[str, Any]:
        """A flat dict for listings (`chainform models`)."""
        flat = {
            f.name: (sorted(v) if isinstance(v := getattr(self, f.name), frozenset) else v)
            for f in dataclasses.fields(self)
            if f.name != "media"
        }
        flat["supports_images"] = self.supports_images
        flat["media"] = sorted(self.media.types)
        return flat


DEFAULT_CONNECT_S = 10.0
DEFAULT_READ_S = 120.0


@dataclass(frozen=True)
class Timeout:
    """`connect`: seconds to open a connection; `read`: seconds the server may stay silent (the
    time since the last byte or event, never the length of the whole answer, so a long answer that
    keeps streaming is never cut). A call past either ends in `ProviderError` (kind "timeout")."""

    connect: float = DEFAULT_CONNECT_S
    read: float = DEFAULT_READ_S

    def __post_init__(self) -> None:
        for name in ("connect", "read"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"timeout {name} must be a positive number of seconds, got {value!r}")

    @classmethod
    def of(cls, value: TimeoutLike) -> Timeout:
        """A `Timeout` from what a caller may give: None (the defaults), a number (the read timeout;
        the connect timeout is the default, or the number when it is smaller), a `(connect, read)`
        pair, or a `Timeout`."""
        if value is None:
            return cls()
        if isinstance(value, Timeout):
            return value
        if isinstance(value, tuple):
            if len(value) != 2:
                raise ValueError(f"a timeout pair is (connect, read), got {value!r}")
            return cls(*value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return cls(min(DEFAULT_CONNECT_S, value) if value > 0 else value, value)
        raise ValueError(f"a timeout is seconds, (connect, read) or Timeout, got {value!r}")

    @classmethod
    def parse(cls, text: str) -> Timeout:
        """`--timeout`'s text: `READ` or `CONNECT,READ` in seconds; ValueError saying what is wrong."""
        parts = [p.strip() for p in text.split(",")]
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"a timeout is SECONDS or CONNECT,READ (seconds), got {text!r}") from None
        if len(numbers) == 1:
            return cls.of(numbers[0])
        if len(numbers) == 2:
            return cls(numbers[0], numbers[1])
        raise ValueError(f"a timeout is SECONDS or CONNECT,READ (seconds), got {text!r}")


TimeoutLike = Union[Timeout, float, tuple[float, float], None]
"""What `timeout=` takes: see `Timeout.of`."""
