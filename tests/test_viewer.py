"""The web viewer in a real browser (Playwright driving Debian's Chromium). Screenshots of every page
land in ``test-artifacts/viewer/`` for people to look at."""

from __future__ import annotations

import os
import re
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest

from remem.server.testing import Daemon, sample_turns, write_claude_history

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "viewer"
HAS_SYNC = find_spec("remem.sources.sync") is not None

pytestmark = [
    pytest.mark.module_store("daemon"),
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium not installed (scripts/install-system.sh)"),
    pytest.mark.skipif(find_spec("playwright") is None, reason="playwright not installed"),
]


def _has_integrations() -> bool:
    from remem.server import optional

    return optional.has(optional.integrations)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    import remem

    base = tmp_path_factory.mktemp("viewer")
    home = base / "home"
    home.mkdir()
    write_claude_history(home, sessions=80, turns=2)
    m = remem.open(base / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    m.add_turns(sample_turns(40))
    m.close()
    d = Daemon(base / "remem", env={"HOME": str(home), "REMEM_AUTO_SYNC": "0"})
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def shot(page, name: str, full: bool = False) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full)


def login(page, daemon) -> None:
    page.goto(daemon.url + "/")
    page.wait_for_url(re.compile(r"/login$"))
    page.fill("#token", daemon.token)
    page.click("#login-button")
    page.wait_for_selector("#memory-list .item")


def test_viewer_end_to_end(daemon, browser):
    ctx = browser.new_context(viewport={"width": 1360, "height": 900}, locale="en-US")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    # log in: a wrong token is refused where it was typed, the right one opens the memories
    page.goto(daemon.url + "/")
    page.wait_for_url(re.compile(r"/login$"))
    page.fill("#token", "not-the-token")
    page.click("#login-button")
    page.wait_for_selector("#login-error")
    assert "not the token" in page.inner_text("#login-error")
    shot(page, "01-login")
    errors.clear()  # the refused login logs a 401 in the console on purpose
    page.fill("#token", daemon.token)
    page.click("#login-button")
    page.wait_for_selector("#memory-list .item")
    assert page.locator("#memory-list .item").count() == 30
    shot(page, "02-memories")

    # search, see why it matched, open the whole turn
    page.fill("#search-input", "slow search endpoint")
    page.click("#search-button")
    page.wait_for_selector("#memory-list .chip.why")
    assert "/search" in page.locator("#memory-list .item").first.inner_text()
    page.locator("#memory-list .item").first.click()
    page.wait_for_selector("#detail-request")
    assert "slow" in page.inner_text("#detail-request")
    assert page.locator(".steps .step").count() == 2  # the tool trajectory
    shot(page, "03-memory-detail")

    # delete with confirmation
    mid = page.locator("#memory-list .item.selected").get_attribute("data-id")
    page.click("#delete-memory")
    page.click(".modal button.danger")
    page.wait_for_selector(f'#memory-list .item[data-id="{mid}"]', state="detached")
    assert daemon.get(f"/api/v1/memories/{mid}").status_code == 404

    # a search that finds nothing says what to do next
    page.fill("#filter-project", "no-such-project")
    page.fill("#search-input", "deploy")
    page.click("#search-button")
    page.wait_for_selector(".empty")
    assert "Nothing matched" in page.inner_text(".empty")
    page.click(".empty button")  # "Clear filters"
    page.wait_for_selector("#memory-list .item")

    # timeline
    page.click('a[data-page="timeline"]')
    page.wait_for_selector("#timeline-list li")
    shot(page, "04-timeline")

    # sources & sync: run a sync and watch the bar reach the end
    page.click('a[data-page="sources"]')
    if HAS_SYNC:
        page.wait_for_selector("#sources-table")
        page.click("#sync-new")
        page.wait_for_selector("#job-progress")
        page.wait_for_selector('#job-progress[data-status="done"]', timeout=60_000)
        assert page.get_attribute("#job-progress", "data-pct") == "100"
        added = page.inner_text('#sync-counts [data-key="turns_added"] .n')
        assert int(added.replace(",", "")) == 160
        assert "complete turn" in page.inner_text(".explain")
    else:
        page.wait_for_selector(".note")
    shot(page, "05-sources")

    # health: an embedding job with a live progress bar
    page.click('a[data-page="health"]')
    page.wait_for_selector("#embed-now")
    page.click("#embed-now")
    page.wait_for_selector("#embed-slot #job-progress")
    page.wait_for_selector('#embed-slot #job-progress[data-status="done"]', timeout=60_000)
    page.wait_for_selector("#jobs-card table")
    shot(page, "06-health", full=True)

    # integrations: install and remove one, then the discovery flow
    page.click('a[data-page="integrations"]')
    if _has_integrations():
        page.wait_for_selector("#integrations-list .card button[data-agent]")
        btn = page.locator("#integrations-list .card button[data-agent]").first
        agent = btn.get_attribute("data-agent")
        was, now = ("danger", "primary") if "danger" in (btn.get_attribute("class") or "") else ("primary", "danger")
        btn.click()
        page.wait_for_selector(f"#integration-{agent}.{now}", timeout=20_000)
        shot(page, "07-integrations")
        page.click(f"#integration-{agent}")  # and back
        page.wait_for_selector(f"#integration-{agent}.{was}", timeout=20_000)
    else:
        page.wait_for_selector("#integrations-list .note")
        shot(page, "07-integrations")
    page.click("#advanced summary")
    page.fill("#custom-agent-name", "zcode")
    page.click("#start-discovery")
    if HAS_SYNC:
        page.wait_for_selector("#job-panel")
        page.wait_for_selector('#job-panel #job-progress[data-status="done"], '
                               '#job-panel #job-progress[data-status="failed"]', timeout=30_000)
    shot(page, "08-add-other-agent", full=True)

    # settings: a switch saves at once and says so
    page.click('a[data-page="settings"]')
    page.wait_for_selector("#set-integrations-auto_install", state="attached")
    page.locator(".setting[data-key='integrations.auto_install'] .switch").click()
    page.wait_for_selector("[data-status='integrations.auto_install'].ok")
    assert daemon.get("/api/v1/config").json()["values"]["integrations"]["auto_install"] is True
    shot(page, "09-settings", full=True)
    page.locator(".setting[data-key='integrations.auto_install'] .switch").click()
    page.wait_for_selector("[data-status='integrations.auto_install'].ok")

    # switch language: everything in Simplified Chinese, remembered across reloads
    page.click('button[data-lang="zh-CN"]')
    page.wait_for_selector('a[data-page="settings"].active')
    assert page.inner_text('a[data-page="memories"]') == "记忆"
    assert page.inner_text("h1") == "设置"
    page.click('a[data-page="memories"]')
    page.wait_for_selector("#memory-list .item")
    page.reload()
    page.wait_for_selector("#memory-list .item")
    assert page.inner_text('a[data-page="sources"]') == "来源与同步"
    assert page.get_attribute("html", "lang") == "zh-CN"
    shot(page, "10-memories-zh")
    page.click('a[data-page="sources"]')
    page.wait_for_selector("#sources-card table, #sources-card .note")
    shot(page, "11-sources-zh")
    page.click('button[data-lang="en"]')
    page.wait_for_selector('a[data-page="memories"]:has-text("Memories")')

    # every English string has a Chinese translation
    missing = page.evaluate("""async () => {
        const m = await import('/static/i18n.js');
        const en = Object.keys(m._dicts.en), zh = m._dicts['zh-CN'];
        return en.filter((k) => !(k in zh));
    }""")
    assert missing == []
    assert errors == [], errors
    ctx.close()


