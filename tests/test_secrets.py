"""Secrets never reach a remote embedder (issue 20, S3): decided per file, every shape tested.

The end-to-end test indexes a real repository holding one file per credential shape with the
Voyage provider chosen by the user (environment), against the local server of
`test_embed_voyage`, and checks what the server received: none of the secret values, none of
the chunks of a file that holds one (a private key split over two chunks included), while
ordinary code that merely *talks about* passwords and tokens is still sent.
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import pytest
from test_embed_voyage import VoyageServer
from test_trust import cli_env, maguyva

from maguyva.modalities.semantic.embed.secrets import (
    env_file_reason,
    file_secret_reason,
    shannon_entropy,
)

RNG = random.Random(20)


def rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


B64 = string.ascii_letters + string.digits + "+/"
KEY_LINES = [rand(64, B64) for _ in range(28)]


def pem(kind: str, lines: list[str] | None = None) -> str:
    body = "\n".join(lines or [rand(64, B64) for _ in range(6)])
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n"


FILLER = "".join(f"Step {i}: nothing secret on this line of the runbook.\n" for i in range(45))
# shape name -> (path, content, the secret values that must never be sent)
SHAPES: dict[str, tuple[str, str, list[str]]] = {
    "RSA key over two chunks": (
        "runbook.txt",
        FILLER + pem("RSA PRIVATE KEY", KEY_LINES) + FILLER,
        KEY_LINES[-8:],
    ),
    "OpenSSH key": ("deploy_notes.md", "# deploy\n\n" + pem("OPENSSH PRIVATE KEY"), []),
    "PGP key block": ("backup/keyring.txt", pem("PGP PRIVATE KEY BLOCK"), []),
    "private key in JSON": (
        "gcp.json",
        json.dumps({"type": "service_account", "private_key": pem("PRIVATE KEY")}),
        [],
    ),
    "AWS access key id": ("aws_cfg.py", f'KEY_ID = "AKIA{rand(16, string.ascii_uppercase)}"\n', []),
    "AWS secret access key": (
        "settings_aws.py",
        f'aws_secret_access_key = "{rand(40, B64)}"\n',
        [],
    ),
    "GitHub token": ("ci.py", f'GH = "ghp_{rand(36)}"\n', []),
    "GitHub fine-grained token": ("ci2.py", f'GH = "github_pat_{rand(22)}_{rand(59)}"\n', []),
    "GitLab token": ("gitlab.py", f'GL = "glpat-{rand(20)}"\n', []),
    "Slack token": ("bot.py", f'SLACK = "xoxb-{rand(12, string.digits)}-{rand(24)}"\n', []),
    "Slack webhook": (
        "notify.py",
        f'HOOK = "https://hooks.slack.com/services/T{rand(8)}/B{rand(8)}/{rand(24)}"\n',
        [],
    ),
    "Stripe key": ("billing.py", f'STRIPE = "sk_live_{rand(24)}"\n', []),
    "Google API key": ("maps.js", f'const key = "AIza{rand(35)}";\n', []),
    "SendGrid key": ("mail.py", f'SENDGRID = "SG.{rand(22)}.{rand(43)}"\n', []),
    "Azure connection string": (
        "appsettings.json",
        json.dumps(
            {
                "Storage": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
                f"{rand(86, B64)}==;EndpointSuffix=core.windows.net"
            }
        ),
        [],
    ),
    "npm token": ("publish.sh", f"export NPM_AUTH=npm_{rand(36)}\n", []),
    "PyPI token": ("release.py", f'TWINE = "pypi-AgEIcHlwaS5vcmc{rand(60)}"\n', []),
    "JSON web token": (
        "auth_test.py",
        f'T = "eyJ{rand(20)}.eyJ{rand(30)}.{rand(43)}"\n',
        [],
    ),
    "password in URL": (
        "db_url.py",
        'DATABASE = "postgres://admin:S3cretPassw0rd@db.internal:5432/app"\n',
        [],
    ),
    "env file by name": ("env.local", "DB_HOST=db\nDB_PASS=hunter2\n", ["hunter2"]),
    "env file by content": (
        "deploy/runtime.conf",
        "DB_HOST=db\nDB_USER=app\nDB_PASS=hunter22\nPORT=8080\n",
        ["hunter22"],
    ),
    "generic PASSWORD=": ("db.py", f'PASSWORD = "{rand(18, B64 + "#!")}"\n', []),
    "generic API_KEY=": ("client.py", f'API_KEY = "{rand(32, string.hexdigits.lower())}"\n', []),
    "generic TOKEN= (bare)": ("hooks.cfg", f"[hook]\nTOKEN = {rand(28)}\nretries = 3\n", []),
    "credentials by name": ("credentials", "[default]\nregion = eu-west-1\n", []),
    "id_rsa by name": ("id_rsa", "not even a key, but the name says so\n", []),
}
BENIGN = '''"""Code that talks about secrets without holding one: it must still be embedded."""
import os


def login(request, settings):
    password = request.form["password"]
    token = session.get_token()
    api_key = os.environ["API_KEY"]
    secret_key = settings.SECRET_KEY
    return check_password(password, token, api_key, secret_key)
'''


def secret_values(path: str, text: str, extra: list[str]) -> list[str]:
    """The strings that would give the secret away (the random parts of each shape)."""
    found = [w for w in re.findall(r"[A-Za-z0-9+/_\-.]{16,}", text) if
             shannon_entropy(w) > 3.5 and "nothing" not in w]  # fmt: skip
    return found + extra


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_is_caught_for_its_file(shape: str):
    path, text, _ = SHAPES[shape]
    assert file_secret_reason(path, text), shape


def test_ordinary_code_and_docs_are_not_secrets():
    assert file_secret_reason("views.py", BENIGN) is None
    assert file_secret_reason("README.md", "Set DB_PASS in your environment.\n") is None
    assert file_secret_reason("setup.cfg", "[metadata]\nname = demo\nversion = 1.0\n") is None
    assert env_file_reason("A=1\nB=2\nC=3\n") is None  # env-shaped, but nothing secret
    assert env_file_reason("DB_PASS=\nAPI_TOKEN=changeme\n") is None  # placeholders


def test_nothing_secret_reaches_the_remote_embedder(tmp_path: Path):
    root = tmp_path / "repo"
    for path, text, _ in SHAPES.values():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "views.py").write_text(BENIGN)
    server = VoyageServer()
    try:
        env = cli_env(tmp_path, VOYAGE_API_KEY="pa-test-key-0123456789abcdef0123456789",
                      MAGUYVA_VOYAGE_BASE_URL=server.url, MAGUYVA_EMBEDDING_PROVIDER="voyage")  # fmt: skip
        dry = maguyva(root, "index", "--dry-run", "--json", env=env)
        assert dry.returncode == 0, dry.stderr
        listed = {e["path"]: e["reason"] for e in json.loads(dry.stdout)["not_sent"]}
        human = maguyva(root, "index", "--dry-run", env=env)
        assert "never sent to a remote embedder" in human.stdout and "env.local" in human.stdout
        assert server.requests == []  # a dry run sends nothing
        built = maguyva(root, "index", "--modalities", "text,semantic", env=env)
        assert built.returncode == 0, built.stderr
        sent = "\n".join(t for r in server.requests for t in r["input"])
    finally:
        server.close()
    assert "check_password" in sent  # the control: ordinary code is embedded
    leaked = {}
    for shape, (path, text, extra) in SHAPES.items():
        assert path in listed, (shape, path)
        hits = [v for v in secret_values(path, text, extra) if v in sent]
        if hits or f"{path}" in sent:
            leaked[shape] = hits[:2] or path
    assert leaked == {}, f"{len(leaked)} of {len(SHAPES)} shapes sent: {leaked}"
    assert len(SHAPES) >= 18
