"""Preparing turns in worker processes while the writer writes: how a large import uses more than one core.

Most of an import's time is the pure part of the pipeline (``pipeline.prepare``: redaction, CJK
segmentation; then entity extraction), ~60 % of a real-shaped import's CPU, and it holds the
interpreter lock. A sync (``Remem.import_workers``) keeps a few worker processes for its whole
run; ``persist`` hands them the turns of a large write in chunks and writes each chunk's rows, in
order, as they come back; until the workers are up, the writer prepares alone. (The writer helping
the workers with chunks of their own was tried: on two cores it then had the most of them and wrote
later: 410–531 turns/s against 561–601 with a writer that only waits and writes.) Small writes (hooks, the CLI, the REST API) never touch the pool.

The CLI (one thread) forks its workers at once, with jieba's dictionary (~0.6 s to load) already
loaded when the import holds Chinese, so they share it; a process with other threads (the daemon)
does not fork itself: its workers come from a ``forkserver`` started in the background that has
imported the pipeline and loaded the dictionary once. Workers run at a lower priority.
Preparing is pure, so a chunk whose worker died is prepared again here: a broken pool costs time,
never turns. The rows are the ones the serial path makes (tests/test_import_workers.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:   # concurrent.futures' process pool is imported when one starts: the hook never pays for it
    from concurrent.futures import Future, ProcessPoolExecutor

    from ..model import TurnIn
    from ..store.rows import TurnRow
    from .pipeline import WriteResult

# a write of fewer turns is prepared in the writer: a pool's start (~1 s) would cost more than it saves
MIN_TURNS = 64
CHUNK = 24           # turns per task: the writer gets its first rows soon, a task's overhead stays small
IN_FLIGHT = 2        # chunks sent ahead per worker, so none waits for the writer
MAX_WORKERS = 4

Prepared = tuple["TurnRow | None", "WriteResult | None", "list[tuple[str, str]] | None"]


def auto_workers(setting: int) -> int:
    """Worker processes for ``ingest.workers``: -1 = one per core (at most four; none on a one-core
    machine), 0 = none (the writer prepares alone), N = that many."""
    if setting >= 0:
        return setting
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 0 if cores < 2 else min(MAX_WORKERS, cores)


_HELD: set[int] = set()   # lock files this process holds (flock): a forked worker closes its copies


def _drop_held() -> None:
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_drop_held)


@contextlib.contextmanager
def held_lock(fd: int) -> Iterator[None]:
    """While inside, a process forked from this one closes ``fd`` at once: an ``flock`` belongs to the
    open file, so a worker keeping its copy would hold the lock after its parent was killed."""
    _HELD.add(fd)
    try:
        yield
    finally:
        _HELD.discard(fd)


def _worker_init(parent: int | None) -> None:
    """A worker yields to the writer (and, in the daemon, to the hooks' requests), and dies with its
    parent: the writer killed (kill -9) leaves no worker behind."""
    try:
        os.nice(5)
    except OSError:  # pragma: no cover - not allowed here: the same priority is fine
        pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001  # pragma: no cover - no prctl: the check below still holds
            pass
    else:  # pragma: no cover - elsewhere a thread watches for the parent's end
        threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    if parent is not None and os.getppid() != parent:
        os._exit(1)                 # the parent died before the line above


def _watch_parent(ppid: int) -> None:  # pragma: no cover - not Linux
    import time

    while os.getppid() == ppid:
        time.sleep(1.0)
    os._exit(1)


def prepare_one(turn: TurnIn, kw: dict[str, Any], fallback_ts: float | None) -> Prepared:
    """One turn through the pure part of the pipeline, with the entities its stored text names."""
    from ..text.entities import extract, turn_text
    from .pipeline import prepare

    row, res = prepare(turn, fallback_ts=fallback_ts, **kw)
    return row, res, (extract(turn_text(row.request, row.reply, row.actions)) if row is not None else None)


def prepare_chunk(turns: Sequence[TurnIn], fallbacks: Sequence[float | None], kw: dict[str, Any]) -> list[Prepared]:
    return [prepare_one(t, kw, fb) for t, fb in zip(turns, fallbacks, strict=True)]


class PreparePool:
    """Worker processes for one import (``Remem.import_workers``): started on the first large write
    (forked at once, or from a forkserver in the background while the writer prepares alone),
    stopped by ``close``. Thread-safe; a pool that cannot start or breaks is not used again."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._ex: ProcessPoolExecutor | None = None
        self._broken = workers < 1
        self._starting: threading.Thread | None = None
        self._lock = threading.Lock()
        self.chunks = {"workers": 0, "writer": 0}   # who prepared how many chunks (tests, benchmarks)

    def _ready(self, turns: Sequence[TurnIn]) -> ProcessPoolExecutor | None:
        """The executor once its workers are up. The first call starts them: forked from this process
        when it runs no other thread (the CLI; jieba's dictionary loaded first when the import has
        Chinese, so they share it), else from a forkserver in the background (the daemon)."""
        with self._lock:
            if self._broken or self._ex is not None or self._starting is not None:
                return self._ex
            try:
                import multiprocessing as mp

                forkable = threading.active_count() == 1 and "fork" in mp.get_all_start_methods()
                if forkable:
                    from concurrent.futures import ProcessPoolExecutor

                    from ..text.segment import dictionary, has_cjk

                    if any(has_cjk(t.request) or has_cjk(t.reply) for t in turns):
                        dictionary()
                    self._ex = ProcessPoolExecutor(max_workers=self.workers, mp_context=mp.get_context("fork"),
                                                   initializer=_worker_init, initargs=(os.getpid(),))
                    return self._ex
            except Exception:  # noqa: BLE001 - no processes here (a sandbox): the writer prepares alone
                self._broken = True
                return None
            self._starting = threading.Thread(target=self._start, name="remem-prepare-pool", daemon=True)
            self._starting.start()
            return None

    def _start(self) -> None:
        try:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(["remem.ingest._warm"])
            ex = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_worker_init,
                                     initargs=(None,))   # its parent is the forkserver, which ends with us
            ex.submit(int).result()     # the workers are forked by the first task
        except Exception:  # noqa: BLE001 - no processes here (a sandbox): the writer prepares alone
            with self._lock:
                self._broken = True
            return
        with self._lock:
            if self._broken:            # closed while starting
                ex.shutdown(wait=False, cancel_futures=True)
            else:
                self._ex = ex

    def prepare(self, turns: Sequence[TurnIn], kw: dict[str, Any],
                fallbacks: Sequence[float | None]) -> Iterator[Prepared]:
        """The prepared turns in order, as soon as each is ready (``persist`` sends only writes of
        ``MIN_TURNS`` or more)."""
        if self._broken:
            for t, fb in zip(turns, fallbacks, strict=True):
                yield prepare_one(t, kw, fb)
            return
        chunks = [(turns[i : i + CHUNK], fallbacks[i : i + CHUNK]) for i in range(0, len(turns), CHUNK)]
        futures: dict[int, Future[list[Prepared]]] = {}
        sent = 0   # chunks [0, sent) went to the pool or were prepared here

        def send() -> None:
            nonlocal sent
            ex = self._ready(turns)
            while ex is not None and sent < len(chunks) and len(futures) < IN_FLIGHT * self.workers:
                try:
                    futures[sent] = ex.submit(prepare_chunk, *chunks[sent], kw)
                except Exception:  # noqa: BLE001 - the pool broke: the rest is prepared here
                    self._broken = True
                    return
                sent += 1

        try:
            for i, chunk in enumerate(chunks):
                send()
                fut = futures.pop(i, None)
                if fut is None:      # not sent (the pool is starting, or broke): prepared here
                    sent = max(sent, i + 1)
                    yield from self._here(chunk, kw)
                    continue
                try:
                    got = fut.result()
                except Exception as e:  # noqa: BLE001
                    if not _broken_pool(e):
                        raise        # the turn itself is bad (e.g. an empty owner): as serially
                    self._broken = True
                    got = self._here(chunk, kw)
                else:
                    self.chunks["workers"] += 1
                yield from got
        finally:
            for fut in futures.values():
                fut.cancel()

    def _here(self, chunk: tuple[Sequence[TurnIn], Sequence[float | None]], kw: dict[str, Any]) -> list[Prepared]:
        self.chunks["writer"] += 1
        return prepare_chunk(*chunk, kw)

    def close(self) -> None:
        with self._lock:
            ex, self._ex, starting = self._ex, None, self._starting
            self._broken = True         # a start still under way shuts its own executor down
        if starting is not None:
            starting.join()
        if ex is not None:
            ex.shutdown(wait=True, cancel_futures=True)
        if starting is not None:    # the forkserver (~100 MB with the dictionary) leaves with its pool
            try:
                from multiprocessing import forkserver

                getattr(forkserver._forkserver, "_stop", lambda: None)()
            except Exception:  # noqa: BLE001 - a private API of the standard library: best effort
                pass


def _broken_pool(e: BaseException) -> bool:
    from concurrent.futures.process import BrokenProcessPool

    return isinstance(e, (BrokenProcessPool, OSError, EOFError))