def test_browser_language_picks_chinese(daemon, browser):
    ctx = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.goto(daemon.url + "/login")
    page.wait_for_selector("#login-button")
    assert page.inner_text("#login-button") == "登录"
    shot(page, "12-login-zh")
    # a one-click link logs in and the token leaves the address bar at once
    page.goto(daemon.url + f"/login#token={daemon.token}")
    page.wait_for_selector("#memory-list .item")
    assert daemon.token not in page.url
    assert page.inner_text("h1") == "记忆"
    cookies = ctx.cookies()
    sess = [c for c in cookies if c["name"] == "remem_session"][0]
    assert sess["httpOnly"] and sess["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""  # invisible to scripts
    ctx.close()


def test_empty_home_shows_what_to_do(tmp_path, browser):
    (tmp_path / "home").mkdir()
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d:
        ctx = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        page.goto(d.url + f"/login#token={d.token}")
        page.wait_for_selector(".empty")
        assert "No memories yet" in page.inner_text(".empty")
        shot(page, "13-empty")
        page.click('a[data-page="timeline"]')
        page.wait_for_selector(".empty")
        d.stop()  # the daemon goes away: errors show where they happen, no blank page
        page.click('a[data-page="memories"]')
        page.wait_for_selector(".error-box")
        assert "Cannot reach" in page.inner_text(".error-box")
        ctx.close()
    assert httpx  # keep the import for type checkers


def test_search_filters_by_when_the_work_happened(tmp_path, browser):
    """An imported turn from two years ago is stored today: a "last 7 days" search must leave it
    out, as the list does (both go by when the work ended, not when it was stored)."""
    import time

    from playwright.sync_api import expect

    import remem
    from remem.model import TurnIn

    m = remem.open(tmp_path / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    old = time.time() - 2 * 365 * 86400
    m.add_turns([TurnIn(request="zebrafish vault rotation, the old way", reply="by hand", owner="default",
                        agent="codex", session_id="old", started_at=old, ended_at=old + 60),
                 TurnIn(request="zebrafish vault rotation, the new way", reply="vault kv rotate", owner="default",
                        agent="codex", session_id="new", started_at=time.time() - 3600, ended_at=time.time() - 3000)])
    m.close()
    (tmp_path / "home").mkdir()
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d:
        ctx = browser.new_context(viewport={"width": 1200, "height": 800}, locale="en-US")
        page = ctx.new_page()
        login(page, d)
        page.fill("#search-input", "zebrafish vault rotation")
        page.click("#search-button")
        page.wait_for_selector("#memory-list .chip.why")
        expect(page.locator("#memory-list .item")).to_have_count(2)
        page.select_option("#filter-period", "7d")
        # expect() polls with Playwright's own selectors: the viewer's CSP forbids evaluating strings
        expect(page.locator("#memory-list .item")).to_have_count(1)
        assert "new way" in page.inner_text("#memory-list .item")
        ctx.close()


def _opencode_db(path: Path, sessions: int = 3) -> Path:
    """A small OpenCode database (session / message / part) with a few real-shaped sessions."""
    import json
    import sqlite3
    import time

    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, directory TEXT, title TEXT, "
        "time_created INTEGER, time_updated INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, "
        "data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, "
        "time_updated INTEGER, data TEXT);")
    now = int(time.time() * 1000) - 86_400_000
    for s in range(sessions):
        sid = f"ses_{s:04d}"
        con.execute("INSERT INTO session VALUES (?, NULL, ?, ?, ?, ?)",
                    (sid, "/home/dev/shop", f"flaky retry test {s}", now, now + 5000))
        for i, (role, text) in enumerate([("user", f"Why does test_retry_backoff fail with 'expected 3 retries, got 2'? (run {s})"),
                                          ("assistant", "The backoff loop exits one attempt early: `range(1, retries)` "
                                                        "should be `range(retries)`. " + "Traceback line\n" * 200)]):
            mid = f"msg_{s:04d}_{i}"
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                        (mid, sid, now + i, now + i, json.dumps({"role": role, "time": {"created": now + i}})))
            con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                        (f"prt_{s:04d}_{i}", mid, sid, now + i, now + i, json.dumps({"type": "text", "text": text})))
    con.commit()
    con.close()
    return path


