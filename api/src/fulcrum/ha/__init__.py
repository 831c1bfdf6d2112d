"""The HA pair's control plane: peer authentication, pairing, config replication, the watcher.

What runs beside keepalived on the node (the node-health check) lives in node_health.py; the
renderer's VRRP parts live in fulcrum.render.
"""
