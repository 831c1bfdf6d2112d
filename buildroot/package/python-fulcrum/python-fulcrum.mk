################################################################################
#
# python-fulcrum
#
################################################################################

# The api/ folder of this repository, next to this external tree.
PYTHON_FULCRUM_VERSION = 0.1.0
PYTHON_FULCRUM_SITE = $(BR2_EXTERNAL_FULCRUM_PATH)/../api
PYTHON_FULCRUM_SITE_METHOD = local
PYTHON_FULCRUM_SETUP_TYPE = setuptools
PYTHON_FULCRUM_LICENSE = GPL-2.0+

# The API's account (as overlay/usr/lib/sysusers.d/fulcrum.conf): the root file system is
# read-only, so it is made here rather than by systemd-sysusers at boot.
define PYTHON_FULCRUM_USERS
	fulcrum -1 fulcrum -1 * - /usr/sbin/nologin - Fulcrum API
endef

$(eval $(python-package))
