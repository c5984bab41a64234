"""Health probes of component endpoints (etcd /health, apiserver /readyz, ...)."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path

from harness.clusters.host.pki import CertPair


def tls_context(ca: Path | None, client: CertPair | None) -> ssl.SSLContext:
    if ca is None:  # controllers serve self-signed certs on their health ports
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        ctx.load_cert_chain(str(client.cert), str(client.key))
    return ctx


def get(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 2.0) -> tuple[int, str]:
    """(status, body); connection errors come back as status 0 with the reason as body."""
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as err:
        return 0, str(getattr(err, "reason", err))
