"""`judge=`: off by default; when given, only the free-text fields the rules scored wrong are sent,
a "same" verdict makes them right, its calls are priced into the row; a judge with no key is bad
input before any call."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from click.testing import CliRunner
from eval_helpers import scripted

import chainform as cf
from chainform.cli import cli
from chainform.evals import EvalInputError
from chainform.models import Model
from chainform.testing import ScriptedClient

pytestmark = pytest.mark.usefixtures("priced")

SCHEMA = {
    "type": "object",
    "properties": {"vendor": {"type": "string"}, "city": {"type": "string"}, "total": {"type": "number"}},
    "required": ["vendor", "city", "total"],
}
EXPECTED = [
    {"vendor": "Blue Fern Cafe", "city": "Oslo", "total": 4.0},
    {"vendor": "Acme Tools", "city": "Rome", "total": 9.0},
    {"vendor": "Nordic Paper", "city": "Bern", "total": 2.0},
]
ANSWERS = [
    {"vendor": "The Blue Fern café", "city": "Oslo", "total": 4.0},  # judged the same
    {"vendor": "Apex Tools", "city": "Roma", "total": 9.0},  # vendor judged different, city judged the same
    {"vendor": "nordic  PAPER", "city": "Bern", "total": 3.0},  # the rules say right: never sent
]
ROWS = [{"text": f"invoice {n}", "expected": e} for n, e in enumerate(EXPECTED)]


def verdict(messages, options):
    text = messages[-1].text
    same = ("Blue Fern" in text) or ("Roma" in text)
    return json.dumps({"same": same})


def judge_model():
    client = ScriptedClient([verdict] * 10)
    return Model(client, name="good"), client  # priced as 'good': $0.01 an input token


def test_off_by_default_and_only_wrong_free_text_fields_are_judged():
    model, _ = scripted("bad", lambda n: ANSWERS[n])
    plain = cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[model], concurrency=1)
    assert {p: f.right for p, f in plain.cells[0].fields().items()} == {"vendor": 1, "city": 2, "total": 2}
    assert "judge" not in plain.cells[0].calls_per_row()

    model, _ = scripted("bad", lambda n: ANSWERS[n])
    judge, client = judge_model()
    report = cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[model], judge=judge, concurrency=1)
    cell = report.cells[0]
    asked = sorted(m[-1].text.split("Expected: ")[1].split("\n")[0] for m, _ in client.requests)
    assert asked == ["Acme Tools", "Blue Fern Cafe", "Rome"]  # three wrong free-text fields; total never
    assert {p: f.right for p, f in cell.fields().items()} == {"vendor": 2, "city": 3, "total": 2}
    assert [r.judged for r in cell.rows] == [["vendor"], ["city"], []]
    assert cell.calls_per_row() == {"chain": 1.0, "judge": 1.0}
    assert cell.rows_right == 1  # row 0 (after the judge); row 1 vendor still wrong, row 2 total wrong
    # each judge call: the scripted client counts its prompt's words as input tokens, $0.01 each
    spent = {n: Decimal(0) for n in range(3)}
    for messages, _ in client.requests:
        row = next(
            n
            for n, e in enumerate(EXPECTED)
            if e["vendor"] in messages[-1].text or e["city"] in messages[-1].text
        )
        spent[row] += Decimal(sum(len(m.text.split()) for m in messages)) / 100
    assert [Decimal(r.cost) for r in cell.rows] == [1 + spent[0], 1 + spent[1], Decimal(1)]
    assert cell.cost_per_correct_row == 3 + spent[0] + spent[1]  # everything spent, one row right


def test_judge_fields_must_be_free_text(monkeypatch):
    model, script = scripted("bad", lambda n: ANSWERS[n])
    judge, _ = judge_model()
    with pytest.raises(EvalInputError, match="'total', which is no free-text field"):
        cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[model], judge=judge, judge_fields=["total"])
    assert script.calls == {}


def test_a_judge_with_no_key_is_one_error_line_and_exit_2_before_any_call(tmp_path, monkeypatch, emulator):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    result = CliRunner().invoke(
        cli,
        ["eval", str(data), "--schema", json.dumps(SCHEMA), "-p", "{text}", "-m", "openai/gpt-4.1-mini",
         "--base-url", emulator.base_url + "/v1", "--key", "sk-test", "--judge", "anthropic/claude-haiku-4-5"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: the judge model 'anthropic/claude-haiku-4-5' cannot run: No API key"
    )
    assert len(result.stderr.strip().splitlines()) == 1
    assert emulator.requests == []


def test_the_cli_judge_uses_key_and_base_url_its_failures_count_once_and_a_resume_asks_again(
    tmp_path, emulator
):
    import re

    from chainform.testing.emulator import Fault

    failing = {"on": True}

    def reply(request):
        text = json.dumps(request.json)
        if "Do they say the same thing" in text:
            if failing["on"]:
                return Fault(429, retry_after=0)
            return json.dumps({"same": "Blue Fern" in text or "Roma" in text})
        return json.dumps(ANSWERS[int(re.search(r"invoice (\d)", text).group(1))])

    emulator.default = reply
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    argv = ["eval", str(data), "--schema", json.dumps(SCHEMA), "-p", "{text}", "-m", "openai/gpt-4.1-mini",
            "--base-url", emulator.base_url + "/v1", "--key", "sk-test", "--judge", "openai/gpt-4.1-nano",
            "--json", "--concurrency", "1"]  # fmt: skip
    first = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    judged = [r for r in emulator.requests if "Do they say" in json.dumps(r.json)]
    assert len(judged) == 3 * 3  # three judge calls, each sent once and re-tried twice (not 3 x 9)
    assert all(r.headers.get("authorization") == "Bearer sk-test" for r in judged)
    cell = json.loads(first.stdout)["cells"][0]
    assert cell["errors"] == {"judge": 3} and cell["fields"]["vendor"]["right"] == 1
    assert cell["calls_per_row"]["resent"] == 2.0  # two transport retries per judge call, shown

    failing["on"] = False
    resumed = CliRunner().invoke(cli, [*argv, "--resume"], catch_exceptions=False)
    assert resumed.exit_code == 0, resumed.output
    cell = json.loads(resumed.stdout)["cells"][0]
    assert (
        cell["errors"] == {}
        and cell["fields"]["vendor"]["right"] == 2
        and cell["fields"]["city"]["right"] == 3
    )


def test_the_models_key_never_goes_to_a_judge_endpoint_of_its_own(monkeypatch):
    from chainform.evals import _run

    made: list[dict[str, object]] = []
    monkeypatch.setattr(_run, "_model", lambda model, options: made.append(dict(options)) or model)
    models = {"key": "sk-models", "base_url": "http://models.example/v1"}
    _run._judge_model(
        "openai/gpt-4.1", models, ["openai/gpt-4.1-mini"], {"base_url": "http://other.example/v1"}
    )
    assert made[-1] == {"base_url": "http://other.example/v1"}
    _run._judge_model(
        "openai/gpt-4.1", models, ["openai/gpt-4.1-mini"], {"base_url": "http://models.example/v1"}
    )
    assert made[-1] == models
    _run._judge_model(
        "openai/gpt-4.1", models, ["openai/gpt-4.1-mini"], {"key": "sk-judge", "base_url": None}
    )
    assert made[-1] == {"key": "sk-judge", "base_url": "http://models.example/v1"}
