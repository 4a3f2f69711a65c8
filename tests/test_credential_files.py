"""The nine credential files of issue 68, each as a person has it on screen (``cat ~/.npmrc``, an
editor): the whole file, with its comments, section headers, hosts and user names, redacted as one
text and as a screen's lines. Every secret value goes (no six characters of it are left); what a
person needs to read the file by (the host, the user, the sections, the registry) stays.

The values are made up for this test.
"""

from __future__ import annotations

import base64

import pytest

from memorize.redact import Redactor


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


NETRC = """\
# ~/.netrc: ftp, curl and git read their logins here
machine ftp.lindenhof.example
login marta
password Qv7tLw2xNc9e

machine api.heronstack.example login deploybot password hR4kz8WmPq2vYt6c
machine mail.lindenhof.example login marta password pl8Mjk
machine builds.heronstack.example
    login ci-runner
    password Marmot-Lantern-58!
"""

PGPASS = """\
# hostname:port:database:username:password
db.lindenhof.example:5432:orders:app_rw:Fj3k9Lq2Zx7w
localhost:*:*:postgres:tR8\\:mW4vK2pn
*:5433:analytics:reporter:Pq9ZxLm2Vb6r#
"""

MY_CNF = """\
# ~/.my.cnf
[client]
user=marta
password=Wn4r8Tq2Lm
host=mysql.lindenhof.example

[mysqldump]
user = backup
password = "Hq8#vL2m;Tz 71"
single-transaction
"""

GIT_CREDENTIALS = """\
https://marta:ghp_sgBYhf3gAXoTpCPfNjRE6uw0zg6Qqb0poNnL@github.com
https://oauth2:glpat-6XXE1TinhJSNNNkFp2RY@gitlab.lindenhof.example
https://deploybot:Tundra-Hollow-71@git.heronstack.example
"""

_NPM_AUTH = _b64("marta:Copper-Heron-93")
NPMRC = f"""\
; ~/.npmrc
registry=https://registry.npmjs.org/
//registry.npmjs.org/:_authToken=npm_qmUbkkYV8rWOyCFbIWnFgLed7kbaapECKG4C
@lindenhof:registry=https://npm.lindenhof.example/
//npm.lindenhof.example/:_auth={_NPM_AUTH}
//npm.heronstack.example/:username=deploybot
//npm.heronstack.example/:_password={_b64("Fjord-Basalt-2207")}
//npm.heronstack.example/:email=deploybot@heronstack.example
always-auth=true
"""

PYPIRC = """\
[distutils]
index-servers =
    pypi
    lindenhof

[pypi]
username = __token__
password = pypi-AgEIcHlwaS5vcmcqpcLSltxOMVUVKVOhaRoczn9MIO2QPQ8Lj_czkmsSwa7wVgVE-7tRJ9U0ebe

[lindenhof]
repository = https://pypi.lindenhof.example/simple/
username: marta
password: Zr6vTq3mWx9k
"""

_DOCKER_HUB = _b64("marta:Saffron-Quarry-40")
_DOCKER_CI = _b64("ci-robot:wLVq1WKo2nlMd7Cyv2ysxYWM8JLZkxHIoD1QlNvO")
DOCKER_CONFIG = f"""\
{{
  "auths": {{
    "https://index.docker.io/v1/": {{
      "auth": "{_DOCKER_HUB}"
    }},
    "registry.lindenhof.example": {{
      "auth": "{_DOCKER_CI}"
    }},
    "lindenhofregistry.azurecr.io": {{
      "auth": "",
      "identitytoken": "OdWxuNsPWtNiXYwZvlRlOwLKt5mr7asItPiJXoda4rz6E_QmSo2VFBkDQk3gbj08wXQQ"
    }}
  }},
  "credsStore": "desktop",
  "currentContext": "default"
}}
"""

_KUBE_KEY = _b64(
    "-----BEGIN EC PRIVATE KEY-----\n"
    "KlZQmAMvHRCUfwUi4Pp1bX2oh92p/NNszRSNTJRxN+UF1cpnOIrnXK6UiEY0is8L\n"
    "Afy2MQDiDRC6P10SaaaKvybYFrYT5YTaDnkEpINecgxpy90KM6tqA6YvmetC5GdA\n"
    "-----END EC PRIVATE KEY-----\n"
)
_KUBE_JWT = (
    "eyJhbGciOiJSUzI1NiJ9.wrdU_sngciQ5nVIh1DAZR_l_6I1G0L42b0wW_qis1pcvszHJkQRqBp3ZtkPzk9wmDk3K"
    ".ZRhDz24bjLuk-hu5ITi9GxsUUZ0TZ8SL-xXm01MQAE9_CCPP_8T4"
)
KUBECONFIG = f"""\
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /home/marta/.minikube/ca.crt
    server: https://k8s.lindenhof.example:6443
  name: lindenhof-prod
contexts:
- context:
    cluster: lindenhof-prod
    namespace: orders
    user: marta
  name: marta@lindenhof-prod
current-context: marta@lindenhof-prod
users:
- name: marta
  user:
    client-certificate: /home/marta/.minikube/profiles/marta/client.crt
    client-key-data: {_KUBE_KEY}
- name: ci-bot
  user:
    token: {_KUBE_JWT}
- name: cluster-admin
  user:
    username: admin
    password: Gx7tp2Gl6mxcXq
"""

