# SPDX-License-Identifier: MIT
"""Closing: server.close() ends every link gracefully, abort() at once, async with on an
exception aborts, a handler that raises aborts its link, a closed link refuses sends."""
import asyncio

import pytest

import pure
from conftest import echo


async def test_server_close_ends_links_gracefully(keys):
    priv, pub = keys
    ended = []

    async def count(link):
        n = 0
        async for _ in link:
            n += 1
        ended.append(n)

    server = await pure.serve("127.0.0.1:0", private_key=priv, services={"c": count},
                              allow_any=True)
    link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="c")
    for _ in range(100):
        await link.send(b"x" * 100)
    while not server.links:
        await asyncio.sleep(0.001)
    server.close()
    assert not server.is_serving()
    await asyncio.wait_for(server.wait_closed(), 10)
    assert ended == [100]  # every message sent before the close arrived, then the loop ended
    await asyncio.wait_for(link.wait_closed(), 10)
    with pytest.raises(pure.ClosedError):
        await link.send(b"late")


async def test_abort_and_handler_failure(keys):
    priv, pub = keys

    async def boom(link):
        await link.recv()
        raise RuntimeError("handler bug")

    async with await pure.serve("127.0.0.1:0", private_key=priv,
                                services={"boom": boom, "echo": echo}, allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="boom")
        await link.send(b"go")
        with pytest.raises(pure.ResetError) as ei:
            await asyncio.wait_for(link.recv(), 5)
        assert ei.value.reason == "handler failed"

        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="echo")
        link.abort()
        assert link.closed
        with pytest.raises(pure.ClosedError):
            await link.send(b"x")

        with pytest.raises(KeyError):
            async with await pure.connect(f"127.0.0.1:{server.port}", server_key=pub,
                                          service="echo") as link:
                raise KeyError("user code failed")
        assert link.closed  # aborted on the way out
