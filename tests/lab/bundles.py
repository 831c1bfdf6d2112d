"""Small RAUC bundles for tests, made with the real `rauc bundle`: a squashfs of random bytes (RAUC
wants more than 4 KiB), signed with the development key (image/rauc/dev-keys) or a key of a CA of
its own, for any compatible string; and a truncated copy."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEV_KEYS = REPO / "image/rauc/dev-keys"
COMPATIBLE = "fulcrum-x86_64"


def _run(*command: str | Path) -> None:
    subprocess.run(
        [str(part) for part in command], check=True, capture_output=True, timeout=120
    )


def make_bundle(
    work: Path, name: str, cert: Path, key: Path, compatible: str, version: str
) -> Path:
    content = work / f"{name}-content"
    (content / "root").mkdir(parents=True)
    (content / "root/random").write_bytes(os.urandom(64 * 1024))
    _run("mksquashfs", content / "root", content / "rootfs.ext4", "-quiet", "-noappend")
    shutil.rmtree(content / "root")
    (content / "manifest.raucm").write_text(
        f"[update]\ncompatible={compatible}\nversion={version}\n\n[bundle]\nformat=verity\n\n"
        "[image.rootfs]\nfilename=rootfs.ext4\n"
    )
    bundle = work / f"{name}.raucb"
    _run("rauc", "bundle", f"--cert={cert}", f"--key={key}", content, bundle)
    return bundle


def make_other_signer(work: Path) -> tuple[Path, Path]:
    """A CA of its own and a signer it issued: a key the appliance's keyring does not know."""
    ca_key, ca_cert, key, request, cert = (
        work / n for n in ("ca.key", "ca.pem", "key.pem", "req", "cert.pem")
    )
    _run(
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca_cert,
        "-days", "2", "-subj", "/CN=Another CA", "-addext", "basicConstraints=critical,CA:TRUE",
    )  # fmt: skip
    _run(
        "openssl",
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        key,
        "-out",
        request,
        "-subj",
        "/CN=x",
    )
    _run(
        "openssl", "x509", "-req", "-in", request, "-CA", ca_cert, "-CAkey", ca_key, "-set_serial", "7",
        "-days", "2", "-out", cert,
    )  # fmt: skip
    return cert, key


@dataclass(frozen=True)
class Bundles:
    good: Path  # development key, this compatible, version 2.0.0
    other_key: Path
    truncated: Path
    other_compatible: Path


def make_bundles(work: Path) -> Bundles:
    dev = DEV_KEYS / "signing.cert.pem", DEV_KEYS / "signing.key.pem"
    good = make_bundle(work, "good", *dev, COMPATIBLE, "2.0.0")
    truncated = work / "truncated.raucb"
    shutil.copy(good, truncated)
    _run("truncate", "--size=-4096", truncated)
    return Bundles(
        good=good,
        other_key=make_bundle(
            work, "other-key", *make_other_signer(work), COMPATIBLE, "2.0.0"
        ),
        truncated=truncated,
        other_compatible=make_bundle(
            work, "other-compatible", *dev, "toaster-arm64", "2.0.0"
        ),
    )
