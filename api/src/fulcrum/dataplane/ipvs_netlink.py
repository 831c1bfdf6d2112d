"""IPVS generic netlink, read-only: dump the virtual services and each one's destinations.

The kernel's answer is decoded with `struct` into `Attributes`, one dict per attribute level.
pyroute2 decodes every attribute through its own classes, which cost 5.6 s for one read of
1,000 real servers and 27 s for 5,000 in the emulated VM, once per read-back poll and per
statistics tick. Only reading lives here; keepalived alone writes IPVS.

Numbers from include/uapi/linux/ip_vs.h and include/uapi/linux/genetlink.h.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2

NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3

IPVS_GENL_NAME = "IPVS"
IPVS_GENL_VERSION = 1
IPVS_CMD_GET_SERVICE = 4
IPVS_CMD_GET_DEST = 8
IPVS_CMD_ATTR_SERVICE = 1
IPVS_CMD_ATTR_DEST = 2

# enum IPVS_SVC_ATTR_*
SVC_AF, SVC_PROTOCOL, SVC_ADDR, SVC_PORT, SVC_FWMARK = 1, 2, 3, 4, 5
SVC_SCHED_NAME, SVC_FLAGS, SVC_TIMEOUT, SVC_NETMASK, SVC_STATS, SVC_STATS64 = 6, 7, 8, 9, 10, 12
# enum IPVS_DEST_ATTR_*
DEST_ADDR, DEST_PORT, DEST_FWD_METHOD, DEST_WEIGHT, DEST_U_THRESH, DEST_L_THRESH = 1, 2, 3, 4, 5, 6
DEST_ACTIVE_CONNS, DEST_INACT_CONNS, DEST_STATS, DEST_ADDR_FAMILY, DEST_STATS64 = 7, 8, 10, 11, 12
DEST_TUN_TYPE, DEST_TUN_PORT = 13, 14
# enum IPVS_STATS_ATTR_*, in order: conns, inpkts, outpkts, inbytes, outbytes, cps, inpps,
# outpps, inbps, outbps (u32 or u64 in STATS, all u64 in STATS64)
STATS_NAMES = (
    "conns",
    "inpkts",
    "outpkts",
    "inbytes",
    "outbytes",
    "cps",
    "inpps",
    "outpps",
    "inbps",
    "outbps",
)

_NLMSG = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
_GENL = struct.Struct("=BBH")  # command, version, reserved
_NLA = struct.Struct("=HH")  # length, type
_NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER
_RECEIVE_BUFFER = 1 << 18


class Attributes(dict[int, bytes]):
    """One level of netlink attributes: type -> raw value. Integers are host order unless named."""

    @classmethod
    def parse(cls, data: bytes | memoryview, offset: int = 0, end: int | None = None) -> Attributes:
        attributes = cls()
        end = len(data) if end is None else end
        unpack = _NLA.unpack_from
        while offset + 4 <= end:
            length, kind = unpack(data, offset)
            if length < 4:
                break
            attributes[kind & _NLA_TYPE_MASK] = bytes(data[offset + 4 : offset + length])
            offset += (length + 3) & ~3
        return attributes

    def integer(self, kind: int, default: int = 0) -> int:
        raw = self.get(kind)
        return int.from_bytes(raw, sys.byteorder) if raw is not None else default

    def big_endian(self, kind: int, default: int = 0) -> int:
        raw = self.get(kind)
        return int.from_bytes(raw, "big") if raw is not None else default

    def string(self, kind: int) -> str:
        return self.get(kind, b"").split(b"\0", 1)[0].decode()

    def nested(self, kind: int) -> Attributes | None:
        raw = self.get(kind)
        return Attributes.parse(raw) if raw is not None else None

    def encode(self) -> bytes:
        return b"".join(attribute(kind, value) for kind, value in self.items())


def attribute(kind: int, value: bytes) -> bytes:
    header = _NLA.pack(4 + len(value), kind)
    return header + value + b"\0" * (-len(value) % 4)


@dataclass(frozen=True)
class IpvsDump:
    """One virtual service's attributes and those of each of its destinations."""

    service: Attributes
    destinations: list[Attributes]


