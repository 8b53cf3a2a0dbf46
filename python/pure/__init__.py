# SPDX-License-Identifier: MIT
"""Pure for asyncio: secure (Noise IK, AES-GCM), reliable, ordered messages over UDP.

    import pure
    priv = pure.keygen()
    server = await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": echo},
                              allow_any=True)
    link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pure.public_key(priv),
                              service="echo")
    await link.send(b"hello"); reply = await link.recv()
    await link.send(b"bulk", channel=1)     # channels: independent ordered streams
    link.send_datagram(b"tick")             # unreliable, one packet
    await link.close()

The per-datagram work (recvmmsg/GRO batches, decryption, reassembly, GSO bursts, timers) runs
in C on the event loop's thread; Python sees whole messages. See python/README.md.
"""
from ._core import PURE_VERSION as LIBRARY_VERSION
from ._errors import (BacklogFullError, ChannelError, ClosedError, DatagramTooBigError, Error,
                      KeyRejectedError, MessageTooBigError, MovedError, NotPureError, ProtocolError,
                      RefusedError, ResetError, TimedOutError, UnreachableError, VersionError,
                      WrongServerKeyError)
from ._keys import key_text, keygen, public_key
from ._link import CLOSE_APP, MAX_CHANNELS, URGENCY_MAX, Link, Message
from ._api import Server, connect, serve

__version__ = "0.2.0"

__all__ = [
    "keygen", "public_key", "key_text", "serve", "connect", "Server", "Link", "Message",
    "CLOSE_APP", "MAX_CHANNELS", "URGENCY_MAX", "ChannelError", "DatagramTooBigError",
    "Error", "RefusedError", "KeyRejectedError", "WrongServerKeyError", "TimedOutError",
    "UnreachableError", "NotPureError", "VersionError", "MovedError", "ClosedError", "ResetError", "BacklogFullError", "MessageTooBigError",
    "ProtocolError", "LIBRARY_VERSION",
]
