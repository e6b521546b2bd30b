"""The one plugin contract: a third-party package (an entry point in the ``remem`` group) adds a source,
an embedder, an integration, a command and a recall channel, and they show up through the real
``remem`` command; a broken plugin is reported and skipped while remem keeps working."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from remem import plugins

DEMO = '''
import click

from remem.embed.embedders import HashEmbedder
from remem.integrations.installers.skill_only import SkillOnly
from remem.plugins import ChannelSpec, hookimpl
from remem.sources.jsonl_chat import JsonlChatSource


class DemoEmbedder(HashEmbedder):
    def __init__(self, dim=64):
        super().__init__(dim)
        self.model_id = f"demo-embed:{dim}"


@hookimpl
def register_sources(register):
    register(JsonlChatSource("Demo Agent", (".demo-agent/sessions",), "*/*.jsonl"))


@hookimpl
def register_embedders(register):
    register("demo-embed", DemoEmbedder)


@hookimpl
def register_installers(register):
    register(SkillOnly("demo-agent", "Demo Agent", "DEMO_AGENT_HOME", ".demo-agent", ("demo-agent",)))


@hookimpl
def register_recall_channels(register):
    register(ChannelSpec("demo-words", weight=0.2, gated=True, family="word", layer="L1"))


@hookimpl
def register_commands(register):
    @click.command("demo-hello")
    @click.argument("who", default="world")
    def hello(who):
        """Say hello from the demo plugin."""
        click.echo(f"hello {who} from remem-demo")

    register(hello)
'''


def install_plugin(site: Path, dist: str, module: str, source: str, entry: str | None = None) -> None:
    """A package as pip would leave it: the module and its dist-info with a ``remem`` entry point."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[remem]\n{entry or module} = {module}\n", encoding="utf-8")


def with_site(site: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "REMEM_NO_PLUGINS": "0", **extra}   # conftest turns plugins off


def demo_history(home: Path) -> None:
    """Three sessions of a coding agent in role/content JSONL (the shape JsonlChatSource reads)."""
    trace = "\n".join(f'  File "/srv/app/billing/invoice.py", line {100 + i}, in render_{i}' for i in range(40))
    sessions = {
        "proj-billing/s1.jsonl": [
            ("user", "The invoice PDF export crashes with a KeyError on 'vat_rate'. Here is the trace:\n"
                     f"Traceback (most recent call last):\n{trace}\nKeyError: 'vat_rate'"),
            ("assistant", "The tax table for Norway has no vat_rate column after the 2026 migration; "
                          "I added a default of 0.25 in billing/tax.py and a regression test."),
            ("user", "Run the billing tests again with pytest -k invoice"),
            ("assistant", "All 37 invoice tests pass now."),
        ],
        "proj-billing/s2.jsonl": [
            ("user", "把发票导出改成按月份分组，并且保留原来的排序"),
            ("assistant", "已经在 billing/export.py 里按月份分组，组内仍按开票日期排序。"),
        ],
        "proj-web/s3.jsonl": [
            ("user", "Why does the websocket reconnect loop spin at 100% CPU when the server is down?"),
            ("assistant", "The backoff was reset on every failed handshake; it now doubles up to 30 s."),
        ],
    }
    for rel, lines in sessions.items():
        p = home / ".demo-agent" / "sessions" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps({"role": r, "content": c, "timestamp": 1767225600 + i * 60}) + "\n"
                             for i, (r, c) in enumerate(lines)), encoding="utf-8")


