# SPDX-License-Identifier: MIT
"""The glue between one pure._core.Context and the asyncio loop: the UDP socket is watched with
``loop.add_reader`` (and ``add_writer`` only while a burst waits for room), the core's next
deadline is one ``loop.call_at`` handle, and each C call returns the links that changed in that
batch, so waiters are woken once per batch of datagrams, never once per message."""
from __future__ import annotations

import asyncio
from typing import Callable, Optional

from . import _core


class Driver:
    __slots__ = ("loop", "c", "_fd", "_timer", "_timer_at", "_writer", "on_accept", "links",
                 "on_idle", "_closed", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, private_key: bytes, bind: str, **kw):
        self.loop = loop
        self.c = _core.Context(private_key, bind, notify=self._kick, **kw)
        self._fd = self.c.fileno()
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timer_at: Optional[float] = None
        self._writer = False
        self._closed = False
        self.on_accept: Optional[Callable] = None  # called with each new accepted _core.Link
        self.on_idle: Optional[Callable] = None  # called when the last link closed
        self.links = 0  # Python-level links alive on this context
        loop.add_reader(self._fd, self._readable)

    # Every path in here ends in _after(): news to waiters, the writer, the timer.
    def _kick(self) -> None:
        """Called by the C half (once until the next batch) when sends or a close need a flush,
        or news came up outside a batch."""
        self.loop.call_soon(self._service)

    def _service(self) -> None:
        if not self._closed:
            self._after(self.c.service())

    def _readable(self) -> None:
        try:
            news = self.c.on_readable()
        except OSError as e:
            # The socket itself is broken (EBADF and the like, never one datagram's fate):
            # every link ends with ClosedError instead of the loop calling this forever.
            self.loop.call_exception_handler({"message": "pure: the UDP socket failed; closing "
                                              "its links", "exception": e})
            self.close()
            return
        self._after(news)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        if not self._closed:
            self._after(self.c.service())

    def _after(self, news) -> None:
        if news is not None:
            self._dispatch(news)
        if self._closed:
            return
        c = self.c
        if c.blocked != self._writer:
            self._writer = c.blocked
            if c.blocked:
                self.loop.add_writer(self._fd, self._service)
            else:
                self.loop.remove_writer(self._fd)
        d = c.deadline()
        # Re-arm only for an earlier deadline: a timer that fires early finds nothing due and
        # re-arms, which costs less than cancelling a handle per batch.
        if d is not None and (self._timer_at is None or d < self._timer_at):
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = d
            self._timer = self.loop.call_at(d, self._on_timer)

    def _dispatch(self, news) -> None:
        for cl in news:
            w = cl.owner
            if w is not None:
                w._wake()
            elif cl.accepted and self.on_accept is not None:
                self.on_accept(cl)
            elif cl.accepted:
                cl.abort(0x100, "not accepting")

    def drain(self) -> None:
        """pure_ctx_drain: the links close with 'moved' (their CLOSEs leave now), new ones are
        refused with it; the context runs on."""
        if not self._closed:
            self._after(self.c.drain())

    def close(self) -> None:
        """Frees the context (links still open close with ClosedError) and the socket."""
        if self._closed:
            return
        news = self.c.close()
        self._closed = True
        self.loop.remove_reader(self._fd)
        if self._writer:
            self.loop.remove_writer(self._fd)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if news is not None:
            self._dispatch(news)

    @property
    def closed(self) -> bool:
        return self._closed

    def link_gone(self) -> None:
        self.links -= 1
        if self.links == 0 and self.on_idle is not None:
            self.on_idle()
