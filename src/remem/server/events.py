"""In-process event bus: worker threads publish, SSE streams on the event loop subscribe.

Events are small JSON snapshots (a job's whole state, not a delta), so a slow subscriber that
misses some loses nothing: the next snapshot carries the same information.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

QUEUE_SIZE = 500          # per subscriber; snapshots make dropping intermediate events harmless
HEARTBEAT_SECONDS = 15.0  # below common proxy idle timeouts; keeps dead connections detectable


class EventBus:
    def __init__(self) -> None:
        self._subs: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]]]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)
        self.closed = False

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        """Thread-safe: hand ``data`` to every subscriber's loop."""
        ev = {"event": kind, "id": next(self._seq), "ts": time.time(), "data": data}
        with self._lock:
            subs = list(self._subs.values())
        for loop, q in subs:
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(_offer, q, ev)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
        q: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_SIZE)
        sid = next(self._ids)
        with self._lock:
            self._subs[sid] = (asyncio.get_running_loop(), q)
        try:
            yield q
        finally:
            with self._lock:
                self._subs.pop(sid, None)

    def close(self) -> None:
        """Ask every stream to end (daemon shutdown)."""
        self.closed = True
        self.publish("shutdown", {})


def _offer(q: asyncio.Queue[dict[str, Any]], ev: dict[str, Any]) -> None:
    if q.full():
        with contextlib.suppress(asyncio.QueueEmpty):
            q.get_nowait()
    q.put_nowait(ev)


def format_sse(ev: dict[str, Any]) -> bytes:
    """One Server-Sent Events frame."""
    data = json.dumps(ev["data"], ensure_ascii=False, default=str)
    return f"id: {ev['id']}\nevent: {ev['event']}\ndata: {data}\n\n".encode()


async def stream(bus: EventBus, first: list[dict[str, Any]], is_disconnected: Any,
                 should_exit: Any = lambda: False) -> AsyncIterator[bytes]:
    """The byte stream of ``/api/v1/events``: a snapshot, then live events and heartbeats.

    Ends when the client goes away or the daemon shuts down (checked twice a second, so a
    stop never waits on open viewers)."""
    async with bus.subscribe() as q:
        yield b"retry: 2000\n\n"
        for ev in first:
            yield format_sse(ev)
        quiet = 0.0
        while not bus.closed and not should_exit():
            try:
                ev = await asyncio.wait_for(q.get(), timeout=0.5)
            except TimeoutError:
                quiet += 0.5
                if quiet >= HEARTBEAT_SECONDS:
                    quiet = 0.0
                    if await is_disconnected():
                        return
                    yield b": ping\n\n"
                continue
            quiet = 0.0
            if ev["event"] == "shutdown":
                return
            yield format_sse(ev)
