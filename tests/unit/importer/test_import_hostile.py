"""Hostile input: a clear error, bounded time and memory, nothing imported."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from fulcrum.importer import ImportFormat, ImportRejected, Outcome, import_text


def rejected(fmt: ImportFormat, text: str, includes: dict[str, str] | None = None) -> str:
    with pytest.raises(ImportRejected) as caught:
        import_text(fmt, text, includes)
    [error] = caught.value.errors
    return f"{error['loc'][1]}: {error['msg']}"


@pytest.mark.parametrize("fmt", list(ImportFormat))
def test_a_50_mb_file_is_refused_quickly(fmt: ImportFormat) -> None:
    text = "virtual_server 192.0.2.1 80 {\n" * (50_000_000 // 29)
    tracemalloc.start()
    started = time.monotonic()
    message = rejected(fmt, text)
    elapsed = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert message.startswith("text: ") and "at most 1000000" in message
    assert elapsed < 1 and peak < 10_000_000


def test_binary_garbage_is_refused_with_its_line() -> None:
    garbage = "global_defs {\n}\n" + bytes(range(256)).decode("latin-1")
    assert rejected(ImportFormat.AUTO, garbage) == "text: the configuration line 3: control character 0x00; this is not a text configuration"
    assert "control character" in rejected(ImportFormat.IPVSADM, "-A -t 192.0.2.1:80\x00\n")


def test_an_include_loop_is_refused() -> None:
    includes = {"a.conf": "include b.conf\n", "b.conf": "include a.conf\n"}
    assert rejected(ImportFormat.KEEPALIVED, "include a.conf\n", includes) == (
        "includes: include loop: keepalived.conf → a.conf → b.conf → a.conf"
    )


def test_a_deep_include_chain_is_refused() -> None:
    includes = {f"{n}.conf": f"include {n + 1}.conf\n" for n in range(20)}
    assert "nest deeper than 8" in rejected(ImportFormat.KEEPALIVED, "include 0.conf\n", includes)


def test_an_include_fan_out_is_bounded() -> None:
    # Seven levels of eight files, each including all eight of the next: 8^7 reads unbounded.
    includes = {f"L{level}_{n}.conf": f"include L{level + 1}_*.conf\n" for level in range(7) for n in range(8)}
    started = time.monotonic()
    message = rejected(ImportFormat.KEEPALIVED, "include L0_*.conf\n", includes)
    assert message == "includes: the includes read more than 1000 files"
    assert time.monotonic() - started < 5


def test_unbalanced_and_deep_blocks_are_refused() -> None:
    assert "never closed" in rejected(ImportFormat.KEEPALIVED, "virtual_server 192.0.2.1 80 {\n")
    assert "never opened" in rejected(ImportFormat.KEEPALIVED, "}\n")
    assert "nest deeper" in rejected(ImportFormat.KEEPALIVED, "a {\n" * 40 + "}\n" * 40)


def test_smuggled_script_paths_do_not_import() -> None:
    text = """\
global_defs {
    script_user root
    notification_email { "$(reboot)" }
}
vrrp_script chk { script "/tmp/x.sh" }
virtual_server 192.0.2.1 80 {
    quorum_up "/bin/sh -c id"
    real_server 198.51.100.1 80 {
        notify_up /tmp/evil
        HTTP_GET {
            url { path "/x\\" }\\nnotify_up /tmp/evil" }
        }
    }
}
virtual_server 192.0.2.2 80 {
    real_server 198.51.100.1 80 {
        TCP_CHECK { connect_ip 10.0.0.1;reboot }
    }
}
"""
    result = import_text(ImportFormat.KEEPALIVED, text)
    # The first service's check path is refused by the model, so the service does not import.
    assert [s.name for s in result.services] == ["192.0.2.2-80"]
    dump = repr([s.model_dump(mode="json") for s in result.services])
    for fragment in ("/tmp", "reboot", "/bin/sh", "$("):
        assert fragment not in dump
    for number in (2, 5, 7, 9):
        [(outcome, detail), *_] = [(l.outcome, l.detail) for l in result.report if l.line == number]
        assert outcome == Outcome.NOT_IMPORTED and "root" in detail, (number, detail)


def test_numbers_python_would_choke_on_are_reported() -> None:
    # '²' is a digit to str.isdigit() but not to int(); int() refuses strings of over 4300 digits.
    huge = "9" * 5000
    text = f"virtual_server 192.0.2.1 ² {{\n}}\nvirtual_server 192.0.2.2 80 {{\n  quorum {huge}\n  real_server 198.51.100.1 {huge} {{\n    weight ²\n    TCP_CHECK {{\n      retry {huge}\n    }}\n  }}\n}}\n"
    result = import_text(ImportFormat.KEEPALIVED, text)
    assert result.report[0].outcome == Outcome.NOT_IMPORTED and "needs an address and a port" in result.report[0].detail
    assert [s.name for s in result.services] == ["192.0.2.2-80"]
    skipped = {line.line for line in result.report if line.outcome == Outcome.NOT_IMPORTED}
    assert {1, 4, 6, 8} <= skipped
    rules = f"-A -t 192.0.2.1:² -s rr\n-A -t 192.0.2.2:80 -p {huge}\n-a -t 192.0.2.2:80 -r 198.51.100.1 -w {huge}\n"
    result = import_text(ImportFormat.IPVSADM, rules)
    [service] = result.services
    assert (service.name, service.backends) == ("192.0.2.2-80", [])
    assert [line.line for line in result.report if line.outcome == Outcome.NOT_IMPORTED] == [1, 3]
