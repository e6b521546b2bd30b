"""``remem learned export`` → edit by hand → ``remem learned import``: the round trip through the real
command on a real-shaped home (learned_data: Claude Code tool calls, Chinese, two projects, another
owner), plus the pure parser's errors. Nothing changes when a file is wrong."""

from __future__ import annotations

import json
import os
import re

import pytest

import remem
from conftest import run_cli
from learned_data import PROJECT, seed
from remem.ingest.normalize import InputError
from remem.layers import exchange, service


def ok(*args: str) -> str:
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def js(*args: str):
    return json.loads(ok(*args, "--json"))


@pytest.fixture
def home():
    with remem.open() as m:
        seed(m)
        m.learn()


def snapshot() -> list[tuple]:
    rows = js("learned", "list", "--status", "all")
    return sorted((m["id"], m["status"], m["text"], m["locked"], m["edited"]) for m in rows)


def test_markdown_export_is_grouped_marked_and_scoped(home, tmp_path):
    out = tmp_path / "AGENTS.md"
    r = run_cli("learned", "export", "--project", PROJECT, "--out", str(out))
    assert r.returncode == 0 and b"wrote" in r.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!-- remem learned export {")
    lines = text.splitlines()
    assert f"# {PROJECT}" in lines and "## Preferences" in lines and "## Conventions" in lines
    pref = next(line for line in lines if "Use bun, not npm" in line)
    assert pref.startswith("- ") and pref.endswith(" -->") and "<!-- remem:m_" in pref
    assert lines.index(pref) > lines.index("## Preferences") > lines.index(f"# {PROJECT}")
    assert any("以后提交前都要先跑 bun test" in line for line in lines)
    assert "working_state" not in text and "Goal:" not in text                  # not shared
    assert "yarn" not in text and "pnpm" not in text                            # other project / owner
    active = js("learned", "list", "--project", PROJECT)
    shared = [m for m in active if m["kind"] in exchange.EXPORT_KINDS]
    assert text.count("<!-- remem:m_") == len(shared) >= 4
    assert ok("learned", "export", "--project", PROJECT).splitlines()[2:] == lines[2:]   # stdout, same body


def test_round_trip_edit_add_delete(home, tmp_path):
    out = tmp_path / "rules.md"
    ok("learned", "export", "--out", str(out))
    before = snapshot()
    # importing the untouched file changes nothing
    d = js("learned", "import", str(out))
    assert d["edited"] == [] and d["created"] == [] and d["missing"] == [] and snapshot() == before
    text = out.read_text(encoding="utf-8")
    bun = next(m for m in js("learned", "list", "--project", PROJECT) if "Use bun" in m["text"])
    ts = next(m for m in js("learned", "list", "--project", PROJECT) if "TypeScript" in m["text"])
    edited = text.replace("Use bun, not npm.", "Use bun for everything, never npm or yarn.")
    edited = edited.replace(f"# {PROJECT}\n\n## Conventions\n",
                            f"# {PROJECT}\n\n## Conventions\n- Prices are integers in cents, never floats.\n"
                            "- 所有金额字段都用整数（分）。\n")
    edited = "\n".join(line for line in edited.splitlines() if ts["id"] not in line) + "\n"
    out.write_text(edited, encoding="utf-8")
    # a dry run says what would happen and changes nothing
    dry = js("learned", "import", str(out), "--dry-run")
    assert dry["dry_run"] and [e["id"] for e in dry["edited"]] == [bun["id"]]
    assert {e["text"] for e in dry["created"]} == {"Prices are integers in cents, never floats.",
                                                  "所有金额字段都用整数（分）。"}
    assert [m["id"] for m in dry["missing"]] == [ts["id"]] and snapshot() == before
    r = run_cli("learned", "import", str(out))
    assert r.returncode == 0, r.stderr.decode()
    assert "edited and locked" in r.stdout.decode() and "--archive-missing" in r.stderr.decode()
    got = js("learned", "show", bun["id"])
    assert got["text"] == "Use bun for everything, never npm or yarn." and got["locked"] and got["edited"]
    events = js("learned", "history", bun["id"])
    assert events[-1]["action"] == "edit" and events[-1]["actor"] == "user"
    assert events[-1]["before"]["text"] == "Use bun, not npm."
    conv = [m for m in js("learned", "list", "--project", PROJECT, "--kind", "convention")
            if "cents" in m["text"] or "整数" in m["text"]]
    assert len(conv) == 2 and all(m["locked"] and m["edited"] and m["status"] == "active" for m in conv)
    assert all(m["project"] == PROJECT and m["evidence"] == [] for m in conv)
    assert js("learned", "history", conv[0]["id"])[0]["action"] == "created"
    assert js("learned", "show", ts["id"])["status"] == "active"                # deleted line: kept for now
    # the user's lines survive a rebuild from the turns
    ok("learn", "--rebuild")
    assert js("learned", "show", bun["id"])["text"] == "Use bun for everything, never npm or yarn."
    assert {m["id"] for m in conv} <= {m["id"] for m in js("learned", "list", "--project", PROJECT)}
    # importing again adds nothing; --archive-missing archives the deleted line
    again = js("learned", "import", str(out))
    assert again["edited"] == [] and again["created"] == []
    done = js("learned", "import", str(out), "--archive-missing")
    assert done["archived"] == [ts["id"]] and js("learned", "show", ts["id"])["status"] == "archived"
    assert js("learned", "history", ts["id"])[-1]["action"] == "archive"
    # rollback works on imported edits like on any other
    ok("learned", "rollback", str(events[-1]["id"]))
    assert js("learned", "show", bun["id"])["text"] == "Use bun, not npm."


def test_json_round_trip(home, tmp_path):
    out = tmp_path / "learned.json"
    ok("learned", "export", "--format", "json", "--project", PROJECT, "--out", str(out))
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["remem"] == "learned-export" and doc["projects"] == [PROJECT]
    mems = doc["memories"]
    assert mems and all({"id", "project", "kind", "text"} <= set(m) for m in mems)
    target = next(m for m in mems if m["kind"] == "fact")
    target["text"] = "The package manager is bun 1.1 (never npm)."
    mems.append({"project": PROJECT, "kind": "decision", "text": "Checkout uses Stripe Elements, not Checkout."})
    out.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8-sig")     # with a byte-order mark
    d = js("learned", "import", str(out))
    assert [e["id"] for e in d["edited"]] == [target["id"]] and len(d["created"]) == 1
    assert js("learned", "show", target["id"])["locked"]
    dec = js("learned", "list", "--project", PROJECT, "--kind", "decision")
    assert [m["text"] for m in dec] == ["Checkout uses Stripe Elements, not Checkout."]


def test_paths_anonymised_and_secrets_redacted(home, tmp_path):
    with remem.open() as m:
        rule = next(r for r in m.learned(project=PROJECT) if "Use bun" in r["text"])
        mine = os.path.expanduser("~")
        text = (f"Keep builds in {mine}/cache/shop, not /home/bob/tmp; deploy key "
                f"ghp_{'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'}")
        service.act(m, m.scope(), rule["id"], "edit", text=text)
        stored = m.learned(project=PROJECT)
    assert mine in next(r["text"] for r in stored if r["id"] == rule["id"])       # stored as typed
    out = tmp_path / "r.md"
    ok("learned", "export", "--out", str(out))
    body = out.read_text(encoding="utf-8")
    assert mine not in body and "/home/bob" not in body and "ghp_a1B2" not in body
    assert "~/cache/shop" in body and "/home/<user>/tmp" in body
    # the anonymised line reads as unchanged: importing it does not overwrite the stored path
    d = js("learned", "import", str(out))
    assert d["edited"] == []


BAD = [
    ("no header", lambda t: t.split("\n", 1)[1], "no header line"),
    ("broken header", lambda t: t.replace('"v": 1', '"v": 7', 1), "version-1"),
    ("unknown section", lambda t: t.replace("## Decisions", "## Wishes"), "unknown section 'Wishes'"),
    ("item before headings", lambda t: t.replace("<!-- Edit", "- stray line\n<!-- Edit", 1),
     "before its `# project`"),
    ("prose", lambda t: t.replace("## Facts", "Some notes I added\n## Facts", 1), "expected a `# project`"),
    ("after the end", lambda t: t.replace(exchange.END, "", 1) + "\n# Notes\n", "not one this file was exported for"),
    ("unknown id", lambda t: re.sub(r"remem:m_[0-9a-f]{16}", "remem:m_0000000000000000", t, count=1),
     "no learned memory m_0000000000000000"),
    ("bad id", lambda t: t.replace("remem:m_", "remem:zz", 1), "not a learned memory id"),
    ("empty text", lambda t: _first_item(t, lambda line: "-  " + line[line.index("<!--"):]), "text is empty"),
    ("duplicate id", lambda t: _first_item(t, lambda line: line + "\n" + line), "appears twice"),
    ("moved", lambda t: _move_first_fact(t), "moving it to another section"),
    ("unknown project", lambda t: t.replace(f"# {PROJECT}", "# elsewhere"), "not one this file was exported for"),
]


def _first_item(text: str, change) -> str:
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("- ") and "<!-- remem:" in line)
    lines[i] = change(lines[i])
    return "\n".join(lines) + "\n"


