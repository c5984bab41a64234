"""harness.core.redaction: each form a credential takes is replaced, exactly; the words around it,
and text that only looks like one, are left alone."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

from harness.core.redaction import redact, redact_file, redact_obj, redact_tree

PEM_BODY = "MIIEpAIBAAKCAQEAplanted\nQ2xhc3NpYyBSU0Eg+/=="

REDACTED = [
    ("Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2ln", "Authorization: <redacted>"),
    (
        "curl -H 'authorization: Basic dXNlcjpwYXNz' https://x",
        "curl -H 'authorization: <redacted>' https://x",
    ),
    ('{"Authorization": "Bearer abc123"}', '{"Authorization": "<redacted>"}'),
    ("the server echoed Bearer abc.def-ghi_j~k+l/m== back", "the server echoed Bearer <redacted> back"),
    ("GET /watch?token=abc123&limit=5", "GET /watch?token=<redacted>&limit=5"),
    ("kubectl --token=abc123 get pods", "kubectl --token=<redacted> get pods"),
    ("    token: abc123\n    user: x", "    token: <redacted>\n    user: x"),
    ('{"token": "abc123", "user": "x"}', '{"token": "<redacted>", "user": "x"}'),
    ("Obj(token='abc123', user='x')", "Obj(token='<redacted>', user='x')"),
    ("{'token': 'abc123'}", "{'token': '<redacted>'}"),
    ('log: {\\"token\\": \\"abc123\\"}', 'log: {\\"token\\": \\"<redacted>\\"}'),
    ("    client-key-data: LS0tLS1CRUdJTiBSU0E=", "    client-key-data: <redacted>"),
    ("    client-certificate-data: LS0tLS1CRUdJTiBD", "    client-certificate-data: <redacted>"),
    ('"client-key-data": "LS0tLS1CRUdJTiBSU0E="', '"client-key-data": "<redacted>"'),
    ("password: hunter2", "password: <redacted>"),
    ('{"password":"hunter2"}', '{"password":"<redacted>"}'),
    ("id-token: eyJ.x.y refresh-token: r1", "id-token: <redacted> refresh-token: <redacted>"),
    ("X-Auth-Token: abc", "X-Auth-Token: <redacted>"),
    ("client_secret=abc", "client_secret=<redacted>"),
    ("secret: s3cr3t", "secret: <redacted>"),
    (
        f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\nnext",
        "<redacted> private key\nnext",
    ),
    (
        f"a -----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY----- b",
        "a <redacted> private key b",
    ),
    (
        f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}\n-----END EC PRIVATE KEY-----",
        "<redacted> private key",
    ),
    (
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{PEM_BODY}\n-----END ENCRYPTED PRIVATE KEY-----",
        "<redacted> private key",
    ),
    # a repr: the newlines are escapes
    ("'-----BEGIN RSA PRIVATE KEY-----\\nMIIE\\n-----END RSA PRIVATE KEY-----'", "'<redacted> private key'"),
    # cut off: a clipped message ends inside the block, a log tail starts inside it
    (f"message: -----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}", "message: <redacted> private key"),
    (
        f"log tail:\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nnext",
        "log tail:\n<redacted> private key\nnext",
    ),
    ("'-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIB", "'<redacted> private key"),
    ("'...pYyBSU0Eg+/==\\n-----END RSA PRIVATE KEY-----'", "'...<redacted> private key'"),
    # issue 41: a bare ServiceAccount JWT, flags with a space, registry and AWS secrets
    (
        "token was eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJl_-x end",
        "token was <redacted> end",
    ),
    ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.", "<redacted>"),
    ("kubectl --token abc123 get pods", "kubectl --token <redacted> get pods"),
    ("login --password hunter2 --user x", "login --password <redacted> --user x"),
    ("  .dockerconfigjson: eyJhdXRocyI6e319", "  .dockerconfigjson: <redacted>"),
    ('{".dockerconfigjson": "eyJhdXRocyI6e319"}', '{".dockerconfigjson": "<redacted>"}'),
    ('{"auths": {"r.io": {"auth": "dXNlcjpwYXNz"}}}', '{"auths": {"r.io": {"auth": "<redacted>"}}}'),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key=<redacted>"),
    ("AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY: <redacted>"),
    ("aws_session_token = FwoGZXIvYXdzEB", "aws_session_token = <redacted>"),
    # An assertion on os.environ prints the environment as a dict.
    (
        "environ({'HOME': '/root', 'GITHUB_TOKEN': 'ghp_x', 'DB_PASSWORD': 'hunter2', "
        "'OPENAI_API_KEY': 'sk-1'})",
        "environ({'HOME': '/root', 'GITHUB_TOKEN': '<redacted>', 'DB_PASSWORD': '<redacted>', "
        "'OPENAI_API_KEY': '<redacted>'})",
    ),
    ("NPM_TOKEN=npm_abc123 make", "NPM_TOKEN=<redacted> make"),
    ("pushed with ghp_abcdefghijklmnopqrstuvwxyz0123456789 today", "pushed with <redacted> today"),
    ("url https://x:github_pat_11ABCDEFG0123456789_abcdefghij@h", "url https://x:<redacted>@h"),
    ("glpat-abcdefghij0123456789 and xoxb-1234567890-abcdef", "<redacted> and <redacted>"),
]

HARMLESS = [
    "the scheduler hands out tokens: 5 per second",
    "a kubeconfig with a bearer token, or a client certificate",
    "Bearer tokens expire after an hour",
    "automountServiceAccountToken: false",
    "spec:\n  volumes:\n  - secret:\n      secretName: registry",
    '{"secret": {"secretName": "registry"}}',
    "kind: Secret",
    "token_bucket: 5",
    "suites/scan/test_readiness_scan.py::test_token_never_leaks PASSED",
    "pod/token-reviewer-7 Running; secret/kube-root-ca ready",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "certificate-authority-data: LS0tLS1CRUdJTiBDRVJU",
    "token: <redacted>",
    "kubectl --token <redacted> get pods",
    "--password --user x",
    "eyJhbGciOi alone is no token",
    "auth: {mode: webhook}",
    "authentication: webhook",
    "automountServiceAccountToken: false",
    "secretName: gpu-driver-config",
    "DRA_HARNESS_KEEP_TOKENS: 1",
    # a path ending in a key's name is a path: `--out /etc/passwd` says "/etc/passwd: is not a directory"
    "/etc/passwd: is not a directory",
    "reports/secret: cannot be written",
]


@pytest.mark.parametrize(("text", "expected"), REDACTED, ids=[t[:40] for t, _ in REDACTED])
def test_each_form_of_a_credential_is_replaced(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize("text", HARMLESS)
def test_text_that_only_looks_like_a_credential_is_untouched(text: str) -> None:
    assert redact(text) == text


@dataclass(frozen=True)
class _Record:
    name: str
    lines: list[str]


class _Pair(NamedTuple):
    key: str
    value: str


def test_redact_obj_returns_a_redacted_copy_of_nested_data() -> None:
    data = {
        "findings": [{"message": "token=abc", "count": 3}],
        "pair": _Pair("auth", "Bearer abc123"),
        "record": _Record("kubeconfig", ["client-key-data: LS0t", "plain"]),
        "flags": (True, None, 1.5),
    }

    clean = redact_obj(data)

    assert clean == {
        "findings": [{"message": "token=<redacted>", "count": 3}],
        "pair": _Pair("auth", "Bearer <redacted>"),
        "record": _Record("kubeconfig", ["client-key-data: <redacted>", "plain"]),
        "flags": (True, None, 1.5),
    }
    assert data["findings"] == [{"message": "token=abc", "count": 3}]  # the input is untouched


def test_redact_file_parses_json_so_the_escaped_key_is_redacted_and_stays_json(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
    path.write_text(json.dumps({"statusDetails": {"message": f"Bearer abc123\n{pem}", "trace": "ok"}}))

    assert redact_file(path) is True
    assert json.loads(path.read_text()) == {
        "statusDetails": {"message": "Bearer <redacted>\n<redacted> private key", "trace": "ok"}
    }


def test_redact_file_parses_xml_so_entity_escaped_quotes_hide_nothing(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testcase name="t">'
        '<failure message="got {&quot;token&quot;: &quot;abc123&quot;}">password: hunter2</failure>'
        "</testcase></testsuites>"
    )

    assert redact_file(path) is True
    failure = ET.parse(path).getroot().find("testcase/failure")
    assert failure is not None
    assert (failure.get("message"), failure.text) == ('got {"token": "<redacted>"}', "password: <redacted>")


def test_redact_tree_rewrites_only_the_files_with_secrets(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "apiserver.log").write_text("I0101 request Authorization: Bearer abc123\n")
    (tmp_path / "clean.txt").write_text("nothing here\n")
    (tmp_path / "summary.json").write_text('{\n  "message": "fine"\n}')
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe token=abc")

    assert redact_tree(tmp_path) == [tmp_path / "logs" / "apiserver.log"]
    assert (tmp_path / "logs" / "apiserver.log").read_text() == "I0101 request Authorization: <redacted>\n"
    assert (tmp_path / "summary.json").read_text() == '{\n  "message": "fine"\n}'
    assert (tmp_path / "image.png").read_bytes().endswith(b"token=abc")  # binary: not ours to edit
