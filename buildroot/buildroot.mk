# The Buildroot release build (BR2_EXTERNAL tree FULCRUM in buildroot/). Included from the
# top-level Makefile; paths are relative to the repository root.
#
#   make image                                  download the pinned Buildroot and build
#                                               buildroot/output/images/fulcrum.img (needs
#                                               upstream network access for every source)
#   make buildroot-check BUILDROOT_SRC=DIR      offline: the defconfig through DIR's kconfig,
#                                               every symbol it sets must survive; check-package
#   make kernel-fragment-check [KERNEL_SRC=..]  offline: x86_64_defconfig + linux.fragment through a
#                                               Linux source's kconfig (default: Debian's
#                                               linux-source-6.12); every fragment line must survive

.PHONY: image buildroot-check kernel-fragment-check

image:
	buildroot/build-image

buildroot-check:
	BUILDROOT_SRC=$(BUILDROOT_SRC) buildroot/check-defconfig

kernel-fragment-check:
	KERNEL_SRC=$(KERNEL_SRC) buildroot/check-kernel-fragment
