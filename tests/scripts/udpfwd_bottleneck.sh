#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end check of udpfwd's bottleneck (tools/udpfwd.c, docs/udpfwd.md) on loopback, with
# /usr/bin/python3 (standard library only) as the senders and the server:
#  - a 20 Mbit/s stream through --rate-up 10mbit --queue-packets-up 20 arrives at 10 Mbit/s
#    (+-10%), the excess is dropped at the tail and counted, the queue holds at most 20 and the
#    queueing delay is the 20 datagrams' serialisation time; --queue-bytes keeps 10 of a burst;
#  - at 50 Mbit/s (a 1472-byte datagram every 235 us) the rate holds to +-5%, also when the
#    forwarder is stopped for 100 ms mid-stream (a stall serves from the kernel's arrival times);
#  - a window-based AIMD sender (reacting to losses, and to CE marks echoed back) through a
#    10 Mbit/s link with a 1000-datagram queue: without CoDel the median queueing delay is
#    hundreds of ms; with --codel near the 5 ms target; with --codel --ecn and ECT(0) datagrams
#    CoDel marks instead of dropping, the server sees the CE marks and ECT(0) elsewhere;
#  - --clients 4: two clients get their own source ports towards the server and their own echoes,
#    and share the one bottleneck; a client beyond N is dropped and counted (too_many_clients);
#  - ECN bits are forwarded both ways over IPv6 and through a dual-stack listener;
#  - SIGHUP writes the stats; bad bottleneck options exit 2.
# Usage: tests/scripts/udpfwd_bottleneck.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
fwd=$(cd "$1" && pwd)/udpfwd
if [ ! -x "$fwd" ]; then echo "udpfwd_bottleneck: $fwd not built" >&2; exit 1; fi
py=/usr/bin/python3 here=$(cd "$(dirname "$0")" && pwd) # udpstamp.py
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/bottleneck.py" <<'EOF'
import json, os, random, select, signal, socket, subprocess, sys, threading, time
from udpstamp import recv_stamped, stamp

FWD, TMP = sys.argv[1], sys.argv[2]
failures = []
LO = "127.0.0.1"
try:
    s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s6.bind(("::1", 0))
    s6.close()
    have6 = True
except OSError:
    have6 = False

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)

def bigbuf(sock):
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
        except OSError:
            pass

class Fwd:
    n = 0
    def __init__(self, args):
        Fwd.n += 1
        self.stats_path = os.path.join(TMP, "stats%d.json" % Fwd.n)
        self.server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        bigbuf(self.server)
        self.server.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        stamp(self.server)  # arrival times from the kernel (udpstamp.py)
        self.server.bind((LO, 0))
        cmd = [FWD, "--listen", LO + ":0", "--to", "%s:%d" % (LO, self.server.getsockname()[1]),
               "--stats", self.stats_path, "--seed", "1"] + args
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.port = json.loads(self.p.stdout.readline())["port"]

    def client(self):
        c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        bigbuf(c)
        c.connect((LO, self.port))
        c.setblocking(False)
        return c

    def recv_all(self):
        """(payload, source address, ECN bits, arrival time) for everything waiting."""
        return recv_stamped(self.server, "udpfwd_bottleneck")

    def stats(self):
        with open(self.stats_path) as f:
            return json.loads(f.read())

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=10)
        check(rc == 0, "udpfwd exits 0 (rc %s)" % rc)
        self.server.close()
        return self.stats()

def stream(f, c, rate, size, seconds):
    """Sends size-byte datagrams at rate bit/s for seconds (in 2 ms steps); collects at the
    server meanwhile and for 0.3 s after. Returns (sent, arrivals)."""
    every = size * 8 / rate
    t0 = time.monotonic()
    sent, got = 0, []
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        while sent * every <= now - t0:
            c.send(sent.to_bytes(4, "big") + bytes(size - 4))
            sent += 1
        select.select([f.server], [], [], 0.002)
        got += f.recv_all()
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        select.select([f.server], [], [], 0.05)
        got += f.recv_all()
    return sent, got

