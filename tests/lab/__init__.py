"""Fulcrum's kernel test lab: namespaces, veths and bridges inside the test VM.

Modelled on the kernel selftests' lib/py (cmd, bkg, defer, wait) and FRR's topotests
(build a topology, then drive daemons and traffic in it). Submodules:

    lab.topo        build(mode, ...) -> Lab: clients, load balancers, backends
    lab.netns       NetNS, sockets and /proc/net inside a namespace
    lab.cmd         cmd() and background processes
    lab.defer       cleanup scopes: everything created is undone when its scope ends
    lab.wait        wait_until(): poll with a deadline
    lab.servers     the backend servers (python -m lab.servers ...)
    lab.backends    handles to start/stop/reconfigure those servers
    lab.client      HTTP/TCP/UDP client traffic from a namespace
    lab.ipvs        read and wait on a namespace's IPVS table
    lab.keepalived  run keepalived in a namespace
    lab.frr         FRR (zebra, bgpd, bfdd) in a namespace of its own or a lab host's
    lab.ecmp        a scale-out cluster behind a router's ECMP, and the runs measured on it
    lab.bundles     small signed RAUC bundles (the firmware tests, host and image)
    lab.api_client  the HTTP client of a test node's API (lab.appliance's, tests/api/hanode's)
"""

from lab.cmd import CmdError, bkg, cmd
from lab.defer import defer, scope
from lab.netns import NetNS
from lab.topo import VIP, Lab, build
from lab.wait import WaitTimeout, wait_until

__all__ = ["VIP", "CmdError", "Lab", "NetNS", "WaitTimeout", "bkg", "build", "cmd", "defer", "scope", "wait_until"]
