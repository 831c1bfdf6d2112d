"""A bounded packet capture (tcpdump), the one diagnostic that needs privilege: fulcrum-applyd runs it
for the unprivileged API as a fixed operation, validating every argument again itself.

The argument vector is fixed: the interface must be one the kernel lists, the packet count, the
snap length and the duration are bounded, and the BPF filter is one argument after `--`, made
only of the characters filters need (no option, no shell metacharacter, no newline). The pcap
comes back on tcpdump's standard output, so no file is written anywhere.
"""

from __future__ import annotations

import base64
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

SYS_CLASS_NET = Path("/sys/class/net")
MAX_PACKETS = 1000
MAX_SECONDS = 60
SNAP_LENGTH = 2048  # with MAX_PACKETS, a capture stays under about 2 MiB
MAX_FILTER = 256
# What BPF filters are written with: words, numbers, addresses, comparisons, brackets for offsets,
# parentheses for grouping. Not `;`, `|`, `&`, `$`, backquotes, quotes, backslashes or newlines.
FILTER_CHARACTERS = re.compile(r"^[A-Za-z0-9 .:/\-!=<>\[\]*+()]*$")
INTERFACE_NAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")  # IFNAMSIZ is 16 with the NUL


def check_filter(value: str) -> str:
    value = value.strip()
    if value.startswith("-"):
        raise ValueError("a capture filter must not start with '-' (it would be read as an option)")
    if not FILTER_CHARACTERS.match(value):
        raise ValueError(
            "use a BPF filter of words, numbers, addresses and ! = < > [ ] * + ( ) only, such as "
            "'tcp port 80 and host 10.0.0.5' (no ; | & $ ` quotes, backslashes or newlines)"
        )
    return value


def check_interface_name(value: str) -> str:
    if value.startswith("-") or not INTERFACE_NAME.match(value):
        raise ValueError(
            "not an interface name: up to 15 letters, digits and _ . : @ -, not starting with '-'"
        )
    return value


def kernel_interfaces() -> list[str]:
    # /sys rather than if_nameindex(): glibc asks netlink, which the API's unit may not open.
    return sorted(path.name for path in SYS_CLASS_NET.iterdir())


def check_interface_exists(value: str) -> str:
    if value not in kernel_interfaces():
        raise ValueError(f"no interface {value!r} on this node; it has {', '.join(kernel_interfaces())}")
    return value


BpfFilter = Annotated[str, Field(max_length=MAX_FILTER), AfterValidator(check_filter)]
InterfaceName = Annotated[str, Field(min_length=1, max_length=15), AfterValidator(check_interface_name)]


class CaptureSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    interface: Annotated[InterfaceName, AfterValidator(check_interface_exists)]
    count: Annotated[int, Field(ge=1, le=MAX_PACKETS)] = 100
    seconds: Annotated[int, Field(ge=1, le=MAX_SECONDS)] = 10
    filter: BpfFilter = ""


class CaptureResult(BaseModel):
    pcap_base64: str
    packets: int | None  # as tcpdump counted them; None if it did not say
    stopped_by: str  # "count" or "time"
    message: str  # tcpdump's summary


class CaptureFailed(RuntimeError):
    """tcpdump could not capture (no permission, an interface that went away)."""


class CaptureFilterRejected(CaptureFailed):
    """tcpdump could not compile the filter (a syntax error, an unknown port or host name)."""


def capture_arguments(spec: CaptureSpec) -> list[str]:
    arguments = [
        "tcpdump", "-i", spec.interface, "-c", str(spec.count), "-s", str(SNAP_LENGTH),
        "-n", "-U", "-w", "-", "--",
    ]  # fmt: skip
    return arguments + ([spec.filter] if spec.filter else [])


def run_capture(spec: CaptureSpec) -> CaptureResult:
    started = time.monotonic()
    process = subprocess.Popen(
        capture_arguments(spec), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_ENV
    )
    stopped_by = "count"
    try:
        pcap, errors = process.communicate(timeout=spec.seconds)
    except subprocess.TimeoutExpired:
        stopped_by = "time"
        process.send_signal(signal.SIGINT)  # tcpdump flushes and prints its counts on SIGINT
        try:
            pcap, errors = process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            pcap, errors = process.communicate()
    message = errors.decode(errors="replace").strip()
    if process.returncode not in (0, -signal.SIGINT) and not pcap:
        # Before "listening on", tcpdump has opened the interface and compiled the filter: a
        # failure there that is not about permission or the device is the filter's.
        refused = f"tcpdump refused the capture after {time.monotonic() - started:.1f} s: {message[-500:]}"
        if "listening on" in message or any(word in message.lower() for word in _NOT_THE_FILTER):
            raise CaptureFailed(refused)
        raise CaptureFilterRejected(refused)
    counted = re.search(r"^(\d+) packets? captured", message, re.MULTILINE)
    return CaptureResult(
        pcap_base64=base64.b64encode(pcap).decode(),
        packets=int(counted.group(1)) if counted else None,
        stopped_by=stopped_by,
        message=message[-2000:],
    )


_NOT_THE_FILTER = ("permission", "not permitted", "no such device", "doesn't exist", "not up")
_ENV = {"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
