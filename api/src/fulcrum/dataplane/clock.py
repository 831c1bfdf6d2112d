"""The kernel's view of the system clock's synchronisation, read with adjtimex(2) in read-only mode
(modes 0: no privilege needed, nothing changed).

This is what `timedatectl`'s "System clock synchronized" shows: systemd calls the clock
synchronised while the kernel's maximum error stays under 16 s (NTP daemons such as
systemd-timesyncd and chrony keep lowering it; the kernel grows it by 500 ppm while nobody does).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from dataclasses import dataclass

# systemd's ntp_synced(): the kernel's NTP_PHASE_LIMIT-derived ceiling, in microseconds.
SYNCHRONISED_MAX_ERROR_US = 16_000_000
STA_NANO = 0x2000
# adjtimex's return value: the clock state (TIME_OK .. TIME_ERROR).
CLOCK_STATES = {
    0: "ok",
    1: "leap second insert",
    2: "leap second delete",
    3: "leap second",
    4: "leap second done",
    5: "unsynchronised",
}


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Timex(ctypes.Structure):
    """struct timex as <sys/timex.h> lays it out (glibc and musl alike), padding included."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time", _Timeval),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("_reserved", ctypes.c_int * 11),
    ]


@dataclass(frozen=True)
class ClockState:
    synchronised: bool  # max_error_us under 16 s: timedatectl's NTPSynchronized
    state: str  # the kernel's clock state (CLOCK_STATES)
    offset_us: float  # the last offset the NTP daemon handed the kernel's PLL
    max_error_us: int
    estimated_error_us: int


def read_clock() -> ClockState:
    """Raises OSError if the kernel refuses the read."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    timex = _Timex()  # modes 0: read only
    result = libc.adjtimex(ctypes.byref(timex))
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"adjtimex: {os.strerror(errno)}")
    offset = timex.offset / 1000 if timex.status & STA_NANO else float(timex.offset)
    return ClockState(
        synchronised=timex.maxerror < SYNCHRONISED_MAX_ERROR_US,
        state=CLOCK_STATES.get(result, f"state {result}"),
        offset_us=offset,
        max_error_us=timex.maxerror,
        estimated_error_us=timex.esterror,
    )
