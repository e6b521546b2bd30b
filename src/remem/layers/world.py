"""The project world model (L3 facts) and the per-session working state, from turns. Pure.

Commands: per category (test / build / run / lint) the command family with the most successful
runs, active when those runs span ≥ 2 sessions. Package manager from install commands, runner
prefixes and lock files. Languages from touched files, OS / shell from paths and prompts, ports,
the most-edited directories, and what the user states as fact ("the frontend uses Next.js 15").
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict

from .clean import sentences, user_voice
from .commands import category, family, outcome, segments, signatures
from .types import Evidence, Observation, Turn

_LOCKS = {"package-lock.json": "npm", "npm-shrinkwrap.json": "npm", "bun.lock": "bun", "bun.lockb": "bun",
          "pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "uv.lock": "uv", "poetry.lock": "poetry",
          "pipfile.lock": "pipenv", "cargo.lock": "cargo", "go.sum": "go", "packages.lock.json": "dotnet"}
_PM_PREFIX = {"npm": "npm", "npx": "npm", "pnpm": "pnpm", "pnpx": "pnpm", "yarn": "yarn", "bun": "bun", "bunx": "bun",
              "uv": "uv", "poetry": "poetry", "pipenv": "pipenv", "pip": "pip", "pip3": "pip", "cargo": "cargo",
              "dotnet": "dotnet", "go": "go", "conda": "conda"}
_EXT_LANG = {"py": "Python", "ipynb": "Python", "ts": "TypeScript", "tsx": "TypeScript", "js": "JavaScript",
             "jsx": "JavaScript", "mjs": "JavaScript", "cs": "C#", "csproj": "C#", "go": "Go", "rs": "Rust",
             "java": "Java", "kt": "Kotlin", "rb": "Ruby", "php": "PHP", "sh": "Shell", "ps1": "PowerShell",
             "psm1": "PowerShell", "sql": "SQL", "swift": "Swift", "c": "C", "cpp": "C++", "vue": "Vue",
             "svelte": "Svelte"}
_PORT = re.compile(r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0):(\d{4,5})\b")
_USER_FACT_EN = re.compile(
    r"\b(?:this|the|our|my) (?:project|app|application|repo|repository|frontend|backend|api|server|site|"
    r"database|db|library|codebase) (?:uses|is built (?:with|on)|runs on|is written in|is based on|is a)\b", re.I)
_USER_FACT_ZH = re.compile(r"(?:本项目|这个项目|该项目|项目|前端|后端|数据库)(?:的)?(?:前端|后端|数据库)?(?:使用|用的是|采用|基于|是)")
_USER_CMD = re.compile(r"\b(npm|pnpm|yarn|bun|uv|poetry|dotnet) (?:run|install|add|ci|test|build|sync)\b", re.I)
_CODE_SPAN = re.compile(r"`([^`\n]{3,80})`")
MIN_LANG_FILES = 5
WORKING_STATE_CHARS = 500
WORKING_STATE_DAYS = 7


def _ev(t: Turn, source: str = "inferred", explicit: bool = False) -> Evidence:
    return Evidence(turn_id=t.id, session=t.session, ts=t.ts, source=source, explicit=explicit)


def _os_of(text: str) -> str:
    if re.search(r"\b[A-Z]:\\(?:Users|dev|Projects|src)\\", text) or "PS C:\\" in text:
        return "windows"
    if "/Users/" in text:
        return "macos"
    if re.search(r"/home/\w+", text):
        return "linux"
    return ""


def world_observations(turns: list[Turn]) -> list[Observation]:
    """L3 fact observations of one project (turns in time order). One observation per slot, the
    best-supported value, with every turn that supports it as evidence."""
    if not turns:
        return []
    project = turns[0].project
    runs: dict[str, Counter[str]] = defaultdict(Counter)          # category -> family -> ok runs
    tries: dict[str, Counter[str]] = defaultdict(Counter)         # category -> family -> runs, failed ones too
    manifests: dict[str, set[str]] = defaultdict(set)             # package manager -> its lock / project files
    run_ev: dict[str, list[Evidence]] = defaultdict(list)
    pm: Counter[str] = Counter()
    pm_ev: dict[str, list[Evidence]] = defaultdict(list)
    langs: Counter[str] = Counter()
    lang_ev: dict[str, list[Evidence]] = defaultdict(list)
    dirs: Counter[str] = Counter()
    dir_ev: dict[str, list[Evidence]] = defaultdict(list)
    oses: Counter[str] = Counter()
    os_ev: dict[str, list[Evidence]] = defaultdict(list)
    ports: Counter[str] = Counter()
    port_ev: dict[str, list[Evidence]] = defaultdict(list)
    out: list[Observation] = []
    for t in turns:
        for a in t.actions:
            if a.tool == "shell" and a.command:
                res = outcome(a)
                for seg in segments(a.command):
                    fam = family(seg)
                    cat = category(fam)
                    head = fam.split(" ")[0]
                    if head in _PM_PREFIX and (cat or head in ("npm", "bun", "pnpm", "yarn", "uv", "dotnet")):
                        pm[_PM_PREFIX[head]] += 1
                        pm_ev[_PM_PREFIX[head]].append(_ev(t))
                    if cat in ("test", "build", "run", "lint") and " " in fam:
                        tries[cat][fam] += 1
                        if res == "ok":
                            runs[cat][fam] += 1
                            run_ev[f"{cat}\x1f{fam}"].append(_ev(t))
                o = _os_of(a.command + "\n" + a.output[:2000])
                if o:
                    oses[o] += 1
                    os_ev[o].append(_ev(t))
                for p in set(_PORT.findall(a.command + "\n" + a.output[:4000])):
                    ports[p] += 1
                    port_ev[p].append(_ev(t))
            if a.path:
                low = a.path.replace("\\", "/").lower()
                name = low.rsplit("/", 1)[-1]
                if name in _LOCKS:
                    pm[_LOCKS[name]] += 2
                    pm_ev[_LOCKS[name]].append(_ev(t))
                    manifests[_LOCKS[name]].add(low)
                ext = name.rsplit(".", 1)[-1] if "." in name else ""
                if ext in ("csproj", "sln", "fsproj") or name in ("directory.packages.props", "global.json"):
                    pm["dotnet"] += 1
                    pm_ev["dotnet"].append(_ev(t))
                    manifests["dotnet"].add(low)
                if ext in _EXT_LANG:
                    langs[_EXT_LANG[ext]] += 1
                    lang_ev[_EXT_LANG[ext]].append(_ev(t))
                if a.tool == "edit" and "/" in low:
                    d = "/".join(low.split("/")[:-1][-2:])
                    dirs[d] += 1
                    dir_ev[d].append(_ev(t))
                o = _os_of(a.path)
                if o:
                    oses[o] += 1
                    os_ev[o].append(_ev(t))
        for cm in _USER_CMD.finditer(t.request[:4000]):
            pm[_PM_PREFIX[cm.group(1).lower()]] += 1
            pm_ev[_PM_PREFIX[cm.group(1).lower()]].append(_ev(t, "user"))
        for s in sentences(user_voice(t.request)):
            if len(s) <= 240 and (_USER_FACT_EN.search(s) or _USER_FACT_ZH.search(s)) and "?" not in s \
                    and "？" not in s and not s.lower().startswith(("does", "is ", "why", "how", "what")):
                out.append(Observation(kind="fact", key="stated:" + hashlib.sha1(s.encode()).hexdigest()[:12], text=s,
                                       project=project, evidence=_ev(t, "user", True),
                                       slot="", value="", data={"stated": True}))

    def emit(slot: str, value: str, text: str, ev: list[Evidence], **data: object) -> None:
        for e in ev:
            out.append(Observation(kind="fact", key=slot, text=text, project=project, evidence=e,
                                   slot=slot, value=value, data=dict(data)))

    # the agent telling the user to run a command it ran successfully elsewhere ("restart with `npm start`")
    # is another session's evidence for that command, never a run of its own (it picks no winner)
    seen = {fam for fams in runs.values() for fam in fams}
    heads = {fam.split(" ")[0] for fam in seen}
    if seen:
        for t in turns:
            if "`" not in t.reply:
                continue
            for span in set(_CODE_SPAN.findall(t.reply[:20000])):
                if not any(h in span for h in heads):
                    continue
                for seg in segments(span):
                    fam = family(seg)
                    cat = category(fam)
                    key = f"{cat}\x1f{fam}"
                    if fam in seen and cat and t.session not in {e.session for e in run_ev[key]}:
                        run_ev[key].append(_ev(t))
    for cat, fams in runs.items():
        # the family with the most successful runs; ties go to the one seen in more sessions
        best = max(fams, key=lambda f: (len({e.session for e in run_ev[f"{cat}\x1f{f}"]}), fams[f], f))
        emit(f"cmd.{cat}", best, f"The {cat} command is `{best}`.", run_ev[f"{cat}\x1f{best}"],
             runs=fams[best], tries=tries[cat][best])
    if pm:
        best = max(pm, key=lambda k: (len({e.session for e in pm_ev[k]}), pm[k], k))
        emit("pkg.manager", best, f"The package manager is {best}.", pm_ev[best],
             manifests=len(manifests[best]), rivals=sorted(k for k in pm if k != best))
    for lang, n in langs.most_common(3):
        if n >= MIN_LANG_FILES:
            emit(f"stack.lang.{lang.lower()}", lang, f"The project is written in {lang}.", lang_ev[lang])
    if oses:
        best = oses.most_common(1)[0][0]
        emit("env.os", best, f"The developer works on {best}.", os_ev[best])
    for p, _n in ports.most_common(2):
        emit(f"env.port.{p}", p, f"A local service listens on port {p}.", port_ev[p])
    if dirs:
        top = [d for d, _ in dirs.most_common(3)]
        ev = [e for d in top for e in dir_ev[d]]
        emit("layout.hot_dirs", ",".join(top), "Most edited directories: " + ", ".join(top) + ".", ev)
    return out


def working_state(session_turns: list[Turn]) -> Observation | None:
    """Goal, what was done, next steps, the open error and files touched, in ≤ 500 characters."""
    if not session_turns:
        return None
    first = next((s for t in session_turns for s in sentences(user_voice(t.request))), "")
    files: list[str] = []
    open_error = ""
    for t in session_turns:
        for a in t.actions:
            if a.tool == "edit" and a.path and a.path not in files:
                files.append(a.path)
            if a.tool == "shell" and a.command:
                res = outcome(a)
                if res == "failed":
                    sig = signatures(a)
                    open_error = sig[0] if sig else open_error
                elif res == "ok":
                    open_error = ""
    last = session_turns[-1]
    nxt = ""
    m = re.search(r"(?:next steps?|下一步|接下来|TODO)[:：]?\s*([^\n]{5,160})", last.reply or "", re.I)
    if m:
        nxt = m.group(1).strip()
    parts = [f"Goal: {first[:140]}"] if first else []
    if files:
        parts.append("Touched: " + ", ".join(f.replace("\\", "/").rsplit("/", 1)[-1] for f in files[-5:]))
    if nxt:
        parts.append(f"Next: {nxt}")
    if open_error:
        parts.append(f"Open error: {open_error[:120]}")
    text = " | ".join(parts)[:WORKING_STATE_CHARS]
    if not text:
        return None
    ts = last.ts
    return Observation(kind="working_state", key=f"ws:{last.session}", text=text, project=last.project,
                       evidence=_ev(last), data={"files": files[-10:], "open_error": open_error, "next": nxt,
                                                 "expires_at": ts + WORKING_STATE_DAYS * 86400 if ts else None})
