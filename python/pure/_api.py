# SPDX-License-Identifier: MIT
"""pure.connect and pure.serve, shaped like asyncio.open_connection/start_server."""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from typing import Any, Awaitable, Callable, Dict, Iterable, Optional, Set, Tuple

from . import _core
from ._driver import Driver
from ._errors import ClosedError, Error
from ._keys import KeyLike, keygen, parse_private, parse_public
from ._link import CLOSE_APP, Link

log = logging.getLogger("pure")

Handler = Callable[[Link], Awaitable[Any]]


async def _resolve(address: str, loop) -> str:
    """HOST:PORT with a numeric host, resolving a name (``localhost:4433``) if need be."""
    if not isinstance(address, str) or ":" not in address:
        raise ValueError("address must be 'HOST:PORT', got %r" % (address,))
    host, _, port = address.rpartition(":")
    h = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        infos = await loop.getaddrinfo(h, int(port), type=socket.SOCK_DGRAM)
        if not infos:
            raise ValueError("cannot resolve %r" % host) from None
        ip = ipaddress.ip_address(infos[0][4][0])
    return ("[%s]:%s" if ip.version == 6 else "%s:%s") % (ip, port)


def _settings(kw: Dict[str, Any]) -> Dict[str, Any]:
    allowed = {"max_queue", "idle_timeout", "keepalive", "max_message_size", "send_backlog",
               "send_queue", "respond_to_unknown", "max_channels", "max_datagram_size",
               "datagram_queue"}
    bad = set(kw) - allowed
    if bad:
        raise TypeError("unknown settings: %s" % ", ".join(sorted(bad)))
    return kw


# One client context (socket) per loop, private key, address family and handshake timeout,
# shared by every link that matches: 1,000 links are one socket, not 1,000. It closes when its
# last link does.
_clients: Dict[Tuple, Driver] = {}


def _client_driver(loop, priv: Optional[bytes], v6: bool, timeout: float, kw) -> Driver:
    key = (id(loop), priv, v6, timeout, tuple(sorted(kw.items())))
    d = _clients.get(key)
    if d is not None and not d.closed and d.loop is loop:
        return d
    d = Driver(loop, priv if priv is not None else keygen(), "[::]:0" if v6 else "0.0.0.0:0",
               handshake_timeout=timeout, **kw)

    def idle() -> None:
        # Later: a link closing and another opening in the same turn keep the socket.
        def maybe_close() -> None:
            if d.links == 0 and not d.closed:
                if _clients.get(key) is d:
                    del _clients[key]
                d.close()
        loop.call_soon(maybe_close)

    d.on_idle = idle
    _clients[key] = d
    return d


async def connect(address: str, *, server_key: KeyLike, service: str,
                  private_key: Optional[KeyLike] = None, timeout: float = 10.0,
                  **settings: Any) -> Link:
    """Opens a link to ``service`` on the Pure server at ``address`` (``"HOST:PORT"``), whose
    public key is ``server_key`` (32 bytes or ``pure-pub:`` text), and returns it once the
    handshake completed.

    ``private_key`` is this client's key (default: a new one, good for servers that allow any
    key). ``timeout`` (seconds) bounds the handshake. Settings: ``max_queue`` (bytes received and
    not yet read before the peer is held back, every channel together, default 4 MiB),
    ``idle_timeout``, ``keepalive`` (seconds), ``max_message_size``, ``send_backlog``,
    ``send_queue`` (bytes, per channel), ``max_channels`` (channels 1..N the link may use
    besides channel 0, each way: 0 to 255, default 16), ``max_datagram_size`` (the largest
    datagram this side sends or takes, bytes: 0 for none, at most and by default 65535),
    ``datagram_queue`` (bytes of received datagrams held for ``recv_datagram``, default 1 MiB;
    past it the oldest are dropped).

    Raises :class:`RefusedError` (no such service), :class:`KeyRejectedError` (our key is not
    allowed), :class:`WrongServerKeyError` (``server_key`` is not the server's),
    :class:`UnreachableError` (no answer), ``ValueError`` for a bad address or key."""
    loop = asyncio.get_running_loop()
    pub = parse_public(server_key)
    priv = parse_private(private_key) if private_key is not None else None
    addr = await _resolve(address, loop)
    d = _client_driver(loop, priv, addr.startswith("["), float(timeout), _settings(settings))
    link = Link(d, d.c.connect(addr, pub, service))
    try:
        while not (link._c.established or link._c.closed):
            await link._wait()
    except BaseException:
        link.abort()
        raise
    if link._c.closed and not link._c.established:
        raise link._error()
    return link


