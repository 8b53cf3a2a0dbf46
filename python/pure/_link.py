# SPDX-License-Identifier: MIT
"""pure.Link: one encrypted, reliable, ordered stream of whole messages each way.

Shaped like asyncio's streams (``asyncio.StreamReader``/``StreamWriter``: ``send`` waits while the
backlog is full, as ``drain()`` does) and pyzmq's asyncio sockets (``await recv()``, whole
messages); no code is taken from either. Received messages wait in a queue in C; ``recv`` and
``async for`` pop them one by one without suspending while any are queued."""
from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional, Union

from . import _core
from ._errors import ClosedError, Error, UnreachableError, error_for, BacklogFullError

Buffer = Union[bytes, bytearray, memoryview]

CLOSE_APP = 0x100  # application close codes start here (PURE_CLOSE_APP)


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
            return error_for(err, msg, unacked=range(c.first_unacked, c.next_id),
                             peer_code=c.peer_code, reason=c.reason or "")
        return ClosedError(_core.ECLOSED, "the peer finished its stream")

    # ---- receiving ----
    async def recv(self) -> bytes:
        """The next whole message. Raises :class:`ClosedError` (or the error that ended the
        link) once the peer finished or the link closed and every message was received.
        A task cancelled here loses nothing: the message stays queued for the next call."""
        m = self._c.pop()
        if m is not None:
            return m
        return await self._recv_slow(False)

    def __aiter__(self) -> "Link":
        return self

    async def __anext__(self) -> bytes:
        """``async for msg in link``: each message in order; ends when the peer finishes its
        stream or closes the link gracefully, raises if the link died with an error."""
        m = self._c.pop()
        if m is not None:
            return m
        return await self._recv_slow(True)

    async def _recv_slow(self, iterating: bool) -> bytes:
        c = self._c
        while True:
            m = c.pop()
            if m is not None:
                return m
            if c.closed or c.peer_finished:
                if iterating and (c.peer_finished or c.close_error == 0):
                    raise StopAsyncIteration
                raise self._error()
            await self._wait()

    def recv_nowait(self) -> Optional[bytes]:
        """The next message if one is queued, else None (raises once the stream has ended)."""
        m = self._c.pop()
        if m is None and (self._c.closed or self._c.peer_finished):
            raise self._error()
        return m

    # ---- sending ----
    async def send(self, msg: Buffer) -> int:
        """Accepts one message (bytes-like; copied once, into the link's send buffer) and
        returns its id (0, 1, 2, ... on this link). Waits while the link's backlog is full.
        Raises :class:`ClosedError` (or the error that ended the link), or
        :class:`MessageTooBigError`. A task cancelled while waiting here did not send."""
        try:
            r = self._c.send(msg)
        except ClosedError:
            raise self._error() from None
        if r is not None:
            return r
        return await self._send_slow(msg)

    async def _send_slow(self, msg: Buffer) -> int:
        while True:
            await self._wait()
            try:
                r = self._c.send(msg)
            except ClosedError:
                raise self._error() from None
            if r is not None:
                return r

    def send_nowait(self, msg: Buffer) -> int:
        """Accepts one message now, or raises :class:`BacklogFullError` if the backlog is full."""
        try:
            r = self._c.send(msg)
        except ClosedError:
            raise self._error() from None
        if r is None:
            raise BacklogFullError(_core.EAGAIN)
        return r

    def finish(self) -> None:
        """Ends this side's stream: the peer's ``async for`` ends after the messages sent so far.
        Messages from the peer still arrive."""
        try:
            self._c.finish()
        except ClosedError:
            raise self._error() from None

    # ---- closing ----
    async def close(self, code: int = 0, reason: str = "", *, linger: float = 2.0) -> None:
        """Closes gracefully: ends this side's stream (as :meth:`finish`), waits until the peer
        acknowledged every message sent and ended its own stream (at most ``linger`` seconds
        for the latter), then tells it (``code``: 0, or an application code from 0x100;
        ``reason``: up to 47 bytes). Raises the error that ended the link if messages were
        lost (its ``unacked`` says which). Cancelling the wait leaves the close running."""
        c = self._c
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
        """Bytes sent and not yet acknowledged by the peer."""
        return self._c.backlog

    def stats(self) -> Dict[str, int]:
        """The link's counters (RTT, cwnd, packets, bytes, losses, messages, queue) as a dict;
        empty once closed."""
        return self._c.stats()

    def context_stats(self) -> Dict[str, int]:
        """The counters of the context (and UDP socket) this link belongs to: links,
        handshakes, datagrams in and out, drops, system calls (a client's links of one loop
        and key share one context)."""
        return self._d.c.stats()

    def __repr__(self) -> str:
        state = "closed" if self._c.closed else "open"
        return "<pure.Link %s service=%r peer=%s>" % (state, self._c.service, self._c.peer_addr)
