"""Layering rules: store/ knows nothing of HTTP; the hook runtime and model types stay light."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "remem"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_store_has_no_web_or_model_imports():
    for f in (SRC / "store").rglob("*.py"):
        bad = _imports(f) & {"fastapi", "starlette", "uvicorn", "numpy", "click", "mcp"}
        assert not bad, f"{f.name} imports {bad}"


def test_light_modules_import_without_numpy():
    code = ("import sys; import remem.model, remem.scope, remem.agents, remem.ingest.redact, "
            "remem.text.segment, remem.store; "
            "assert 'numpy' not in sys.modules, 'numpy imported'; assert 'jieba' not in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_no_module_is_a_god_file():
    for f in SRC.rglob("*.py"):
        n = len(f.read_text(encoding="utf-8").splitlines())
        assert n <= 700, f"{f.relative_to(SRC)} has {n} lines; split it"


# -- the storage boundary ----------------------------------------------------------------------
# SQL, sqlite3 and FTS5 syntax live in store/ only; the readers of agents' own SQLite files are the
# one exception (they read another program's database, not remem's).
AGENT_FILE_READERS = {"sources/cursor.py", "sources/opencode.py", "sources/hermes.py", "sources/openclaw.py",
                      "sources/base.py"}
TEXT_DATA = {"server/testing.py"}  # example turns for demos: their tool calls quote SQL as text
SQL_WORDS = re.compile(r"\b(SELECT\s+\S|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|PRAGMA\s+\w"
                       r"|CREATE\s+(VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)|BEGIN\s+IMMEDIATE|VACUUM|\bMATCH\s+\?"
                       r"|bm25\(|embed_state\s*=)")


def _sql_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        if isinstance(node, ast.Import) and any(a.name == "sqlite3" for a in node.names):
            found.append(f"line {node.lineno}: import sqlite3")
        elif isinstance(node, ast.ImportFrom) and node.module == "sqlite3":
            found.append(f"line {node.lineno}: from sqlite3")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_WORDS.search(node.value):
            found.append(f"line {node.lineno}: {node.value.strip()[:60]!r}")
        elif isinstance(node, ast.Attribute) and node.attr in ("execute", "executemany", "executescript"):
            found.append(f"line {node.lineno}: .{node.attr}(")
    return found


def test_no_sql_outside_the_store():
    offenders = {}
    for f in sorted(SRC.rglob("*.py")):
        rel = f.relative_to(SRC).as_posix()
        if rel.startswith("store/") or rel in AGENT_FILE_READERS or rel in TEXT_DATA:
            continue
        uses = _sql_uses(f)
        if uses:
            offenders[rel] = uses[:3]
    assert not offenders, "SQL outside store/ (move it behind a store protocol):\n" + "\n".join(
        f"  {k}: {v}" for k, v in offenders.items())


# -- the plugin contract -----------------------------------------------------------------------

def test_every_registered_channel_declares_its_gate():
    """No channel without a spec: each one recall can run is registered with a gate, family, weight
    and layer (a channel missing from the gate used to never reach a packet, silently)."""
    from remem import plugins
    from remem.recall.config import CHANNELS, DEFAULT

    specs = plugins.recall_channels()
    assert set(CHANNELS) <= set(specs), f"channels without a spec: {set(CHANNELS) - set(specs)}"
    assert set(DEFAULT.weights) <= set(specs)
    for name, spec in specs.items():
        assert spec.name == name
        assert isinstance(spec.gated, bool), f"{name}: does the packet gate apply?"
        assert spec.family in plugins.FAMILIES and spec.layer and isinstance(spec.weight, int | float), name
    assert plugins.problems() == []


def test_every_extension_point_is_a_hook():
    from remem import hookspecs, plugins

    assert sorted(hook for hook, *_ in plugins.KINDS.values()) == sorted(hookspecs.spec_names())


def test_the_hook_path_never_loads_the_plugin_manager():
    code = ("import sys; import remem.hook, remem.integrations.runtime, remem.integrations, remem.sources, "
            "remem.plugins; assert 'pluggy' not in sys.modules, 'pluggy imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# -- the hook stays light ------------------------------------------------------------------------
class _FakeDaemon:
    """Answers the hook's two daemon calls (recall, capture) as the real daemon would."""

    def __init__(self) -> None:
        import http.server
        import json
        import threading

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = {"text": "", "items": []} if "recall" in self.path else {"results": []}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: object) -> None:
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


def test_the_hook_path_imports_neither_pydantic_nor_yaml(mem, remem_home):
    """The real hook entry (``python …/remem/hook.py``), for a tool event and for a turn start
    answered by the daemon: its settings come from hook-settings.json, so the process never loads
    pydantic or PyYAML (``python -X importtime`` lists every module it imported)."""
    import json
    import os

    mem.config.set("hooks.timeout", "4")            # a setting the hook must see, through the mirror
    daemon = _FakeDaemon()
    (remem_home / "token").write_text("t0ken\n")
    env = {**os.environ, "REMEM_PORT": str(daemon.port), "PYTHONPATH": str(SRC.parent)}
    calls = [("PostToolUse", {"session_id": "s1", "cwd": "/home/alice/shop", "tool_name": "Bash",
                              "tool_input": {"command": "pytest -x"}, "tool_response": {"stdout": "1 failed"}}),
             ("UserPromptSubmit", {"session_id": "s1", "cwd": "/home/alice/shop",
                                   "prompt": "Why does test_retry_backoff time out on CI?"})]
    try:
        for event, payload in calls:
            r = subprocess.run([sys.executable, "-X", "importtime", str(SRC / "hook.py"), "claude-code", event],
                               input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60)
            assert r.returncode == 0, r.stderr[-2000:]
            loaded = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
            assert "remem.integrations.runtime" in loaded, event        # the scan sees the hook's modules
            heavy = sorted(m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core", "yaml",
                                                                    "pydantic_settings"))
            assert not heavy, f"{event}: the hook imported {heavy[:5]}"
        log = (remem_home / "logs" / "hooks.log").read_text()
        assert "UserPromptSubmit kind=turn_start via=daemon" in log and "budget=18s" in log, log
    finally:
        daemon.srv.shutdown()


def test_one_cjk_range():
    """The CJK range is defined once (remem/text/cjk.py); everything else imports it."""
    defined = [f.relative_to(SRC).as_posix() for f in SRC.rglob("*.py")
               if f.name != "cjk.py" and re.search(r"\\u4e00|\\u3400|\\u9fff|\u4e00-", f.read_text(encoding="utf-8"))]
    assert not defined, f"a CJK range outside remem/text/cjk.py: {defined}"


def _absolute_imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path`` (a module of ``package``), relative ones resolved,
    ``from X import y`` also as ``X.y``; inside functions too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else [])) if node.level else (node.module or "")
            out += [(node.lineno, mod)] + [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def test_recall_imports_nothing_of_the_facade():
    """recall/ runs on a RecallContext: it never imports remem.core (the façade Remem), at the top or
    lazily inside a function, and never names Remem."""
    for f in sorted((SRC / "recall").rglob("*.py")):
        for line, mod in _absolute_imports(f, "remem.recall"):
            assert mod != "remem.core" and not mod.startswith("remem.core."), \
                f"recall/{f.name} line {line} imports the façade ({mod})"
        assert not re.search(r"\bRemem\b", f.read_text(encoding="utf-8")), f"recall/{f.name} names Remem"
