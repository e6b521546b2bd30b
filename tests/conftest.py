"""Every test gets its own HOME and REMEM_HOME in a temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "agents"      # provenance and licences: fixtures/agents/SOURCES.md


def copy_fixture(name: str, dest: Path) -> Path:
    """Copy one agent's fixture tree into a test HOME, writable (a checkout may be read-only)."""
    import shutil

    src = FIXTURES / name
    if src.is_dir():
        shutil.copytree(src, dest)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    for dirpath, _dirs, files in os.walk(dest if dest.is_dir() else dest.parent):
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    return dest


ON_POSTGRES = os.environ.get("REMEM_TEST_POSTGRES", "") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only(reason): a test of the SQLite engine itself (skipped on "
                                       "PostgreSQL, with the reason)")
    config.addinivalue_line("markers", "module_store(*fixtures): the module's tests share a store a module-scoped fixture "
                                       "built (on PostgreSQL a database of its own, emptied when the module "
                                       "starts, not before each of its tests)")
    config.addinivalue_line("markers", "own_store: (set by the run) a test of a module_store module that uses "
                                       "none of its module-scoped fixtures: on PostgreSQL it starts empty")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not ON_POSTGRES:
        return
    for item in items:
        mark = item.get_closest_marker("sqlite_only")
        if mark is not None:
            why = mark.args[0] if mark.args else mark.kwargs.get("reason", "SQLite only")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {why}"))
        if item.get_closest_marker("module_store") is not None and not _uses_a_module_fixture(item):
            item.add_marker("own_store")


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    """Whether a test uses the store its module shares: the fixtures ``module_store("name", …)``
    names, else any module-scoped fixture of its module. A test of such a module that opens a home of
    its own gets an emptied database of its own instead."""
    mark = item.get_closest_marker("module_store")
    named = set(mark.args) if mark is not None and mark.args else None
    info = getattr(item, "_fixtureinfo", None)
    module = getattr(getattr(item, "module", None), "__name__", None)
    for name, defs in (info.name2fixturedefs.items() if info else ()):
        d = defs[-1]
        if named is not None:
            if name in named:
                return True
        elif d.scope == "module" and getattr(d.func, "__module__", None) == module:
            return True
    return False


