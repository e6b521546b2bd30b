"""``remem export --dataset``: successful, substantive turns as ShareGPT / Alpaca / OpenAI records, with
personal data as typed placeholders, deduplicated, incremental; on a real-shaped home of several
projects and owners (code, stack traces, Chinese, secrets, e-mails, phone numbers)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import remem
from conftest import run_cli
from remem import dataset
from remem.model import ToolCall, TurnIn

T0 = 1_760_000_000.0
DAY = 86400.0

_TRACE = "\n".join(["Traceback (most recent call last):"]
                   + [f'  File "{{home}}/code/payments/app/{m}.py", line {10 + i}, in {m}'
                      for i, m in enumerate(["main", "router", "charge", "stripe_client"])]
                   + ["stripe.error.CardError: Your card was declined."])
_CODE = ("```python\ndef total(items: list[Item]) -> int:\n    \"\"\"Cents, never floats (v2.3.1).\"\"\"\n"
         "    return sum(i.price_cents * i.qty for i in items)\n```")


def _turn(owner, project, sess, i, request, reply, status="succeeded", agent="claude-code", dt=0.0):
    return TurnIn(request=request, reply=reply, owner=owner, agent=agent, project=project, session_id=sess,
                  source_key=f"{owner}:{project}:{sess}:{i}", source_name=agent, status=status,
                  started_at=T0 + dt, ended_at=T0 + dt + 30, message_ids=[f"{owner}-{project}-{sess}-{i}"],
                  actions=[ToolCall(name="Bash", input=json.dumps({"command": "pytest -q"}),
                                    output="3 passed in 0.12s")])


def history(home: str) -> list[TurnIn]:
    """Three projects of the default owner (payments-api: 5 sessions × 6 turns; docs-site: Chinese;
    a one-turn session) and another owner's project that must never be exported."""
    out: list[TurnIn] = []
    trace = _TRACE.replace("{home}", home)
    for s in range(5):
        sess = f"pay-{s}"
        rows = [
            (f"The charge endpoint fails for session {s}, here is the trace:\n{trace}",
             f"The card error is raised before we catch it (attempt {s}). I wrapped `charge()` in a try block "
             f"and return a 402 with the decline code; tests pass now.\n{_CODE}"),
            (f"Email the receipt to customer{s}@shopmail.com and cc finance@acme-payments.io",
             f"Done: the receipt for order #{1000 + s} goes to the customer and finance is cc'd. "
             f"The template lives in app/templates/receipt.html (version 1.4.{s})."),
            (f"Our support number is +1 (415) 555-01{30 + s}; put it in the footer of the receipt.",
             "I added the support phone number to the receipt footer and a test that renders it."),
            (f"Use this key for the sandbox: STRIPE_SECRET_KEY=sk_test_{'4eC39HqLyjWDarjtT1zdp7dc' if s else 'x' * 24}",
             "I put the key in .env (gitignored) and read it through settings; it is not committed."),
            (f"why is test_refund_{s} flaky?", f"ok {s}"),                                       # short reply
            (f"run the full suite for round {s}",
             f"The suite failed at 2026-01-1{s}T10:00:00Z: 3 of 120 tests time out after 30000 ms.", "failed"),
        ]
        for i, row in enumerate(rows):
            req, rep, *st = row
            out.append(_turn("default", "payments-api", sess, i, req, rep, st[0] if st else "succeeded",
                             dt=s * DAY + i * 300))
    for s in range(3):
        for i in range(3):
            out.append(_turn("default", "docs-site", f"docs-{s}", i,
                             f"把第 {i + 1} 节翻译成中文，作者联系方式：13800138{s}{i}0，地址：北京市朝阳区建国路8{i}号",
                             f"已翻译第 {i + 1} 节（第 {s} 轮）。术语表见 docs/glossary.md，构建命令是 `pnpm docs:build`。",
                             agent="codex", dt=10 * DAY + s * DAY + i * 60))
    out.append(_turn("default", "scratch", "once", 0, "What does HTTP 418 mean in practice?",
                     "It is the joke status 'I'm a teapot' from RFC 2324; real servers rarely send it.", dt=20 * DAY))
    for i in range(4):
        out.append(_turn("bob", "payments-api", "bob-1", i, f"bob's private question {i} about payouts",
                         f"bob's private answer {i}: payouts run nightly at 02:00 UTC via cron.", dt=DAY + i))
    return out