def rate_of(got):
    """Arrival rate in bit/s from the first to the last datagram (the first's bytes excluded)."""
    if len(got) < 2:
        return 0.0
    return sum(len(d) for d, *_ in got[1:]) * 8 / (got[-1][3] - got[0][3])

# 1. Rate shaping and drop-tail: 20 Mbit/s offered to a 10 Mbit/s link with 20 datagrams of queue.
f = Fwd(["--rate-up", "10mbit", "--queue-packets-up", "20"])
c = f.client()
sent, got = stream(f, c, 20e6, 1250, 2.0)
st = f.stop()["up"]
r = rate_of(got)
check(9e6 <= r <= 11e6, "--rate-up 10mbit: %d of %d arrived at %.2f Mbit/s" % (len(got), sent, r / 1e6))
check(st["out"] == len(got) and st["queue_drop"] == sent - len(got) and st["in"] == sent,
      "drop-tail: %d dropped at the queue, counted (in %d, out %d)"
      % (st["queue_drop"], st["in"], st["out"]))
check(0.35 * sent <= st["queue_drop"] <= 0.6 * sent, "drop-tail: about half dropped")
check(st["queue_max"] == 20, "--queue-packets-up 20: the queue held at most %d" % st["queue_max"])
# a full queue of 20 datagrams of 1 ms each: ~19-20 ms of queueing for most
check(15000 <= st["qdelay_p50_us"] <= 21000 and st["qdelay_max_us"] <= 22000,
      "queueing delay p50 %d us, max %d us (20 x 1 ms)" % (st["qdelay_p50_us"], st["qdelay_max_us"]))
check(st["qdelay_samples"] == st["out"], "one queueing-delay sample per datagram forwarded")

# A burst of 50 x 1000 bytes at once into --queue-bytes 10000 at 200 kbit/s (40 ms each, so the
# burst is all in before the first has left): one is serialised at once, 10 fit the queue, the
# other 39 are dropped at the tail.
f = Fwd(["--rate-up", "200kbit", "--queue-bytes-up", "10000"])
c = f.client()
for i in range(50):
    c.send(i.to_bytes(4, "big") + bytes(996))
got = []
end = time.monotonic() + 3
while time.monotonic() < end and len(got) < 11:
    select.select([f.server], [], [], 0.05)
    got += f.recv_all()
st = f.stop()["up"]
check(len(got) == 11 and [int.from_bytes(d[:4], "big") for d, *_ in got] == list(range(11))
      and st["queue_drop"] == 39 and st["queue_max"] == 10,
      "--queue-bytes-up 10000: the first 11 of a 50-datagram burst pass, %d dropped, queue max %d"
      % (st["queue_drop"], st["queue_max"]))
check(380000 <= st["qdelay_max_us"] <= 401000,
      "--queue-bytes-up: the last one waited %d us (10 x 40 ms)" % st["qdelay_max_us"])

# 2. Accuracy at 50 Mbit/s: 1472-byte datagrams every 235 us; then the same with the forwarder
#    stopped for 100 ms mid-stream (as a busy machine deschedules it), which must not idle the
#    link: what waited in its socket is served from when it arrived (the kernel's receive times),
#    so the rate holds over the second and the queue stays in bounds.
def stall(p):
    p.send_signal(signal.SIGSTOP)
    time.sleep(0.1)
    p.send_signal(signal.SIGCONT)
for stopped in (False, True):
    f = Fwd(["--rate", "50mbit", "--queue-packets", "100"])
    c = f.client()
    t = threading.Timer(0.4, stall, (f.p,)) if stopped else None
    if t:
        t.start()
    sent, got = stream(f, c, 60e6, 1472, 1.0)
    if t:
        t.join()
    st = f.stop()["up"]
    r = rate_of(got)
    what = "--rate 50mbit" + (", stopped 100 ms" if stopped else "")
    check(47.5e6 <= r <= 52.5e6, "%s: %d of %d arrived at %.2f Mbit/s" % (what, len(got), sent, r / 1e6))
    if stopped:
        check(st["queue_max"] <= 100, "... the queue held at most 100 (%d)" % st["queue_max"])

