"""SSH host keys for tests, made by the real ssh-keygen, as sshd's files are named."""

from __future__ import annotations

import subprocess
from pathlib import Path


def host_keys(directory: Path, *key_types: str, passphrase: str = "") -> dict[str, str]:
    """ssh_host_TYPE_key and its .pub for each type, written into `directory`; their text by name."""
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for key_type in key_types:
        key = directory / f"ssh_host_{key_type}_key"
        subprocess.run(["ssh-keygen", "-q", "-t", key_type, "-N", passphrase, "-C", "root@lb1", "-f", str(key)],
                       check=True)  # fmt: skip
        files[key.name] = key.read_text()
        files[f"{key.name}.pub"] = (directory / f"{key.name}.pub").read_text()
    return files
