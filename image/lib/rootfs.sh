# shellcheck shell=bash
# The VM image's root file system: Debian bookworm by mmdebstrap, then made into the appliance.

DEBIAN_SUITE=bookworm
DEBIAN_MIRRORS=(
    "deb http://deb.debian.org/debian bookworm main"
    "deb http://deb.debian.org/debian bookworm-updates main"
    "deb http://deb.debian.org/debian-security bookworm-security main"
)
# Documentation and translations are not read on an appliance.
DPKG_EXCLUDES=(
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
)

debian_packages() {
    grep -v -e '^#' -e '^$' "$FULCRUM_IMAGE_DIR/packages.list" | paste -sd, -
}

# bootstrap_rootfs ROOT DEB_CACHE: mmdebstrap, keeping downloaded .debs in DEB_CACHE for next time;
# then customize-rootfs turns the tree into the appliance (inside mmdebstrap, which has mounted
# /proc, /sys and /dev in it).
bootstrap_rootfs() {
    local root=$1 debs=$2
    rm -rf "$root"
    mkdir -p "$debs"
    # shellcheck disable=SC2016 # the single-quoted $1 is for mmdebstrap's hook shell
    mmdebstrap --mode=root --variant=minbase --format=directory --include="$(debian_packages)" \
        "${DPKG_EXCLUDES[@]}" \
        --skip=download/empty --skip=essential/unlink \
        --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
        --setup-hook="sync-in $debs /var/cache/apt/archives/" \
        --customize-hook="sync-out /var/cache/apt/archives $debs" \
        --customize-hook="$FULCRUM_IMAGE_DIR/lib/customize-rootfs \"\$1\"" \
        "$DEBIAN_SUITE" "$root" "${DEBIAN_MIRRORS[@]}"
    link_dbus_machine_id "$root"
}

# What tmpfiles.d/dbus.conf would link at boot, were the root writable. Made after mmdebstrap,
# whose clean-up removes /var/lib/dbus/machine-id.
link_dbus_machine_id() {
    local root=$1
    ln -sfn /etc/machine-id "$root/var/lib/dbus/machine-id"
}

install_overlay() {
    local root=$1
    cp -a "$FULCRUM_REPO/overlay/." "$root/"
}

install_webui() {
    local root=$1
    if [[ -d $FULCRUM_REPO/webui/dist ]]; then
        mkdir -p "$root/usr/share/fulcrum"
        cp -a "$FULCRUM_REPO/webui/dist" "$root/usr/share/fulcrum/webui"
    else
        echo "webui/dist does not exist: the image serves the API only"
    fi
}

# The keyring firmware bundles are checked against (overlay/etc/rauc/system.conf): the CA named by
# FULCRUM_RAUC_KEYRING, by default the development CA, which a release build must not ship
# (image/rauc/README.md).
install_rauc_keyring() {
    local root=$1 keyring=${FULCRUM_RAUC_KEYRING:-$FULCRUM_IMAGE_DIR/rauc/dev-keys/ca.cert.pem}
    if [[ $keyring == "$FULCRUM_IMAGE_DIR/rauc/dev-keys/ca.cert.pem" ]]; then
        echo "RAUC keyring: the DEVELOPMENT CA (test only: this image accepts bundles anyone can sign)"
    fi
    install -D -m 0644 "$keyring" "$root/etc/rauc/keyring.pem"
}

create_system_users() {
    local root=$1
    chroot "$root" systemd-sysusers
}

# Enables what usr/lib/systemd/system-preset/50-fulcrum.preset lists (Buildroot applies the same
# file with preset-all; here preset-all would apply Debian's "disable *" to every other unit).
enable_units() {
    local root=$1 verb unit instance
    while read -r verb unit instances; do
        [[ $verb == enable ]] || continue
        if [[ -n $instances ]]; then
            for instance in $instances; do
                chroot "$root" systemctl enable --quiet "${unit/@./@$instance.}"
            done
        else
            chroot "$root" systemctl enable --quiet "$unit"
        fi
    done <"$root/usr/lib/systemd/system-preset/50-fulcrum.preset"
}

# The appliance is upgraded as a whole image, never by apt on the box (and dpkg's daily database
# backup would write to the read-only root).
mask_debian_maintenance() {
    local root=$1
    chroot "$root" systemctl mask --quiet apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer
}

