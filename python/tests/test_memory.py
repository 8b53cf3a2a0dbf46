# SPDX-License-Identifier: MIT
"""Memory stays flat over many messages: Python allocations (tracemalloc) and the process's
resident size after a warm-up do not grow with the count. PURE_PY_MEMORY_MESSAGES sets the
count (default 1,000,000)."""
import asyncio
import os
import tracemalloc

import pure


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def test_memory_flat_over_many_messages(keys):
    priv, pub = keys
    n = int(os.environ.get("PURE_PY_MEMORY_MESSAGES", "1000000"))
    counted = 0

    async def sink(link):
        nonlocal counted
        async for _ in link:
            counted += 1

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"sink": sink},
                                allow_any=True) as server:
        link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="sink")
        msg = b"m" * 61
        warm = n // 10
        for _ in range(warm):
            await link.send(msg)
        while counted < warm:
            await asyncio.sleep(0.001)
        tracemalloc.start()
        snap0 = tracemalloc.take_snapshot()
        traced0, _ = tracemalloc.get_traced_memory()
        rss0 = rss_kib()
        for _ in range(n - warm):
            await link.send(msg)
        while counted < n:
            await asyncio.sleep(0.001)
        traced1, _ = tracemalloc.get_traced_memory()
        rss1 = rss_kib()
        tracemalloc.stop()
        await link.close()
    grew = traced1 - traced0
    print("messages %d: Python heap %+d bytes, RSS %d -> %d KiB (%+d KiB)"
          % (n, grew, rss0, rss1, rss1 - rss0))
    assert counted == n
    assert grew < 256 * 1024, "Python allocations grew by %d bytes" % grew
    if os.environ.get("PURE_PY_SKIP_RSS") != "1":  # set under ASan: its quarantine holds frees
        assert rss1 - rss0 < 16 * 1024, "RSS grew by %d KiB" % (rss1 - rss0)
