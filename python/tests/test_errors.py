# SPDX-License-Identifier: MIT
"""Failures a user handles: wrong key, closed port, unknown service, a server killed
mid-stream, a peer's application close code."""
import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import pure
from conftest import ROOT, echo


async def test_unknown_service_refused(keys):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        t = time.monotonic()
        with pytest.raises(pure.RefusedError) as ei:
            await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="nope")
        assert ei.value.name == "PURE_EREFUSED"
        assert time.monotonic() - t < 2  # refused at once, not timed out


async def test_wrong_server_key(keys):
    priv, _ = keys
    wrong = pure.public_key(pure.keygen())
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        with pytest.raises(pure.WrongServerKeyError) as ei:
            await pure.connect(f"127.0.0.1:{server.port}", server_key=wrong, service="echo",
                               timeout=1.0)
        assert ei.value.name == "PURE_EKEY"


def free_udp_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


async def test_closed_port_unreachable():
    pub = pure.public_key(pure.keygen())
    t = time.monotonic()
    with pytest.raises(pure.UnreachableError) as ei:
        await pure.connect(f"127.0.0.1:{free_udp_port()}", server_key=pub, service="echo",
                           timeout=5)
    assert isinstance(ei.value, pure.TimedOutError) and isinstance(ei.value, TimeoutError)
    # the ICMP port unreachable reaches the socket (IP_RECVERR): in a round trip, not at 5 s
    assert ei.value.name == "PURE_EUNREACH"
    assert time.monotonic() - t < 1


async def test_not_a_pure_server():
    # a UDP service that answers everything with text: not Pure, said in ~200 ms
    class Junk(asyncio.DatagramProtocol):
        def connection_made(self, transport):
            self.t = transport

        def datagram_received(self, data, addr):
            self.t.sendto(b"HTTP/1.0 400 Bad Request\r\n\r\n", addr)

    loop = asyncio.get_running_loop()
    tr, _ = await loop.create_datagram_endpoint(Junk, local_addr=("127.0.0.1", 0))
    try:
        port = tr.get_extra_info("sockname")[1]
        pub = pure.public_key(pure.keygen())
        t = time.monotonic()
        with pytest.raises(pure.NotPureError) as ei:
            await pure.connect(f"127.0.0.1:{port}", server_key=pub, service="echo", timeout=5)
        assert ei.value.name == "PURE_ENOTPURE"
        assert time.monotonic() - t < 1
    finally:
        tr.close()


async def test_server_of_another_version():
    # a server of protocol version 2: a VERSION reply (type 5, the INIT's index, the 16 bytes
    # after it, the versions it speaks) to every INIT; the client says so in ~200 ms
    class V2(asyncio.DatagramProtocol):
        def connection_made(self, transport):
            self.t = transport

        def datagram_received(self, data, addr):
            if len(data) >= 64 and data[0] == 1:
                self.t.sendto(b"\x05" + data[1:21] + (2).to_bytes(4, "big"), addr)

    loop = asyncio.get_running_loop()
    tr, _ = await loop.create_datagram_endpoint(V2, local_addr=("127.0.0.1", 0))
    try:
        port = tr.get_extra_info("sockname")[1]
        pub = pure.public_key(pure.keygen())
        t = time.monotonic()
        with pytest.raises(pure.VersionError) as ei:
            await pure.connect(f"127.0.0.1:{port}", server_key=pub, service="echo", timeout=5)
        assert ei.value.name == "PURE_EVERSION" and ei.value.peer_code == 2
        assert time.monotonic() - t < 1
    finally:
        tr.close()


def test_moved_maps_to_its_class():
    from pure import _core
    from pure._errors import error_for
    e = error_for(_core.EMOVED, unacked=range(3, 7))
    assert isinstance(e, pure.MovedError) and isinstance(e, pure.ClosedError)
    assert e.name == "PURE_EMOVED" and list(e.unacked) == [3, 4, 5, 6]


def test_every_code_maps_to_a_class():
    """Every PURE_E* code the C library defines has its constant, and the codes a send can
    return map to the exception the docs name (PURE_EFULL, a queue limit, is a full backlog)."""
    from pure import _core
    from pure._errors import BacklogFullError, error_for
    for name in ("EAGAIN", "EFULL", "EMOVED", "EVERSION", "ECLOSED", "EMSGSIZE"):
        assert isinstance(getattr(_core, name), int)
    assert _core.EFULL == -22
    assert isinstance(error_for(_core.EFULL), BacklogFullError)