def _move_first_fact(text: str) -> str:
    lines = text.splitlines()
    facts = lines.index("## Facts")
    i = next(n for n in range(facts, len(lines)) if lines[n].startswith("- "))
    line = lines.pop(i)
    lines.insert(lines.index("## Decisions") + 1, line)
    return "\n".join(lines) + "\n"


@pytest.fixture
def exported(home):
    with remem.open() as m:
        yield m, service.export_file(m, m.scope(project=PROJECT), "md")


def _state(m) -> list[tuple]:
    return sorted((r["id"], r["status"], r["text"], r["locked"], r["edited"]) for r in m.learned(status="all"))


@pytest.mark.parametrize(("name", "change", "message"), BAD, ids=[b[0] for b in BAD])
def test_malformed_files_change_nothing(exported, name, change, message):
    m, good = exported
    # a valid edit and a new line in the same file must not be applied either (all or nothing)
    text = change(good.replace("Use bun, not npm.", "Use bun, always.")
                  .replace("## Decisions\n", "## Decisions\n- Ship on Tuesdays.\n", 1))
    assert text != good
    before = _state(m)
    with pytest.raises(InputError, match=re.escape(message)):
        service.import_file(m, m.scope(), text, archive_missing=True)
    assert _state(m) == before


def test_a_malformed_file_through_the_command(home, tmp_path):
    out = tmp_path / "bad.md"
    ok("learned", "export", "--project", PROJECT, "--out", str(out))
    out.write_text(out.read_text(encoding="utf-8").replace("## Facts", "## Wishes"), encoding="utf-8")
    before = snapshot()
    r = run_cli("learned", "import", str(out))
    assert r.returncode == 1 and b"unknown section 'Wishes'" in r.stderr and b"Traceback" not in r.stderr
    assert snapshot() == before