# No password anywhere: root cannot log in with one; sshd takes keys added from the console.
lock_root() {
    local root=$1
    chroot "$root" usermod --password '!*' root
}

# Each appliance makes its own host keys and machine id at first boot.
remove_machine_identity() {
    local root=$1
    rm -f "$root"/etc/ssh/ssh_host_*
    : >"$root/etc/machine-id"
    printf '127.0.0.1\tlocalhost\n127.0.1.1\tfulcrum\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
}

# Units Debian enables that the appliance has no use for: keepalived runs as fulcrum-keepalived
# with the configuration fulcrum-applyd writes; there is no LVM for e2scrub to check; and on the
# read-only root, saving radio-switch and backlight state would fail (laptop hardware anyway).
# (frr.service stays: 50-fulcrum.preset enables it, with overlay/etc/frr's daemons and its link.)
disable_unused_units() {
    local root=$1
    chroot "$root" systemctl disable --quiet keepalived.service e2scrub_reap.service e2scrub_all.timer
    chroot "$root" systemctl mask --quiet systemd-rfkill.service systemd-rfkill.socket systemd-backlight@.service
}

# Units that have a StateDirectory= below /var/lib fail to start unless it exists already: the
# root is read-only. (systemd-logind only reads it; lingering users are not a thing here.)
make_state_directories() {
    local root=$1
    mkdir -p "$root/var/lib/systemd/linger"
    # systemd-timesyncd runs as its own user; its clock file (the time of the last sync) is not
    # kept: it could not be written on the read-only root, and the RTC gives a start time.
    mkdir -p "$root/var/lib/systemd/timesync"
    chroot "$root" chown systemd-timesync:systemd-timesync /var/lib/systemd/timesync
}

# The root is read-only (grub.cfg): mount points exist in the image. /var/log is where
# var-log.mount puts /data/log, so what packages left in it would only be hidden.
make_mount_points() {
    local root=$1
    mkdir -p "$root/data"
    rm -rf "${root:?}/var/log"
    mkdir -m 0755 "$root/var/log"
}

# grub.cfg boots /boot/vmlinuz and /boot/initrd.img in every image.
link_kernel() {
    local root=$1 kernel
    kernel=$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sort -V | tail -n 1)
    ln -sfn "$kernel" "$root/boot/vmlinuz"
    ln -sfn "initrd.img-${kernel#vmlinuz-}" "$root/boot/initrd.img"
}

# Kernel modules for hardware and file systems a network appliance has no use for: sound, video
# capture, Wi-Fi and Bluetooth, GPUs' acceleration (the console keeps the firmware's frame buffer,
# built in), InfiniBand, sensors of the industrial I/O kind, staging drivers, and file systems it
# never mounts. 187 of Debian's 396 MiB of modules (du -sm: 209 remain); the root file system,
# every bundle and every upgrade's write into a slot shrink by as much. Network, storage, USB, HID,
# watchdog and the netfilter, IPVS, bonding and VLAN modules all stay.
UNUSED_MODULE_DIRS=(
    sound drivers/media drivers/net/wireless net/wireless net/mac80211 drivers/bluetooth net/bluetooth
    drivers/gpu/drm/amd drivers/gpu/drm/i915 drivers/gpu/drm/nouveau drivers/gpu/drm/radeon
    drivers/infiniband drivers/iio drivers/staging drivers/comedi drivers/isdn
    fs/btrfs fs/xfs fs/ocfs2 fs/gfs2 fs/f2fs fs/ceph fs/nilfs2 fs/jfs fs/reiserfs fs/ubifs
)

trim_kernel_modules() {
    local root=$1 modules release dir
    for modules in "$root"/usr/lib/modules/*/; do
        release=$(basename "$modules")
        for dir in "${UNUSED_MODULE_DIRS[@]}"; do
            rm -rf "${modules}kernel/$dir"
        done
        # The module index must not name the files just removed (udev would try to load them).
        chroot "$root" depmod -a "$release"
    done
}

trim_rootfs() {
    local root=$1
    rm -f "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin
    rm -rf "$root"/var/lib/apt/lists/* "$root"/root/.cache
    trim_kernel_modules "$root"
}
