"""The appliance's SSH host keys, read for a backup and installed by a restore.

They belong to root (sshd refuses a private key others can read), so the privileged helper does
both; the API only asks. An install takes only the three key types sshd is configured with
(overlay/etc/ssh/sshd_config.d/fulcrum.conf), each private key with the public key that matches it,
checked by parsing, never by name alone. Each file is written as FILE.new and renamed over FILE
(fulcrum.apply.files, as every file the helper installs), then sshd is reloaded with the
configured command (it re-reads its host keys on SIGHUP).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from pydantic import BaseModel, Field, StringConstraints

from fulcrum.apply.files import fsync_dir, new_path, write_durably
from fulcrum.apply.tools import ToolError, run_tool

KEY_TYPES = ("ed25519", "ecdsa", "rsa")
KEY_FILE = re.compile(r"ssh_host_(ed25519|ecdsa|rsa)_key(\.pub)?")
MAX_KEY_CHARS = 16 * 1024  # an RSA 8192 private key is under 7 KiB
PRIVATE_MODE, PUBLIC_MODE = 0o600, 0o644

KeyFileName = Annotated[str, StringConstraints(pattern=KEY_FILE.pattern)]
KeyText = Annotated[str, StringConstraints(max_length=MAX_KEY_CHARS, pattern=r"^[\x20-\x7e\n]*$")]


class HostKeys(BaseModel):
    """Host key files by name (ssh_host_TYPE_key and its .pub), as OpenSSH writes them."""

    files: dict[KeyFileName, KeyText] = Field(default_factory=dict, max_length=2 * len(KEY_TYPES))


class HostKeysInstalled(BaseModel):
    installed: list[str]  # the private keys' names, their public keys beside them
    message: str


class HostKeysRefused(ValueError):
    """Nothing was installed: the keys are not a set sshd could use."""


def read_host_keys(directory: Path) -> HostKeys:
    """The host key files in `directory` (none if it does not exist)."""
    if not directory.is_dir():
        return HostKeys()
    return HostKeys(
        files={
            path.name: path.read_text(encoding="ascii")
            for path in sorted(directory.iterdir())
            if KEY_FILE.fullmatch(path.name) and path.is_file()
        }
    )


def install_host_keys(
    directory: Path, keys: HostKeys, reload_command: tuple[str, ...] | None
) -> HostKeysInstalled:
    """Check every pair, write them all, then reload sshd. A refused set changes nothing (a write
    that fails half-way leaves the pairs written before it, each one whole)."""
    pairs = _checked_pairs(keys)
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    for key_type in pairs:
        name = f"ssh_host_{key_type}_key"
        _replace(directory / name, keys.files[name], PRIVATE_MODE)
        _replace(directory / f"{name}.pub", keys.files[f"{name}.pub"], PUBLIC_MODE)
    fsync_dir(directory)
    installed = [f"ssh_host_{key_type}_key" for key_type in pairs]
    return HostKeysInstalled(installed=installed, message=_reload(reload_command, installed))


def _checked_pairs(keys: HostKeys) -> list[str]:
    names = set(keys.files)
    types = [key_type for key_type in KEY_TYPES if f"ssh_host_{key_type}_key" in names]
    if not types:
        raise HostKeysRefused("no SSH host private key to install")
    for key_type in types:
        private_name = f"ssh_host_{key_type}_key"
        if f"{private_name}.pub" not in names:
            raise HostKeysRefused(f"{private_name} comes without {private_name}.pub")
        private = _private_key(private_name, keys.files[private_name], key_type)
        public = private.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        stated = keys.files[f"{private_name}.pub"].split()[:2]
        if stated != public.decode().split()[:2]:
            raise HostKeysRefused(f"{private_name}.pub is not the public key of {private_name}")
    orphans = sorted(name for name in names if name.removesuffix(".pub").split("_")[2] not in types)
    if orphans:
        raise HostKeysRefused(f"{', '.join(orphans)} comes without its private key")
    return types


_KEY_CLASSES = {
    "ed25519": ed25519.Ed25519PrivateKey,
    "ecdsa": ec.EllipticCurvePrivateKey,
    "rsa": rsa.RSAPrivateKey,
}


def _private_key(
    name: str, text: str, key_type: str
) -> ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey:
    try:
        key = serialization.load_ssh_private_key(text.encode(), password=None)
    except (ValueError, TypeError) as error:  # TypeError: a key that needs a passphrase
        raise HostKeysRefused(f"{name} is not an unencrypted OpenSSH private key: {error}") from None
    if not isinstance(key, _KEY_CLASSES[key_type]):
        raise HostKeysRefused(f"{name} holds a {type(key).__name__}, not an {key_type} key")
    return key  # type: ignore[return-value]  # narrowed by the isinstance above


def _replace(path: Path, text: str, mode: int) -> None:
    staged = new_path(path)
    try:
        write_durably(staged, text.encode("ascii"), mode)  # the mode is set before a byte is written
        os.replace(staged, path)
    except OSError:
        staged.unlink(missing_ok=True)
        raise


def _reload(command: tuple[str, ...] | None, installed: list[str]) -> str:
    done = f"installed {', '.join(installed)}"
    if not command:
        return f"{done}; sshd was not reloaded (no reload command is configured here)"
    try:
        run = run_tool(command)
    except ToolError as error:
        return f"{done}; reloading sshd failed: {error}"
    if run.returncode != 0:
        return (
            f"{done}; reloading sshd failed ({command[0]} exit {run.returncode}): {run.output.strip()[:300]}"
        )
    return f"{done}; sshd reloaded"
