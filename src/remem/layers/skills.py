"""Skills (issue 18): a fix or a command sequence the agent repeated often enough to be a reusable
recipe, with its parameters, learned deterministically from the turns (no LLM). Pure.

Two sources of *uses*:

* an error → fix procedure (``procedures.py``): one use per fix, its steps the edits and commands
  between the failure and the passing run, the passing run last — not a fix that only re-ran the
  failing command with other arguments (one step of its own families: the procedure is the recipe);
* a recurring command sequence: one use per turn whose clean shell runs are ≥ 2 commands of the same
  families in the same order (``npm run build`` then ``npm test``), no open error in the turn.

Uses of one identity (a procedure's key, or the sequence of command families) with ≥ ``MIN_USES``
in ≥ ``MIN_SESSIONS`` sessions make a skill: its steps are the steps every use shares (in the first
use's order); a step's words that differ between uses are its *parameters* (``{path1}``,
``{arg1}``), the rest is the template. Each use keeps its parameter values, so filling a template
with them gives back a command that use really ran: every command a skill names occurs in its
evidence (``grounded`` checks it).

A sequence skill also keeps a prompt *cue* (``cue``): the words its uses' requests share, so the
kind of task it followed brings it into a packet before the agent has run anything.

A skill's worth is measured where it is used (``trial``): injected in a packet, its trigger held
(the error it is for appeared in the turn; a sequence skill's trigger is its relevance) and its last
command ran; it passes when that run was clean and the turn succeeded (no correction, no open
error). η = (passes + 1) / (trials + 2); an unlocked skill the user did not approve is archived at
η < ``ARCHIVE_ETA`` after ≥ ``MIN_TRIALS`` trials (``apply_trials``).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from .commands import family, outcome, segments, signatures
from .types import Action, Evidence, Observation, Turn

MIN_USES = 3
MIN_SESSIONS = 2
MAX_STEPS = 6
MAX_COMMAND = 400           # a longer command is no template (it could not be quoted whole)
MAX_USES_KEPT = 8           # uses (with their parameter values) kept in a skill's data
MIN_TRIALS = 3
ARCHIVE_ETA = 0.3
_PATH = re.compile(r"[/\\]|\.\w{1,5}$")


def norm(command: str) -> str:
    """A command with its whitespace collapsed: how templates and evidence are compared."""
    return " ".join(command.split())


def meaningful(command: str) -> str:
    """A command line without its set-up (``cd``, env assignments, ``eval``): its meaningful
    segments (``commands.segments``) joined by ``&&``. A step is this text, so that ``cd app &&
    dotnet build`` and ``dotnet build`` are one step."""
    return norm(" && ".join(segments(command)))


def _fams(command: str) -> tuple[str, ...]:
    return tuple(f for f in (family(s) for s in segments(command)) if f)


def _step(a: Action) -> tuple[str, str] | None:
    """(identity, text) of one action as a skill step: a shell run by its families, an edit by "edit"."""
    if a.tool == "shell" and a.command.strip():
        fams = _fams(a.command)
        cmd = meaningful(a.command)
        return ("run:" + " && ".join(fams), cmd) if fams and len(cmd) <= MAX_COMMAND else None
    if a.tool == "edit" and a.path:
        return ("edit", a.path)
    return None


def fix_uses(session_turns: list[Turn], observations: Iterable[Observation]) -> list[dict[str, Any]]:
    """One use per procedure observation of this session: the steps from its failing run to the
    passing one (``procedures.procedure_observations`` found them; this re-reads the raw commands,
    which the procedure's own text shortens)."""
    by_id = {t.id: i for i, t in enumerate(session_turns)}
    out = []
    for o in observations:
        if o.kind != "procedure" or o.evidence.turn_id not in by_id:
            continue
        trig = o.data.get("trigger") or {}
        start = by_id[o.evidence.turn_id]
        end = by_id.get(str(o.data.get("fixed_in") or ""), start)
        flat = [a for t in session_turns[start:end + 1] for a in t.actions]
        failing = norm(str(trig.get("command") or ""))
        verify = norm(str(o.data.get("verify") or ""))
        i0 = next((i for i, a in enumerate(flat) if a.tool == "shell" and norm(a.command)[:200] == failing[:200]), None)
        if i0 is None:
            continue
        steps: list[tuple[str, str]] = []
        for a in flat[i0 + 1:]:
            st = _step(a)
            if a.tool == "shell" and outcome(a) == "failed":
                continue                               # a failed attempt is what to avoid, not a step
            if st is not None:
                steps.append(st)
            if a.tool == "shell" and norm(a.command)[:200] == verify[:200] and outcome(a) == "ok":
                break
        if not steps or not steps[-1][0].startswith("run:"):
            continue
        if len(steps) == 1 and steps[0][0] == "run:" + " && ".join(_fams(failing)):
            continue      # the failing command run again with other arguments: the procedure says it all
        first = session_turns[start]
        out.append({"key": "skill:" + o.key, "source": o.key, "turn_id": first.id, "session": first.session,
                    "ts": first.ts, "project": first.project, "steps": steps[:MAX_STEPS],
                    "signature": str(trig.get("signature") or ""), "command": failing[:200]})
    return out


def sequence_uses(session_turns: list[Turn]) -> list[dict[str, Any]]:
    """One use per turn that ran ≥ 2 commands of distinct families, all clean, nothing left failing."""
    out = []
    for t in session_turns:
        shell = [a for a in t.actions if a.tool == "shell" and a.command.strip()]
        if any(outcome(a) == "failed" for a in shell):
            continue
        steps: list[tuple[str, str]] = []
        for a in shell:
            st = _step(a)
            if st is None or outcome(a) != "ok":
                continue
            if steps and steps[-1][0] == st[0]:
                steps[-1] = st                         # the same command again: its last run counts
            else:
                steps.append(st)
        if not 2 <= len(steps) <= MAX_STEPS:
            continue
        ident = "\x1f".join(s for s, _ in steps)
        out.append({"key": "skill:seq:" + hashlib.sha1(ident.encode()).hexdigest()[:12], "source": "",
                    "turn_id": t.id, "session": t.session, "ts": t.ts, "project": t.project, "steps": steps,
                    "signature": "", "command": "", "request": t.request[:2000]})
    return out


def _common(uses: list[dict[str, Any]]) -> list[str]:
    """The step identities every use has, in the first use's order (each identity once)."""
    ids: list[str] = []
    for ident, _ in uses[0]["steps"]:
        if ident not in ids and all(any(s == ident for s, _ in u["steps"]) for u in uses[1:]):
            ids.append(ident)
    return ids


def template(values: list[str], n: int) -> tuple[str, list[str], list[list[str]]]:
    """A template for one step's texts across uses and each use's parameter values: words equal in
    every use stay, the words that differ become ``{path<n>}`` / ``{arg<n>}`` (one parameter per
    differing run of words). Returns (template, its parameter names, their values per use)."""
    words = [v.split(" ") for v in values]
    pre = 0
    while all(len(w) > pre for w in words) and len({w[pre] for w in words}) == 1:
        pre += 1
    suf = 0
    while all(len(w) - pre > suf for w in words) and len({w[len(w) - 1 - suf] for w in words}) == 1:
        suf += 1
    mids = [" ".join(w[pre:len(w) - suf]) for w in words]
    if len(set(mids)) <= 1:
        return values[0], [], [[] for _ in values]
    name = ("path" if all(_PATH.search(m) for m in mids if m) else "arg") + str(n)
    head, tail = words[0][:pre], words[0][len(words[0]) - suf:] if suf else []
    return " ".join([*head, "{" + name + "}", *tail]), [name], [[m] for m in mids]


def fill(tmpl: str, params: list[str], values: dict[str, str]) -> str:
    out = tmpl
    for p in params:
        out = out.replace("{" + p + "}", values.get(p, ""))
    return norm(out)


def _skill(uses: list[dict[str, Any]]) -> Observation | None:
    ids = _common(uses)
    if not any(i.startswith("run:") for i in ids):
        return None
    steps: list[dict[str, Any]] = []
    per_use: list[dict[str, str]] = [{} for _ in uses]
    n = 1
    for ident in ids:
        texts = [next(t for s, t in u["steps"] if s == ident) for u in uses]
        tmpl, params, vals = template(texts, n)
        if ident != "edit" and tmpl.startswith("{"):
            return None                 # the program itself varies: nothing of the step is a recipe
        for pu, v in zip(per_use, vals, strict=True):
            pu.update(dict(zip(params, v, strict=True)))
        n += len(params)
        steps.append({"kind": "edit" if ident == "edit" else "run", "template": tmpl, "params": params,
                      "families": [] if ident == "edit" else ident[4:].split(" && ")})
    first = uses[0]
    runs = [s for s in steps if s["kind"] == "run"]
    sig = first["signature"]
    fams = runs[-1]["families"]
    pre = ([f"`{family(first['command']) or first['command'].split(' ')[0]}` failed with \"{sig}\""] if sig else []) \
        + [f"the project runs `{f}`" for f in dict.fromkeys(f for s in runs for f in s["families"])][:3]
    name = (f"fix \"{sig[:80]}\" in {fams[-1]}" if sig else " then ".join(s["families"][-1] for s in runs))
    shown = "; ".join(("edit " if s["kind"] == "edit" else "run `") + s["template"] + ("" if s["kind"] == "edit" else "`")
                      for s in steps)
    params = [p for s in steps for p in s["params"]]
    text = f"Skill \"{name}\": {shown}." + (f" Parameters: {', '.join(params)}." if params else "")
    data = {"name": name, "steps": steps, "parameters": params, "preconditions": pre,
            "trigger": {"signature": sig, "command": first["command"], "family": fams[-1]},
            "sources": sorted({u["source"] for u in uses if u["source"]}),
            "eta": eta(0, 0), "trials": 0,        # untried (``apply_trials`` keeps them from the trials)
            "uses": [{"turn": u["turn_id"], "session": u["session"], "values": v}
                     for u, v in list(zip(uses, per_use, strict=True))[-MAX_USES_KEPT:]]}
    if not sig:
        data["cue"] = cue(uses)
    terms = frozenset(w for s in runs for f in s["families"] for w in re.findall(r"[a-z]\w+", f.lower()))
    return Observation(kind="skill", key=first["key"], text=text, project=first["project"], data=data,
                       evidence=Evidence(turn_id=first["turn_id"], session=first["session"], ts=first["ts"],
                                         source="inferred"),
                       terms=terms | frozenset(re.findall(r"[a-z]\w+", sig.lower())))


def cue(uses: list[dict[str, Any]]) -> list[str]:
    """A sequence skill's prompt cue: the words the user's requests shared in at least half of its uses
    (two at least), e.g. "model", "column", "migration" for a check run after every schema change. What
    the user asks, not what the agent ran: a prompt with these words is the kind of task this recipe
    followed (``select.pick`` brings it in by them, as it brings a memory in by its words)."""
    from .clean import user_voice
    from .select import terms

    counts: dict[str, int] = defaultdict(int)
    for u in uses:
        for w in terms(user_voice(u.get("request") or "")):
            counts[w] += 1
    need = max(2, (len(uses) + 1) // 2)
    return sorted(w for w, n in counts.items() if n >= need)[:16]


def skill_observations(uses: Iterable[dict[str, Any]]) -> list[Observation]:
    """Skills of one project's uses (in time order): one observation per use of a qualifying
    identity, the first carrying the skill's data (``lifecycle.fold`` keeps the first data)."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for u in uses:
        by_key[u["key"]].append(u)
    out: list[Observation] = []
    for group in by_key.values():
        if len(group) < MIN_USES or len({u["session"] for u in group}) < MIN_SESSIONS:
            continue
        sk = _skill(group)
        if sk is None:
            continue
        out.append(sk)
        for u in group[1:]:
            out.append(Observation(kind="skill", key=sk.key, text=sk.text, project=sk.project, terms=sk.terms,
                                   evidence=Evidence(turn_id=u["turn_id"], session=u["session"], ts=u["ts"],
                                                     source="inferred")))
    return out


def grounded(skill: dict[str, Any], turns: Iterable[Turn]) -> list[str]:
    """The commands a skill names that its evidence does not show (empty: grounded). Each kept use's
    values fill every run step, and the command must be one its session ran (whole, or its
    meaningful part: ``cd app && dotnet build`` shows ``dotnet build``)."""
    ran: dict[str, set[str]] = defaultdict(set)
    for t in turns:
        for a in t.actions:
            if a.tool == "shell":
                ran[t.session] |= {norm(a.command), meaningful(a.command)}
    data = skill.get("data") or {}
    missing = []
    for use in data.get("uses") or []:
        for st in data.get("steps") or []:
            if st["kind"] != "run":
                continue
            cmd = fill(st["template"], st["params"], use.get("values") or {})
            if cmd not in ran.get(use["session"], set()):
                missing.append(cmd)
    return missing


# -- trials and η -------------------------------------------------------------------------------

def trial(m: dict[str, Any], turn: Turn, next_turn: Turn | None, result: str) -> str:
    """"passed" / "failed" when this turn, whose packet carried skill ``m``, was a trial of it, else ""."""
    data = m.get("data") or {}
    runs = [s for s in data.get("steps") or [] if s.get("kind") == "run"]
    if not runs:
        return ""
    want = set(runs[-1].get("families") or ())
    sig = str((data.get("trigger") or {}).get("signature") or "")
    actions = [a for a in turn.actions if a.tool == "shell" and a.command.strip()]
    held = not sig
    last = ""
    for a in actions:
        if sig and not held and outcome(a) == "failed" and sig in signatures(a):
            held = True
            continue
        if held and want and want <= set(_fams(a.command)):
            last = outcome(a) or "ok"
    if not held or not last:
        return ""
    if result in ("corrected", "failed", "abandoned"):
        return "failed"
    return "passed" if result == "succeeded" and last == "ok" else "failed"


def eta(passes: int, trials: int) -> float:
    return (passes + 1) / (trials + 2)


def apply_trials(m: Any, fb: dict[str, Any] | None, *, approved: bool = False) -> None:
    """η of a skill (``layers.types.Memory``) from its stored trials, and its archive at a low η (in
    place). The user's approval or a lock keeps it active whatever η says."""
    got = fb or {}
    passes = len(got.get("passed") or ())
    trials = passes + len(got.get("failed") or ())
    m.data["eta"] = round(eta(passes, trials), 4)
    m.data["trials"] = trials
    if trials >= MIN_TRIALS and m.data["eta"] < ARCHIVE_ETA and not m.locked and not approved \
            and m.status in ("active", "candidate"):
        m.status = "archived"
        m.data["archived_by"] = "eta"