class NetlinkError(OSError):
    """The kernel answered a request with an error (errno)."""


class GenericNetlinkSocket:
    """A generic netlink socket: resolve a family, send a request, collect its replies."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self._sequence = 0
        try:
            self._socket.bind((0, 0))
        except BaseException:
            self._socket.close()
            raise

    def close(self) -> None:
        self._socket.close()

    def family_id(self, name: str) -> int:
        """The id of the generic netlink family `name`; NetlinkError(ENOENT) when not registered."""
        request = attribute(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0")
        (reply,) = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, request)
        return reply.integer(CTRL_ATTR_FAMILY_ID)

    def request(
        self, family: int, command: int, version: int, payload: bytes, dump: bool = False
    ) -> list[Attributes]:
        """Send one request; the top-level attributes of every reply, until the dump ends or the ACK."""
        self._sequence += 1
        body = _GENL.pack(command, version, 0) + payload
        flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else NLM_F_ACK)
        self._socket.send(_NLMSG.pack(_NLMSG.size + len(body), family, flags, self._sequence, 0) + body)
        replies: list[Attributes] = []
        while True:
            data = self._socket.recv(_RECEIVE_BUFFER)
            offset = 0
            while offset + _NLMSG.size <= len(data):
                length, kind, _flags, sequence, _port = _NLMSG.unpack_from(data, offset)
                if length < _NLMSG.size:
                    raise NetlinkError(errno.EPROTO, "malformed netlink message")
                start, offset = offset + _NLMSG.size, offset + ((length + 3) & ~3)
                if sequence != self._sequence:
                    continue  # an answer to an earlier request that was abandoned
                if kind in (NLMSG_ERROR, NLMSG_DONE):
                    code = -struct.unpack_from("=i", data, start)[0] if length >= _NLMSG.size + 4 else 0
                    if code:
                        raise NetlinkError(code, os.strerror(code))
                    return replies
                replies.append(Attributes.parse(data, start + _GENL.size, start + length - _NLMSG.size))


class IpvsSocket(GenericNetlinkSocket):
    """The IPVS family. Raises NetlinkError (ENOENT: no IPVS in this kernel) or OSError."""

    def __init__(self) -> None:
        super().__init__()
        try:
            self.family = self.family_id(IPVS_GENL_NAME)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> IpvsSocket:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def dump(self, wanted: Callable[[Attributes], bool] | None = None) -> list[IpvsDump]:
        """Every virtual service (or each one `wanted` accepts) with its destinations, as the kernel
        holds them now. The destinations are one request per service: the services alone are cheap."""
        services = [
            message.nested(IPVS_CMD_ATTR_SERVICE) or Attributes()
            for message in self.request(self.family, IPVS_CMD_GET_SERVICE, IPVS_GENL_VERSION, b"", dump=True)
        ]
        return [
            IpvsDump(service, self._destinations(service))
            for service in services
            if wanted is None or wanted(service)
        ]

    def _destinations(self, service: Attributes) -> list[Attributes]:
        # GET_DEST names the service by family plus fwmark, or protocol, address and port.
        identity = Attributes({kind: service[kind] for kind in (SVC_AF, SVC_FWMARK) if kind in service})
        if SVC_FWMARK not in identity:
            identity.update(
                {kind: service[kind] for kind in (SVC_PROTOCOL, SVC_ADDR, SVC_PORT) if kind in service}
            )
        request = attribute(IPVS_CMD_ATTR_SERVICE, identity.encode())
        return [
            message.nested(IPVS_CMD_ATTR_DEST) or Attributes()
            for message in self.request(self.family, IPVS_CMD_GET_DEST, IPVS_GENL_VERSION, request, dump=True)
        ]
