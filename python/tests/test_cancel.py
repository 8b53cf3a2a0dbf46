# SPDX-License-Identifier: MIT
"""A task cancelled in the middle of send or recv never corrupts its link: every message whose
send returned an id arrives once, in order; a cancelled recv loses nothing."""
import asyncio
import random

import pure
from conftest import echo


async def test_cancel_in_send_and_recv(keys):
    priv, pub = keys
    received = []
    done = asyncio.Event()

    async def collect(link):
        n = 0
        while True:
            n += 1
            if n % 200 == 0:
                await asyncio.sleep(0.02)  # a slow reader: the client's sends wait now and then
            t = asyncio.ensure_future(link.recv())
            await asyncio.sleep(0)
            if random.random() < 0.3:
                t.cancel()  # a receive cancelled half-way must not eat a message
            try:
                m = await t
            except asyncio.CancelledError:
                continue
            except pure.ClosedError:
                break
            received.append(m)
        done.set()

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"c": collect},
                                allow_any=True, max_queue=65536) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="c",
                                  send_queue=16384, send_backlog=32768)
        accepted = []
        cancelled = 0
        rnd = random.Random(1)
        i = 0

        def msg():
            nonlocal i
            i += 1
            return b"%06d" % i + b"." * rnd.randrange(0, 2000)

        for _ in range(60):
            # fill the backlog, so the next send has to wait ...
            try:
                while True:
                    m = msg()
                    accepted.append((link.send_nowait(m), m))
            except pure.BacklogFullError:
                pass
            # ... and cancel it while it waits (or, after a random pause, just after it
            # was woken, or done): whatever it returned was sent, whatever it did not was not
            m = msg()
            t = asyncio.ensure_future(link.send(m))
            await asyncio.sleep(0 if rnd.random() < 0.5 else rnd.random() / 1000)
            t.cancel()
            try:
                accepted.append((await t, m))
            except asyncio.CancelledError:
                cancelled += 1
            for _ in range(rnd.randrange(0, 20)):
                m = msg()
                accepted.append((await link.send(m), m))
        assert cancelled > 0
        assert [m for m, _ in accepted] == list(range(len(accepted)))  # ids without gaps
        link.finish()
        await asyncio.wait_for(done.wait(), 20)
        assert received == [m for _, m in accepted]
        await link.close()


async def test_cancel_connect_and_recv_waiting(keys):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="echo")
        r = asyncio.ensure_future(link.recv())
        await asyncio.sleep(0.01)
        r.cancel()
        await asyncio.gather(r, return_exceptions=True)
        await link.send(b"after")
        assert await asyncio.wait_for(link.recv(), 5) == b"after"
        # wait_for with a timeout on recv is a cancellation too
        try:
            await asyncio.wait_for(link.recv(), 0.01)
        except asyncio.TimeoutError:
            pass
        await link.send(b"again")
        assert await asyncio.wait_for(link.recv(), 5) == b"again"
        await link.close()
