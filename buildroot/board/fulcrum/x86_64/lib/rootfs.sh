# shellcheck shell=bash
# Post-build steps on $TARGET_DIR (Buildroot's staging of the root file system). The overlay
# (BR2_ROOTFS_OVERLAY) is already copied in; these make the tree match the VM image.

# Units and the console call the interpreter that has fulcrum as /usr/lib/fulcrum/python3 in
# every image; here that is the system Python (the VM image points it at a venv).
link_fulcrum_python() {
    ln -sfn /usr/bin/python3 "$TARGET_DIR/usr/lib/fulcrum/python3"
}

# Upstream OpenSSH reads no drop-ins unless told to; Debian's sshd_config does this itself.
include_sshd_dropins() {
    local config=$TARGET_DIR/etc/ssh/sshd_config
    grep -q '^Include /etc/ssh/sshd_config.d/\*.conf' "$config" ||
        sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' "$config"
}

# /data is the mount point of the data partition (data.mount); the image's copy stays empty
# (but for place_frr_config_stand_in's file).
make_data_mountpoint() {
    rm -rf "$TARGET_DIR/data"
    mkdir -p "$TARGET_DIR/data"
}

# The overlay's /etc/frr/frr.conf is a relative link to ../../data/state/frr.conf, which
# fulcrum-applyd writes (the root is read-only). The frr package's permission table chowns and
# chmods /etc/frr/frr.conf as a regular file when the root file system is made, through the link:
# relative, it resolves in $TARGET_DIR, where this empty stand-in answers (the data partition,
# mounted on /data at boot, hides it).
place_frr_config_stand_in() {
    install -D -m 0640 /dev/null "$TARGET_DIR/data/state/frr.conf"
}

# grub.cfg boots /boot/vmlinuz in every image.
install_kernel_link() {
    mkdir -p "$TARGET_DIR/boot"
    ln -sfn bzImage "$TARGET_DIR/boot/vmlinuz"
}

# The keyring firmware bundles are checked against, as the VM image's install_rauc_keyring does:
# FULCRUM_RAUC_KEYRING, by default the development CA (test only; image/rauc/README.md).
install_rauc_keyring() {
    local default=$BR2_EXTERNAL_FULCRUM_PATH/../image/rauc/dev-keys/ca.cert.pem
    local keyring=${FULCRUM_RAUC_KEYRING:-$default}
    [[ $keyring != "$default" ]] || echo "RAUC keyring: the DEVELOPMENT CA (test only; not for a release)"
    install -D -m 0644 "$keyring" "$TARGET_DIR/etc/rauc/keyring.pem"
}
