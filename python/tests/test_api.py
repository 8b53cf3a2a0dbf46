# SPDX-License-Identifier: MIT
"""The public surface, exactly as the issue writes it, and the Python conveniences around it."""
import asyncio

import pytest

import pure
from conftest import echo


async def test_issue_snippet():
    priv = pure.keygen()
    assert isinstance(priv, bytes) and len(priv) == 32
    pub = pure.public_key(priv)
    assert len(pub) == 32 and pub != priv

    async def echo_handler(link):
        async for msg in link:
            await link.send(msg)

    server = await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo_handler},
                              allow_any=True)
    port = server.port
    assert port > 0
    link = await pure.connect(f"127.0.0.1:{port}", server_key=pub, service="echo")
    await link.send(b"hello")
    reply = await link.recv()
    assert reply == b"hello"
    await link.close()
    assert link.closed
    server.close()
    await server.wait_closed()


async def test_key_texts_accepted_wherever_a_key_is():
    priv = pure.keygen()
    pub = pure.public_key(priv)
    ptext, btext = pure.key_text(priv, private=True), pure.key_text(pub)
    assert ptext.startswith("pure-priv:") and btext.startswith("pure-pub:")
    assert pure.public_key(ptext) == pub
    cpriv = pure.keygen()
    server = await pure.serve("127.0.0.1:0", private_key=ptext, services={"echo": echo},
                              allow=[pure.key_text(pure.public_key(cpriv))])
    async with server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=btext, service="echo",
                                  private_key=pure.key_text(cpriv, private=True))
        async with link:
            await link.send(b"x")
            assert await link.recv() == b"x"
    with pytest.raises(ValueError):
        pure.public_key(btext)  # a public key where a private one belongs
    with pytest.raises(ValueError):
        await pure.connect("127.0.0.1:1", server_key=ptext, service="echo")
    with pytest.raises(ValueError):
        pure.public_key(b"short")


async def test_allowlist_and_peer_key(keys):
    priv, pub = keys
    good, bad = pure.keygen(), pure.keygen()
    seen = []

    async def who(link):
        seen.append(link.peer_key)
        async for msg in link:
            await link.send(link.peer_key)

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"who": who},
                                allow=[pure.public_key(good)]) as server:
        async with await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="who",
                                      private_key=good) as link:
            assert link.peer_key == pub
            await link.send(b"?")
            assert await link.recv() == pure.public_key(good)
        with pytest.raises(pure.KeyRejectedError) as ei:
            await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="who",
                               private_key=bad)
        assert ei.value.name == "PURE_EACCES"
        assert isinstance(ei.value, pure.Error)
    assert seen == [pure.public_key(good)]


async def test_send_nowait_raises_when_backlog_full(keys):
    priv, pub = keys
    gate = asyncio.Event()

    async def slow(link):
        await gate.wait()
        async for _ in link:
            pass

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"slow": slow},
                                allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="slow",
                                  send_queue=65536)
        ids = []
        with pytest.raises(pure.BacklogFullError) as ei:
            for _ in range(100000):
                ids.append(link.send_nowait(b"y" * 1000))
        assert ei.value.name == "PURE_EAGAIN"
        assert ids == list(range(len(ids))) and 10 < len(ids) < 100000
        # send() waits instead, and goes on once the backlog drains
        gate.set()
        assert await asyncio.wait_for(link.send(b"z"), 10) == len(ids)
        await link.close()


async def test_stats_are_dicts(keys):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        async with await pure.connect(f"127.0.0.1:{server.port}", server_key=pub,
                                      service="echo") as link:
            for i in range(10):
                await link.send(b"%d" % i)
            for i in range(10):
                assert await link.recv() == b"%d" % i
            st = link.stats()
            assert st["messages_sent"] == 10 and st["messages_received"] == 10
            assert st["rtt_ns"] > 0 and st["datagram_size"] >= 1200
            assert st["ecn_ce_received"] == 0 and st["ecn_ce_reported"] == 0  # loopback marks nothing
            assert link.service == "echo" and link.peer_address.startswith("127.0.0.1:")
            sst = server.stats()
            assert sst["handshakes_accepted"] == 1 and sst["datagrams_in"] > 0
            assert len(server.links) == 1
            cst = link.context_stats()
            assert cst["handshakes_started"] == 1 and cst["datagrams_out"] > 0


async def test_ipv6_loopback(keys):
    priv, pub = keys
    async with await pure.serve("[::1]:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        async with await pure.connect(f"[::1]:{server.port}", server_key=pub,
                                      service="echo") as link:
            await link.send(b"six")
            assert await link.recv() == b"six"
            assert link.peer_address.startswith("[::1]:")


async def test_host_name_resolved(keys):
    priv, pub = keys
    # both ends resolve the name the same way, whichever family it gives first
    async with await pure.serve("localhost:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        link = await pure.connect(f"localhost:{server.port}", server_key=pub, service="echo",
                                  timeout=2)
        await link.send(b"name")
        assert await link.recv() == b"name"
        await link.close()


async def test_memoryview_and_bytearray_messages(keys):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        async with await pure.connect(f"127.0.0.1:{server.port}", server_key=pub,
                                      service="echo") as link:
            buf = bytearray(b"abcdef")
            await link.send(memoryview(buf)[1:4])
            await link.send(buf)
            assert await link.recv() == b"bcd"
            assert await link.recv() == b"abcdef"
            with pytest.raises(TypeError):
                await link.send("text is not bytes")


async def test_finish_ends_peer_iteration(keys):
    priv, pub = keys
    got = []

    async def collect(link):
        async for m in link:
            got.append(m)
        await link.send(b"done %d" % len(got))

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"c": collect},
                                allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="c")
        for i in range(5):
            await link.send(b"m")
        link.finish()
        assert await link.recv() == b"done 5"
        with pytest.raises(pure.ClosedError):
            await link.send(b"after finish")
        await link.close()
        with pytest.raises(pure.ClosedError):
            await link.recv()


async def test_bad_arguments_raise_clearly(keys):
    priv, pub = keys
    with pytest.raises(ValueError, match="service name"):
        await pure.serve("127.0.0.1:0", private_key=priv, services={"x" * 64: echo},
                         allow_any=True)
    with pytest.raises(ValueError):
        await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                         allow=[b"short"])
    with pytest.raises(ValueError, match="allow"):
        await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo})
    with pytest.raises(OSError):  # not an address and no such name: socket.gaierror
        await pure.serve("999.1.1.1:0", private_key=priv, services={"echo": echo},
                         allow_any=True)
    with pytest.raises(ValueError, match="HOST:PORT"):
        await pure.serve("127.0.0.1", private_key=priv, services={"echo": echo},
                         allow_any=True)
    with pytest.raises(TypeError, match="unknown settings"):
        await pure.connect("127.0.0.1:1", server_key=pub, service="echo", bogus=1)
