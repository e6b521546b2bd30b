"""Hostile input on every API route over real HTTP: huge and negative integers, wrong JSON types,
bodies that are not JSON. Each gets a 4xx with a message — never a 500 (which also drops the
connection) — and the PATCH /config guard keeps data-moving settings out of the API's reach."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from remem.server.testing import Daemon, sample_turns

pytestmark = pytest.mark.module_store  # its tests share the store a module fixture built

HUGE = 10 ** 30
HOSTILE_SCALARS = [str(HUGE), str(-HUGE), "-1", str(2 ** 63), "abc", "1e309", "nan", ""]
HOSTILE_JSON: list[Any] = [5, -1, HUGE, -HUGE, 1e308, "x", "", None, True, [], {}, [5], [None], {"a": HUGE}]
NOT_JSON = [b"not json", b"{", b"\xff\xfe\x00", b"[1, 2]", b'"a string"', b"5", b"null", b"{}" * 3,
            b"[" * 50_000]
SKIP = {"/api/v1/system/open-data-dir"}  # would start the desktop's file manager


def _routes() -> list[tuple[str, str, list[str], list[str], list[str]]]:
    """(method, path, path params, query params, body fields) of every API route, from the real app's schema."""
    from remem.server.app import create_app
    from remem.server.state import DaemonState

    app = create_app(DaemonState(home=Path(tempfile.gettempdir()), token="t" * 40, host="127.0.0.1", port=0))
    spec = app.openapi()
    schemas = spec.get("components", {}).get("schemas", {})

    def fields(op: dict[str, Any]) -> list[str]:
        if "requestBody" not in op:
            return []
        sch = op["requestBody"]["content"].get("application/json", {}).get("schema", {})
        for alt in [sch, *sch.get("anyOf", [])]:
            if "$ref" in alt:
                return list(schemas[alt["$ref"].rsplit("/", 1)[1]].get("properties", {})) or ["<body>"]
        return ["<body>"]

    out = []
    for path, ops in spec["paths"].items():
        if not path.startswith("/api/") or path in SKIP:
            continue
        for method, op in ops.items():
            params = op.get("parameters", [])
            out.append((method.upper(), path, [p["name"] for p in params if p["in"] == "path"],
                        [p["name"] for p in params if p["in"] == "query"], fields(op)))
    return out


