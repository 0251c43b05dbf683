# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A self-signed CA and serving certificates for the sim platform's local webhook servers.

Layout in the directory: ``ca.crt``, ``ca.key`` and, per server, ``<server>/tls.crt`` and
``<server>/tls.key`` (the file names controller-runtime's webhook server reads).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import ipaddress
import os

CRYPTOGRAPHY_IMPORT_ERROR = None
try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
except ImportError as error:  # pragma: no cover - cryptography comes with ansible-core
    CRYPTOGRAPHY_IMPORT_ERROR = str(error)

CA_DAYS = 3650
SERVER_DAYS = 825
# A certificate closer than this to its end is issued again.
RENEW_BEFORE = datetime.timedelta(days=30)


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _write(path, data, mode):
    tmp = path + ".tmp"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.rename(tmp, path)


def _key_bytes(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _load_cert(path):
    try:
        with open(path, "rb") as handle:
            return x509.load_pem_x509_certificate(handle.read())
    except (OSError, ValueError):
        return None


def _load_key(path):
    try:
        with open(path, "rb") as handle:
            return serialization.load_pem_private_key(handle.read(), password=None)
    except (OSError, ValueError, TypeError):
        return None


def _fresh(cert):
    return cert is not None and cert.not_valid_after_utc - _now() > RENEW_BEFORE


def ensure_ca(directory, common_name, check=False):
    """``(cert, key, changed)`` of the CA in ``directory``, created when missing or expiring.

    With ``check`` nothing is written; a CA that would be created comes back as ``(None, None, True)``.
    """
    cert, key = _load_cert(os.path.join(directory, "ca.crt")), _load_key(os.path.join(directory, "ca.key"))
    if _fresh(cert) and key is not None and cert.public_key() == key.public_key():
        return cert, key, False
    if check:
        return None, None, True
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write(os.path.join(directory, "ca.key"), _key_bytes(key), 0o600)
    _write(os.path.join(directory, "ca.crt"), cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return cert, key, True


def _sans(names):
    entries = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return entries


def _matches(cert, ca_cert, names):
    if not _fresh(cert) or cert.issuer != ca_cert.subject:
        return False
    try:
        cert.verify_directly_issued_by(ca_cert)
        present = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, x509.ExtensionNotFound, Exception):  # pylint: disable=broad-exception-caught
        return False
    return sorted(str(v) for v in present) == sorted(str(v) for v in _sans(names))


def ensure_server(directory, server, names, ca_cert, ca_key, check=False):
    """``changed``: ``<directory>/<server>/tls.crt|tls.key`` signed by the CA for ``names``.

    With ``check`` (or no CA yet, in check mode) nothing is written.
    """
    server_dir = os.path.join(directory, server)
    cert_path, key_path = os.path.join(server_dir, "tls.crt"), os.path.join(server_dir, "tls.key")
    cert, key = _load_cert(cert_path), _load_key(key_path)
    if ca_cert is None:
        return True
    if key is not None and cert is not None and cert.public_key() == key.public_key() and _matches(cert, ca_cert, names):
        return False
    if check:
        return True
    if not os.path.isdir(server_dir):
        os.makedirs(server_dir, 0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, server)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(_sans(names)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write(key_path, _key_bytes(key), 0o600)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return True


def ensure_link(link, target, check=False):
    """A symbolic link ``link`` -> ``target`` (parents made); True when it had to change.

    A link to elsewhere is replaced; a file or directory at ``link`` is a ValueError.
    """
    if os.path.islink(link):
        if os.readlink(link) == target:
            return False
    elif os.path.exists(link):
        raise ValueError("%s exists and is not a symbolic link" % link)
    if check:
        return True
    parent = os.path.dirname(link)
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o700)
    if os.path.islink(link):
        os.unlink(link)
    os.symlink(target, link)
    return True
