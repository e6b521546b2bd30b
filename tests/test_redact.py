"""Redaction: table-driven cases per kind, idempotence, edge sizes, and catch / false-positive
rates measured on generated corpora (tests/data/redact/redact_corpus.py)."""

from __future__ import annotations

import ast
import base64
import importlib.util
import json
import random
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from remem.ingest import redact as redact_module
from remem.ingest.redact import KINDS, RedactResult, marker, redact, redact_text

_CORPUS_PATH = Path(__file__).parent / "data" / "redact" / "redact_corpus.py"
_spec = importlib.util.spec_from_file_location("redact_corpus", _CORPUS_PATH)
assert _spec and _spec.loader
corpus = importlib.util.module_from_spec(_spec)
sys.modules["redact_corpus"] = corpus
_spec.loader.exec_module(corpus)

# Fake secrets, generated so that none is written literally in this file.
_r = random.Random(7)
T = {
    "openai": "sk-" + "proj-" + corpus.rand(_r, 64, corpus.URLSAFE),
    "openai_legacy": "sk-" + corpus.rand(_r, 48),
    "anthropic": corpus.anthropic_key(_r),
    "ghp": "gh" + "p_" + corpus.rand(_r, 36),
    "ghs": "gh" + "s_" + corpus.rand(_r, 36),
    "github_pat": "github" + "_pat_" + corpus.rand(_r, 22) + "_" + corpus.rand(_r, 59),
    "glpat": corpus.gitlab_token(_r),
    "xoxb": "xo" + "xb-" + "123456789012-1234567890123-" + corpus.rand(_r, 24),
    "xapp": "xa" + "pp-1-A0123456789-1234567890123-" + corpus.rand(_r, 64, corpus.HEX),
    "webhook": corpus.slack_webhook_path(_r),
    "akia": "AK" + "IA" + corpus.rand(_r, 16, corpus.UPPER_DIGITS),
    "asia": "AS" + "IA" + corpus.rand(_r, 16, corpus.UPPER_DIGITS),
    "aws_secret": corpus.rand(_r, 40, corpus.B64),
    "google": corpus.google_key(_r),
    "stripe": "sk" + "_live_" + corpus.rand(_r, 24),
    "stripe_rk": "rk" + "_live_" + corpus.rand(_r, 24),
    "stripe_test": "sk" + "_test_" + corpus.rand(_r, 24),
    "npm": corpus.npm_token(_r),
    "hf": corpus.hf_token(_r),
    "val": corpus.rand(_r, 24),
    "hexval": corpus.rand(_r, 32, corpus.HEX),
    "pw": "Tr0ub4dor-" + corpus.rand(_r, 6),
    "opaque": corpus.rand(_r, 40),
    "jwt": corpus.jwt(_r),
    "basic": "YWRtaW46czNjcjN0LXBhc3M=",  # admin:s3cr3t-pass
}

