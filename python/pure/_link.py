# SPDX-License-Identifier: MIT
"""pure.Link: one encrypted, reliable, ordered stream of whole messages each way, plus
channels (independent ordered streams of messages inside the link) and unreliable datagrams.

Shaped like asyncio's streams (``asyncio.StreamReader``/``StreamWriter``: ``send`` waits while the
backlog is full, as ``drain()`` does) and pyzmq's asyncio sockets (``await recv()``, whole
messages); channels take the shape of aioquic's streams as a user sees them (a number on each
message, no open or close) and its datagrams (``send_datagram``, no wait, no retry), with
``(channel, data)`` pairs where aioquic has events. No code is taken from any of them.
Received messages wait in queues in C (one per channel, one of datagrams); ``recv`` and
``async for`` pop them one by one without suspending while any are queued."""
from __future__ import annotations

import asyncio
from functools import partial
from typing import Any, AsyncIterator, Callable, Dict, List, NamedTuple, Optional, Union

from . import _core
from ._errors import ClosedError, Error, UnreachableError, error_for, BacklogFullError

Buffer = Union[bytes, bytearray, memoryview]

CLOSE_APP = 0x100  # application close codes start here (PURE_CLOSE_APP)
MAX_CHANNELS = _core.MAX_CHANNELS  # the most channels a link carries besides channel 0
URGENCY_MAX = _core.URGENCY_MAX  # set_priority's least urgent level (0 is the most)


class Message(NamedTuple):
    """A message of :meth:`Link.messages` and :meth:`Link.recv_any`: the channel it arrived
    on and its bytes. A tuple, so ``async for channel, data in link.messages()`` unpacks it."""
    channel: int
    data: bytes


class _Receiver:
    """The async iterator of :meth:`Link.messages` and :meth:`Link.datagrams`. A class rather
    than an async generator so that a task cancelled while waiting loses nothing (the pop
    happens only once the wait is over) and the end is a plain StopAsyncIteration."""

    __slots__ = ("_link", "_pop", "_wrap")

    def __init__(self, link: "Link", pop: Callable, wrap: Optional[Callable]) -> None:
        self._link = link
        self._pop = pop
        self._wrap = wrap

    def __aiter__(self) -> "_Receiver":
        return self

    async def __anext__(self):
        m = self._pop()
        if m is None:
            m = await self._link._recv_slow(True, self._pop)
        return self._wrap(m) if self._wrap is not None else m


