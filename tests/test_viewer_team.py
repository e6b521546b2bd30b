"""The viewer in a real browser logged in with a user's token (team use): the Memories page lists that
user's own and its teams' memories, never another user's; the owner picker offers exactly those owners;
the pages of the daemon's controls are not offered."""

from __future__ import annotations

import os
import re
from importlib.util import find_spec

import pytest

from remem import team
from remem.model import TurnIn
from remem.server.testing import Daemon

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]

pytestmark = [
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium not installed (scripts/install-system.sh)"),
    pytest.mark.skipif(find_spec("playwright") is None, reason="playwright not installed"),
]


def test_viewer_login_with_a_user_token(tmp_path):
    from playwright.sync_api import sync_playwright

    import remem

    (tmp_path / "home").mkdir()
    with remem.open(tmp_path / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"}) as m:
        alice = team.add_user(m.store, "alice")
        team.add_user(m.store, "bob")
        team.add_team(m.store, "eng", ["alice", "bob"])
        for owner, text in (("user:alice", "alice fig private"), ("user:bob", "bob plum private"),
                            ("team:eng", "eng quince shared"), ("default", "home lime note")):
            m.add_turns([TurnIn(request=text, reply="ok", owner=owner, agent="codex", project="p",
                                session_id=f"{owner}-s")])
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d, \
            sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = b.new_context(locale="en-US").new_page()
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.goto(d.url + "/")
        page.wait_for_url(re.compile(r"/login$"))
        page.fill("#token", alice)
        page.click("#login-button")
        # the list as soon as it shows alice's and her team's memories, read in the same moment (a job's
        # event may reload it meanwhile: the text between two reads can be "Loading…")
        listed = page.wait_for_function(
            "() => { const t = document.querySelector('#memory-list')?.innerText || '';"
            " return t.includes('alice fig private') && t.includes('eng quince shared') ? t : false; }").json_value()
        assert "bob plum" not in listed and "home lime" not in listed
        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        assert cookies["remem_session"] == team.session_of(alice) and alice not in cookies["remem_session"]
        page.wait_for_selector("#signed-in")
        assert page.inner_text("#signed-in") == "Signed in as alice"
        assert page.eval_on_selector_all("nav.nav a", "els => els.map(e => e.dataset.page)") == \
            ["memories", "timeline", "learned"]                         # the daemon's controls are the home's
        assert page.inner_text("#incognito-slot") == ""
        page.goto(d.url + "/#/settings")                                  # a home page's address: Memories instead
        page.wait_for_selector("#memory-list .item")
        # only the live job events (the home's) answered 403; nothing else failed
        assert {e.split(" ", 1)[1].split("/api/v1", 1)[-1] for e in errors if e[:1].isdigit()} <= {"/events"}
        owners = page.evaluate("fetch('/api/v1/owners').then(r => r.json())")
        assert owners == {"default": "user:alice", "owners": ["user:alice", "team:eng"]}
        b.close()
