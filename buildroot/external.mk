include $(sort $(wildcard $(BR2_EXTERNAL_FULCRUM_PATH)/package/*/*.mk))
