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
