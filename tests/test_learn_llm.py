"""The optional LLM that judges learned candidates (issue 16, "Optional LLM, never required"), against a
real OpenAI-compatible HTTP server on 127.0.0.1 (``fake_llm.py``): what reaches it, how often, and
what of its answers is believed."""

from __future__ import annotations

import json
import logging
import math

import pytest

from conftest import run_cli
from fake_llm import FakeLLM
from remem.layers import judge, llm, review, service
from remem.model import TurnIn

T0 = 1_760_000_000.0           # 2025-10-09 09:06 UTC
DAY = 86400.0
API_KEY = "sk-test-LLMKEY-0123456789abcdefghijklmnop"


def word(k: int, salt: int) -> str:
    """A made-up word per k, so every statement is its own rule (no two fold into one)."""
    out, k = "", k * 7 + salt
    for _ in range(3):
        out += "bcdfghjklmnprstvz"[k % 17] + "aeiou"[(k // 17) % 5]
        k //= 85
    return out


def statement(k: int) -> str:
    return f"I don't want any {word(k, 1)} hacks in the {word(k, 5)} module."


def turns(n: int, *, every: int = 1, project: str = "shop", owner: str = "default",
          said=statement) -> list[TurnIn]:
    """``n`` turns in sessions of 20; every ``every``-th one states a new rule said once (a candidate),
    the others are ordinary work."""
    out = []
    for i in range(n):
        req = said(i // every) if i % every == 0 else f"look at issue {i} and tell me what the stack trace means"
        out.append(TurnIn(request=req, reply="Looked at it; it is a missing null check.", owner=owner,
                          agent="claude-code", project=project, session_id=f"{project}-s{i // 20}",
                          source_key=f"{owner}:{project}:{i}", source_name="claude-code",
                          started_at=T0 + i * 60, ended_at=T0 + i * 60 + 5))
    return out


@pytest.fixture
def fake():
    f = FakeLLM()
    yield f
    f.close()


def use(mem, fake: FakeLLM, **extra) -> None:
    """Point this handle's learner at the fake server (in this process only, never saved)."""
    values = {"base_url": fake.base_url, "model": "fake-judge", "api_key": API_KEY, "cooldown_seconds": 0.0,
              "timeout_seconds": 5.0} | extra
    for k, v in values.items():
        mem.config.override(f"learn.llm.{k}", v)


class Clock:
    def __init__(self, t: float = T0 + DAY) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def candidates(mem) -> list[dict]:
    return [m for m in mem.learned(status="review") if m["kind"] in review.JUDGED_KINDS]


def llm_events(mem, memory_id: str) -> list[dict]:
    return [e for e in service.history(mem, mem.scope(), memory_id) if e["actor"] == "llm"]


def test_without_the_setting_nothing_is_sent_and_learning_is_unchanged(mem, fake, remem_home):
    mem.add_turns(turns(5))
    before = mem.learn()
    assert "llm" not in before and llm.configured(mem) is None
    assert len(candidates(mem)) == 5
    assert fake.requests == [] and not (remem_home / llm.STATE_FILE).exists()
    assert review.review(mem, mem.scope())["stopped"] == "off" and fake.requests == []


def test_happy_path_keep_reject_rewrite_are_llm_events_and_survive_a_rebuild(mem, fake):
    mem.add_turns(turns(4))
    mem.learn()                                         # offline first: four candidates
    cands = {m["text"]: m for m in candidates(mem)}
    assert len(cands) == 4
    texts = [statement(k) for k in range(4)]
    verdicts = {texts[0]: {"verdict": "keep"}, texts[1]: {"verdict": "reject", "reason": "one-off"},
                texts[2]: {"verdict": "rewrite", "text": f"No {word(2, 1)} hacks in the {word(2, 5)} module."}}

    def decide(c):
        return {"id": c["id"], "reason": "fine"} | verdicts.get(c["text"], {"verdict": "keep"})
    fake.decide = decide
    use(mem, fake, batch_size=3)
    clock = Clock()
    got = service.run(mem, mem.scope(), clock=clock)["llm"]
    assert got["requests"] == 2 and len(fake.requests) == 2           # 4 candidates, 3 per request
    assert got["keep"] == 2 and got["reject"] == 1 and got["rewrite"] == 1 and got["quarantine"] == 0
    assert got["tokens"] == 200                                        # the server's usage, counted
    sent = [c for r in fake.requests for c in r["candidates"]]
    assert sorted(c["text"] for c in sent) == sorted(texts)
    assert all(c["evidence"] == [c["text"]] for c in sent)            # its evidence quoted, nothing else
    assert fake.requests[0]["path"] == "/v1/chat/completions"
    assert fake.requests[0]["body"]["model"] == "fake-judge"

    by_id = {m["id"]: m for m in mem.learned(status="all")}
    kept, rejected, rewritten = (by_id[cands[t]["id"]] for t in texts[:3])
    assert kept["status"] == "active" and rejected["status"] == "rejected"
    assert rewritten["status"] == "active" and rewritten["text"].startswith(f"No {word(2, 1)}")
    ev = llm_events(mem, rewritten["id"])
    assert [e["action"] for e in ev] == ["llm_rewrite"]
    assert ev[0]["before"]["text"] == texts[2] and ev[0]["after"]["text"] == rewritten["text"]
    assert [e["action"] for e in llm_events(mem, rejected["id"])] == ["llm_reject"]
    assert [e["action"] for e in llm_events(mem, kept["id"])] == ["llm_keep"]

    # a rebuild recomputes from the turns: the verdicts hold on the same evidence, nothing is re-sent
    again = service.run(mem, mem.scope(), rebuild=True, clock=clock)
    assert again["llm"]["pending"] == 0 and len(fake.requests) == 2
    after = {m["id"]: m for m in mem.learned(status="all")}
    assert after[rewritten["id"]]["text"] == rewritten["text"] and after[rewritten["id"]]["status"] == "active"
    assert after[rejected["id"]]["status"] == "rejected" and after[kept["id"]]["status"] == "active"

    # the user overrules the model: approve what it rejected; roll back what it kept
    service.act(mem, mem.scope(), rejected["id"], "approve")
    keep_event = llm_events(mem, kept["id"])[0]["id"]
    service.rollback(mem, mem.scope(), keep_event)
    service.run(mem, mem.scope(), rebuild=True, clock=clock)
    final = {m["id"]: m for m in mem.learned(status="all")}
    assert final[rejected["id"]]["status"] == "active"
    assert final[kept["id"]]["status"] == "candidate" and len(fake.requests) == 2   # not asked again


def test_the_daily_budget_stops_the_calls_survives_a_restart_and_resumes_the_next_day(mem, fake, remem_home):
    import remem

    mem.add_turns(turns(6))
    mem.learn()
    fake.usage = None                                 # no usage from the server: remem's estimate counts
    one = judge.request_estimate([judge.Candidate("m_" + "0" * 16, "preference", statement(k), [statement(k)])
                                  for k in (0, 1)])     # one request of two candidates
    use(mem, fake, batch_size=2, daily_tokens=int(one * 2.2))     # two requests' worth
    clock = Clock()
    got = service.run(mem, mem.scope(), clock=clock)["llm"]
    assert got["requests"] == 2 and got["stopped"] == "budget" and len(fake.requests) == 2
    assert got["judged"] == 4 and got["pending"] == 2
    state = json.loads((remem_home / llm.STATE_FILE).read_text())
    assert state["tokens"] == got["tokens"] > 0 and state["day"] == "2025-10-10"

    clock.t += 3600                                   # later the same day, in a new process: still stopped
    mem2 = remem.open()
    try:
        use(mem2, fake, batch_size=2, daily_tokens=int(one * 2.2))
        assert service.run(mem2, mem2.scope(), clock=clock)["llm"]["stopped"] == "budget"
        assert len(fake.requests) == 2
        clock.t = T0 + 2 * DAY                        # the next UTC day: a new budget
        got = service.run(mem2, mem2.scope(), clock=clock)["llm"]
        assert got["requests"] == 1 and got["judged"] == 2 and got["pending"] == 0
        assert len(fake.requests) == 3
    finally:
        mem2.close()
    assert not candidates(mem)


def test_cooldown_between_passes(mem, fake):
    mem.add_turns(turns(2))
    use(mem, fake, batch_size=1, max_requests=1, cooldown_seconds=600.0)
    clock = Clock()
    assert service.run(mem, mem.scope(), clock=clock)["llm"]["requests"] == 1
    clock.t += 60
    assert service.run(mem, mem.scope(), clock=clock)["llm"]["stopped"] == "cooldown"
    clock.t += 600
    assert service.run(mem, mem.scope(), clock=clock)["llm"]["requests"] == 1
    assert len(fake.requests) == 2


def test_malformed_output_is_quarantined_and_listed_for_review(mem, fake, remem_home):
    mem.add_turns(turns(3))
    mem.learn()
    fake.content = "Sure! Here are my verdicts: keep, keep, reject"
    use(mem, fake)
    got = service.run(mem, mem.scope(), clock=Clock())["llm"]
    assert got["quarantine"] == 3 and got["keep"] == 0
    assert not [m for m in mem.learned() if m["kind"] == "preference"]    # nothing became active
    q = mem.learned(status="quarantined")
    assert len(q) == 3 and all(m["status"] == "candidate" for m in q)
    assert all(m["data"]["llm"]["reason"].startswith("malformed reply") for m in q)
    assert [e["action"] for e in llm_events(mem, q[0]["id"])] == ["llm_quarantine"]
    r = run_cli("learned", "list", "--status", "quarantined")
    assert r.returncode == 0 and "quarantined: malformed reply" in r.stdout.decode(), r.stdout.decode()
    assert "[llm: quarantine]" in r.stdout.decode()
    assert len(fake.requests) == 1
    assert service.run(mem, mem.scope(), clock=Clock())["llm"]["pending"] == 0     # not re-sent
    assert len(fake.requests) == 1


def test_unbacked_rewrites_unknown_ids_and_bad_verdicts_are_quarantined(mem, fake):
    mem.add_turns(turns(4))
    mem.learn()
    texts = [statement(k) for k in range(4)]

    def reply(cands):
        by_text = {c["text"]: c["id"] for c in cands}
        return json.dumps({"verdicts": [
            {"id": by_text[texts[0]], "verdict": "rewrite", "text": "Always use `pnpm install --frozen-lockfile`."},
            {"id": by_text[texts[1]], "verdict": "rewrite", "text": "Never edit src/legacy/payments.py by hand."},
            {"id": by_text[texts[2]], "verdict": "promote"},
            {"id": "m_0123456789abcdef", "verdict": "keep", "text": "Deploy with kubectl on Fridays."},
            {"id": by_text[texts[3]], "verdict": "keep"},
        ]})
    use(mem, fake)
    fake.reply = reply
    got = service.run(mem, mem.scope(), clock=Clock())["llm"]
    assert got["quarantine"] == 3 and got["keep"] == 1 and got["strays"] == 1
    q = {m["text"]: m["data"]["llm"] for m in mem.learned(status="quarantined")}
    assert set(q) == set(texts[:3])                              # the stored text is the learner's own
    assert "pnpm install --frozen-lockfile" in q[texts[0]]["reason"]
    assert q[texts[0]]["proposed"] == "Always use `pnpm install --frozen-lockfile`."
    assert "src/legacy/payments.py" in q[texts[1]]["reason"]
    assert "unknown verdict" in q[texts[2]]["reason"]
    active = {m["text"] for m in mem.learned()}
    assert texts[3] in active and not active & set(texts[:3])
    assert not any("kubectl" in m["text"] or "pnpm" in m["text"] for m in mem.learned(status="all"))
    st = review.status(mem)
    assert st["strays"][0]["reason"] == "unknown id" and st["strays"][0]["id"] == "m_0123456789abcdef"
    assert "kubectl" not in json.dumps(st)          # the stray's text is not kept (it may quote a turn)
    r = run_cli("learned", "llm", env={"REMEM_LEARN_LLM_BASE_URL": fake.base_url,
                                       "REMEM_LEARN_LLM_API_KEY": API_KEY})
    out = r.stdout.decode()
    assert r.returncode == 0 and "quarantined reply: unknown id m_0123456789abcdef" in out, out
    assert API_KEY not in out


@pytest.mark.parametrize("failure", ["500", "timeout"])
def test_timeouts_and_server_errors_trip_the_breaker_which_persists(mem, fake, remem_home, failure):
    import remem

    mem.add_turns(turns(40))                               # 40 candidates: 40 requests if nothing stopped it
    mem.learn()
    if failure == "500":
        fake.status = 500
    else:
        fake.delay = 1.0
    use(mem, fake, batch_size=1, max_requests=100, failures=3, breaker_seconds=600.0, timeout_seconds=0.2)
    clock = Clock()
    got = service.run(mem, mem.scope(), clock=clock)["llm"]
    assert got["failures"] == 3 and got["stopped"] == "breaker" and len(fake.requests) == 3
    assert got["judged"] == 0 and len(candidates(mem)) == 40
    clock.t += 300
    mem2 = remem.open()                                    # a restart does not close the breaker
    try:
        use(mem2, fake, batch_size=1, max_requests=100, failures=3, breaker_seconds=600.0, timeout_seconds=0.2)
        assert service.run(mem2, mem2.scope(), clock=clock)["llm"]["stopped"] == "breaker"
        assert len(fake.requests) == 3
        clock.t += 301                                     # half open: one try, which fails: open again
        got = service.run(mem2, mem2.scope(), clock=clock)["llm"]
        assert got["requests"] == 1 and got["stopped"] == "breaker" and len(fake.requests) == 4
        fake.status, fake.delay = 200, 0.0                 # the server is back
        clock.t += 601
        got = service.run(mem2, mem2.scope(), clock=clock)["llm"]
        assert got["failures"] == 0 and got["keep"] == got["requests"] == 40 and len(fake.requests) == 44
    finally:
        mem2.close()
    state = json.loads((remem_home / llm.STATE_FILE).read_text())
    assert state["failures"] == 0 and state["last_error"] == ""


def test_a_429_with_retry_after_pauses_the_next_pass(mem, fake):
    mem.add_turns(turns(3))
    fake.status, fake.retry_after = 429, 30
    use(mem, fake, batch_size=1, failures=5)
    clock = Clock()
    got = service.run(mem, mem.scope(), clock=clock)["llm"]
    assert got["failures"] == 1 and got["stopped"] == "cooldown" and len(fake.requests) == 1


def test_no_storm_after_a_10000_turn_import(mem, fake):
    """A big import learns hundreds of candidates at once: the model is asked a bounded number of
    times (batches, ``max_requests``, the budget, the cooldown), however often the learn job runs."""
    mem.add_turns(turns(10_000, every=50))
    use(mem, fake, batch_size=8, max_requests=8, cooldown_seconds=300.0)
    clock = Clock()
    first = service.run(mem, mem.scope(), clock=clock)
    assert first["turns"] == 10_000
    got = first["llm"]
    pending = got["pending"] + got["judged"]
    assert pending == 200
    assert got["requests"] == len(fake.requests) == 8 and got["judged"] == 64
    for i in range(5):                                      # the job's follow-up passes and more captures
        mem.add_turns(turns(1, project=f"live-{i}", said=statement))
        assert service.run(mem, mem.scope(), clock=clock)["llm"]["stopped"] == "cooldown"
    assert len(fake.requests) == 8
    assert all(len(r["candidates"]) <= 8 for r in fake.requests)
    # over a whole day with the cooldown passed each time: bounded by the daily budget
    fake.usage = 2000
    mem.config.override("learn.llm.daily_tokens", 20_000)
    for _ in range(10):
        clock.t += 301
        service.run(mem, mem.scope(), clock=clock)
    assert len(fake.requests) <= 8 + math.ceil(20_000 / 2000)
    assert sum(len(r["candidates"]) for r in fake.requests) <= pending


def test_secrets_never_reach_the_server_nor_the_state_files(mem, fake, remem_home, caplog):
    secrets = ["ghp_1234567890abcdefghijABCDEFGHIJ123456", "Hunt3r2Secret!", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"]
    said = [f"I don't want the release script to print the token {secrets[0]} in the deploy logs.",
            f"I don't want anyone to log in with password={secrets[1]} on the staging box.",
            f"I don't want the client to ship the key {secrets[2]} inside the bundle."]
    ids = [r.id for r in mem.add_turns(turns(3, said=lambda k: said[k])).results]
    # an older version stored one raw (before redaction existed): the learner's second lock holds
    with mem.store.conn as db:
        db.execute("UPDATE turns SET request = ? WHERE id = ?", (said[0], ids[0]))
    caplog.set_level(logging.DEBUG)
    use(mem, fake)
    got = service.run(mem, mem.scope(), clock=Clock())
    assert got["llm"]["requests"] == 1 and len(fake.requests[0]["candidates"]) == 3
    received = fake.received()
    for s in secrets:
        assert s not in received
    assert "[REDACTED" in received
    assert fake.requests[0]["headers"].get("Authorization") == f"Bearer {API_KEY}"   # the key: only there
    assert API_KEY not in received
    assert API_KEY not in caplog.text and not any(s in caplog.text for s in secrets)
    assert API_KEY not in (remem_home / llm.STATE_FILE).read_text()
    for m in mem.learned(status="all"):
        assert not any(s in json.dumps(m) for s in secrets)
    assert API_KEY not in repr(llm.configured(mem))


def test_the_api_key_is_never_mirrored_nor_shown(remem_home):
    r = run_cli("config", "set", "learn.llm.api_key", API_KEY)
    assert r.returncode == 0, r.stderr.decode()
    assert API_KEY not in r.stdout.decode() + r.stderr.decode() and "********" in r.stdout.decode()
    mirror = (remem_home / "hook-settings.json").read_text()
    assert API_KEY not in mirror and json.loads(mirror)["withheld"] == ["learn.llm.api_key"]
    shown = run_cli("config", "show").stdout.decode() + run_cli("config", "get", "learn.llm.api_key").stdout.decode() \
        + run_cli("config", "list", "learn").stdout.decode() + run_cli("config", "get", "learn", "--json").stdout.decode()
    assert API_KEY not in shown and "********" in shown
    from remem import config as configmod
    assert configmod.load(remem_home, env={}).get("learn.llm.api_key") == API_KEY   # read from config.yaml
    r = run_cli("config", "set", "learn.llm.base_url", "ftp://example.invalid")
    assert r.returncode != 0 and "learn.llm.base_url must be empty or an http(s):// URL" in r.stderr.decode()


def test_judge_believes_only_what_the_evidence_backs():
    c = judge.Candidate("m_1", "preference", "Use bun, not npm.", ["use bun not npm, please remember that"])
    ok, strays = judge.judge('```json\n{"verdicts": [{"id": "m_1", "verdict": "rewrite", "text": '
                             '"Use bun instead of npm, e.g. for installs."}]}\n```', [c])
    assert ok[0].verdict == "rewrite" and not strays
    bad, _ = judge.judge('{"verdicts": [{"id": "m_1", "verdict": "rewrite", "text": "Use pnpm, not npm."}]}', [c])
    assert bad[0].verdict == "quarantine" and "pnpm" in bad[0].reason
    none, _ = judge.judge('{"verdicts": []}', [c])
    assert none[0].verdict == "quarantine" and none[0].reason == "no verdict in the reply"
    listed, _ = judge.judge('[{"id": "m_1", "verdict": "KEEP"}]', [c])
    assert listed[0].verdict == "keep"
    assert judge.unbacked("Run `make test` in tools/ci", "run make test in tools/ci") == []
    assert judge.unbacked("Run `make lint` in tools/ci", "run make test in tools/ci") == ["make lint"]


def test_the_daemon_asks_a_bounded_number_of_times_and_never_shows_the_key(fake, tmp_path):
    """The real daemon: its background learn job and a learn through the API ask the loopback model
    within ``max_requests`` and the cooldown; the API masks the key and refuses to change the URL."""
    import time

    import remem
    from remem.server.testing import Daemon

    home = tmp_path / "remem"
    m = remem.open(home)
    m.add_turns(turns(30))
    for key, value in {"base_url": fake.base_url, "model": "fake-judge", "api_key": API_KEY, "batch_size": "8",
                       "max_requests": "2", "cooldown_seconds": "300"}.items():
        m.config.set(f"learn.llm.{key}", value)
    m.close()
    d = Daemon(home, env={"HOME": str(tmp_path), "REMEM_AUTO_SYNC": "0", "REMEM_LEARN_DELAY": "0"})
    d.start()
    try:
        with d.client() as c:
            cfg = c.get("/api/v1/config").json()
            assert cfg["values"]["learn"]["llm"]["api_key"] == "********"
            assert cfg["file"]["learn"]["llm"]["api_key"] == "********" and API_KEY not in json.dumps(cfg)
            r = c.patch("/api/v1/config", json={"learn.llm.base_url": "http://203.0.113.9/v1"})
            assert r.status_code == 403
            got = c.post("/api/v1/learned/learn").json()
            deadline = time.monotonic() + 60
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.2)
            assert fake.requests, got
            time.sleep(2.0)                                   # a second pass would come now: none does
            c.post("/api/v1/learned/learn")
            assert 1 <= len(fake.requests) <= 2
            assert all(r["headers"].get("Authorization") == f"Bearer {API_KEY}" for r in fake.requests)
            judged = c.get("/api/v1/learned", params={"status": "all"}).json()
            items = judged["items"] if isinstance(judged, dict) else judged
            assert any((i.get("data") or {}).get("llm", {}).get("verdict") == "keep" for i in items)
    finally:
        d.stop()
    assert API_KEY not in d.output()
    assert API_KEY not in (home / llm.STATE_FILE).read_text()
    assert API_KEY not in (home / "hook-settings.json").read_text()


def test_forgetting_the_evidence_takes_the_models_wording_along(mem, fake):
    ids = [r.id for r in mem.add_turns(turns(2)).results]
    new = f"No {word(0, 1)} hacks in the {word(0, 5)} module, ever."
    fake.decide = lambda c: ({"id": c["id"], "verdict": "rewrite", "text": new} if c["text"] == statement(0)
                             else {"id": c["id"], "verdict": "keep"})
    use(mem, fake)
    service.run(mem, mem.scope(), clock=Clock())
    assert new in {m["text"] for m in mem.learned()}
    mem.forget(ids=[ids[0]])
    db = mem.store.conn
    left = "\n".join(str(r[0]) + str(r[1]) for r in db.execute("SELECT text, data FROM learned"))
    left += "\n".join(str(r[0]) + str(r[1]) for r in db.execute("SELECT before_json, after_json FROM learned_events"))
    assert new not in left and statement(0) not in left
    service.run(mem, mem.scope(), clock=Clock())             # relearn: nothing to judge from the forgotten turn
    assert all(statement(0) not in c["text"] for r in fake.requests[1:] for c in r["candidates"])


def test_a_candidate_against_an_active_slot_value_is_left_to_the_user(mem, fake):
    """bun is the active package manager (said in two sessions); a candidate naming pnpm for that slot
    is never sent: keeping it would leave two active values in one slot (the user's review decides)."""
    said = ["Use bun, not npm, for the scripts.", "Use bun, not npm, for installing.",
            "Use pnpm instead of yarn for the docs site.", statement(7)]
    mem.add_turns(turns(80, every=20, said=lambda k: said[k]))
    mem.learn()
    by_slot = {(m["slot"], m["value"]): m for m in mem.learned(status="all") if m["slot"] == "pkg.manager"}
    assert by_slot[("pkg.manager", "bun")]["status"] == "active"
    pnpm = by_slot[("pkg.manager", "pnpm")]
    assert pnpm["status"] == "candidate"
    use(mem, fake)
    got = service.run(mem, mem.scope(), clock=Clock())["llm"]
    sent = [c["text"] for r in fake.requests for c in r["candidates"]]
    assert sent == [statement(7)] and got["keep"] == 1
    assert mem.store.learned.get(mem.scope(), pnpm["id"])["status"] == "candidate"
    actives = {m["value"] for m in mem.learned() if m["slot"] == "pkg.manager"}
    assert actives == {"bun"}
