# shellcheck shell=bash
# Assembling the disk image with genimage (layout: image/genimage/disk.cfg).
# Sourced by image/build-vm-image and by the Buildroot post-image script.

# assemble_disk ROOTPATH INPUT OUTPUT TMP ROOTFS_CFG_DIR: runs genimage. INPUT holds boot.img,
# core.img, BOOTX64.EFI, grub.cfg (and root-a.ext4 when ROOTFS_CFG_DIR's rootfs.cfg says so);
# OUTPUT receives disk.img.
assemble_disk() {
    local rootpath=$1 input=$2 output=$3 tmp=$4 rootfs_cfg_dir=$5
    rm -rf "$tmp" "$output"
    mkdir -p "$tmp" "$output"
    # include("rootfs.cfg") is looked up in the working directory (genimage 16 has no --includepath).
    (cd "$rootfs_cfg_dir" && genimage --config "$FULCRUM_IMAGE_DIR/genimage/disk.cfg" \
        --rootpath "$rootpath" --inputpath "$input" --outputpath "$output" --tmppath "$tmp")
    point_bios_boot_at_core "$output/disk.img"
}
