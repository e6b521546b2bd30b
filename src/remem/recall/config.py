"""Recall settings: which channels run, how they are weighted, and the named presets.

Defaults carry a short reason. The benchmark selects presets by name (``remem bench locomo
--config bm25``), so every number in bench/RESULTS.md names the configuration it used.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .gate import CHANNEL_SPECS

# Sessions are ranked by exact BM25 over whole-session documents up to this many turns in scope, by their
# best bm25 turn hits above. Whole sessions of real coding turns (kilobytes of tool output each) rank
# worse than their best turns from ~3,000 turns in scope: the real-shaped proxy at 3k / 4k / 5k turns,
# packets holding a relevant turn 0.367 / 0.349 / 0.311 → 0.396 / 0.404 / 0.391 (a wash at 1k and 2k).
# Chat-sized scopes (LoCoMo's conversations: a few hundred turns) keep it: sessions +2.5 points there.
OKAPI_SESSION_MAX = 2000
CHANNELS = tuple(s.name for s in CHANNEL_SPECS)  # in the order they run


@dataclass(frozen=True)
class RecallConfig:
    # weight per channel in reciprocal rank fusion; 0 or missing = the channel does not run
    # (defaults and their reasons: recall/gate.py CHANNEL_SPECS)
    weights: dict[str, float] = field(default_factory=lambda: {s.name: s.weight for s in CHANNEL_SPECS})
    rrf_k: int = 10             # measured on LoCoMo dev: 60 (the usual) flattens the top ranks too much
                                # (turn recall_any@5 61.7 at 60, 67.9 at 10; bench/RESULTS.md)
    pool: int = 60              # candidates per channel: 100 → 60 cut real-shaped turn_start at 100k by a
                                # quarter (p95 104 → 76 ms) with LoCoMo dev within 0.3 points
                                # (bench/RESULTS.md, "recall on real-shaped stores at 100k")
    lexical: str = "fts"        # "fts" (SQLite bm25, any size) | "okapi" (exact, scope ≤ 20k turns)
    stop_words: bool = True     # drop function words from lexical queries (faster, sharper)
    stem_prefix: bool = True    # "painting" also matches "paint"* (query-side stemming)
    agreement: float = 0.1      # +10 % per extra channel that found the same turn
    threshold: float = 0.0      # keep results ≥ ratio × best score (packets use a higher one)
    # evidence from a turn's session and neighbours
    session_weight: float = 3.0   # × 1/(k + rank of the turn's session): good sessions lift their turns
    session_source: str = "auto"  # "okapi" (session documents, exact) | "turns" (aggregate turn hits) |
                                  # "auto" (okapi for scopes ≤ OKAPI_SESSION_MAX turns: cheap to rebuild)
    unnamed_vectors: bool = True  # vector channels embed the query without the transcript speakers it names
                                  # (search.vector_query; LoCoMo dev sessions 92.6 → 95.1)
    session_date_days: float = 7.0  # a day the query names ("on 3 June, 2023") ranks the sessions this near
                                    # it (a week either side); 0 = off
    neighbour_weight: float = 0.3  # × best neighbour's score: the reply after a question holds the answer
    # diversity
    mmr_lambda: float = 1.0     # 1 = pure relevance order
    session_cap: int = 0        # max results per session (0 = no cap)
    # boosts (multiplicative, reported per result)
    recency_weight: float = 0.1
    half_life_days: float = 30.0
    importance_weight: float = 0.2
    failed_penalty: float = 0.0
    speaker_boost: float = 1.3  # chat transcripts ("Name: …"): the one person the query names spoke it
    min_vector_sim: float = 0.0  # vector hits below this cosine are dropped
    vector_related: bool = False  # … and those not clearly closer than the owner's typical memory
                                  # (embed.related_margin: calibrated per model)
    vector_floor: float = 0.5    # … and those below this × the best hit's cosine (nearest ≠ related)
    min_coverage: float = 0.0    # a turn only words found must hold this share of the query's word
                                 # weight (IDF), or it is dropped (channels.coverage; packets: 0.25)
    # direct hits first (recall/direct.py): evidence from a session or a neighbour never lifts a turn
    # above a direct word hit of which it holds less than this share of the query's word weight
    guard_ratio: float = 0.5  # 0 = off
    floor: float = 0.2  # a result needs a reason: this share of the query's word weight, a vector
                        # over the related margin, a structural / entity / time hit, or a related
                        # session-mate or neighbour (0 = off; packets gate harder, see PACKET)

    def with_(self, **kw: Any) -> RecallConfig:
        return replace(self, **kw)

    def only(self, *channels: str) -> RecallConfig:
        return replace(self, weights={c: self.weights.get(c, 1.0) or 1.0 for c in channels})

    def active(self) -> list[str]:
        return [c for c in CHANNELS if self.weights.get(c, 0) > 0]

    def describe(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["weights"] = {k: v for k, v in self.weights.items() if v}
        return d


DEFAULT = RecallConfig()

# Packets for an agent: fewer, more diverse, clearly relevant items.
# A vector hit must stand out from the owner's typical memory by its model's margin (nearest is not
# the same as related; embed.RELATED_MARGIN).
# A turn only the word channels found must share enough of the prompt's weight: one common word
# ("set up …", "time") is not a reason to show a memory (python -m remem.bench.packet_gate: 0.25 keeps 92 % of
# the LoCoMo evidence that only words found, and none of what unrelated coding prompts pulled in).
# The search floor is off here: these gates are stricter, and evidence alone never enters a packet.
# 40 candidates a channel (search keeps 60): a packet holds at most ten, and its gates drop most of
# the rest; real-shaped turn_start at 100k −11 % (p95), LoCoMo evidence in packets 71.2 → 71.3 %
# (bench/RESULTS.md, session 24).
PACKET = DEFAULT.with_(threshold=0.35, mmr_lambda=0.75, session_cap=2, failed_penalty=0.3, vector_related=True,
                       min_coverage=0.25, floor=0.0, pool=40)

_PLAIN = dict(session_weight=0.0, neighbour_weight=0.0, agreement=0.0, recency_weight=0.0,
              importance_weight=0.0, stop_words=False, stem_prefix=False, speaker_boost=1.0,
              unnamed_vectors=False, session_date_days=0.0, guard_ratio=0.0, floor=0.0)

PRESETS: dict[str, RecallConfig] = {
    "default": DEFAULT,
    "packet": PACKET,
    # SQLite FTS5 bm25 alone, every word kept: the product's plain lexical floor
    "bm25": DEFAULT.only("bm25").with_(**_PLAIN),
    # exact Okapi BM25 with scope statistics and session documents: reproduces the reference script
    "bm25-reference": DEFAULT.only("bm25").with_(lexical="okapi", session_source="okapi", **_PLAIN),
    "vector": DEFAULT.only("vector").with_(**_PLAIN),
    "lexical": DEFAULT.with_(weights={"bm25": 1.0, "substring": 0.3, "entity": 0.4, "time": 0.8}),
}


def preset(name: str) -> RecallConfig:
    """A named configuration; ``only:bm25,vector`` runs just those channels with the defaults."""
    if name.startswith("only:"):
        chans = [c.strip() for c in name[5:].split(",") if c.strip()]
        bad = [c for c in chans if c not in CHANNELS]
        if bad or not chans:
            raise ValueError(f"unknown channel(s) {bad or name}; known: {', '.join(CHANNELS)}")
        return DEFAULT.only(*chans).with_(**_PLAIN)
    if name not in PRESETS:
        raise ValueError(f"unknown recall config {name!r}; known: {', '.join(PRESETS)} or only:CH1,CH2")
    return PRESETS[name]