def out(r) -> str:
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def test_a_third_party_plugin_shows_up_through_every_face(tmp_path):
    site = tmp_path / "site"
    install_plugin(site, "remem-demo-plugin", "remem_demo", DEMO, entry="demo")
    home = Path(os.environ["HOME"])
    demo_history(home)
    env = with_site(site)

    assert "demo-hello" not in out(run_cli("--help"))          # not installed: not there
    assert "demo-hello" in out(run_cli("--help", env=env))
    assert out(run_cli("demo-hello", "Ada", env=env)) == "hello Ada from remem-demo\n"

    found = {s["name"]: s for s in json.loads(out(run_cli("sources", "--json", env=env)))}
    assert found["demo-agent"]["format"] == "chat-jsonl" and found["demo-agent"]["units"] == 3
    synced = json.loads(out(run_cli("sync", "demo-agent", "--json", env=env)))
    assert synced["total"]["turns_added"] == 4, synced
    hits = json.loads(out(run_cli("search", "vat_rate KeyError invoice", "--json", env=env)))["results"]
    assert hits and hits[0]["agent"] == "demo-agent" and "vat_rate" in hits[0]["text"]

    status = json.loads(out(run_cli("hooks", "status", "demo-agent", "--json", env=env)))
    assert [(s["agent"], s["label"], s["installed"]) for s in status] == [("demo-agent", "Demo Agent", False)]
    out(run_cli("hooks", "install", "demo-agent", env=env))
    assert (home / ".demo-agent" / "skills" / "remem-memory" / "SKILL.md").is_file()

    bad = run_cli("doctor", "--json", env={"REMEM_EMBEDDING_MODEL": "demo-embed"})
    assert "unknown embedder 'demo-embed'" in bad.stdout.decode()
    doctor = json.loads(out(run_cli("doctor", "--json", env=with_site(site, REMEM_EMBEDDING_MODEL="demo-embed"))))
    assert doctor["checks"]["embedder"]["detail"].startswith("demo-embed:64 loaded")

    report = json.loads(out(run_cli("plugins", "--json", env=env)))
    assert {"name": "demo", "distribution": "remem-demo-plugin 0.1"}.items() <= {
        k: v for p in report["plugins"] if p["name"] == "demo" for k, v in p.items()}.items()
    assert {"name": "demo-words", "weight": 0.2, "gated": True, "family": "word", "layer": "L1"} in report[
        "recall_channels"]
    regs = report["registries"]
    assert regs["sources"]["demo-agent"] == regs["embedders"]["demo-embed"] == "demo"
    assert regs["installers"]["demo-agent"] == regs["cli_commands"]["demo-hello"] == "demo"
    assert regs["sources"]["codex"] == "remem.builtins" and report["problems"] == []

    assert "demo-hello" not in out(run_cli("--help", env=with_site(site, REMEM_NO_PLUGINS="1")))


BROKEN_IMPORT = "raise RuntimeError('this plugin needs a licence server')\n"
RAISES = '''
from remem.plugins import hookimpl

@hookimpl
def register_sources(register):
    raise OSError("cannot read ~/.weird-agent/config")
'''
DUPLICATES = '''
import click
from remem.plugins import ChannelSpec, hookimpl
from remem.sources.jsonl_chat import JsonlChatSource

@hookimpl
def register_sources(register):
    register(JsonlChatSource("codex", (".fake-codex",), "*.jsonl"))

@hookimpl
def register_commands(register):
    register(click.Command("search", callback=lambda: click.echo("hijacked")))

@hookimpl
def register_recall_channels(register):
    register(ChannelSpec("sneaky", weight=1.0, gated=None, family="word"))
'''
TYPO = '''
from remem.plugins import hookimpl

@hookimpl
def register_source(register):
    pass
'''


def test_broken_plugins_are_reported_and_skipped_and_remem_still_works(tmp_path):
    site = tmp_path / "site"
    install_plugin(site, "remem-demo-plugin", "remem_demo", DEMO, entry="demo")
    install_plugin(site, "remem-licensed", "remem_licensed", BROKEN_IMPORT)
    install_plugin(site, "remem-raises", "remem_raises", RAISES)
    install_plugin(site, "remem-dupes", "remem_dupes", DUPLICATES)
    install_plugin(site, "remem-typo", "remem_typo", TYPO)
    env = with_site(site)

    r = run_cli("--help", env=env)
    err = r.stderr.decode()
    assert r.returncode == 0 and "demo-hello" in r.stdout.decode()
    assert "plugin 'remem_licensed': failed to import remem_licensed: RuntimeError: this plugin needs a " \
           "licence server (skipped)" in err
    assert "plugin 'remem_dupes': command 'search' is already registered by 'remem.builtins'" in err
    assert "plugin 'remem_typo'" in err and "register_source" in err

    r = run_cli("sources", "--json", env=env)
    assert r.returncode == 0, r.stderr.decode()
    err = r.stderr.decode()
    assert "plugin 'remem_raises': register_sources failed: OSError: cannot read ~/.weird-agent/config" in err
    assert "plugin 'remem_dupes': source 'codex' is already registered by 'remem.builtins'" in err

    report = json.loads(out(run_cli("plugins", "--json", env=env)))
    assert report["registries"]["sources"]["codex"] == "remem.builtins"
    assert report["registries"]["cli_commands"]["search"] == "remem.builtins"
    assert "sneaky" not in report["registries"]["recall_channels"]
    assert any("recall channel 'sneaky' does not declare gated" in p for p in report["problems"])
    assert {p["name"] for p in report["plugins"]} >= {"remem.builtins", "demo", "remem_raises", "remem_dupes"}
    assert not {"remem_licensed", "remem_typo"} & {p["name"] for p in report["plugins"]}
    assert "hijacked" not in run_cli("search", "anything", env=env).stdout.decode()


