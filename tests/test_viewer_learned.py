"""The viewer's "Learned" page in a real browser (Playwright driving Debian's Chromium) against the real
daemon, on a home whose learned memories come from real-shaped turns (tests/learned_data.py) through
``Remem.learn()``: a conflict made by turns against a locked memory, another project and another owner
that must never show up, and a memory whose text carries HTML."""

from __future__ import annotations

import os
import re
from importlib.util import find_spec
from pathlib import Path

import pytest

from learned_data import DAY, PROJECT, T0, seed
from remem.model import TurnIn
from remem.server.testing import Daemon

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "viewer"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]

pytestmark = [
    pytest.mark.module_store("home"),
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium not installed (scripts/install-system.sh)"),
    pytest.mark.skipif(find_spec("playwright") is None, reason="playwright not installed"),
]

HTML_RULE = ("From now on, never render <script>window.__pwned = 1</script> or <img src=x "
             "onerror=\"window.__pwned = 2\"> <b>raw HTML</b> from the cart API in templates; always escape it.")


def _say(text: str, sessions: list[str], t0: float) -> list[TurnIn]:
    return [TurnIn(request=text, reply="ok", owner="default", agent="claude-code", project=PROJECT, session_id=s,
                   source_key=f"say:{s}", started_at=t0 + i * DAY, ended_at=t0 + i * DAY + 5,
                   message_ids=[f"say-{s}"]) for i, s in enumerate(sessions)]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    import remem
    from remem.layers import service

    base = tmp_path_factory.mktemp("viewer-learned")
    (base / "home").mkdir()
    m = remem.open(base / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    seed(m)                                                       # shop-web, other-app, and bob's turns
    m.add_turns(_say(HTML_RULE, ["s5", "s6"], T0 + 4 * DAY))
    m.learn()
    m.learn(owner="bob")                                          # bob learns "pnpm" in the same project
    bun = next(x for x in m.learned(project=PROJECT) if x["text"].startswith("Use bun, not npm"))
    service.act(m, m.scope(), bun["id"], "lock")
    # later the user says the opposite in two sessions: bun is locked, so pnpm waits as a conflict
    m.add_turns(_say("Use pnpm, not bun, for this project from now on.", ["s8", "s9"], T0 + 10 * DAY))
    m.learn()
    m.close()
    d = Daemon(base / "remem", env={"HOME": str(base / "home"), "REMEM_AUTO_SYNC": "0"})
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


def learned(d, project: str | None = PROJECT, status: str = "all") -> list[dict]:
    r = d.get("/api/v1/learned", params={"status": status, **({"project": project} if project else {})})
    assert r.status_code == 200, r.text
    return r.json()["items"]


def open_learned(browser, d, locale: str = "en-US"):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale=locale)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(d.url + f"/login#token={d.token}")
    page.wait_for_selector("#memory-list .item")
    page.click('a[data-page="learned"]')
    page.wait_for_selector("#learned-active .item")
    return ctx, page, errors


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def card(page, where: str, text: str):
    return page.locator(f"#learned-{where} .item", has_text=text)


def test_chinese_ui_shows_chinese_labels(home, browser):
    ctx, page, errors = open_learned(browser, home, locale="zh-CN")
    assert page.inner_text('a[data-page="learned"]') == "习得"
    assert page.inner_text("h1") == "习得"
    heads = page.locator(".block > h3").all_inner_texts()
    assert heads[:3] == ["生效的记忆", "冲突", "待审核"], heads
    bun = card(page, "active", "Use bun, not npm")
    assert "偏好" in bun.inner_text() and "在 2 个会话中说过" in bun.inner_text() and "已锁定" in bun.inner_text()
    assert bun.locator("button.forget").inner_text() == "遗忘"
    assert page.locator("#learned-review button.approve").first.inner_text() == "批准"
    missing = page.evaluate("""async () => {
        const m = await import('/static/i18n.js');
        return Object.keys(m._dicts.en).filter((k) => k.startsWith('learned.') && !(k in m._dicts['zh-CN']));
    }""")
    assert missing == []
    shot(page, "21-learned-zh")
    assert errors == []
    ctx.close()


