# SPDX-License-Identifier: MIT
"""Channels, priorities and datagrams (docs/channels.md) through the package, over real
loopback links: each channel in order and named at the receiver, a bulk channel not holding up
a small one, per-channel backpressure, priorities, the close that waits for other channels,
datagrams, and the errors."""
import asyncio

import pytest

import pure

async def chan_echo(link):
    """Answers each message on the channel it came on."""
    async for ch, msg in link.messages():
        await link.send(msg, channel=ch)


def serve(priv, handler, **kw):
    return pure.serve("127.0.0.1:0", private_key=priv, services={"s": handler}, allow_any=True,
                      **kw)


async def connect(server, pub, **kw):
    return await pure.connect(f"127.0.0.1:{server.port}", server_key=pub, service="s", **kw)


async def test_each_channel_in_order_and_named(keys):
    """Messages on channels 0, 1 and 2 interleaved, some of several packets: the server sees
    each channel's in order with the right channel number, and the echoes come back on their
    channels to per-channel receivers running at once."""
    priv, pub = keys
    seen = {}

    async def record(link):
        async for m in link.messages():
            assert isinstance(m, pure.Message) and m.channel == m[0] and m.data == m[1]
            seen.setdefault(m.channel, []).append(m.data)
            await link.send(m.data, channel=m.channel)

    n = 60
    want = {ch: [b"%d:%d:" % (ch, i) + b"x" * (i * 997 % 5000) for i in range(n)]
            for ch in (0, 1, 2)}
    async with await serve(priv, record) as server:
        link = await connect(server, pub)
        assert link.max_channel == 16 and link.datagram_max > 0
        for i in range(n):
            for ch in (2, 0, 1):
                assert await link.send(want[ch][i], channel=ch) == i  # ids count per channel

        async def take(ch):
            return [await asyncio.wait_for(link.recv(channel=ch), 10) for _ in range(n)]

        got = await asyncio.gather(take(0), take(1), take(2))
        assert got == [want[0], want[1], want[2]]
        await link.close()
    assert seen == want


async def test_recv_any_and_nowait(keys):
    priv, pub = keys
    async with await serve(priv, chan_echo) as server:
        async with await connect(server, pub) as link:
            await link.send(b"a", channel=5)
            m = await asyncio.wait_for(link.recv_any(), 10)
            assert m == (5, b"a") and m.channel == 5 and m.data == b"a"
            assert link.recv_nowait(channel=5) is None and link.recv_nowait() is None
            await link.send(b"b", channel=7)
            await link.send(b"c")
            got = {await asyncio.wait_for(link.recv_any(), 10) for _ in range(2)}
            assert got == {(7, b"b"), (0, b"c")}


async def arrival_index(keys, priorities, bulk_messages=64, size=65536):
    """Queues bulk_messages x size bytes on channel 1 and then one small message on channel 2
    in the same turn of the loop (nothing has left yet), and returns where the small one came
    among the server's arrivals, and how many arrived."""
    priv, pub = keys
    order = []
    done = asyncio.Event()

    async def sink(link):
        async for ch, _ in link.messages():
            order.append(ch)
            if len(order) == bulk_messages + 1:
                done.set()

    async with await serve(priv, sink, max_queue=64 << 20) as server:
        link = await connect(server, pub, send_queue=0)  # only send_backlog (8 MiB) limits
        for ch, urgency, incremental in priorities:
            link.set_priority(ch, urgency, incremental)
        bulk = b"b" * size
        for _ in range(bulk_messages):
            link.send_nowait(bulk, channel=1)
        link.send_nowait(b"small", channel=2)
        await asyncio.wait_for(done.wait(), 30)
        await link.close()
    assert sorted(order) == [1] * bulk_messages + [2]
    return order.index(2)


async def test_bulk_channel_does_not_hold_up_a_small_one(keys):
    # 4 MiB of bulk on channel 1 queued first: with the bulk less urgent, the small message
    # goes in the first packet; each bulk message needs ~55 packets
    assert await arrival_index(keys, [(1, 6, True)]) == 0
    # no priorities set (both urgency 3, incremental): they take turns, so it still comes
    # before the first bulk message is whole. On one stream it would come last (index 64).
    assert await arrival_index(keys, []) <= 1


