# shellcheck shell=bash
# The CPU qemu emulates under software emulation (TCG): sourced by image/run-vm,
# tests/kernel/run-in-vm and scripts/demo; FULCRUM_VM_CPU overrides it.
#
# qemu's "max" without AVX. TCG emulates an AVX or AVX2 instruction far more slowly than the
# scalar and SSE code it stands for, and the guest's libraries take those paths whenever the CPU
# offers them: glibc's string and memory functions, OpenSSL's SHA-256 and AES-GCM, the kernel's
# crypto (dm-verity, which checks a firmware bundle). Measured here (2026-12-01, the appliance
# image, one boot each, "max" then this): SHA-256 17 -> 46 MB/s, AES-256-GCM 32 -> 43 MB/s, a
# Python loop 2.98 -> 2.04 s, importing the API 18.8 -> 15.1 s, boot to the API answering
# 107 -> 88 s; tests/kernel/test_api_schedulers.py in the kernel VM 260 -> 236 s.
# It is also a CPU the appliance must run on: the Atom-class Celerons of small-office boxes have no AVX.
# shellcheck disable=SC2034 # read by the scripts that source this file
TCG_CPU=${FULCRUM_VM_CPU:-max,avx=off,avx2=off,fma=off,f16c=off,vaes=off,vpclmulqdq=off,avx512f=off}
