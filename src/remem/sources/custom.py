"""Adding another agent by name: verify it is installed, find and recognise its history, import it.

Name matching compares names ignoring only case, spaces, hyphens and underscores: no
translation, no aliases, no guessing. A source stays a *draft* (not listed, not synced) until a
real history path is verified; then it becomes active and later syncs import only complete turns
whose opening request is strictly newer than the saved boundary.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents import canonical_agent
from .base import ParseStats, Source, home_dir
from .jsonl_chat import JsonlChatSource, iter_chat_jsonl

if TYPE_CHECKING:
    from ..core import Remem

PRESETS = ("kimi code", "zcode", "minimax code", "coder")
#: sources kept inside project folders: ``remem sources add specstory --path DIR`` adds folders to look in
PROJECT_SOURCES = {"specstory": "specstory", "aider": "aider"}
FIRST_IMPORT_TURNS = 500
MAX_FILES_CHECKED = 2000     # bounded search: discovery never walks a whole disk
MAX_DEPTH = 6


def norm_name(name: str) -> str:
    """Case, spaces, hyphens and underscores ignored; nothing else."""
    return re.sub(r"[\s_-]+", "", name).lower()


def source_name(name: str) -> str:
    return "custom:" + canonical_agent(name)


# ----------------------------------------------------------------------------- installed?


def _path_dirs(env: Mapping[str, str]) -> list[Path]:
    return [Path(p) for p in (env.get("PATH") or "").split(os.pathsep) if p]


def find_installation(name: str, env: Mapping[str, str], paths: list[Path] | None = None) -> list[str]:
    """Evidence that the agent is installed: executables, app bundles, packages (by exact name)."""
    want = norm_name(name)
    found: list[str] = []
    if paths:
        for p in paths:
            if p.exists():
                found.append(f"given path {p}")
        return found
    for d in _path_dirs(env):
        try:
            for entry in d.iterdir():
                stem = entry.name.rsplit(".", 1)[0] if entry.suffix in (".exe", ".cmd") else entry.name
                if norm_name(stem) == want and entry.is_file() and os.access(entry, os.X_OK):
                    found.append(f"executable {entry}")
        except OSError:
            continue
    home = home_dir(env)
    bundle_dirs = [Path("/Applications"), home / "Applications"]
    desktop_dirs = [home / ".local/share/applications", Path("/usr/share/applications")]
    for d in bundle_dirs:
        for app in _safe_glob(d, "*.app"):
            if norm_name(app.stem) == want:
                found.append(f"application {app}")
    for d in desktop_dirs:
        for f in _safe_glob(d, "*.desktop"):
            if norm_name(f.stem) == want:
                found.append(f"application {f}")
    for d in _path_dirs(env):  # npm global packages next to a bin dir on PATH
        mods = d.parent / "lib" / "node_modules"
        for pkg in _safe_glob(mods, "*"):
            names = [p.name for p in _safe_glob(pkg, "*")] if pkg.name.startswith("@") else [pkg.name]
            if any(norm_name(n) == want for n in names):
                found.append(f"npm package {pkg}")
    return list(dict.fromkeys(found))


def _safe_glob(d: Path, pattern: str) -> list[Path]:
    try:
        return sorted(d.glob(pattern)) if d.is_dir() else []
    except OSError:
        return []


# ----------------------------------------------------------------------------- history?


def candidate_dirs(name: str, env: Mapping[str, str]) -> list[Path]:
    """Data directories whose name matches the agent's (``~/.kimi-code``, ``~/.config/KimiCode``…)."""
    want = norm_name(name)
    home = home_dir(env)
    parents = [home, home / ".config", home / ".local/share", home / "Library/Application Support"]
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        if env.get(var):
            parents.append(Path(env[var]))
    out = []
    for parent in parents:
        for d in _safe_glob(parent, "*"):
            if d.is_dir() and norm_name(d.name.lstrip(".")) == want:
                out.append(d)
    return list(dict.fromkeys(out))


def recognise(path: Path) -> int:
    """How many chat messages the first lines of a JSONL file hold (0 = not a chat history)."""
    stats = ParseStats()
    n = 0
    try:
        for i, m in enumerate(iter_chat_jsonl(path, stats)):
            if m.role in ("user", "assistant"):
                n += 1
            if i >= 50:
                break
    except OSError:
        return 0
    return n


def find_history(dirs: list[Path]) -> tuple[list[Path], int]:
    """Directories holding recognisable chat JSONL under ``dirs`` (bounded walk)."""
    roots: dict[Path, int] = {}
    checked = 0
    for base in dirs:
        if base.is_file():
            if base.suffix == ".jsonl" and recognise(base):
                roots[base.parent] = roots.get(base.parent, 0) + 1
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            depth = len(Path(dirpath).relative_to(base).parts)
            if depth >= MAX_DEPTH:
                dirnames[:] = []
            dirnames[:] = [d for d in dirnames if d not in ("node_modules", ".git", "cache", "Cache")]
            for f in filenames:
                if not f.endswith(".jsonl"):
                    continue
                checked += 1
                if checked > MAX_FILES_CHECKED:
                    break
                if recognise(Path(dirpath) / f):
                    roots[base] = roots.get(base, 0) + 1
            if checked > MAX_FILES_CHECKED:
                break
    return list(roots), sum(roots.values())


