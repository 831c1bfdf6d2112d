"""SSH host keys for a backup: read and installed by the privileged helper, over its real socket,
with keys ssh-keygen made; a set sshd could not use is refused and changes nothing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from fulcrum.apply.client import ApplierError, SocketApplier
from fulcrum.apply.daemon import ApplyServer
from fulcrum.apply.engine import ApplyEngine
from fulcrum.apply.host_keys import HostKeys, HostKeysRefused, install_host_keys, read_host_keys

from applytest import Netns, Paths, engine_config
from lab.ssh_keys import host_keys


@pytest.fixture
def key_dir(tmp_path: Path) -> Path:
    return tmp_path / "data-ssh"


@pytest.fixture
def reloads(tmp_path: Path) -> Path:
    return tmp_path / "sshd-reloads"


@pytest.fixture
def engine(paths: Paths, netns: Netns, key_dir: Path, reloads: Path) -> ApplyEngine:
    """The conftest's engine, with a host key directory and a reload command that leaves a mark."""
    reload_command = ("sh", "-c", f"echo reloaded >> {reloads}")
    return ApplyEngine(engine_config(paths, netns, ssh_host_key_dir=key_dir, ssh_reload_command=reload_command))


def test_a_backed_up_set_is_installed_root_only_and_sshd_reloaded(
    server: ApplyServer, key_dir: Path, reloads: Path, tmp_path: Path
) -> None:
    helper = SocketApplier(server.server_address)
    host_keys(key_dir, "ed25519")  # the fresh box's own key, replaced
    backed_up = host_keys(tmp_path / "old-box", "ed25519", "ecdsa", "rsa")

    installed = helper.install_ssh_host_keys(HostKeys(files=backed_up))

    assert installed.installed == ["ssh_host_ed25519_key", "ssh_host_ecdsa_key", "ssh_host_rsa_key"]
    assert installed.message.endswith("sshd reloaded"), installed.message
    assert reloads.read_text() == "reloaded\n"
    for name, text in backed_up.items():
        path = key_dir / name
        assert path.read_text() == text
        assert stat.S_IMODE(path.stat().st_mode) == (0o644 if name.endswith(".pub") else 0o600), name
    assert sorted(p.name for p in key_dir.iterdir()) == sorted(backed_up), "a temporary file was left behind"
    # What a backup of this box now reads, through the same socket.
    assert helper.ssh_host_keys().files == backed_up


def test_a_mismatched_public_key_is_refused_and_nothing_changes(
    server: ApplyServer, key_dir: Path, reloads: Path, tmp_path: Path
) -> None:
    own = host_keys(key_dir, "ed25519")
    first, second = host_keys(tmp_path / "a", "ed25519"), host_keys(tmp_path / "b", "ed25519")
    crossed = {"ssh_host_ed25519_key": first["ssh_host_ed25519_key"],
               "ssh_host_ed25519_key.pub": second["ssh_host_ed25519_key.pub"]}  # fmt: skip

    with pytest.raises(ApplierError, match=r"ssh_host_ed25519_key\.pub is not the public key of ssh_host_ed25519_key"):
        SocketApplier(server.server_address).install_ssh_host_keys(HostKeys(files=crossed))

    assert read_host_keys(key_dir).files == own
    assert not reloads.exists(), "sshd was reloaded for a refused set"


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (lambda f: {k: v for k, v in f.items() if k.endswith(".pub")}, "no SSH host private key"),
        (lambda f: {"ssh_host_ed25519_key": f["ssh_host_ed25519_key"]}, "comes without ssh_host_ed25519_key.pub"),
        (lambda f: {**f, "ssh_host_rsa_key.pub": f["ssh_host_ed25519_key.pub"]}, "ssh_host_rsa_key.pub comes without"),
        (lambda f: {**f, "ssh_host_ed25519_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n"},
         "not an unencrypted OpenSSH private key"),  # fmt: skip
    ],
    ids=["public-only", "no-public", "orphan-public", "garbage"],
)
def test_a_set_sshd_could_not_use_is_refused(change, refusal: str, key_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = change(host_keys(tmp_path / "old-box", "ed25519"))
    with pytest.raises(HostKeysRefused, match=refusal):
        install_host_keys(key_dir, HostKeys(files=files), None)
    assert not key_dir.exists()


def test_a_key_under_another_types_name_or_with_a_passphrase_is_refused(key_dir: Path, tmp_path: Path) -> None:
    rsa = host_keys(tmp_path / "rsa", "rsa")
    disguised = {"ssh_host_ed25519_key": rsa["ssh_host_rsa_key"], "ssh_host_ed25519_key.pub": rsa["ssh_host_rsa_key.pub"]}
    with pytest.raises(HostKeysRefused, match="not an ed25519 key"):
        install_host_keys(key_dir, HostKeys(files=disguised), None)
    locked = host_keys(tmp_path / "locked", "ed25519", passphrase="secret phrase")
    with pytest.raises(HostKeysRefused, match="not an unencrypted OpenSSH private key"):
        install_host_keys(key_dir, HostKeys(files=locked), None)


@pytest.mark.parametrize(
    "files",
    [{"../../etc/shadow": "x"}, {"authorized_keys": "ssh-ed25519 AAAA"}, {"ssh_host_ed25519_key": "caf\u00e9"}],
    ids=["path", "other-file", "not-ascii"],
)
def test_names_and_text_outside_a_host_key_are_refused_by_the_model(files: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        HostKeys(files=files)


def test_a_failed_reload_is_reported_with_the_keys_installed(key_dir: Path, tmp_path: Path) -> None:
    files = host_keys(tmp_path / "old-box", "ed25519")
    installed = install_host_keys(key_dir, HostKeys(files=files), ("sh", "-c", "echo ssh.service not loaded; exit 5"))
    assert "reloading sshd failed (sh exit 5): ssh.service not loaded" in installed.message
    assert read_host_keys(key_dir).files == files
