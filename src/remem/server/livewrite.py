"""Live captures that do not wait for a busy database.

A hook's turn-start capture (the request stored before the agent answers, so an unfinished turn is not
lost) used to wait for SQLite's write lock inside the hook: while an import or a sync wrote a batch,
the agent waited up to a second for a write whose answer the hook never reads. The daemon now writes
captures through one ``LiveWriter``: a capture is written at once when the lock is free; when another
writer holds it, the capture waits in this queue — in arrival order, written by one thread — and a
caller that asked not to wait gets its answer now.

Order is kept: while anything waits here, every later capture queues behind it (a turn's end must
not be overtaken by its own opening capture; the store also never lets an opening capture reopen a
finished turn). A caller that waits gets the results of its own write. On shutdown the queue is
written out before the database closes. A daemon killed with ``kill -9`` while the lock was busy
loses what its queue held: captures that did not ask to wait (a turn's opening capture: the turn's
end writes the whole turn again), and captures whose callers were still waiting (they get no answer,
and the hook then writes the turn to the database itself) — never a finished turn.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..store.errors import Locked, StoreError

if TYPE_CHECKING:
    from ..core import Remem
    from ..ingest.pipeline import BatchResult
    from ..model import TurnIn

log = logging.getLogger("remem.daemon")
RETRY_SECONDS = 0.5   # a queued write that failed (not for the lock) is tried again after this …
MAX_TRIES = 5         # … this many times, then dropped with an error in the log


@dataclass
class _Ticket:
    turns: list[TurnIn]
    live: bool
    done: threading.Event = field(default_factory=threading.Event)
    result: BatchResult | None = None
    error: BaseException | None = None


class LiveWriter:
    def __init__(self, mem: Remem) -> None:
        self.mem = mem
        self._queue: deque[_Ticket] = deque()
        self._cond = threading.Condition()
        self._writing = False          # the worker holds a ticket it took off the queue
        self._closing = False
        self._thread: threading.Thread | None = None
        self.queued_total = 0          # captures that met a busy database (status, tests)

    def write(self, turns: list[TurnIn], *, live: bool = True, wait: bool = True) -> BatchResult | None:
        """Write ``turns`` now if the lock is free. Otherwise queue them behind what waits already;
        ``wait`` True blocks until they are written and returns the result (or raises the write's
        error), False returns None at once (the turns are written in order as soon as the lock frees)."""
        with self._cond:
            if not self._queue and not self._writing and not self._closing:
                try:
                    return self.mem.add_turns(turns, live=live, wait=False)
                except Locked:
                    pass
            ticket = _Ticket(turns, live)
            self._queue.append(ticket)
            self.queued_total += 1
            self._ensure_worker()
            self._cond.notify_all()
        if not wait:
            return None
        ticket.done.wait()
        if ticket.error is not None:
            raise ticket.error
        return ticket.result

    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + (1 if self._writing else 0)

    def status(self) -> dict[str, int]:
        """What ``/status`` shows: captures waiting now, and how many met a busy database since start."""
        return {"queued_now": self.pending(), "queued_since_start": self.queued_total}

    def close(self, timeout: float = 30.0) -> int:
        """Write out what waits (up to ``timeout`` seconds), then stop. Returns how many captures were
        left unwritten (0 unless the database stayed locked the whole time)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        left = self.pending()
        if left:
            log.error("shutdown: %d live capture(s) could not be written (the database stayed locked)", left)
        return left

    # -- the worker -----------------------------------------------------------------------------
    def _ensure_worker(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="remem-live-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._closing:
                        self._cond.wait(60.0)
                        if not self._queue and not self._closing:
                            self._thread = None      # idle a minute: the next queued capture starts one
                            return
                    if not self._queue:
                        return
                    ticket = self._queue.popleft()
                    self._writing = True
                try:
                    self._write(ticket)
                finally:
                    with self._cond:
                        self._writing = False
                        self._cond.notify_all()
        finally:
            self.mem.store.release()     # this thread's connection only

    def _write(self, ticket: _Ticket) -> None:
        for attempt in range(1, MAX_TRIES + 1):
            try:
                ticket.result = self.mem.add_turns(ticket.turns, live=ticket.live)   # waits for the lock
                break
            except Exception as e:  # noqa: BLE001 - reported to the waiting caller, or logged
                if not isinstance(e, StoreError) or attempt == MAX_TRIES or self._closing:
                    ticket.error = e
                    log.error("a queued live capture of %d turn(s) was not written: %s", len(ticket.turns), e)
                    break
                time.sleep(RETRY_SECONDS * attempt)
        ticket.done.set()