@pytest.fixture
def home_dir() -> str:
    return os.path.expanduser("~")


@pytest.fixture
def mem(home_dir):
    with remem.open() as m:
        m.add_turns(history(home_dir))
        yield m


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def all_text(records: list[dict]) -> str:
    return json.dumps(records, ensure_ascii=False)


def test_openai_records_are_successful_substantive_scoped_and_private(mem, tmp_path, home_dir):
    out = tmp_path / "train.jsonl"
    rep = dataset.export(mem, mem.scope(), "openai", out=out)
    recs = read_jsonl(out)
    # payments: 4 substantive succeeded turns × 5 sessions, but the support-number and sandbox-key turns
    # differ only in what became a placeholder: after scrubbing they are one record each (8 duplicates);
    # docs: 9; the one-turn session is too small
    assert rep.written == len(recs) == 5 * 2 + 2 + 9
    assert rep.duplicate == 8
    assert rep.filtered == {"short": 5, "status": 5, "small_session": 1}
    for r in recs:
        assert list(r) == ["messages"]
        assert [m["role"] for m in r["messages"]] == ["user", "assistant"]
        assert all(isinstance(m["content"], str) and m["content"] for m in r["messages"])
    text = all_text(recs)
    assert "bob" not in text and "HTTP 418" not in text                   # other owner, small session
    assert "time out" not in text                                         # failed turns stay out
    for leaked in ("@shopmail.com", "finance@acme", "555-013", "sk_test_", "13800138", "建国路", home_dir):
        assert leaked not in text, leaked
    for placeholder in ("<EMAIL>", "<PHONE>", "<SECRET>", "<ADDRESS>", "<PATH>"):
        assert placeholder in text, placeholder
    assert rep.placeholders["<EMAIL>"] == 10 and rep.placeholders["<PATH>"] == 4 * 5
    assert rep.placeholders["<SECRET>"] == 5 and rep.placeholders["<ADDRESS>"] == 9
    # code, versions, stack frames, Chinese and timestamps pass untouched
    assert "return sum(i.price_cents * i.qty for i in items)" in text
    assert "version 1.4.3" in text and 'line 12, in charge' in text and "<PATH>/code/payments/app/main.py" in text
    assert "已翻译第 2 节" in text and "`pnpm docs:build`" in text and "order #1003" in text


def test_sharegpt_and_alpaca_match_their_public_shapes(mem, tmp_path):
    sg = tmp_path / "sharegpt.json"
    dataset.export(mem, mem.scope(project="docs-site"), "sharegpt", out=sg,
                   opts=dataset.Options(system="You are a careful translator."))
    data = json.loads(sg.read_text(encoding="utf-8"))
    assert isinstance(data, list) and len(data) == 9
    for conv in data:
        assert list(conv) == ["conversations"]
        assert [m["from"] for m in conv["conversations"]] == ["system", "human", "gpt"]
        assert all(set(m) == {"from", "value"} for m in conv["conversations"])
    al = tmp_path / "alpaca.json"
    dataset.export(mem, mem.scope(project="payments-api"), "alpaca", out=al)
    rows = json.loads(al.read_text(encoding="utf-8"))
    assert len(rows) == 12 and all(set(r) == {"instruction", "input", "output"} for r in rows)
    assert all(r["input"] == "" and r["instruction"] and r["output"] for r in rows)
    lines = tmp_path / "alpaca.jsonl"                       # .jsonl: one object per line instead
    dataset.export(mem, mem.scope(project="payments-api"), "alpaca", out=lines)
    assert read_jsonl(lines) == rows


