#!/usr/bin/env bash
# BR2_ROOTFS_POST_BUILD_SCRIPT: argument 1 is $TARGET_DIR.
set -euo pipefail

BOARD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TARGET_DIR=$1
# shellcheck source=lib/rootfs.sh
source "$BOARD_DIR/lib/rootfs.sh"

link_fulcrum_python
include_sshd_dropins
make_data_mountpoint
place_frr_config_stand_in
install_kernel_link
install_rauc_keyring
