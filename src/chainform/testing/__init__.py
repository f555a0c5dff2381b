"""Test helpers: `ScriptedClient` (in-process) and `emulator` (a loopback provider server)."""

from chainform.testing._scripted import ScriptedClient, ScriptItem, tool_call

__all__ = ["ScriptItem", "ScriptedClient", "tool_call"]