async def test_bad_address():
    pub = pure.public_key(pure.keygen())
    with pytest.raises(ValueError):
        await pure.connect("no-port-here", server_key=pub, service="echo")


async def test_peer_close_code_is_reset(keys):
    priv, pub = keys

    async def rude(link):
        await link.recv()
        link.abort(pure.CLOSE_APP + 7, "go away")
        await asyncio.sleep(0)

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"rude": rude},
                                allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="rude")
        await link.send(b"hi")
        with pytest.raises(pure.ResetError) as ei:
            await asyncio.wait_for(link.recv(), 5)
        assert ei.value.peer_code == pure.CLOSE_APP + 7 and ei.value.reason == "go away"
        assert isinstance(ei.value, pure.ClosedError)


SERVER = r"""
import asyncio, sys, pure
async def sink(link):
    async for _ in link:
        pass
async def main():
    priv = bytes.fromhex(sys.argv[1])
    s = await pure.serve("127.0.0.1:0", private_key=priv, services={"sink": sink}, allow_any=True)
    print(s.port, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


async def test_server_killed_mid_stream(keys):
    priv, pub = keys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-c", SERVER, priv.hex()], stdout=subprocess.PIPE,
                         env=env)
    try:
        port = int(p.stdout.readline())
        link = await pure.connect(f"127.0.0.1:{port}", server_key=pub, service="sink",
                                  idle_timeout=1.0)
        sent = 0
        t = time.monotonic()
        with pytest.raises(pure.TimedOutError) as ei:
            while True:
                await link.send(b"m" * 1000)
                sent += 1
                if sent == 2000:
                    p.send_signal(signal.SIGKILL)
        assert ei.value.name == "PURE_ETIMEDOUT"
        # the messages the dead server never acknowledged, by id
        un = ei.value.unacked
        assert un.stop == sent and 0 <= un.start < sent
        assert time.monotonic() - t < 10
        assert link.closed
    finally:
        p.kill()
        p.wait()


async def test_server_drain(keys):
    """Server.drain (pure_ctx_drain, docs/fleet.md): an open link's client sees MovedError, with
    no ids to resend when the server's handler had read them all; a new link is refused with
    MovedError at once, not at its timeout; the server runs on until it is closed."""
    priv, pub = keys
    got = []

    async def sink(link):
        async for msg in link:
            got.append(msg)

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"sink": sink},
                                allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="sink")
        for i in range(10):
            await link.send(b"m%d" % i)
        for _ in range(500):
            if len(got) == 10:
                break
            await asyncio.sleep(0.01)
        assert len(got) == 10
        server.drain()
        with pytest.raises(pure.MovedError) as ei:
            await asyncio.wait_for(link.recv(), 5)
        assert ei.value.name == "PURE_EMOVED" and len(ei.value.unacked) == 0
        assert server.is_serving()
        t = time.monotonic()
        with pytest.raises(pure.MovedError):
            await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="sink",
                               timeout=5)
        assert time.monotonic() - t < 1


@pytest.mark.parametrize("setting", ["idle_timeout", "keepalive"])
@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e12, -1.0])
async def test_time_out_of_range(keys, setting, value):
    """A time past what the library takes (365 days), infinite, NaN or negative is a ValueError
    naming the bound, not a value converted with undefined behaviour (1e12 seconds is past
    uint64_t nanoseconds)."""
    priv, _ = keys
    with pytest.raises(ValueError, match="times must"):
        await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                         allow_any=True, **{setting: value})


@pytest.mark.parametrize("setting,value", [
    ("max_message_size", 2**32 + 5),  # was truncated to 5 bytes
    ("max_message_size", -1),
    ("max_message_size", 2**30 + 1),
    ("send_backlog", -1),  # was 2**64 - 1
    ("send_backlog", 100),
    ("max_queue", -1),
    ("send_queue", -2),
    ("send_queue", 2**70),
])
async def test_size_out_of_range(keys, setting, value):
    """A size setting out of its range is a ValueError (or OverflowError past 64 bits), not
    wrapped or truncated into the C field nor a bare 'invalid argument'."""
    priv, _ = keys
    with pytest.raises((ValueError, OverflowError)):
        await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                         allow_any=True, **{setting: value})


async def test_sizes_at_their_edges_accepted(keys):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True, max_message_size=2**30, send_backlog=4096,
                                max_queue=0) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="echo",
                                  max_message_size=2**30, send_backlog=2**62)
        await link.send(b"x" * 10000)
        assert await link.recv() == b"x" * 10000
        await link.close()
