"""A throwaway PKI for one local cluster, made with `cryptography`.

ECDSA P-256 keys: generating them takes milliseconds, so every cluster gets fresh ones.
etcd has a CA of its own (as kubeadm lays it out): a client certificate the controller
manager signs with the cluster CA (a CSR any kubelet may file) must never open etcd.
Private keys are created 0600 from their first byte.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=7)


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class ClusterPKI:
    ca: CertPair
    apiserver: CertPair
    admin: CertPair
    controller_manager: CertPair
    scheduler: CertPair
    service_account_key: Path
    service_account_pub: Path
    etcd_ca: CertPair
    etcd_server: CertPair
    etcd_peer: CertPair
    etcd_client: CertPair  # the API server's (and the harness's probes') way into etcd


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def write_private(path: Path, data: bytes) -> None:
    """Owner-only from the first byte: no window in which another user can read it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
        os.write(fd, data)
    finally:
        os.close(fd)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    write_private(
        path,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )


def _leaf(
    directory: Path,
    stem: str,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_name: x509.Name,
    subject: x509.Name,
    *,
    server_names: tuple[str, ...] = (),
    server_ips: tuple[str, ...] = (),
    also_client: bool = False,
) -> CertPair:
    key = _key()
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if (server_names or server_ips) else []
    if not usages or also_client:
        usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    builder = (
        _builder(subject, ca_name, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )
    if server_names or server_ips:
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    pair = CertPair(directory / f"{stem}.crt", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key)
    return pair


def _ca(directory: Path, stem: str, cn: str) -> tuple[CertPair, ec.EllipticCurvePrivateKey, x509.Name]:
    key = _key()
    name = _name(cn)
    cert = (
        _builder(name, name, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    pair = CertPair(directory / f"{stem}.crt", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key)
    return pair, key, name


def _etcd_pairs(directory: Path) -> tuple[CertPair, CertPair, CertPair, CertPair]:
    ca, ca_key, ca_name = _ca(directory, "etcd-ca", "dra-harness-etcd-ca")
    names, ips = ("localhost",), ("127.0.0.1",)
    # Client usage too, as kubeadm does: etcd's JSON gateway dials etcd with this certificate.
    server = _leaf(
        directory,
        "etcd-server",
        ca_key,
        ca_name,
        _name("etcd-server"),
        server_names=names,
        server_ips=ips,
        also_client=True,
    )
    peer = _leaf(
        directory,
        "etcd-peer",
        ca_key,
        ca_name,
        _name("etcd-peer"),
        server_names=names,
        server_ips=ips,
        also_client=True,
    )
    client = _leaf(directory, "etcd-client", ca_key, ca_name, _name("kube-apiserver-etcd-client"))
    return ca, server, peer, client


def generate_pki(directory: Path) -> ClusterPKI:
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key, ca_name = _ca(directory, "ca", "dra-harness-ca")
    sa_key = _key()
    sa_priv, sa_pub = directory / "sa.key", directory / "sa.pub"
    _write_key(sa_key, sa_priv)
    sa_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )

    etcd_ca, etcd_server, etcd_peer, etcd_client = _etcd_pairs(directory)

    def client(stem: str, cn: str, org: str | None = None) -> CertPair:
        return _leaf(directory, stem, ca_key, ca_name, _name(cn, org))

    return ClusterPKI(
        ca=ca,
        apiserver=_leaf(
            directory,
            "apiserver",
            ca_key,
            ca_name,
            _name("kube-apiserver"),
            server_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
            server_ips=("127.0.0.1", "10.0.0.1"),
        ),
        admin=client("admin", "dra-harness-admin", "system:masters"),
        controller_manager=client("controller-manager", "system:kube-controller-manager"),
        scheduler=client("scheduler", "system:kube-scheduler"),
        service_account_key=sa_priv,
        service_account_pub=sa_pub,
        etcd_ca=etcd_ca,
        etcd_server=etcd_server,
        etcd_peer=etcd_peer,
        etcd_client=etcd_client,
    )


def node_client(directory: Path, ca: CertPair, node: str) -> CertPair:
    """A kubelet's client certificate (system:node:<name> in system:nodes: the Node authorizer's
    identity), signed by the cluster CA read back from `ca`."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    ca_key = serialization.load_pem_private_key(ca.key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    directory.mkdir(parents=True, exist_ok=True)
    return _leaf(
        directory, "kubelet-client", ca_key, ca_cert.subject, _name(f"system:node:{node}", "system:nodes")
    )