def test_other_owner_and_wrong_files(home, tmp_path):
    out = tmp_path / "r.md"
    ok("learned", "export", "--out", str(out))
    r = run_cli("learned", "import", str(out), "--owner", "bob")
    assert r.returncode == 1 and b"exported for owner 'default'" in r.stderr
    junk = tmp_path / "junk.json"
    junk.write_text('{"memories": []}')
    r = run_cli("learned", "import", str(junk))
    assert r.returncode == 1 and b"not a remem learned export" in r.stderr
    junk.write_text("{not json")
    r = run_cli("learned", "import", str(junk))
    assert r.returncode == 1 and b"invalid JSON" in r.stderr
    r = run_cli("learned", "import", str(tmp_path / "missing.md"))
    assert r.returncode != 0 and b"Traceback" not in r.stderr


def test_parser_reads_wrapped_lines_and_other_markers():
    meta = json.dumps({"v": 1, "owner": "o", "projects": ["p", ""], "kinds": list(exchange.EXPORT_KINDS),
                       "at": 10.0})
    text = (f"\n<!-- remem learned export {meta} -->\n<!-- a note of mine -->\n\n# p\n\n## Preference\n"
            "- Use tabs in Makefiles\n  and spaces elsewhere. <!-- remem:m_0123456789abcdef -->\n"
            "* Prefer small commits\n\n# (no project)\n## facts\n+ The CI runs on Linux.\n")
    header, entries = exchange.parse(text)
    assert header.owner == "o" and header.at == 10.0
    assert [(e.project, e.kind, e.id, e.text) for e in entries] == [
        ("p", "preference", "m_0123456789abcdef", "Use tabs in Makefiles and spaces elsewhere."),
        ("p", "preference", None, "Prefer small commits"),
        ("", "fact", None, "The CI runs on Linux.")]
    stored = {"m_0123456789abcdef": {"id": "m_0123456789abcdef", "project": "p", "kind": "preference",
                                     "text": "Use tabs in Makefiles and spaces elsewhere.", "status": "active",
                                     "created_at": 5.0, "decided": ""},
              "m_aaaaaaaaaaaaaaaa": {"id": "m_aaaaaaaaaaaaaaaa", "project": "p", "kind": "fact", "text": "x",
                                     "status": "active", "created_at": 5.0, "decided": ""},
              "m_bbbbbbbbbbbbbbbb": {"id": "m_bbbbbbbbbbbbbbbb", "project": "p", "kind": "fact", "text": "newer",
                                     "status": "active", "created_at": 50.0, "decided": ""}}
    plan = exchange.plan(header, entries, stored, "o")
    assert plan.unchanged == 1 and not plan.edits and len(plan.new) == 2
    assert [r["id"] for r in plan.missing] == ["m_aaaaaaaaaaaaaaaa"]     # learned after the export: not missing
    with pytest.raises(InputError, match="export header is damaged"):
        exchange.parse(text.replace('"owner": "o"', '"owner": ""'))


