# shellcheck shell=bash
# Post-image steps on $BINARIES_DIR: the inputs the shared genimage layout expects
# (image/genimage/disk.cfg), then the disk itself with the VM image's own functions.

# boot.img (BIOS first stage, from the target's GRUB), core.img (Buildroot's grub.img),
# BOOTX64.EFI and the shared grub.cfg, under the names disk.cfg uses.
stage_boot_files() {
    local input=$1
    mkdir -p "$input"
    cp "$TARGET_DIR/lib/grub/i386-pc/boot.img" "$input/boot.img"
    cp "$BINARIES_DIR/grub.img" "$input/core.img"
    cp "$BINARIES_DIR/efi-part/EFI/BOOT/bootx64.efi" "$input/BOOTX64.EFI"
    cp "$FULCRUM_IMAGE_DIR/grub/grub.cfg" "$input/grub.cfg"
    cp "$BINARIES_DIR/rootfs.ext4" "$input/root-a.ext4"
}

# Buildroot's /boot/bzImage is in rootfs.ext4 already; the disk goes to $BINARIES_DIR/fulcrum.img.
build_disk() {
    local work=$BUILD_DIR/fulcrum-disk
    stage_boot_files "$work/input"
    mkdir -p "$work/empty-root"
    assemble_disk "$work/empty-root" "$work/input" "$work/output" "$work/tmp" "$BOARD_DIR/genimage"
    mv "$work/output/disk.img" "$BINARIES_DIR/fulcrum.img"
}

# The A/B upgrade bundle of this build, from the same rootfs.ext4 the disk's slot A holds, made by
# the VM image's own image/make-bundle with Buildroot's host rauc and mksquashfs (signer and
# version: image/rauc/README.md).
build_bundle() {
    "$FULCRUM_IMAGE_DIR/make-bundle" --rootfs "$BINARIES_DIR/rootfs.ext4" --output "$BINARIES_DIR/fulcrum.raucb"
}
