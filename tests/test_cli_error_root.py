"""One exception root: every error remem raises on purpose derives from ``RememError`` (keeping its
second base, so ``except ValueError`` callers still work); each face — the CLI, the REST API, the MCP
tools — turns a RememError raised deep inside into its one-line message, and lets every other
exception surface as the bug it is."""

from __future__ import annotations

import pytest

from remem.errors import RememError

# a failure deep in the library, of a class no face lists by name: only the root can catch it
DEEP = ("the sync lock of /home/alice/.remem is held by pid 4242 (remem sync --agents codex, started "
        "2 min ago); wait for it or stop it with `remem sync --stop`\nsecond line never shown")


class DeepFailure(RememError, RuntimeError):
    pass


def _raise_deep(*_a, **_k):
    raise DeepFailure(DEEP)


def _raise_bug(*_a, **_k):
    turns: list[int] = []
    return sum(turns) / len(turns)       # a ZeroDivisionError: a bug, not a message for the user


def test_every_intentional_error_class_derives_from_the_root():
    from remem.config import ConfigError
    from remem.embed.embedders import EmbedderError, EmbedderUnavailable
    from remem.ingest.normalize import InputError
    from remem.integrations.client import DaemonUnavailable, EndpointMissing
    from remem.integrations.installers.common import InstallError
    from remem.scope import ScopeError
    from remem.server.daemon import DaemonError
    from remem.server.jobs import NoRetry, QueueFull
    from remem.server.optional import Unavailable
    from remem.sources.sync import SyncBusy
    from remem.store import StoreError

    for cls, second in [(ConfigError, ValueError), (ScopeError, ValueError), (InputError, ValueError),
                        (EmbedderError, RuntimeError), (EmbedderUnavailable, RuntimeError),
                        (DaemonError, RuntimeError), (SyncBusy, RuntimeError), (QueueFull, RuntimeError),
                        (NoRetry, RuntimeError), (Unavailable, RuntimeError), (StoreError, RuntimeError),
                        (InstallError, Exception), (DaemonUnavailable, Exception), (EndpointMissing, Exception)]:
        assert issubclass(cls, RememError) and issubclass(cls, second), cls


def test_the_cli_shows_a_deep_remem_error_as_one_line_and_a_bug_as_a_traceback(monkeypatch, remem_home):
    from click.testing import CliRunner

    from remem.cli import cli
    from remem.core import Remem

    monkeypatch.setattr(Remem, "stats", _raise_deep)
    r = CliRunner().invoke(cli, ["stats"])
    assert r.exit_code == 1
    assert r.output.strip() == f"remem: error: {DEEP.splitlines()[0]}", r.output
    monkeypatch.setattr(Remem, "stats", _raise_bug)
    r = CliRunner().invoke(cli, ["stats"])
    assert isinstance(r.exception, ZeroDivisionError) and "remem: error" not in r.output     # not hidden as a message


def test_the_rest_api_answers_a_deep_remem_error_with_its_message_and_a_bug_with_500():
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from remem.server.app import _errors

    app = FastAPI()
    _errors(app)
    app.get("/deep")(lambda: _raise_deep())
    app.get("/bug")(lambda: _raise_bug())
    client = TestClient(app, raise_server_exceptions=False)
    r = client.get("/deep")
    assert r.status_code == 400 and r.json() == {"detail": DEEP.splitlines()[0]}
    r = client.get("/bug")
    assert r.status_code == 500 and DEEP not in r.text
    with pytest.raises(ZeroDivisionError):
        TestClient(app).get("/bug")          # the server's own handler sees the bug, traceback and all


def test_the_mcp_tools_raise_a_deep_remem_error_as_a_tool_error_and_a_bug_as_itself(mem, monkeypatch):
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from remem.mcp_server import Tools, _said

    tools = Tools(mem)
    monkeypatch.setattr(mem, "search", _raise_deep)
    with pytest.raises(ToolError) as got:
        _said("memory_search", tools.memory_search)(query="why does the sync lock stay held")
    assert str(got.value) == DEEP.splitlines()[0]
    monkeypatch.setattr(mem, "search", _raise_bug)
    with pytest.raises(ZeroDivisionError):
        _said("memory_search", tools.memory_search)(query="why does the sync lock stay held")
