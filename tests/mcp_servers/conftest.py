import pytest

pytest.importorskip("mcp")

from mcp_helpers import http_server  # noqa: F401 - the fixture, shared by this folder
