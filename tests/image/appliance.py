"""Driving a booted appliance VM: its serial console (pexpect) and its API (httpx, pinned TLS).

The VM is `image/run-vm` on a throw-away qcow2 layered over the built image, so the image itself
stays pristine. Every wait has a deadline and says what it was waiting for when it runs out.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pexpect
import ptyprocess

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the lab package

from lab.api_client import ApiClient  # noqa: E402
from lab.netns import NetNS, run_in  # noqa: E402
from lab.wait import wait_until  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RUN_VM = REPO / "image/run-vm"
BASE_IMAGE = REPO / "image/out/fulcrum.qcow2"
RAW_IMAGE = REPO / "image/out/fulcrum.img"  # the same disk, raw: what `make bundle` cuts slot A from

MENU_PROMPT = "Choose 1-8: "
FINGERPRINT = re.compile(r"Certificate SHA-256: ((?:[0-9A-F]{2}:){31}[0-9A-F]{2})")
SHELL_PROMPT = "FULCRUM-SHELL# "
CONSOLE_TAIL = 2000  # characters of the console shown when an expected line never came
# Under software emulation a boot takes a few minutes; the API's Python start-up about one more.
BOOT_TIMEOUT = float(os.environ.get("FULCRUM_IMAGE_BOOT_TIMEOUT", 900))
API_TIMEOUT = float(os.environ.get("FULCRUM_IMAGE_API_TIMEOUT", 600))
# The MACs image/run-vm gives the NICs it adds after the management one (FULCRUM_VM_EXTRA_NICS).
EXTRA_NIC_MACS = ("52:54:00:fb:00:01", "52:54:00:fb:00:02")


class ApplianceError(AssertionError):
    pass


# TUNSETIFF and its flags (linux/if_tun.h): a tap device, frames without a packet-info header.
_TUNSETIFF, _IFF_TAP, _IFF_NO_PI = 0x400454CA, 0x0002, 0x1000


@dataclass(frozen=True)
class TapNic:
    """A NIC of the VM on a bridge of the test's own network (image_pair.py), through a tap.

    The tap is made anew at every start, in the bridges' namespace, and qemu holds its only
    descriptor: when the VM powers off the tap goes and the bridge loses the port, as a switch
    loses a box that is switched off."""

    switch: NetNS
    bridge: str
    tap: str  # its name in the switch namespace, at most 15 characters
    mac: str

    def open(self) -> int:
        fd = run_in(self.switch, _open_tap, self.tap)
        self.switch.ip("link", "set", self.tap, "master", self.bridge, "up")
        return fd


def _open_tap(name: str) -> int:
    """A new tap named `name` in this thread's network namespace; its descriptor, inheritable."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    os.set_inheritable(fd, True)
    return fd


class _Spawn(pexpect.spawn):  # type: ignore[misc]
    """pexpect.spawn whose child keeps the given descriptors (ptyprocess closes all others)."""

    def __init__(self, *args: Any, pass_fds: tuple[int, ...] = (), **kwargs: Any):
        self._pass_fds = pass_fds
        super().__init__(*args, **kwargs)

    def _spawnpty(self, args: list[str], **kwargs: Any) -> ptyprocess.PtyProcess:
        return ptyprocess.PtyProcess.spawn(args, pass_fds=self._pass_fds, **kwargs)


