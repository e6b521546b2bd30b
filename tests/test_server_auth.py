"""The daemon's gate over real HTTP: every auth case, no CORS, Host check, body limits, no secrets in logs."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from remem.server.testing import Daemon

pytestmark = pytest.mark.module_store  # its tests share the store a module fixture built

SECRET = "sk-ant-api03-" + "Zq7Xv2Lm9Rt4Kp8Wn3Yb6Hd1Fs5Gj0Ac" * 2


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("auth")
    (base / "home").mkdir()
    d = Daemon(base / "remem", env={"HOME": str(base / "home"), "REMEM_AUTO_SYNC": "0"})
    d.start()
    yield d
    d.stop()


def test_health_is_public_and_says_little(daemon):
    r = httpx.get(daemon.url + "/health")
    assert r.status_code == 200
    body = r.json()
    assert body["service"] == "remem" and body["status"] == "ready"
    assert str(daemon.home) not in r.text and daemon.token not in r.text


@pytest.mark.parametrize("method,path", [
    ("GET", "/api/v1/stats"), ("GET", "/api/v1/memories"), ("GET", "/api/v1/memories/search?q=x"),
    ("POST", "/api/v1/memories"), ("GET", "/api/v1/openapi.json"), ("GET", "/api/v1/events"),
    ("GET", "/api/v1/export/sqlite"), ("POST", "/api/v1/data/clear"), ("PATCH", "/api/v1/config"),
    ("GET", "/api/v1/logs"), ("POST", "/api/v1/recall/turn-start"), ("GET", "/api/v1/status"),
])
def test_every_route_needs_the_token(daemon, method, path):
    r = httpx.request(method, daemon.url + path, json={} if method != "GET" else None)
    assert r.status_code == 401, (path, r.status_code)
    assert r.headers.get("www-authenticate") == "Bearer"
    r = httpx.request(method, daemon.url + path, headers={"Authorization": "Bearer wrong-token-value-0123456789"},
                      json={} if method != "GET" else None)
    assert r.status_code == 401
    r = httpx.request(method, daemon.url + path, headers={"Authorization": "Basic " + daemon.token})
    assert r.status_code == 401


def test_bearer_token_works(daemon):
    with daemon.client() as c:
        assert c.get("/api/v1/stats").status_code == 200
        assert "/api/v1/memories/search" in c.get("/api/v1/openapi.json").json()["paths"]


def test_viewer_redirects_to_login_and_static_code_is_public(daemon):
    r = httpx.get(daemon.url + "/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert httpx.get(daemon.url + "/login").status_code == 200
    js = httpx.get(daemon.url + "/static/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]


def test_cookie_login_flow(daemon):
    with httpx.Client(base_url=daemon.url) as c:
        bad = c.post("/api/v1/auth/login", json={"token": "not-the-token"})
        assert bad.status_code == 401 and "remem_session" not in bad.headers.get("set-cookie", "")
        ok = c.post("/api/v1/auth/login", json={"token": daemon.token})
        assert ok.status_code == 200
        cookie = ok.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert daemon.token.lower() not in cookie  # the cookie is derived, not the token itself
        assert c.get("/api/v1/stats").status_code == 200
        assert c.get("/", follow_redirects=False).status_code == 200
        # writes with the cookie need the custom header (a cross-site form cannot send it)
        r = c.post("/api/v1/memories", json={"text": "cookie write", "agent": "codex"})
        assert r.status_code == 403
        r = c.post("/api/v1/memories", json={"text": "cookie write", "agent": "codex"},
                   headers={"X-Remem-Request": "1"})
        assert r.status_code == 201
        r = c.post("/api/v1/memories", json={"text": "evil write", "agent": "codex"},
                   headers={"X-Remem-Request": "1", "Origin": "http://evil.example"})
        assert r.status_code == 403
        c.post("/api/v1/auth/logout", headers={"X-Remem-Request": "1"})
        c.cookies.clear()
        assert c.get("/api/v1/stats").status_code == 401
    forged = httpx.get(daemon.url + "/api/v1/stats", cookies={"remem_session": "0" * 64})
    assert forged.status_code == 401


def test_login_attempts_back_off_per_client_and_never_lock_the_right_token(tmp_path):
    """Ten wrong logins from one client: that client waits (429 with Retry-After); another client and
    the right token from the same client still get in (before, one guesser locked everyone out for 60 s)."""
    (tmp_path / "home").mkdir()
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d:
        codes = [httpx.post(d.url + "/api/v1/auth/login", json={"token": f"guess-{i}"}).status_code
                 for i in range(12)]
        assert codes[:10] == [401] * 10 and codes[-2:] == [429, 429]
        r = httpx.post(d.url + "/api/v1/auth/login", json={"token": "guess-again"})
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 61
        assert "too many failed logins from 127.0.0.1" in r.json()["detail"]
        ok = httpx.post(d.url + "/api/v1/auth/login", json={"token": d.token})  # same client, right token
        assert ok.status_code == 200 and "remem_session=" in ok.headers["set-cookie"]
        # another client (another loopback address) is not held back by the first one's guesses
        other = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(transport=other, base_url=d.url) as c:
            assert c.post("/api/v1/auth/login", json={"token": "guess-x"}).status_code == 401
            assert c.post("/api/v1/auth/login", json={"token": d.token}).status_code == 200
        assert d.get("/api/v1/stats").status_code == 200  # the real token still works by header


def test_no_cors(daemon):
    pre = httpx.options(daemon.url + "/api/v1/stats", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization"})
    assert not any(k.lower().startswith("access-control-") for k in pre.headers)
    with daemon.client() as c:
        r = c.get("/api/v1/stats", headers={"Origin": "http://evil.example"})
        assert r.status_code == 200
        assert not any(k.lower().startswith("access-control-") for k in r.headers)
        assert r.headers["x-frame-options"] == "DENY" and "default-src 'self'" in r.headers["content-security-policy"]


def test_host_header_must_be_loopback(daemon):
    r = httpx.get(daemon.url + "/api/v1/stats", headers={"Host": "evil.example",
                                                         "Authorization": f"Bearer {daemon.token}"})
    assert r.status_code == 421
    r = httpx.get(daemon.url + "/api/v1/stats", headers={"Host": f"localhost:{daemon.port}",
                                                         "Authorization": f"Bearer {daemon.token}"})
    assert r.status_code == 200


def test_request_size_limits(daemon):
    big = b'{"text": "' + b"x" * (9 * 1024 * 1024) + b'"}'
    with daemon.client() as c:
        r = c.post("/api/v1/memories", content=big, headers={"Content-Type": "application/json"})
        assert r.status_code == 413

        def chunks():
            for _ in range(10):
                yield b"y" * (1024 * 1024)

        r = c.post("/api/v1/memories", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert c.get("/api/v1/stats").status_code == 200


def test_too_large_is_refused_before_reading(daemon):
    """A huge declared body is answered at once, without the server reading it."""
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as s:
        s.sendall(f"POST /api/v1/memories HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
                  f"Authorization: Bearer {daemon.token}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {10**10}\r\n\r\n".encode())
        head = s.recv(200)
    assert head.startswith(b"HTTP/1.1 413")


def test_token_and_secrets_never_logged(daemon):
    tok = daemon.token
    with daemon.client() as c:
        c.post("/api/v1/memories", json={"text": f"my key is {SECRET}", "agent": "codex"})
        c.get("/api/v1/memories/search", params={"q": f"key {SECRET}"})
        c.get(f"/api/v1/memories/{SECRET}")
        c.post("/api/v1/recall/turn-start", json={"prompt": f"use {SECRET} and {tok}"})
    httpx.post(daemon.url + "/api/v1/auth/login", json={"token": tok})
    httpx.post(daemon.url + "/api/v1/auth/login", json={"token": tok + "x"})
    httpx.get(daemon.url + "/api/v1/stats", headers={"Authorization": f"Bearer {tok}x"})
    httpx.get(daemon.url + f"/api/v1/stats?token={tok}")
    time.sleep(0.3)
    log_path = daemon.home / "logs" / "daemon.log"
    assert log_path.stat().st_mode & 0o777 == 0o600
    log = log_path.read_text(encoding="utf-8")
    assert "GET /api/v1/memories/search 200" in log  # requests are logged …
    assert tok not in log and SECRET not in log and "Zq7Xv2Lm9Rt4" not in log  # … secrets are not
    # and the stored memory itself is redacted
    with daemon.client() as c:
        hits = c.get("/api/v1/memories/search", params={"q": "my key is"}).json()["results"]
    assert hits and SECRET not in hits[0]["text"]
