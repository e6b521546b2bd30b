"""The viewer's "Learned" page in a real browser (Playwright driving Debian's Chromium) against the real
daemon, on a home whose learned memories come from real-shaped turns (tests/learned_data.py) through
``Remem.learn()``: a conflict made by turns against a locked memory, another project and another owner
that must never show up, a memory whose text carries HTML, a project with two skills (tests/test_skills.py's
histories; one tried once through a real packet), and a memory soft-deleted 31 days ago."""

from __future__ import annotations

import os
import re
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from learned_data import DAY, PROJECT, T0, seed
from remem.model import TurnIn
from remem.server.testing import Daemon
from skills_data import PROJECT as SKILLS
from skills_data import history as skill_history
from skills_data import try_skill as _try
from skills_data import turn_in as _turn_in

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
    m.add_turns([_turn_in(t, i) for i, t in enumerate(skill_history())])
    m.learn()
    m.learn(owner="bob")                                          # bob learns "pnpm" in the same project
    bun = next(x for x in m.learned(project=PROJECT) if x["text"].startswith("Use bun, not npm"))
    service.act(m, m.scope(), bun["id"], "lock")
    # later the user says the opposite in two sessions: bun is locked, so pnpm waits as a conflict
    m.add_turns(_say("Use pnpm, not bun, for this project from now on.", ["s8", "s9"], T0 + 10 * DAY))
    m.learn()
    _try(m, "s10", time.time(), ok=True)                          # the fix skill tried once, and it passed
    m.learn()
    # a working state deleted 31 days ago: past learn.retention.deleted_days, its restore is refused
    old = next(x for x in m.learned(project=PROJECT) if x["text"].startswith("Goal: Use pnpm, not bun"))
    service.delete(m, m.scope(), old["id"])
    rec = m.store.learned.get(m.scope(), old["id"])
    rec["data"]["deleted_at"] = time.time() - 31 * DAY
    with m.store.transaction():
        m.store.learned.put(rec)
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
    assert bun.locator("button.delete").inner_text() == "删除"
    assert bun.locator("button.forget").count() == 0                        # no hard delete in the viewer
    page.click("#learned-other summary")
    assert page.locator('#learned-other .item[data-status="archived"] button.restore').first.inner_text() == "恢复"
    assert page.locator('#learned-other .item[data-status="deleted"] .badge.status').first.inner_text() == "已删除"
    assert "已删除" in page.locator("#learned-status").inner_text()
    page.select_option("#learned-project", SKILLS)
    skill = page.locator('#learned-active .item[data-kind="skill"]', has_text="alembic upgrade head")
    skill.wait_for()
    assert "技能" in skill.inner_text() and skill.locator(".badge.eta").inner_text() == "η 0.67，共 1 次试用"
    assert skill.locator(".skill-step").first.inner_text().startswith("运行")
    assert page.locator("#learned-review button.approve").first.inner_text() == "批准"
    missing = page.evaluate("""async () => {
        const m = await import('/static/i18n.js');
        return Object.keys(m._dicts.en).filter((k) => k.startsWith('learned.') && !(k in m._dicts['zh-CN']));
    }""")
    assert missing == []
    shot(page, "21-learned-zh")
    assert errors == []
    ctx.close()


def test_learned_page_scopes_reviews_edits_rolls_back_and_deletes(home, browser):
    ctx, page, errors = open_learned(browser, home)

    # the picked project's active memories only: not other-app's yarn, not bob's pnpm-in-shop-web
    options = page.locator("#learned-project option").all_inner_texts()
    assert [o.split(" (")[0] for o in options] == [SKILLS, "other-app", "shop-web"]
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
    page.wait_for_selector(f'#learned-other .item[data-id="{proc["id"]}"][data-status="rejected"]', state="attached")

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

    # delete is soft (after a confirmation): the memory leaves the active list, and the API keeps it
    ts = [m for m in learned(home) if m["slot"] == "stack.lang.typescript"][0]
    page.click(f'#learned-active .item[data-id="{ts["id"]}"] button.delete')
    page.click(".modal button.danger")
    page.wait_for_selector(f'#learned-active .item[data-id="{ts["id"]}"]', state="detached")
    assert home.get(f"/api/v1/learned/{ts['id']}").json()["status"] == "deleted"

    # an error from the API is shown, not swallowed: the memory went away behind the page's back
    gone = [m for m in learned(home, status="active") if m["kind"] == "fact" and m["slot"] == "cmd.test"][0]
    assert home.post(f"/api/v1/learned/{gone['id']}/forget").status_code == 200
    page.click(f'#learned-active .item[data-id="{gone["id"]}"] button.lock')
    page.wait_for_selector("#learned-error .error-box")
    assert "no learned memory" in page.inner_text("#learned-error")
    assert errors == [], errors
    ctx.close()


