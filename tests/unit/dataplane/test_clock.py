"""The adjtimex(2) read against busybox's own adjtimex applet: the same kernel fields, read by a
program that does not share this module's idea of struct timex (a wrong layout reads the wrong words)."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess

from fulcrum.dataplane.clock import CLOCK_STATES, SYNCHRONISED_MAX_ERROR_US, _Timex, read_clock


def busybox_adjtimex() -> dict[str, int]:
    busybox = shutil.which("busybox")
    assert busybox, "busybox is a host package (scripts/setup-host installs busybox-static)"
    text = subprocess.run([busybox, "adjtimex"], capture_output=True, text=True, check=True).stdout
    fields = {name: int(value) for name, value in re.findall(r"^\s*(?:-\w\s+)?([a-z.]+):\s+(-?\d+)", text, re.M)}
    returned = re.search(r"return value:\s+(\d+)", text)
    assert returned, text
    return fields | {"return": int(returned[1])}


def test_the_clock_reads_what_busybox_reads() -> None:
    before = busybox_adjtimex()
    clock = read_clock()
    after = busybox_adjtimex()
    # A disciplined clock's maximum error grows by 500 ppm between two reads (an unsynchronised
    # one's sits at its 16 s ceiling), so ours lies between busybox's two.
    assert before["maxerror"] <= clock.max_error_us <= after["maxerror"]
    assert clock.estimated_error_us in {before["esterror"], after["esterror"]}
    assert clock.offset_us in {before["offset"], after["offset"]}
    assert clock.synchronised is (clock.max_error_us < SYNCHRONISED_MAX_ERROR_US)
    assert clock.state == CLOCK_STATES[after["return"]]


def test_struct_timex_is_laid_out_as_the_kernel_fills_it() -> None:
    """Fields that differ from each other (tick, tolerance, precision): a word off, and they swap."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    timex = _Timex()
    assert libc.adjtimex(ctypes.byref(timex)) >= 0
    busybox = busybox_adjtimex()
    assert ctypes.sizeof(_Timex) == 208  # x86_64 (LP64), the appliance's architecture
    ours = {
        "freq.adjust": timex.freq,
        "status": timex.status,
        "timeconstant": timex.constant,
        "precision": timex.precision,
        "tolerance": timex.tolerance,
        "tick": timex.tick,
    }
    assert ours == {name: busybox[name] for name in ours}
