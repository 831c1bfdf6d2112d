from __future__ import annotations

import os
import threading
from pathlib import Path

from fulcrum.telemetry.notify import CheckerNotice, FifoReader, VrrpNotice, parse, virtual_server_parts


def test_parse_every_line_keepalived_writes() -> None:
    assert parse('INSTANCE "VG_front" MASTER 100') == VrrpNotice("INSTANCE", "VG_front", "MASTER", 100)
    assert parse('GROUP "fulcrum" BACKUP 0') == VrrpNotice("GROUP", "fulcrum", "BACKUP", 0)
    assert parse("RS [198.51.100.1]:tcp:80 [192.0.2.10]:tcp:80 DOWN") == CheckerNotice("198.51.100.1:80", "[192.0.2.10]:tcp:80", False)
    assert parse("RS [2001:db8::1]:tcp:443 [2001:db8::10]:tcp:443 UP") == CheckerNotice("[2001:db8::1]:443", "[2001:db8::10]:tcp:443", True)
    assert parse("VS [192.0.2.10]:tcp:80 DOWN") == CheckerNotice(None, "[192.0.2.10]:tcp:80", False)
    assert parse("something else") is None
    assert virtual_server_parts("[192.0.2.10]:tcp:80") == ("192.0.2.10", 80, None)
    assert virtual_server_parts("FWM 3") == (None, None, 3)


def test_fifo_reader_survives_the_writer_closing_and_reopening(tmp_path: Path) -> None:
    fifo = tmp_path / "notify.fifo"
    lines: list[str] = []
    got = threading.Event()

    def on_line(line: str) -> None:
        lines.append(line)
        if len(lines) == 3:
            got.set()

    reader = FifoReader(fifo, on_line, poll_seconds=0.05)
    reader.start()
    try:
        for _ in range(100):
            if fifo.exists():
                break
            threading.Event().wait(0.02)
        for batch in (["VS [192.0.2.10]:tcp:80 UP", "VS [192.0.2.10]:tcp:80 DOWN"], ["VS [192.0.2.10]:tcp:80 UP"]):
            fd = os.open(fifo, os.O_WRONLY)  # blocks until the reader has it open
            os.write(fd, ("\n".join(batch) + "\n").encode())
            os.close(fd)
        assert got.wait(5), lines
        assert lines == ["VS [192.0.2.10]:tcp:80 UP", "VS [192.0.2.10]:tcp:80 DOWN", "VS [192.0.2.10]:tcp:80 UP"]
    finally:
        reader.stop()
        reader.join(5)
    assert not reader.is_alive()


def _wait_for(fifo: Path) -> None:
    for _ in range(250):
        if fifo.exists():
            return
        threading.Event().wait(0.02)
    raise AssertionError(f"{fifo} was not created")


def test_fifo_reader_keeps_reading_after_a_line_it_could_not_handle(tmp_path: Path) -> None:
    """A line whose handling fails (the database busy past its timeout, say) is retried, then
    skipped; the reader goes on with the next lines instead of dying with the error."""
    fifo = tmp_path / "notify.fifo"
    lines: list[str] = []
    tries: list[str] = []
    got = threading.Event()

    def on_line(line: str) -> None:
        tries.append(line)
        if "busy" in line:
            raise RuntimeError("database is locked")
        lines.append(line)
        got.set()

    reader = FifoReader(fifo, on_line, poll_seconds=0.02, attempts=2)
    reader.start()
    try:
        _wait_for(fifo)
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # as keepalived opens it
        os.write(fd, b'INSTANCE "VG_busy" BACKUP 100\nINSTANCE "VG_front" BACKUP 100\n')
        assert got.wait(5), tries
        os.close(fd)
        assert tries == ['INSTANCE "VG_busy" BACKUP 100'] * 2 + ['INSTANCE "VG_front" BACKUP 100']
        assert reader.is_alive()
    finally:
        reader.stop()
        reader.join(5)


def test_fifo_reader_follows_a_fifo_created_anew(tmp_path: Path) -> None:
    """keepalived unlinks a FIFO it created and makes a new one on every reload (lib/notify.c);
    the reader must move to the new one even if nothing was written to the old."""
    fifo = tmp_path / "notify.fifo"
    os.mkfifo(fifo)
    lines: list[str] = []
    got = threading.Event()
    reader = FifoReader(fifo, lambda line: (lines.append(line), got.set()), poll_seconds=0.02)
    reader.start()
    try:
        old = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # keepalived's first run: opens, writes nothing
        threading.Event().wait(0.2)
        os.unlink(fifo)  # its reload: unlink, close, create and open again
        os.close(old)
        os.mkfifo(fifo)
        new = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        os.write(new, b'INSTANCE "VG_front" BACKUP 100\n')
        assert got.wait(5), "the reader stayed on the unlinked FIFO"
        os.close(new)
        assert lines == ['INSTANCE "VG_front" BACKUP 100']
    finally:
        reader.stop()
        reader.join(5)


def test_no_line_is_lost_between_one_writer_closing_and_the_next_opening(tmp_path: Path) -> None:
    """Many short-lived writers in a row, as keepalived's reloads and notify scripts are: the FIFO
    always has its reader (a writer never gets ENXIO or EPIPE) and every line arrives, in order."""
    fifo = tmp_path / "notify.fifo"
    lines: list[str] = []
    done = threading.Event()
    count = 300

    def on_line(line: str) -> None:
        lines.append(line)
        if len(lines) == count:
            done.set()

    reader = FifoReader(fifo, on_line, poll_seconds=0.02)
    reader.start()
    try:
        _wait_for(fifo)
        threading.Event().wait(0.1)  # the reader has it open
        for number in range(count):
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO if nobody reads it now
            os.write(fd, f'INSTANCE "VG_{number}" BACKUP 100\n'.encode())
            os.close(fd)
        assert done.wait(10), f"{len(lines)} of {count} lines arrived"
        assert lines == [f'INSTANCE "VG_{number}" BACKUP 100' for number in range(count)]
    finally:
        reader.stop()
        reader.join(5)