def test_delete_shows_under_deleted_and_restore_brings_it_back(home, browser):
    ctx, page, errors = open_learned(browser, home)
    nextjs = [m for m in learned(home, status="active") if m["text"].startswith("本项目前端使用 Next.js")][0]
    sel = f'.item[data-id="{nextjs["id"]}"]'

    # a cancelled confirmation changes nothing
    page.click(f"#learned-active {sel} button.delete")
    assert "30 days" in page.inner_text(".modal")
    page.click(".modal button:not(.danger)")
    assert home.get(f"/api/v1/learned/{nextjs['id']}").json()["status"] == "active"

    page.click(f"#learned-active {sel} button.delete")
    page.click(".modal button.danger")
    page.wait_for_selector(f"#learned-active {sel}", state="detached")
    assert home.get(f"/api/v1/learned/{nextjs['id']}").json()["status"] == "deleted"
    page.click("#learned-other summary")
    page.select_option("#learned-status", "deleted")
    page.wait_for_selector(f'#learned-other {sel}[data-status="deleted"]')
    statuses = set(page.locator("#learned-other .item").evaluate_all("els => els.map((e) => e.dataset.status)"))
    assert statuses == {"deleted"}
    deleted = {m["id"] for m in learned(home, status="deleted")}
    assert {i for i in page.locator("#learned-other .item").evaluate_all("els => els.map((e) => e.dataset.id)")} \
        == deleted and nextjs["id"] in deleted
    assert "deleted" in page.inner_text(f"#learned-other {sel} .deleted-at")
    assert page.locator(f"#learned-other {sel} button.approve").count() == 0
    shot(page, "23-learned-deleted")

    # restore puts it back as it was: active again
    page.click(f"#learned-other {sel} button.restore")
    page.wait_for_selector(f"#learned-active {sel}")
    assert page.locator(f"#learned-other {sel}").count() == 0
    assert home.get(f"/api/v1/learned/{nextjs['id']}").json()["status"] == "active"

    # an archived memory restores too
    page.select_option("#learned-status", "archived")
    arch = page.locator('#learned-other .item[data-status="archived"]').first
    aid = arch.get_attribute("data-id")
    arch.locator("button.restore").click()
    page.wait_for_selector(f'#learned-active .item[data-id="{aid}"]')
    assert home.get(f"/api/v1/learned/{aid}").json()["status"] == "active"

    # refusals are read on the card, which stays: past the 30-day window ...
    page.select_option("#learned-status", "deleted")
    old = page.locator("#learned-other .item", has_text="Goal: Use pnpm, not bun")
    old.locator("button.restore").click()
    old.locator(".card-error .error-box").wait_for()
    assert "deleted 31 days ago" in old.locator(".card-error").inner_text()
    assert home.get(f"/api/v1/learned/{old.get_attribute('data-id')}").json()["status"] == "deleted"

    # ... restored behind the page's back, and gone for good behind its back
    for action, said in (("restore", "not deleted or archived"), ("delete?hard=true", "no learned memory")):
        page.click(f"#learned-active {sel} button.delete")
        page.click(".modal button.danger")
        page.wait_for_selector(f'#learned-other {sel}[data-status="deleted"]')
        assert home.post(f"/api/v1/learned/{nextjs['id']}/{action}").status_code == 200
        page.click(f"#learned-other {sel} button.restore")
        page.wait_for_selector(f"#learned-other {sel} .card-error .error-box")
        assert said in page.inner_text(f"#learned-other {sel} .card-error")
        if action == "restore":
            page.reload()                                          # the filter stays, the fold opens
            page.wait_for_selector(f"#learned-active {sel}")
            assert page.evaluate("document.querySelector('#learned-other').open")
    assert page.locator("#learned-error .error-box").count() == 0       # on the card, not the page
    shot(page, "24-learned-restore-refused")
    assert errors == [], errors
    ctx.close()


def test_a_skill_card_shows_its_steps_and_eta(home, browser):
    ctx, page, errors = open_learned(browser, home)
    page.select_option("#learned-project", SKILLS)
    fix = page.locator('#learned-active .item[data-kind="skill"]', has_text="alembic upgrade head")
    fix.wait_for()
    rec = home.get(f"/api/v1/learned/{fix.get_attribute('data-id')}").json()
    assert rec["data"]["trials"] == 1
    steps = fix.locator(".skill-step").all_inner_texts()
    assert steps == [f"run {s['template']}" for s in rec["data"]["steps"]] and len(steps) >= 2
    assert "run alembic upgrade head" in steps and any("{path1}" in s for s in steps)
    assert fix.locator(".skill-params code").all_inner_texts() == rec["data"]["parameters"] == ["path1"]
    assert fix.locator(".badge.eta").inner_text() == "η 0.67 over 1 trial"
    seq = page.locator('#learned-active .item[data-kind="skill"]', has_text="ruff check then mypy")
    assert seq.locator(".badge.eta").inner_text() == "η 0.50, not tried yet"
    assert seq.locator(".skill-step").first.inner_text() == "run ruff check src"
    assert page.locator(".skill code b, .skill script").count() == 0
    shot(page, "25-learned-skill")
    assert errors == [], errors
    ctx.close()


def test_a_conflict_with_a_deleted_rival_offers_restore_not_approve(home, browser):
    bun = next(m for m in learned(home) if m["text"].startswith("Use bun, not npm"))
    assert home.post(f"/api/v1/learned/{bun['id']}/delete").status_code == 200
    try:
        ctx, page, errors = open_learned(browser, home)
        pair = page.locator("#learned-conflicts .conflict")
        pair.first.wait_for()
        rival = pair.locator(f'.item[data-id="{bun["id"]}"]')
        assert rival.get_attribute("data-status") == "deleted"
        assert rival.locator("button.approve, button.reject, button.lock").count() == 0
        rival.locator("button.restore").click()                 # restore, right there in the pair
        page.wait_for_selector(f'#learned-active .item[data-id="{bun["id"]}"]')
        assert home.get(f"/api/v1/learned/{bun['id']}").json()["status"] == "active"
        assert errors == [], errors
        ctx.close()
    finally:
        home.post(f"/api/v1/learned/{bun['id']}/restore")          # later tests of the module see it as before
