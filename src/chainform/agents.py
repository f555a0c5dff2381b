"""`Agent`: a model with instructions, tools and input/output schemas, usable as another's tool.

An agent is a thin layer over `model.chain(...)`: `run` validates the input, starts a chain and
returns its response. As a tool (``tools=[agent]``) its parameters are its input schema and its
result is its validated output; any failure reaches the parent model as a tool error. Parallel
calls run concurrently, nested agents stop at `Agent.max_depth`, and the parent's usage and log
include every subagent call (see docs/agents.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chainform._lineage import AgentRun, Parent, RunContext
from chainform.chain._spec import validation_retries_of
from chainform.chain._tools import is_tool_source
from chainform.errors import (
    ChainformError,
    ChainInterruptedError,
    StructuredOutputGenerationError,
    ToolArgumentError,
    ToolError,
)
from chainform.models import AsyncModel, Model
from chainform.output import OutputSpec
from chainform.response import AsyncChainResponse
from chainform.tools import Tool

TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the agent should do, in full."}},
    "required": ["task"],
}


class Agent:
    """A named model + instructions + tools, with optional input and output schemas.

    >>> researcher = Agent("openai/gpt-4.1-mini", name="researcher", description="Finds facts",
    ...                    output_schema="fact, source")  # doctest: +SKIP
    >>> researcher.run("Tallest building in Paris?").value  # doctest: +SKIP
    """

    max_depth = 3  # agents calling agents: deeper calls fail with a tool error

    def __init__(
        self,
        model: Model | AsyncModel | str,
        *,
        name: str,
        description: str,
        instructions: str | None = None,
        tools: Sequence[Any] = (),
        input_schema: Any = None,
        output_schema: Any = None,
        strategy: str = "auto",
        chain_limit: int = 5,
        validation_retries: int | None = None,
        retries: int | None = None,
    ) -> None:
        if isinstance(model, str):
            from chainform.models import get_model

            model = get_model(model)
        self.model = model
        self.name = name
        self.description = description
        self.instructions = instructions
        self.tools = list(tools)
        self.input = OutputSpec.from_user(input_schema) if input_schema is not None else None
        self.output_schema = output_schema
        self.strategy = strategy
        self.chain_limit = chain_limit
        self.validation_retries = validation_retries_of(validation_retries, retries)
        self._tool = Tool.from_schema(name, description, self.parameters, self._call, takes_context=True)
        self._twin: AsyncModel | None = None

    def __repr__(self) -> str:
        return f"<Agent {self.name!r} on {self.model.name!r}>"

    @property
    def parameters(self) -> dict[str, Any]:
        """The agent's parameters as a tool: its input schema, or ``{"task": string}``."""
        if self.input is None:
            return TASK_SCHEMA
        if self.input.schema.get("type") == "object":
            return self.input.schema
        return {"type": "object", "properties": {"input": self.input.schema}, "required": ["input"]}

    # -- running --------------------------------------------------------------------------------

    def _prompt(self, value: Any) -> str:
        """The user message for `value`, after checking it against the input schema."""
        if self.input is None:
            if isinstance(value, dict) and set(value) == {"task"}:
                value = value["task"]
            if not isinstance(value, str):
                raise ToolArgumentError(self.name, ["this agent has no input schema: give a string task"])
            return value
        data = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
        try:
            self.input.check(data)
        except StructuredOutputGenerationError as exc:
            raise ToolArgumentError(self.name, [str(exc).replace("The output", "The input")]) from None
        return json.dumps(data, ensure_ascii=False)

    def _options(self) -> dict[str, Any]:
        return {
            "system": self.instructions or self.description,
            "tools": self.tools,
            "schema": self.output_schema,
            "strategy": self.strategy,
            "chain_limit": self.chain_limit,
            "validation_retries": self.validation_retries,
        }

    def run(self, input: Any, *, attachments: Sequence[Any] | None = None, convert: bool = True) -> Any:
        """Validate `input` and start the agent's chain: a ChainResponse (an AsyncChainResponse,
        to await, when the model is async). Bad input raises ToolArgumentError. `attachments`
        (chainform.Attachment) go beside it, as for `model.chain`."""
        return self.model.chain(
            self._prompt(input), attachments=attachments, convert=convert, **self._options()
        )

    # -- as a tool ------------------------------------------------------------------------------

    def as_tool(self) -> Tool:
        """This agent as a tool for a chain or another agent (`tools=[agent]` does this)."""
        return self._tool

    def _async_model(self) -> AsyncModel:
        """The agent's model as an AsyncModel on the same client, so a subagent chain runs on the
        caller's loop (parallel subagents then really run concurrently)."""
        if isinstance(self.model, AsyncModel):
            return self.model
        if self._twin is None:
            model = self.model
            self._twin = model._twin()  # its profile, name, log and fallback models
            self._twin._store = model._open_store()
        return self._twin

    async def _call(self, context: RunContext | None, /, **arguments: Any) -> Any:
        """The agent as a tool: `context` is the calling chain's and this call's (the engine gives
        it; None when the tool is invoked outside a chain). The subagent's chain links back to it."""
        parent = context.parent(self.name) if context is not None else Parent(self.name, 1)
        if parent.depth > self.max_depth:
            raise ToolError(
                f"agent {self.name!r} not run: subagents may nest {self.max_depth} deep "
                "(Agent.max_depth); answer without it"
            )
        wrapped = self.input is not None and self.input.schema.get("type") != "object"
        value = arguments.get("input") if wrapped else arguments
        prompt = self._prompt(value)
        run = AgentRun(self.name, parent.call_id)
        if context is not None:
            context.chain.children.append(run)
        try:
            response: AsyncChainResponse = self._async_model().chain(prompt, parent=parent, **self._options())
            await response
        except ChainformError as exc:
            run.calls, run.children, run.error = list(exc.responses), list(exc.agent_runs), str(exc)
            if isinstance(exc, ChainInterruptedError):
                raise  # a KeyboardInterrupt below stops the chains above too
            raise ToolError(f"agent {self.name!r} failed: {exc}") from None
        run.calls, run.children = response.responses, response.agent_runs
        return response.json() if self.output_schema is not None else await response.text()

    # -- MCP sessions ---------------------------------------------------------------------------

    def _sources(self) -> list[Any]:
        return [t for t in self.tools if is_tool_source(t)]

    def __enter__(self) -> Agent:
        for source in self._sources():
            source.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        for source in self._sources():
            source.release()

    async def __aenter__(self) -> Agent:
        for source in self._sources():
            await source.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for source in self._sources():
            await source.__aexit__(*exc)