async def test_priorities_order_the_channels(keys):
    # the bulk made the most urgent and alone (not incremental), the small one the least:
    # strict priority sends nothing of channel 2 while channel 1 has data it may send, so it
    # comes after the bulk (after most of it, if a packet of the bulk was lost and resent).
    # 512 KiB of bulk: within the receiver's first credit (1 MiB), past which channel 1 would
    # have nothing it may send and channel 2 would go.
    assert await arrival_index(keys, [(1, 0, False), (2, 7, True)], 16, 32768) >= 12
    # the same bulk at the default priority: they take turns
    assert await arrival_index(keys, [], 16, 32768) <= 1


async def test_priority_validation(keys):
    priv, pub = keys
    async with await serve(priv, chan_echo) as server:
        link = await connect(server, pub, max_channels=8)
        link.set_priority(0, 0)  # channel 0 too
        link.set_priority(8, 7, False)
        link.set_priority(3, 2, incremental=False)
        with pytest.raises(pure.ChannelError) as ei:
            link.set_priority(9, 1)
        assert ei.value.name == "PURE_EINVAL" and "max_channels, 8" in str(ei.value)
        assert isinstance(ei.value, ValueError) and isinstance(ei.value, pure.Error)
        with pytest.raises(pure.ChannelError):
            link.set_priority(-1, 1)
        for bad in (8, -1, 100):
            with pytest.raises(ValueError, match="urgency must be 0"):
                link.set_priority(1, bad)
        with pytest.raises(TypeError):
            link.set_priority("1", 1)
        with pytest.raises(TypeError):
            link.set_priority(1, 1.5)
        await link.close()
        with pytest.raises(pure.ClosedError):
            link.set_priority(1, 1)


async def test_channel_backpressure_is_per_channel(keys):
    """A channel whose backlog is full refuses (send_nowait) or waits (send) alone: the other
    channels still take messages at once, and the waiting send goes on once it drains."""
    priv, pub = keys
    counts = {}

    async def sink(link):
        async for ch, _ in link.messages():
            counts[ch] = counts.get(ch, 0) + 1

    async with await serve(priv, sink) as server:
        link = await connect(server, pub, send_queue=65536)
        ids = []
        with pytest.raises(pure.BacklogFullError) as ei:
            for _ in range(100000):
                ids.append(link.send_nowait(b"y" * 1000, channel=1))
        assert "channel 1" in str(ei.value) and ei.value.name == "PURE_EAGAIN"
        assert ids == list(range(len(ids))) and 10 < len(ids) < 1000
        assert link.send_nowait(b"free", channel=2) == 0  # its own backlog
        assert link.send_nowait(b"free") == 0  # and channel 0's
        with pytest.raises(pure.BacklogFullError):
            link.send_nowait(b"y", channel=1)
        # send() waits for channel 1's room, and goes on once it drains
        assert await asyncio.wait_for(link.send(b"z", channel=1), 10) == len(ids)
        await link.close()
    assert counts == {0: 1, 1: len(ids) + 1, 2: 1}


async def test_close_waits_for_other_channels(keys):
    """close() right after a bulk send on channel 3: the end of the stream (channel 0's) is
    sent only once channel 3's messages were acknowledged, so the server's messages() sees
    every one before it ends (the end overtook them when close() ended the stream first)."""
    priv, pub = keys
    got = []
    ended = asyncio.Event()

    async def sink(link):
        async for ch, m in link.messages():
            got.append((ch, len(m)))
        ended.set()

    async with await serve(priv, sink) as server:
        link = await connect(server, pub, send_queue=0)
        for _ in range(32):
            link.send_nowait(b"q" * 65536, channel=3)
        await link.close()
        await asyncio.wait_for(ended.wait(), 10)
    assert got == [(3, 65536)] * 32


