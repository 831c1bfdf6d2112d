################################################################################
#
# fulcrum-webui
#
################################################################################

# Built assets only: Buildroot does not run the JavaScript tool chain.
FULCRUM_WEBUI_VERSION = 0.1.0
FULCRUM_WEBUI_SITE = $(BR2_EXTERNAL_FULCRUM_PATH)/../webui/dist
FULCRUM_WEBUI_SITE_METHOD = local
FULCRUM_WEBUI_LICENSE = GPL-2.0+

define FULCRUM_WEBUI_INSTALL_TARGET_CMDS
	mkdir -p $(TARGET_DIR)/usr/share/fulcrum/webui
	cp -a $(@D)/. $(TARGET_DIR)/usr/share/fulcrum/webui/
endef

$(eval $(generic-package))