def new_disk(image: Path, disk: Path) -> Path:
    """A new 8 GiB qcow2 at `disk` over the image (so /data has room to grow); the image stays pristine."""
    subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image), "-F", "qcow2", str(disk), "8G"], check=True
    )
    return disk


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Appliance:
    disk: Path
    results: Path
    firmware: str = "bios"  # or "uefi" (OVMF)
    extra_nics: int = 0  # NICs after the management one, with carrier and no network behind them
    tap_nics: tuple[TapNic, ...] = ()  # NICs after those, on the test's bridges
    label: str = "appliance"  # names its serial log in `results`
    https_port: int = field(default_factory=free_port)
    ssh_port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    child: pexpect.spawn | None = None
    fingerprint: str | None = None
    booted_at: float = 0.0  # when qemu started or the last reboot was asked for

    # --- the VM -----------------------------------------------------------------------------

    @property
    def serial_log_path(self) -> Path:
        return self.results / f"{self.label}-serial.log"

    def start(self) -> None:
        env = dict(
            os.environ,
            FULCRUM_VM_HTTPS_PORT=str(self.https_port),
            FULCRUM_VM_SSH_PORT=str(self.ssh_port),
            FULCRUM_VM_HTTP_PORT=str(self.http_port),
            FULCRUM_VM_FIRMWARE=self.firmware,
            FULCRUM_VM_EXTRA_NICS=str(self.extra_nics),
        )
        fds = [nic.open() for nic in self.tap_nics]
        env["FULCRUM_VM_TAP_NICS"] = " ".join(f"{fd}/{nic.mac}" for fd, nic in zip(fds, self.tap_nics, strict=True))
        self.serial_log = self.serial_log_path.open("ab")
        self.booted_at = time.monotonic()
        try:
            self.child = _Spawn(
                str(RUN_VM), [str(self.disk)], env=env, timeout=60, logfile=self.serial_log, pass_fds=tuple(fds)
            )
        finally:
            for fd in fds:  # qemu's copies are the only ones left
                os.close(fd)

    def power_off(self) -> None:
        """Pull the plug: qemu's monitor (Ctrl-A c on the serial line) quits, as power fails."""
        assert self.child is not None
        self.child.send("\x01c")
        self.expect("(qemu) ", 30, "qemu's monitor prompt")
        self.child.send("quit\r")
        try:
            self.child.expect(pexpect.EOF, timeout=60)
        except pexpect.TIMEOUT:
            raise ApplianceError("qemu did not quit from its monitor") from None
        self.child.close(force=True)
        self.child = None
        self.serial_log.close()

    def stop(self) -> None:
        """Kill qemu (run-vm execs it, so the child is qemu itself); always safe to call."""
        if self.child is not None and self.child.isalive():
            self.child.terminate(force=True)
        if self.child is not None:
            self.child.close(force=True)
        if not self.serial_log.closed:
            self.serial_log.close()

    def expect(self, pattern: str | re.Pattern[str], timeout: float, what: str) -> re.Match[bytes]:
        assert self.child is not None
        try:
            self.child.expect(pattern if isinstance(pattern, re.Pattern) else re.escape(pattern), timeout=timeout)
        except pexpect.TIMEOUT:
            seen = self.child.before.decode(errors="replace")[-CONSOLE_TAIL:] if self.child.before else ""
            raise ApplianceError(
                f"timed out after {timeout:g} s waiting for {what} on the serial console; "
                f"its last output:\n{seen}"
            ) from None
        except pexpect.EOF:
            raise ApplianceError(f"qemu exited while waiting for {what}; see {self.serial_log_path}") from None
        return self.child.match  # type: ignore[no-any-return]

    def drain_console(self) -> None:
        """Read what the serial console has written so far into the log, keeping it for the next
        expect. Long waits on the API call this: qemu blocks, and the guest with it, once a pty
        nobody reads is full (a boot writes more than it holds), and the log shows what happened."""
        assert self.child is not None
        try:
            while True:
                self.child.buffer += self.child.read_nonblocking(1 << 16, timeout=0)
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass

    def send(self, line: str) -> None:
        assert self.child is not None
        self.child.send(line + "\r")

    # --- the console menu -------------------------------------------------------------------

    def wait_for_menu(self, timeout: float = BOOT_TIMEOUT) -> str:
        """Wait for the console menu after a boot; returns (and keeps) the certificate fingerprint."""
        match = self.expect(re.compile(FINGERPRINT.pattern.encode()), timeout, "the console menu's certificate fingerprint")
        self.fingerprint = match.group(1).decode()
        self.expect(MENU_PROMPT, 120, "the console menu's prompt")
        return self.fingerprint

    def redraw_menu(self) -> None:
        self.send("")
        self.expect(MENU_PROMPT, 120, "the console menu")

    def choose(self, item: str) -> None:
        self.send(item)

    def answer(self, prompt: str, value: str, timeout: float = 60) -> None:
        self.expect(prompt, timeout, f"the prompt {prompt!r}")
        self.send(value)

    def wait_for_api_gone(self, timeout: float) -> None:
        """Poll until the API stops answering over the forwarded port (its address moved away)."""

        def gone() -> bool | None:
            self.drain_console()
            try:
                with self.api() as client:
                    client.get("/health", timeout=5)
            except httpx.TransportError:
                return True
            return None

        wait_until(gone, timeout, what="the API to stop answering on the forwarded address", interval=1.0)

    @contextmanager
    def shell(self) -> Iterator[Callable[[str, float], str]]:
        """The menu's root shell; yields run(command, timeout) -> output. Exits back to the menu."""
        self.choose("8")
        self.expect("exit` returns to the menu", 60, "the shell")
        # Split in two quoted halves so the echo of this line cannot pass for the prompt itself.
        half = len(SHELL_PROMPT) // 2
        self.send(f"PS1='{SHELL_PROMPT[:half]}''{SHELL_PROMPT[half:]}'; stty -echo; export TERM=dumb")
        self.expect(SHELL_PROMPT, 60, "the shell prompt")
        counter = iter(range(1_000_000))

        def run(command: str, timeout: float = 60) -> str:
            marker = f"END{next(counter)}"
            # The marker is split in the command so only its output, not an echo, can match.
            self.send(f"{command}; echo '{marker[:2]}''{marker[2:]}' rc=$?")
            # Line ends arrive as \r\r\n: the guest's \r\n, and the local pty's own \n -> \r\n.
            match = self.expect(re.compile(rf"(.*?){marker} rc=(\d+)\r*\n".encode(), re.S), timeout, f"`{command}`")
            output, status = match.group(1).decode(errors="replace"), int(match.group(2))
            self.expect(SHELL_PROMPT, 30, "the shell prompt")
            if status != 0:
                raise ApplianceError(f"`{command}` exited with {status}: {output.strip()}")
            return _strip_terminal(output)

        try:
            yield run
        finally:
            self.send("stty echo; exit")
            self.expect(MENU_PROMPT, 60, "the menu after leaving the shell")

    # --- the API ----------------------------------------------------------------------------

    def api(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(
            base_url=f"https://127.0.0.1:{self.https_port}/api/v1",
            verify=_pinned_context(self.fingerprint),
            headers=headers,
            timeout=120,
        )

    def client(self, token: str | None = None) -> ApiClient:
        """lab's API client (expected statuses, decoded JSON) over the pinned HTTPS port."""
        node = ApiClient()
        node.token = token
        node.connect(f"https://127.0.0.1:{self.https_port}", verify=_pinned_context(self.fingerprint))
        return node

    def wait_for_api(self, timeout: float = API_TIMEOUT) -> float:
        """Poll /health over the forwarded HTTPS port; returns seconds since qemu started."""

        def healthy() -> bool | None:
            self.drain_console()
            with self.api() as client:
                return True if client.get("/health").status_code == 200 else None

        what = "the API's /health over HTTPS (certificate pinned to the console's fingerprint)"
        wait_until(healthy, timeout, what=what, interval=2.0)
        return time.monotonic() - self.booted_at

    def ip_addresses(self, run: Callable[[str, float], str], interface: str) -> list[dict[str, Any]]:
        found = json.loads(run(f"ip -j -4 addr show dev {interface}", 30))
        return found[0]["addr_info"] if found else []


def _strip_terminal(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "").strip()


def _pinned_context(fingerprint: str | None) -> ssl.SSLContext:
    """TLS to the appliance's self-signed certificate: accepted only if its SHA-256 is the one the
    console printed (hostname and chain checks do not apply to a self-signed appliance cert)."""
    if fingerprint is None:
        raise ApplianceError("no certificate fingerprint read from the console yet")
    expected = bytes.fromhex(fingerprint.replace(":", ""))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def check(peer: ssl.SSLSocket | ssl.SSLObject) -> None:
        presented = hashlib.sha256(peer.getpeercert(binary_form=True) or b"").digest()
        if presented != expected:
            raise ssl.SSLError(f"certificate SHA-256 {presented.hex(':').upper()} is not the console's {fingerprint}")

    # Checked in the handshake, before a request (and its credentials) is sent.
    class PinnedSocket(ssl.SSLSocket):
        def do_handshake(self, block: bool = False) -> None:
            super().do_handshake(block)
            check(self)

    context.sslsocket_class = PinnedSocket
    return context
