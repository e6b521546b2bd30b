"""The light entry point agents call: ``python …/remem/hook.py [--home DIR] AGENT EVENT``
(``python -m remem.hook …`` works the same, a little slower).

It reads the hook JSON on stdin, prints the agent's answer (or nothing) and always exits 0. Run as a
file, it makes ``remem`` a bare package before importing anything, so ``remem/__init__.py`` (which
loads the whole core library) is not executed: the hook imports only the standard library and the
modules it uses — no click, numpy, jieba, FastAPI or model. ``remem hook AGENT EVENT`` does the
same through the full CLI.
"""

from __future__ import annotations

import os
import sys

USAGE = "usage: python -m remem.hook [--home DIR] AGENT EVENT  (hook JSON on stdin)\n"


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
    try:
        data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
    except (OSError, ValueError):
        data = b""
    from remem.integrations.runtime import run

    out = run(agent, event, data, home=home)
    if out:
        try:
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    return 0


if __name__ == "__main__":
    if not __package__:
        _bare_package()
    code = main()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)   # skip interpreter teardown: the answer is out, the agent is waiting