# -- in one process -------------------------------------------------------------------------------

@pytest.fixture
def fresh_plugins():
    plugins.reset()
    yield plugins
    plugins.reset()


def test_register_in_process_and_the_old_registry_names_follow(fresh_plugins):
    from remem.embed import embedders as embed
    from remem.sources import SOURCES, JsonlChatSource

    class Extra:
        @plugins.hookimpl
        def register_sources(self, register):
            register(JsonlChatSource("lab-agent", (".lab",), "*.jsonl"))

        @plugins.hookimpl
        def register_embedders(self, register):
            register("lab-hash", embed.HashEmbedder)

    assert "lab-agent" not in SOURCES
    assert plugins.register(Extra(), "extra")
    assert SOURCES["lab-agent"].agent == "lab-agent" and plugins.origins("sources")["lab-agent"] == "extra"
    assert embed.get_embedder("lab-hash", dim=16).model_id == "hash:16"
    plugins.unregister("extra")
    assert "lab-agent" not in SOURCES and "lab-hash" not in embed.EMBEDDERS
    with pytest.raises(KeyError, match="registered by a plugin"):
        del SOURCES["codex"]


def test_a_channel_without_a_declared_gate_is_refused(fresh_plugins):
    class NoGate:
        @plugins.hookimpl
        def register_recall_channels(self, register):
            register(plugins.ChannelSpec("fuzzy", weight=0.3, gated="maybe", family="word"))  # type: ignore[arg-type]
            register(plugins.ChannelSpec("fine", weight=0.3, gated=False, family="other"))

    plugins.register(NoGate(), "nogate")
    chans = plugins.recall_channels()
    assert "fuzzy" not in chans and "fine" not in chans          # the plugin's contribution is skipped whole
    assert any("'fuzzy' does not declare gated" in p for p in plugins.problems())
    assert "bm25" in chans


def test_a_layer_brings_its_channels(fresh_plugins):
    def extract(mem, turns):
        return []

    class Learned:
        @plugins.hookimpl
        def register_layers(self, register):
            register(plugins.LayerSpec("L2", "learned preferences", extractors=(extract,),
                                       channels=(plugins.ChannelSpec("learned", 0.6, True, "other", "L2"),)))

    plugins.register(Learned(), "learned")
    assert plugins.layers()["L2"].extractors == (extract,)
    assert plugins.recall_channels()["learned"].layer == "L2"
    assert plugins.origins("recall_channels")["learned"] == "learned (layer L2)"


def test_a_new_channel_without_a_declared_gate_breaks_the_registry(fresh_plugins, monkeypatch):
    """Adding a channel to recall without saying whether the packet gate applies is caught (it used
    to be silently left out of every packet)."""
    import dataclasses

    import remem.recall.gate as gate

    undeclared = dataclasses.replace(gate.CHANNEL_SPECS[0], name="novel", gated=None)  # type: ignore[arg-type]
    monkeypatch.setattr(gate, "CHANNEL_SPECS", [*gate.CHANNEL_SPECS, undeclared])
    assert "novel" not in plugins.recall_channels()
    assert any("novel" in p and "gate" in p for p in plugins.problems()), plugins.problems()


# -- remem bench: a package in the product, one command of the contract --------------------------

