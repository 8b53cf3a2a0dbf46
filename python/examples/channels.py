#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Channels, priorities and datagrams on one link (server and client in one process): a bulk
upload on channel 1 at a low priority, small requests on channel 2 answered at once while it
runs, and unreliable position ticks as datagrams.

    python3 examples/channels.py [MIB]        # MIB of upload, default 64
"""
import asyncio
import sys
import time

import pure

UPLOAD, REQUESTS = 1, 2


async def app(link: pure.Link) -> None:
    """The service: every channel in one loop, datagrams echoed by a second task."""
    async def echo_datagrams():
        async for d in link.datagrams():
            link.send_datagram(d)

    ticks = asyncio.create_task(echo_datagrams())
    uploaded = 0
    async for channel, data in link.messages():
        if channel == UPLOAD:
            uploaded += len(data)
            if not data:  # the end of the upload: say how much came
                await link.send(b"%d" % uploaded, channel=UPLOAD)
        elif channel == REQUESTS:
            await link.send(b"re: " + data, channel=REQUESTS)
    await ticks


async def main(mib: int) -> None:
    priv = pure.keygen()
    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"app": app},
                                allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pure.public_key(priv),
                                  service="app")
        link.set_priority(UPLOAD, urgency=6)  # bulk: only when nothing more urgent waits
        link.set_priority(REQUESTS, urgency=0)

        async def upload() -> float:
            t0, chunk = time.monotonic(), bytes(1 << 20)
            for _ in range(mib):
                await link.send(chunk, channel=UPLOAD)  # waits on channel 1's backlog alone
            await link.send(b"", channel=UPLOAD)
            assert int(await link.recv(channel=UPLOAD)) == mib << 20
            return time.monotonic() - t0

        async def requests() -> list:
            rtts = []
            for i in range(20):
                t0 = time.monotonic()
                await link.send(b"request %d" % i, channel=REQUESTS)
                assert await link.recv(channel=REQUESTS) == b"re: request %d" % i
                rtts.append(time.monotonic() - t0)
                await asyncio.sleep(0.001)
            return rtts

        async def ticks() -> int:
            for i in range(50):
                link.send_datagram(b"position %d" % i)  # unreliable: no wait, no retry
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.05)  # echoes still on their way are simply not counted
            n = 0
            while link.recv_datagram_nowait() is not None:
                n += 1
            return n

        secs, rtts, echoed = await asyncio.gather(upload(), requests(), ticks())
        st = link.stats()
        print("upload: %d MiB on channel %d in %.3f s" % (mib, UPLOAD, secs))
        print("requests on channel %d meanwhile: %d, slowest round trip %.1f ms"
              % (REQUESTS, len(rtts), max(rtts) * 1e3))
        print("datagrams: %d sent, %d echoed, %d lost (datagram_max %d bytes)"
              % (st["datagrams_sent"], echoed, st["datagrams_lost"], link.datagram_max))
        await link.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 64))
