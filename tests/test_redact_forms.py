"""Credentials in forms no keyword right before them names (memorize/redact_forms.py, and the
keyword rules of memorize/token_rules.py that read them): each form's secret goes, and the
look-alike beside it stays. Written for mnemo; none of these lines comes from a scanner's examples."""

from __future__ import annotations

import pytest

from memorize.redact import Redactor

R = Redactor()

# (rule, line, secret): the rule names the test, so a failure says which form broke
POSITIVE = [
    ("call", 'conn = pg_connect_db("db.lan", "orders_app", "Wint3r-Harbor")', "Wint3r-Harbor"),
    ("call", "ftp.login('backup', 'Quartz#88lake')", "Quartz#88lake"),
    ("call", "auth = HTTPBasicAuth('ana', 'tulip-Orbit-51')", "tulip-Orbit-51"),
    (
        "call",
        '{"method": "session.login_by_key", "params": ["Kq7-ZmT2vR9xLp4sWn8Y"]}',
        "Kq7-ZmT2vR9xLp4sWn8Y",
    ),
    ("net use", r"net use Q: \\nas01\media /user:HOME\ana Br1ghtCedar", "Br1ghtCedar"),
    ("-u -p", "sshpass-like-tool -u operator -p mellowfox", "mellowfox"),
    ("env default", "key = os.getenv('STRIPE_SECRET_KEY', 'rk9Tq2mZv8XbL4sW')", "rk9Tq2mZv8XbL4sW"),
    ("xml", "<apiToken>Zr8Qm2Xv7Lp4Tn9Ws3Yb</apiToken>", "Zr8Qm2Xv7Lp4Tn9Ws3Yb"),
    ("numbered", "username backup secret 0 Lum1nousOtter", "Lum1nousOtter"),
    ("numbered", "snmp-server community Gr4nite-Pass RO", "Gr4nite-Pass"),
    (
        "hash",
        "$krb5tgs$23$*svc_sql$CORP.LAN$mssql*$9f2c4e7a1b3d5f60$" + "a1b2c3d4e5f6" * 6,
        "9f2c4e7a1b3d5f60",
    ),
    ("hash", "router(config)# enable secret 9 $9$Pq7mZ2vX$Lk8sW3nY4bT6rQ1h", "$9$Pq7mZ2vX"),
    (
        "base64 pem",
        "the file holds LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0+BUUVFSUlr",
        "LS0tLS1CRUdJTi",
    ),
    ("prefixed uuid", "run it with ak_5f0c2d9e-8b1a-4c3f-9e7d-2a6b8c4d1e0f today", "5f0c2d9e-8b1a"),
    (
        "prefixed token",
        "deploy with teamcityPRIV-7f3a9c2e4b6d8f1a3c5e7b9d2f4a6c8e",
        "7f3a9c2e4b6d8f1a",
    ),
    (
        "webhook",
        "curl -X POST https://chat.example.org/hooks/k3v9x2m7q8w4z1p5r6t0 -d @msg.json",
        "k3v9x2m7q8w4z1p5r6t0",
    ),
    (
        "signed url",
        "https://files.example.net/a/b.pdf?se=2027-01-01&sp=r&sig=Qw8Er7Ty6Ui5Op4As3Df2Gh1",
        "Qw8Er7Ty6Ui5Op4As3Df2Gh1",
    ),
    (
        "bare token",
        'client = Messenger("Vb7Kq2Xm9Lp4Tn8Wz3Yr6Hs1Dc5Fg0Jd")',
        "Vb7Kq2Xm9Lp4Tn8Wz3Yr6Hs1Dc5Fg0Jd",
    ),
    ("keyword", "monitoring.hec = 0c5e9b2a-77d1-4f3e-a8c6-91b0d4e2f7a3", "0c5e9b2a-77d1-4f3e"),
    ("keyword", 'settings["db-password"] = "Velvet9Canyon"', "Velvet9Canyon"),
    (
        "keyword",
        'SERVICE_BEARER="Zx9Qm2Lv8Tp4Wr7Ks3Yn6Bc1Df5Gh0Jk"',
        "Zx9Qm2Lv8Tp4Wr7Ks3Yn6Bc1Df5Gh0Jk",
    ),
    ("keyword", "  password 'hazel-nut'", "hazel-nut"),
    ("keyword", "Recovery Key 3: r7Tq2Zm9Xv4Lp8Wn3Ys6Kb1", "r7Tq2Zm9Xv4Lp8Wn3Ys6Kb1"),
    ("header", "Authorization: SSWT Lk9Qz7Xm3Vp8Tn2Ws6Yb4Rc", "Lk9Qz7Xm3Vp8Tn2Ws6Yb4Rc"),
    ("bearer", "Bearer: Wq8Zx3Lm7Tp2Vn9Ks4Yb6Rc", "Wq8Zx3Lm7Tp2Vn9Ks4Yb6Rc"),
]

