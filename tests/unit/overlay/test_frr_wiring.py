"""FRR on the image boots from the file fulcrum-applyd writes: /etc/frr/frr.conf links (relatively,
so that Buildroot's permission table resolves it inside the target tree) to FULCRUM_FRR_CONFIG,
and /data's layout creates that file at every boot (a factory reset empties /data), so FRR never
tries to create per-daemon files on the read-only root. The image test boots all of it."""

from __future__ import annotations

import os
import shlex
from pathlib import Path, PurePosixPath

OVERLAY = Path(__file__).resolve().parents[3] / "overlay"


def env_value(name: str) -> str:
    for line in (OVERLAY / "usr/lib/fulcrum/fulcrum.env").read_text().splitlines():
        if line.startswith(f"{name}="):
            return shlex.split(line.split("=", 1)[1])[0]
    raise AssertionError(f"fulcrum.env does not set {name}")


def test_frr_boots_from_the_file_the_helper_writes_and_data_lays_it_out() -> None:
    link = OVERLAY / "etc/frr/frr.conf"
    assert link.is_symlink()
    target = os.readlink(link)
    assert not target.startswith("/"), f"{target}: an absolute link resolves on the build host in Buildroot"
    resolved = PurePosixPath(os.path.normpath(PurePosixPath("/etc/frr") / target))
    assert str(resolved) == env_value("FULCRUM_FRR_CONFIG")
    layout = [line.split() for line in (OVERLAY / "usr/lib/fulcrum/data-layout.conf").read_text().splitlines()
              if line and not line.startswith("#")]
    assert ["f", str(resolved)] in [entry[:2] for entry in layout], f"data-layout.conf does not create {resolved}"


def test_frr_runs_bgpd_and_bfdd_and_starts_with_the_appliance() -> None:
    daemons = dict(line.split("=", 1) for line in (OVERLAY / "etc/frr/daemons").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert daemons["bgpd"] == daemons["bfdd"] == "yes"
    preset = (OVERLAY / "usr/lib/systemd/system-preset/50-fulcrum.preset").read_text().splitlines()
    assert "enable frr.service" in preset