async def test_bad_channels(keys):
    priv, pub = keys
    server_side = asyncio.get_running_loop().create_future()

    async def probe(link):
        try:
            await link.send(b"x", channel=3)  # the client takes only 2
        except pure.ChannelError as e:
            server_side.set_result((link.max_channel, str(e)))
        async for _ in link:
            pass

    async with await serve(priv, probe) as server:
        link = await connect(server, pub, max_channels=2, max_message_size=1000)
        assert link.max_channel == 2
        assert await asyncio.wait_for(server_side, 10) == (
            2, "channel 3 is above this link's highest channel, 2 (the smaller of max_channels "
            "here, 16, and at the peer)")
        await link.send(b"ok", channel=2)
        for bad in (3, 255, 256, 2 ** 40, -1):
            with pytest.raises(pure.ChannelError) as ei:
                await link.send(b"x", channel=bad)
            assert ei.value.name == "PURE_EINVAL" and isinstance(ei.value, ValueError)
            with pytest.raises(pure.ChannelError):
                link.send_nowait(b"x", channel=bad)
        with pytest.raises(TypeError):
            await link.send(b"x", channel="1")
        with pytest.raises(pure.ChannelError, match="max_channels, 2: nothing can arrive"):
            await link.recv(channel=3)
        with pytest.raises(pure.ChannelError):
            link.recv_nowait(channel=-2)
        with pytest.raises(pure.MessageTooBigError):
            await link.send(b"x" * 2000, channel=1)  # over max_message_size
        link.finish()
        with pytest.raises(pure.ClosedError, match="this side finished"):
            await link.send(b"x", channel=1)
        await link.close()
        with pytest.raises(pure.ClosedError):
            await link.send(b"x", channel=1)
        with pytest.raises(pure.ClosedError):
            await link.recv(channel=1)
    with pytest.raises(ValueError, match="max_channels must be 0 to 255"):
        await pure.connect("127.0.0.1:1", server_key=pub, service="s", max_channels=256)


async def test_peer_without_channels(keys):
    """A peer with max_channels 0 takes none: every channel but 0 is refused, channel 0 works."""
    priv, pub = keys
    async with await serve(priv, chan_echo, max_channels=0) as server:
        async with await connect(server, pub) as link:
            assert link.max_channel == 0
            with pytest.raises(pure.ChannelError, match="highest channel, 0"):
                await link.send(b"x", channel=1)
            await link.send(b"zero")
            assert await asyncio.wait_for(link.recv(), 10) == b"zero"


async def test_unacked_per_channel_when_the_peer_aborts(keys):
    """The server reads one message of channel 3 and aborts: the client's error and
    unacked(3) name exactly the ids the server's Pure never delivered."""
    priv, pub = keys

    async def one_then_abort(link):
        await link.recv(channel=3)
        link.abort(pure.CLOSE_APP + 1, "enough")

    big = b"m" * (512 << 10)
    err = None
    async with await serve(priv, one_then_abort, max_queue=1) as server:
        link = await connect(server, pub)
        ids = []
        try:
            for _ in range(10):
                ids.append(await link.send(big, channel=3))
            await asyncio.wait_for(link.wait_closed(), 10)
        except pure.ResetError as e:
            err = e
        await asyncio.wait_for(link.wait_closed(), 10)
    r = link.unacked(3)
    # max_queue=1 paused the server after its first message: credit for ~1 MiB more at most,
    # so some of the messages accepted were never delivered
    assert ids == list(range(len(ids))) and r.stop == len(ids) and 1 <= r.start < r.stop <= 10
    assert link.unacked(0) == range(0, 0)
    # the sends stopped at the withheld credit: the abort reached one of them
    assert err is not None
    assert err.channel_unacked == {3: r} and err.peer_code == pure.CLOSE_APP + 1
    assert "channel 3: messages %d..%d not acknowledged" % (r.start, r.stop - 1) in str(err)


async def test_datagrams(keys):
    priv, pub = keys
    got = []

    async def dgram_echo(link):
        async for d in link.datagrams():  # ends when the client closes
            got.append(d)
            link.send_datagram(d[::-1])

    async with await serve(priv, dgram_echo) as server:
        link = await connect(server, pub)
        assert link.datagram_max == 1169  # one 1200-byte packet before the MTU search
        sent = [b"d%d" % i for i in range(10)] + [b"", bytes(link.datagram_max)]
        for d in sent:
            link.send_datagram(d)
        back = [await asyncio.wait_for(link.recv_datagram(), 10) for _ in sent]
        assert sorted(back) == sorted(d[::-1] for d in sent)  # loopback loses none
        assert link.recv_datagram_nowait() is None
        st = link.stats()
        assert st["datagrams_sent"] == len(sent) and st["datagrams_received"] == len(sent)
        assert st["datagrams_lost"] == 0 and st["datagrams_dropped"] == 0
        assert st["datagram_max"] == link.datagram_max and st["max_channel"] == 16
        # too big: nothing sent, a clear error that is also a MessageTooBigError/ValueError
        dmax = link.datagram_max  # 1169, or more if the path MTU search ran meanwhile
        with pytest.raises(pure.DatagramTooBigError) as ei:
            link.send_datagram(bytes(dmax + 1))
        assert isinstance(ei.value, pure.MessageTooBigError) and isinstance(ei.value, ValueError)
        assert ei.value.name == "PURE_EMSGSIZE"
        assert "datagram of %d bytes is larger than this link's datagram_max, %d bytes" % (
            dmax + 1, dmax) in str(ei.value)
        assert link.stats()["datagrams_sent"] == len(sent)
        await link.close()
        st = link.stats()  # closed: the counters as they were when it closed (was: {})
        assert st["datagrams_sent"] == len(sent) and st["datagrams_received"] == len(sent)
        assert st["packets_sent"] > 0 and st["rtt_ns"] > 0
        with pytest.raises(pure.ClosedError):
            link.send_datagram(b"late")
        with pytest.raises(pure.ClosedError):
            await link.recv_datagram()
    assert sorted(got) == sorted(sent)