class Link:
    """A link to a peer. Made by :func:`pure.connect` (client) or handed to a service handler
    by :func:`pure.serve` (server). Use ``async for msg in link`` or ``await link.recv()`` to
    receive, ``await link.send(msg)`` to send, ``await link.close()`` when done (or
    ``async with``)."""

    __slots__ = ("_d", "_c", "_waiters", "_gone", "__weakref__")

    def __init__(self, driver, clink: "_core.Link") -> None:
        self._d = driver
        self._c = clink
        self._waiters: List[Any] = []
        self._gone = False
        clink.owner = self
        driver.links += 1

    # ---- news from the driver ----
    def _wake(self) -> None:
        ws = self._waiters
        if ws:
            self._waiters = []
            for f in ws:
                if not f.done():
                    f.set_result(None)
        if self._c.closed and not self._gone:
            self._gone = True
            self._c.owner = None  # no more news can come: break the cycle
            self._d.link_gone()

    async def _wait(self) -> None:
        """Waits for the next news of this link. Cancelling it changes nothing in the link."""
        f = self._d.loop.create_future()
        self._waiters.append(f)
        try:
            await f
        finally:
            if not f.done():
                f.cancel()
                try:
                    self._waiters.remove(f)
                except ValueError:
                    pass

    def _error(self) -> Error:
        c = self._c
        if c.closed:
            err = c.close_error or _core.ECLOSED
            msg = None
            if err == _core.ETIMEDOUT and not c.established:
                return UnreachableError(err, "no answer from the server within the handshake "
                                        "timeout (is it running there, on that port and address "
                                        "family?)", unacked=range(c.first_unacked, c.next_id))
            if c.close_error == 0:
                msg = "the link is closed"
                if c.peer_code or c.reason:
                    msg += " (peer: code %d, %r)" % (c.peer_code, c.reason)
            elif c.reason:
                msg = "%s (peer: %r)" % (_core.strerror(err), c.reason)
            chans = {ch: range(f, n) for ch, (f, n) in (c.chan_unacked or {}).items()}
            return error_for(err, msg, unacked=range(c.first_unacked, c.next_id),
                             peer_code=c.peer_code, reason=c.reason or "",
                             channel_unacked=chans)
        return ClosedError(_core.ECLOSED, "the peer finished its stream")

    # ---- receiving ----
    async def recv(self, channel: int = 0) -> bytes:
        """The next whole message of ``channel`` (default 0, the link's own stream), in its
        sender's order. Raises :class:`ClosedError` (or the error that ended the link) once
        the peer finished or the link closed and every message of that channel was received;
        :class:`ChannelError` for a channel above this side's ``max_channels``. A task
        cancelled here loses nothing: the message stays queued for the next call."""
        if channel:
            pop = partial(self._c.pop_on, channel)
            m = pop()
            if m is not None:
                return m
            return await self._recv_slow(False, pop)
        m = self._c.pop()
        if m is not None:
            return m
        return await self._recv_slow(False)

    def __aiter__(self) -> "Link":
        return self

    async def __anext__(self) -> bytes:
        """``async for msg in link``: each message of channel 0 in order; ends when the peer
        finishes its stream or closes the link gracefully, raises if the link died with an
        error. :meth:`messages` gives every channel's."""
        m = self._c.pop()
        if m is not None:
            return m
        return await self._recv_slow(True)

    async def _recv_slow(self, iterating: bool, pop: Optional[Callable] = None):
        c = self._c
        if pop is None:
            pop = c.pop
        while True:
            m = pop()
            if m is not None:
                return m
            # Every channel's messages, and datagrams, end with the peer's stream: its close()
            # has its channels' messages acknowledged before it ends the stream (see close()).
            if c.closed or c.peer_finished:
                if iterating and (c.peer_finished or c.close_error == 0):
                    raise StopAsyncIteration
                raise self._error()
            await self._wait()

    def recv_nowait(self, channel: int = 0) -> Optional[bytes]:
        """The next message of ``channel`` if one is queued, else None (raises once the stream
        has ended)."""
        m = self._c.pop_on(channel) if channel else self._c.pop()
        if m is None and (self._c.closed or self._c.peer_finished):
            raise self._error()
        return m

    async def recv_any(self) -> Message:
        """The next message of any channel (0 included), as ``Message(channel, data)``: the
        one that arrived first of those waiting, so a small message on one channel never waits
        here behind bulk queued on another. Ends as :meth:`recv` does."""
        m = self._c.pop_any()
        if m is None:
            m = await self._recv_slow(False, self._c.pop_any)
        return Message._make(m)

    def messages(self) -> AsyncIterator[Message]:
        """``async for channel, data in link.messages()``: every channel's messages (0
        included) as :class:`Message` pairs, each channel's in its sender's order, channels
        interleaved in the order their messages arrived. Ends as ``async for msg in link``
        does (the peer finished or closed gracefully, and everything was read)."""
        return _Receiver(self, self._c.pop_any, Message._make)

    # ---- sending ----
    def _send_error(self) -> Error:
        # ECLOSED from an open link: this side ended it (the peer's end stops nothing here)
        if not self._c.closed:
            return ClosedError(_core.ECLOSED, "this side finished its stream or is closing "
                               "(finish() or close()): nothing more can be sent")
        return self._error()

    async def send(self, msg: Buffer, channel: int = 0) -> int:
        """Accepts one message (bytes-like; copied once, into the link's send buffer) for
        ``channel`` (default 0; 1 up to :attr:`max_channel` are independent ordered streams:
        a loss or a bulk transfer on one never holds up another) and returns its id (0, 1, 2,
        ... on that channel). Waits while that channel's backlog is full (each channel has
        its own ``send_backlog`` and ``send_queue``). Raises :class:`ClosedError` (or the
        error that ended the link), :class:`MessageTooBigError`, or :class:`ChannelError` for
        a channel above :attr:`max_channel`. A task cancelled while waiting here did not
        send."""
        try:
            r = self._c.send_on(channel, msg) if channel else self._c.send(msg)
        except ClosedError:
            raise self._send_error() from None
        if r is not None:
            return r
        return await self._send_slow(msg, channel)

    async def _send_slow(self, msg: Buffer, channel: int = 0) -> int:
        while True:
            await self._wait()
            try:
                r = self._c.send_on(channel, msg) if channel else self._c.send(msg)
            except ClosedError:
                raise self._send_error() from None
            if r is not None:
                return r

    def send_nowait(self, msg: Buffer, channel: int = 0) -> int:
        """Accepts one message for ``channel`` now, or raises :class:`BacklogFullError` if that
        channel's backlog is full."""
        try:
            r = self._c.send_on(channel, msg) if channel else self._c.send(msg)
        except ClosedError:
            raise self._send_error() from None
        if r is None:
            raise BacklogFullError(_core.EAGAIN, "channel %d's backlog is full: await send() "
                                   "instead" % channel if channel else None)
        return r

    def set_priority(self, channel: int, urgency: int, incremental: bool = True) -> None:
        """How this side's packets share out its channels (channel 0 included), at any time:
        ``urgency`` 0 (most urgent) to 7, strictly (while a more urgent channel has data to
        send, a less urgent one sends nothing; every channel starts at 3, as in RFC 9218);
        among channels of one urgency, ``incremental`` ones take turns packet by packet, and a
        non-incremental one goes alone until it has nothing left. Raises
        :class:`ChannelError` (a channel above this side's ``max_channels``), ``ValueError``
        (urgency), ``TypeError``, or :class:`ClosedError`."""
        self._c.set_priority(channel, urgency, incremental)

    def unacked(self, channel: int = 0) -> range:
        """The ids of ``channel``'s messages the peer has not acknowledged yet (after the link
        closed: never acknowledged, as the errors' ``unacked`` and ``channel_unacked``)."""
        first, nxt = self._c.unacked(channel)
        return range(first, nxt)

    # ---- datagrams ----
    def send_datagram(self, data: Buffer) -> None:
        """Sends one unreliable datagram (bytes-like, at most :attr:`datagram_max` bytes):
        sent once in one packet, congestion-controlled with everything else, never
        retransmitted; the peer gets it whole or not at all, at most once, in no order with
        messages or other datagrams. Does not wait. Raises :class:`DatagramTooBigError`
        (larger than :attr:`datagram_max`, or the link takes none), :class:`BacklogFullError`
        (64 KiB of datagrams already wait for the congestion window) or
        :class:`ClosedError`. ``stats()`` counts what became of them."""
        try:
            self._c.send_datagram(data)
        except ClosedError:
            raise self._error() if self._c.closed else ClosedError(
                _core.ECLOSED, "the link is closing: no more datagrams") from None

    async def recv_datagram(self) -> bytes:
        """The next datagram from the peer. Raises :class:`ClosedError` (or the error that
        ended the link) once the peer finished its stream (``finish()``, ``close()``) or the
        link closed, and every datagram that came was read. Datagrams the
        program does not read in time wait up to ``datagram_queue`` bytes (1 MiB); past it
        the oldest are dropped, counted in ``stats()["datagrams_overflowed"]``."""
        m = self._c.pop_datagram()
        if m is not None:
            return m
        return await self._recv_slow(False, self._c.pop_datagram)

    def recv_datagram_nowait(self) -> Optional[bytes]:
        """The next datagram if one waits, else None (raises once the peer's stream ended)."""
        m = self._c.pop_datagram()
        if m is None and (self._c.closed or self._c.peer_finished):
            raise self._error()
        return m

    def datagrams(self) -> AsyncIterator[bytes]:
        """``async for data in link.datagrams()``: each datagram as it arrives, until the peer
        finishes its stream or closes the link (gracefully: the loop ends; with an error: it
        raises)."""
        return _Receiver(self, self._c.pop_datagram, None)

    def finish(self) -> None:
        """Ends this side's stream: the peer's ``async for`` ends after the messages sent so far
        on channel 0, and nothing more can be sent on any channel. Messages from the peer still
        arrive. The end is channel 0's and not ordered with other channels' messages: after
        sending on other channels, ``await close()`` (which waits until the peer acknowledged
        them before it ends the stream)."""
        try:
            self._c.finish()
        except ClosedError:
            raise self._error() from None

    # ---- closing ----
    async def close(self, code: int = 0, reason: str = "", *, linger: float = 2.0) -> None:
        """Closes gracefully: ends this side's stream (as :meth:`finish`), waits until the peer
        acknowledged every message sent and ended its own stream (at most ``linger`` seconds
        for the latter), then tells it (``code``: 0, or an application code from 0x100;
        ``reason``: up to 47 bytes). Messages sent on channels other than 0 are acknowledged
        before the stream ends, so the peer's ``messages()`` ends after them. Raises the error
        that ended the link if messages were lost (its ``unacked`` and ``channel_unacked`` say
        which). Cancelling the wait leaves the close running."""
        c = self._c
        if not c.closed and not code and c.channels_unacked():
            await self._channels_acked(2 * linger)
        if not c.closed and not code:
            # End our stream first, and close only once the peer has acknowledged the end
            # (bytes in flight back to 0): pure_link_close sends its CLOSE as soon as every
            # message is acknowledged, and a CLOSE that overtakes the end of the stream makes
            # a peer that waits for that end (`pure send`) report an early close. That ACK
            # completes no message, so no callback tells of it: poll each millisecond.
            c.finish()
            loop = self._d.loop
            end = loop.time() + linger
            await asyncio.sleep(0)  # the end of the stream goes out with this turn's flush
            while not c.closed:
                done = c.backlog == 0 and c.in_flight == 0
                if done and (c.peer_finished or loop.time() >= end):
                    break
                if loop.time() >= end + linger:
                    break  # the peer is not acknowledging: the close below times out
                await asyncio.sleep(0.001)
        if not c.closed:
            c.close(code, reason)
            while not c.closed:
                await self._wait()
        if c.close_error and c.close_error != _core.ECLOSED and c.first_unacked != c.next_id:
            raise self._error()

    async def _channels_acked(self, patience: float) -> None:
        """Waits until the peer acknowledged every message sent on channels 1 and up, as long
        as it acknowledges some within ``patience`` seconds. The end of the stream (FIN) is
        channel 0's and not ordered with other channels: sent before they are acknowledged, it
        could reach the peer first and end its ``messages()`` early (``pure send --channel``
        waits the same way). Polled each millisecond, as close() polls its own end below."""
        c = self._c
        loop = self._d.loop
        left = c.channels_unacked()
        end = loop.time() + patience
        while left and not c.closed:
            await asyncio.sleep(0.001)
            n = c.channels_unacked()
            if n < left:
                left, end = n, loop.time() + patience
            elif loop.time() >= end:
                break  # the peer is not acknowledging: the close below times out

    def abort(self, code: int = 0, reason: str = "") -> None:
        """Closes at once: messages not yet acknowledged are dropped, the peer is told."""
        self._c.abort(code, reason)

    async def wait_closed(self) -> None:
        """Waits until the link is closed (by either side)."""
        while not self._c.closed:
            await self._wait()

    async def __aenter__(self) -> "Link":
        return self

    async def __aexit__(self, et, ev, tb) -> None:
        if et is None:
            await self.close()
        else:
            self.abort(CLOSE_APP, "error")

    # ---- state ----
    @property
    def closed(self) -> bool:
        """True once the link is closed (nothing more arrives)."""
        return bool(self._c.closed)

    @property
    def peer_key(self) -> bytes:
        """The peer's static public key (32 bytes): for a server, the client's key."""
        return self._c.peer_key

    @property
    def service(self) -> str:
        """The service this link was opened for."""
        return self._c.service

    @property
    def peer_address(self) -> Optional[str]:
        """The peer's current address, ``HOST:PORT`` (None once closed)."""
        return self._c.peer_addr

    @property
    def backlog(self) -> int:
        """Bytes sent on channel 0 and not yet acknowledged by the peer."""
        return self._c.backlog

    @property
    def max_channel(self) -> int:
        """The highest channel :meth:`send` takes: the smaller of ``max_channels`` here and at
        the peer (0 from a peer that takes none; before the handshake completed, this side's)."""
        return self._c.max_channel

    @property
    def datagram_max(self) -> int:
        """The largest datagram :meth:`send_datagram` takes now, in bytes: what one packet
        holds on this path (1169 at first; more once the path MTU search finds more), within
        both sides' ``max_datagram_size``; 0 if either takes none."""
        return self._c.datagram_max

    def stats(self) -> Dict[str, int]:
        """The link's counters (RTT, cwnd, packets, bytes, losses, messages, queue) as a dict;
        once closed, as they were when it closed (the datagram counters then account for
        every datagram sent: ``datagrams_sent + datagrams_dropped`` is all that were queued).
        Channels and datagrams: ``max_channel``, ``datagram_max``,
        ``datagrams_sent``, ``datagrams_received``, ``datagrams_lost`` (in a packet declared
        lost), ``datagrams_dropped`` (never sent: too large after the path shrank, or queued
        at close), ``datagrams_queued`` (received, waiting for ``recv_datagram``) and
        ``datagrams_overflowed`` (received and dropped here: ``datagram_queue`` was full)."""
        return self._c.stats()

    def context_stats(self) -> Dict[str, int]:
        """The counters of the context (and UDP socket) this link belongs to: links,
        handshakes, datagrams in and out, drops, system calls (a client's links of one loop
        and key share one context)."""
        return self._d.c.stats()

    def __repr__(self) -> str:
        state = "closed" if self._c.closed else "open"
        return "<pure.Link %s service=%r peer=%s>" % (state, self._c.service, self._c.peer_addr)