POSITIVE = [
    ("openai_key", "OPENAI_API_KEY={openai}"),
    ("openai_key", 'client = OpenAI(api_key="{openai_legacy}")'),
    ("anthropic_key", "export ANTHROPIC_API_KEY={anthropic}"),
    ("github_token", "git push https://x-access-token:{ghs}@github.com/acme/repo.git"),
    ("github_token", "GH_TOKEN={ghp} gh pr list"),
    ("github_token", '{{"token": "{github_pat}"}}'),
    ("gitlab_token", "curl --header 'PRIVATE-TOKEN: {glpat}' https://gitlab.com/api/v4/projects"),
    ("slack_token", "SLACK_BOT_TOKEN={xoxb}"),
    ("slack_token", "app token {xapp} loaded"),
    ("slack_webhook", "requests.post('https://hooks.slack" ".com/services/{webhook}', json=msg)"),
    ("aws_access_key_id", "aws_access_key_id = {akia}"),
    ("aws_access_key_id", '"AccessKeyId": "{asia}",'),
    ("aws_secret_key", "aws_secret_access_key = {aws_secret}"),
    ("aws_secret_key", '"SecretAccessKey": "{aws_secret}"'),
    ("aws_secret_key", "aws configure set aws_secret_access_key {aws_secret}"),
    ("google_api_key", "https://maps.googleapis.com/maps/api/geocode/json?key={google}"),
    ("stripe_key", "stripe.api_key = '{stripe}'"),
    ("stripe_key", "STRIPE_RESTRICTED={stripe_rk}"),
    ("stripe_key", "using {stripe_test} in CI"),
    ("npm_token", "//registry.npmjs.org/:_authToken={npm}"),
    ("huggingface_token", "huggingface-cli login --token {hf}"),
    ("secret", '{{"api_key": "{val}"}}'),
    ("secret", "SECRET_KEY={hexval}"),
    ("secret", "clientSecret: {val}"),
    ("secret", "--api-key {val}"),
    ("secret", "--auth-token={val}"),
    ("secret", "X-Api-Key: {val}"),
    ("secret", "GET /hook?token={val}&id=3"),
    ("password", "DB_PASSWORD={pw}"),
    ("password", "password: '{pw}'"),
    ("password", "mysqldump --password {pw} app > dump.sql"),
    ("password", 'connect(user="app", password="{pw}")'),
    ("bearer_token", "Authorization: Bearer {opaque}"),
    ("bearer_token", "curl -H 'authorization: bearer {opaque}' https://api.example.com"),
    ("bearer_token", "Authorization: token {hexval}"),
    ("password", "curl -u admin:{pw} https://registry.example.com/v2/"),
    ("password", "mysql -h db -uroot -p{pw} app"),
    ("basic_auth", "Authorization: Basic {basic}"),
    ("jwt", "Cookie: session={jwt}"),
    ("jwt", "Authorization: Bearer {jwt}"),
    ("url_password", "DATABASE_URL=postgres://app:{pw}@db:5432/app"),
    ("url_password", "redis://:{val}@cache:6379/0"),
]

NEGATIVE = [
    "",
    "token = None",
    'password = os.environ["X"]',
    "api_key: str",
    "api_key: str | None = None",
    "token_count=123",
    "max_tokens = 4096",
    "secret = get_secret('db')",
    "password = getpass.getpass()",
    'secret_name: "prod-db-credentials-2024"',
    "token_type: Bearer",
    'token_url = "https://oauth2.googleapis.com/token"',
    'api_key = settings.OPENAI_API_KEY_FOR_PRODUCTION',
    'key_file = "/etc/ssl/private/server2048.key"',
    "password: ${DB_PASSWORD}",
    'password: "********"',
    "NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
    "OPENAI_API_KEY=your-api-key-here-2024",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "id=123e4567-e89b-12d3-a456-426614174000",
    "/home/dev/projects/remem/src/remem/ingest/redact.py",
    "https://github.com/acme/repo/blob/main/README.md#install",
    "git@github.com:acme/repo.git",
    "https://user@example.com/path",
    "http://localhost:8080/api?x=1",
    "def test_redaction_of_bearer_tokens_in_headers():",
    "color: #1e90ff; background: #FFF;",
    '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXGOdVYJXoHHh5FqoU+LT0ZvqBHXQ=="',
    "The server rejects Bearer tokens older than 15 minutes.",
    "Basic usage: pip install remem",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "这个函数读取令牌，但不会把它写进日志。",
    "sk-learn is not a package name, use scikit-learn",
    "the ghp_ prefix marks a GitHub personal token",
    "postgres://user:${DB_PASSWORD}@db/app",
    "postgres://app@db/app",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEf2XtsbVnPGvE1rpjs4M7o6z5nM9h\n-----END PUBLIC KEY-----",
    "keyboard_shortcut = ctrl+shift+p",
    "[REDACTED:github_token] and [data:image/png;base64 · 1.2 KB removed] and [base64 · 300 bytes removed]",
    "git push -u origin main && ssh -p 2222 deploy@host && docker run -p 8080:80 nginx",
    "mysql -u root -p app_production",
    "curl -u $USER:$TOKEN https://api.example.com and curl --user admin:password https://x",
    "WARN token expired for user_id=42; token refresh_in_progress_for_session",
    "→ redact (secrets, <private>…</private>, inline base64 / data: URLs)",
    "img: https://blogger.googleusercontent.com/img/b/R29vZ2xl/" + "AVvXsEhwGRNI2jDkrALJHgL2LWfW2rUGhN" * 8 + "/s320/x.jpg",
    # shapes found while scanning the Python stdlib and site-packages for false positives
    "def connect(password: _PasswordType | None = None, private_key: PKCS7PrivateKeyTypes,):",
    "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
    "Pass = ASLLexer.PASS",
    '"AWS::ApiGateway::ApiKey": "48205d4ffd7feba3",',
    'publicKeyToken="1fc8b3b9a1e18e3b"',
    'self.request_token_arn = f"arn:aws:s3:{region}:{account_id}:async-request/{uid}"',
    'secret_key = "%(prefix)s_secret_%(env)s_2024"',
    "const config = { apiKey: apiKeyFromEnv2024, debug: false };",
    '_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"',
    'assert "data:image/png;base64,iVBOR" in html',
    ":param proxy_url: e.g. https://username:password@proxy.example.com",
]


