"""`--profile`: what the server at `--base-url` can do, when its URL does not say (issue 30 item 3)."""

from __future__ import annotations

import json

import pytest

from chainform.testing.emulator import Emulator


@pytest.mark.parametrize(("flags", "strict"), [((), False), (("--profile", "openai"), True)])
def test_profile_decides_what_is_sent_to_a_foreign_url(run, emulator: Emulator, flags, strict) -> None:
    emulator.add('{"name": "Rex", "age": 3}')
    url = emulator.base_url + "/v1"
    result = run(
        "A dog",
        "-m",
        "openai/gpt-4.1-mini",
        "--base-url",
        url,
        "--key",
        "sk-t",
        "--schema",
        "name, age int",
        *flags,
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "Rex", "age": 3}
    sent = emulator.requests[-1].json["response_format"]["json_schema"]
    assert sent.get("strict", False) is strict


def test_the_profile_name_is_checked_before_anything_is_sent(run) -> None:
    result = run(
        "hi", "-m", "openai/m", "--base-url", "http://127.0.0.1:9/v1", "--key", "k", "--profile", "nope"
    )
    assert result.exit_code == 2
    assert "'nope' is not a profile: name one of openai, ollama" in result.stderr
