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


def test_the_bench_reads_exports_with_the_products_specstory_parser(tmp_path: Path) -> None:
    """The harness reads SpecStory through ``sources/specstory.py`` (no copy of its own): turn k is
    the k-th user header (an empty request counts), and tool calls the export describes in words or
    only in a fence (v2 ``run_terminal_cmd`` without a summary, ``Edit file: …``) reach the learner
    as shell commands and edited paths, as the learn job converts synced turns."""
    import remem.bench.learn as bench
    from remem.bench.learn import read_project

    assert not hasattr(bench, "specstory_min") and not (Path(bench.__file__).parent / "specstory_min.py").exists()
    raw = tmp_path / "proj"
    raw.mkdir()
    v2 = ("<!-- cursor Session 0b8c2f4e-1111-2222-3333-444455556666 (2025-10-26 05:51Z) -->\n\n"
          "_**User (2025-10-26 05:51Z)**_\n\nrun the suite\n\n---\n\n_**Agent (model gpt-5, mode Agent)**_\n\n"
          '<tool-use data-tool-type="bash" data-tool-name="run_terminal_cmd">\n\n```bash\nbun test\n```\n\n'
          "```\n 12 pass\n 0 fail\n```\n</tool-use>\n\n---\n\n"
          '<tool-use data-tool-type="write" data-tool-name="search_replace">\n<details><summary>Tool use: '
          "**search_replace** • Edit file: src/cart/total.ts</summary>\n\n</details>\n</tool-use>\n\n---\n\n"
          "All green.\n\n---\n\n_**User (2025-10-26 06:00Z)**_\n\n\n\n---\n\n_**User (2025-10-26 06:01Z)**_\n\n"
          "thanks\n\n---\n\n_**Agent (model gpt-5, mode Agent)**_\n\nYou're welcome.\n")
    (raw / "2025-10-26_05-51Z-suite.md").write_text(v2, encoding="utf-8")
    turns = read_project(str(raw), "proj")
    assert [(t.index, t.request) for t in turns] == [(1, "run the suite"), (2, ""), (3, "thanks")]
    assert turns[0].id == "2025-10-26_05-51Z-suite.md#1" and turns[0].reply == "All green."
    shell = [a for a in turns[0].actions if a.tool == "shell"]
    assert [a.command for a in shell] == ["bun test"] and "12 pass" in shell[0].output
    assert [a.path for a in turns[0].actions if a.tool == "edit"] == ["src/cart/total.ts"]


def test_tool_calls_described_in_words_become_commands_and_paths() -> None:
    from remem.layers.turnview import to_action

    run = to_action({"name": "run_terminal_cmd", "input": "Run command: make migrate DATABASE=pg", "output": "ok"})
    assert (run.tool, run.command) == ("shell", "make migrate DATABASE=pg")
    assert to_action({"name": "edit_file", "input": "Edit file: src/a.ts"}).path == "src/a.ts"
    assert to_action({"name": "read_file", "input": "docs/README.md"}).path == "docs/README.md"
    assert to_action({"name": "read_file", "input": "Read lints for 3 files"}).path == ""      # no path there
    assert to_action({"name": "Edit", "input": '{"file_path": "x/y.py"}'}).path == "x/y.py"  # JSON as before
    # Cursor's versioned tool names, the summary line kept in front of the command
    v2 = to_action({"name": "run_terminal_command_v2",
                    "input": "Tool use: **run_terminal_command_v2** • Run command: uv run pytest -q"})
    assert (v2.tool, v2.command) == ("shell", "uv run pytest -q")
    assert to_action({"name": "read_file_v2", "input": "Read file: /w/app/pyproject.toml"}).path == "/w/app/pyproject.toml"
