"""Lifecycle of learned memories as pure logic: fold observations, activate, score, supersede.

candidate → active → superseded | archived | rejected. A candidate becomes active with evidence in
≥ 2 sessions, or an explicit generaliser or memory cue, or the user's approval; inferred facts need
successful runs in ≥ 2 sessions, a command that failed twice and then passed (the work loop of fixing
a build), or (the package manager) two of the repository's own project or lock files and no other
manager. Confidence is the mean of a Beta posterior over supporting and
contradicting evidence. Two memories of one project and slot with different values, or of the same
rule with opposite polarity, conflict: the newer one supersedes the older when it is at least as
well supported, a user statement beats an inference, a locked memory is never superseded
automatically (the newcomer waits in review). Everything is recomputed from the observations, so a
rebuild from the same turns gives the same memories with the same ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

from ..recall.coverage import stem
from .rules import generalize
from .types import L3_KINDS, Memory, Observation
from .vocab import jaccard, phrase_keys

RULE_KINDS = ("preference", "convention")
SAME_RULE = 0.5              # term overlap at which two statements are one rule
SAME_CLAUSE_TERMS = 3        # … or of their rule clauses ("dont waste tokens on yap"), sharing this many words
PHRASE_STATEMENTS = 3        # … or, said in another session, a phrase in at most this many of the project's rule statements
PHRASE_REQUESTS = 5          # … and in at most this many of its requests (not the project's everyday words: "tools list")
PHRASE_SHARED = 3            # … and, for a two-word phrase, share this many words (two are an idiom: "let me down")
ACTIVE_SESSIONS = 2
FAILED_RUNS = 2              # a command that failed this often and then passed is the project's, in one session too
REPEATED_TURNS = 3          # a rule restated in 3 separate turns of one session is standing too
PROCEDURE_SESSIONS = 3      # error→fix seen in 3 sessions (2 is mostly argument fiddling on real data)
GENERIC_SIGNATURE = re.compile(r"No such file or directory|command not found|exit (?:code|status)|Permission denied|"
                               r"^error: (?:unknown option|too many arguments|missing required)", re.I)
CANDIDATE_SLOTS = ("layout.", "env.port.")   # kept for review and packets' context, never core facts
PRIOR = (1.0, 1.0)           # Beta(α, β) prior: no opinion


def memory_id(project: str, kind: str, key: str) -> str:
    return "m_" + hashlib.sha1(f"{project}\x1f{kind}\x1f{key}".encode()).hexdigest()[:16]


def confidence(support: float, against: float) -> float:
    """Mean of Beta(α + support, β + against)."""
    a, b = PRIOR
    return (a + support) / (a + b + support + against)


def _group(kind: str) -> str:
    return "rule" if kind in RULE_KINDS else kind


class _Phrases:
    """The rules and decisions of a fold by their rare phrases (``vocab.phrase_keys``). A statement
    of another session that shares one with an earlier rule of the same project, kind group and
    polarity is that rule in other words ("use template literals to build the graphviz" / "… and use
    template literals instead of console.log"). Rare: in at most PHRASE_STATEMENTS of the fold's rule
    statements and PHRASE_REQUESTS of the project's requests (``requests``: counts by phrase, from
    :func:`phrase_counts`; None: not checked). Two statements sharing a two-word phrase must share
    PHRASE_SHARED words in all ("do not let me down" twice is an idiom, not a rule), and so must two
    sharing three Chinese characters; a compound word ("solid/dry") is enough alone."""

    def __init__(self, observations: list[Observation], requests: Mapping[str, int] | None) -> None:
        self.requests = requests
        self.keys: dict[int, frozenset[str]] = {}
        self.count: dict[tuple[str, str], int] = {}
        self.rules: dict[tuple[str, str], list[Memory]] = {}
        for o in observations:
            if self.eligible(o):
                for k in self._keys(o):
                    self.count[(o.project, k)] = self.count.get((o.project, k), 0) + 1

    @staticmethod
    def eligible(o: Observation) -> bool:
        return _group(o.kind) in ("rule", "decision") and not o.slot and not o.data.get("reminder")

    def _keys(self, o: Observation) -> frozenset[str]:
        k = self.keys.get(id(o))
        if k is None:
            k = self.keys[id(o)] = phrase_keys(o.text)
        return k

    def _rare(self, project: str, k: str) -> bool:
        return (self.count.get((project, k), 0) <= PHRASE_STATEMENTS
                and (self.requests is None or self.requests.get(k, 0) <= PHRASE_REQUESTS))

    def find(self, o: Observation) -> Memory | None:
        for k in sorted(self._keys(o)):
            if not self._rare(o.project, k):
                continue
            for m in self.rules.get((o.project, k), ()):
                if _group(m.kind) == _group(o.kind) and m.polarity == o.polarity and o.evidence.session not in m.sessions \
                        and (" " not in k or len(m.terms & o.terms) >= PHRASE_SHARED):
                    return m
        return None

    def add(self, o: Observation, m: Memory) -> None:
        if self.eligible(o) and not m.slot:
            for k in self._keys(o):
                ms = self.rules.setdefault((o.project, k), [])
                if m not in ms:
                    ms.append(m)


def phrase_counts(requests: Iterable[str], chars: int = 2000) -> dict[str, int]:
    """How many of these requests hold each phrase (their first ``chars``: a pasted log is not the user's words)."""
    out: dict[str, int] = {}
    for r in requests:
        for k in phrase_keys(r[:chars]):
            out[k] = out.get(k, 0) + 1
    return out


def _find(mem_by_key: dict[tuple[str, str, str], Memory], rules: list[Memory], clauses: dict[str, frozenset[str]],
          o: Observation, phrases: _Phrases | None = None) -> Memory | None:
    """The memory ``o`` belongs to: the one of its key, else a rule or decision of the same project
    whose terms overlap enough (the same statement in other words, or about another file), or whose
    rule clause (``rules.clause_terms``; ``clauses``: each rule's, by id) is the same, with the same
    polarity, in other sentences, or (``phrases``) that shares a rare phrase with it from another session."""
    m = mem_by_key.get((o.project, _group(o.kind), o.key))
    if m is not None or _group(o.kind) not in ("rule", "decision") or o.slot:
        return m
    best, score = None, 0.0
    mine = frozenset(o.data.get("clause") or ())
    for r in rules:
        if r.project != o.project or _group(r.kind) != _group(o.kind) or r.slot:
            continue
        j = jaccard(r.terms, o.terms)
        if len(mine) >= SAME_CLAUSE_TERMS and o.polarity == r.polarity:
            theirs = clauses.get(r.id, frozenset())
            if len(mine & theirs) >= SAME_CLAUSE_TERMS:
                j = max(j, jaccard(mine, theirs))
        if j >= SAME_RULE and j > score:
            best, score = r, j
    if best is None and phrases is not None:
        best = phrases.find(o)
    return best


REMINDED_SHARE = 2 / 3   # of a reminder's words (by stem) the rule it repeats must hold, and at least two


def _reminded(rules: list[Memory], o: Observation) -> Memory | None:
    """The rule a reminder ("you forgot to update the changelog", ``o``) repeats: a rule of the same
    project, to be done (not a prohibition, no slot), holding by stem at least two of the reminder's
    words and REMINDED_SHARE of them ("keep the changelog updated after every feature"); the best
    share, the newest of equals. Words are the same by stem, or when one stem starts the other
    ("updat" of "updated", "update")."""
    mine = {stem(t) for t in o.terms}
    best, score = None, 0.0
    for r in rules:
        if r.project != o.project or _group(r.kind) != "rule" or r.polarity != 1 or r.slot:
            continue
        theirs = {stem(t) for t in r.terms}
        shared = sum(1 for a in mine if a in theirs or len(a) >= 4 and any(
            len(b) >= 4 and (a.startswith(b) or b.startswith(a)) for b in theirs))
        share = shared / max(1, len(mine))
        if shared >= 2 and share >= REMINDED_SHARE and share >= score:
            best, score = r, share
    return best


def fold(observations: Iterable[Observation], requests: Mapping[str, int] | None = None) -> list[Memory]:
    """Merge observations (in time order) into memories: one per identity, every evidence kept.
    ``requests``: the project's phrase counts (:func:`phrase_counts`), for restatements that share a
    rare phrase (``_Phrases``)."""
    mem_by_key: dict[tuple[str, str, str], Memory] = {}
    rules: list[Memory] = []
    clauses: dict[str, frozenset[str]] = {}  # a rule's clause as a set, made once (it is set once)
    ordered: list[Memory] = []
    observations = list(observations)
    phrases = _Phrases(observations, requests)
    chosen: dict[str, set[str]] = {}    # by memory: sessions where a task named its choice …
    stated: dict[str, set[str]] = {}    # … and where the user stated it
    for o in observations:
        if o.data.get("reminder"):
            # "you forgot to …": support for the rule it repeats (said earlier, to be done), never a
            # memory of its own, and never its text, kind or words
            m = _reminded(rules, o)
            if m is not None and o.evidence.turn_id not in {e.turn_id for e in m.evidence}:
                m.evidence.append(o.evidence)
                m.updated_at = o.evidence.ts if o.evidence.ts is not None else m.updated_at
            continue
        m = _find(mem_by_key, rules, clauses, o, phrases)
        if m is None:
            m = Memory(id=memory_id(o.project, _group(o.kind), o.key), kind=o.kind, key=o.key, text=o.text,
                       project=o.project, layer="L3" if o.kind in L3_KINDS else "L2", slot=o.slot,
                       value=o.value, polarity=o.polarity, terms=o.terms, data=dict(o.data),
                       created_at=o.evidence.ts)
            mem_by_key[(o.project, _group(o.kind), o.key)] = m
            if _group(o.kind) in ("rule", "decision"):
                rules.append(m)
            ordered.append(m)
        elif o.polarity != m.polarity and not o.slot:
            m.against.append(o.evidence)
            continue
        if o.evidence.turn_id not in {e.turn_id for e in m.evidence}:
            m.evidence.append(o.evidence)
        (chosen if o.data.get("adopted") else stated).setdefault(m.id, set()).add(o.evidence.session)
        phrases.add(o, m)
        template = generalize(m.text, o.text) if m.key != o.key and o.kind != "fact" else None
        if template:    # one request said about different files: its shared words, each file as "…"
            m.text = template
            m.data["anchors"] = sorted(set(m.data.get("anchors") or ()) & set(o.data.get("anchors") or ()))
        elif o.data.get("adopted"):
            pass                # a choice named in a task: the rule keeps its own words ("Use bun, not node.")
        elif o.evidence.explicit or (o.kind != "fact" and len(o.text) <= len(m.text) * 1.5):
            m.text = o.text if o.kind != "fact" else m.text
        if o.kind == "convention" and m.kind == "preference":
            m.kind = "convention"
        m.terms = m.terms | o.terms
        m.updated_at = o.evidence.ts if o.evidence.ts is not None else m.updated_at
        for k, v in o.data.items():
            m.data.setdefault(k, v)
        if m.data.get("clause") and m.id not in clauses:
            clauses[m.id] = frozenset(m.data["clause"])
    for m in ordered:
        only = chosen.get(m.id, set()) - stated.get(m.id, set())
        m.data.pop("adopted", None)
        if only:        # support the user never stated (select ranks the core rules without it)
            m.data["chosen_only"] = len(only)
    return ordered


def support(m: Memory) -> float:
    """Evidence weight: one per distinct supporting turn, explicit statements count double."""
    return sum(2.0 if e.explicit else 1.0 for e in m.evidence)


def activation(m: Memory) -> str:
    """The status a memory earns from its own evidence (before conflicts)."""
    if m.kind in ("correction",):
        return "candidate"
    if m.kind == "working_state":
        return "active"
    sessions = len(m.sessions)
    if m.slot.startswith(CANDIDATE_SLOTS):
        return "candidate"
    if m.kind == "fact":
        if m.data.get("stated") or m.from_user:
            return "active"          # the user said it (a statement, or a command they ran themselves)
        if sessions >= ACTIVE_SESSIONS and len(m.evidence) >= 2:
            return "active"
        runs, tries = int(m.data.get("runs", 0)), int(m.data.get("tries", 0))
        if m.slot.startswith("cmd.") and runs >= 1 and tries - runs >= FAILED_RUNS:
            return "active"          # failed, fixed, run again until it passed: the project's command, in one session too
        if m.slot == "pkg.manager" and m.data.get("manifests", 0) >= 2 and not m.data.get("rivals"):
            return "active"          # the repository's own files (two project or lock files), no other manager seen
        return "candidate"
    if m.kind == "skill":         # a skill is a recipe to follow: evidence in as many sessions as a procedure
        sig = str(m.data.get("trigger", {}).get("signature", ""))
        return "active" if sessions >= PROCEDURE_SESSIONS and not GENERIC_SIGNATURE.search(sig) else "candidate"
    if m.kind == "procedure":
        sig = str(m.data.get("trigger", {}).get("signature", ""))
        if GENERIC_SIGNATURE.search(sig):
            return "candidate"
        return "active" if sessions >= PROCEDURE_SESSIONS else "candidate"
    if m.slot.startswith(CANDIDATE_SLOTS):
        return "candidate"
    if sessions >= ACTIVE_SESSIONS or m.explicit or len(m.evidence) >= REPEATED_TURNS:
        return "active"
    return "candidate"


def _newer(a: Memory, b: Memory) -> bool:
    return (a.updated_at or 0.0) >= (b.updated_at or 0.0)


def resolve(memories: list[Memory], order: dict[str, int] | None = None) -> list[Memory]:
    """Set status and confidence of every memory, then settle slot and polarity conflicts."""
    for m in memories:
        if m.status in ("rejected", "archived"):
            continue
        if not m.locked:
            m.status = activation(m)
        m.confidence = confidence(support(m), float(len(m.against)))
    by_slot: dict[tuple[str, str], list[Memory]] = {}
    for m in memories:
        if m.slot and m.status in ("active", "candidate"):
            by_slot.setdefault((m.project, m.slot), []).append(m)
    for group in by_slot.values():
        values = {m.value for m in group}
        if len(values) < 2:
            continue
        # the winner: user statements over inferences, then support, then recency
        group.sort(key=lambda m: (m.locked, m.from_user, m.status == "active", support(m), m.updated_at or 0.0))
        win = group[-1]
        for m in group[:-1]:
            if m.value == win.value:
                continue
            if m.locked:
                win.status = "candidate"
                win.data["conflict_with"] = m.id
                continue
            if m.status == "active" and win.status == "active" and _newer(win, m):
                m.status = "superseded"
                m.superseded_by = win.id
            elif m.status == "active" and win.status == "active":
                m.status = "candidate"
                m.data["conflict_with"] = win.id
    return memories