# 3. A window-based AIMD sender (slow start until the first congestion signal; then halves once
#    per round trip on a loss or an echoed CE mark, grows by one datagram per round trip) through
#    10 Mbit/s, 20 ms RTT, a 1000-datagram queue.
def aimd(args, ect=False, seconds=5.0, size=1250):
    f = Fwd(args)
    c = f.client()
    if ect:
        c.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)  # ECT(0)
    cwnd, ssthresh, nxt, expect, recovery_end = 4.0, 1e9, 0, 0, 0
    last_ack = time.monotonic()
    t0 = last_ack
    seen_ecn = {0: 0, 1: 0, 2: 0, 3: 0}
    delivered = 0
    while time.monotonic() - t0 < seconds:
        while nxt - expect < int(cwnd):
            c.send(nxt.to_bytes(4, "big") + bytes(size - 4))
            nxt += 1
        r, _, _ = select.select([f.server, c], [], [], 0.01)
        for data, addr, ecn, _ in f.recv_all():
            seen_ecn[ecn] += 1
            delivered += 1
            f.server.sendto(data[:4] + bytes([ecn]), addr)  # the ACK echoes the ECN bits
        while True:
            try:
                ack = c.recv(64)
            except (BlockingIOError, ConnectionRefusedError):
                break
            seq, ce = int.from_bytes(ack[:4], "big"), ack[4] == 3
            last_ack = time.monotonic()
            if seq < expect:
                continue
            congested = seq > expect or ce
            expect = seq + 1
            if congested and seq >= recovery_end:
                cwnd = ssthresh = max(cwnd / 2, 2.0)
                recovery_end = nxt
            elif not congested:
                cwnd += 1 if cwnd < ssthresh else 1 / cwnd
        if nxt > expect and time.monotonic() - last_ack > 0.5:  # everything in flight lost
            ssthresh = max(cwnd / 2, 2.0)
            expect, cwnd, recovery_end = nxt, 2.0, nxt
            last_ack = time.monotonic()
    st = f.stop()["up"]
    return st, seen_ecn, delivered * size * 8 / seconds

base = ["--rate-up", "10mbit", "--queue-packets-up", "1000", "--delay", "10"]
st, _, gp = aimd(base)
check(st["qdelay_p50_us"] > 100000 and st["codel_drop"] == 0,
      "AIMD, 1000-datagram queue: median queueing %.1f ms (a standing queue), %.1f Mbit/s"
      % (st["qdelay_p50_us"] / 1000, gp / 1e6))
st, _, gp = aimd(base + ["--codel-up"])
check(st["codel_drop"] > 0 and st["qdelay_p50_us"] <= 15000 and gp >= 6e6,
      "AIMD, --codel-up: median queueing %.1f ms (target 5), p95 %.1f ms, %d CoDel drops, %.1f Mbit/s"
      % (st["qdelay_p50_us"] / 1000, st["qdelay_p95_us"] / 1000, st["codel_drop"], gp / 1e6))