def test_filters_are_configurable(mem, tmp_path):
    rep = dataset.export(mem, mem.scope(project="payments-api"), "openai", out=tmp_path / "a.jsonl",
                         opts=dataset.Options(statuses=("succeeded", "failed"), min_chars=1, min_turns=1))
    assert rep.written == 30 - 8 and rep.duplicate == 8 and not rep.filtered
    rep = dataset.export(mem, mem.scope(), "openai", out=tmp_path / "b.jsonl",
                         opts=dataset.Options(min_turns=4))
    assert rep.written == 12 and rep.filtered["small_session"] == 10       # docs sessions have 3 turns
    rep = dataset.export(mem, mem.scope(), "openai", out=tmp_path / "c.jsonl",
                         opts=dataset.Options(min_chars=90))
    assert 0 < rep.written < 21 and rep.filtered["short"] > 5


def test_incremental_export_writes_only_what_is_new(mem, tmp_path, home_dir):
    out = tmp_path / "train.jsonl"
    first = dataset.export(mem, mem.scope(), "openai", out=out)
    again = dataset.export(mem, mem.scope(), "openai", out=out)
    assert again.written == 0 and again.seen_before == first.written
    assert len(read_jsonl(out)) == first.written
    more = [_turn("default", "payments-api", "pay-9", i, f"Add idempotency keys to refunds, step {i}",
                  f"Step {i}: refunds now take an Idempotency-Key header; a replay returns the first result.",
                  dt=30 * DAY + i) for i in range(3)]
    mem.add_turns(more)
    third = dataset.export(mem, mem.scope(), "openai", out=out)
    assert third.written == 3 and third.seen_before == first.written
    recs = read_jsonl(out)
    assert len(recs) == first.written + 3 and "step 2" in recs[-1]["messages"][0]["content"]
    state = json.loads((tmp_path / "train.jsonl.remem-state.json").read_text())
    assert state["format"] == "openai" and len(state["hashes"]) == len(set(state["hashes"])) == len(recs)
    # an array format grows in place, still valid JSON
    arr = tmp_path / "train.json"
    dataset.export(mem, mem.scope(project="docs-site"), "sharegpt", out=arr)
    dataset.export(mem, mem.scope(), "sharegpt", out=arr)
    assert len(json.loads(arr.read_text(encoding="utf-8"))) == len(recs)
    # a missing output file starts over (its old state is ignored)
    out.unlink()
    assert dataset.export(mem, mem.scope(), "openai", out=out).written == len(recs)


def test_duplicate_content_is_written_once(mem, tmp_path):
    same = [_turn("default", "dupes", f"d{s}", i, "Explain the retry policy of the payout worker.",
                  "Payouts retry 5 times with exponential backoff (1s, 2s, 4s, 8s, 16s), then alert on-call.",
                  dt=40 * DAY + s * 100 + i) for s in range(3) for i in range(2)]
    mem.add_turns(same)
    rep = dataset.export(mem, mem.scope(project="dupes"), "openai", out=tmp_path / "d.jsonl")
    assert rep.written == 1 and rep.duplicate == 5


def test_since_limits_the_window_but_sessions_count_whole(mem, tmp_path):
    rep = dataset.export(mem, mem.scope(), "openai", out=tmp_path / "s.jsonl",
                         since=dataset.parse_since("2025-10-19"))          # T0 + ~10 days: the docs only
    assert rep.written == 9
    assert dataset.parse_since("7d", now=1000.0 + 7 * DAY) == 1000.0
    assert dataset.parse_since("1760000000") == T0
    with pytest.raises(dataset.InputError, match="--since"):
        dataset.parse_since("last tuesday")


