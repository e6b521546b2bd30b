"""A query's CJK words without jieba's dictionary in memory: its copy gives the same words.

A cold ``remem search`` with a Chinese query spent ~0.6 s of its ~1.4 s loading jieba's dictionary;
the copy (text/segment.py) is written by the first process that loads it and read word by word."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from remem.bench.realistic import ZH_REQUESTS
from remem.recall.query import cjk_words
from remem.text import segment

jieba = pytest.importorskip("jieba")

TEXTS = [*ZH_REQUESTS, "修复登录接口的超时问题，顺便看看缓存是否命中", "为什么 CI 上的构建这么慢",
         "把数据库迁移脚本改成幂等的重复执行不能报错", "中华人民共和国国务院办公厅", "我们用bun而不是npm", "测", "测试"]

PROBE = """
import json, sys
from remem.recall.query import build
import jieba
texts = json.loads(sys.stdin.read())
out = [build(t).cjk_words for t in texts]
print(json.dumps({"words": out, "loaded": jieba.dt.initialized}))
"""


def _fresh_process(texts: list[str]) -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(texts), capture_output=True, text=True,
                       timeout=120, env=os.environ.copy())
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _in_memory(texts: list[str]) -> list[list[str]]:
    segment.dictionary()                   # loaded here: the query's words come from the dictionary itself
    return [cjk_words(segment.CJK_RUN.findall(t)) for t in texts]


def test_the_copy_gives_the_words_the_dictionary_gives():
    path = segment.freq_cache_path(jieba)
    want = _in_memory(TEXTS)
    segment.save_freq_cache(jieba.dt, path)   # this process may have loaded it before the test's HOME
    assert path.exists()
    got = _fresh_process(TEXTS)
    assert got["loaded"] is False          # the words came from the copy: the dictionary stayed on disk
    assert got["words"] == want
    assert sum(len(w) for w in want) > 40  # real words were compared, not only empty lists
    copy = segment.FreqCopy(path)
    try:
        assert copy.total == jieba.dt.total
        assert all(copy[w] == f for w, f in jieba.dt.FREQ.items())      # every word and prefix, its frequency
        assert "不是一个词语吧" not in copy and copy.get("不是一个词语吧", 7) == 7
    finally:
        copy.close()


def test_without_a_copy_the_dictionary_is_loaded_and_copied():
    path = segment.freq_cache_path(jieba)
    assert not path.exists()
    got = _fresh_process(TEXTS[:3])
    assert got["loaded"] is True and got["words"] == _in_memory(TEXTS[:3])
    assert path.exists()                   # written for the next process
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("damage", ["garbage", "half"])
def test_a_broken_copy_is_not_used(damage):
    path = segment.freq_cache_path(jieba)
    segment.save_freq_cache(jieba.dt, path)
    if damage == "garbage":
        path.write_bytes(b"not a database at all" * 100)
    else:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    got = _fresh_process(TEXTS[:4])
    assert got["loaded"] is True and got["words"] == _in_memory(TEXTS[:4])
    got = _fresh_process(TEXTS[:4])        # the broken copy was replaced by a whole one
    assert got["loaded"] is False and got["words"] == _in_memory(TEXTS[:4])


def test_a_copy_cut_anywhere_is_refused_with_a_value_error(tmp_path):
    whole = tmp_path / "whole.freq"
    segment.save_freq_cache(segment.dictionary(), whole)
    data = whole.read_bytes()
    cut = tmp_path / "cut.freq"
    for n in (0, 5, len(segment.COPY_MAGIC) + 3, len(segment.COPY_MAGIC) + 12, 1000, len(data) // 2, len(data) - 1):
        cut.write_bytes(data[:n])
        with pytest.raises(ValueError):
            segment.FreqCopy(cut)
    cut.write_bytes(data + b"x")
    with pytest.raises(ValueError):
        segment.FreqCopy(cut)


HIDDEN = """
import json, sys
from remem.text import segment
jb = segment._jieba()
hidden = "pkg_resources" not in sys.modules
texts = json.loads(sys.stdin.read())
cut = [list(jb.cut(t, HMM=True)) for t in texts]          # the HMM reads finalseg's tables
try:
    import pkg_resources  # noqa: F401
    after = "imported"
except ImportError as e:
    after = "missing" if "No module named" in str(e) else f"blocked: {e}"
print(json.dumps({"hidden": hidden, "cut": cut, "after": after}))
"""


def test_jieba_is_imported_without_pkg_resources_and_cuts_the_same():
    """jieba reads its dictionary and HMM tables through pkg_resources when that imports (~0.1 s of a
    cold Chinese query): remem hides it while jieba is imported, jieba opens the same files itself, and
    pkg_resources imports as before afterwards."""
    texts = [*TEXTS, "王小明在北京大学读书", "他来到了网易杭研大厦"]   # names: words only the HMM finds
    p = subprocess.run([sys.executable, "-c", HIDDEN], input=json.dumps(texts), capture_output=True, text=True,
                       timeout=120, env=os.environ.copy())
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["hidden"]
    assert got["cut"] == [list(jieba.cut(t, HMM=True)) for t in texts]   # this process's jieba: the usual way
    assert got["after"] in ("imported", "missing")                       # never left blocked


RACE = """
import sys, threading
seen = {}

def other_thread():  # another thread (the daemon's) imports pkg_resources while jieba is imported
    try:
        import pkg_resources  # noqa: F401
        seen["other"] = "imported"
    except ImportError as e:
        seen["other"] = "missing" if "No module named" in str(e) else f"blocked: {e}"

class Watch:  # when jieba's own import starts (pkg_resources is hidden by then), the other thread imports
    def find_spec(self, name, path=None, target=None):
        if name == "jieba" and "t" not in seen:
            seen["t"] = threading.Thread(target=other_thread)
            seen["t"].start()
            seen["t"].join(60)
        return None

sys.meta_path.insert(0, Watch())
from remem.text import segment
jb = segment._jieba()
seen["t"].join(60)
once = segment._jieba() is jb and segment._jieba.cache_info().hits == 1     # imported once, then cached
left = any(type(f).__name__ == "_HidePkgResources" for f in sys.meta_path)  # no finder left behind
print(jb is not None and once and not left, seen["other"])
"""


def test_another_threads_import_of_pkg_resources_waits_for_jieba():
    """pkg_resources is hidden from jieba's import only: another thread importing it meanwhile gets
    the module (or its absence, where setuptools is missing), never a blocked import."""
    p = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120,
                       env=os.environ.copy())
    assert p.returncode == 0, p.stderr
    imported, other = p.stdout.strip().split(" ", 1)
    assert imported == "True"
    assert other in ("imported", "missing"), other