def test_bench_is_a_registered_command_and_its_harnesses_import_anywhere(tmp_path):
    assert plugins.origins("cli_commands")["bench"] == "remem.builtins"
    assert {"locomo", "longmemeval", "speed"} <= set(plugins.cli_commands()["bench"].commands)
    assert "locomo" in out(run_cli("bench", "--help"))
    code = ("import sys, pkgutil, importlib, remem.bench\n"
            "before = list(sys.path)\n"
            "names = [m.name for m in pkgutil.iter_modules(remem.bench.__path__)]\n"
            "for n in names: importlib.import_module(f'remem.bench.{n}')\n"
            "assert sys.path == before, 'a harness edits sys.path'\n"
            "print(len(names))\n")
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) >= 15


def test_the_quick_look_for_entry_points_never_misses_one(tmp_path, monkeypatch):
    """Without any ``remem`` entry point the command skips importlib.metadata; it must never skip a
    real one (a dist-info naming the group, a zip it cannot look into)."""
    import sys

    site = tmp_path / "site"
    info = site / "other_tool-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    (site / "plain-0.1.dist-info").mkdir()                  # no entry_points.txt at all
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert plugins._may_declare_entry_points() is False
    install_plugin(site, "remem-demo-plugin", "remem_demo", DEMO, entry="demo")
    assert plugins._may_declare_entry_points() is True
    zipped = tmp_path / "bundle.zip"
    zipped.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    monkeypatch.setattr(sys, "path", [str(zipped)])
    assert plugins._may_declare_entry_points() is True


def test_the_manager_and_the_built_in_job_kinds(fresh_plugins):
    from remem.server.jobkinds import HANDLERS

    assert plugins.pm is plugins.manager()
    assert plugins.job_kinds() == HANDLERS
    assert plugins.origins("job_kinds") == dict.fromkeys(HANDLERS, "remem.builtins")
    assert list(plugins.layers()) == ["learned"]      # remem's own learning layer (remem/layers/)


def test_register_called_the_wrong_way_says_how(fresh_plugins):
    class Wrong:
        @plugins.hookimpl
        def register_embedders(self, register):
            register(lambda **o: None)                   # forgot the name

    plugins.register(Wrong(), "wrong")
    assert "hash" in plugins.embedders()
    assert "plugin 'wrong': register_embedders failed: PluginError: register(name, embedder) was called with " \
           "1 argument(s)" in plugins.problems()


JOB_PLUGIN = '''
from remem.plugins import hookimpl


def count_turns(ctx):
    ctx.report({"phase": "counting"})
    return {"turns": ctx.mem.stats()["turns"], "asked": ctx.payload.get("n")}


@hookimpl
def register_job_kinds(register):
    register("demo-count", count_turns)
'''


def test_a_plugin_job_kind_runs_in_the_daemon(tmp_path, remem_home):
    """The daemon's job runner takes its kinds from the contract: a job of a plugin's kind, queued in
    the store, is claimed and run by the real daemon, and its result is readable over the API."""
    import time

    import remem
    from remem.server.testing import Daemon

    site = tmp_path / "site"
    install_plugin(site, "remem-jobs-plugin", "remem_jobs_demo", JOB_PLUGIN, entry="jobsdemo")
    with remem.open() as m:
        m.add("the release checklist lives in docs/release.md", project="shop")
        job = m.store.jobs.enqueue("demo-count", {"n": 7})
    with Daemon(remem_home, env=with_site(site)) as d:
        deadline = time.monotonic() + 60
        got = {}
        while time.monotonic() < deadline:
            got = d.get(f"/api/v1/jobs/{job}").json()
            if got.get("status") in ("done", "failed"):
                break
            time.sleep(0.2)
    assert got.get("status") == "done", got
    assert got["progress"]["result"] == {"turns": 1, "asked": 7}, got


CHANNEL_PLUGIN = '''
import os

from remem.plugins import ChannelSpec, hookimpl


def synonyms(ctx, text, scope, limit):
    """A toy channel: "zebra" means the turns named in REMEM_TEST_ZEBRA (one of them another owner's)."""
    if "zebra" not in text.lower():
        return []
    return [(t, 1.0) for t in os.environ.get("REMEM_TEST_ZEBRA", "").split(",") if t][:limit]


@hookimpl
def register_recall_channels(register):
    register(ChannelSpec("synonyms", weight=1.0, gated=True, family="other", layer="L1", run=synonyms))
'''


