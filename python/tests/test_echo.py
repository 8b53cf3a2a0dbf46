# SPDX-License-Identifier: MIT
"""Echo of every size from 0 B to 16 MiB, and 1,000 links at once."""
import asyncio
import os

import pytest

import pure
from conftest import echo


def body(n: int, seed: int) -> bytes:
    return bytes((i * 7 + seed) % 251 for i in range(min(n, 4096))) * (n // 4096 + 1)


@pytest.mark.parametrize("size", [0, 1, 61, 1024, 1472, 16384, 65536, 1 << 20, 16 << 20])
async def test_echo_sizes(keys, size):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        async with await pure.connect(f"127.0.0.1:{server.port}", server_key=pub,
                                      service="echo") as link:
            count = 3 if size >= (1 << 20) else 20
            msgs = [body(size, i)[:size] for i in range(count)]

            async def sender():
                for m in msgs:
                    await link.send(m)

            t = asyncio.ensure_future(sender())
            for m in msgs:
                got = await asyncio.wait_for(link.recv(), 30)
                assert len(got) == len(m) and got == m
            await t


async def test_message_too_big(keys):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        async with await pure.connect(f"127.0.0.1:{server.port}", server_key=pub,
                                      service="echo", max_message_size=1000) as link:
            with pytest.raises(pure.MessageTooBigError):
                await link.send(b"x" * 1001)
            await link.send(b"x" * 1000)  # the link is unharmed
            assert await link.recv() == b"x" * 1000


async def test_thousand_links_at_once(keys):
    priv, pub = keys
    n = int(os.environ.get("PURE_PY_LINKS", "1000"))
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        links = await asyncio.gather(*[
            pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="echo")
            for _ in range(n)])
        assert len(server.links) == n
        assert len({id(l) for l in links}) == n

        async def one(i, link):
            for j in range(3):
                await link.send(b"%d:%d" % (i, j))
            for j in range(3):
                assert await link.recv() == b"%d:%d" % (i, j)
            await link.close()

        await asyncio.wait_for(asyncio.gather(*[one(i, l) for i, l in enumerate(links)]), 60)
        assert server.stats()["handshakes_accepted"] == n
