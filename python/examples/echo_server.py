#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An echo server: prints {"port": N, "public_key": "pure-pub:..."} and echoes every message
of every link until interrupted.

    python3 examples/echo_server.py [--listen 127.0.0.1:0] [--key FILE]
"""
import argparse
import asyncio
import json

import pure


async def echo(link: pure.Link) -> None:
    async for msg in link:
        await link.send(msg)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--key", help="a private key file (pure-priv:...); default: a new key")
    a = ap.parse_args()
    priv = open(a.key).read().strip() if a.key else pure.keygen()
    async with await pure.serve(a.listen, private_key=priv, services={"echo": echo},
                                allow_any=True) as server:
        print(json.dumps({"port": server.port, "public_key": pure.key_text(server.public_key)}),
              flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
