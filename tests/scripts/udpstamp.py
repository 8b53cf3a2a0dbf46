# SPDX-License-Identifier: MIT
"""Arrival times from the kernel, for the udpfwd tests (udpfwd_bottleneck.sh, udpfwd_servers.sh).

A test that measures a forwarder's rate must time each datagram when the kernel received it
(SO_TIMESTAMPNS), not when its Python reader got round to it: on a loaded machine (CI's ASan pass
beside other tests) the reads lag by 100 ms and more, which reads as a slower rate."""
import socket
import struct

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's value (SCM_TIMESTAMPNS too)


def stamp(sock):
    """Asks the kernel to time every datagram sock receives."""
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)


def recv_stamped(sock, who):
    """(data, source address, ECN bits, arrival time in seconds) for every datagram waiting on
    sock, which stamp() was called on; the ECN bits are 0 unless IP_RECVTOS is set too. Exits
    naming `who` if the kernel gave no time (the test's figures would then be the reader's)."""
    out = []
    while True:
        try:
            data, anc, _, addr = sock.recvmsg(65536, 256, socket.MSG_DONTWAIT)
        except (BlockingIOError, ConnectionRefusedError):
            return out
        tos, at = 0, None
        for level, typ, val in anc:
            if level == socket.IPPROTO_IP and typ == socket.IP_TOS:
                tos = val[0]
            elif level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS and len(val) >= 16:
                sec, nsec = struct.unpack("qq", val[:16])
                at = sec + nsec / 1e9
        if at is None:
            raise SystemExit("%s: no SO_TIMESTAMPNS arrival time from the kernel" % who)
        out.append((data, addr, tos & 3, at))