@pytest.fixture(scope="session")
def _pg_server():
    """With REMEM_TEST_POSTGRES=1 (``scripts/test.sh --postgres``): one embedded PostgreSQL for the
    run (or the server at REMEM_TEST_PG_BASE, e.g. postgresql://postgres@127.0.0.1:5432) with one
    migrated database that every test starts empty in (see ``_pg_database``)."""
    if not ON_POSTGRES:
        yield None
        return
    import psycopg

    from remem.store.postgres import embedded

    base = os.environ.get("REMEM_TEST_PG_BASE", "").rstrip("/")
    server = None
    if base:
        def url_of(name: str) -> str:
            return f"{base}/{name}"
    else:  # over the Unix socket: the agent tests run their agents in a network namespace of their own
        server = embedded.start()

        def url_of(name: str) -> str:
            return server.url(name, socket=True)

    def fresh(name: str) -> Any:
        """(Re)create a test database, migrated; its admin connection."""
        from remem.store import open_store

        with psycopg.connect(url_of("postgres"), autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            c.execute(f"CREATE DATABASE {name}")
        s = open_store(url_of(name), Path("."))
        s.migrate()
        s.close()
        return psycopg.connect(url_of(name), autocommit=True)

    # remem_test: each test's own (emptied before it); remem_test_module: a module_store module's
    dbs = {name: {"url": url_of(name), "admin": fresh(name)} for name in (TEST_DB, MODULE_DB)}
    tables = [r[0] for r in dbs[TEST_DB]["admin"].execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'")]
    sequences = [r[0] for r in dbs[TEST_DB]["admin"].execute(
        "SELECT schemaname || '.' || sequencename FROM pg_sequences WHERE schemaname = 'public'")]
    state = {"dbs": dbs, "n": [0], "tables": tables, "sequences": sequences, "fresh": fresh}
    yield state
    for db in dbs.values():
        db["admin"].close()
    if server is not None:
        server.stop()


TEST_DB, MODULE_DB = "remem_test", "remem_test_module"


@pytest.fixture(autouse=True)
def _pg_database(_pg_server, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """This test's PostgreSQL database: emptied (the previous test's connections ended, every table
    truncated), under a URL of its own (``application_name``) so that no cache keyed by the database
    carries over from the previous test; a module_store module's tests share theirs."""
    if _pg_server is None:
        yield
        return

    if request.node.get_closest_marker("module_store") is not None \
            and request.node.get_closest_marker("own_store") is None:
        monkeypatch.setenv("REMEM_TEST_DATABASE_URL", _pg_server["module_url"])  # emptied by _pg_module
    else:
        monkeypatch.setenv("REMEM_TEST_DATABASE_URL", _pg_empty(_pg_server, TEST_DB))
    yield


def _pg_empty(pg: dict[str, Any], name: str) -> str:
    """End the previous test's connections, empty every table, restart the id sequences; a URL of its
    own for this test. Emptying is DELETE with triggers and foreign keys off (``session_replication_role``:
    the tables are small, and TRUNCATE's new files cost ~60 ms a test), TRUNCATE where that is not allowed."""
    import psycopg

    db = pg["dbs"][name]
    admin = db["admin"]
    admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                  "AND pid <> pg_backend_pid()")
    try:
        try:
            with admin.transaction():
                admin.execute("SET LOCAL session_replication_role = replica; "
                              + "; ".join(f'DELETE FROM "{t}"' for t in pg["tables"]))
            admin.execute("SELECT setval(s::regclass, 1, false) FROM unnest(%s::text[]) AS s", (pg["sequences"],))
            # the HNSW indexes an earlier test's embeddings built go too (as in a fresh database): a graph
            # of dead rows and the statistics of a bigger table are not this test's to inherit
            hnsw = [r[0] for r in admin.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
                                                "AND indexname LIKE 'embeddings\\_hnsw\\_%'")]
            if hnsw:
                admin.execute("DROP INDEX IF EXISTS " + ", ".join(f'"{i}"' for i in hnsw))
            admin.execute("ANALYZE")
        except psycopg.errors.InsufficientPrivilege:  # not a superuser (REMEM_TEST_PG_BASE)
            admin.execute(f"TRUNCATE {', '.join(pg['tables'])} RESTART IDENTITY CASCADE")
    except psycopg.Error:  # the previous test broke the schema on purpose (dropped a table): start over
        admin.close()
        db["admin"] = pg["fresh"](name)
    pg["n"][0] += 1
    sep = "&" if "?" in db["url"] else "?"
    return f"{db['url']}{sep}application_name=remem-test-{os.getpid()}-{pg['n'][0]}"


def _engine_patches(mp: pytest.MonkeyPatch, url: str) -> None:
    """Point every store of this process (and its subprocesses) at ``url``: REMEM_DATABASE_URL, and
    handles opened with an environment of their own (``remem.open(home, env={...})``) unless that
    environment names a database itself."""
    from remem import config as configmod

    mp.setenv("REMEM_DATABASE_URL", url)
    real_load = getattr(configmod.load, "_real", configmod.load)

    def load(home=None, env=None):  # type: ignore[no-untyped-def]
        if env is not None and "REMEM_DATABASE_URL" not in env:
            env = {**env, "REMEM_DATABASE_URL": url}
        return real_load(home, env)

    load._real = real_load  # type: ignore[attr-defined]
    mp.setattr(configmod, "load", load)


@pytest.fixture(scope="module", autouse=True)
def _pg_module(_pg_server, request: pytest.FixtureRequest):
    """A module marked ``module_store`` shares one emptied database across its tests, set before its
    module-scoped fixtures build their store."""
    if _pg_server is None or request.node.get_closest_marker("module_store") is None:
        yield
        return
    url = _pg_empty(_pg_server, MODULE_DB)
    _pg_server["module_url"] = url
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REMEM_TEST_DATABASE_URL", url)
        _engine_patches(mp, url)
        yield


@pytest.fixture(autouse=True)
def _isolated_home(_pg_database, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("env")
    home = base / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("REMEM_HOME", str(base / "remem"))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "OPENCODE_CONFIG_DIR",
                "OPENCODE_DATA_DIR", "HERMES_HOME", "REMEM_OWNER", "REMEM_PORT", "REMEM_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)
    # tests never load the real model unless they ask for it
    monkeypatch.setenv("REMEM_EMBEDDING_MODEL", "hash")
    # a plugin installed on the developer's machine never changes a result (test_plugins.py turns them on)
    monkeypatch.setenv("REMEM_NO_PLUGINS", "1")
    # the database engine under test: REMEM_TEST_DATABASE_URL (e.g. a PostgreSQL server) reaches every
    # store this test opens, in-process and in subprocesses, as REMEM_DATABASE_URL (database.url);
    # unset, each test has its SQLite file in its own REMEM_HOME, the default
    url = os.environ.get("REMEM_TEST_DATABASE_URL", "").strip()
    if url:
        _engine_patches(monkeypatch, url)
    else:
        monkeypatch.delenv("REMEM_DATABASE_URL", raising=False)


def engine_env() -> dict[str, str]:
    """The variables that point a process at the database under test (for tests that build a
    subprocess's environment from scratch): REMEM_DATABASE_URL on PostgreSQL, nothing on SQLite."""
    url = os.environ.get("REMEM_DATABASE_URL", "")
    return {"REMEM_DATABASE_URL": url} if url else {}


def database_url(home: Path) -> str:
    """The URL the tests' stores open: ``REMEM_DATABASE_URL`` (set from ``REMEM_TEST_DATABASE_URL``),
    else SQLite in ``home`` (the file ``remem.open()`` uses)."""
    return os.environ.get("REMEM_DATABASE_URL") or f"sqlite:///{home / 'remem.db'}"


@pytest.fixture
def remem_home() -> Path:
    return Path(os.environ["REMEM_HOME"])


@pytest.fixture
def store(remem_home: Path):
    """The store of this test's home, opened by URL (``database_url``) and migrated."""
    from remem.store import open_store

    s = open_store(database_url(remem_home), remem_home)
    s.migrate()
    yield s
    s.close()


@pytest.fixture
def mem():
    import remem

    m = remem.open()
    yield m
    m.close()


def run_cli(*args: str, input: bytes | None = None, env: dict[str, str] | None = None,
            timeout: float = 120, cwd: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``remem`` command in a subprocess (the installed console entry point), in ``cwd``."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "remem", *args], input=input, capture_output=True,
                          env=full_env, timeout=timeout, cwd=cwd)


@pytest.fixture
def cli():
    return run_cli
