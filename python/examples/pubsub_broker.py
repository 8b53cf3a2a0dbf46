#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A publish/subscribe broker over Pure, and its clients.

Service "sub": the client's first message is a topic; the broker then sends it every message
published on that topic. Service "pub": each message is b"TOPIC MESSAGE"; the broker forwards
MESSAGE to every subscriber of TOPIC (a subscriber whose backlog is full is skipped for that
message and counted, so one slow subscriber does not stall the others).

    python3 examples/pubsub_broker.py serve [--listen 127.0.0.1:0]
    python3 examples/pubsub_broker.py sub HOST:PORT KEY TOPIC [COUNT]
    python3 examples/pubsub_broker.py pub HOST:PORT KEY TOPIC MESSAGE...
"""
import asyncio
import json
import sys
from collections import defaultdict
from typing import Dict, Set

import pure


class Broker:
    def __init__(self) -> None:
        self.topics: Dict[bytes, Set[pure.Link]] = defaultdict(set)
        self.skipped = 0

    async def sub(self, link: pure.Link) -> None:
        topic = await link.recv()
        self.topics[topic].add(link)
        try:
            await link.send(b"subscribed")
            async for _ in link:  # until the subscriber leaves
                pass
        finally:
            self.topics[topic].discard(link)

    async def pub(self, link: pure.Link) -> None:
        async for msg in link:
            topic, _, body = msg.partition(b" ")
            for s in list(self.topics.get(topic, ())):
                try:
                    s.send_nowait(body)
                except pure.BacklogFullError:
                    self.skipped += 1
                except pure.ClosedError:
                    pass
            await link.send(b"ok")  # one acknowledgement per publish


async def serve(listen: str) -> None:
    b = Broker()
    async with await pure.serve(listen, private_key=pure.keygen(), allow_any=True,
                                services={"sub": b.sub, "pub": b.pub}) as server:
        print(json.dumps({"port": server.port, "public_key": pure.key_text(server.public_key)}),
              flush=True)
        await server.serve_forever()


async def sub(addr: str, key: str, topic: str, count: int) -> None:
    async with await pure.connect(addr, server_key=key, service="sub") as link:
        await link.send(topic.encode())
        assert await link.recv() == b"subscribed"
        print("subscribed", flush=True)
        for _ in range(count):
            print((await link.recv()).decode(), flush=True)


async def pub(addr: str, key: str, topic: str, messages) -> None:
    async with await pure.connect(addr, server_key=key, service="pub") as link:
        for m in messages:
            await link.send(("%s %s" % (topic, m)).encode())
            await link.recv()


def main(argv) -> None:
    if len(argv) >= 1 and argv[0] == "serve":
        listen = argv[argv.index("--listen") + 1] if "--listen" in argv else "127.0.0.1:0"
        try:
            asyncio.run(serve(listen))
        except KeyboardInterrupt:
            pass
    elif len(argv) >= 4 and argv[0] == "sub":
        asyncio.run(sub(argv[1], argv[2], argv[3], int(argv[4]) if len(argv) > 4 else 1 << 62))
    elif len(argv) >= 5 and argv[0] == "pub":
        asyncio.run(pub(argv[1], argv[2], argv[3], argv[4:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
