"""The light entry point agents call: ``python …/remem/hook.py [--home DIR] AGENT EVENT``
(``python -m remem.hook …`` works the same, a little slower).

It reads the hook JSON on stdin — with a deadline: an agent that never closes stdin costs at most
a few seconds, then the hook fails open — prints the agent's answer (or nothing) and always exits 0. Run as a
file, it makes ``remem`` a bare package before importing anything, so ``remem/__init__.py`` (which
loads the whole core library) is not executed: the hook imports only the standard library and the
modules it uses — no click, numpy, jieba, FastAPI or model. ``remem hook AGENT EVENT`` does the
same through the full CLI.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

USAGE = "usage: python -m remem.hook [--home DIR] AGENT EVENT  (hook JSON on stdin)\n"
STDIN_SECONDS = 5.0   # at most this long for the agent to send its JSON (the hook timeout if shorter, ≥ 1 s)
WATCHDOG_GRACE = 1.0  # seconds past the budget before the process is ended from a thread
IDLE_SECONDS = 0.25   # stdin left open: a whole JSON document followed by this much silence is the input


def stdin_seconds(env: dict[str, str] | os._Environ[str], home: str | None = None) -> float:
    """How long to wait for the payload: the hook timeout (``REMEM_HOOK_TIMEOUT``, else
    ``hooks.timeout``) when shorter than STDIN_SECONDS, never under 1 s."""
    from remem.integrations.runtime import hook_home, request_timeout

    try:
        return max(1.0, min(STDIN_SECONDS, request_timeout(hook_home(home, env), env)))
    except Exception:  # noqa: BLE001 - fail open: the default wait
        return STDIN_SECONDS


def read_input(stream: object, seconds: float) -> bytes | None:
    """The hook's stdin, read with a deadline. Returns everything up to EOF; or, when the agent
    leaves stdin open, what arrived once it is a whole JSON document and nothing more came for
    IDLE_SECONDS; or None when neither happened within ``seconds`` (the caller fails open)."""
    import json
    import time

    try:
        if stream is None or stream.isatty():  # type: ignore[attr-defined]
            return b""
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return b""
    try:
        import select

        select.select([fd], [], [], 0)
    except (ImportError, OSError, ValueError):   # no select() on this stream (Windows pipes)
        return _read_in_thread(stream, seconds)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], min(left, IDLE_SECONDS) if chunks else left)
        if not ready:
            if chunks and _whole_json(b"".join(chunks), json):
                return b"".join(chunks)
            continue
        try:
            got = os.read(fd, 1 << 20)
        except OSError:
            return b"".join(chunks)
        if not got:
            return b"".join(chunks)
        chunks.append(got)
    data = b"".join(chunks)
    return data if data and _whole_json(data, json) else None


def _whole_json(data: bytes, json: object) -> bool:
    try:
        json.loads(data)  # type: ignore[attr-defined]
    except ValueError:
        return False
    return True


def _read_in_thread(stream: object, seconds: float) -> bytes | None:
    import threading

    box: list[bytes] = []

    def pull() -> None:
        try:
            box.append(stream.buffer.read())  # type: ignore[attr-defined]
        except (OSError, ValueError):
            box.append(b"")

    t = threading.Thread(target=pull, daemon=True)
    t.start()
    t.join(seconds)
    return box[0] if box else None


def _bare_package() -> None:
    import types

    pkg = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == pkg:
        sys.path[0] = os.path.dirname(pkg)        # never let remem's modules shadow top-level ones
    if "remem" not in sys.modules:
        mod = types.ModuleType("remem", "remem (bare package for the hook process)")
        mod.__path__ = [pkg]
        mod.__file__ = os.path.join(pkg, "__init__.py")
        sys.modules["remem"] = mod


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    home = None
    if len(args) >= 2 and args[0] == "--home":
        home = args[1]
        args = args[2:]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)
        return 0
    agent, event = args[0], args[1]
    seconds = stdin_seconds(os.environ, home)
    data = read_input(sys.stdin, seconds)
    from remem.integrations.runtime import budget_seconds, hook_home, no_input, out_of_time, run

    budget = budget_seconds(os.environ, hook_home(home, os.environ))
    once = _watchdog(budget + WATCHDOG_GRACE, lambda: out_of_time(agent, event, budget, home=home))
    out = run(agent, event, data, home=home) if data is not None else no_input(agent, event, seconds, home=home)
    if once():
        _print(out)
    return 0


def _print(out: str) -> None:
    if out:
        try:
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def _watchdog(seconds: float, answer: Callable[[], str]) -> Callable[[], bool]:
    """The budget's SIGALRM runs only between Python bytecodes, so a call stuck in C (SQLite's busy
    wait on a locked database lasts 30 s) would outlive it: this thread prints the fail-open answer
    and ends the process ``seconds`` in. Returns a function the main thread calls before printing
    its own answer: True if it may (the watchdog has not fired and now never will)."""
    import threading

    lock = threading.Lock()
    state = {"done": False}

    def claim() -> bool:
        with lock:
            first = not state["done"]
            state["done"] = True
            return first

    def fire() -> None:
        if claim():
            _print(answer())
            os._exit(0)

    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return claim


if __name__ == "__main__":
    if not __package__:
        _bare_package()
    code = main()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)   # skip interpreter teardown: the answer is out, the agent is waiting