st, ecn, gp = aimd(base + ["--codel-up", "--ecn-up"], ect=True)
# CE seen by the server: every one marked, less the few marked in the last 10 ms of delay that
# were still on the way when the forwarder stopped (a CI run under ASan saw 16 of 17); never more
marked = st["ecn_marked"]
check(marked > 0 and st["codel_drop"] == 0 and 0 < ecn[3] <= marked
      and marked - ecn[3] <= max(3, marked // 10) and ecn[2] > 0 and ecn[0] == 0 and ecn[1] == 0,
      "AIMD, --codel-up --ecn-up, ECT(0): %d marked (server saw %d CE, %d ECT(0)), 0 dropped by "
      "CoDel; median queueing %.1f ms" % (st["ecn_marked"], ecn[3], ecn[2], st["qdelay_p50_us"] / 1000))
check(st["qdelay_p50_us"] <= 15000, "ECN: CoDel still holds the median near the target")

# 4. Several clients through one bottleneck.
f = Fwd(["--clients", "4", "--rate-up", "10mbit", "--queue-packets-up", "50"])
c1, c2 = f.client(), f.client()
got, rng = [], random.Random(4)
t0 = time.monotonic()
sent = 0
while time.monotonic() - t0 < 1.5:
    # each client 8 Mbit/s: 1000-byte datagrams, one per ms
    # in a random order each time: a fixed one would give the first the queue's last free slot
    while sent <= (time.monotonic() - t0) * 1000:
        pair = [(c1, b"A"), (c2, b"B")]
        rng.shuffle(pair)
        for c, tag in pair:
            c.send(tag + sent.to_bytes(4, "big") + bytes(995))
        sent += 1
    select.select([f.server], [], [], 0.002)
    for data, addr, _, t in f.recv_all():
        got.append((data[0], addr, t))
        f.server.sendto(data[:5], addr)  # echo a short reply
end = time.monotonic() + 0.3
while time.monotonic() < end:
    select.select([f.server], [], [], 0.05)
    for data, addr, _, t in f.recv_all():
        got.append((data[0], addr, t))
        f.server.sendto(data[:5], addr)
def drain(c):
    out = []
    while True:
        try:
            out.append(c.recv(64))
        except (BlockingIOError, ConnectionRefusedError):
            return out
time.sleep(0.1)
e1, e2 = drain(c1), drain(c2)
ports = {}
for tag, addr, _ in got:
    ports.setdefault(tag, set()).add(addr[1])
check(len(ports.get(ord("A"), ())) == 1 and len(ports.get(ord("B"), ())) == 1
      and ports[ord("A")] != ports[ord("B")],
      "--clients 4: each client has its own source port towards the server (%s)" % ports)
check(e1 and e2 and all(e[0] == ord("A") for e in e1) and all(e[0] == ord("B") for e in e2),
      "--clients 4: each client gets its own echoes (%d and %d)" % (len(e1), len(e2)))
na = sum(1 for g in got if g[0] == ord("A"))
nb = len(got) - na
r = (len(got) - 1) * 1000 * 8 / (got[-1][2] - got[0][2])
check(9e6 <= r <= 11e6 and abs(na - nb) <= 0.2 * (na + nb),
      "two clients at 8 Mbit/s each share the 10 Mbit/s bottleneck: %.2f Mbit/s, %d and %d"
      % (r / 1e6, na, nb))
c3 = f.client()
for i in range(10):
    c3.send(b"C" + bytes(10))
    c1.send(b"A" + bytes(10))
time.sleep(0.2)
# SIGHUP: stats now, without exiting
if os.path.exists(f.stats_path):
    os.unlink(f.stats_path)
f.p.send_signal(signal.SIGHUP)
deadline = time.monotonic() + 5
while not os.path.exists(f.stats_path) and time.monotonic() < deadline:
    time.sleep(0.02)
check(os.path.exists(f.stats_path) and f.p.poll() is None, "SIGHUP writes the stats and carries on")
st = f.stop()
check(st["clients"] == 3 and st["up"]["too_many_clients"] == 0,
      "--clients 4: 3 clients (%d), none refused" % st["clients"])
f = Fwd(["--clients", "2"])
cs = [f.client() for _ in range(3)]
for c in cs:
    for i in range(5):
        c.send(b"x" * 10)
        time.sleep(0.002)
time.sleep(0.2)
st = f.stop()
check(st["clients"] == 2 and st["up"]["too_many_clients"] == 5 and st["up"]["out"] == 10,
      "--clients 2: a third client's 5 datagrams are dropped and counted (%d)"
      % st["up"]["too_many_clients"])

# 5. ECN bits are forwarded both ways without a bottleneck too: over IPv6, and between an IPv4
#    server and an IPv4 client on a dual-stack [::] listener (IPv4-mapped).
def ecn_roundtrip(lfam, listen, to_fam, to_lo, to_host, cfam, clo):
    def recv_opts(sock, fam):
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        if fam == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
    def set_ecn(sock, fam, v):
        if fam == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, v)
        else:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, v)
    def ecn_of(anc):
        for level, typ, val in anc:
            if (level, typ) in ((socket.IPPROTO_IP, socket.IP_TOS),
                                (socket.IPPROTO_IPV6, socket.IPV6_TCLASS)):
                return val[0] & 3
        return None
    srv = socket.socket(to_fam, socket.SOCK_DGRAM)
    recv_opts(srv, to_fam)
    set_ecn(srv, to_fam, 2)  # the server's replies are ECT(0)
    srv.bind((to_lo, 0))
    p = subprocess.Popen([FWD, "--listen", listen, "--to", "%s:%d" % (to_host, srv.getsockname()[1])],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    port = json.loads(p.stdout.readline())["port"]
    c = socket.socket(cfam, socket.SOCK_DGRAM)
    recv_opts(c, cfam)
    set_ecn(c, cfam, 1)  # the client's datagrams are ECT(1)
    c.connect((clo, port))
    up, down = [], []
    for i in range(5):
        c.send(b"ecn")
    end = time.monotonic() + 3
    while time.monotonic() < end and len(down) < 5:
        r, _, _ = select.select([srv, c], [], [], 0.05)
        if srv in r:
            d, anc, _, a = srv.recvmsg(100, 64)
            up.append(ecn_of(anc))
            srv.sendto(d, a)
        if c in r:
            d, anc, _, a = c.recvmsg(100, 64)
            down.append(ecn_of(anc))
    p.terminate()
    p.wait()
    srv.close()
    c.close()
    return up, down
if have6:
    up, down = ecn_roundtrip(socket.AF_INET6, "[::1]:0", socket.AF_INET6, "::1", "[::1]",
                             socket.AF_INET6, "::1")
    check(up == [1] * 5 and down == [2] * 5, "IPv6: ECT(1) up and ECT(0) down forwarded (%s %s)"
          % (up, down))
    up, down = ecn_roundtrip(socket.AF_INET6, "[::]:0", socket.AF_INET, LO, LO, socket.AF_INET, LO)
    check(up == [1] * 5 and down == [2] * 5,
          "[::] listener, IPv4 client: ECT(1) up and ECT(0) down forwarded (%s %s)" % (up, down))
else:
    print("skip ECN over IPv6: no ::1 on this machine", flush=True)

# 6. Usage errors.
base = ["--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"]
for args in (["--codel"], ["--queue-packets", "10"], ["--rate", "10mbit", "--ecn"],
             ["--rate", "fast"], ["--rate", "10xbit"], ["--rate", "1"], ["--codel=1"],
             ["--rate", "10m", "--queue-packets", "0"], ["--clients", "0"],
             ["--rate", "10m", "--codel", "--codel-target", "0"]):
    r = subprocess.run([FWD] + base + args, capture_output=True, timeout=10)
    check(r.returncode == 2 and r.stderr and not r.stdout,
          "usage error %s: exit %d, %s" % (args, r.returncode, r.stderr.decode().splitlines()[:1]))

if failures:
    print("udpfwd_bottleneck: %d FAILED" % len(failures), flush=True)
    sys.exit(1)
print("udpfwd_bottleneck: all passed", flush=True)
EOF

start=$(date +%s)
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "$py" "$tmp/bottleneck.py" "$fwd" "$tmp"
echo "udpfwd_bottleneck: $(( $(date +%s) - start )) s" >&2
