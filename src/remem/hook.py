"""``python -m remem.hook [--home DIR] AGENT EVENT`` — the light entry point agents call.

It imports only the standard library and remem's light modules (no click, numpy, jieba or
model), reads the hook JSON on stdin, prints the agent's answer (or nothing) and always exits 0.
``remem hook AGENT EVENT`` does the same through the full CLI.
"""

from __future__ import annotations

import os
import sys

USAGE = "usage: python -m remem.hook [--home DIR] AGENT EVENT  (hook JSON on stdin)\n"


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
    from .integrations.runtime import run

    out = run(agent, event, data, home=home)
    if out:
        try:
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    return 0


if __name__ == "__main__":
    code = main()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)   # skip interpreter teardown: the answer is out, the agent is waiting
