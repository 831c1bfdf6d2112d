# shellcheck shell=bash
# GRUB for BIOS and UEFI from one grub.cfg on the ESP (layout: image/genimage/disk.cfg).
# Sourced by image/build-vm-image and by the Buildroot post-image script.

# Built into the images so GRUB never needs a module directory on disk.
GRUB_COMMON_MODULES="part_gpt fat ext2 normal linux search search_label configfile echo test serial terminal gzio loadenv regexp"
GRUB_BIOS_MODULES="biosdisk $GRUB_COMMON_MODULES"
GRUB_EFI_MODULES="$GRUB_COMMON_MODULES efi_gop all_video"
# BIOS GRUB reads its config from the ESP of the disk it was loaded from; UEFI GRUB from the
# directory BOOTX64.EFI was loaded from.
GRUB_BIOS_PREFIX="(,gpt2)/boot/grub"
GRUB_EFI_PREFIX="/EFI/BOOT"

# make_grub_images MKIMAGE MODULE_DIR OUT: boot.img and core.img (BIOS), BOOTX64.EFI (UEFI).
# MKIMAGE may be a command with arguments (e.g. "chroot ROOT grub-mkimage"); then MODULE_DIR
# and OUT are paths as that command sees them.
make_grub_images() {
    local mkimage=$1 modules=$2 out=$3
    # shellcheck disable=SC2086 # word splitting of the command and module lists is intended
    $mkimage -d "$modules/i386-pc" -O i386-pc -p "$GRUB_BIOS_PREFIX" -o "$out/core.img" $GRUB_BIOS_MODULES
    # shellcheck disable=SC2086
    $mkimage -d "$modules/x86_64-efi" -O x86_64-efi -p "$GRUB_EFI_PREFIX" -o "$out/BOOTX64.EFI" $GRUB_EFI_MODULES
}

# write_le64 FILE OFFSET VALUE: a little-endian 64-bit integer at a byte offset.
write_le64() {
    local file=$1 offset=$2 value=$3 bytes="" i
    for i in 0 1 2 3 4 5 6 7; do
        bytes+=$(printf '\\x%02x' $(((value >> (8 * i)) & 255)))
    done
    printf '%b' "$bytes" | dd of="$file" bs=1 seek="$offset" conv=notrunc status=none
}

# point_bios_boot_at_core DISK: what grub-bios-setup does, without a loop device. boot.img (in
# the MBR) loads the first sector of core.img from the LBA at 0x5c; that sector loads the rest
# of core.img from the block list at its offset 0x1f4. Both default to "right after the MBR",
# so they are pointed at the BIOS boot partition named "bios".
point_bios_boot_at_core() {
    local disk=$1 start
    start=$(partx --show --noheadings --output START,NAME "$disk" | awk '$2 == "bios" { print $1 }')
    [[ -n $start ]] || { echo "no partition named bios in $disk" >&2; return 1; }
    write_le64 "$disk" $((0x5c)) "$start"
    write_le64 "$disk" $((start * 512 + 0x1f4)) $((start + 1))
}
