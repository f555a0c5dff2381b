"""A tool's result as the chain's value: `stop_at_tools=[...]` and `cf.Final(value)`. ScriptedClient."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import chainform as cf
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit

BOTH = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
TOOLS_ONLY = cf.ModelProfile(name="tools-only", supports_json_schema=True, supports_tools_with_schema=False)


class Customer(BaseModel):
    id: int
    name: str


ROWS = {1: {"id": 1, "name": "Ada"}, 2: {"id": 2, "nom": "Bob"}}


def find_customer(customer_id: int) -> dict:
    """The customer's row."""
    return ROWS[customer_id]


def lookup(customer_id: int) -> object:
    """The customer, as the final answer when found."""
    row = ROWS[customer_id]
    return cf.Final(row) if "name" in row else f"row {customer_id} is incomplete"


@pytest.mark.parametrize(
    ("profile", "strategy"), [(BOTH, "native"), (TOOLS_ONLY, "tool"), (BOTH, "deferred")]
)
def test_a_stop_at_tool_ends_the_chain_after_one_call_with_its_value(profile, strategy):
    client = ScriptedClient([tool_call("find_customer", customer_id=1)], profile)
    chain = cf.Model(client).chain(
        "Customer 1?",
        tools=[find_customer],
        schema=Customer,
        stop_at_tools=["find_customer"],
        strategy=strategy,
    )
    assert chain.value == Customer(id=1, name="Ada")
    assert chain.ended_by == "find_customer"
    assert len(client.requests) == 1 and chain.responses[0].ended_by == "find_customer"
    assert chain.responses[0].tool_results[0].result == {"id": 1, "name": "Ada"}


def test_a_return_that_fails_validation_goes_back_to_the_model_as_the_tools_error():
    client = ScriptedClient(
        [tool_call("find_customer", customer_id=2), tool_call("find_customer", customer_id=1)], BOTH
    )
    chain = cf.Model(client).chain(
        "Customer?", tools=[find_customer], schema=Customer, stop_at_tools=["find_customer"]
    )
    assert chain.value == Customer(id=1, name="Ada")
    told = client.requests[1][0][-1].function_results[0]
    assert told.error is not None and "does not match the schema" in told.error
    assert [c.purpose for c in chain.responses] == ["chain", "retry"]


def test_a_return_that_never_validates_ends_in_structured_output_error_under_the_reask_limit():
    client = ScriptedClient([tool_call("find_customer", customer_id=2)] * 2, BOTH)
    with pytest.raises(cf.StructuredOutputError):
        cf.Model(client).chain(
            "Customer?",
            tools=[find_customer],
            schema=Customer,
            stop_at_tools=["find_customer"],
            validation_retries=1,
        ).value
    assert len(client.requests) == 2


def test_cf_final_from_inside_a_tool_ends_the_chain():
    client = ScriptedClient([tool_call("lookup", customer_id=2), tool_call("lookup", customer_id=1)], BOTH)
    chain = cf.Model(client).chain("Customer?", tools=[lookup], schema=Customer)
    assert chain.value == Customer(id=1, name="Ada") and chain.ended_by == "lookup"
    assert client.requests[1][0][-1].function_results[0].result == "row 2 is incomplete"
    assert len(client.requests) == 2


def test_cf_final_without_a_schema_returns_the_value_as_it_is():
    client = ScriptedClient([tool_call("lookup", customer_id=1)])
    chain = cf.Model(client).chain("Customer 1?", tools=[lookup])
    assert chain.value == {"id": 1, "name": "Ada"} and chain.ended_by == "lookup"
    assert chain.json() == {"id": 1, "name": "Ada"}


def test_a_model_answer_is_not_ended_by_a_tool():
    client = ScriptedClient([tool_call("find_customer", customer_id=1), '{"id": 1, "name": "Ada"}'], BOTH)
    chain = cf.Model(client).chain("Customer 1?", tools=[find_customer], schema=Customer)
    assert chain.ended_by is None and len(client.requests) == 2


def test_stop_at_naming_a_tool_not_offered_fails_before_any_call():
    client = ScriptedClient([])
    with pytest.raises(cf.UnknownToolError, match=r"'find'.*offered: find_customer"):
        cf.Model(client).chain("x", tools=[find_customer], stop_at_tools=["find"])
    assert client.requests == []


def test_the_log_records_which_tool_ended_the_chain(home):
    client = ScriptedClient([tool_call("find_customer", customer_id=1)], BOTH)
    cf.Model(client).chain(
        "Customer 1?", tools=[find_customer], schema=Customer, stop_at_tools=["find_customer"]
    ).value
    from chainform.store import Store

    (row,) = Store().recent(5)
    assert row.ended_by == "find_customer" and row.finish_reason == "tool_calls"