def test_text_that_would_close_the_marker_is_defused():
    line = exchange.shown("use <!-- this --> carefully\nand\tthat", home="/home/x")
    assert "-->" not in line and "<!--" not in line and "\n" not in line


def test_export_file_needs_one_owner(home):
    with remem.open() as m:
        with pytest.raises(InputError, match="one owner"):
            service.export_file(m, m.scope(["default", "bob"]), "md")
        with pytest.raises(InputError, match="md or json"):
            service.export_file(m, m.scope(), "yaml")


def test_a_line_the_user_added_reaches_the_packet(home):
    with remem.open() as m:
        text = service.export_file(m, m.scope(project=PROJECT), "md")
        text = text.replace("## Decisions\n", "## Decisions\n- Prices live in the ledger table as integer cents, "
                                              "never floats.\n", 1)
        d = service.import_file(m, m.scope(), text)
        [new] = d["created"]
        packet = m.turn_start("how should I store prices in the ledger table?", project=PROJECT)
        ids = [i["id"] for i in packet["items"]]
        assert new["id"] in ids and new["id"] in packet["text"]
        m.learn(rebuild=True)
        assert new["id"] in {r["id"] for r in m.learned(project=PROJECT)}
        other = m.turn_start("how should I store prices in the ledger table?", project="other-app")
        assert new["id"] not in [i["id"] for i in other["items"]]                    # its own project only


def test_import_reads_stdin(home):
    text = ok("learned", "export", "--project", PROJECT).replace("Use bun, not npm.", "Use bun only.")
    r = run_cli("learned", "import", "-", "--json", input=text.encode())
    assert r.returncode == 0, r.stderr.decode()
    assert [e["after"] for e in json.loads(r.stdout)["edited"]] == ["Use bun only."]


def test_project_filter_and_secrets_in_new_lines(home):
    with remem.open() as m:
        text = service.export_file(m, m.scope(), "md")
        assert "# other-app" in text and f"# {PROJECT}" in text
        yarn = next(r for r in m.learned(project="other-app") if "yarn" in r["text"])
        bun = next(r for r in m.learned(project=PROJECT) if "Use bun" in r["text"])
        key = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA9"
        text = "\n".join(line for line in text.splitlines() if yarn["id"] not in line and bun["id"] not in line)
        text = text.replace("# other-app\n\n## Conventions\n",
                            f"# other-app\n\n## Conventions\n- Deploy with the token {key} from the vault.\n")
        # only shop-web: the other project's new line and deleted line are not touched
        d = service.import_file(m, m.scope(project=PROJECT), text, archive_missing=True)
        assert d["created"] == [] and d["archived"] == [bun["id"]]
        assert next(r for r in m.learned(project="other-app", status="all") if r["id"] == yarn["id"])["status"] == "active"
        d = service.import_file(m, m.scope(project="other-app"), text)
        [new] = d["created"]
        stored = next(r for r in m.learned(project="other-app") if r["id"] == new["id"])
        assert key not in stored["text"] and "[REDACTED:" in stored["text"]
        assert [r["id"] for r in d["missing"]] == [yarn["id"]]


def test_pasted_into_a_claude_md_and_a_cursor_rule(home, tmp_path):
    claude = tmp_path / "CLAUDE.md"
    body = ok("learned", "export", "--project", PROJECT).replace("Use bun, not npm.", "Use bun only.")
    claude.write_text("# My project\n\nSome instructions of my own.\n- a list item of mine\n\n" + body
                      + "\n## Other notes\n\nMore text of mine.\n", encoding="utf-8")
    d = js("learned", "import", str(claude))
    assert [e["after"] for e in d["edited"]] == ["Use bun only."] and d["created"] == []
    rule = tmp_path / ".cursor" / "rules" / "remem.mdc"
    rule.parent.mkdir(parents=True)
    ok("learned", "export", "--project", PROJECT, "--out", str(rule))
    text = rule.read_text(encoding="utf-8")
    assert text.startswith("---\ndescription: ") and "alwaysApply: true\n---\n<!-- remem learned export" in text
    assert text.rstrip().endswith(exchange.END)
    d = js("learned", "import", str(rule))
    assert d["edited"] == [] and d["created"] == [] and d["missing"] == []


def test_a_memory_activated_after_the_export_is_not_missing(home):
    with remem.open() as m:
        text = service.export_file(m, m.scope(project=PROJECT), "md")
        cand = next(r for r in m.learned(project=PROJECT, status="review"))
        service.act(m, m.scope(), cand["id"], "approve")         # active now, but not in the file
        d = service.import_file(m, m.scope(), text, archive_missing=True)
        assert d["missing"] == [] and d["archived"] == []
        assert next(r for r in m.learned(project=PROJECT) if r["id"] == cand["id"])["status"] == "active"