ROUTES = _routes()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("input")
    (base / "home").mkdir()
    import remem

    m = remem.open(base / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    m.add_turns(sample_turns(12))
    m.close()
    d = Daemon(base / "remem", env={"HOME": str(base / "home"), "REMEM_AUTO_SYNC": "0"})
    d.start()
    yield d
    d.stop()


def _fill(path: str, value: str) -> str:
    out = path
    while "{" in out:
        a, b = out.index("{"), out.index("}")
        name = out[a + 1:b]
        out = out[:a] + ("pause" if name == "action" else value or "x") + out[b + 1:]
    return out


def _check(c: httpx.Client, method: str, url: str, **kw: Any) -> list[str]:
    try:
        r = c.request(method, url, **kw)
    except httpx.HTTPError as e:  # a 500 makes uvicorn drop the connection
        return [f"{method} {url} {kw}: {type(e).__name__}"]
    if r.status_code >= 500 and r.status_code != 503:
        return [f"{method} {url} {kw}: {r.status_code} {r.text[:120]}"]
    if r.status_code >= 400:
        detail = r.json().get("detail")
        assert detail, (method, url, kw, r.text)  # every refusal says why
    return []


def test_the_sweep_covers_the_api():
    paths = {p for _m, p, *_ in ROUTES}
    assert len(ROUTES) >= 35 and {"/api/v1/jobs/{job_id}", "/api/v1/memories", "/api/v1/config",
                                  "/api/v1/import", "/api/v1/turns"} <= paths


@pytest.mark.parametrize("method,path,path_params,query,fields", ROUTES,
                         ids=[f"{m} {p}" for m, p, *_ in ROUTES])
def test_no_route_answers_500_to_bad_input(daemon, method, path, path_params, query, fields):
    bad: list[str] = []
    with httpx.Client(base_url=daemon.url, headers={"Authorization": f"Bearer {daemon.token}"},
                      timeout=30) as c:
        for v in HOSTILE_SCALARS:
            if path_params:
                bad += _check(c, method, _fill(path, v))
            for q in query:
                bad += _check(c, method, _fill(path, "1"), params={q: v})
        if fields and path != "/api/v1/config":  # the config guard has its own test below
            url = _fill(path, "1")
            for raw in NOT_JSON:
                bad += _check(c, method, url, content=raw, headers={"content-type": "application/json"})
            for f in fields:
                if f == "<body>":
                    continue
                for v in HOSTILE_JSON:
                    if path == "/api/v1/data/clear" and f == "confirm" and isinstance(v, str):
                        continue  # a string is a (wrong) confirmation: 409, tested elsewhere
                    bad += _check(c, method, url, json={f: v})
    assert not bad, "\n".join(bad)


def test_import_lines_of_the_wrong_shape_are_400(daemon):
    with daemon.client() as c:
        for line in ({"request": "deploy notes", "agent": "codex", "tags": 5},
                     {"request": "deploy notes", "actions": 5}, {"request": "x", "started_at": HUGE},
                     [1], "just a string"):
            r = c.post("/api/v1/import", content=json.dumps(line).encode() + b"\n")
            assert r.status_code < 500, (line, r.status_code, r.text)
        r = c.post("/api/v1/import", content=b'{"request": "a", "agent": "codex", "tags": 5}\n')
        assert r.status_code == 400 and r.json()["detail"]
        assert c.get(f"/api/v1/jobs/{HUGE}").status_code == 422
        r = c.get("/api/v1/memories", params={"offset": HUGE})
        assert r.status_code == 422 and "offset" in r.text


@pytest.mark.parametrize("body,status,says", [
    ({"database": "/etc/passwd"}, 403, "remem config set database"),
    ({"database.url": "sqlite:////etc/passwd"}, 403, "decides where your memories are stored"),
    ({"server.host": "0.0.0.0"}, 403, "remem config set server.host"),
    ({"server": {"host": "0.0.0.0", "port": 7077}}, 403, "server.host"),
    ({"embedding.openai_base_url": "https://collector.example/v1"}, 403, "remem config set embedding.openai_base_url"),
    ({"embedding": {"openai_base_url": "http://10.0.0.9/v1"}}, 403, "embedding.openai_base_url"),
    ({"embedding.model": "openai"}, 403, "embedding.openai_base_url"),
    ({"recall.token_budget": HUGE}, 400, "out of range"),
    ({"server.port": HUGE}, 400, "out of range"),
    ({"sync.interval_seconds": 1e308 * 10}, 400, "number"),
    ({"agents.codex": 5}, 400, "mapping"),
    ({"agents.codex.isolated": "yes please"}, 400, "expected bool"),
    ({"agents.codex.read_owners": [5]}, 400, "owner names"),
    ({"agents": {"codex": {"read_owners": "default"}}}, 400, "owner names"),
    ({"recall.token_budget": [1]}, 400, "expected int"),
    ({"embedding": {"model": "hash"}}, 400, "one by one, e.g. embedding.model"),
    ({"embedding.model": "e5-smal"}, 400, "unknown embedding model 'e5-smal'"),
])
def test_config_patch_validates_and_keeps_data_moving_settings_cli_only(daemon, body, status, says):
    with daemon.client() as c:
        before = c.get("/api/v1/config").json()["values"]
        r = c.patch("/api/v1/config", content=json.dumps(body).replace("Infinity", "1e999"),
                    headers={"content-type": "application/json"})
        assert r.status_code == status, r.text
        assert says in r.json()["detail"], r.json()
        assert c.get("/api/v1/config").json()["values"] == before  # nothing changed
    # the same from a viewer session (cookie + the viewer's request header)
    with httpx.Client(base_url=daemon.url) as v:
        assert v.post("/api/v1/auth/login", json={"token": daemon.token}).status_code == 200
        r = v.patch("/api/v1/config", json=body if status == 403 else {"database": "x.db"},
                    headers={"X-Remem-Request": "1"})
        assert r.status_code == 403 and "remem config set" in r.json()["detail"]


def test_config_patch_still_changes_ordinary_settings(daemon):
    with daemon.client() as c:
        r = c.patch("/api/v1/config", json={"sync.interval_seconds": 900, "agents.codex.isolated": True})
        assert r.status_code == 200, r.text
        assert r.json()["values"]["agents"]["codex"]["isolated"] is True
        assert r.json()["values"]["sync"]["interval_seconds"] == 900
        r = c.patch("/api/v1/config", json={"sync.interval_seconds": 300, "agents.codex.isolated": False})
        assert r.status_code == 200


def test_a_model_server_on_this_machine_may_be_chosen_in_the_viewer(tmp_path):
    """The URL is set in the terminal; picking the `openai` embedder then only sends text where the user
    pointed it. With a URL beyond this machine the same pick is refused (see the cases above)."""
    (tmp_path / "remem").mkdir()
    (tmp_path / "remem" / "config.yaml").write_text(
        "embedding:\n  openai_base_url: http://127.0.0.1:9/v1\n  openai_model: nomic-embed-text\n")
    (tmp_path / "home").mkdir()
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d:
        r = d.client().patch("/api/v1/config", json={"embedding.model": "openai"})
        assert r.status_code == 200, r.text
        (tmp_path / "remem" / "config.yaml").write_text(
            "embedding:\n  openai_base_url: https://api.example.com/v1\n  model: hash\n")
