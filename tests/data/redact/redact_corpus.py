"""Deterministic corpora for measuring redaction: real-shaped fake secrets in realistic
surroundings, and ordinary code and prose that must come out unchanged.

Generated at run time from a seeded ``random.Random`` so no secret-shaped string is committed
(push protection and secret scanners stay quiet). Shared by tests/test_redact.py and
src/remem/bench/redaction.py.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass

B62 = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = B62 + "+/"
URLSAFE = B62 + "-_"


@dataclass(frozen=True, slots=True)
class Case:
    kind: str  # the kind we expect redact() to report
    text: str  # the secret in its surroundings
    secret: str  # the part that must not survive


def rand(r: random.Random, n: int, alphabet: str = B62) -> str:
    """A random string that mixes letters and digits (as real keys do)."""
    while True:
        s = "".join(r.choice(alphabet) for _ in range(n))
        if n < 8 or (any(c.isdigit() for c in s) and any(c.isalpha() for c in s)) or not any(
            c.isdigit() for c in alphabet
        ):
            return s


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# ---------------------------------------------------------------- fake secrets, one maker per kind


def openai_key(r: random.Random) -> str:
    style = r.randrange(3)
    if style == 0:
        return "sk-" + "proj-" + rand(r, r.choice([48, 64, 124]), URLSAFE)
    if style == 1:
        return "sk-" + rand(r, 20) + "T3Blbk" + "FJ" + rand(r, 20)
    return "sk-" + "svcacct-" + rand(r, 74, URLSAFE)


def anthropic_key(r: random.Random) -> str:
    return "sk-" + "ant-" + r.choice(["api03", "admin01"]) + "-" + rand(r, 93, URLSAFE) + "AA"


def github_token(r: random.Random) -> str:
    if r.random() < 0.25:
        return "github" + "_pat_" + rand(r, 22) + "_" + rand(r, 59)
    return "gh" + r.choice("pousr") + "_" + rand(r, 36)


def gitlab_token(r: random.Random) -> str:
    return "gl" + "pat-" + rand(r, 20, URLSAFE)


def slack_token(r: random.Random) -> str:
    style = r.randrange(3)
    d = lambda n: str(r.randrange(10 ** (n - 1), 10**n))  # noqa: E731
    if style == 0:
        return "xo" + "xb-" + d(12) + "-" + d(13) + "-" + rand(r, 24)
    if style == 1:
        return "xo" + "xp-" + d(12) + "-" + d(12) + "-" + d(13) + "-" + rand(r, 32, HEX)
    return "xa" + "pp-1-A" + rand(r, 10, UPPER_DIGITS) + "-" + d(13) + "-" + rand(r, 64, HEX)


def slack_webhook_path(r: random.Random) -> str:
    return "T" + rand(r, 10, UPPER_DIGITS) + "/B" + rand(r, 10, UPPER_DIGITS) + "/" + rand(r, 24)


def aws_key_id(r: random.Random) -> str:
    return r.choice(["AK", "AS"]) + "IA" + rand(r, 16, UPPER_DIGITS)


def aws_secret(r: random.Random) -> str:
    return rand(r, 40, B64)


def google_key(r: random.Random) -> str:
    return "AI" + "za" + rand(r, 35, URLSAFE)


def stripe_key(r: random.Random) -> str:
    return r.choice(["sk_live_", "rk_live_", "sk_test_", "rk_test_"]) + rand(r, r.choice([24, 99]))


def npm_token(r: random.Random) -> str:
    return "npm" + "_" + rand(r, 36)


def hf_token(r: random.Random) -> str:
    while True:
        s = rand(r, 34, string.ascii_letters)
        if s != s.lower() and s != s.upper():
            return "hf" + "_" + s


def generic_value(r: random.Random) -> str:
    style = r.randrange(4)
    if style == 0:
        return rand(r, r.randint(16, 48))
    if style == 1:
        return rand(r, r.choice([32, 40, 64]), HEX)
    if style == 2:
        return rand(r, r.choice([24, 44]), B64) + r.choice(["", "="])
    return rand(r, r.randint(20, 40), URLSAFE).strip("-_") + rand(r, 2, string.digits)


def password_value(r: random.Random) -> str:
    return r.choice(string.ascii_letters) + rand(r, r.randint(9, 22), B62 + "!#%^*_+=~.-")


def opaque_token(r: random.Random) -> str:
    if r.random() < 0.3:
        return "ya29." + rand(r, r.randint(60, 150), URLSAFE)
    return rand(r, r.randint(24, 64), B62 + "._~-").strip("._~-") + rand(r, 2, string.digits)


def jwt(r: random.Random) -> str:
    header = {"alg": r.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    payload = {"sub": str(r.randrange(10**9)), "iat": 1700000000 + r.randrange(10**7),
               "exp": 1710000000 + r.randrange(10**7), "scope": r.choice(["repo", "read:user", "openid"])}
    sig = b64url(r.randbytes(r.choice([32, 64])))
    return ".".join([b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()), sig])


def pem_block(r: random.Random) -> tuple[str, str]:
    label = r.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY",
                      "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY"])
    body = base64.b64encode(r.randbytes(r.choice([121, 400, 1190]))).decode()
    width = 70 if label.startswith("OPENSSH") else 64
    lines = [body[i:i + width] for i in range(0, len(body), width)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----", lines[len(lines) // 2]


def url_password(r: random.Random) -> str:
    return r.choice(string.ascii_letters) + rand(r, r.randint(9, 20), B62 + "!*_.~-")


# ---------------------------------------------------------------- surroundings

TOKEN_CONTEXTS = [
    "{var}={s}\n",
    'export {var}="{s}"\n',
    '{{\n  "{jkey}": "{s}",\n  "timeout": 30,\n  "retries": 3\n}}',
    "curl -sS https://api.example.com/v1/models -H 'X-Token: {s}' | jq .",
    "2024-03-{dd}T10:{mm}:11.532Z DEBUG http.client sending request with key {s} (attempt 2)",
    'client = Client(api_key="{s}", timeout=30)\nresp = client.models.list()',
    'Traceback (most recent call last):\n  File "/srv/app/main.py", line 42, in <module>\n    login("{s}")\n'
    '  File "/srv/app/auth.py", line 17, in login\n    raise AuthError(f"rejected {{token}}")\nAuthError: rejected {s}',
    "```bash\nexport {var}={s}\nnpm run deploy\n```",
    "{ykey}: {s}\nlog_level: info\n",
    "hey, I pasted my key {s} into the config but it still returns 401",
    'os.environ.setdefault("{var}", "{s}")',
    "env:\n  - name: {var}\n    value: {s}\n",
    "[default]\n{ykey} = {s}\n",
]

VARS = {
    "openai_key": ("OPENAI_API_KEY", "openai_api_key"),
    "anthropic_key": ("ANTHROPIC_API_KEY", "anthropic_api_key"),
    "github_token": ("GITHUB_TOKEN", "github_token"),
    "gitlab_token": ("GITLAB_TOKEN", "gitlab_token"),
    "slack_token": ("SLACK_BOT_TOKEN", "slack_token"),
    "aws_access_key_id": ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
    "google_api_key": ("GOOGLE_API_KEY", "google_api_key"),
    "stripe_key": ("STRIPE_SECRET_KEY", "stripe_secret_key"),
    "npm_token": ("NPM_TOKEN", "npm_token"),
    "huggingface_token": ("HF_TOKEN", "hf_token"),
}

TOKEN_MAKERS: dict[str, Callable[[random.Random], str]] = {
    "openai_key": openai_key, "anthropic_key": anthropic_key, "github_token": github_token,
    "gitlab_token": gitlab_token, "slack_token": slack_token, "aws_access_key_id": aws_key_id,
    "google_api_key": google_key, "stripe_key": stripe_key, "npm_token": npm_token,
    "huggingface_token": hf_token,
}

SECRET_KEYS = ["api_key", "API_KEY", "apiKey", "SECRET_KEY", "client_secret", "clientSecret", "auth_token",
               "ACCESS_TOKEN", "accessToken", "refresh_token", "SENTRY_AUTH_TOKEN", "webhook_secret",
               "app_secret", "jwtSecret", "encryption_key", "signing_key", "SESSION_SECRET",
               "CONSUMER_SECRET", "DATADOG_API_KEY", "private_key", "X-Api-Key"]
PASSWORD_KEYS = ["password", "DB_PASSWORD", "db_password", "POSTGRES_PASSWORD", "passwd",
                 "MYSQL_ROOT_PASSWORD", "admin_pass", "PGPASSWORD", "redis_password", "passphrase",
                 "keystorePassword", "smtp.password", "spring.datasource.password"]

ASSIGNMENT_CONTEXTS = [
    "{k}={s}\n",
    '{k}="{s}"\n',
    '{{"name": "prod", "{k}": "{s}", "region": "eu-west-1"}}',
    "{k}: {s}\n",
    "{k}: '{s}'\n",
    '{k} = "{s}"\n',
    'client = Client({kw}="{s}", retries=3)',
    "$ ./deploy.sh --{flag} {s} --env prod",
    "cli --{flag}={s} --verbose",
    "GET /v1/events?{kw}={s}&limit=50 HTTP/1.1",
    "const config = {{\n  {kw}: \"{s}\",\n  debug: false,\n}};",
    '{kw} := "{s}"',
    "2024-05-0{d} 12:00:01 WARN settings loaded {k}={s} from .env",
    '\\"{k}\\": \\"{s}\\"',
]

BEARER_CONTEXTS = [
    "Authorization: Bearer {s}",
    "curl -H 'Authorization: Bearer {s}' https://api.example.com/v2/me",
    'headers = {{"Authorization": "Bearer {s}", "Accept": "application/json"}}',
    "> GET /user HTTP/2\n> Host: api.example.com\n> authorization: bearer {s}\n> accept: */*",
    "DEBUG: retrying with Bearer {s} after 401",
]

JWT_CONTEXTS = [
    "Set-Cookie: session={s}; Path=/; HttpOnly; Secure",
    '{{"id_token": "{s}", "expires_in": 3600}}',
    "Authorization: Bearer {s}",
    "decoded token {s} -> sub=1234",
    "localStorage.setItem('jwt', '{s}')",
]

URL_TEMPLATES = [
    "DATABASE_URL=postgres://{u}:{p}@db.internal:5432/app",
    'engine = create_engine("postgresql+psycopg://{u}:{p}@localhost/analytics")',
    "origin\thttps://{u}:{p}@github.com/acme/infra.git (fetch)",
    "connecting to redis://:{p}@cache-01.prod:6379/0 ...",
    "MONGO_URI=mongodb+srv://{u}:{p}@cluster0.ab1cd.mongodb.net/?retryWrites=true",
    "amqp://{u}:{p}@rabbit:5672/%2F",
    "wget ftp://{u}:{p}@files.example.org/pub/data.tar.gz",
]

MIMES = ["image/png", "image/jpeg", "image/svg+xml", "application/pdf", "font/woff2", "audio/mpeg", "image/webp"]
DATA_CONTEXTS = [
    "![screenshot]({s})",
    '<img alt="logo" src="{s}" width="32">',
    ".icon {{ background-image: url({s}); }}",
    '{{"type": "image_url", "image_url": {{"url": "{s}"}}}}',
]
BLOB_CONTEXTS = [
    '{{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "{s}"}}}}',
    "echo {s} | base64 -d > out.bin",
    "tool output:\n{s}\n(end of output)",
    "payload={s} status=ok",
]
PEM_CONTEXTS = [
    "$ cat ~/.ssh/id_rsa\n{s}\n$ ",
    '{{"type": "service_account", "project_id": "demo-123", "private_key": "{json}", "client_email": "x@demo.iam"}}',
    "tls:\n  key: |\n    {indented}\n  cert: ./cert.pem\n",
    "Here is the key file:\n\n```\n{s}\n```\n",
]
PRIVATE_CONTEXTS = [
    "Remember the staging setup. <private>{s}</private> Then restart nginx.",
    "<PRIVATE>\n{s}\n</PRIVATE>\nok",
    "notes: <private>{s}</Private>",
]
SENTENCES = ["the vault code is {c}", "my home address is 12 Elm St, code {c}",
             "door pin {c}\nalarm {c}", "ssn-like number {c} do not store", "recovery phrase {c}"]


def _pick(r: random.Random, options: list[str]) -> str:
    return options[r.randrange(len(options))]


def secret_cases(seed: int = 1234, per_kind: int = 25) -> list[Case]:
    """``per_kind`` real-shaped secrets of every kind, embedded in realistic text."""
    r = random.Random(seed)
    cases: list[Case] = []
    for kind, make in TOKEN_MAKERS.items():
        var, ykey = VARS[kind]
        for i in range(per_kind):
            s = make(r)
            tpl = TOKEN_CONTEXTS[i % len(TOKEN_CONTEXTS)]
            cases.append(Case(kind, tpl.format(s=s, var=var, jkey=ykey, ykey=ykey,
                                               dd=f"{r.randint(1, 28):02d}", mm=f"{r.randint(0, 59):02d}"), s))
    for _ in range(per_kind):
        path = slack_webhook_path(r)
        url = "https://hooks.slack" + ".com/services/" + path
        tpl = _pick(r, ["SLACK_WEBHOOK_URL={s}", 'requests.post("{s}", json={{"text": "deploy done"}})',
                        "curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"hi\"}}' {s}",
                        "webhook: {s}"])
        cases.append(Case("slack_webhook", tpl.format(s=url), path))
    for i in range(per_kind):
        s = aws_secret(r)
        tpl = ["aws_secret_access_key = {s}\n", "AWS_SECRET_ACCESS_KEY={s}", '    "SecretAccessKey": "{s}",',
               'export AWS_SECRET_ACCESS_KEY="{s}"', "aws configure set aws_secret_access_key {s}",
               "aws_secret_key: {s}", "      AWS_SECRET_ACCESS_KEY: {s}\n"][i % 7]
        text = tpl.format(s=s)
        if i % 3 == 0:
            text = f"[profile dev]\naws_access_key_id = {aws_key_id(r)}\n" + text
        cases.append(Case("aws_secret_key", text, s))
    for kind, keys, make in (("secret", SECRET_KEYS, generic_value), ("password", PASSWORD_KEYS, password_value)):
        for i in range(per_kind):
            s, k = make(r), _pick(r, keys)
            kw = re.sub(r"[^A-Za-z0-9]+", "_", k)
            flag = re.sub(r"(?<=[a-z])(?=[A-Z])", "-", kw).replace("_", "-").lower()
            tpl = ASSIGNMENT_CONTEXTS[i % len(ASSIGNMENT_CONTEXTS)]
            cases.append(Case(kind, tpl.format(k=k, kw=kw, flag=flag, s=s, d=r.randint(1, 9)), s))
    for i in range(per_kind):
        s = opaque_token(r)
        cases.append(Case("bearer_token", BEARER_CONTEXTS[i % len(BEARER_CONTEXTS)].format(s=s), s))
    for _ in range(per_kind):
        cred = f"{_pick(r, ['admin', 'ci-bot', 'deploy', 'alice'])}:{password_value(r)}"
        s = base64.b64encode(cred.encode()).decode()
        tpl = _pick(r, ["Authorization: Basic {s}", "curl -H 'Authorization: Basic {s}' https://registry.local/v2/",
                        '{{"headers": {{"Authorization": "Basic {s}"}}}}'])
        cases.append(Case("basic_auth", tpl.format(s=s), s))
    for i in range(per_kind):
        s = jwt(r)
        cases.append(Case("jwt", JWT_CONTEXTS[i % len(JWT_CONTEXTS)].format(s=s), s))
    for i in range(per_kind):
        block, line = pem_block(r)
        tpl = PEM_CONTEXTS[i % len(PEM_CONTEXTS)]
        text = tpl.format(s=block, json=block.replace("\n", "\\n") + "\\n", indented=block.replace("\n", "\n    "))
        cases.append(Case("private_key", text, line))
    for i in range(per_kind):
        p = url_password(r)
        text = URL_TEMPLATES[i % len(URL_TEMPLATES)].format(u=_pick(r, ["app", "admin", "svc_reader", "bob"]), p=p)
        cases.append(Case("url_password", text, ":" + p + "@"))
    for i in range(per_kind):
        c = rand(r, 12)
        s = _pick(r, SENTENCES).format(c=c)
        cases.append(Case("private", PRIVATE_CONTEXTS[i % len(PRIVATE_CONTEXTS)].format(s=s), c))
    for i in range(per_kind):
        payload = base64.b64encode(r.randbytes(r.choice([60, 700, 5000, 30000]))).decode()
        s = f"data:{_pick(r, MIMES)};base64,{payload}"
        cases.append(Case("data_url", DATA_CONTEXTS[i % len(DATA_CONTEXTS)].format(s=s), payload))
    for i in range(per_kind):
        s = base64.b64encode(r.randbytes(r.choice([150, 400, 2000, 9000]))).decode()
        cases.append(Case("base64", BLOB_CONTEXTS[i % len(BLOB_CONTEXTS)].format(s=s), s))
    return cases


# ---------------------------------------------------------------- ordinary code and prose

WORDS = ["user", "order", "cache", "index", "token", "session", "config", "request", "payload", "worker",
         "queue", "event", "invoice", "report", "metric", "account", "profile", "search", "upload", "stream"]
NAMES = ["Alice Chen", "Bob Martin", "Priya Raman", "Jonas Weber", "Mei Lin", "Carlos Ruiz"]
LANGS_ZH = ["我们在周三的会议上讨论了缓存失效的策略，最后决定使用写穿透的方式。",
            "这个函数的时间复杂度是 O(n log n)，在数据量很大的时候需要注意内存占用。",
            "请先运行单元测试，再提交合并请求；如果失败，请查看日志里的错误信息。",
            "部署脚本会读取环境变量中的令牌，但不会把它写进日志。",
            "这次重构把配置解析拆成了三个模块，便于以后维护和测试。"]


def _fills(r: random.Random) -> dict[str, Callable[[], str]]:
    return {
        "sha": lambda: rand(r, 40, HEX),
        "short": lambda: rand(r, 7, HEX),
        "sha256": lambda: rand(r, 64, HEX),
        "uuid": lambda: "-".join(rand(r, n, HEX) for n in (8, 4, 4, 4, 12)),
        "n": lambda: str(r.randint(1, 5000)),
        "port": lambda: str(r.choice([3000, 5432, 6379, 8000, 8080, 9200])),
        "word": lambda: _pick(r, WORDS),
        "Word": lambda: _pick(r, WORDS).capitalize(),
        "name": lambda: _pick(r, NAMES),
        "ver": lambda: f"{r.randint(0, 9)}.{r.randint(0, 40)}.{r.randint(0, 20)}",
        "date": lambda: f"2024-0{r.randint(1, 9)}-{r.randint(10, 28)}",
        "time": lambda: f"{r.randint(10, 23)}:{r.randint(10, 59)}:{r.randint(10, 59)}",
        "ip": lambda: f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
        "integrity": lambda: "sha512-" + base64.b64encode(r.randbytes(64)).decode(),
        "sha1int": lambda: "sha1-" + base64.b64encode(r.randbytes(20)).decode(),
        "color": lambda: "#" + rand(r, 6, HEX),
        "zh": lambda: _pick(r, LANGS_ZH),
        "hexaddr": lambda: "0xc000" + rand(r, 6, HEX),
    }


ORDINARY_TEMPLATES = [
    # --- Python
    'def get_client(api_key: str | None = None) -> Client:\n    token = None\n    api_key = api_key or os.environ["OPENAI_API_KEY"]\n    return Client(api_key=api_key)\n',
    'password = os.environ["DB_PASSWORD"]\nconn = psycopg.connect(host="localhost", port=⟨port⟩, password=password)\n',
    "class Settings(BaseSettings):\n    api_key: str\n    secret_key: SecretStr\n    token_count: int = ⟨n⟩\n    debug: bool = False\n",
    "token_count=⟨n⟩\nmax_tokens = 4096\nprompt_tokens, completion_tokens = usage.prompt_tokens, usage.completion_tokens\n",
    'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")\ntokens = tokenizer(text, truncation=True, max_length=512)\n',
    "items = sorted(rows, key=lambda row: row[\"created_at\"], reverse=True)\nkey = (user_id, ⟨word⟩_id)\n",
    "def test_redaction_of_bearer_tokens_in_headers():\n    assert redact(\"x\").count == 0\n\n\ndef test_⟨word⟩_roundtrip_preserves_order_and_metadata_for_⟨word⟩s():\n    pass\n",
    'secret = get_secret("⟨word⟩-credentials")\nself.api_key = api_key\nself.password_hash = hash_password(password)\n',
    'headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}\nresp = httpx.get(url, headers=headers, timeout=10)\n',
    'logger.info("refreshed token for user_id=%s in %dms", user_id, elapsed_ms)\ncache_key = f"⟨word⟩:{user_id}:{page}"\n',
    "@dataclass\nclass ⟨Word⟩Secret:\n    secret_name: str = \"prod-db-credentials\"\n    key_path: Path = Path(\"~/.ssh/id_ed25519\")\n",
    "password = getpass.getpass(\"Password: \")\nif not check_password(user, password):\n    raise PermissionError(\"bad credentials\")\n",
    "for i, (key, value) in enumerate(sorted(counts.items())):\n    print(f\"{i:>3} {key:<20} {value}\")\n",
    "import hashlib\ndigest = hashlib.sha256(data).hexdigest()  # e.g. ⟨sha256⟩\n",
    "@pytest.mark.parametrize(\"n\", [1, 2, ⟨n⟩])\ndef test_chunking(n):\n    assert len(list(chunks(range(n), 3))) == math.ceil(n / 3)\n",
    "with open(\"/var/log/⟨word⟩/app.log\", encoding=\"utf-8\") as fh:\n    lines = [l.rstrip() for l in fh if \"ERROR\" in l]\n",
    "session_id = uuid.UUID(\"⟨uuid⟩\")\nrequest_id = \"⟨uuid⟩\"\n",
    "token_type = \"Bearer\"\nauth_header = request.headers.get(\"Authorization\", \"\")\nif not auth_header.startswith(\"Bearer \"):\n    return 401\n",
    "ACCESS_TOKEN_EXPIRE_MINUTES = 30\nSECRET_KEY = os.getenv(\"SECRET_KEY\")\nALGORITHM = \"HS256\"\n",
    # --- JavaScript / TypeScript
    "const apiKey = process.env.OPENAI_API_KEY;\nconst client = new OpenAI({ apiKey });\n",
    "fetch(`${baseUrl}/api/⟨word⟩s/${id}`, {\n  headers: { Authorization: `Bearer ${token}` },\n}).then((r) => r.json());\n",
    "export const TOKEN_KEY = \"auth_token\";\nlocalStorage.setItem(TOKEN_KEY, token);\n",
    "export function useAuth(): { token: string | null; login: (password: string) => Promise<void> } {\n  const [token, setToken] = useState<string | null>(null);\n  return { token, login };\n}\n",
    "app.get('/api/⟨word⟩/:id', async (req, res) => {\n  const row = await db.⟨word⟩.findUnique({ where: { id: req.params.id } });\n  res.json(row);\n});\n",
    "<input type=\"password\" name=\"password\" autocomplete=\"current-password\" minlength=\"12\" required>\n",
    "module.exports = {\n  secret: process.env.SESSION_SECRET,\n  resave: false,\n  saveUninitialized: true,\n};\n",
    # --- Go
    "token := os.Getenv(\"GITHUB_TOKEN\")\nif token == \"\" {\n\treturn fmt.Errorf(\"GITHUB_TOKEN not set\")\n}\n",
    "func (s *Server) handle⟨Word⟩(w http.ResponseWriter, r *http.Request) {\n\tkey := r.URL.Query().Get(\"key\")\n\tif err := s.store.Delete(r.Context(), key); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t}\n}\n",
    "goroutine 1 [running]:\nmain.main()\n\t/home/dev/src/⟨word⟩/main.go:⟨n⟩ +0x1d\nexit status 2\npanic: runtime error: invalid memory address ⟨hexaddr⟩\n",
    # --- Rust
    "let api_key = std::env::var(\"API_KEY\").expect(\"API_KEY must be set\");\nlet client = reqwest::Client::builder().build()?;\n",
    "impl ⟨Word⟩Store {\n    pub fn get(&self, key: &str) -> Option<&Value> {\n        self.map.get(key)\n    }\n}\n",
    "error[E0382]: borrow of moved value: `token`\n --> src/main.rs:⟨n⟩:20\n  |\n  = note: move occurs because `token` has type `String`\n",
    # --- SQL
    "SELECT id, email, password_hash FROM users WHERE email = $1 AND deleted_at IS NULL;\n",
    "CREATE TABLE api_tokens (\n  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),\n  token_hash text NOT NULL,\n  created_at timestamptz NOT NULL DEFAULT now()\n);\n",
    "UPDATE ⟨word⟩s SET status = 'done', updated_at = now() WHERE id = '⟨uuid⟩';\n",
    # --- shell
    "git clone https://github.com/acme/⟨word⟩-service.git && cd ⟨word⟩-service && make test\n",
    "export PATH=\"$HOME/.local/bin:$PATH\"\nexport PGPASSWORD=$(cat /run/secrets/pg_password)\n",
    "docker run --rm -e POSTGRES_PASSWORD=$POSTGRES_PASSWORD -p ⟨port⟩:5432 postgres:16\n",
    "echo \"$REGISTRY_TOKEN\" | docker login ghcr.io -u ci-bot --password-stdin\n",
    "kubectl get secret ⟨word⟩-credentials -o jsonpath='{.data.password}' | base64 -d\n",
    "ssh -i ~/.ssh/id_ed25519 deploy@⟨ip⟩ 'sudo systemctl restart ⟨word⟩.service'\n",
    "curl -H \"Authorization: Bearer $TOKEN\" https://api.github.com/repos/acme/⟨word⟩/pulls?state=open\n",
    "$ ls -la src/remem/ingest\ntotal 24\n-rw-r--r-- 1 dev dev 2767 Nov 30 16:50 normalize.py\n-rw-r--r-- 1 dev dev 6308 Nov 30 16:51 pipeline.py\n",
    "find . -name '*.pyc' -delete && python -m pytest -q tests/test_⟨word⟩.py::test_roundtrip -x\n",
    "read -r -s -p \"Password: \" PASSWORD\nmysql -u root -p\"$PASSWORD\" -e 'SHOW DATABASES;'\n",
    # --- YAML / config
    "jobs:\n  publish:\n    steps:\n      - uses: actions/setup-node@v4\n      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}\n",
    "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: ⟨word⟩-db-credentials\n        key: password\n",
    "- uses: actions/cache@v4\n  with:\n    path: ~/.cache/pip\n    key: ${{ runner.os }}-pip-${{ hashFiles('**/requirements.txt') }}\n",
    "database:\n  host: db.internal\n  port: ⟨port⟩\n  user: app\n  password: ${DB_PASSWORD}\n  pool_size: 10\n",
    "OPENAI_API_KEY=your-api-key-here\nANTHROPIC_API_KEY=\nAWS_REGION=us-east-1\nLOG_LEVEL=debug\n",
    "[tool.poetry.dependencies]\npython = \"^3.11\"\nkeyring = \"^24.3\"\ntokenizers = \"^0.15\"\n",
    "password: \"********\"\ntoken: <your-token>\napi_key: \"{{ api_key }}\"\n",
    "[[package]]\nname = \"⟨word⟩-core\"\nversion = \"⟨ver⟩\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"⟨sha256⟩\"\n",
    "content-hash = \"⟨sha256⟩\"\npython-versions = \">=3.11\"\n",
    # --- JSON / lockfiles / package metadata
    '"node_modules/⟨word⟩-utils": {\n  "version": "⟨ver⟩",\n  "resolved": "https://registry.npmjs.org/⟨word⟩-utils/-/⟨word⟩-utils-⟨ver⟩.tgz",\n  "integrity": "⟨integrity⟩",\n  "dev": true\n}',
    '"lodash": {\n  "version": "4.17.21",\n  "integrity": "⟨integrity⟩"\n},\n"ms": {\n  "version": "2.1.2",\n  "integrity": "⟨sha1int⟩"\n}',
    '{"token_type": "Bearer", "expires_in": 3600, "scope": "repo read:org", "created_at": "⟨date⟩T⟨time⟩Z"}',
    '{"key": "ctrl+shift+p", "command": "workbench.action.showCommands"}',
    '{"etag": "⟨sha⟩", "id": "⟨uuid⟩", "size": ⟨n⟩}',
    '{"model": "claude-3-5-sonnet-20241022", "max_tokens": 1024, "usage": {"input_tokens": ⟨n⟩, "output_tokens": ⟨n⟩}}',
    '"dependencies": {\n  "jsonwebtoken": "^9.0.2",\n  "bcrypt": "^5.1.1",\n  "dotenv": "^16.4.5"\n}',
    # --- git
    "commit ⟨sha⟩\nAuthor: ⟨name⟩ <dev@example.com>\nDate:   Tue ⟨date⟩ ⟨time⟩ +0200\n\n    Fix token refresh race in ⟨word⟩ worker\n\n    Refs #⟨n⟩\n",
    "⟨short⟩ Merge pull request #⟨n⟩ from acme/fix-⟨word⟩-secret-rotation\n⟨short⟩ Bump tokenizers from 0.15.1 to 0.15.2\n",
    "diff --git a/src/⟨word⟩.py b/src/⟨word⟩.py\nindex ⟨short⟩..⟨short⟩ 100644\n--- a/src/⟨word⟩.py\n+++ b/src/⟨word⟩.py\n@@ -10,7 +10,7 @@ def load():\n-    token = None\n+    token = os.environ.get(\"TOKEN\")\n",
    "HEAD is now at ⟨short⟩ Add retry to ⟨word⟩ uploader\nYour branch is up to date with 'origin/main'.\n",
    "remote: Resolving deltas: 100% (⟨n⟩/⟨n⟩), done.\nTo github.com:acme/⟨word⟩.git\n   ⟨short⟩..⟨short⟩  main -> main\n",
    # --- pip / package managers
    "requests==2.31.0\nurllib3==2.2.1\ntokenizers==0.15.2\nkeyring==24.3.1\npasslib==1.7.4\nPyJWT==2.8.0\n",
    "Successfully installed ⟨word⟩lib-⟨ver⟩ python-dotenv-1.0.1 cryptography-42.0.5\n",
    "⟨word⟩-sdk @ git+https://github.com/acme/⟨word⟩-sdk.git@⟨sha⟩\n",
    # --- Markdown and prose
    "## Authentication\n\nSet `OPENAI_API_KEY` in your environment. Tokens are read once at startup and never logged.\nSee [the docs](https://docs.example.com/auth#api-keys) for details.\n",
    "The server rejects Bearer tokens older than 15 minutes; refresh them with the `/oauth/token` endpoint.\n",
    "- [x] rotate the ⟨word⟩ secret\n- [ ] move passwords to the vault\n- [ ] document the `key = value` format\n",
    "| name | type | default |\n|------|------|---------|\n| `api_key` | `str` | `None` |\n| `timeout` | `float` | `30.0` |\n",
    "I think the problem is that the ⟨word⟩ cache key includes the session id, so every request misses.\n",
    "Basic usage: run `remem search \"⟨word⟩\"` and pick a result. Basic authentication is not supported.\n",
    "⟨zh⟩\n",
    "⟨zh⟩ 相关提交：⟨short⟩，会话 ⟨uuid⟩。\n",
    "> **Note**: passwords must be at least 12 characters long and contain a digit.\n",
    "Use `git rev-parse HEAD` to get the full SHA (e.g. ⟨sha⟩) and paste it into the release notes.\n",
    # --- stack traces and logs
    'Traceback (most recent call last):\n  File "/usr/lib/python3.11/site-packages/⟨word⟩/client.py", line ⟨n⟩, in request\n    raise TokenExpiredError(token_id)\n⟨word⟩.errors.TokenExpiredError: token ⟨uuid⟩ expired at ⟨date⟩\n',
    "Exception in thread \"main\" java.lang.IllegalStateException: missing key\n\tat com.acme.⟨word⟩.Config.load(Config.java:⟨n⟩)\n\tat com.acme.⟨word⟩.Main.main(Main.java:12)\n",
    "⟨date⟩T⟨time⟩.123Z INFO  [⟨word⟩-worker-3] processed batch=⟨n⟩ ok=⟨n⟩ failed=0 took=412ms trace_id=⟨sha256⟩\n",
    "⟨ip⟩ - - [10/Oct/2024:13:55:36 +0000] \"GET /api/⟨word⟩s?page=2 HTTP/1.1\" 200 ⟨n⟩ \"-\" \"Mozilla/5.0\"\n",
    "WARN auth: token expired for user_id=⟨n⟩, refreshing (attempt 1/3)\n",
    "npm ERR! code E401\nnpm ERR! Unable to authenticate, need: Basic realm=\"GitHub Package Registry\"\n",
    "sha256:⟨sha256⟩: Pulling from library/python\nDigest: sha256:⟨sha256⟩\nStatus: Downloaded newer image for python:3.11-slim\n",
    # --- CSS / HTML
    ".btn-primary {\n  color: ⟨color⟩;\n  background: linear-gradient(90deg, ⟨color⟩ 0%, ⟨color⟩ 100%);\n  border-radius: 4px;\n}\n",
    "<link rel=\"stylesheet\" href=\"/static/css/main.⟨short⟩.css\">\n<script src=\"/static/js/app.⟨sha⟩.js\" defer></script>\n",
    # --- certificates and public material
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\nRTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD\n-----END CERTIFICATE-----\n",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq8gS2oY3x6kq7k0Yy0aF7JtqZcVn1dA3o1bCqYl0Rk dev@laptop\n",
    "fingerprint SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8 (ED25519)\n",
    # --- misc identifiers
    "paths: /home/dev/projects/⟨word⟩/src/components/⟨Word⟩Settings/⟨Word⟩SettingsPanel.tsx\n",
    "Run ID ⟨uuid⟩ finished in ⟨n⟩s (commit ⟨short⟩, image sha256:⟨sha256⟩)\n",
    "http://localhost:⟨port⟩/api/v1/⟨word⟩s?id=⟨n⟩&sort=desc and https://user@github.com/acme/repo and git@github.com:acme/repo.git\n",
]


def ordinary_cases(seed: int = 4321, n: int = 600) -> list[str]:
    """``n`` snippets of ordinary code, config, logs and prose; none contains a secret."""
    r = random.Random(seed)
    fills = _fills(r)
    out = []
    for i in range(n):
        tpl = ORDINARY_TEMPLATES[i % len(ORDINARY_TEMPLATES)]
        out.append(re.sub(r"⟨(\w+)⟩", lambda m: fills[m.group(1)](), tpl))
    return out
