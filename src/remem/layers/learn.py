"""The learning pass: turns in, learned memories out (pure; the store wiring calls it).

``learn(turns)`` orders the turns by time, runs every extractor per project and per session,
folds the observations into memories and settles their lifecycle. The result depends only on
the turns (and on ``locked`` / ``rejected`` decisions passed back in), so ``remem learn --rebuild``
is this function over the stored turns.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache

from .lifecycle import fold, phrase_counts, resolve
from .procedures import procedure_observations
from .rules import rule_observations
from .skills import fix_uses, sequence_uses, skill_observations
from .types import Memory, Observation, Turn
from .world import working_state, world_observations

_WORD = re.compile(r"[a-z][a-z0-9_-]{3,}")
_COMMON = frozenset("""this that with from have when what where which there their they them then than into
only also just more most some such each other about after before could would should will your code file
files test tests user users data main index src lib docs readme json yaml true false none null string""".split())


def project_vocab(turns: Iterable[Turn]) -> frozenset[str]:
    """Words of a project's own paths and commands: 'tied to a project term' means one of these."""
    words: dict[str, int] = defaultdict(int)
    for t in turns:
        for a in t.actions:
            for w in _WORD.findall((a.path + " " + a.command).lower().replace("\\", "/")):
                words[w] += 1
    return frozenset(w for w, n in words.items() if n >= 3 and w not in _COMMON)


PROGRAM_RARITY = 0.6     # reference weight of a program's name (recall.coverage): rare words only
_PROGRAM = re.compile(r"^[a-z][a-z0-9_.+-]{1,40}$")
_INSTALL = re.compile(r"^(?:npm|pnpm|yarn|bun|uv|pip|pip3|poetry|cargo|gem|composer|go)\s+(?:install|add|i|get)\s+(.+)$|"
                      r"^dotnet\s+add\s+(?:\S+\s+)?package\s+(\S+)", re.I)
_DIGITS = re.compile(r"\d{3}")          # "ide0007", "nu1602": a code pasted as a command, no program
_VERSION = re.compile(r"(?<=.)[@=<>~^!]=?.*$")


def _package_names(arg: str) -> set[str]:
    """Package names of an install command's arguments: ``@scope/name@1.2`` → scope and name,
    ``Foo.Bar==2`` → ``foo.bar``; flags and paths are not packages."""
    out: set[str] = set()
    for a in arg.split():
        if a.startswith("-") or a.startswith((".", "/", "\\")) or "://" in a:
            continue
        a = _VERSION.sub("", a.strip("'\"")).lower()
        for part in a.lstrip("@").split("/")[:2] if a.startswith("@") else [a]:
            if _PROGRAM.match(part) and len(part) >= 3:
                out.add(part)
    return out


def project_tools(turns: Iterable[Turn]) -> frozenset[str]:
    """The project's own tools, from its history: the programs its shell commands run and the packages
    it installs (``npm install``, ``dotnet add package``, ``pip install``, …). A rule about one of them
    ("never call psbuild directly", "use Spectre.Console for the prompts") is tied to something
    concrete in this project, as a rule about bun is anywhere; the shared list (``vocab.TOOLS``)
    holds only what every project may name."""
    out: set[str] = set()
    for t in turns:
        for a in t.actions:
            if a.command:
                out.update(_command_tools(a.command))
    return frozenset(out - _COMMON)


@lru_cache(maxsize=8192)
def _command_tools(command: str) -> frozenset[str]:
    from ..recall.coverage import reference_weight
    from .commands import NOISE, segments

    out: set[str] = set()
    for seg in segments(command):
        head = seg.split()[0].lower().replace("\\", "/").rsplit("/", 1)[-1]
        head = re.sub(r"\.(?:exe|cmd|bat|ps1|sh)$", "", head).rstrip(".")
        if _PROGRAM.match(head) and len(head) >= 3 and not _DIGITS.search(head) and head not in NOISE \
                and reference_weight(head) >= PROGRAM_RARITY:
            out.add(head)      # not "start", "test" or "type": a word that names a program
        m = _INSTALL.match(seg)
        if m:
            out |= _package_names(m.group(1) or m.group(2) or "")
    return frozenset(out)


