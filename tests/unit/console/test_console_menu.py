"""The console menu's password protection, driven on a pseudo-terminal on this host.

The menu program itself (overlay/usr/lib/fulcrum/console-menu) with its password file pointed
at a temporary one (on the appliance: /data/fulcrum/console-password, written by the API), and
the real `openssl passwd` on both sides. The appliance's own serial console is driven the same
way in tests/image.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pexpect
import pytest

from fulcrum.config.network import NetworkConfig
from fulcrum.render import render_network

CONSOLE_MENU = Path(__file__).resolve().parents[3] / "overlay/usr/lib/fulcrum/console-menu"
PASSWORD = "console passphrase 7"
# Loads the program as a module so that only its password file moves; main() is the real loop.
DRIVER = """
import importlib.machinery, importlib.util, pathlib, sys
loader = importlib.machinery.SourceFileLoader("console_menu", sys.argv[1])
spec = importlib.util.spec_from_loader("console_menu", loader)
menu = importlib.util.module_from_spec(spec)
loader.exec_module(menu)
menu.CONSOLE_PASSWORD = pathlib.Path(sys.argv[2])
sys.exit(menu.main())
"""


def sha512_crypt(password: str) -> str:
    return subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=password + "\n", capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def password_file(tmp_path: Path) -> Path:
    return tmp_path / "console-password"


@pytest.fixture
def start_console(password_file: Path) -> Iterator[Callable[[], pexpect.spawn]]:
    """Starts the menu when the test says so: a console protected from its start is started after
    its password file is written (the menu may read it before a test's next line runs)."""
    children: list[pexpect.spawn] = []

    def start() -> pexpect.spawn:
        children.append(pexpect.spawn(sys.executable, ["-c", DRIVER, str(CONSOLE_MENU), str(password_file)],
                                      timeout=30, encoding="utf-8"))  # fmt: skip
        return children[-1]

    try:
        yield start
    finally:
        for child in children:
            child.close(force=True)


@pytest.fixture
def console(start_console: Callable[[], pexpect.spawn]) -> pexpect.spawn:
    """Started at once, with no password file: an open console."""
    return start_console()


def test_an_open_console_shows_the_menu_at_once(console: pexpect.spawn) -> None:
    console.expect_exact("Choose 1-8: ")
    assert "Console password" not in console.before
    assert "Lock the console" not in console.before


def test_a_protected_console_asks_first_refuses_a_wrong_password_and_never_opens_a_shell(
    start_console: Callable[[], pexpect.spawn], password_file: Path
) -> None:
    password_file.write_text(sha512_crypt(PASSWORD) + "\n")
    console = start_console()
    console.expect_exact("This console is password protected")
    console.expect_exact("Console password: ")
    console.sendline("8")  # the shell's menu key is no way in
    console.expect_exact("Wrong password. Try again in 3 seconds.")
    console.sendintr()  # neither is Ctrl-C
    console.expect_exact("Console password: ")
    console.sendline(PASSWORD + " ")
    console.expect_exact("Wrong password.")
    console.expect_exact("Console password: ")
    assert "Choose" not in console.before
    console.sendline(PASSWORD)
    console.expect_exact("0) Lock the console")
    console.expect_exact("Choose 0-8: ")
    console.sendline("0")  # locks it again
    console.expect_exact("Console password: ")
    assert "Choose" not in console.before


def test_protection_turned_on_while_the_menu_waits_stops_the_chosen_action(console: pexpect.spawn, password_file: Path) -> None:
    console.expect_exact("Choose 1-8: ")
    password_file.write_text(sha512_crypt(PASSWORD) + "\n")
    console.sendline("8")
    console.expect_exact("Console password: ")
    assert "Root shell" not in console.before
    console.sendline(PASSWORD)
    console.expect_exact("Choose 0-8: ")
    # A new password (set in the dashboard) is asked for even on an unlocked console.
    password_file.write_text(sha512_crypt("another passphrase") + "\n")
    console.sendline("")
    console.expect_exact("Console password: ")
    console.sendline(PASSWORD)
    console.expect_exact("Wrong password.")
    console.expect_exact("Console password: ")  # getpass drops what was typed ahead
    console.sendline("another passphrase")
    console.expect_exact("Choose 0-8: ")


def test_a_damaged_password_file_keeps_the_console_locked(
    start_console: Callable[[], pexpect.spawn], password_file: Path
) -> None:
    password_file.write_text("root::19000:0:99999:7:::\n")  # an empty shadow field is not "no password"
    console = start_console()
    console.expect_exact("The console password file is damaged")
    console.expect_exact("Console password: ")
    console.sendline("")
    console.expect_exact("Wrong password.")
    console.expect_exact("Console password: ")


def load_menu() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("console_menu", str(CONSOLE_MENU))
    spec = importlib.util.spec_from_loader("console_menu", loader)
    assert spec is not None
    menu = importlib.util.module_from_spec(spec)
    loader.exec_module(menu)
    return menu


def test_the_management_interface_is_the_managed_networks_once_the_api_manages_it(tmp_path: Path) -> None:
    """The header and the management-address item name the interface the API manages as the
    management one, read from the files the API renders, not the first boot's NIC, which may now be
    a bond's member without an address of its own."""
    menu = load_menu()
    menu.MGMT_NETWORK = tmp_path / "80-fulcrum-mgmt.network"  # the first boot's, on the first NIC
    menu.MGMT_NETWORK.write_text("[Match]\nMACAddress=52:54:00:12:34:01\n\n[Network]\nDHCP=yes\n")
    menu.ip_json = lambda *args: [{"ifname": "enp0s3", "address": "52:54:00:12:34:01"}]
    assert menu.management_interface() == "enp0s3"
    network = NetworkConfig.model_validate({
        "management_interface": "front",
        "nics": [{"name": "enp0s3", "mac": "52:54:00:12:34:01"}, {"name": "enp0s4", "mac": "52:54:00:12:34:02"}],
        "bonds": [{"name": "bond0", "members": ["enp0s3", "enp0s4"]}],
        "vlans": [{"name": "front", "parent": "bond0", "vlan_id": 100, "addresses": ["192.0.2.5/24"]}],
    })
    for name, text in render_network(network).items():
        (tmp_path / name).write_text(text)
    assert menu.management_interface() == "front"