AWS_CREDENTIALS = """\
# ~/.aws/credentials
[default]
aws_access_key_id = AKIAFRBR8KD429QGUD8D
aws_secret_access_key = ZsBoj6xiAM54AFrpeAcIiXOtOwGZcjRR8hnHmZZi
region = eu-central-1

[lindenhof-dev]
aws_access_key_id=ASIA92HLGI4KZGA60RFJ
aws_secret_access_key=jonyrpy7pHKyO+T0ziA4sOHgCSiQjF5F+kqa1RLL
aws_session_token=IQoJb3JpZ2luX2VjEnL7VXPZCzTc3L7tSK5ZSy0swsrgJA71bDZZ79eg+q5grC9XS0zYTkFS3hUwcTQbZG1MH+/iGSlX0XKWbpZvT7kroA53BPplkh8p5OT33OBuRDPWNlCRLI4YPznYA1Ct4ARp4dqkMVqCf2jmuv4o4mgeUrn+CyQBTgM7D+7PSAc3rlZH21Wa
"""

# each file: its text, the secret values that must go, and what must stay readable
FILES = {
    ".netrc": (
        NETRC,
        ["Qv7tLw2xNc9e", "hR4kz8WmPq2vYt6c", "pl8Mjk", "Marmot-Lantern-58!"],
        [
            "# ~/.netrc",
            "machine ftp.lindenhof.example",
            "login marta",
            "machine api.heronstack.example login deploybot password ",
            "machine mail.lindenhof.example login marta password ",
            "login ci-runner",
        ],
    ),
    ".pgpass": (
        PGPASS,
        ["Fj3k9Lq2Zx7w", "tR8\\:mW4vK2pn", "Pq9ZxLm2Vb6r#"],
        [
            "# hostname:port:database:username:password",
            "db.lindenhof.example:5432:orders:app_rw:",
            "localhost:*:*:postgres:",
            "*:5433:analytics:reporter:",
        ],
    ),
    ".my.cnf": (
        MY_CNF,
        ["Wn4r8Tq2Lm", "Hq8#vL2m;Tz 71"],
        ["[client]", "user=marta", "host=mysql.lindenhof.example", "[mysqldump]", "user = backup"],
    ),
    ".git-credentials": (
        GIT_CREDENTIALS,
        [
            "ghp_sgBYhf3gAXoTpCPfNjRE6uw0zg6Qqb0poNnL",
            "glpat-6XXE1TinhJSNNNkFp2RY",
            "Tundra-Hollow-71",
        ],
        [
            "https://marta:",
            "@github.com",
            "https://oauth2:",
            "@gitlab.lindenhof.example",
            "https://deploybot:",
            "@git.heronstack.example",
        ],
    ),
    ".npmrc": (
        NPMRC,
        [
            "npm_qmUbkkYV8rWOyCFbIWnFgLed7kbaapECKG4C",
            _NPM_AUTH,
            _b64("Fjord-Basalt-2207"),
        ],
        [
            "registry=https://registry.npmjs.org/",
            "//registry.npmjs.org/:_authToken=",
            "@lindenhof:registry=https://npm.lindenhof.example/",
            "//npm.lindenhof.example/:_auth=",
            "//npm.heronstack.example/:username=deploybot",
            "//npm.heronstack.example/:_password=",
            "always-auth=true",
        ],
    ),
    ".pypirc": (
        PYPIRC,
        [
            "pypi-AgEIcHlwaS5vcmcqpcLSltxOMVUVKVOhaRoczn9MIO2QPQ8Lj_czkmsSwa7wVgVE-7tRJ9U0ebe",
            "Zr6vTq3mWx9k",
        ],
        [
            "[distutils]",
            "[pypi]",
            "username = __token__",
            "[lindenhof]",
            "repository = https://pypi.lindenhof.example/simple/",
            "username: marta",
        ],
    ),
    "docker config.json": (
        DOCKER_CONFIG,
        [
            _DOCKER_HUB,
            _DOCKER_CI,
            "OdWxuNsPWtNiXYwZvlRlOwLKt5mr7asItPiJXoda4rz6E_QmSo2VFBkDQk3gbj08wXQQ",
        ],
        [
            '"auths": {',
            '"https://index.docker.io/v1/": {',
            '"registry.lindenhof.example": {',
            '"lindenhofregistry.azurecr.io": {',
            '"auth": "",',
            '"credsStore": "desktop"',
            '"currentContext": "default"',
        ],
    ),
    "kubeconfig": (
        KUBECONFIG,
        [_KUBE_KEY, _KUBE_JWT, "Gx7tp2Gl6mxcXq"],
        [
            "server: https://k8s.lindenhof.example:6443",
            "name: lindenhof-prod",
            "user: marta",
            "current-context: marta@lindenhof-prod",
            "client-certificate: /home/marta/.minikube/profiles/marta/client.crt",
            "- name: ci-bot",
            "username: admin",
        ],
    ),
    "AWS credentials": (
        AWS_CREDENTIALS,
        [
            "AKIAFRBR8KD429QGUD8D",
            "ZsBoj6xiAM54AFrpeAcIiXOtOwGZcjRR8hnHmZZi",
            "ASIA92HLGI4KZGA60RFJ",
            "jonyrpy7pHKyO+T0ziA4sOHgCSiQjF5F+kqa1RLL",
            "IQoJb3JpZ2luX2VjEnL7VXPZCzTc3L7tSK5ZSy0swsrgJA71bDZZ79eg+q5grC9XS0zYTkFS3hUwcTQbZG1MH"
            "+/iGSlX0XKWbpZvT7kroA53BPplkh8p5OT33OBuRDPWNlCRLI4YPznYA1Ct4ARp4dqkMVqCf2jmuv4o4mgeU"
            "rn+CyQBTgM7D+7PSAc3rlZH21Wa",
        ],
        ["# ~/.aws/credentials", "[default]", "region = eu-central-1", "[lindenhof-dev]"],
    ),
}


