"""The first-boot self-signed certificate (overlay/usr/lib/fulcrum/firstboot, ensure_tls) names
the host and the management IP addresses: its functions run for real with bash and openssl, with
/data's paths pointed at a temporary directory."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
from pathlib import Path

from cryptography import x509

from fulcrum.tls.validation import validate_upload

FIRSTBOOT = Path(__file__).resolve().parents[3] / "overlay/usr/lib/fulcrum/firstboot"


def run_ensure_tls(tmp_path: Path, network_file: str) -> x509.Certificate:
    (tmp_path / "tls").mkdir()
    (tmp_path / "network").mkdir()
    (tmp_path / "network/80-fulcrum-mgmt.network").write_text(network_file)
    script = f"""
        set -euo pipefail
        source <(sed '$d' {FIRSTBOOT})  # every function, without running main
        TLS_DIR={tmp_path}/tls NETWORK_DIR={tmp_path}/network
        chgrp() {{ :; }}  # no fulcrum group on the test host
        ensure_tls
    """
    subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True, timeout=60)
    return x509.load_pem_x509_certificate((tmp_path / "tls/fulcrum.crt").read_bytes())


def test_the_self_signed_certificate_names_the_host_and_the_static_management_addresses(
    tmp_path: Path,
) -> None:
    network = (
        "[Match]\nMACAddress=52:54:00:12:34:56\n\n[Network]\nAddress=192.0.2.7/24\nAddress=2001:db8::7/64\n"
    )
    network += "Address=$(touch /tmp/injected)/24\nGateway=192.0.2.1\n"
    certificate = run_ensure_tls(tmp_path, network)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    host = socket.gethostname()
    assert names.get_values_for_type(x509.DNSName) == [host, f"{host}.local"]
    addresses = names.get_values_for_type(x509.IPAddress)
    assert ipaddress.ip_address("192.0.2.7") in addresses and ipaddress.ip_address("2001:db8::7") in addresses
    assert ipaddress.ip_address("192.0.2.1") not in addresses  # the gateway is not this box
    assert (tmp_path / "tls/fulcrum.key").stat().st_mode & 0o777 == 0o640


def test_the_self_signed_certificate_is_a_server_certificate_the_api_would_take_back(tmp_path: Path) -> None:
    """Not a CA (openssl req -x509 makes one by default, which Firefox refuses as a server's and
    which a restore of this box's backup would then refuse to install), and for TLS servers."""
    certificate = run_ensure_tls(tmp_path, "[Network]\nAddress=192.0.2.7/24\n")
    assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    usages = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]
    validate_upload((tmp_path / "tls/fulcrum.crt").read_text(), (tmp_path / "tls/fulcrum.key").read_text())
