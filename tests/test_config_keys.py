"""Every setting any code reads is declared, validated and documented; every declared one is read
(issue 13, item 12)."""

from __future__ import annotations

import ast
import json
import re

import pytest

from conftest import REPO
from remem import config as configmod
from remem.settings import SPECS

SRC = REPO / "src" / "remem"
DOC = REPO / "docs" / "configuration.md"


def declared() -> set[str]:
    """Dotted keys the settings model declares (``agents`` is one key: a mapping per agent)."""
    return {k for k in SPECS if not k.startswith("agents.<id>.")}


def _attr_chain(node: ast.Attribute) -> list[str] | None:
    """``x.settings.recall.token_budget`` → ["recall", "token_budget"] (None: not under .settings)."""
    parts: list[str] = []
    cur: ast.expr = node
    while isinstance(cur, ast.Attribute):
        if cur.attr == "settings":
            # recall's ``ctx.settings`` is the RecallSettings the façade builds from declared keys
            if isinstance(cur.value, ast.Name) and cur.value.id == "ctx":
                return None
            return parts[::-1]
        parts.append(cur.attr)
        cur = cur.value
    return None


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def reads() -> dict[str, list[str]]:
    """Settings keys read in the package: typed attribute reads ``<x>.settings.a.b``,
    ``<x>.settings.get("a.b")`` (the model and the hook's mirror), ``<config>.get("a.b")``,
    ``<config>.values.get("a")`` and a
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
            if in_config and isinstance(node, ast.Name) and node.id == "self":     # Config.get itself
                return True
            if in_config and isinstance(node, ast.Attribute) and node.attr == "values":
                return isinstance(node.value, ast.Name) and node.value.id == "self"
            return False

        parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        for node in ast.walk(tree):
            key = None
            parent = parents.get(id(node))
            if isinstance(node, ast.Attribute) and not isinstance(parent, ast.Attribute) \
                    and not (isinstance(parent, ast.Call) and parent.func is node) and (chain := _attr_chain(node)):
                key = ".".join(chain[:2] if chain[0] != "agents" else chain[:1])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                    and (isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "settings"
                         or isinstance(node.func.value, ast.Name) and node.func.value.id == "settings") \
                    and node.args and (lit := _literal(node.args[0])) is not None:
                key = lit
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
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
                "hooks.session_digest", "database.url", "owner", "recall.token_budget", "agents"):
        assert key in got, (key, sorted(got))
    assert "_delegate_from" not in got and "plugins" not in got      # agents' own data, not settings


def test_every_settings_key_read_is_declared():
    keys = declared()
    undeclared = {k: w for k, w in reads().items() if not _covered(k, keys)}
    assert not undeclared, f"settings read but not declared in remem/settings.py: {undeclared}"


def test_every_declared_key_is_read_somewhere():
    got = set(reads())
    unread = sorted(k for k in declared() if not any(r == k or r.startswith(k + ".") for r in got))
    assert not unread, f"declared in remem/settings.py but read nowhere (wire them or remove them): {unread}"


def test_every_declared_key_and_environment_variable_is_documented():
    doc = DOC.read_text(encoding="utf-8")
    missing = [k for k in sorted(declared()) if f"`{k}`" not in doc and f"`{k}.<" not in doc]
    assert not missing, f"not in docs/configuration.md: {missing}"
    assert all(f"`{var}`" in doc for var in configmod.ENV_KEYS)
    assert all(_covered(key, declared()) for key in configmod.ENV_KEYS.values())


def test_the_documented_table_is_the_model():
    from remem.settings import table

    doc = DOC.read_text(encoding="utf-8")
    block = doc.split("<!-- settings table: generated by `python -m remem.settings` -->\n", 1)[1]
    assert block.split("<!-- end of settings table -->", 1)[0] == table(), \
        "docs/configuration.md's table is out of date: paste `python -m remem.settings` into it"


def test_hooks_timeout_can_be_set_and_the_hooks_read_it(cli, remem_home):
    from remem import hook_settings
    from remem.integrations.backend import hook_timeout

    r = cli("config", "set", "hooks.timeout", "5")
    assert r.returncode == 0, r.stderr.decode()
    assert cli("config", "get", "hooks.timeout").stdout.decode().strip() == "5.0"
    assert configmod.load(remem_home, env={}).settings.hooks.timeout == 5.0
    assert hook_timeout(hook_settings.load(remem_home, env={})) == 5.0
    assert hook_timeout(hook_settings.load(remem_home, env={"REMEM_HOOK_TIMEOUT": "2"})) == 2.0
    r = cli("config", "set", "hooks.session_digest", "off")
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(cli("config", "show", "--json").stdout)["hooks"] == {"timeout": 5.0, "session_digest": False}


@pytest.mark.parametrize("key,value,message", [
    ("hooks.timeout", "100", "hooks.timeout must be a number between 0.05 and 45"),
    ("hooks.timeout", "soon", "hooks.timeout must be a number between 0.05 and 45, got 'soon'"),
    ("server.port", "70000", "server.port must be a whole number between 1 and 65535"),
    ("sync.interval_seconds", "5", "sync.interval_seconds must be a whole number between 30"),
    ("recall.token_budget", "100", "recall.token_budget must be a whole number between 800 and 4000"),
    ("recall.token_budget", "1200.5", "recall.token_budget must be a whole number"),
    ("owner", " ", "owner must be a non-empty name"),
    ("embedding.enabled", "maybe", "embedding.enabled must be true or false, got 'maybe'"),
    ("embedding.related_margin", "wide", 'embedding.related_margin must be "auto" or a number between -2 and 2'),
    ("database.url", "mysql://db/remem", "database.url must be sqlite:///FILE"),
    ("agents.reviewer.isolated", "perhaps", "agents.reviewer.isolated must be true or false"),
    ("agents.reviewer.colour", "red", "unknown setting: agents.reviewer.colour"),
    ("recall.top_k", "3", "unknown setting: recall.top_k"),       # was declared and read nowhere
])
def test_bad_values_are_refused_with_a_message(cli, remem_home, key, value, message):
    before = json.loads(cli("config", "show", "--json").stdout)
    r = cli("config", "set", key, value)
    assert r.returncode != 0
    assert message in r.stderr.decode(), r.stderr.decode()
    assert json.loads(cli("config", "show", "--json").stdout) == before     # nothing was stored


def test_reading_an_undeclared_key_is_a_bug_in_both_ways_of_loading(remem_home):
    from remem import hook_settings
    from remem.core import Remem
    from remem.errors import RememError, UndeclaredSetting

    Remem(remem_home).close()
    light = configmod.load(remem_home, env={"REMEM_TOKEN_BUDGET": "1200"})      # from hook-settings.json
    # a database URL in the environment is checked by the store's own parser: still the mirror
    light_url = configmod.load(remem_home, env={"REMEM_DATABASE_URL": "postgresql://remem@127.0.0.1/remem"})
    assert light_url._settings is None and light_url.database_url == "postgresql://remem@127.0.0.1/remem"
    (remem_home / hook_settings.NAME).unlink()
    full = configmod.load(remem_home, env={})                                   # no mirror: the model
    assert light._settings is None and full._settings is not None
    for cfg in (light, full):
        assert cfg.get("hooks.timeout") == 8.0 and isinstance(cfg.get("server.port"), int)
        assert cfg.get("agents.codex") == {"isolated": False, "owner": "", "read_owners": []}
        for key in ("recall.top_k", "hooks.timeout.x", "agents.codex.colour", "nothing"):
            with pytest.raises(UndeclaredSetting):
                cfg.get(key)
    assert light.get("recall.token_budget") == 1200 == light.settings.recall.token_budget
    assert not issubclass(UndeclaredSetting, (RememError, LookupError))
    Remem(remem_home).close()                                                  # writes the mirror again
    assert hook_settings.fresh(remem_home)


@pytest.mark.sqlite_only("a settings test of database.url itself (the PostgreSQL run sets its own)")
def test_a_database_url_with_a_password_is_never_mirrored(remem_home):
    from remem import hook_settings

    remem_home.mkdir(parents=True)
    cfg = configmod.load(remem_home, env={})
    cfg.set("recall.token_budget", "1500")
    assert hook_settings.fresh(remem_home)
    cfg.set("database.url", "postgresql://remem:s3cret@db.internal:5432/memories")
    assert not (remem_home / hook_settings.NAME).exists()
    assert configmod.load(remem_home, env={}).database_url.endswith("/memories")      # the full path still works
