# SPDX-License-Identifier: MIT
"""One exception hierarchy: pure.Error and a subclass per failure a caller handles
differently. Each carries Pure's error name (``name``, e.g. ``"PURE_ETIMEDOUT"``), its code, and
where a link died, the ids of the messages the peer never acknowledged (``unacked``, a range of
the ids ``Link.send`` returned)."""
from __future__ import annotations

from . import _core

__all__ = [
    "Error", "RefusedError", "KeyRejectedError", "WrongServerKeyError", "TimedOutError",
    "UnreachableError", "NotPureError", "VersionError", "MovedError", "ClosedError", "ResetError", "BacklogFullError",
    "MessageTooBigError", "DatagramTooBigError", "ChannelError", "ProtocolError",
]

_NAMES = {getattr(_core, n): "PURE_" + n for n in dir(_core) if n.startswith("E") and n[1:].isupper()}


class Error(Exception):
    """Base of every error Pure raises.

    Attributes: ``code`` (a negative PURE_E* code), ``name`` (``"PURE_E..."``), ``unacked``
    (``range`` of channel 0's message ids sent but never acknowledged; empty when nothing was
    lost), ``channel_unacked`` (the same for other channels: ``{channel: range}``, only those
    with ids not acknowledged), ``peer_code`` and ``reason`` (the peer's close code and text,
    where it closed the link)."""

    def __init__(self, code: int = 0, message: str | None = None, *, unacked: range = range(0),
                 peer_code: int = 0, reason: str = "",
                 channel_unacked: "dict[int, range] | None" = None):
        self.code = code
        self.name = _NAMES.get(code, "PURE_E%d" % -code if code else "PURE_OK")
        self.unacked = unacked
        self.channel_unacked = channel_unacked or {}
        self.peer_code = peer_code
        self.reason = reason
        text = message or _core.strerror(code)
        if unacked:
            text += " (messages %d..%d not acknowledged)" % (unacked.start, unacked.stop - 1)
        for ch, r in sorted(self.channel_unacked.items()):
            text += " (channel %d: messages %d..%d not acknowledged)" % (ch, r.start, r.stop - 1)
        super().__init__(text)

    def __reduce__(self):
        return (type(self), (self.code, str(self)))


class RefusedError(Error):
    """The server has no such service (PURE_EREFUSED)."""


class KeyRejectedError(Error):
    """The server does not allow this client's key (PURE_EACCES)."""


class WrongServerKeyError(Error):
    """The server could not authenticate us: ``server_key`` is not its key (PURE_EKEY)."""


class TimedOutError(Error, TimeoutError):
    """The peer went silent for the idle timeout, or a close could not finish (PURE_ETIMEDOUT)."""


class UnreachableError(TimedOutError):
    """No server there: the network said so during the handshake (an ICMP port or host
    unreachable, no route, the wrong address family: PURE_EUNREACH, in about a round trip), or
    nothing answered within the handshake timeout (PURE_ETIMEDOUT). A TimedOutError too, so
    ``except TimeoutError`` catches both."""


class NotPureError(Error):
    """What answers at that address and port is not a Pure server (PURE_ENOTPURE)."""


class VersionError(Error):
    """The server speaks another version of Pure's protocol (PURE_EVERSION): upgrade one side.
    ``peer_code`` is the newest version it speaks."""


class ClosedError(Error):
    """The link is closed (or closing, or the peer finished its stream): nothing more can be
    sent or received (PURE_ECLOSED)."""


class ResetError(ClosedError):
    """The peer closed the link with an error code of its application (PURE_ERESET)."""


class MovedError(ClosedError):
    """The server is draining (a fleet, docs/fleet.md): connect again through the shared
    address and send again the ids in ``unacked``, which are exactly those it did not get
    (PURE_EMOVED)."""


class BacklogFullError(Error):
    """send_nowait: the link's backlog is full (PURE_EAGAIN); await send() instead."""


class MessageTooBigError(Error, ValueError):
    """The message is larger than the link's max_message_size (PURE_EMSGSIZE)."""


class DatagramTooBigError(MessageTooBigError):
    """``send_datagram``: the datagram is larger than ``Link.datagram_max`` (what one packet
    holds on the path now, within both sides' ``max_datagram_size``), or the link takes no
    datagrams at all (``datagram_max`` 0). Nothing was sent. Also a ``ValueError``."""


class ChannelError(Error, ValueError):
    """Not a channel this link can use (PURE_EINVAL): a send above ``Link.max_channel`` (the
    smaller of both sides' ``max_channels``), a receive or priority above this side's
    ``max_channels``, or a negative number. Nothing was sent. Also a ``ValueError``."""


class ProtocolError(Error):
    """The peer broke the protocol, its packets failed authentication, or it overran its
    credit (PURE_EPROTO, PURE_ECRYPTO, PURE_EFLOW)."""


_BY_CODE = {
    _core.EREFUSED: RefusedError,
    _core.EACCES: KeyRejectedError,
    _core.EKEY: WrongServerKeyError,
    _core.ETIMEDOUT: TimedOutError,
    _core.EUNREACH: UnreachableError,
    _core.ENOTPURE: NotPureError,
    _core.EMOVED: MovedError,
    _core.EVERSION: VersionError,
    _core.ECLOSED: ClosedError,
    _core.ERESET: ResetError,
    _core.EAGAIN: BacklogFullError,
    _core.EFULL: BacklogFullError,  # a C caller's queue limit (pure_link_set_queue_limit)
    _core.EMSGSIZE: MessageTooBigError,
    _core.EPROTO: ProtocolError,
    _core.ECRYPTO: ProtocolError,
    _core.EFLOW: ProtocolError,
}


def error_for(code: int, message: str | None = None, **kw) -> Error:
    """The exception for a PURE_E* code."""
    return _BY_CODE.get(code, Error)(code, message, **kw)


# The C half raises these classes directly, with (code, text) as arguments.
# Errors the C half raises by kind, whatever the code: see pyp_raise_as.
_core._set_errors(Error, {**_BY_CODE, "channel": ChannelError, "datagram": DatagramTooBigError})
