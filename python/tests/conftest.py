# SPDX-License-Identifier: MIT
import os
import shutil

import pytest

import pure

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pure_bin() -> str:
    """The C `pure` command: $PURE_BIN, else build/pure of this repository (scripts/test.sh
    builds it first). A missing binary fails the interop tests rather than skipping them."""
    p = os.environ.get("PURE_BIN") or os.path.join(ROOT, "build", "pure")
    if not os.access(p, os.X_OK):
        pytest.fail("the pure command is not built at %s (ninja -C build, or set PURE_BIN)" % p)
    return p


@pytest.fixture
def keys():
    priv = pure.keygen()
    return priv, pure.public_key(priv)


async def echo(link):
    async for msg in link:
        await link.send(msg)
