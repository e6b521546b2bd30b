"""The optional LLM's edges: its settings, one OpenAI-compatible chat request, and the state that
keeps it cheap and calm (daily token budget, cooldown, circuit breaker), persisted in REMEM_HOME.

Nothing here runs unless ``learn.llm.base_url`` is set (:func:`configured` is None otherwise), and
nothing is sent anywhere but that URL. The API key goes only into the request's Authorization header:
it is never logged, never in an error message, never in the state file. The state file
(``learn-llm.json``, mode 0600) holds counters and times only, plus a short log of replies that named
ids the request did not carry (the id, verdict and length, never their text: it could quote a turn
the user forgets later), so a restart resets neither the day's budget nor an open breaker. Standard
library only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STATE_FILE = "learn-llm.json"
STRAYS_KEPT = 20            # replies naming unknown ids, newest kept for review
REPLY_TOKENS = 1024         # max_tokens of a reply: a batch's verdicts fit easily


@dataclass(frozen=True, slots=True)
class LlmSettings:
    """``learn.llm.*`` as the learn job uses them (``repr`` never shows the key)."""

    base_url: str
    model: str = ""
    api_key: str = field(default="", repr=False)
    daily_tokens: int = 50_000
    timeout: float = 30.0
    batch_size: int = 8
    max_requests: int = 8
    cooldown: float = 300.0
    failures: int = 3
    breaker: float = 3600.0

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"


def configured(mem: Any) -> LlmSettings | None:
    """The LLM's settings from a remem handle's config, or None when ``learn.llm.base_url`` is empty."""
    base = str(mem.config.get("learn.llm.base_url") or "").strip()
    if not base:
        return None
    return LlmSettings(base_url=base, model=str(mem.config.get("learn.llm.model") or ""),
                       api_key=str(mem.config.get("learn.llm.api_key") or ""),
                       daily_tokens=int(mem.config.get("learn.llm.daily_tokens")),
                       timeout=float(mem.config.get("learn.llm.timeout_seconds")),
                       batch_size=int(mem.config.get("learn.llm.batch_size")),
                       max_requests=int(mem.config.get("learn.llm.max_requests")),
                       cooldown=float(mem.config.get("learn.llm.cooldown_seconds")),
                       failures=int(mem.config.get("learn.llm.failures")),
                       breaker=float(mem.config.get("learn.llm.breaker_seconds")))


class LlmFailure(Exception):
    """A request that did not give a usable answer: a timeout, a refused connection, an HTTP error,
    or a body that is not a chat completion. ``retry_after`` when the server asked for a pause."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(slots=True)
class Reply:
    content: str
    tokens: int | None          # the server's usage.total_tokens, when it reports one


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "********") if secret else text


def chat(s: LlmSettings, messages: list[dict[str, str]]) -> Reply:
    """One chat completion (JSON, not streamed). Raises :class:`LlmFailure`."""
    import urllib.error  # here, not at the top: listing learned memories need not load it
    import urllib.request

    payload = {"model": s.model, "messages": messages, "temperature": 0, "max_tokens": REPLY_TOKENS,
               "response_format": {"type": "json_object"}}
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if s.api_key:
        headers["Authorization"] = f"Bearer {s.api_key}"
    req = urllib.request.Request(s.url, data=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
                                 headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=s.timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        after = e.headers.get("Retry-After") if e.headers else None
        try:
            wait = float(after) if after else None
        except ValueError:
            wait = None
        raise LlmFailure(f"HTTP {e.code}", retry_after=wait) from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise LlmFailure(_scrub(f"{e.__class__.__name__}: {reason}"[:200], s.api_key)) from None
    try:
        body = json.loads(raw)
        content = body["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("content is not text")
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise LlmFailure(f"not a chat completion ({e.__class__.__name__})") from None
    usage = body.get("usage") if isinstance(body, dict) else None
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    return Reply(content, int(tokens) if isinstance(tokens, (int, float)) and tokens >= 0 else None)


# -- the state that survives restarts ---------------------------------------------------------

def day_of(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


@dataclass(slots=True)
class State:
    """The day's spending and the breaker, as plain values (``learn-llm.json``)."""

    day: str = ""
    tokens: int = 0             # spent on ``day`` (UTC)
    requests: int = 0           # made on ``day``
    failures: int = 0           # consecutive
    open_until: float = 0.0     # the breaker is open until then
    next_at: float = 0.0        # cooldown: no pass asks before then
    last_error: str = ""
    strays: list[dict[str, Any]] = field(default_factory=list)

    def roll(self, now: float) -> None:
        """A new UTC day starts a new budget."""
        today = day_of(now)
        if self.day != today:
            self.day, self.tokens, self.requests = today, 0, 0

    def blocked(self, s: LlmSettings, now: float) -> str:
        """Why no request may be made now ("" = one may)."""
        self.roll(now)
        if self.open_until > now:
            return "breaker"
        if self.next_at > now:
            return "cooldown"
        if self.tokens >= s.daily_tokens:
            return "budget"
        return ""

    def spend(self, tokens: int) -> None:
        self.tokens += max(0, int(tokens))
        self.requests += 1
        self.failures, self.last_error = 0, ""

    def fail(self, s: LlmSettings, now: float, why: str, retry_after: float | None = None) -> bool:
        """Count a failure; True when it opens the breaker (after ``s.failures`` in a row, or at once
        when a half-open try fails)."""
        self.failures += 1
        self.last_error = why[:200]
        if retry_after:
            self.next_at = max(self.next_at, now + min(float(retry_after), s.breaker))
        if self.failures >= s.failures:
            self.open_until = now + s.breaker
            return True
        return False

    def stray(self, entry: dict[str, Any]) -> None:
        self.strays = (self.strays + [entry])[-STRAYS_KEPT:]


def load_state(home: Path) -> State:
    try:
        data = json.loads((home / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return State()
    if not isinstance(data, dict):
        return State()
    known = {k: data[k] for k in State.__dataclass_fields__ if k in data}
    try:
        st = State(**known)
        st.tokens, st.requests, st.failures = int(st.tokens), int(st.requests), int(st.failures)
        st.open_until, st.next_at = float(st.open_until), float(st.next_at)
        st.strays = [e for e in st.strays if isinstance(e, dict)] if isinstance(st.strays, list) else []
    except (TypeError, ValueError):
        return State()
    return st


def save_state(home: Path, st: State) -> None:
    """Atomically replace the state file (0600)."""
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f".{STATE_FILE}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(asdict(st), f, ensure_ascii=False, sort_keys=True)
    os.replace(tmp, home / STATE_FILE)


@contextlib.contextmanager
def state_lock(home: Path) -> Iterator[None]:
    """One pass at a time per home (the daemon's learn job and a `remem learn` in a terminal), so
    two passes never spend the same budget twice. Where ``fcntl`` is missing, passes are not locked."""
    try:
        import fcntl
    except ImportError:   # pragma: no cover - Windows
        yield
        return
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(home / f".{STATE_FILE}.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


Clock = Callable[[], float]
