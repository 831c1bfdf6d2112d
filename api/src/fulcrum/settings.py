"""The one settings class. Values come from the environment (prefix FULCRUM_) or a .env file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="FULCRUM_", env_file=".env", env_ignore_empty=True, extra="ignore"
    )

    data_dir: Path = Path("/data/fulcrum")
    database_url: str | None = None  # default: SQLite in data_dir
    # The statistics' per-minute day, an hour to a block (telemetry/minutes.py): a cache of
    # charts, kept on disk so that thousands of backends' day does not sit in the API's memory.
    statistics_history_file: Path | None = None  # default: data_dir / "statistics-history.sqlite"

    # How the unprivileged API reaches the data plane: through the privileged helper's socket
    # (the appliance), or in-process (a process that is itself privileged: the VM lab, tests).
    apply_mode: Literal["socket", "local"] = "socket"
    apply_socket: Path = Path("/run/fulcrum/applyd.sock")

    # Engine paths, used when apply_mode is "local" (and by fulcrum-applyd itself).
    state_dir: Path | None = None  # default: data_dir / "state"
    keepalived_conf: Path | None = None  # default: state_dir / "keepalived.conf"
    nftables_conf: Path | None = None  # default: state_dir / "fulcrum.nft"
    keepalived_pidfile: Path | None = None  # default: state_dir / "keepalived.pid"
    keepalived_start: list[str] | None = None  # argv to start keepalived when not running
    notify_fifo: Path | None = None
    lvs_notify_fifo: Path | None = None
    readback_timeout: float = Field(default=15.0, gt=0, le=600)
    # The appliance's own network through systemd-networkd (fulcrum.apply.daemons.networkd): the
    # persistent directory of its files (/data/network on the appliance) and the runtime directory
    # networkd reads (/run/systemd/network). Unset: networkd does not manage this machine (the lab,
    # tests), and the network settings are stored and validated but never applied.
    network_dir: Path | None = None
    networkd_runtime_dir: Path | None = None
    network_restart_services: bool = False  # systemctl try-restart timesyncd and resolved on change
    # This node's BGP through FRR (fulcrum.apply.daemons.frr): the integrated frr.conf its daemons
    # read. Unset: FRR is not managed here, and the BGP settings are stored and validated only.
    frr_config: Path | None = None

    # Sessions and cookies.
    session_hours: float = Field(default=12.0, gt=0, le=24 * 30)
    # argon2id's cost for stored passwords. The defaults are argon2-cffi's (RFC 9106's second
    # recommendation: 64 MiB, 3 passes, 4 lanes); the floors are OWASP's minimum (19 MiB, 2 passes,
    # 1 lane), where the test suites run, which log in thousands of times. A login with a stored hash
    # of other parameters still verifies, and is stored again with these.
    password_hash_memory_kib: int = Field(default=65536, ge=19456, le=1_048_576)
    password_hash_time_cost: int = Field(default=3, ge=2, le=10)
    password_hash_parallelism: int = Field(default=4, ge=1, le=8)
    cookie_secure: bool = True  # the appliance serves HTTPS; the dev lab sets this false

    # Live statistics: how often IPVS is read (0 turns the collector off, e.g. in tests).
    stats_interval: float = Field(default=1.0, ge=0, le=60)

    # Commit-confirmed: how often expired confirmations are looked for.
    confirm_poll_seconds: float = Field(default=1.0, gt=0, le=60)
    reapply_on_start: bool = True
    # At boot fulcrum-api.service starts beside fulcrum-applyd, not after it (their Python start-ups
    # overlap): the start-up re-apply waits this long for the helper to answer (its unit's
    # TimeoutStartSec), then tries anyway and logs why it failed.
    apply_helper_start_wait: float = Field(default=180.0, ge=0, le=3600)

    webui_dir: Path | None = None  # built dashboard assets served at /

    # The certificate (PEM) the API serves over HTTPS, read at start-up: the HA peer pins its
    # SHA-256. None: the API serves plain HTTP (the lab, tests) and the peer link has no TLS.
    tls_certfile: Path | None = None
    # Its private key. An uploaded certificate replaces both files (services/tls_certificate.py);
    # fulcrum.serve serves the new pair from the next connection.
    tls_keyfile: Path | None = None

    # HA pair. The maintenance file is keepalived's track file: a non-zero number in it hands the
    # VIPs to the peer (the renderer and the API both use this path).
    maintenance_file: Path | None = None  # default: state_dir / "maintenance"
    # How often the HA watcher polls the peer and pushes the shared configuration (0: off).
    ha_sync_interval: float = Field(default=2.0, ge=0, le=60)
    # A returning node of a preempting pair takes the VIPs back once its synced connection table
    # has caught up with the master's, or after this many seconds (fulcrum.ha.failback).
    ha_failback_deadline: float = Field(default=120.0, ge=0, le=3600)
    # The node-health check keepalived runs on a paired node (fulcrum-node-health, see
    # fulcrum.ha.node_health): every interval seconds; `fall` failures in a row hand the VIPs to
    # the peer, `rise` successes make the node eligible again.
    node_health_url: str = "https://127.0.0.1/api/v1/health"  # this node's API, as seen from keepalived
    node_health_program: Path | None = None  # default: fulcrum-node-health beside this Python
    node_health_interval: int = Field(default=1, ge=1, le=60)  # keepalived takes whole seconds
    node_health_timeout: float = Field(default=1.0, gt=0, le=30)  # per HTTP probe
    node_health_fall: int = Field(default=2, ge=1, le=10)
    node_health_rise: int = Field(default=2, ge=1, le=10)
    keepalived_checkers_pidfile: Path | None = None  # default: beside keepalived_pidfile
    keepalived_vrrp_pidfile: Path | None = None  # default: beside keepalived_pidfile

    # Where the image keeps the SSH host keys (fulcrum.backup takes those this process may read).
    ssh_host_key_dir: Path = Path("/data/ssh")

    # How often the alert dispatcher looks for new events to send (0: off, e.g. in tests).
    alert_poll_seconds: float = Field(default=2.0, ge=0, le=60)

    # Bounded storage (fulcrum.services.retention, fulcrum.telemetry.storage_watch): every interval
    # seconds (0: off) the data disk is measured (and alarmed on), and events and the audit log are
    # pruned by age and by row count, oldest first, in small batches. Events an enabled alert channel
    # has not sent yet are kept; revisions always are (they are the configuration's history). Sized
    # for a /data of a few hundred MB: an event row takes about 0.3 kB, an audit row about 0.5 kB.
    storage_check_seconds: float = Field(default=60.0, ge=0, le=86400)
    # How often the upgrade record is read for an outcome to announce (0: never; tests call it).
    upgrade_watch_seconds: float = Field(default=15.0, ge=0, le=3600)
    events_retention_days: int = Field(default=90, ge=1, le=3650)
    events_retention_rows: int = Field(default=200_000, ge=1000, le=100_000_000)
    audit_retention_days: int = Field(default=730, ge=1, le=3650)  # longer: who changed what
    audit_retention_rows: int = Field(default=200_000, ge=1000, le=100_000_000)
    retention_batch_rows: int = Field(default=500, ge=10, le=100_000)  # per short write transaction
    # The data disk's alarm (disk.filling events), raised once per stage.
    disk_warning_percent: float = Field(default=85.0, gt=0, le=100)
    disk_critical_percent: float = Field(default=95.0, gt=0, le=100)

    # The console menu's password protection (services/console_access.py): present means on.
    console_password_file: Path | None = None  # default: data_dir / "console-password"
    # The console menu's token for the API (services/console_token.py), new at every start.
    console_token_file: Path | None = None  # default: data_dir / "console-token"

    # A/B firmware (RAUC): the system configuration names the compatible string, the keyring and
    # the slots. A node without it is not an A/B system (the lab, tests), and the firmware API says so.
    rauc_system_conf: Path = Path("/etc/rauc/system.conf")
    # Uploaded bundles are streamed to disk here (default: data_dir / "firmware"), never held in
    # memory, and refused past this size: a root slot is 1.5 GiB (image/genimage/disk.cfg), and
    # the bundle's squashfs is smaller than the file system it carries.
    firmware_dir: Path | None = None
    firmware_max_bundle_bytes: int = Field(default=1536 << 20, gt=0, le=4 << 30)
    # How long `rauc info` (a signature check) and `rauc status` may take.
    rauc_timeout: float = Field(default=60.0, gt=0, le=600)
    # How the privileged helper restarts the machine (POST /firmware/reboot), e.g.
    # ["systemctl", "reboot", "--no-block"] on the appliance. Unset: this node does not reboot
    # itself (the lab, tests, a developer's machine), and the API says so.
    reboot_command: list[str] | None = None
    # How the privileged helper makes sshd take host keys a restore installed in ssh_host_key_dir,
    # e.g. ["systemctl", "try-reload-or-restart", "sshd.service"] on the appliance. Unset: not reloaded.
    ssh_reload_command: list[str] | None = None
    # fulcrum-boot-check (fulcrum/boot_check.py): how long after it starts the appliance has to
    # become healthy (API answers, helper and keepalived run, the running revision applied) before
    # a newly installed slot is judged failed, and how many restarts of a unit count as a crash loop.
    boot_check_deadline: float = Field(default=900.0, gt=0, le=7200)
    boot_check_max_restarts: int = Field(default=5, ge=1, le=100)
    # The journal System → Logs reads (services/journal.py): None is the system journal; a
    # directory of journal files otherwise (tests write one with systemd-journal-remote).
    journal_directory: Path | None = None
    # The IPVS connection table Diagnostics reads (the kernel's; tests give a file of their own).
    ipvs_conn_file: Path = Path("/proc/net/ip_vs_conn")

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        state = self.state_dir or self.data_dir / "state"
        self.state_dir = state
        self.keepalived_conf = self.keepalived_conf or state / "keepalived.conf"
        self.nftables_conf = self.nftables_conf or state / "fulcrum.nft"
        self.keepalived_pidfile = self.keepalived_pidfile or state / "keepalived.pid"
        self.maintenance_file = self.maintenance_file or state / "maintenance"
        self.console_password_file = self.console_password_file or self.data_dir / "console-password"
        self.console_token_file = self.console_token_file or self.data_dir / "console-token"
        self.firmware_dir = self.firmware_dir or self.data_dir / "firmware"
        self.statistics_history_file = (
            self.statistics_history_file or self.data_dir / "statistics-history.sqlite"
        )
        if self.database_url is None:
            self.database_url = f"sqlite:///{self.data_dir / 'fulcrum.db'}"
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()
