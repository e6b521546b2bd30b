"""Personal data as typed placeholders (``ingest/pii.py``): every kind found, and nothing in code that
only looks like it (versions, timestamps, dates, addresses of machines, digests, line numbers)."""

from __future__ import annotations

import pytest

from remem.ingest.pii import anonymise_paths, luhn_ok, scrub

HOME = "/home/alice"

FOUND = [
    ("write to alice.smith@example.co.uk today", "<EMAIL>"),
    ("cc: Bob <bob+billing@mail.acme-corp.io>", "<EMAIL>"),
    ("联系邮箱：zhang.wei@qq.com，谢谢", "<EMAIL>"),
    ("call me on +1 (415) 555-0132 after 5", "<PHONE>"),
    ("office: +44 20 7946 0958", "<PHONE>"),
    ("手机 +86 138 0013 8000", "<PHONE>"),
    ("我的手机号是13800138000，有问题打给我", "<PHONE>"),
    ("support line 415-555-0132", "<PHONE>"),
    ("whatsapp me: 15912345678", "<PHONE>"),
    ('PHONE = "+14155550132"', "<PHONE>"),
    ("phone: 415 555 0132", "<PHONE>"),
    ("support line (415) 555-0132", "<PHONE>"),
    ("card 4242 4242 4242 4242 exp 12/29", "<CARD>"),
    ("card=4111111111111111", "<CARD>"),
    ("amex 3782-822463-10005", "<CARD>"),
    ("SSN 123-45-6789 on file", "<ID>"),
    ("身份证号 11010519491231002X", "<ID>"),
    ("IBAN DE89 3704 0044 0532 0130 00", "<ID>"),
    ("ship it to 1600 Pennsylvania Avenue, Washington", "<ADDRESS>"),
    ("office at 221B Baker Street", "<ADDRESS>"),
    ("送到北京市朝阳区建国路88号", "<ADDRESS>"),
    ('File "/home/alice/proj/app.py", line 3', "<PATH>"),
    (r"at C:\Users\Bob\src\Shop\Cart.cs:line 48", "<PATH>"),
    ("open /Users/carol/Library/Logs/x.log", "<PATH>"),
    (r"C:\users\dave\AppData\Local\Temp", "<PATH>"),
    ("/mnt/c/Users/Erin/Downloads/report.pdf", "<PATH>"),
    ("token=[REDACTED:github_token] was leaked", "<SECRET>"),
]


@pytest.mark.parametrize(("text", "placeholder"), FOUND)
def test_each_kind_becomes_its_placeholder(text, placeholder):
    got = scrub(text, home=HOME)
    assert placeholder in got.text, got.text
    assert got.kinds.get(placeholder, 0) >= 1
    assert scrub(got.text, home=HOME).text == got.text          # scrubbing twice changes nothing


def test_the_rest_of_a_path_stays():
    got = scrub("Traceback: /home/alice/proj/src/app.py and /Users/dave/work/x.ts", home=HOME).text
    assert got == "Traceback: <PATH>/proj/src/app.py and <PATH>/work/x.ts"


CODE = [
    "bun test v1.1.29 ran 41 tests across 1 files [88.00ms]",
    "+ react@18.3.1\n+ lodash@4.17.21\n+ @types/node@20.11.5",
    "Python 3.12.4 (main, Jun  6 2024, 18:26:44) [GCC 12.2.0] on linux",
    "2026-12-02T05:52:13Z INFO started in 0.123s on 127.0.0.1:8000 and 10.0.0.12:5432",
    "created_at=1701234567 updated_ms=1701234567890 ns=1701234567890123456",
    "commit 3f2a1c9e0b1d4f6a8c2e5b7d9f1a3c5e7b9d1f3a and uuid 123e4567-e89b-12d3-a456-426614174000",
    "  at computeTotal (/app/src/cart/total.ts:48:25)\n  at Object.<anonymous> (src/x.test.ts:120:9)",
    "@@ -120,7 +120,8 @@ def total(items):\n+    return round(sum(i.price for i in items), 2)",
    "listen on port 8080, retry in 3000 ms, pid 48213, exit code 137, line 1234567",
    "numpy==1.26.4 scipy>=1.11,<2 torch 2.3.1+cu121",
    "pi = 3.14159265358979 and e = 2.718281828459045",
    "version 10.0.19045.3803 build 22631.3007 kb5034441",
    "git clone git@github.com:acme/shop.git && cd shop",
    "docker run -p 5432:5432 -e TZ=UTC postgres:16.2 --shm-size 1073741824",
    "ISBN 978-3-16-148410-0, DOI 10.1000/182, 3 days ago at 12:30",
    "本项目前端使用 Next.js 15 和 Supabase，第 3 步失败了，耗时 12.5 秒",
    "the 3 main services run on 2 nodes with 16 cores",
    "cd /home/runner/work/shop && npm ci",
    "GET /users/42/orders and /api/users/me and https://example.com/home/alice",
    "ls /usr/local/lib/node_modules /opt/homebrew/bin /var/log/syslog",
    "SELECT id FROM orders WHERE total > 1000 LIMIT 50 OFFSET 100",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Luhn-valid but no card prefix: 1234567890123452",
    "self.assertEqual(13577625587, int(f(self.wrap(1000000000000), self.wrap(cb))))",   # ctypes' tests
    "a = +4294967296  # 1 << 32\nin the form ‘+000000120’\n6 12 24 48 96 192 384 768 1536 3072",
    'self.push_lit("211 486 761 1265 fr.comp.lang.python")',
    "order_id = 15912345678; offset 13800138000; callback(13800138000); telemetry 13800138000",
]


@pytest.mark.parametrize("text", CODE)
def test_code_that_only_looks_like_personal_data_is_kept(text):
    got = scrub(text, home=HOME)
    assert got.text == text, got.kinds
    assert got.count == 0


def test_luhn():
    assert luhn_ok("4242424242424242") and luhn_ok("378282246310005")
    assert not luhn_ok("4242424242424241")


def test_anonymise_paths_keeps_the_file_shareable():
    text = "see /home/alice/proj/README.md, /home/bob/notes and C:\\Users\\Bob\\x and /home/alice"
    got = anonymise_paths(text, home=HOME)
    assert got == "see ~/proj/README.md, /home/<user>/notes and C:\\Users\\<user>\\x and ~"
    assert anonymise_paths(got, home=HOME) == got
    assert anonymise_paths("/home/alicea/x", home=HOME) == "/home/<user>/x"     # a prefix is not the home


def test_empty_and_plain_text():
    assert scrub("", home=HOME).text == ""
    assert scrub("Use bun, not npm.", home=HOME).count == 0
