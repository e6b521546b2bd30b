"""Feedback in the viewer (issue 18), in a real browser (Playwright driving Debian's Chromium) against the
real daemon: thumbs up / down on learned memories, and the recent packets handed to agents with a thumb
on each of their items (a learned item's thumb approves or rejects it, a turn's is kept on the packet).
The packets come from real ``turn_start`` calls on a home learned from real-shaped turns."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

import pytest

from learned_data import PROJECT, seed
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


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    import remem

    base = tmp_path_factory.mktemp("viewer-feedback")
    (base / "home").mkdir()
    m = remem.open(base / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    seed(m)
    m.learn()
    first = m.turn_start("install the date picker dependency", project=PROJECT, session="s9", agent="claude-code")
    m.turn_start("how do I install the date picker?", project="other-app", session="o9")   # another project's
    assert first.get("packet_id")
    m.close()
    d = Daemon(base / "remem", env={"HOME": str(base / "home"), "REMEM_AUTO_SYNC": "0"})
    d.start()
    d.first_packet = first
    yield d
    d.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def memory(d, mid: str) -> dict:
    r = d.get(f"/api/v1/learned/{mid}")
    assert r.status_code == 200, r.text
    return r.json()


def test_thumbs_on_learned_memories_and_on_packet_items(home, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1100}, locale="en-US")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(home.url + f"/login#token={home.token}")
    page.wait_for_selector("#memory-list .item")
    page.goto(home.url + f"/#/learned?project={PROJECT}")
    page.wait_for_selector("#learned-active .item")
    packet = page.locator(f'#learned-packets .packet[data-packet="{home.first_packet["packet_id"]}"]')
    packet.wait_for()
    assert page.locator("#learned-packets .packet").count() == 1          # other-app's packet is not here
    items = home.first_packet["items"]
    learned = [i for i in items if i.get("layer") in ("L2", "L3")]
    turns = [i for i in items if i.get("layer") == "L1"]
    assert packet.locator(".packet-item").count() == len(items)
    assert "turn_start" in packet.inner_text() and "waiting" in packet.inner_text()
    pref = next(i for i in learned if i["kind"] == "preference")
    assert "Use bun, not npm" in packet.locator(f'.packet-item[data-item="{pref["id"]}"]').inner_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "23-learned-packets.png"), full_page=True)

    # a thumb down on a turn of the packet: kept on the packet, the turn itself untouched
    turn = turns[0]["id"]
    packet.locator(f'.packet-item[data-item="{turn}"] button.thumb-down').click()
    page.wait_for_selector(f'#learned-packets .packet-item[data-item="{turn}"][data-vote="bad"]')
    got = home.get("/api/v1/packets", params={"project": PROJECT}).json()["items"][0]
    assert next(i for i in got["items"] if i["id"] == turn)["vote"] == "bad"
    assert home.get(f"/api/v1/memories/{turn}").status_code == 200

    # a thumb down on the packet's learned preference rejects it: it leaves the active memories
    packet.locator(f'.packet-item[data-item="{pref["id"]}"] button.thumb-down').click()
    page.wait_for_selector(f'#learned-active .item[data-id="{pref["id"]}"]', state="detached")
    assert memory(home, pref["id"])["status"] == "rejected"
    page.wait_for_selector(f'#learned-packets .packet-item[data-item="{pref["id"]}"][data-vote="bad"]')

    # a thumb up on an active card approves it (the user's decision: it stays active)
    fact = next(i for i in learned if i["kind"] == "fact")
    # (the card is there before the click as after it: wait for the verdict's answer, not the card)
    with page.expect_response(lambda r: f'/learned/{fact["id"]}/feedback' in r.url
                              and r.request.method == "POST") as answered:
        page.locator(f'#learned-active .item[data-id="{fact["id"]}"] button.thumb-up').click()
    assert answered.value.ok
    page.wait_for_function(f"""() => !!document.querySelector('#learned-active .item[data-id="{fact["id"]}"]')""")
    assert memory(home, fact["id"])["decided"] == "active"
    # a thumb down on a candidate in the review queue rejects it
    cand = page.locator("#learned-review .item").first
    cid = cand.get_attribute("data-id")
    cand.locator("button.thumb-down").click()
    page.wait_for_selector(f'#learned-review .item[data-id="{cid}"]', state="detached")
    assert memory(home, cid)["status"] == "rejected"

    # an item of a packet in another scope or a wrong item id is refused
    pid = home.first_packet["packet_id"]
    assert home.post(f"/api/v1/packets/{pid}/feedback", json={"item": "t_nope", "verdict": "good"}).status_code == 404
    assert home.post(f"/api/v1/packets/{pid}/feedback", params={"owner": "bob"},
                     json={"item": turn, "verdict": "good"}).status_code == 404
    assert errors == []
    ctx.close()


def test_chinese_labels_for_feedback(home, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = ctx.new_page()
    page.goto(home.url + f"/login#token={home.token}")
    page.wait_for_selector("#memory-list .item")
    page.goto(home.url + f"/#/learned?project={PROJECT}")
    page.wait_for_selector("#learned-packets .packet")
    assert "最近的记忆包" in page.inner_text("#content")
    assert page.locator("#learned-packets button.thumb-up").first.get_attribute("aria-label") == "正确"
    ctx.close()
