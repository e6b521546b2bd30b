"""Provider token shapes that redact.py recognises bare, wherever they appear.

Data, not logic: one row per shape, ``(kind, pattern, triggers)``. A pattern matches the whole
token; it is replaced when it starts a word and its body mixes letters and digits (a random body,
not an identifier). ``triggers`` are literal bytes of which one must occur for the pattern to run
(a fast substring search), so a row costs almost nothing on text without its prefix. A trigger
that starts the token also gates by its first two bytes (see redact._word_heads).

The shapes follow the providers' documented token formats (the ones secret scanners such as
gitleaks and detect-secrets also recognise); the regexes are written here, for Python's engine and
for speed (a literal first, possessive bodies), rather than translated from a scanner's rule file:
those rules are tuned for scanning repositories and carry noisy generic rules and allowlists of
their own, and remem runs on every turn.
Stdlib only: the hook process imports this.
"""

from __future__ import annotations

Shape = tuple[str, bytes, tuple[bytes, ...]]

SHAPES: tuple[Shape, ...] = (
    # cloud
    ("google_oauth", rb"GOCSPX-[\w-]{28}(?![\w-])", (b"GOCSPX-",)),
    ("google_oauth", rb"ya29\.[\w-]{50,}+", (b"ya29.",)),
    ("azure_secret", rb"(?<![\w~.-])[\w~.-]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])", (b"Q~",)),
    ("digitalocean_token", rb"do[opr]_v1_[a-f0-9]{64}(?![\w-])", (b"dop_v1_", b"doo_v1_", b"dor_v1_")),
    ("heroku_key", rb"HRKU-[\w-]{58,}+", (b"HRKU-",)),
    ("flyio_token", rb"fo1_[\w-]{43}(?![\w-])", (b"fo1_",)),
    ("vault_token", rb"hv[sbr]\.[\w-]{24,}+", (b"hvs.", b"hvb.", b"hvr.")),
    ("databricks_token", rb"dapi[a-f0-9]{32}(?:-\d)?(?![\w-])", (b"dapi",)),
    ("supabase_token", rb"sbp_[a-f0-9]{40}(?![\w-])", (b"sbp_",)),
    ("planetscale_token", rb"pscale_(?:tkn|pw|oauth)_[\w.=-]{32,64}+", (b"pscale_",)),
    ("pulumi_token", rb"pul-[a-f0-9]{40}(?![\w-])", (b"pul-",)),
    ("doppler_token", rb"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}(?![\w-])", (b"dp.",)),
    ("tailscale_key", rb"tskey-[\w-]{20,}+", (b"tskey-",)),
    ("age_key", rb"AGE-SECRET-KEY-1[A-Z0-9]{58}", (b"AGE-SECRET-KEY-",)),
    # code hosting and packages
    ("gitlab_token", rb"GR1348941[\w-]{20,}+", (b"GR1348941",)),
    ("gitlab_token", rb"gl(?:soat|ft|imt|agent|oas|cbt)-[\w-]{20,}+", (b"glsoat-", b"glft-", b"glimt-", b"glagent-", b"gloas-", b"glcbt-")),
    ("bitbucket_token", rb"ATBB[A-Za-z0-9_=.-]{32,}+", (b"ATBB",)),
    ("atlassian_token", rb"ATATT3[A-Za-z0-9_=.-]{100,}+", (b"ATATT3",)),
    ("atlassian_token", rb"ATCTT3[A-Za-z0-9_=.-]{100,}+", (b"ATCTT3",)),
    ("pypi_token", rb"pypi-AgEIcHlwaS5vcmc[\w-]{50,}+", (b"pypi-AgEI",)),
    ("pypi_token", rb"pypi-AgENdGVzdC5weXBpLm9yZw[\w-]{50,}+", (b"pypi-AgEN",)),
    ("docker_token", rb"dckr_(?:pat|oat)_[\w-]{27,}+", (b"dckr_",)),
    ("huggingface_token", rb"api_org_[A-Za-z]{34}(?![A-Za-z0-9])", (b"api_org_",)),
    ("npm_token", rb"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", (b"npm_",)),
    ("shopify_token", rb"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}(?![\w-])", (b"shpat_", b"shpss_", b"shpca_", b"shppa_")),
    # payments, messaging, mail
    ("stripe_key", rb"whsec_[A-Za-z0-9+/=]{24,}+", (b"whsec_",)),
    ("square_token", rb"EAAA[\w-]{60}(?![\w-])", (b"EAAA",)),
    ("square_token", rb"sq0(?:atp|csp|idp)-[\w-]{22,43}+", (b"sq0atp-", b"sq0csp-", b"sq0idp-")),
    ("twilio_key", rb"SK[0-9a-fA-F]{32}(?![0-9a-zA-Z])", (b"SK",)),
    ("sendgrid_key", rb"SG\.[\w-]{22}\.[\w-]{43}(?![\w-])", (b"SG.",)),
    ("mailgun_key", rb"key-[0-9a-f]{32}(?![0-9a-zA-Z])", (b"key-",)),
    ("brevo_key", rb"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", (b"xkeysib-",)),
    ("telegram_token", rb"(?:(?<![\w:])|(?<=/bot))\d{8,10}:AA[\w-]{33}(?![\w-])", (b":AA",)),
    ("slack_token", rb"xox[ec]-[\w-]{20,}+", (b"xoxe-", b"xoxc-")),
    # SaaS APIs
    ("linear_key", rb"lin_(?:api|oauth)_[A-Za-z0-9]{40}(?![\w-])", (b"lin_api_", b"lin_oauth_")),
    ("postman_key", rb"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", (b"PMAK-",)),
    ("newrelic_key", rb"NR(?:AK|II|JS|RA)-[A-Za-z0-9]{27,}+", (b"NRAK-", b"NRII-", b"NRJS-", b"NRRA-")),
    ("sentry_token", rb"sntr[yu][su]?_[\w=+/-]{50,}+", (b"sntrys_", b"sntryu_")),
    ("grafana_token", rb"gl(?:sa|c)_[A-Za-z0-9+/_]{32,}+={0,2}", (b"glsa_", b"glc_")),
    ("notion_token", rb"ntn_[A-Za-z0-9]{40,}+", (b"ntn_",)),
    ("figma_token", rb"fig[dou]_[\w-]{40,}+", (b"figd_", b"figo_", b"figu_")),
    ("mapbox_token", rb"sk\.eyJ[\w-]{20,}+\.[\w-]{20,}+", (b"sk.eyJ",)),
    ("dropbox_token", rb"sl\.[\w-]{130,}+", (b"sl.",)),
    ("openai_key", rb"sess-[A-Za-z0-9]{40}(?![\w-])", (b"sess-",)),
)