def test_learned_page_scopes_reviews_edits_rolls_back_and_forgets(home, browser):
    ctx, page, errors = open_learned(browser, home)

    # the picked project's active memories only: not other-app's yarn, not bob's pnpm-in-shop-web
    options = page.locator("#learned-project option").all_inner_texts()
    assert [o.split(" (")[0] for o in options] == ["other-app", "shop-web"]
    page.select_option("#learned-project", PROJECT)
    page.wait_for_selector("#learned-active .item >> text=Use bun, not npm")
    active = [m for m in learned(home) if m["status"] == "active"]
    assert page.locator("#learned-active .item").count() == len(active) >= 8
    shown = page.inner_text("#learned-active")
    assert "yarn" not in shown
    bobs = home.get("/api/v1/learned", params={"owner": "bob", "project": PROJECT, "status": "all"}).json()["items"]
    assert any(b["status"] == "active" and "pnpm" in b["text"] for b in bobs), bobs
    everything = page.inner_text("#content")
    assert "Goal: Use pnpm, not bun, in this repo" not in everything          # bob's working state
    assert "The package manager is pnpm" not in everything                   # bob's candidate
    assert card(page, "active", "Use pnpm, not bun.").count() == 0           # bob's active rule (ours waits)
    bun = card(page, "active", "Use bun, not npm")
    assert "said in 2 sessions" in bun.inner_text() and "locked" in bun.inner_text()
    assert re.search(r"confidence \d+%", bun.inner_text())
    page.select_option("#learned-project", "other-app")
    page.wait_for_selector("#learned-active .item >> text=Use yarn, not npm")
    assert "bun" not in page.inner_text("#learned-active").lower()
    page.select_option("#learned-project", PROJECT)
    page.wait_for_selector("#learned-active .item >> text=Use bun, not npm")

    # the conflict, side by side: the pnpm newcomer next to the locked bun memory it contradicts
    pair = page.locator("#learned-conflicts .conflict")
    assert pair.count() == 1
    left, right = pair.locator(".item").all()
    shot(page, "20-learned")
    assert "Use pnpm, not bun" in left.inner_text() and "Use bun, not npm" in right.inner_text()

    # an evidence link opens the turn it came from in the memory view
    turn = bun.locator(".evidence a").first.get_attribute("data-turn")
    bun.locator(".evidence a").first.click()
    page.wait_for_selector("#detail-request")
    assert "Use bun, not npm" in page.inner_text("#detail-request")
    assert turn in page.url
    page.go_back()
    page.wait_for_selector("#learned-active .item >> text=Use bun, not npm")

    # HTML in learned text is shown as text, never run or parsed
    html = page.locator('#learned-active .item[data-kind="preference"]', has_text="never render")
    assert "<script>window.__pwned = 1</script>" in html.locator(".learned-text").inner_text()
    assert "<b>raw HTML</b>" in html.locator(".learned-text").inner_text()
    assert page.locator("#content script, #content img[src=x], .learned-text b").count() == 0
    assert page.evaluate("window.__pwned") is None

    # approve moves a candidate to the active memories
    hot = [m for m in learned(home) if m["slot"] == "layout.hot_dirs"][0]
    assert hot["status"] == "candidate"
    page.locator(f'#learned-review .item[data-id="{hot["id"]}"] button.approve').click()
    page.wait_for_selector(f'#learned-active .item[data-id="{hot["id"]}"]')
    assert page.locator(f'#learned-review .item[data-id="{hot["id"]}"]').count() == 0
    assert home.get(f"/api/v1/learned/{hot['id']}").json()["status"] == "active"

    # reject removes a candidate from the queue
    proc = [m for m in learned(home) if m["kind"] == "procedure" and m["status"] == "candidate"][0]
    page.locator(f'#learned-review .item[data-id="{proc["id"]}"] button.reject').click()
    page.wait_for_selector(f'#learned-review .item[data-id="{proc["id"]}"]', state="detached")
    assert home.get(f"/api/v1/learned/{proc['id']}").json()["status"] == "rejected"
    assert page.locator(f'#learned-other .item[data-id="{proc["id"]}"][data-status="rejected"]').count() == 1

    # edit changes the text and shows it locked; its history rolls the edit back
    conv = [m for m in learned(home) if m["kind"] == "convention"][0]
    sel = f'#learned-active .item[data-id="{conv["id"]}"]'
    assert "locked" not in page.inner_text(sel)
    page.click(f"{sel} button.edit")
    page.fill(f"{sel} textarea.edit-text", "提交前必须先跑 bun test 和 bun run lint，不要跳过。")
    page.click(f"{sel} button.save-edit")
    page.wait_for_selector(f"{sel} .learned-text >> text=bun run lint")
    assert page.locator(f"{sel} .badge.locked").count() == 1
    after = home.get(f"/api/v1/learned/{conv['id']}").json()
    assert after["locked"] and after["edited"] and "bun run lint" in after["text"]
    page.click(f"{sel} button.history")
    page.wait_for_selector('#learned-history .event[data-action="edit"]')
    assert "bun run lint" in page.inner_text('#learned-history .event[data-action="edit"]')
    page.click('#learned-history .event[data-action="edit"] button.rollback')
    page.wait_for_selector('#learned-history .event[data-action="rollback"]')
    page.wait_for_selector(f"{sel} .learned-text >> text=以后提交前都要先跑 bun test")
    shot(page, "22-learned-history")
    back = home.get(f"/api/v1/learned/{conv['id']}").json()
    assert back["text"] == conv["text"] and back["locked"] is False

    # forget removes it (after a confirmation)
    ts = [m for m in learned(home) if m["slot"] == "stack.lang.typescript"][0]
    page.click(f'#learned-active .item[data-id="{ts["id"]}"] button.forget')
    page.click(".modal button.danger")
    page.wait_for_selector(f'#learned-active .item[data-id="{ts["id"]}"]', state="detached")
    assert home.get(f"/api/v1/learned/{ts['id']}").status_code == 404

    # an error from the API is shown, not swallowed: the memory went away behind the page's back
    gone = [m for m in learned(home, status="active") if m["kind"] == "fact" and m["slot"] == "cmd.test"][0]
    assert home.post(f"/api/v1/learned/{gone['id']}/forget").status_code == 200
    page.click(f'#learned-active .item[data-id="{gone["id"]}"] button.lock')
    page.wait_for_selector("#learned-error .error-box")
    assert "no learned memory" in page.inner_text("#learned-error")
    assert errors == [], errors
    ctx.close()