class Server:
    """A listening Pure server (made by :func:`serve`). ``async with`` closes it."""

    def __init__(self, driver: Driver, services: Dict[str, Handler]) -> None:
        self._d = driver
        self._services = services
        self._tasks: Set[asyncio.Task] = set()
        self._links: Set[Link] = set()
        self._closing = False
        self._closed = asyncio.Event()
        driver.on_accept = self._accept

    def _accept(self, cl: "_core.Link") -> None:
        link = Link(self._d, cl)
        if self._closing:
            link.abort(CLOSE_APP, "server closing")
            link._wake()
            return
        handler = self._services.get(cl.service)
        if handler is None:  # the core only accepts registered services; belt and braces
            link.abort(CLOSE_APP, "no handler")
            link._wake()
            return
        self._links.add(link)
        t = self._d.loop.create_task(self._run(handler, link))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        if cl.closed:
            link._wake()

    async def _run(self, handler: Handler, link: Link) -> None:
        try:
            await handler(link)
        except asyncio.CancelledError:
            link.abort(CLOSE_APP, "server closing")
            raise
        except Error as e:
            log.debug("pure: handler for %r ended with %r", link.service, e)
            link.abort(CLOSE_APP, "handler failed")
        except Exception:
            log.exception("pure: handler for service %r failed", link.service)
            link.abort(CLOSE_APP, "handler failed")
        else:
            try:
                await link.close()
            except Error as e:
                log.debug("pure: closing a %r link: %r", link.service, e)
        finally:
            self._links.discard(link)

    @property
    def port(self) -> int:
        """The UDP port the server listens on (the one the kernel chose for port 0)."""
        return self._d.c.port

    @property
    def address(self) -> str:
        """The bound address, ``HOST:PORT``."""
        return self._d.c.address

    @property
    def public_key(self) -> bytes:
        """The server's public key: what clients pass as ``server_key``."""
        return self._public_key

    @property
    def links(self) -> Set[Link]:
        """The links being served now."""
        return set(self._links)

    def stats(self) -> Dict[str, int]:
        """The server context's counters (links, handshakes, datagrams, drops, socket calls)."""
        return self._d.c.stats()

    def close(self) -> None:
        """Stops accepting links and closes every open one gracefully: what this side sent is
        delivered first, each handler's ``async for`` ends after the messages that arrived
        before the close, and a client whose messages were still on their way learns which
        from its link's ``unacked()`` (and its errors' ``unacked``). ``wait_closed`` waits for
        the handlers and frees the socket."""
        if self._closing:
            return
        self._closing = True
        for link in list(self._links):
            if not link._c.closed:
                link._c.close(0, "server closing")

    def drain(self) -> None:
        """Drains this server of a fleet behind one address (docs/fleet.md, "Drain"), as
        ``pure serve`` does on SIGUSR2: every open link closes at once with Pure's "moved" code
        (its client's ``recv`` and ``send`` raise :class:`MovedError`, whose ``unacked`` are
        exactly the ids to send again through the shared address; the handler here sees
        :class:`ClosedError`), and every new link is refused with the same error. The server
        runs on until :meth:`close`; take it out of the director's INIT hash first
        (``scripts/fleet_nft.sh --drain ID``)."""
        self._d.drain()

    def is_serving(self) -> bool:
        return not self._closing

    async def wait_closed(self) -> None:
        """Waits until close() finished: every handler returned and the socket is closed."""
        if not self._closing:
            await self._closed.wait()
            return
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        # Let the last CLOSE frames go out, then free the context.
        links = [l for l in self._links if not l._c.closed]
        for l in links:
            await l.wait_closed()
        self._d.close()
        self._closed.set()

    async def serve_forever(self) -> None:
        """Serves until cancelled (then closes the server)."""
        try:
            await asyncio.Event().wait()
        finally:
            self.close()
            await self.wait_closed()

    async def __aenter__(self) -> "Server":
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()
        await self.wait_closed()


async def serve(address: str, *, private_key: KeyLike, services: Dict[str, Handler],
                allow_any: bool = False, allow: Iterable[KeyLike] = (), silent: bool = False,
                handshake_timeout: float = 10.0, **settings: Any) -> Server:
    """Listens on ``address`` (``"HOST:PORT"``, port 0 for any free port) and runs
    ``services[name](link)`` as a task for each link a client opens for service ``name``; the
    link closes (gracefully) when the handler returns, or is aborted if it raises.

    Clients must present a key in ``allow`` (32-byte keys or ``pure-pub:`` texts) unless
    ``allow_any`` is true. ``silent`` answers nothing to clients that do not know the server's
    key or whose key is not allowed. Other settings as for :func:`connect`."""
    loop = asyncio.get_running_loop()
    priv = parse_private(private_key)
    if not services:
        raise ValueError("services must name at least one service")
    allowed = [parse_public(k, "an allowed key") for k in allow]
    if not allow_any and not allowed:
        raise ValueError("pass allow=[client keys] or allow_any=True")
    kw = _settings(dict(settings))
    kw["respond_to_unknown"] = not silent
    addr = await _resolve(address, loop)
    d = Driver(loop, priv, addr, services=list(services), allow=allowed, allow_any=allow_any,
               handshake_timeout=handshake_timeout, **kw)
    s = Server(d, dict(services))
    s._public_key = d.c.public_key
    return s
