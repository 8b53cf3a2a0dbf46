#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An echo client: sends each argument as a message and prints each reply.

    python3 examples/echo_client.py HOST:PORT PUBLIC_KEY hello world
"""
import asyncio
import sys

import pure


async def main(address: str, key: str, words) -> int:
    try:
        async with await pure.connect(address, server_key=key, service="echo",
                                      timeout=5) as link:
            for w in words:
                await link.send(w.encode())
            for _ in words:
                print((await link.recv()).decode(), flush=True)
    except pure.Error as e:
        print("echo_client: %s (%s)" % (e, e.name), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:])))
