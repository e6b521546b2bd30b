"""Every setting any code reads is declared, validated and documented; every declared one is read
(issue 13, item 12)."""

from __future__ import annotations

import ast
import json
import re

import pytest

from conftest import REPO
from remem import config as configmod

SRC = REPO / "src" / "remem"
DOC = REPO / "docs" / "configuration.md"


def declared(tree: dict = configmod.DEFAULTS, prefix: str = "") -> set[str]:
    """Dotted leaf keys of DEFAULTS (a section whose default is ``{}`` is free-form: one key)."""
    out: set[str] = set()
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out |= declared(v, key + ".")
        else:
            out.add(key)
    return out


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def reads() -> dict[str, list[str]]:
    """Settings keys read in the package: ``<config>.get("a.b")``, ``<config>.values.get("a")`` and a
    chained ``(… .get("a") or {}).get("b")`` on it, ``<config>.values["a"]`` and, in config.py,
    ``self.values["a"]``. A module that names its remem settings ``cfg`` is only scanned when it
    imports remem's config module (installers read agents' own config files as ``cfg``)."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        uses_remem_config = path.name == "config.py" and path.parent == SRC or bool(
            re.search(r"import config as configmod|from \.+config import|from remem\.config import|"
                      r"from \.\. import config|configmod\.", text))
        where = str(path.relative_to(REPO))

        def config_expr(node: ast.expr, *, cfg_ok: bool = uses_remem_config, in_config: bool = path.name ==
                        "config.py") -> bool:
            base = node.value if isinstance(node, ast.Attribute) and node.attr == "values" else node
            if isinstance(base, ast.Attribute) and base.attr == "config":
                return True
            if isinstance(base, ast.Name) and base.id == "cfg":
                return cfg_ok
            if in_config and isinstance(node, ast.Attribute) and node.attr == "values":
                return isinstance(node.value, ast.Name) and node.value.id == "self"
            return False

        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                    and node.args and (lit := _literal(node.args[0])) is not None:
                recv = node.func.value
                if config_expr(recv):
                    key = lit
                else:   # (X.values.get("section") or {}).get("key")
                    inner = recv.values[0] if isinstance(recv, ast.BoolOp) else recv
                    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                            and inner.func.attr == "get" and inner.args and config_expr(inner.func.value) \
                            and isinstance(inner.func.value, ast.Attribute) and inner.func.value.attr == "values":
                        section = _literal(inner.args[0])
                        key = f"{section}.{lit}" if section else None
            elif isinstance(node, ast.Subscript) and config_expr(node.value) and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "values":
                key = _literal(node.slice)
            if key:
                found.setdefault(key, []).append(f"{where}:{node.lineno}")
    return found


def _covered(key: str, keys: set[str]) -> bool:
    """A read of a declared leaf, of a section that holds declared leaves, or inside a free-form one."""
    return key in keys or any(k.startswith(key + ".") or key.startswith(k + ".") for k in keys)


def test_the_scan_sees_the_reads_it_must_see():
    got = reads()
    # the shapes the scan must recognise, so that the two tests below cannot pass by seeing nothing
    for key in ("server.port", "embedding.enabled", "ingest.max_tool_output", "hooks.timeout",
                "hooks.session_digest", "database", "owner"):
        assert key in got, (key, sorted(got))
    assert "_delegate_from" not in got and "plugins" not in got      # agents' own data, not settings


def test_every_settings_key_read_is_declared():
    keys = declared()
    undeclared = {k: w for k, w in reads().items() if not _covered(k, keys)}
    assert not undeclared, f"settings read but not declared in config.DEFAULTS: {undeclared}"


def test_every_declared_key_is_read_somewhere():
    got = set(reads())
    unread = sorted(k for k in declared() if not any(r == k or r.startswith(k + ".") for r in got))
    assert not unread, f"declared in config.DEFAULTS but read nowhere (wire them or remove them): {unread}"


def test_every_declared_key_and_environment_variable_is_documented():
    doc = DOC.read_text(encoding="utf-8")
    missing = [k for k in sorted(declared()) if f"`{k}`" not in doc and f"`{k}.<" not in doc]
    assert not missing, f"not in docs/configuration.md: {missing}"
    assert all(f"`{var}`" in doc for var in configmod.ENV_KEYS)
    assert all(_covered(key, declared()) for key in configmod.ENV_KEYS.values())


def test_hooks_timeout_can_be_set_and_the_hooks_read_it(cli, remem_home):
    from remem.integrations.backend import hook_timeout

    r = cli("config", "set", "hooks.timeout", "5")
    assert r.returncode == 0, r.stderr.decode()
    assert cli("config", "get", "hooks.timeout").stdout.decode().strip() == "5.0"
    assert hook_timeout(configmod.load(remem_home), env={}) == 5.0
    r = cli("config", "set", "hooks.session_digest", "off")
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(cli("config", "show", "--json").stdout)["hooks"] == {"timeout": 5.0, "session_digest": False}


@pytest.mark.parametrize("key,value,message", [
    ("hooks.timeout", "100", "hooks.timeout must be a number between 0.05 and 45"),
    ("hooks.timeout", "soon", "expected a number"),
    ("server.port", "70000", "server.port must be a number between 1 and 65535"),
    ("sync.interval_seconds", "5", "sync.interval_seconds must be a number between 30"),
    ("recall.token_budget", "100", "recall.token_budget must be a number between 800 and 4000"),
    ("owner", " ", "owner must not be empty"),
    ("recall.top_k", "3", "unknown setting: recall.top_k"),       # was declared and read nowhere
])
def test_bad_values_are_refused_with_a_message(cli, remem_home, key, value, message):
    before = json.loads(cli("config", "show", "--json").stdout)
    r = cli("config", "set", key, value)
    assert r.returncode != 0
    assert message in r.stderr.decode(), r.stderr.decode()
    assert json.loads(cli("config", "show", "--json").stdout) == before     # nothing was stored
