"""Layering rules: store/ knows nothing of HTTP; the hook runtime and model types stay light."""

from __future__ import annotations

import ast
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
            "remem.index.text, remem.store; "
            "assert 'numpy' not in sys.modules, 'numpy imported'; assert 'jieba' not in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_no_module_is_a_god_file():
    for f in SRC.rglob("*.py"):
        n = len(f.read_text(encoding="utf-8").splitlines())
        assert n <= 700, f"{f.relative_to(SRC)} has {n} lines; split it"
