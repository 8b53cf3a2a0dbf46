# SPDX-License-Identifier: MIT
"""Keys: 32 raw bytes, or the texts the ``pure`` command reads and writes (``pure-priv:`` and
``pure-pub:`` followed by 44 characters of base64; a public key may also be bare base64, as
pure 0.1 printed it)."""
from __future__ import annotations

import base64
import binascii
from typing import Union

from . import _core

KeyLike = Union[bytes, bytearray, memoryview, str]

PRIV_PREFIX = "pure-priv:"
PUB_PREFIX = "pure-pub:"


def keygen() -> bytes:
    """A new X25519 private key: 32 bytes from the operating system's random source."""
    return _core.keygen()


def public_key(private_key: KeyLike) -> bytes:
    """The 32-byte public key of a private key (bytes or ``pure-priv:`` text)."""
    return _core.public_key(parse_private(private_key))


def key_text(key: bytes, *, private: bool = False) -> str:
    """``pure-priv:...`` or ``pure-pub:...`` text of a 32-byte key, as ``pure keygen`` and
    ``pure pubkey`` print them."""
    key = bytes(key)
    if len(key) != 32:
        raise ValueError("a key is 32 bytes")
    return (PRIV_PREFIX if private else PUB_PREFIX) + base64.b64encode(key).decode()


def _b64(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("%s is not base64" % what) from None
    if len(raw) != 32:
        raise ValueError("%s is %d bytes, not 32" % (what, len(raw)))
    return raw


def _raw(key, what: str) -> bytes:
    raw = bytes(key)
    if len(raw) != 32:
        raise ValueError("%s must be 32 bytes (got %d)" % (what, len(raw)))
    return raw


def parse_private(key: KeyLike, what: str = "private_key") -> bytes:
    """32 bytes, or ``pure-priv:`` text; a public key's text is refused."""
    if isinstance(key, str):
        t = key.strip()
        if t.startswith(PUB_PREFIX):
            raise ValueError("%s holds a public key (pure-pub:...), not a private key" % what)
        if not t.startswith(PRIV_PREFIX):
            raise ValueError("%s text must start with pure-priv:" % what)
        return _b64(t[len(PRIV_PREFIX):], what)
    return _raw(key, what)


def parse_public(key: KeyLike, what: str = "server_key") -> bytes:
    """32 bytes, or ``pure-pub:`` text (or bare base64); a private key's text is refused."""
    if isinstance(key, str):
        t = key.strip()
        if t.startswith(PRIV_PREFIX):
            raise ValueError("%s is a private key (pure-priv:...): pass its public key" % what)
        if t.startswith(PUB_PREFIX):
            t = t[len(PUB_PREFIX):]
        return _b64(t, what)
    return _raw(key, what)