def test_a_plugin_channel_runs_in_recall_inside_the_scope(tmp_path):
    """A plugin's channel with a ``run`` function finds turns no built-in channel finds, is fused with
    its declared weight and gate, shows in the explanation, and can never reach outside the scope."""
    import remem

    site = tmp_path / "site"
    install_plugin(site, "remem-synonyms", "remem_synonyms_demo", CHANNEL_PLUGIN, entry="synonyms")
    with remem.open() as m:
        mine = m.add("the deployment runbook lives in ops/runbook.md", project="shop").id
        theirs = m.add("bob's private deployment notes", owner="bob", project="shop").id
    env = with_site(site, REMEM_TEST_ZEBRA=f"{theirs},{mine}")
    got = json.loads(out(run_cli("search", "zebra", "--explain", "--json", env=env)))["results"]
    assert [h["id"] for h in got] == [mine], got            # bob's turn: out of scope, never shown
    assert "synonyms" in json.dumps(got[0])
    assert json.loads(out(run_cli("search", "zebra", "--json")))["results"] == []   # plugin not installed
    packet = json.loads(out(run_cli("recall", "zebra", "--json", env=env)))
    assert [i["id"] for i in packet["items"]] == [mine]     # gated: it may bring a turn into a packet


LAYER_PLUGIN = '''
from remem.plugins import LayerSpec, hookimpl


def m001_todo_index(db):
    db.execute("CREATE TABLE todo_layer_seen (turn_id TEXT PRIMARY KEY)")


def todos(mem, turns):
    """Every turn whose request holds "TODO:" gives one memory; one more cites a turn that is not there."""
    out = [{"kind": "fact", "text": "open item: " + t["request"].split("TODO:", 1)[1].strip(), "evidence": [t["id"]]}
           for t in turns if "TODO:" in t["request"]]
    return out + [{"kind": "fact", "text": "made up", "evidence": ["t_not_a_turn"]}]


@hookimpl
def register_layers(register):
    register(LayerSpec("todos", "open items the user named", extractors=(todos,),
                       migrations={"sqlite": (m001_todo_index,)}))
'''


@pytest.mark.sqlite_only("the demo layer ships a SQLite migration and the test reads the SQLite file")
def test_a_plugin_memory_layer_migrates_once_and_its_memories_wait_for_review(tmp_path, remem_home):
    """A plugin's layer: its own migration runs once (recorded as "<layer>:<step>"), its extractors see
    the project's turns, what they derive waits as a candidate (never in a packet until approved), a
    memory citing no real turn is dropped, and approving it makes it active."""
    import sqlite3

    site = tmp_path / "site"
    install_plugin(site, "remem-todos", "remem_todos_demo", LAYER_PLUGIN, entry="todos")
    env = with_site(site)
    out(run_cli("add", "TODO: rotate the staging API keys before Friday", "--project", "ops", env=env))
    out(run_cli("learn", "--json", env=env))
    out(run_cli("learn", "--json", env=env))                   # a second run migrates nothing again
    db = sqlite3.connect(remem_home / "remem.db")
    steps = [r[0] for r in db.execute("SELECT name FROM schema_migrations WHERE name LIKE 'todos:%'")]
    assert steps == ["todos:m001_todo_index"]
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'todo_layer_seen'").fetchone()[0] == 1
    review = json.loads(out(run_cli("learned", "list", "--project", "ops", "--status", "review", "--json", env=env)))
    mine = [m for m in review if m["data"].get("layer") == "todos"]
    assert [m["text"] for m in mine] == ["open item: rotate the staging API keys before Friday"], review
    assert mine[0]["status"] == "candidate" and mine[0]["evidence"]
    packet = json.loads(out(run_cli("recall", "rotate the staging API keys", "--project", "ops", "--json", env=env)))
    assert all(i.get("layer") == "L1" for i in packet["items"])   # candidates never reach a packet
    out(run_cli("learned", "approve", mine[0]["id"], env=env))
    active = json.loads(out(run_cli("learned", "list", "--project", "ops", "--json", env=env)))
    assert mine[0]["id"] in {m["id"] for m in active}