# ----------------------------------------------------------------------------- registry rows


def custom_sources(mem: Remem) -> list[tuple[str, Source, list[Path]]]:
    """Active discovered sources as (name, source, roots)."""
    out: list[tuple[str, Source, list[Path]]] = []
    for r in mem.store.sources.custom(status="active"):
        rules = r["rules"]
        roots = [Path(p) for p in rules.get("roots", [])]
        src = JsonlChatSource(r["agent"], tuple(str(p) for p in roots), rules.get("pattern", "**/*.jsonl"))
        out.append((r["name"], src, [p for p in roots if p.exists()]))
    return out


def _save(mem: Remem, name: str, agent: str, status: str, rules: dict[str, Any]) -> None:
    mem.store.sources.save_rules(name, agent=agent, status=status, format="chat-jsonl", rules=rules)


def add_custom_source(mem: Remem, name: str, paths: list[str] | None = None, *,
                      env: Mapping[str, str] | None = None,
                      on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The discovery task. Returns {"status": "not_installed" | "no_history" | "imported", …}."""
    from .sync import run_first_import

    env = os.environ if env is None else env
    emit = on_progress or (lambda _e: None)
    name = name.strip()
    if not name:
        raise ValueError("agent name is empty")
    if norm_name(name) in PROJECT_SOURCES:
        return add_project_folders(mem, PROJECT_SOURCES[norm_name(name)], paths or [], env=env)
    agent = canonical_agent(name)
    sname = source_name(name)
    given = [Path(p).expanduser() for p in paths or []]
    if any(not p.is_absolute() for p in given):
        raise ValueError("paths must be absolute")
    steps: list[str] = []
    emit({"event": "discover", "step": "installed", "name": name})
    evidence = find_installation(name, env, given or None)
    if not evidence:
        steps.append(f"{name}: not installed (no executable, application or package named like it)")
        return {"name": name, "source": sname, "status": "not_installed", "steps": steps,
                "hint": "give absolute paths to its install, history files or skill directory with --path"}
    steps.extend(evidence)
    _save(mem, sname, agent, "draft", {"evidence": evidence})
    emit({"event": "discover", "step": "history", "name": name})
    search_in = given or candidate_dirs(name, env)
    roots, files = find_history(search_in)
    if not roots:
        steps.append("no recognisable chat history found in " + (", ".join(map(str, search_in)) or "any data folder"))
        return {"name": name, "source": sname, "status": "no_history", "steps": steps,
                "hint": "give the absolute path of its history files with --path"}
    steps.append(f"history: {files} chat files under {', '.join(map(str, roots))}")
    root_strs = [str(r) for r in roots]
    rules: dict[str, Any] = {"roots": root_strs, "pattern": "**/*.jsonl", "format": "chat-jsonl",
             "evidence": evidence, "discovered_at": time.time()}
    _save(mem, sname, agent, "active", rules)
    emit({"event": "discover", "step": "import", "name": name})
    result = run_first_import(mem, sname, JsonlChatSource(agent, tuple(root_strs), "**/*.jsonl"),
                              roots, limit=FIRST_IMPORT_TURNS)
    return {"name": name, "source": sname, "status": "imported", "steps": steps, "result": result}


def add_project_folders(mem: Remem, source: str, paths: list[str], *,
                        env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """More folders for a source kept inside projects (SpecStory, aider) to look in, besides the
    project folders the histories name; saved with the source, then that source is synced."""
    from .base import SOURCES
    from .sync import project_dirs, run_sync

    src = SOURCES[source]
    given = [Path(p).expanduser() for p in paths]
    if not given:
        raise ValueError(f"give the project folders that hold {source} histories with --path")
    if any(not p.is_absolute() for p in given):
        raise ValueError("paths must be absolute")
    missing = [str(p) for p in given if not p.exists()]
    if missing:
        raise ValueError("no such folder: " + ", ".join(missing))
    found = src.discover_in(given, env)  # type: ignore[attr-defined]
    if not found:
        return {"name": source, "source": source, "status": "no_history",
                "steps": [f"no {source} history in " + ", ".join(map(str, given))],
                "hint": "give the project folder (the one holding .specstory/ or .aider.chat.history.md)"}
    state = mem.store.sources.state(source) or {}
    rules = dict(state.get("rules") or {})
    rules["projects"] = list(dict.fromkeys([*rules.get("projects", []), *map(str, given)]))
    mem.store.sources.save_rules(source, agent=src.agent, status=state.get("status") or "active",
                                 format=src.format, rules=rules)
    steps = [f"history: {', '.join(map(str, found))}",
             f"{source} now looks in {len(project_dirs(mem, source))} project folders"]
    out = run_sync(mem, [source], env=env)
    result = next((r for r in out["sources"] if r["source"] == source), out["total"])
    return {"name": source, "source": source, "status": "imported", "steps": steps, "result": result}
