"""Every test gets its own HOME and REMEM_HOME in a temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("env")
    home = base / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("REMEM_HOME", str(base / "remem"))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "OPENCODE_CONFIG_DIR",
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
        monkeypatch.setenv("REMEM_DATABASE_URL", url)
    else:
        monkeypatch.delenv("REMEM_DATABASE_URL", raising=False)


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
            timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``remem`` command in a subprocess (the installed console entry point)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "remem", *args], input=input, capture_output=True,
                          env=full_env, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli
