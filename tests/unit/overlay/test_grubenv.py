"""/data/boot/grubenv holds two things: the machine ID kept across boots (data-setup) and the A/B
slots' order and boot counts (RAUC, image/grub/grub.cfg). A factory reset forgets the first and
keeps the second: deleting the whole file once sent GRUB back to slot A after a roll-back had
marked it bad. data-setup's keep_machine_id runs for real with bash and grub-editenv; the console
menu's forget_machine_id is called on the program loaded as a module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "console"))  # its loader of the menu program

from test_console_menu import load_menu  # noqa: E402

DATA_SETUP = Path(__file__).resolve().parents[3] / "overlay/usr/lib/fulcrum/data-setup"
MACHINE_ID = "0123456789abcdef0123456789abcdef"
SLOTS = {"ORDER": "B A", "A_OK": "0", "B_OK": "1", "A_TRY": "3", "B_TRY": "0"}  # after a roll-back to B


def environment(grubenv: Path) -> dict[str, str]:
    listing = subprocess.run(["grub-editenv", str(grubenv), "list"], capture_output=True, text=True, check=True)
    return dict(line.split("=", 1) for line in listing.stdout.splitlines())


def write_environment(grubenv: Path, variables: dict[str, str]) -> None:
    grubenv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["grub-editenv", str(grubenv), "create"], check=True)
    subprocess.run(["grub-editenv", str(grubenv), "set", *(f"{k}={v}" for k, v in variables.items())], check=True)


def keep_machine_id(data: Path) -> None:
    (data / "machine-id").write_text(MACHINE_ID + "\n")
    script = f"""
        set -euo pipefail
        source <(sed '$d' {DATA_SETUP})  # every function, without running main
        DATA={data} GRUBENV={data}/boot/grubenv MACHINE_ID_FILE={data}/machine-id
        keep_machine_id
    """
    subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True, timeout=60)


def test_the_first_boot_keeps_the_machine_id_in_a_new_environment_block(tmp_path: Path) -> None:
    (tmp_path / "boot").mkdir()
    keep_machine_id(tmp_path)
    grubenv = tmp_path / "boot/grubenv"
    assert environment(grubenv) == {"machine_id": MACHINE_ID}
    assert grubenv.stat().st_size == 1024  # GRUB's block size: GRUB reads nothing else


def test_after_a_factory_reset_the_new_machine_id_joins_the_slots_state(tmp_path: Path) -> None:
    grubenv = tmp_path / "boot/grubenv"
    write_environment(grubenv, {**SLOTS, "machine_id": "f" * 32})
    menu = load_menu()
    menu.GRUBENV = grubenv
    menu.forget_machine_id()  # the console's factory reset
    assert environment(grubenv) == SLOTS
    keep_machine_id(tmp_path)  # data-setup at the next boot, with the new ID systemd made
    assert environment(grubenv) == {**SLOTS, "machine_id": MACHINE_ID}


def test_a_kept_machine_id_is_left_alone(tmp_path: Path) -> None:
    grubenv = tmp_path / "boot/grubenv"
    write_environment(grubenv, {**SLOTS, "machine_id": "f" * 32})
    before = grubenv.read_bytes()
    keep_machine_id(tmp_path)
    assert grubenv.read_bytes() == before
