# shellcheck shell=sh
# The root file system, and /root with it, is read-only: root's shell history and saved logins
# (fulcrumctl's) are kept on /data instead (data-layout.conf), and a factory reset erases them.
if [ "$(id -u)" -eq 0 ] && [ -d /data/root ]; then
    HISTFILE=/data/root/bash_history
    XDG_CONFIG_HOME=/data/root/config
    export XDG_CONFIG_HOME
else
    unset HISTFILE
fi