def _time_order(turns: list[Turn]) -> list[Turn]:
    """By time when every turn has one (stable), else in the order given."""
    if all(t.ts is not None for t in turns):
        return sorted(turns, key=lambda t: t.ts or 0.0)
    return list(turns)


MIN_EXPORT_BODY = 200         # short identical turns ("continue", no reply) are real repeats, not re-exports


def dedup_exports(turns: list[Turn]) -> list[Turn]:
    """Drop turns that repeat an earlier turn of another session word for word (request and reply):
    re-exports of one chat (SpecStory writes overlapping files) are not a second session's evidence."""
    seen: dict[str, str] = {}
    out = []
    for t in turns:
        body = (t.reply or "")[:4000] + "".join(a.command + a.path + a.output[:200] for a in t.actions)
        h = hashlib.sha1((t.request + "\x1f" + body).encode()).hexdigest()
        if h in seen and seen[h] != t.session and t.request.strip() and len(body) >= MIN_EXPORT_BODY:
            continue
        seen.setdefault(h, t.session)
        out.append(t)
    return out


def observe(turns: list[Turn]) -> list[Observation]:
    """Every extractor over the turns of one project, in time order."""
    turns = dedup_exports(turns)
    vocab = project_vocab(turns)
    tools = project_tools(turns)
    obs: list[Observation] = []
    by_session: dict[str, list[Turn]] = defaultdict(list)
    prev: Turn | None = None
    for t in turns:
        same = prev is not None and prev.session == t.session
        obs.extend(rule_observations(t, prev if same else None, vocab, tools))
        by_session[t.session].append(t)
        prev = t
    uses = []
    goal: tuple[str, str, str] | None = None   # the previous session's (text, turn, session): "continue" carries it on
    for sess in by_session.values():
        procs = procedure_observations(sess)
        obs.extend(procs)
        uses += fix_uses(sess, procs) + sequence_uses(sess)
        ws = working_state(sess, goal)
        if ws is not None:
            obs.append(ws)
            if ws.data.get("goal") and ws.data.get("goal_turn"):
                goal = (ws.data["goal"], *ws.data["goal_turn"])
    obs.extend(world_observations(turns))
    pos = {t.id: i for i, t in enumerate(turns)}
    uses.sort(key=lambda u: pos.get(u["turn_id"], 0))
    obs.extend(skill_observations(uses))
    obs.sort(key=lambda o: pos.get(o.evidence.turn_id, 0))
    return obs


# what the learner reads besides this package: error signatures, word weights and stems, CJK runs
_LEARNER_SOURCES = ("../ingest/signatures.py", "../recall/coverage.py", "../text/cjk.py", "../text/fences.py")


@lru_cache(maxsize=1)
def learner_version() -> str:
    """A fingerprint of the learning code: the sources of this package and of what it reads. The
    learn job keeps it on each project's cursor, so a project learned by another version of remem is
    learned again (an upgrade's extractors reach memories of projects with no new turns too)."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    h = hashlib.sha1()
    try:
        for f in [*sorted(here.glob("*.py")), *(here / s for s in _LEARNER_SOURCES)]:
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    except OSError:                     # sources not on disk (a frozen build): the package's version
        from .. import __version__

        return "v" + __version__
    return h.hexdigest()[:16]


def learn(turns: Iterable[Turn], *, locked: dict[str, Memory] | None = None,
          rejected: set[str] | None = None) -> list[Memory]:
    """Learned memories of these turns. ``locked`` memories (by id) are kept as they are and never
    superseded; ``rejected`` ids are never re-created from the same evidence."""
    by_project: dict[str, list[Turn]] = defaultdict(list)
    for t in turns:
        by_project[t.project].append(t)
    out: list[Memory] = []
    for _project, pts in sorted(by_project.items()):
        ordered = _time_order(pts)
        mems = fold(observe(ordered), phrase_counts(t.request for t in ordered))
        for m in mems:
            if locked and m.id in locked:
                keep = locked[m.id]
                m.text, m.locked, m.status = keep.text, True, keep.status
            if rejected and m.id in rejected:
                m.status = "rejected"
        out.extend(resolve(mems))
    return out
