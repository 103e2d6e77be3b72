"""AutoMTLS as go-plugin's Go server does it (go-plugin mtls.go, server.go).

The host puts its own certificate in PLUGIN_CLIENT_CERT. The plugin makes a throw-away
certificate of its own, serves TLS that requires the host's certificate, and tells the host its
certificate in the handshake line: the DER, base64 without padding, since the line has no room
for PEM's newlines.
"""

from __future__ import annotations

import base64
import datetime
import secrets
from typing import NamedTuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class Certificate(NamedTuple):
    cert_pem: bytes
    key_pem: bytes
    der: bytes

    def handshake_field(self) -> str:
        """handshake_field is the certificate as the handshake line's sixth field."""
        return base64.b64encode(self.der).decode("ascii").rstrip("=")


def generate_cert() -> Certificate:
    """generate_cert makes the certificate go-plugin's generateCert makes: a self-signed CA for
    "localhost" on a P-521 key, for server and client authentication, valid about 30 years."""
    key = ec.generate_private_key(ec.SECP521R1())
    host = "localhost"
    name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "HashiCorp"),
        x509.NameAttribute(NameOID.COMMON_NAME, host),
    ])
    now = datetime.datetime.now(datetime.timezone.utc)
    # go-plugin draws the serial from [0, 2^128); cryptography wants it positive.
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(secrets.randbelow((1 << 128) - 1) + 1)
        .not_valid_before(now - datetime.timedelta(seconds=30))
        .not_valid_after(now + datetime.timedelta(hours=262980))
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=True,
            data_encipherment=False, key_agreement=True, key_cert_sign=True, crl_sign=False,
            encipher_only=False, decipher_only=False,
        ), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA512())
    )
    return Certificate(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption(),
        ),
        der=cert.public_bytes(serialization.Encoding.DER),
    )


def check_client_cert(pem: str) -> None:
    """check_client_cert raises ValueError when PLUGIN_CLIENT_CERT holds no certificate."""
    if not x509.load_pem_x509_certificates(pem.encode()):
        raise ValueError("no certificate")
