# shellcheck shell=bash
# The CPU qemu emulates under software emulation (TCG): sourced by image/run-vm,
# tests/kernel/run-in-vm and scripts/demo; FULCRUM_VM_CPU overrides it.
#
# qemu's "max" without AVX. TCG emulates an AVX or AVX2 instruction far more slowly than the
# scalar and SSE code it stands for, and the guest's libraries take those paths whenever the CPU
# offers them: glibc's string and memory functions, OpenSSL's SHA-256 and AES-GCM, the kernel's
# crypto (dm-verity, which checks a firmware bundle). Measured in the appliance image on
# 2026-12-01, "max" against this, three boots each, one after the other on a quiet host: SHA-256
# 9-17 against 27-46 MB/s (a firmware upload hashes the bundle, its install verifies it), a Python
# loop 3.0-3.2 against 2.0-2.6 s, systemd's start-up 58 against 51 s (one boot each); importing
# the API (19-20 against 15-24 s) and boot to the API answering (102-107 against 88-114 s) were
# within the host's noise. tests/kernel/test_api_schedulers.py in the kernel VM: 260 against 236 s.
# It is also a CPU the appliance must run on: the Atom-class Celerons of small-office boxes have no AVX.
# shellcheck disable=SC2034 # read by the scripts that source this file
TCG_CPU=${FULCRUM_VM_CPU:-max,avx=off,avx2=off,fma=off,f16c=off,vaes=off,vpclmulqdq=off,avx512f=off}