LOOK_ALIKES = [
    ("call", 'db = sqlite3.connect("notes.db")'),
    ("call", "client.login(user, password)"),
    ("call", 'sock.connect(("example.org", 443))'),
    ("net use", r"net use Z: \\fileserver\share /user:CORP\ana *"),
    ("-u -p", "psexec -u %USERNAME% -p %PASSWORD%"),
    ("env default", "port = os.getenv('APP_PORT', '8080')"),
    ("xml", "<publicKey>MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE</publicKey>"),
    ("xml", "<keyName>backup-signing</keyName>"),
    ("numbered", "the key 3 points of the talk were clear"),
    ("hash", "echo $1$2 and $HOME"),
    ("prefixed uuid", "kubectl get pvc-3c1e2b4a-5d6f-4a7b-8c9d-0e1f2a3b4c5d"),
    ("prefixed uuid", "request req_5f0c2d9e-8b1a-4c3f-9e7d-2a6b8c4d1e0f failed"),
    ("prefixed uuid", "publish with pub-c-5f0c2d9e-8b1a-4c3f-9e7d-2a6b8c4d1e0f"),
    ("webhook", "ls -l .git/hooks/pre-commit"),
    ("webhook", "https://github.com/acme/app/settings/hooks/4411"),
    ("signed url", "https://shop.example.com/?q=lamp&code=SPRING"),
    ("bare token", "Merge commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 into main"),
    ("bare token", "AbstractSingletonProxyFactoryBean2024Builder"),
    ("bare token", "https://docs.example.com/d/1Bx9Vs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2/edit"),
    ("bare token", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk7Qm2XvLp4Tn9Ws3Yb ana@laptop"),
    ("bare token", "publishable pk_test_51Hq7Lp4Tn9Ws3Yb8Zx2Mv6Kr"),
    ("keyword", "primary_key = order_id"),
    ("keyword", "the password field is required"),
    ("header", "Authorization: required"),
    ("label", "API Key\nCopy it from the dashboard"),
]


@pytest.mark.parametrize(
    ("rule", "text", "secret"), POSITIVE, ids=[f"{r}:{t[:30]}" for r, t, _ in POSITIVE]
)
def test_a_credential_in_a_form_no_keyword_names_is_redacted(rule, text, secret):
    out = R.text(text)
    assert secret not in out and "[" in out, (rule, out)


@pytest.mark.parametrize(
    ("rule", "text"), LOOK_ALIKES, ids=[f"{r}:{t[:30]}" for r, t in LOOK_ALIKES]
)
def test_a_look_alike_of_those_forms_stays(rule, text):
    assert R.text(text) == text and R.lines(text.split("\n")) == text.split("\n"), rule


def test_a_label_line_and_its_value_line_on_a_screen():
    lines = ["Signing secret", "Rt7Kq2Zm9Xv4Lp8Wn3Ys6Kb1", "Created 3 May"]
    assert R.lines(lines) == ["Signing secret", "[secret]", "Created 3 May"]


def test_an_ansible_vault_body_goes_line_by_line_and_a_hex_dump_stays():
    body = ["3961383262336438623061383937366530663764383161393232376231376132", "6264"]
    vault = ["$ANSIBLE_VAULT;1.1;AES256", *body]
    assert R.lines(vault) == ["$ANSIBLE_VAULT;1.1;AES256", "[secret]", "[secret]"]
    assert body[0] not in R.text("\n".join(vault))
    assert R.lines(["cat dump.hex", *body]) == ["cat dump.hex", *body]