def _left(secret: str, out: str) -> list[str]:
    """The six-character runs of ``secret`` still in ``out``."""
    return [secret[i : i + 6] for i in range(len(secret) - 5) if secret[i : i + 6] in out]


@pytest.mark.parametrize("how", ["text", "lines"])
@pytest.mark.parametrize("name", list(FILES))
def test_a_credential_file_on_screen_keeps_its_names_and_loses_its_secrets(name, how):
    text, secrets, kept = FILES[name]
    redactor = Redactor()
    out = redactor.text(text) if how == "text" else "\n".join(redactor.lines(text.split("\n")))
    for secret in secrets:
        assert not _left(secret, out), (secret, _left(secret, out), out)
    for part in kept:
        assert part in out, (part, out)


# the same files with nothing secret in them: a password the client asks for (.my.cnf's bare
# ``password`` or ``password=``, whose next line is a setting of its own), the .pgpass format's
# comment line before a line that is not its value, a credential store or helper named instead of a
# credential, an ``exec`` plugin, SSO settings
LOOK_ALIKES = {
    ".my.cnf": (
        "# ~/.my.cnf: the client asks for the password\n[client]\nuser=marta\npassword\n"
        "host=mysql.lindenhof.example\n\n[mysqldump]\nuser=backup\npassword=\n"
        "host=db02.lindenhof.example\nport=3307\n"
    ),
    ".pgpass": (
        "# each line: hostname:port:database:username:password\n"
        "db01.lindenhof.example:5432:orders  is the reporting replica\n"
    ),
    "docker config.json": (
        '{\n  "auths": {\n    "ghcr.io": {},\n    "https://index.docker.io/v1/": {}\n  },\n'
        '  "credsStore": "osxkeychain",\n  "credHelpers": {\n'
        '    "123456789012.dkr.ecr.eu-central-1.amazonaws.com": "ecr-login"\n  }\n}\n'
    ),
    "a registry's settings": '{"registry": "registry.lindenhof.example", "auth": "none"}',
    "kubeconfig": (
        "users:\n- name: marta\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
        "      args:\n      - eks\n      - get-token\n      - --cluster-name\n      - lindenhof-prod\n"
    ),
    "AWS config": (
        "[profile lindenhof-dev]\nsso_start_url = https://lindenhof.awsapps.com/start\n"
        "sso_region = eu-central-1\nsso_account_id = 123456789012\nsso_role_name = ReadOnly\n"
        "region = eu-central-1\noutput = json\n"
    ),
    ".npmrc": (
        "; ~/.npmrc\nregistry=https://registry.npmjs.org/\n"
        "@lindenhof:registry=https://npm.lindenhof.example/\nalways-auth=true\nstrict-ssl=true\n"
    ),
    ".gitconfig": (
        '[credential]\n\thelper = store --file ~/.git-credentials\n[credential "https://github.com"]\n'
        "\tusername = marta\n"
    ),
    ".pypirc": (
        "[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\n"
        "# the password comes from keyring\n"
    ),
}


@pytest.mark.parametrize("how", ["text", "lines"])
@pytest.mark.parametrize("name", list(LOOK_ALIKES))
def test_a_credential_file_without_a_secret_stays_as_it_was(name, how):
    text = LOOK_ALIKES[name]
    redactor = Redactor()
    out = redactor.text(text) if how == "text" else "\n".join(redactor.lines(text.split("\n")))
    assert out == text
