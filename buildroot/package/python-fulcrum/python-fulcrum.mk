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

$(eval $(python-package))
