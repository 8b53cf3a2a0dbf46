# SPDX-License-Identifier: MIT
"""Interop both ways with the C command: Python clients of `pure serve` (echo, drain) and
`pure send` / `pure drain` against a Python server."""
import asyncio
import json
import struct
import subprocess

import pure
from conftest import echo, pure_bin


async def start_c_server():
    p = await asyncio.create_subprocess_exec(
        pure_bin(), "serve", "--listen", "127.0.0.1:0", "--ephemeral", "--services", "echo,drain",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = json.loads(await asyncio.wait_for(p.stdout.readline(), 10))
    return p, line["port"], line["public_key"]


async def test_python_client_c_server_echo_and_drain():
    p, port, key = await start_c_server()
    try:
        async with await pure.connect(f"127.0.0.1:{port}", server_key=key, service="echo") as link:
            msgs = [b"", b"a", b"b" * 70000, b"c" * 1000]
            for m in msgs:
                await link.send(m)
            for m in msgs:
                assert await asyncio.wait_for(link.recv(), 10) == m
        link = await pure.connect(f"127.0.0.1:{port}", server_key=key, service="drain")
        n, size = 20000, 61
        for i in range(n):
            await link.send(bytes(i % 251 for i in range(size)))
        link.finish()
        reply = await asyncio.wait_for(link.recv(), 20)
        assert struct.unpack(">QQ", reply) == (n, n * size)
        await link.close()
    finally:
        p.terminate()
        assert await p.wait() == 0


async def drain_service(link):
    count = total = 0
    async for m in link:
        count += 1
        total += len(m)
    await link.send(struct.pack(">QQ", count, total))


async def test_c_clients_python_server(keys):
    priv, pub = keys
    async with await pure.serve("127.0.0.1:0", private_key=priv,
                                services={"echo": echo, "drain": drain_service},
                                allow_any=True) as server:
        addr = f"127.0.0.1:{server.port}"
        text = pure.key_text(pub)
        p = await asyncio.create_subprocess_exec(
            pure_bin(), "send", addr, "--peer-key", text, "--timeout", "20",
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        out, _ = await p.communicate(b"hello\n\nworld\n")
        assert p.returncode == 0
        assert out == b"hello\n\nworld\n"
        p = await asyncio.create_subprocess_exec(
            pure_bin(), "drain", addr, "50000", "1024", "--peer-key", text, "--timeout", "30",
            stdout=subprocess.PIPE)
        out, _ = await p.communicate()
        assert p.returncode == 0
        res = json.loads(out)
        assert res["server_messages"] == 50000 and res["server_bytes"] == 50000 * 1024


async def test_channels_with_the_c_command(keys):
    """Channels both ways with the C command: a Python client on channels 3 and 200 of `pure
    serve`'s echo (which answers on the request's channel), and `pure send --channel 2`
    against a Python server answering on the channel each message came on."""
    p, port, key = await start_c_server()
    try:
        async with await pure.connect(f"127.0.0.1:{port}", server_key=key, service="echo",
                                      max_channels=255) as link:
            assert link.max_channel == 255
            for i in range(20):
                await link.send(b"three %d" % i, channel=3)
                await link.send(b"many %d" % i, channel=200)
            got = [await asyncio.wait_for(link.recv_any(), 10) for _ in range(40)]
            assert [m.data for m in got if m.channel == 3] == [b"three %d" % i for i in range(20)]
            assert [m.data for m in got if m.channel == 200] == [b"many %d" % i for i in range(20)]
    finally:
        p.terminate()
        assert await p.wait() == 0

    priv, pub = keys
    seen = []

    async def chan_echo(link):
        async for ch, msg in link.messages():
            seen.append(ch)
            await link.send(msg, channel=ch)

    async with await pure.serve("127.0.0.1:0", private_key=priv, services={"echo": chan_echo},
                                allow_any=True) as server:
        p = await asyncio.create_subprocess_exec(
            pure_bin(), "send", f"127.0.0.1:{server.port}", "--peer-key", pure.key_text(pub),
            "--timeout", "20", "--channel", "2", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        out, _ = await p.communicate(b"one\ntwo\nthree\n")
        assert p.returncode == 0
        assert out == b"one\ntwo\nthree\n"
    assert seen == [2, 2, 2]
