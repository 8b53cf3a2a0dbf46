#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One run of a Python transport workload, both sides in this process on one asyncio loop;
prints one JSON line {"impl", "work", "size", "messages", "seconds", "cpu_s"}. bench/run.py's
`python` experiment runs it (with the interpreter of the venv python/test.sh makes, which has
the pure package) for every row and cell.

    python_bench.py IMPL WORK SIZE N [INFLIGHT]
      IMPL  pure | tls (asyncio streams over TLS 1.3, 4-byte length framing) | zmq (pyzmq with
            CURVE: PUSH/PULL one-way, DEALER/ROUTER request/response)
      WORK  drain (N messages one way into an `async for`-style handler, which counts them)
            | rr (N request/response round trips with INFLIGHT outstanding)

Timing and CPU (user + system of the whole process: both sides) start after the connection is
up and stop when the receiver has counted the last message (drain) or the last reply arrived.
"""
import asyncio
import json
import os
import resource
import ssl
import struct
import subprocess
import sys
import tempfile
import time


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Meter:
    def start(self):
        self.t0, self.c0 = time.perf_counter(), cpu_s()

    def stop(self):
        self.seconds, self.cpu = time.perf_counter() - self.t0, cpu_s() - self.c0


# ---- Pure ----
async def pure_run(work, size, n, inflight, m):
    import pure
    priv = pure.keygen()
    done = asyncio.get_running_loop().create_future()

    async def sink(link):
        count = 0
        async for _ in link:
            count += 1
            if count == n:
                m.stop()
                done.set_result(count)

    async def echo(link):
        async for msg in link:
            await link.send(msg)

    server = await pure.serve("127.0.0.1:0", private_key=priv, services={"sink": sink, "echo": echo},
                              allow_any=True)
    link = await pure.connect(f"127.0.0.1:{server.port}", server_key=pure.public_key(priv),
                              service="sink" if work == "drain" else "echo")
    msg = bytes(i % 251 for i in range(size))
    m.start()
    if work == "drain":
        for _ in range(n):
            await link.send(msg)
        got = await done
    else:
        for _ in range(inflight):
            await link.send(msg)
        got = 0
        for i in range(n):
            r = await link.recv()
            assert len(r) == size
            got += 1
            if i + inflight < n:
                await link.send(msg)
        m.stop()
    await link.close()
    server.close()
    await server.wait_closed()
    return got


# ---- asyncio streams over TLS 1.3 ----
def tls_contexts():
    d = tempfile.mkdtemp()
    key, crt = os.path.join(d, "k.pem"), os.path.join(d, "c.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=localhost"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.minimum_version = ssl.TLSVersion.TLSv1_3
    sctx.load_cert_chain(crt, key)
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.minimum_version = ssl.TLSVersion.TLSv1_3
    cctx.load_verify_locations(crt)
    return sctx, cctx


async def read_msg(reader):
    hdr = await reader.readexactly(4)
    return await reader.readexactly(struct.unpack(">I", hdr)[0])


async def tls_run(work, size, n, inflight, m):
    sctx, cctx = tls_contexts()
    done = asyncio.get_running_loop().create_future()
    msg = bytes(i % 251 for i in range(size))
    frame = struct.pack(">I", size) + msg

    async def handle(reader, writer):
        if work == "drain":
            count = 0
            try:
                while True:
                    await read_msg(reader)
                    count += 1
                    if count == n:
                        m.stop()
                        done.set_result(count)
            except asyncio.IncompleteReadError:
                pass
        else:
            try:
                while True:
                    body = await read_msg(reader)
                    writer.write(struct.pack(">I", len(body)) + body)
                    await writer.drain()
            except asyncio.IncompleteReadError:
                pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=sctx)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=cctx,
                                                   server_hostname="localhost")
    m.start()
    if work == "drain":
        for _ in range(n):
            writer.write(frame)
            await writer.drain()
        got = await done
    else:
        for _ in range(inflight):
            writer.write(frame)
        await writer.drain()
        got = 0
        for i in range(n):
            r = await read_msg(reader)
            assert len(r) == size
            got += 1
            if i + inflight < n:
                writer.write(frame)
                await writer.drain()
        m.stop()
    writer.close()
    server.close()
    await server.wait_closed()
    return got


# ---- pyzmq with CURVE ----
async def zmq_run(work, size, n, inflight, m):
    import zmq
    import zmq.asyncio
    ctx = zmq.asyncio.Context()
    spub, ssec = zmq.curve_keypair()
    cpub, csec = zmq.curve_keypair()
    srv = ctx.socket(zmq.PULL if work == "drain" else zmq.ROUTER)
    srv.curve_secretkey, srv.curve_publickey, srv.curve_server = ssec, spub, True
    port = srv.bind_to_random_port("tcp://127.0.0.1")
    cli = ctx.socket(zmq.PUSH if work == "drain" else zmq.DEALER)
    cli.curve_secretkey, cli.curve_publickey, cli.curve_serverkey = csec, cpub, spub
    for s in (srv, cli):
        s.setsockopt(zmq.SNDHWM, 100000)
        s.setsockopt(zmq.RCVHWM, 100000)
        s.setsockopt(zmq.LINGER, 0)
    cli.connect(f"tcp://127.0.0.1:{port}")
    msg = bytes(i % 251 for i in range(size))
    # the CURVE handshake: one message through before timing starts
    if work == "drain":
        await cli.send(msg)
        await srv.recv()
    else:
        await cli.send(msg)
        ident, body = await srv.recv_multipart()
        await srv.send_multipart([ident, body])
        await cli.recv()

    async def sink():
        for i in range(n):
            await srv.recv()
        m.stop()
        return n

    async def router():
        for i in range(n):
            ident, body = await srv.recv_multipart()
            await srv.send_multipart([ident, body])

    m.start()
    if work == "drain":
        t = asyncio.ensure_future(sink())
        for _ in range(n):
            await cli.send(msg)
        got = await t
    else:
        t = asyncio.ensure_future(router())
        for _ in range(inflight):
            await cli.send(msg)
        got = 0
        for i in range(n):
            r = await cli.recv()
            assert len(r) == size
            got += 1
            if i + inflight < n:
                await cli.send(msg)
        m.stop()
        await t
    cli.close()
    srv.close()
    ctx.term()
    return got


RUNS = {"pure": pure_run, "tls": tls_run, "zmq": zmq_run}


def main(argv):
    impl, work, size, n = argv[0], argv[1], int(argv[2]), int(argv[3])
    inflight = int(argv[4]) if len(argv) > 4 else 1
    m = Meter()
    got = asyncio.run(RUNS[impl](work, size, n, inflight, m))
    print(json.dumps({"impl": impl, "work": work, "size": size, "inflight": inflight,
                      "messages": got, "seconds": m.seconds, "cpu_s": m.cpu}), flush=True)
    return 0 if got == n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
