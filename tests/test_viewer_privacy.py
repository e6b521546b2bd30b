"""The home's Incognito switch: REST (``/api/v1/privacy``, behind the token) and the viewer's toggle in a
real browser (Playwright driving Debian's Chromium) against the real daemon, with Claude Code's real
hook entry answered by that daemon while the switch is on and after it is off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest

from remem.server.testing import Daemon

pytestmark = pytest.mark.module_store  # its tests share the store a module fixture built

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "viewer"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
CWD = "/home/dev/shop"
MEMORY = "the cart total rounds coupons with Decimal, fixed in src/cart/total.py"

browser_only = [  # the REST test runs without them
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium not installed (scripts/install-system.sh)"),
    pytest.mark.skipif(find_spec("playwright") is None, reason="playwright not installed"),
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    import remem

    base = tmp_path_factory.mktemp("viewer-privacy")
    (base / "home").mkdir()
    m = remem.open(base / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    m.add(MEMORY, agent="codex", project=CWD, session="old", reply="yes")
    m.close()
    d = Daemon(base / "remem", env={"HOME": str(base / "home"), "REMEM_AUTO_SYNC": "0"})
    d.start()
    yield d
    d.stop()


def hook(d: Daemon, event: str, payload: dict) -> str:
    r = subprocess.run([sys.executable, "-m", "remem.hook", "claude-code", event], input=json.dumps(payload).encode(),
                       capture_output=True, timeout=120,
                       env={**os.environ, "REMEM_HOME": str(d.home), "REMEM_PORT": str(d.port)})
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def prompt(d: Daemon, session: str, text: str) -> str:
    base = {"session_id": session, "cwd": CWD, "transcript_path": ""}
    out = hook(d, "UserPromptSubmit", {**base, "prompt": text})
    hook(d, "Stop", {**base, "last_assistant_message": "Done."})
    return out


def stored(d: Daemon) -> list[str]:
    r = d.get("/api/v1/memories", params={"agent": "claude-code", "limit": 100})
    assert r.status_code == 200, r.text
    body = r.json()
    return sorted(x["request"] for x in body.get("items", body.get("memories", [])))


def test_rest_switch_is_behind_the_token_and_pauses_every_hook(daemon):
    assert httpx.get(daemon.url + "/api/v1/privacy").status_code == 401
    assert httpx.put(daemon.url + "/api/v1/privacy", json={"incognito": True}).status_code == 401
    with daemon.client() as c:
        assert c.put("/api/v1/privacy", json={"incognito": "maybe"}).status_code == 422
        on = c.put("/api/v1/privacy", json={"incognito": True}).json()
        assert on["incognito"] is True and on["since"]
        assert c.get("/api/v1/status").json()["privacy"]["incognito"] is True
    assert prompt(daemon, "r1", "why does the cart total round coupons?") == ""
    assert stored(daemon) == []
    r = subprocess.run([sys.executable, "-m", "remem", "status"], capture_output=True, timeout=60,
                       env={**os.environ, "REMEM_HOME": str(daemon.home), "REMEM_PORT": str(daemon.port)})
    assert "incognito: ON for every agent" in r.stdout.decode(), r.stdout
    with daemon.client() as c:
        assert c.put("/api/v1/privacy", json={"incognito": False}).json()["incognito"] is False
    out = prompt(daemon, "r1", "why does the cart total round coupons?")
    assert "Decimal" in out
    assert stored(daemon) == ["why does the cart total round coupons?"]


@browser_only[0]
@browser_only[1]
def test_viewer_toggle(daemon):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        ctx = b.new_context(viewport={"width": 1400, "height": 900}, locale="en-US")
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(daemon.url + f"/login#token={daemon.token}")
        page.wait_for_selector("#memory-list .item")
        toggle = page.locator("#incognito-toggle")
        expect(toggle).to_be_enabled()
        expect(toggle).to_have_attribute("aria-pressed", "false")
        expect(toggle).to_have_text("Incognito")
        toggle.click()
        expect(toggle).to_have_attribute("aria-pressed", "true")
        expect(toggle).to_have_text("Incognito on")
        assert daemon.get("/api/v1/privacy").json()["incognito"] is True
        assert prompt(daemon, "b1", "the cart total, once more") == ""
        # another page keeps the switch; a reload reads it back from the daemon
        page.click('a[data-page="sources"]')
        expect(page.locator("#incognito-toggle")).to_have_attribute("aria-pressed", "true")
        page.reload()
        expect(page.locator("#incognito-toggle")).to_have_attribute("aria-pressed", "true")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "20-incognito-on.png"))
        # switched elsewhere (another client of the API): the open viewer follows through the event stream
        with daemon.client() as c:
            c.put("/api/v1/privacy", json={"incognito": False})
        expect(page.locator("#incognito-toggle")).to_have_attribute("aria-pressed", "false")
        page.locator("#incognito-toggle").click()
        expect(page.locator("#incognito-toggle")).to_have_attribute("aria-pressed", "true")
        page.locator("#incognito-toggle").click()
        expect(page.locator("#incognito-toggle")).to_have_attribute("aria-pressed", "false")
        assert daemon.get("/api/v1/privacy").json()["incognito"] is False
        page.click('button[data-lang="zh-CN"]')
        expect(page.locator("#incognito-toggle")).to_have_text("无痕模式")
        assert errors == [], errors
        ctx.close()
        b.close()
    assert "the cart total, once more" not in stored(daemon)
