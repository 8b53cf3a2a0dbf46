# SPDX-License-Identifier: MIT
"""The examples run as a user runs them, as separate processes."""
import asyncio
import json
import os
import signal
import subprocess
import sys

EX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


async def run(*args, **kw):
    return await asyncio.create_subprocess_exec(sys.executable, *args, env=ENV,
                                                stdout=subprocess.PIPE, **kw)


async def start(script, *args):
    p = await run(os.path.join(EX, script), *args)
    info = json.loads(await asyncio.wait_for(p.stdout.readline(), 10))
    return p, "127.0.0.1:%d" % info["port"], info["public_key"]


async def stop(p):
    p.send_signal(signal.SIGINT)
    await asyncio.wait_for(p.wait(), 10)


async def test_echo_server_and_client():
    srv, addr, key = await start("echo_server.py")
    try:
        c = await run(os.path.join(EX, "echo_client.py"), addr, key, "hello", "world")
        out, _ = await asyncio.wait_for(c.communicate(), 20)
        assert c.returncode == 0 and out == b"hello\nworld\n"
    finally:
        await stop(srv)


async def test_pubsub_broker():
    srv, addr, key = await start("pubsub_broker.py", "serve")
    script = os.path.join(EX, "pubsub_broker.py")
    try:
        subs = [await run(script, "sub", addr, key, "news", "2") for _ in range(2)]
        other = await run(script, "sub", addr, key, "sport", "1")
        for s in subs + [other]:
            assert await asyncio.wait_for(s.stdout.readline(), 10) == b"subscribed\n"
        p = await run(script, "pub", addr, key, "news", "one", "two")
        await asyncio.wait_for(p.wait(), 20)
        assert p.returncode == 0
        for s in subs:
            out, _ = await asyncio.wait_for(s.communicate(), 20)
            assert out == b"one\ntwo\n" and s.returncode == 0
        p = await run(script, "pub", addr, key, "sport", "goal")
        await asyncio.wait_for(p.wait(), 20)
        out, _ = await asyncio.wait_for(other.communicate(), 20)
        assert out == b"goal\n"
    finally:
        await stop(srv)


async def test_channels_example():
    p = await run(os.path.join(EX, "channels.py"), "4")
    out, _ = await asyncio.wait_for(p.communicate(), 30)
    assert p.returncode == 0
    lines = out.decode().splitlines()
    assert lines[0].startswith("upload: 4 MiB on channel 1 in ")
    assert lines[1].startswith("requests on channel 2 meanwhile: 20, slowest round trip ")
    assert lines[2].startswith("datagrams: 50 sent, ") and len(lines) == 3
