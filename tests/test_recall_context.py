"""Recall on explicit inputs: a RecallContext over a store (no façade), the five entry points on
``Remem``, caches on instances, and every channel declaring its gate (recall/gate.py)."""

from __future__ import annotations

import json
import time

import pytest

from remem.model import ToolCall, TurnIn
from remem.recall import channels, config, entry, gate
from remem.recall.context import RecallContext, RecallSettings
from remem.recall.search import search
from remem.store import open_store

NOW = time.time()


def _history(n: int = 40) -> list[TurnIn]:
    """A few sessions of coding work with tool output, a failure and its fix, and Chinese."""
    trace = ("Traceback (most recent call last):\n  File \"src/app/loader.py\", line 12, in load\n"
             "    import yaml\nModuleNotFoundError: No module named 'yaml'\n")
    out = []
    for i in range(n):
        t = NOW - (n - i) * 3600
        if i % 10 == 3:
            out.append(TurnIn(request=f"run the importer on batch {i}", reply="it failed on the import", owner="dev",
                              agent="claude-code", project="app", session_id=f"s{i // 10}", status="failed",
                              started_at=t, ended_at=t + 5,
                              actions=[ToolCall("Bash", "python -m app.importer", trace * 3, True)]))
        elif i % 10 == 4:
            out.append(TurnIn(request="install the missing dependency", reply="pip install pyyaml fixed the importer",
                              owner="dev", agent="claude-code", project="app", session_id=f"s{i // 10}",
                              started_at=t, ended_at=t + 5))
        elif i % 10 == 6:
            out.append(TurnIn(request="数据库迁移脚本怎么写", reply="用 alembic revision --autogenerate 生成迁移脚本",
                              owner="dev", agent="codex", project="web", session_id=f"z{i // 10}",
                              started_at=t, ended_at=t + 5))
        else:
            out.append(TurnIn(request=f"refactor load_config in src/app/config.py step {i}",
                              reply=f"renamed the helper and updated {i % 5} call sites", owner="dev",
                              agent="codex", project="app", session_id=f"c{i // 10}", started_at=t, ended_at=t + 5,
                              actions=[ToolCall("Edit", "src/app/config.py", "def read_config(path):\n" * 20)]))
    return out


@pytest.fixture
def home(mem):
    mem.add_turns(_history())
    return mem


def test_recall_runs_on_a_context_over_a_bare_store(home, tmp_path):
    """No Remem: the store from its URL, a context without an embedder, and every entry point works
    (the lexical channels answer; the vector channels say why they cannot)."""
    store = open_store(home.config.database_url if home.config.on_server else f"sqlite:///{home.config.db_path}",
                       home.home)
    ctx = RecallContext(store, settings=RecallSettings(embedding_enabled=False), clock=lambda: NOW)
    sc = home.scope("dev")
    hits = search(ctx, "ModuleNotFoundError yaml importer", sc, k=5, explain=True)
    assert hits and "importer" in hits[0]["text"]
    assert "structural" in hits[0]["details"]["channels"]
    assert search(ctx, "数据库迁移", sc, k=3)[0]["text"].startswith("数据库迁移")
    packet = entry.turn_start(ctx, "how did we fix the yaml import error in the importer?", sc)
    assert "pyyaml" in packet["text"] and packet["stats"]["vector"]["reason"] == "embeddings disabled"
    fix = entry.repair(ctx, "ModuleNotFoundError: No module named 'yaml'", sc)
    assert fix["items"] and fix["items"][0]["status"] == "failed" and "pyyaml" in fix["text"]
    cands = entry.resume(ctx, "importer yaml", sc)["items"]
    assert cands and entry.resume(ctx, "", sc, session=cands[0]["session"])["items"]
    assert entry.sub_agent(ctx, "refactor load_config in src/app/config.py", sc)["items"]
    store.close()


def test_the_five_entry_points_are_on_the_facade(home):
    sc = home.scope("dev")
    ctx = home.recall
    assert home.search("load_config", scope=sc, k=3) == search(ctx, "load_config", sc, k=3)
    assert home.turn_start("yaml import error", owner="dev")["items"]
    assert home.sub_agent("refactor load_config", owner="dev")["items"]
    got = home.repair("ModuleNotFoundError: No module named 'yaml'", owner="dev")
    assert got["entry"] == "repair" and "pyyaml" in got["text"]
    cands = home.resume("importer yaml", owner="dev")["items"]
    assert cands and home.resume("", owner="dev", session=cands[0]["session"])["turns"] >= 1


def test_cli_recall_entries_go_through_the_facade(home, cli):
    for args in (["--entry", "sub_agent"], ["--entry", "repair"], ["--entry", "resume"]):
        r = cli("recall", "ModuleNotFoundError: No module named 'yaml' importer", "--owner", "dev", "--json", *args)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["entry"] == args[1]


def test_caches_live_on_the_context_and_a_forget_clears_them(home):
    """The scope corpora and query vectors belong to this handle's context, not to module globals keyed by
    a file: a second handle on the same home has its own; forgetting a turn empties this one's corpora."""
    from remem.core import Remem

    sc = home.scope("dev")
    home.search("importer yaml", scope=sc)
    corp = channels.scope_corpus(home.recall, sc)
    assert corp is not None and channels.scope_corpus(home.recall, sc) is corp
    other = Remem(home.home)
    try:
        assert other.recall is not home.recall
        assert channels.scope_corpus(other.recall, sc) is not corp   # built by its own handle
    finally:
        other.close()
    [gone] = home.add_turns([TurnIn(request="a note to forget", owner="dev", agent="codex")]).results
    home.forget(ids=[gone.id], owner="dev")
    assert not home.recall.corpora._cache


def test_every_channel_declares_its_gate():
    """Each channel of recall/config.py has one ChannelSpec (weight, gate, family, layer) and a runner;
    an undeclared channel is an error, never a channel that silently never reaches a packet."""
    assert set(config.CHANNELS) == set(gate.SPECS) and len(gate.SPECS) == len(gate.CHANNEL_SPECS)
    for name in config.CHANNELS:
        s = gate.spec(name)
        assert s.family in gate.FAMILIES and s.layer == "L1"
        assert (name in channels.RUNNERS) != (s.family == "vector"), name   # vector channels run together
        assert config.DEFAULT.weights[name] == s.weight
    assert gate.GATED == set(config.CHANNELS) - {"recency"}
    with pytest.raises(ValueError, match="no ChannelSpec"):
        gate.spec("reranker")
    with pytest.raises(ValueError, match="no ChannelSpec"):
        gate.relevant(["reranker"])
    with pytest.raises(ValueError):
        gate.ChannelSpec("v2", 0.5, True, "vector")  # a vector channel names its field
