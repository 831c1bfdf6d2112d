#!/usr/bin/env bash
# BR2_ROOTFS_POST_IMAGE_SCRIPT: assembles $BINARIES_DIR/fulcrum.img with the same genimage
# layout and BIOS boot patching as `make vm-image`, and $BINARIES_DIR/fulcrum.raucb, its root file
# system as a signed bundle, as `make bundle` does.
set -euo pipefail

BOARD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FULCRUM_IMAGE_DIR=$(cd "$BR2_EXTERNAL_FULCRUM_PATH/../image" && pwd)
export PATH=$HOST_DIR/bin:$HOST_DIR/sbin:$PATH # Buildroot's genimage, mkdosfs, mcopy, mke2fs, rauc
# shellcheck source=../../../../image/lib/bootloader.sh
source "$FULCRUM_IMAGE_DIR/lib/bootloader.sh"
# shellcheck source=../../../../image/lib/disk.sh
source "$FULCRUM_IMAGE_DIR/lib/disk.sh"
# shellcheck source=lib/images.sh
source "$BOARD_DIR/lib/images.sh"

build_disk
build_bundle
