"""No credential in any artifact: the one place that knows what a secret looks like.

`redact(text)` replaces, in any text (logs, failure messages, YAML, JSON, Python reprs):
- PEM private-key blocks (RSA, EC, ENCRYPTED, PKCS#8, ...), also when cut off at either end;
- the credentials of `Authorization: <scheme> <credentials>` and of `Bearer <token>` anywhere;
- the values of credential fields (token, password, secret, client-key-data,
  client-certificate-data, .dockerconfigjson, aws_secret_access_key, ...) written `k: v`,
  `k=v`, `"k": "v"` or `'k': 'v'`, and of the flags `--token X`, `--password X`;
- a bare JWT (a ServiceAccount token: header.payload.signature, each base64url of JSON);
- tokens known by their prefix (GitHub's ghp_ and github_pat_, GitLab's glpat-, Slack's xox?-),
  and the values of environment-style names ending in one of those fields (GITHUB_TOKEN,
  DB_PASSWORD, OPENAI_API_KEY), as a failed assertion on os.environ prints them.

`redact_obj` does the same to every string inside JSON-like data and dataclasses;
`redact_file` and `redact_tree` rewrite files already written (JSON and XML are parsed, so
their escaping cannot hide a secret from the patterns).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, TypeVar, cast

T = TypeVar("T")

REDACTED = "<redacted>"

# Newlines may be real or escapes (\n in a repr or a JSON string).
_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----"
    # up to its END line; a block cut off (a clipped message) up to the base64's end
    r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY-----|(?:[A-Za-z0-9+/=\s:,-]|\\[rn])*)",
    re.DOTALL,
)
# The end of a block whose BEGIN was cut off (a log tail): with the base64 lines before it,
# read backwards from the END (a forward pattern would retry from every line: quadratic).
_PEM_END = re.compile(r"-----END[A-Z0-9 ]*PRIVATE KEY-----")
_LINES_BEFORE_REVERSED = re.compile(r"(?:(?:\n\r?|n\\(?:r\\)?)[A-Za-z0-9+/=]+)*")
_AUTHORIZATION = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?)"
    r"(?:[A-Za-z]+[ \t]+)?[^\s\"',;&)}\]\\]+"
)
# Prose ("a bearer token") is not a credential.
_PROSE = r"(?:tokens?|auth|authentication|credentials?|scheme|header)\b"
_BEARER = re.compile(rf"(?i)\b(bearer)([ \t]+)(?!{_PROSE})[A-Za-z0-9\-._~+/]+=*")
# Whole key names only (no match inside `automountServiceAccountToken` or `tokens:`), with any
# `WORD_` or `word-` prefix (environment names: GITHUB_TOKEN, DB_PASSWORD, OPENAI_API_KEY).
_KEYS = (
    r"(?:[A-Za-z0-9]{1,40}[-_]){0,8}"  # bounded: linear on a hostile "a-a-a-..." line
    r"(?:(?:access|refresh|id|auth|bearer)[-_]?token|token|client[-_]?secret|secret|password|passwd"
    r"|client-key-data|client-certificate-data|dockerconfigjson|dockercfg|auth"
    r"|api[-_]?key|private[-_]?key|secret[-_]access[-_]key|session[-_]token)"
)
# Tokens that say what they are by their prefix, wherever they stand: GitHub (ghp_, gho_, ghu_,
# ghs_, ghr_, github_pat_), GitLab (glpat-), Slack (xox?-).
_PREFIXED = re.compile(
    r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|xox[abprs]-[\w-]{10,})"
)
# `--token X` (the `=` form is a field above); the value is not the next flag.
_FLAG = re.compile(r"(?i)(?<![\w-])(--(?:token|password|client-secret)[ \t]+)(?!-)[^\s\"',;&)}\]]+")
# A JWT: base64url of '{"' (eyJ) for the header and the payload, then the signature.
_JWT = re.compile(r"(?<![\w-])eyJ[\w-]{4,}\.eyJ[\w-]{4,}\.[\w-]*")
_FIELD = re.compile(
    rf"(?i)(?<![A-Za-z0-9_/])({_KEYS}\\?[\"']?[ \t]*[:=][ \t]*)"
    # a quoted value (JSON, possibly escaped inside another string), or a bare one to the next
    # separator; a value that opens a mapping or list is structure, not a secret
    r"(\\?\"(?:[^\"\\\n]|\\.)*?\\?\"|'[^'\n]*'|(?![{\[])(?:\\\"|[^\s\"',;&)}\]])+)"
)


def _field(m: re.Match[str]) -> str:
    value = m.group(2)
    quote = next((q for q in ('\\"', '"', "'") if value.startswith(q) and len(value) > len(q)), "")
    return f"{m.group(1)}{quote}{REDACTED}{quote}"


def _cut_off_tails(text: str) -> str:
    parts, last = [], 0
    for m in _PEM_END.finditer(text):
        before = _LINES_BEFORE_REVERSED.match(text[last : m.start()][::-1])
        cut = m.start() - (before.end() if before else 0)
        parts += [text[last:cut], f"{REDACTED} private key"]
        last = m.end()
    return "".join(parts) + text[last:]


def redact(text: str) -> str:
    """`text` with every credential it carries replaced by <redacted>."""
    text = _PEM.sub(f"{REDACTED} private key", text)
    if "PRIVATE KEY-----" in text:  # only ENDs without a BEGIN are left
        text = _cut_off_tails(text)
    text = _AUTHORIZATION.sub(rf"\1{REDACTED}", text)
    text = _BEARER.sub(rf"\1\2{REDACTED}", text)
    text = _FLAG.sub(rf"\1{REDACTED}", text)
    text = _JWT.sub(REDACTED, text)
    text = _PREFIXED.sub(REDACTED, text)
    return _FIELD.sub(_field, text)


def redact_obj(obj: T) -> T:
    """A copy of `obj` with every string in it redacted: dicts, lists, tuples and dataclasses
    (pytest's report classes and the readiness report among them) all the way down."""
    return cast(T, _walk(copy.deepcopy(obj)))


def _walk(obj: object) -> object:
    if type(obj) is str:  # str enums and other subclasses are names, not data
        return redact(obj)
    if isinstance(obj, list) and obj and all(type(x) is str and "\n" not in x for x in obj):
        # Lines (of a traceback, a diff, a log): redacted together, as a key spans several.
        obj[:] = redact("\n".join(obj)).split("\n")
    elif isinstance(obj, list):
        obj[:] = [_walk(x) for x in obj]
    elif isinstance(obj, dict):
        for key in obj:
            obj[key] = _walk(obj[key])
    elif isinstance(obj, tuple):
        items = [_walk(x) for x in obj]
        return cast(Any, type(obj))(*items) if hasattr(obj, "_fields") else tuple(items)  # namedtuples
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # Set on the copy even when frozen: several of pytest's classes have their own __init__,
        # so dataclasses.replace() cannot rebuild them.
        for f in dataclasses.fields(obj):
            object.__setattr__(obj, f.name, _walk(getattr(obj, f.name)))
    return obj


def _redact_xml(text: str) -> str:
    root = ET.fromstring(text)
    changed = False

    def clean(value: str) -> str:
        nonlocal changed
        new = redact(value)
        changed |= new != value
        return new

    for el in root.iter():
        el.text = el.text and clean(el.text)
        el.tail = el.tail and clean(el.tail)
        for name, value in el.attrib.items():
            el.attrib[name] = clean(value)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) if changed else text


def _redact_json(text: str) -> str:
    data = json.loads(text)
    clean = redact_obj(data)
    if clean == data:
        return text  # keep the writer's own formatting
    return json.dumps(clean, indent=2 if "\n" in text.strip() else None, ensure_ascii=False)


def redact_file(path: Path) -> bool:
    """Rewrite a text file without its credentials; binary files are left alone. True if changed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return False
    try:
        parse = {".json": _redact_json, ".xml": _redact_xml}.get(path.suffix, redact)
        clean = parse(text)
    except (ValueError, ET.ParseError):  # not what its name says: its text is still redacted
        clean = redact(text)
    if clean == text:
        return False
    path.write_text(clean, encoding="utf-8")
    return True


def redact_tree(root: Path) -> list[Path]:
    """redact_file on every file under `root` (or on `root` itself); the files it changed."""
    if root.is_file():
        return [root] if redact_file(root) else []
    return [p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink() and redact_file(p)]