def test_refuses_to_overwrite_or_mix(mem, tmp_path):
    foreign = tmp_path / "mine.jsonl"
    foreign.write_text('{"messages": []}\n')
    with pytest.raises(dataset.InputError, match="did not write"):
        dataset.export(mem, mem.scope(), "openai", out=foreign)
    assert foreign.read_text() == '{"messages": []}\n'
    out = tmp_path / "o.jsonl"
    dataset.export(mem, mem.scope(), "openai", out=out)
    with pytest.raises(dataset.InputError, match="holds openai"):
        dataset.export(mem, mem.scope(), "sharegpt", out=out)
    with pytest.raises(dataset.InputError, match="exported for default"):
        dataset.export(mem, mem.scope("bob"), "openai", out=out)
    bob = tmp_path / "bob.jsonl"                   # bob's own export holds bob's turns only
    assert dataset.export(mem, mem.scope("bob"), "openai", out=bob).written == 4
    assert all("bob's private" in r["messages"][0]["content"] for r in read_jsonl(bob))
    (tmp_path / "o.jsonl.remem-state.json").write_text("{broken")
    with pytest.raises(dataset.InputError, match="not a remem export state"):
        dataset.export(mem, mem.scope(), "openai", out=out)
    with pytest.raises(dataset.InputError, match="unknown dataset format"):
        dataset.export(mem, mem.scope(), "llama", out=tmp_path / "x.jsonl")


def test_cli_dataset_mode_and_the_backup_export(mem, tmp_path):
    mem.close()
    out = tmp_path / "cli.jsonl"
    r = run_cli("export", "--dataset", "openai", "--project", "payments-api", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr.decode()
    d = json.loads(r.stdout)
    assert d["written"] == 12 and d["placeholders"]["<EMAIL>"] == 10
    r = run_cli("export", "--dataset", "openai", "--project", "payments-api", "--out", str(out))
    assert r.returncode == 0 and "wrote 0 records" in r.stderr.decode() and "12 written before" in r.stderr.decode()
    r = run_cli("export", "--dataset", "alpaca", "--project", "docs-site", "--min-turns", "1")
    assert r.returncode == 0, r.stderr.decode()
    assert len(json.loads(r.stdout)) == 9                                   # stdout: the whole array
    r = run_cli("export", "--dataset", "openai", "--sqlite", str(tmp_path / "x.db"))
    assert r.returncode == 1 and b"choose one" in r.stderr
    r = run_cli("export", "--dataset", "parquet")
    assert r.returncode == 2 and b"parquet" in r.stderr
    r = run_cli("export", "--dataset", "openai", "--since", "someday")
    assert r.returncode == 1 and b"--since" in r.stderr and b"Traceback" not in r.stderr
    # the backup export is unchanged: every turn of the owner, raw (it is for restoring)
    r = run_cli("export")
    assert r.returncode == 0
    rows = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert len(rows) == 30 + 9 + 1 and all(row["type"] == "turn" for row in rows)
    r = run_cli("export", "--project", "docs-site")
    assert r.returncode == 1 and b"--dataset" in r.stderr


def test_pure_rules():
    wrapped = ("<remem_memory_context>\nHistorical notes…\n1. [claude-code · x] old stuff\n</remem_memory_context>\n"
               "<current_user_request>fix the flaky refund test</current_user_request>")
    assert dataset.clean_request(wrapped) == "fix the flaky refund test"
    opts = dataset.Options()
    good = {"id": "t1", "status": "succeeded", "request": "fix the flaky refund test",
            "reply": "The refund test waited on a real clock; it uses the frozen clock fixture now."}
    assert dataset.why_not(good, 2, opts) == ""
    assert dataset.why_not(good | {"status": "failed"}, 2, opts) == "status"
    assert dataset.why_not(good | {"reply": "done"}, 2, opts) == "short"
    assert dataset.why_not(good | {"request": wrapped.split("<current")[0]}, 2, opts) == "empty"
    assert dataset.why_not(good, 1, opts) == "small_session"
    rec = dataset.record("openai", "q", "a", "sys")
    assert rec == {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
                                {"role": "assistant", "content": "a"}]}
    assert dataset.content_hash(rec) == dataset.content_hash(json.loads(json.dumps(rec)))
    assert dataset.content_hash(rec) != dataset.content_hash(dataset.record("openai", "q", "a"))