def test_viewer_shows_installs_sizes_and_memories_without_tools_as_they_are(tmp_path, browser):
    """A fully installed Claude Code reads "installed" (not "partly installed · 6 of 6 hooks"); a memory
    with no tool calls shows no literal "null"; a database source shows the database's size, not a
    row count read as bytes."""
    from playwright.sync_api import expect

    import remem
    from conftest import run_cli

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    db = _opencode_db(home / ".local" / "share" / "opencode" / "opencode.db")
    env = {"HOME": str(home), "REMEM_HOME": str(tmp_path / "remem")}
    m = remem.open(tmp_path / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    added = m.add("We deploy the shop with `kubectl rollout restart deploy/shop` once the migration job "
                  "has finished; 回滚用 `kubectl rollout undo deploy/shop`。", agent="codex", project="shop")
    m.close()
    if _has_integrations():
        r = run_cli("hooks", "install", "claude-code", env=env)
        assert r.returncode == 0, r.stderr
    with Daemon(tmp_path / "remem", env={"HOME": str(home), "REMEM_AUTO_SYNC": "0"}) as d:
        ctx = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        login(page, d)
        page.click(f'#memory-list .item[data-id="{added.id}"]')
        page.wait_for_selector("#detail-request")
        detail = page.inner_text("#memory-detail")
        assert "kubectl rollout restart" in detail and "null" not in detail, detail
        shot(page, "20-memory-without-tools")

        page.click('a[data-page="sources"]')
        if HAS_SYNC:
            row = page.locator('#sources-table tr[data-source="opencode"]')
            expect(row).to_have_count(1)
            api_bytes = next(s for s in d.get("/api/v1/sources").json()["sources"] if s["name"] == "opencode")["bytes"]
            assert api_bytes == db.stat().st_size  # the file, not its 12 rows
            kib = db.stat().st_size / 1024  # as the viewer's fmtBytes writes it
            assert (f"{kib:.0f} KB" if kib >= 10 else f"{kib:.1f} KB") in row.inner_text(), row.inner_text()
            shot(page, "21-database-source-size")

        if _has_integrations():
            page.click('a[data-page="integrations"]')
            card = page.locator('#integrations-list [data-integration="claude-code"]')
            expect(card).to_have_count(1)
            text = card.inner_text()
            assert "partly installed" not in text and "installed" in text, text
            assert re.search(r"(\d+) of \1 hooks", text), text
            shot(page, "22-claude-code-installed")
        assert not errors, errors
        ctx.close()


def test_login_page_names_this_homes_token_file(tmp_path, browser):
    """REMEM_HOME elsewhere: the login hint names that token file (with ~ for the home directory),
    not ~/.remem/token."""
    home = tmp_path / "home"
    home.mkdir()
    with Daemon(home / "work memory", env={"HOME": str(home), "REMEM_AUTO_SYNC": "0"}) as d:
        ctx = browser.new_context(locale="en-US")
        page = ctx.new_page()
        page.goto(d.url + "/login")
        page.wait_for_selector("#token-hint")
        assert page.inner_text("#token-hint") == "cat ~/'work memory/token'"
        ctx.close()
    with Daemon(tmp_path / "srv" / "remem", env={"HOME": str(home), "REMEM_AUTO_SYNC": "0"}) as d:
        html = httpx.get(d.url + "/login").text
        assert f'<meta name="remem-token-path" content="{tmp_path}/srv/remem/token">' in html
