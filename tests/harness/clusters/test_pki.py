"""The local cluster's PKI: who each certificate says it is, and that the CA signed it."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from harness.clusters.host.pki import generate_pki


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_certificates_identify_each_user_and_are_signed_by_the_ca(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path)
    ca = _cert(pki.ca.cert)
    subjects = {}
    for pair in (pki.apiserver, pki.admin, pki.controller_manager, pki.scheduler):
        cert = _cert(pair.cert)
        cert.verify_directly_issued_by(ca)
        subjects[pair.cert.stem] = cert.subject.rfc4514_string()
    assert subjects == {
        "apiserver": "CN=kube-apiserver",
        "admin": "O=system:masters,CN=dra-harness-admin",
        "controller-manager": "CN=system:kube-controller-manager",
        "scheduler": "CN=system:kube-scheduler",
    }
    assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "dra-harness-ca"


def test_apiserver_certificate_serves_loopback_and_the_service_names(tmp_path: Path) -> None:
    cert = _cert(generate_pki(tmp_path).apiserver.cert)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
    }
    assert set(san.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.0.0.1"),
    }
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_keys_are_private_and_the_service_account_pair_matches(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    pki = generate_pki(tmp_path)
    assert {p.stat().st_mode & 0o777 for p in tmp_path.glob("*.key")} == {0o600}
    private = serialization.load_pem_private_key(pki.service_account_key.read_bytes(), None)
    public = serialization.load_pem_public_key(pki.service_account_pub.read_bytes())
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    assert private.public_key().public_numbers() == public.public_numbers()  # type: ignore[union-attr]
