"""The learn benchmark harness (remem.bench.learn): label + probe files, prompts read by SHA-1, groups."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from remem.bench.learn import load_labels, run

SESSION = "2025-03-01_10-00-set-up-the-runner.md"
PROMPTS = ["please set up the test runner for the api package and the worker package",
           "never install packages globally on this machine, use bun, not npm",
           "continue"]


def _history(root: Path) -> None:
    raw = root / "raw" / "proj"
    raw.mkdir(parents=True)
    parts = ["# Set up the runner\n"]
    for p in PROMPTS:
        parts.append(f"_**User**_\n\n{p}\n\n---\n\n_**Assistant**_\n\nDone; the runner is configured.\n\n---\n")
    (raw / SESSION).write_text("\n".join(parts), encoding="utf-8")


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def test_probe_files_merge_and_prompts_come_from_the_history(tmp_path: Path) -> None:
    _history(tmp_path)
    labels = tmp_path / "labels"
    (labels / "probes").mkdir(parents=True)
    item = {"iid": "p-bun", "kind": "preference", "statement": "Bun is the runtime, npm is not used.",
            "evidence": [{"session": SESSION, "turn": 2}]}
    (labels / "proj.json").write_text(json.dumps({"project": "proj", "items": [item],
                                                  "_world": {"pkg.manager": "bun"}}), encoding="utf-8")
    probes = [
        {"pid": "ok", "type": "later_task", "before": {"session": SESSION, "turn": 1}, "prompt": None,
         "_prompt_sha1": _sha(PROMPTS[0]), "expects": ["p-bun"]},
        {"pid": "bad-hash", "type": "negative", "before": {"session": SESSION, "turn": 3}, "prompt": None,
         "_prompt_sha1": _sha("something else"), "expects": []},
        {"pid": "no-turn", "type": "negative", "before": {"session": SESSION, "turn": 9}, "prompt": None,
         "_prompt_sha1": _sha("x"), "expects": []},
    ]
    (labels / "probes" / "proj.json").write_text(json.dumps({"project": "proj", "items": [], "probes": probes}),
                                                 encoding="utf-8")
    lab = load_labels(str(labels), "proj")
    assert lab is not None and [i["iid"] for i in lab["items"]] == ["p-bun"] and len(lab["probes"]) == 3
    assert lab["_world"] == {"pkg.manager": "bun"}

    rep = run(str(tmp_path), str(labels))
    row = rep["projects"]["proj"]
    assert row["probes"]["loaded"] == 3 and row["probes"]["usable"] == 1
    assert row["probes"]["by_type"]["later_task"] == 1
    problems = " ".join(row["probes"]["problems"])
    assert "bad-hash" in problems and "does not match" in problems and "no-turn" in problems
    assert rep["overall"]["probe_problems"] == row["probes"]["problems"]
    o = rep["overall"]
    assert o["active"]["found"] >= 1                       # the explicit "never … use bun, not npm"
    assert set(o["groups"]) == {"blind", "author", "tune", "heldout"}
    assert o["groups"]["author"]["active"]["items"] == o["active"]["items"]   # 'proj' is not a blind project
    assert o["groups"]["blind"]["active"]["items"] == 0
    assert o["per_kind"]["preference"]["items"] == 1
