"""The recall channels' declarations and the packet gate, in one place.

Every channel declares itself once in ``CHANNEL_SPECS``: its default weight in the fusion, whether
the packet gate applies (a hit of a gated channel can bring a turn into a packet; recency only
ranks what another channel found), its family (``word``: the word channels the word gate checks;
``vector``: the vector channels the related margin checks; ``other``), its layer (``L1``: turns), and
whether a hit is a reason of its own for the search floor. A channel without a spec fails loudly
(:func:`spec`); tests/test_recall_context.py checks every channel of recall/config.py has one.

The packet gate (what ``turn_start``, ``sub_agent`` and ``repair`` let through):

1. the turn was found by a gated channel (:func:`relevant`);
2. a vector hit is clearly closer to the prompt than the owner's typical memory: the related margin
   (:func:`vector_floor`; a vector channel whose best hit fails says :data:`NOT_CLOSE`);
3. a turn only the word channels found holds enough of the prompt's word weight, and a topic word
   when the prompt names one (:func:`covered`, weights from recall/coverage.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import coverage as cov

if TYPE_CHECKING:
    from .config import RecallConfig
    from .context import RecallContext
    from .search import Ranked

FAMILIES = ("word", "vector", "other")


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    name: str
    weight: float        # default weight in reciprocal rank fusion (0: runs only when a config asks)
    gated: bool          # the packet gate applies: a hit of it can bring a turn into a packet
    family: str          # "word" | "vector" | "other"
    layer: str = "L1"    # the memories it searches: L1 = turns
    field: str = ""      # vector channels: the embedded field they search
    reason: bool = False  # a hit is a reason of its own (the search floor: same error, entity, time range)
    why: str = ""        # why the default weight is what it is

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"channel {self.name!r}: family {self.family!r} is not one of {FAMILIES}")
        if (self.family == "vector") != bool(self.field):
            raise ValueError(f"channel {self.name!r}: a vector channel names its field, no other does")


CHANNEL_SPECS: list[ChannelSpec] = [
    ChannelSpec("bm25", 1.0, True, "word", why="words: the strongest single signal on chat data"),
    ChannelSpec("substring", 0.3, True, "word", why="trigram: identifiers and CJK fragments; noisy on prose"),
    ChannelSpec("vector", 0.5, True, "vector", field="summary",
                why="request + summary embedding: meaning beyond shared words"),
    ChannelSpec("vector_actions", 0.3, True, "vector", field="actions",
                why="tool trajectory embedding: what was done"),
    ChannelSpec("structural", 1.5, True, "other", reason=True,
                why="the same error signature is near-certain relevance"),
    ChannelSpec("entity", 0.4, True, "other", reason=True,
                why="shared paths / symbols / names, with bounded expansion"),
    ChannelSpec("time", 0.8, True, "other", reason=True, why="words inside a time range the query names"),
    ChannelSpec("recency", 0.0, False, "other",
                why="as a channel only for experiments: the recency boost does this job"),
]
SPECS: dict[str, ChannelSpec] = {s.name: s for s in CHANNEL_SPECS}


def plugin_channels() -> dict[str, Any]:
    """Channels plugins registered with a ``run`` function (``plugins.ChannelSpec``; the built-ins are
    ``CHANNEL_SPECS`` above). Recall runs them beside the built-ins: ``run(ctx, query_text, scope,
    limit) -> [(turn id, score), ...]``, best first; the scope is re-checked on every id they return.
    Empty when plugins are off (``REMEM_NO_PLUGINS=1``)."""
    from .. import plugins

    if not plugins.third_party():
        return {}
    return {n: s for n, s in plugins.recall_channels().items()
            if n not in SPECS and callable(getattr(s, "run", None))}


def spec(name: str) -> ChannelSpec:
    """The declaration of channel ``name``; a channel without one is an error, never silently ungated."""
    got = SPECS.get(name)
    if got is None and name not in SPECS:
        ps = plugin_channels().get(name)
        if ps is not None:   # a plugin's channel: its declared weight, gate and layer (no vector margin)
            return ChannelSpec(name, float(ps.weight), bool(ps.gated),
                               ps.family if ps.family != "vector" else "other", layer=ps.layer)
    if got is None:
        raise ValueError(f"recall channel {name!r} has no ChannelSpec in recall/gate.py CHANNEL_SPECS "
                         f"(its weight, whether the packet gate applies, its family and layer)")
    return got


def family(name: str) -> str:
    return spec(name).family


WORD_CHANNELS = frozenset(s.name for s in CHANNEL_SPECS if s.family == "word")
VECTOR_CHANNELS = frozenset(s.name for s in CHANNEL_SPECS if s.family == "vector")
VECTOR_FIELDS = {s.name: s.field for s in CHANNEL_SPECS if s.family == "vector"}
REASONS = frozenset(s.name for s in CHANNEL_SPECS if s.reason)
GATED = frozenset(s.name for s in CHANNEL_SPECS if s.gated)

NOT_CLOSE = "nothing close enough"  # a vector channel's reason when the packet's gate kept none of its hits


def relevant(channels: Iterable[str]) -> bool:
    """Something other than recency found it: one of ``channels`` (that found a turn) is gated."""
    return any(spec(c).gated for c in channels)


def vector_floor(hits: list[tuple[str, float]], cfg: RecallConfig, related: float | None) -> float:
    """The cosine a vector hit must reach: ``min_vector_sim``, ``vector_floor`` × the best hit, and (with
    ``vector_related``, the packets) the related margin over the owner's typical memory."""
    floor = max(cfg.min_vector_sim, cfg.vector_floor * hits[0][1] if hits else 0.0)
    if related is not None and cfg.vector_related:
        floor = max(floor, related)
    return floor


def own_channels(ranked: Ranked, t: str) -> set[str]:
    """The channels that found ``t`` by the query itself: an entity hit only through an entity the
    query's ones co-occur with ("CI" next to test_retry_backoff) does not count."""
    chans = set(ranked.details.get(t, {}).get("channels", {}))
    ent = ranked.channels.get("entity")
    if "entity" in chans and ent is not None and ent.own is not None and t not in ent.own:
        chans.discard("entity")
    return chans


def covered(ctx: RecallContext, ranked: Ranked, order: list[tuple[str, float]], rows: dict[str, dict[str, Any]],
            least: float) -> list[tuple[str, float]]:
    """``order`` without the turns only the word channels found that hold less than ``least``
    of the prompt's word weight, or none of its topic words when it has some (coverage.topic_words;
    each checked one shows its coverage in its details, every one the words it matched)."""
    from .search import words_text

    q = ranked.query
    terms = cov.terms(q)
    n, df = ctx.text.doc_freqs(terms)
    weights = cov.weights(terms, n, df)
    topics = cov.topic_words(terms)
    total = cov.top_weight(weights, terms)
    match = cov.Matcher(terms)
    keep = []
    for t, s in order:
        if t not in rows:
            continue
        hit = ranked.full_words.get(t)
        if hit is None:  # not read whole by the ranking's guard
            hit = match(words_text(rows[t]))
        d = ranked.details.setdefault(t, {})
        d["matched"] = hit  # --explain shows them
        if own_channels(ranked, t) <= WORD_CHANNELS:
            c = cov.share(q, hit, weights, terms, total)
            d.setdefault("evidence", {})["coverage"] = round(c, 3)
            # a prompt that names a topic ("staging kubeconfig") is not answered by a memory sharing
            # only its other words ("kept")
            if c < least or (topics and not topics & set(hit)):
                continue
        keep.append((t, s))
    return keep