def _fill(template: str) -> str:
    return template.format(**T)


@pytest.mark.parametrize(("kind", "template"), POSITIVE)
def test_positive_case_is_redacted(kind: str, template: str) -> None:
    text = _fill(template)
    result = redact(text)
    assert result.kinds.get(kind, 0) >= 1, (kind, result)
    assert marker(kind) in result.text
    for secret in T.values():
        if secret in text:
            assert secret not in result.text, (kind, result.text)


@pytest.mark.parametrize("text", NEGATIVE)
def test_negative_case_is_untouched(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert (result.count, result.kinds) == (0, {})


@pytest.mark.parametrize(("text", "expected"), [
    ("DB_PASSWORD={pw}", "DB_PASSWORD=[REDACTED:password]"),
    ('{{"api_key": "{val}", "n": 1}}', '{{"api_key": "[REDACTED:secret]", "n": 1}}'),
    ("--token {val} --verbose", "--token [REDACTED:secret] --verbose"),
    ("mysql://root:{pw}@db.local:3306/x", "mysql://root:[REDACTED:url_password]@db.local:3306/x"),
    ("Authorization: Bearer {opaque}", "Authorization: Bearer [REDACTED:bearer_token]"),
    ("a <private>line one\nline TWO</PRIVATE> b", "a [REDACTED:private] b"),
    ("k: {ghp}", "k: [REDACTED:github_token]"),
    ("https://hooks.slack" ".com/services/{webhook}",
     "https://hooks.slack" ".com/services/[REDACTED:slack_webhook]"),
])
def test_replacement_keeps_context(text: str, expected: str) -> None:
    assert redact_text(_fill(text)) == _fill(expected)


def test_yaml_flow_mapping_password_is_redacted() -> None:
    # a password is a literal whatever its shape; only a bare identifier (`{password: pw}`) reads as
    # an object literal's variable and is left alone
    assert redact_text(_fill("{{password: {pw}, user: app}}")) == "{password: [REDACTED:password], user: app}"
    assert redact_text(_fill("{{password: '{pw}', user: app}}")) == "{password: '[REDACTED:password]', user: app}"
    assert redact_text("const opts = { password: pw, user };") == "const opts = { password: pw, user };"


def test_unicode_around_secrets_survives() -> None:
    text = _fill("令牌：{ghp}，密码 password={pw} 完成 ✓ \ud83d")
    result = redact(text)
    assert result.text == "令牌：[REDACTED:github_token]，密码 password=[REDACTED:password] 完成 ✓ \ud83d"


def test_private_key_block_is_removed_whole() -> None:
    block, line = corpus.pem_block(random.Random(3))
    result = redact(f"before\n{block}\nafter")
    assert result.text == "before\n[REDACTED:private_key]\nafter"
    assert result.kinds == {"private_key": 1}


def test_truncated_private_key_is_still_removed() -> None:
    block, _ = corpus.pem_block(random.Random(4))
    head = block.splitlines()[:4]  # BEGIN line and three body lines, no END
    result = redact("log: " + "\n".join(head) + "\n\nnext message")
    assert result.text == "log: [REDACTED:private_key]\n\nnext message"


def test_json_escaped_private_key_is_removed() -> None:
    block, _ = corpus.pem_block(random.Random(6))
    text = '{"private_key": "' + block.replace("\n", "\\n") + '\\n", "client_email": "a@b.iam"}'
    assert redact_text(text) == '{"private_key": "[REDACTED:private_key]\\n", "client_email": "a@b.iam"}'


def test_unclosed_private_tag_is_left_alone() -> None:
    # Only closed spans are removed: prose about the feature ("wrap it in <private>") must survive.
    assert redact_text("wrap secrets in <private> tags") == "wrap secrets in <private> tags"


def test_data_url_keeps_media_type_and_size() -> None:
    payload = "iVBORw0KGgo" + "A" * 16789 + "=="
    result = redact(f'<img src="data:image/png;base64,{payload}">')
    assert result.text == '<img src="[data:image/png;base64 · 12.3 KB removed]">'
    assert result.kinds == {"data_url": 1}


def test_bare_base64_run_reports_bytes() -> None:
    blob = base64.b64encode(random.Random(5).randbytes(300)).decode()
    assert redact_text(f"x {blob} y") == "x [base64 · 300 bytes removed] y"
    short = blob[:150]
    assert redact_text(f"x {short} y") == f"x {short} y"


def test_count_matches_kinds() -> None:
    text = _fill("A={ghp}\nB={ghs}\nurl=postgres://a:{pw}@h/db\nAuthorization: Bearer {opaque}")
    result = redact(text)
    assert result.kinds == {"github_token": 2, "url_password": 1, "bearer_token": 1}
    assert result.count == 4
    assert isinstance(result, RedactResult)


def test_kinds_are_listed() -> None:
    assert {k for k, _ in POSITIVE} <= set(KINDS)


def test_empty_input() -> None:
    assert redact("") == RedactResult("", 0, {})
    assert redact_text("") == ""


# ---------------------------------------------------------------- corpora

SECRETS = corpus.secret_cases()
ORDINARY = corpus.ordinary_cases()


def test_corpora_are_big_enough() -> None:
    assert len(SECRETS) >= 500 and len(ORDINARY) >= 500
    per_kind: dict[str, int] = {}
    for case in SECRETS:
        per_kind[case.kind] = per_kind.get(case.kind, 0) + 1
    assert min(per_kind.values()) >= 20
    assert set(per_kind) <= set(KINDS)


def test_catch_rate_at_least_99_percent() -> None:
    missed = [c for c in SECRETS if c.secret in redact_text(c.text)]
    rate = 1 - len(missed) / len(SECRETS)
    assert rate >= 0.99, f"catch rate {rate:.2%}; missed e.g. {missed[:3]}"


def test_reported_kind_matches_expected_kind() -> None:
    wrong = [c for c in SECRETS if c.kind not in redact(c.text).kinds]
    assert len(wrong) / len(SECRETS) <= 0.01, wrong[:3]


def test_false_positive_rate_at_most_1_percent() -> None:
    altered = [t for t in ORDINARY if redact_text(t) != t]
    rate = len(altered) / len(ORDINARY)
    assert rate <= 0.01, f"false positive rate {rate:.2%}; e.g. {altered[:3]}"


def test_idempotent_on_both_corpora() -> None:
    for text in [c.text for c in SECRETS] + ORDINARY + [_fill(t) for _, t in POSITIVE]:
        once = redact(text)
        twice = redact(once.text)
        assert twice.text == once.text, text
        assert twice.count == 0, (once.text, twice.kinds)


# ---------------------------------------------------------------- size and speed


def test_huge_ordinary_input_costs_linear_time() -> None:
    """4 MB of ordinary text comes back unchanged, at a per-byte cost close to 1 MB's: no rule
    backtracks over the whole input (a quadratic one costs 4x per byte). The speed itself is the
    redaction benchmark's (bench/RESULTS.md); a ratio in one run holds on a loaded machine."""
    base = "\n".join(ORDINARY)

    def cost(size: int) -> float:
        text = base * (size // len(base) + 1)
        best = float("inf")
        for _ in range(2):
            start = time.process_time()
            assert redact_text(text) == text
            best = min(best, (time.process_time() - start) / len(text))
        return best

    small, big = cost(1_000_000), cost(4_000_000)
    assert big < 2.5 * small, f"{big / small:.1f}x the per-byte cost at 4 MB"


def test_huge_secret_input() -> None:
    blob = "data:application/pdf;base64," + "QUJD" * 3_000_000
    assert redact_text(f"see {blob} end") == "see [data:application/pdf;base64 · 8.6 MB removed] end"


@pytest.mark.parametrize("text", [
    "a" * 2_000_000,
    "=" * 1_000_000,
    "Ab1+" * 500_000,
    "-----BEGIN RSA PRIVATE KEY-----\n" * 20_000,
    "<private>" * 100_000 + "</private>",
    "sk-" * 300_000,
    "eyJ" * 300_000 + "." * 10,
    "://a:b" * 200_000,
    "token=" * 200_000,
    "--password " * 200_000,
    "Bearer " * 200_000,
    "a_b-c/d" * 300_000,
    "mysql " * 200_000,
    "-u a:" * 200_000,
    "token " * 200_000,
    "password: " * 200_000,
    "x" * 100 + "=" + "Ab1" * 1_000_000,
])
def test_pathological_input_is_linear(text: str) -> None:
    """Linear: the whole input takes about twice its first half (a quadratic rule takes four times;
    a catastrophic one minutes). Under a second either way is too short to compare on a busy machine."""
    def cpu(t: str) -> float:
        start = time.process_time()
        redact(t)
        return time.process_time() - start

    half, whole = cpu(text[:len(text) // 2]), cpu(text)
    assert whole < 10
    assert whole < 1.0 or whole < 3 * half, (half, whole)


def test_real_code_is_untouched() -> None:
    """The stdlib's top-level modules (~170 files of real code, docs and tests data): no change."""
    root = Path(sysconfig.get_paths()["stdlib"])
    altered = [p.name for p in sorted(root.glob("*.py"))
               if redact(p.read_text(encoding="utf-8", errors="replace")).count]
    assert altered == []


@pytest.mark.parametrize("name", ["redact.py", "secret_shapes.py", "secret_values.py"])
def test_module_imports_only_stdlib(name: str) -> None:
    tree = ast.parse((Path(redact_module.__file__).parent / name).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:  # a sibling: must be stdlib-only too
            assert names[0] in ("secret_shapes", "secret_values"), names
            continue
        for name in names:
            top = name.split(".")[0]
            assert top == "__future__" or top in sys.stdlib_module_names, name


# ---------------------------------------------------------------- issue 13: a broader corpus, through the real face

_spec2 = importlib.util.spec_from_file_location(
    "redact_fixture_corpus", Path(__file__).parent / "fixtures" / "redact" / "corpus.py")
assert _spec2 and _spec2.loader
corpus2 = importlib.util.module_from_spec(_spec2)
sys.modules["redact_fixture_corpus"] = corpus2
_spec2.loader.exec_module(corpus2)

BROAD_SECRETS = corpus2.secret_cases()
LOOKALIKES = corpus2.lookalike_cases()


def test_broad_corpora_are_big_and_varied() -> None:
    families = {c.family for c in BROAD_SECRETS}
    assert len(BROAD_SECRETS) >= 800 and len(families) >= 60, (len(BROAD_SECRETS), len(families))
    assert len(LOOKALIKES) >= 700


def test_broad_corpus_through_add_and_get(mem) -> None:
    """Every case stored with the library's add and read back with get: >= 99 % of the secrets
    gone, <= 1 % of the look-alikes changed."""
    missed = []
    for case in BROAD_SECRETS:
        stored = mem.get(mem.add(case.text).id)["request"]
        if any(s in stored for s in case.secrets):
            missed.append((case.family, stored[:200]))
    caught = 1 - len(missed) / len(BROAD_SECRETS)
    altered = []
    for text in LOOKALIKES:
        stored = mem.get(mem.add(text).id)["request"]
        if stored != text.strip():
            altered.append((text[:200], stored[:200]))
    assert caught >= 0.99, f"caught {caught:.2%}; missed e.g. {missed[:5]}"
    assert len(altered) / len(LOOKALIKES) <= 0.01, f"altered e.g. {altered[:5]}"


def _shapes() -> dict[str, tuple[str, str]]:
    """The shapes issue 13 found in clear after `remem add` → `remem get`: (text, secret)."""
    r = random.Random(13)
    pem = corpus2.pem(r, "PRIVATE KEY")
    kid, sec = corpus2.TOKENS["aws_access_key_id"](r), corpus2.TOKENS["aws_secret"](r)
    env_value = corpus2.rand(r, 6) + "(x*" + corpus2.rand(r, 4) + "%#" + corpus2.rand(r, 3)
    return {
        "short password, yaml": ("password: hunter2secret", "hunter2secret"),
        "short password, env": ("password=hunter2", "hunter2"),
        "all-letter password": ("db:\n  user: app\n  password: correcthorse\n", "correcthorse"),
        "aws csv": (f"Access key ID,Secret access key\n{kid},{sec}\n", sec),
        "aws prose": (f"the IAM user got key id {kid} and secret {sec}", sec),
        "sendgrid": ("mail key " + (t := corpus2.TOKENS["sendgrid"](r)), t),
        "telegram": ("bot token " + (t := corpus2.TOKENS["telegram"](r)), t),
        "discord": ("DISCORD bot " + (t := corpus2.TOKENS["discord"](r)), t),
        "digitalocean": ("doctl auth init -t " + (t := corpus2.TOKENS["digitalocean"](r)), t),
        "azure sas": ("https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig="
                      + (t := corpus2.TOKENS["azure_sas_sig"](r)), t),
        "okta": ("Authorization: SSWS " + (t := corpus2.TOKENS["okta"](r)), t),
        "session cookie": ("Cookie: theme=dark; sessionid=" + (t := corpus2.rand(r, 32, corpus2.LOWER)), t),
        ".env symbols": (f"NODE_ENV=production\nSESSION_SECRET={env_value}\n", env_value),
        "pem in json in json": (json.dumps(json.dumps({"private_key": pem})), pem.splitlines()[2]),
    }


def test_issue_shapes_through_the_cli(cli) -> None:
    """`remem add` then `remem get`, the way the issue measured it."""
    for name, (text, secret) in _shapes().items():
        added = cli("add", "--json", "-", input=text.encode())
        assert added.returncode == 0, added.stderr
        got = cli("get", "--json", json.loads(added.stdout)["id"])
        assert got.returncode == 0, got.stderr
        request = json.loads(got.stdout)["request"]
        assert secret not in request, (name, request)
        assert "[REDACTED:" in request, (name, request)


@pytest.mark.parametrize("text", [
    "password: ${DB_PASSWORD}", "password: '********'", "password: <your password>", "password: changeme",
    "password = getpass.getpass()", "conn = connect(user=user, password=password)", "password: str",
    "PWD=/home/alice/app", "docker login --password-stdin < ~/.token", "- password:     The password to use.",
])
def test_password_placeholders_and_code_stay(text: str) -> None:
    # the documented non-values: placeholders, masks, types, code, paths and prose
    assert redact_text(text) == text


@pytest.mark.parametrize(("text", "clear"), [
    ("password: hunter2secret", "hunter2secret"), ("password=hunter2", "hunter2"), ("pwd: abc", "abc"),
    ('{"password": "x1"}', "x1"), ("--password hunter", "hunter"), ("mysql://u:pw1@db/x", "pw1"),
    ("https://h/login?user=a&password=swordfish&next=/", "swordfish"), ("[db]\npassword = swordfish\n", "swordfish"),
])
def test_any_password_value_is_redacted_whatever_its_length(text: str, clear: str) -> None:
    assert clear not in redact_text(text), redact_text(text)


# ---------------------------------------------------------------- hook state and logs


def _tree_bytes(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()]


def test_hook_payload_secret_never_reaches_disk(remem_home, mem, monkeypatch) -> None:
    """A prompt and a tool output with secrets: nothing under REMEM_HOME (database, WAL, hook
    state, logs) holds them in clear, while the turn is open and after it ends."""
    from remem.integrations import log, runtime

    monkeypatch.setenv("REMEM_PORT", "9")  # no daemon: the SQLite fallback writes the database
    r = random.Random(18)
    ghp, sg, pw = corpus2.TOKENS["github"](r), corpus2.TOKENS["sendgrid"](r), "hunter2"
    kid, sec = corpus2.TOKENS["aws_access_key_id"](r), corpus2.TOKENS["aws_secret"](r)
    secrets = [ghp, sg, kid, sec]
    base = {"session_id": "leak-1", "cwd": "/home/alice/app"}

    def call(event: str, payload: dict) -> None:
        runtime.run("codex", event, json.dumps({**base, **payload}).encode())

    call("UserPromptSubmit", {"prompt": f"deploy with GITHUB_TOKEN={ghp} and password={pw}", "turn_id": "t1"})
    call("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "cat ~/.aws/credentials.csv"},
                         "tool_response": f"Access key ID,Secret access key\n{kid},{sec}\nSENDGRID={sg}\n",
                         "tool_use_id": "c1"})
    log.write(remem_home, "warn", f"upstream said: bad key {sg}")
    state_files = list((remem_home / "hooks" / "state").glob("*.json"))
    assert state_files, "the open turn is kept in a state file"
    for path, data in _tree_bytes(remem_home):
        for s in secrets:
            assert s.encode() not in data, (path, s)
        assert b"password=hunter2" not in data, path
    call("Stop", {"last_assistant_message": f"Done; rotated {ghp}.", "turn_id": "t1"})
    for path, data in _tree_bytes(remem_home):
        for s in secrets:
            assert s.encode() not in data, (path, s)
    [turn] = mem.list(agent="codex")
    assert "[REDACTED:github_token]" in turn["request"] and "[REDACTED:aws_secret_key]" in turn["actions"][0]["output"]


def test_state_redaction_skips_what_was_already_redacted(remem_home) -> None:
    from remem.integrations import state

    tok = corpus2.TOKENS["github"](random.Random(1))
    with state.session_state(remem_home, "codex", "s1") as st:
        st["pending"] = {"prompt": f"use {tok}"}
        st["tools"] = [{"output": f"token {tok}", "n": 3}]
    raw = state.state_path(remem_home, "codex", "s1").read_text(encoding="utf-8")
    assert tok not in raw and raw.count("[REDACTED:github_token]") == 2
    loaded = state.load(state.state_path(remem_home, "codex", "s1"))
    assert state.redacted(loaded, frozenset()) == loaded  # idempotent
    assert state.redacted({"a": [f"x {tok}"]}, frozenset({f"x {tok}"})) == {"a": [f"x {tok}"]}


def test_old_state_files_are_pruned_when_a_session_starts(remem_home) -> None:
    import os

    from remem.integrations import state

    with state.session_state(remem_home, "codex", "old") as st:
        st["pending"] = {"prompt": "hello"}
    old = state.state_path(remem_home, "codex", "old")
    stale = time.time() - state.MAX_AGE_SECONDS - 60
    for p in (old, Path(str(old) + ".lock")):
        os.utime(p, (stale, stale))
    with state.session_state(remem_home, "codex", "new") as st:
        st["pending"] = {"prompt": "next"}
    assert not old.exists() and not Path(str(old) + ".lock").exists()
    assert state.state_path(remem_home, "codex", "new").exists()
