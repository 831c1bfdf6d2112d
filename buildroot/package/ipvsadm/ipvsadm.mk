################################################################################
#
# ipvsadm
#
################################################################################

IPVSADM_VERSION = 1.31
IPVSADM_SOURCE = ipvsadm-$(IPVSADM_VERSION).tar.xz
IPVSADM_SITE = $(BR2_KERNEL_MIRROR)/linux/utils/kernel/ipvsadm
IPVSADM_LICENSE = GPL-2.0+
IPVSADM_LICENSE_FILES = COPYING
IPVSADM_DEPENDENCIES = libnl popt host-pkgconf

# libipvs is built first by the top-level "all: libs ipvsadm" without declared prerequisites:
# build serially.
define IPVSADM_BUILD_CMDS
	$(TARGET_MAKE_ENV) $(MAKE1) -C $(@D) $(TARGET_CONFIGURE_OPTS) \
		INCLUDE="-I$(STAGING_DIR)/usr/include/libnl3" \
		LIBS="$$($(PKG_CONFIG_HOST_BINARY) --libs libnl-genl-3.0 popt)"
endef

define IPVSADM_INSTALL_TARGET_CMDS
	$(INSTALL) -D -m 0755 $(@D)/ipvsadm $(TARGET_DIR)/usr/sbin/ipvsadm
endef

$(eval $(generic-package))