async def test_datagram_stats_at_abort(keys):
    """Datagrams still queued when the link ends are counted dropped, and stats() keeps the
    counters after the close: sent + dropped is every datagram queued."""
    priv, pub = keys
    async with await serve(priv, chan_echo) as server:
        link = await connect(server, pub)
        for _ in range(12):
            link.send_datagram(bytes(1000))
        link.abort()  # before the loop has sent them
        st = link.stats()
        assert st["datagrams_sent"] + st["datagrams_dropped"] == 12
        assert st["datagrams_dropped"] > 0


async def test_datagram_limits(keys):
    priv, pub = keys
    async with await serve(priv, chan_echo, max_datagram_size=100) as server:
        async with await connect(server, pub) as link:
            assert link.datagram_max == 100  # the peer's limit
            link.send_datagram(bytes(100))
            with pytest.raises(pure.DatagramTooBigError):
                link.send_datagram(bytes(101))
    async with await serve(priv, chan_echo, max_datagram_size=0) as server:
        async with await connect(server, pub) as link:
            assert link.datagram_max == 0
            with pytest.raises(pure.DatagramTooBigError, match="takes no datagrams"):
                link.send_datagram(b"")
    with pytest.raises(ValueError, match="max_datagram_size"):
        await pure.connect("127.0.0.1:1", server_key=pub, service="s", max_datagram_size=70000)
    with pytest.raises(ValueError, match="datagram_queue"):
        await pure.serve("127.0.0.1:0", private_key=priv, services={"s": chan_echo},
                         allow_any=True, datagram_queue=-1)


async def test_unread_datagrams_keep_the_newest(keys):
    """A reader that falls behind keeps the newest datagram_queue bytes; the oldest are
    dropped here and counted."""
    priv, pub = keys
    held = asyncio.get_running_loop().create_future()

    async def slow(link):
        while link.stats().get("datagrams_received", 0) < 20:
            await asyncio.sleep(0.005)
        st = link.stats()
        held.set_result((st, [link.recv_datagram_nowait() for _ in range(st["datagrams_queued"])]))
        async for _ in link:
            pass

    async with await serve(priv, slow, datagram_queue=1000) as server:
        async with await connect(server, pub) as link:
            for i in range(20):
                link.send_datagram(b"%03d" % i + bytes(97))
            st, kept = await asyncio.wait_for(held, 10)
    assert len(kept) == 10 and st["datagrams_overflowed"] == 10
    assert [k[:3] for k in kept] == [b"%03d" % i for i in range(10, 20)]


async def test_cancelled_channel_receives_lose_nothing(keys):
    """A task cancelled in recv(channel=N), recv_any or recv_datagram takes nothing: the
    message stays queued for the next call."""
    priv, pub = keys
    async with await serve(priv, chan_echo) as server:
        async with await connect(server, pub) as link:
            for call in (lambda: link.recv(channel=4), link.recv_any, link.recv_datagram):
                t = asyncio.ensure_future(call())
                await asyncio.sleep(0.01)  # waiting: nothing has come
                t.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await t
            await link.send(b"four", channel=4)
            assert await asyncio.wait_for(link.recv(channel=4), 10) == b"four"
            await link.send(b"four again", channel=4)
            assert await asyncio.wait_for(link.recv_any(), 10) == (4, b"four again")
