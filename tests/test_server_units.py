"""Pure pieces of the daemon, as tables of cases: progress folding, log scrubbing, Host parsing, tokens."""

from __future__ import annotations

import logging

import pytest

from remem.server import jobs, logs, security
from remem.server.jobkinds import SyncProgress
from remem.server.state import Confirmations


@pytest.mark.parametrize("progress,expected", [
    ({}, None),
    ({"done": 5, "total": 10}, 0.5),
    ({"done": 12, "total": 10}, 1.0),
    ({"units_done": 1, "units_total": 4}, 0.25),
    ({"done": 3, "total": 0}, None),
    ({"fraction": 0.7, "done": 1, "total": 10}, 0.7),
    ({"fraction": 3}, 1.0),
    ({"done": True, "total": "x"}, None),
])
def test_fraction(progress, expected):
    assert jobs.fraction(progress) == expected


def test_sync_progress_spans_all_sources():
    p = SyncProgress(planned=2)
    assert p.view()["fraction"] == 0.0
    p.see({"event": "source_start", "source": "claude-code", "units_total": 10})
    p.see({"event": "progress", "source": "claude-code", "units_done": 5, "units_total": 10, "turns_added": 7,
           "messages_scanned": 30})
    v = p.view()
    assert v["fraction"] == 0.25 and v["counts"] == {"turns_added": 7, "messages_scanned": 30}
    p.see({"event": "source_done", "source": "claude-code", "turns_added": 9, "messages_scanned": 40,
           "units_total": 10, "units_read": 10})
    p.see({"event": "source_start", "source": "codex", "units_total": 4})
    p.see({"event": "progress", "source": "codex", "units_done": 2, "units_total": 4, "turns_added": 1})
    v = p.view()
    assert v["fraction"] == 0.75 and v["counts"]["turns_added"] == 10 and v["counts"]["messages_scanned"] == 40
    p.see({"event": "source_done", "source": "codex", "turns_added": 2})
    p.see({"event": "done", "total": {}})
    assert p.view()["fraction"] == 1.0 and p.view()["counts"]["turns_added"] == 11


def test_sync_progress_without_a_plan_never_goes_past_one():
    p = SyncProgress(planned=None)
    assert "fraction" not in p.view()
    p.see({"event": "source_start", "source": "a", "units_total": 0})
    p.see({"event": "source_done", "source": "a"})
    p.see({"event": "source_start", "source": "b", "units_total": 3})
    p.see({"event": "progress", "source": "b", "units_done": 3, "units_total": 3})
    assert p.view()["fraction"] <= 1.0


def test_more_sources_than_planned_keeps_the_bar_sane():
    p = SyncProgress(planned=1)
    for name in ("a", "b", "c"):
        p.see({"event": "source_start", "source": name, "units_total": 2})
        p.see({"event": "progress", "source": name, "units_done": 1, "units_total": 2})
        assert 0.0 <= p.view()["fraction"] <= 1.0
        p.see({"event": "source_done", "source": name})


@pytest.mark.parametrize("text,gone", [
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnopqrstuvwxyz0123"),
    ("cookie: remem_session=deadbeefdeadbeef; other=1", "deadbeefdeadbeef"),
    ("login with token=Zx81kQp0vLm2RtY7", "Zx81kQp0vLm2RtY7"),
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyzABCDEFGH012345", "abcdefghijklmnopqrstuvwxyzABCDEFGH012345"),
    ("the daemon token THE-SECRET-TOKEN-VALUE appears", "THE-SECRET-TOKEN-VALUE"),
])
def test_scrub(text, gone):
    out = logs.scrub(text, ("THE-SECRET-TOKEN-VALUE",))
    assert gone not in out and "[REDACTED" in out


def test_scrub_filter_applies_args_and_exceptions():
    rec = logging.LogRecord("remem", logging.ERROR, __file__, 1, "failed for %s", ("tok-SECRET123456",), None)
    try:
        raise RuntimeError("boom tok-SECRET123456")
    except RuntimeError:
        import sys

        rec.exc_info = sys.exc_info()
    logs.ScrubFilter(("tok-SECRET123456",)).filter(rec)
    assert "tok-SECRET123456" not in rec.getMessage() and "RuntimeError" in rec.getMessage()


@pytest.mark.parametrize("header,name", [
    ("127.0.0.1:7077", "127.0.0.1"), ("localhost", "localhost"), ("[::1]:7077", "[::1]"),
    ("LOCALHOST:1", "localhost"), ("evil.example:7077", "evil.example"), ("", ""),
])
def test_host_name(header, name):
    assert security.host_name(header) == name


@pytest.mark.parametrize("path,public", [
    ("/health", True), ("/login", True), ("/static/app.js", True), ("/api/v1/auth/login", True),
    ("/", False), ("/api/v1/stats", False), ("/api/v1/openapi.json", False), ("/staticx", False),
    ("/api/v1/events", False),
])
def test_public_paths(path, public):
    assert security.is_public(path) is public


def test_session_cookie_is_derived_from_the_token():
    a, b = security.session_value("token-a"), security.session_value("token-b")
    assert a != b and "token-a" not in a and len(a) == 64 and a == security.session_value("token-a")


def test_confirmations_are_single_use_and_bound():
    c = Confirmations()
    tok = c.issue("rescan", {"agents": ["codex"]})
    assert not c.redeem("clear", tok)
    assert not c.redeem("rescan", tok, {"agents": None})
    assert c.redeem("rescan", tok, {"agents": ["codex"]})
    assert not c.redeem("rescan", tok, {"agents": ["codex"]})
    assert not c.redeem("rescan", "made-up")
