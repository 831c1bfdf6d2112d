"""Backup and restore of an appliance: `archive` packs what a backup holds, `crypto` encrypts it
with the admin's passphrase, `export` makes one, `restore` reads and restores one."""
