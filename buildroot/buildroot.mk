# The Buildroot release build (BR2_EXTERNAL tree FULCRUM in buildroot/). Included from the
# top-level Makefile; paths are relative to the repository root.
#
#   make image                                  download the pinned Buildroot and build
#                                               buildroot/output/images/fulcrum.img (needs
#                                               upstream network access for every source)
#   make buildroot-check BUILDROOT_SRC=DIR      offline: the defconfig through DIR's kconfig,
#                                               every symbol it sets must survive; check-package

.PHONY: image buildroot-check

image:
	buildroot/build-image

buildroot-check:
	BUILDROOT_SRC=$(BUILDROOT_SRC) buildroot/check-defconfig
