#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Self-test of the fault-injecting forwarder BUILD_DIR/udpfwd (tools/udpfwd.c) on loopback.
# /usr/bin/python3 (standard library only) plays a UDP echo server and a client through it and
# checks: 1000 numbered datagrams (up to 65507 bytes) forwarded both ways intact, over IPv4 and
# (if available) IPv6; --loss 0.5 drops about half and the stats agree; --seed makes the drops
# repeatable; --dup 1.0 doubles each way; --corrupt-up 1.0 changes exactly one byte of every
# datagram, up only; --rebind-after and SIGUSR2 give the server new source ports; SIGUSR1
# blackholes everything until sent again; bad flags exit 2 with a message.
# Usage: tests/scripts/udpfwd_selftest.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
fwd=$(cd "$1" && pwd)/udpfwd
if [ ! -x "$fwd" ]; then echo "udpfwd_selftest: $fwd not built" >&2; exit 1; fi
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/selftest.py" <<'EOF'
import json, os, select, signal, socket, subprocess, sys, time

FWD, TMP = sys.argv[1], sys.argv[2]
failures = []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)

def body(seq, size):
    """Datagram seq: 4-byte big-endian seq, then bytes that depend on seq and offset."""
    head = seq.to_bytes(4, "big")
    return head + bytes((seq * 7 + i) % 251 for i in range(max(0, size - 4)))

def bigbuf(sock):
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
        except OSError:
            pass

class Fwd:
    """One udpfwd process: started with args, stderr read line by line, stats from a file."""
    n = 0
    def __init__(self, args, family=socket.AF_INET, stats_file=True):
        Fwd.n += 1
        self.stats_path = os.path.join(TMP, "stats%d.json" % Fwd.n)
        lo = "127.0.0.1" if family == socket.AF_INET else "::1"
        self.server = socket.socket(family, socket.SOCK_DGRAM)
        bigbuf(self.server)
        self.server.bind((lo, 0))
        sport = self.server.getsockname()[1]
        host = lo if family == socket.AF_INET else "[::1]"
        cmd = [FWD, "--listen", "%s:0" % host, "--to", "%s:%d" % (host, sport)] + args
        if stats_file:
            cmd += ["--stats", self.stats_path]
        self.t_start = time.monotonic()  # before udpfwd starts its clock
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.p.stdout.readline()
        port = json.loads(line)["port"]
        self.client = socket.socket(family, socket.SOCK_DGRAM)
        bigbuf(self.client)
        self.client.connect((lo, port))
        self.errbuf = b""
        self.errlines = []
        os.set_blocking(self.p.stderr.fileno(), False)
        self.server_seen = []       # (payload, source port) in arrival order
        self.client_seen = []       # payloads echoed back to the client

    def pump(self, seconds, until=None):
        """Echoes at the server, collects at the client, reads stderr, for up to seconds
        (returns early once until() holds)."""
        end = time.monotonic() + seconds
        fds = [self.server, self.client, self.p.stderr]
        while True:
            if until is not None and until():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return until is None
            r, _, _ = select.select(fds, [], [], min(left, 0.05))
            if self.server in r:
                while True:
                    try:
                        data, addr = self.server.recvfrom(65536, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    self.server_seen.append((data, addr[1]))
                    self.server.sendto(data, addr)
            if self.client in r:
                while True:
                    try:
                        data = self.client.recv(65536, socket.MSG_DONTWAIT)
                    except (BlockingIOError, ConnectionRefusedError):
                        break
                    self.client_seen.append(data)
            if self.p.stderr in r:
                chunk = os.read(self.p.stderr.fileno(), 65536)
                self.errbuf += chunk
                *lines, self.errbuf = self.errbuf.split(b"\n")
                self.errlines += [l.decode(errors="replace") for l in lines]

    def quiet(self, max_seconds=10.0, idle=0.4):
        """Pumps until nothing has arrived for idle seconds."""
        end = time.monotonic() + max_seconds
        while time.monotonic() < end:
            before = len(self.server_seen) + len(self.client_seen)
            self.pump(idle)
            if len(self.server_seen) + len(self.client_seen) == before:
                return

    def send_paced(self, payloads, batch=25):
        for i in range(0, len(payloads), batch):
            for p in payloads[i:i + batch]:
                self.client.send(p)
            self.pump(0.005)

    def wait_log(self, text, seconds=10.0):
        return self.pump(seconds, lambda: any(text in l for l in self.errlines))

    def stop(self):
        """SIGTERM; returns the final stats."""
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        check(rc == 0, "udpfwd exits 0 on SIGTERM (rc %s)" % rc)
        self.server.close()
        self.client.close()
        rest = self.p.stderr.read() or b""
        self.errlines += (self.errbuf + rest).decode(errors="replace").split("\n")
        if not os.path.exists(self.stats_path):
            return None
        with open(self.stats_path) as f:
            return json.loads(f.read())

def consistent(st, d):
    s = st[d]
    pending = st["pending_" + d]
    return s["in"] + s["duplicated"] == s["out"] + s["dropped"] + pending

# 1. Lossless, both ways, content intact; a window of 16 keeps the buffers from overflowing.
def lossless(family, count, label):
    f = Fwd(["--seed", "1"], family)
    sizes = lambda seq: 65000 if seq % 100 == 7 else 1 + (seq * 37) % 1400 + 4
    sent = 0
    while sent < count:
        while sent < count and sent - len(f.client_seen) < 16:
            f.client.send(body(sent, sizes(sent)))
            sent += 1
        if not f.pump(10, lambda: sent - len(f.client_seen) < 16 or sent == len(f.client_seen)):
            break
    f.pump(10, lambda: len(f.client_seen) >= count)
    st = f.stop()
    up = sorted(d for d, _ in f.server_seen)
    down = sorted(f.client_seen)
    want = sorted(body(i, sizes(i)) for i in range(count))
    check(up == want, "%s: server got all %d datagrams once, intact (got %d)"
          % (label, count, len(up)))
    check(down == want, "%s: client got all %d echoes once, intact (got %d)"
          % (label, count, len(down)))
    check(st["up"]["in"] == count and st["up"]["out"] == count and st["up"]["dropped"] == 0
          and st["down"]["in"] == count and st["down"]["out"] == count
          and st["down"]["dropped"] == 0, "%s: stats count %d in and out each way: %s %s"
          % (label, count, st["up"], st["down"]))

lossless(socket.AF_INET, 1000, "IPv4 lossless")
try:
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.bind(("::1", 0))
    s.close()
    have6 = True
except OSError:
    have6 = False
if have6:
    lossless(socket.AF_INET6, 300, "IPv6 lossless")
else:
    print("skip IPv6 lossless: no ::1 on this machine", flush=True)

# 2. --loss 0.5 both ways: about half of 1000 reach the server, about a quarter come back.
def loss_run(seed):
    f = Fwd(["--loss", "0.5", "--seed", str(seed)])
    f.send_paced([body(i, 100) for i in range(1000)])
    f.quiet()
    st = f.stop()
    return f, st

f, st = loss_run(42)
got_up, got_down = len(f.server_seen), len(f.client_seen)
check(380 <= got_up <= 620, "--loss 0.5: server got %d of 1000 (expected ~500)" % got_up)
check(130 <= got_down <= 370, "--loss 0.5: client got %d of 1000 (expected ~250)" % got_down)
check(st["up"]["in"] == 1000 and st["up"]["lost"] == 1000 - got_up
      and st["up"]["out"] == got_up, "--loss 0.5: up stats agree: %s" % st["up"])
check(st["down"]["in"] == got_up and st["down"]["lost"] == got_up - got_down
      and st["down"]["out"] == got_down, "--loss 0.5: down stats agree: %s" % st["down"])
check(consistent(st, "up") and consistent(st, "down"), "--loss 0.5: in + dup = out + dropped")
# Same seed, same datagrams in the same order: the same ones dropped. Another seed differs.
seqs = lambda fw: sorted(int.from_bytes(d[:4], "big") for d, _ in fw.server_seen)
f2, _ = loss_run(42)
check(seqs(f2) == seqs(f), "--seed 42 twice: the same datagrams dropped")
f3, _ = loss_run(43)
check(seqs(f3) != seqs(f), "--seed 43: different datagrams dropped")

# 3. --dup 1.0 both ways: the server sees each datagram twice, the client four times.
f = Fwd(["--dup", "1.0", "--seed", "3"])
f.send_paced([body(i, 200) for i in range(500)])
f.pump(15, lambda: len(f.client_seen) >= 2000)
f.quiet(idle=0.3)
st = f.stop()
per_up = {}
for d, _ in f.server_seen:
    per_up[d] = per_up.get(d, 0) + 1
per_down = {}
for d in f.client_seen:
    per_down[d] = per_down.get(d, 0) + 1
check(len(per_up) == 500 and set(per_up.values()) == {2},
      "--dup 1.0: server got each of 500 twice (%d datagrams)" % len(f.server_seen))
check(len(per_down) == 500 and set(per_down.values()) == {4},
      "--dup 1.0: client got each of 500 four times (%d datagrams)" % len(f.client_seen))
check(st["up"]["duplicated"] == 500 and st["up"]["out"] == 1000
      and st["down"]["duplicated"] == 1000 and st["down"]["out"] == 2000,
      "--dup 1.0: stats say so: %s %s" % (st["up"], st["down"]))

# 4. --corrupt-up 1.0: every datagram reaches the server with exactly one byte changed, and
#    comes back exactly as the server echoed it (no corruption down).
f = Fwd(["--corrupt-up", "1.0", "--seed", "4"])
pattern = bytes((i * 13) % 256 for i in range(300))
f.send_paced([pattern] * 1000)
f.pump(15, lambda: len(f.client_seen) >= 1000)
st = f.stop()
diffs = [sum(a != b for a, b in zip(d, pattern)) for d, _ in f.server_seen]
check(len(diffs) == 1000 and all(n == 1 and len(d) == 300 for n, (d, _)
                                 in zip(diffs, f.server_seen)),
      "--corrupt-up 1.0: all %d datagrams had exactly one byte changed" % len(diffs))
check(sorted(f.client_seen) == sorted(d for d, _ in f.server_seen),
      "--corrupt-up 1.0: the down direction is untouched")
check(st["up"]["corrupted"] == 1000 and st["down"]["corrupted"] == 0,
      "--corrupt-up 1.0: stats count 1000 corrupted up, 0 down")

# 5. --rebind-after 1 then SIGUSR2: the server sees a second, then a third source port, and
#    the echoes keep coming back through each.
f = Fwd(["--rebind-after", "1", "--seed", "5"])
seq = 0
def ports():
    return list(dict.fromkeys(p for _, p in f.server_seen))
def ping_until(cond, seconds):
    global seq
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        f.client.send(body(seq, 50))
        seq += 1
        if f.pump(0.02, cond):
            return True
    return False
ping_until(lambda: len(ports()) >= 2, 15)
took = time.monotonic() - f.t_start
check(len(ports()) == 2 and took >= 0.99,
      "--rebind-after 1: server saw a new source port after %.2f s" % took)
n = len(f.client_seen)
ping_until(lambda: len(f.client_seen) >= n + 5, 10)
check(len(f.client_seen) >= n + 5, "--rebind-after 1: echoes return through the new port")
f.p.send_signal(signal.SIGUSR2)
ping_until(lambda: len(ports()) >= 3, 10)
n = len(f.client_seen)
ping_until(lambda: len(f.client_seen) >= n + 5, 10)
check(len(ports()) == 3 and len(f.client_seen) >= n + 5,
      "SIGUSR2: server saw a third source port, echoes return (ports %s)" % ports())
st = f.stop()
check(st["rebinds"] == 2, "rebind stats: %d rebinds" % st["rebinds"])

# 6. SIGUSR1 blackhole: once the forwarder says "blackhole on", nothing gets through either
#    way until it says "blackhole off".
f = Fwd(["--seed", "6"])
f.send_paced([body(i, 80) for i in range(50)])
f.pump(10, lambda: len(f.client_seen) >= 50)
check(len(f.client_seen) == 50, "blackhole: 50 echoes before")
f.p.send_signal(signal.SIGUSR1)
check(f.wait_log("blackhole on"), "SIGUSR1: forwarder reports the blackhole on")
before_s, before_c = len(f.server_seen), len(f.client_seen)
f.send_paced([body(i, 80) for i in range(50, 150)])
f.pump(0.5)
check(len(f.server_seen) == before_s and len(f.client_seen) == before_c,
      "blackhole: nothing through (server got %d, client %d)"
      % (len(f.server_seen) - before_s, len(f.client_seen) - before_c))
f.p.send_signal(signal.SIGUSR1)
check(f.wait_log("blackhole off"), "SIGUSR1 again: forwarder reports the blackhole off")
f.send_paced([body(i, 80) for i in range(150, 200)])
f.pump(10, lambda: len(f.client_seen) >= before_c + 50)
check(len(f.client_seen) == before_c + 50, "blackhole off: all 50 echoes return")
st = f.stop()
check(st["up"]["blackholed"] == 100, "blackhole stats: %d blackholed up"
      % st["up"]["blackholed"])

# 7. Delay, jitter, reordering, bursts, scheduled blackholes, periodic stats on stderr.
f = Fwd(["--delay", "50", "--seed", "7"])
t0 = time.monotonic()
f.client.send(body(0, 20))
f.pump(10, lambda: len(f.client_seen) >= 1)
rtt = time.monotonic() - t0
f.stop()
check(len(f.client_seen) == 1 and rtt >= 0.099, "--delay 50: round trip %.3f s >= 0.1 s" % rtt)

def arrival_order(fw):
    return [int.from_bytes(d[:4], "big") for d, _ in fw.server_seen]

f = Fwd(["--jitter-up", "20", "--seed", "8"])
f.send_paced([body(i, 60) for i in range(300)])
f.pump(10, lambda: len(f.server_seen) >= 300)
f.stop()
check(arrival_order(f) == list(range(300)), "--jitter-up 20: all 300 arrive, in order")

f = Fwd(["--reorder-up", "0.3:30", "--seed", "9"])
f.send_paced([body(i, 60) for i in range(300)])
f.pump(10, lambda: len(f.server_seen) >= 300)
st = f.stop()
order = arrival_order(f)
late = sum(1 for a, b in zip(order, order[1:]) if b < a)
check(sorted(order) == list(range(300)) and late > 0 and 40 <= st["up"]["reordered"] <= 140,
      "--reorder-up 0.3:30: all 300 arrive, %d out of order, stats %d reordered (~90)"
      % (late, st["up"]["reordered"]))

f = Fwd(["--burst-up", "0.03:5", "--seed", "10"])
f.send_paced([body(i, 60) for i in range(1000)], batch=10)
f.quiet(idle=0.3)
st = f.stop()
got = set(arrival_order(f))
missing = [i for i in range(1000) if i not in got]
runs = sum(1 for i in missing if i - 1 not in missing)
check(st["up"]["burst"] == len(missing) and 0 < runs <= len(missing) / 2 and st["up"]["lost"] == 0,
      "--burst-up 0.03:5: %d dropped in %d runs, stats %d" % (len(missing), runs, st["up"]["burst"]))

f = Fwd(["--blackhole-every", "0.4:0.2", "--stats-interval", "0.2", "--seed", "11"],
        stats_file=False)
for i in range(120):
    f.client.send(body(i, 40))
    f.pump(0.01)
f.quiet(idle=0.3)
f.stop()
stats_lines = [l for l in f.errlines if l.startswith("{")]
last = json.loads(stats_lines[-1]) if stats_lines else None
check(len(stats_lines) >= 3, "--stats-interval 0.2: %d stats lines on stderr" % len(stats_lines))
check(last is not None and last["up"]["blackholed"] > 0 and
      last["up"]["out"] == len(f.server_seen) and last["up"]["in"] == 120,
      "--blackhole-every 0.4:0.2: %s of 120 blackholed"
      % (last["up"]["blackholed"] if last else "?"))

# 8. Usage errors: exit 2, a message on stderr, nothing on stdout.
base = ["--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"]
for args in (["--loss", "1.5"] + base, ["--loss", "abc"] + base, ["--burst", "0.1"] + base,
             ["--reorder", "0.1:-3"] + base, ["--blackhole-every", "1:2"] + base,
             ["--delay-sideways", "5"] + base, ["--listen", "127.0.0.1:0"],
             ["--listen", "nonsense", "--to", "127.0.0.1:9"],
             ["--listen", "127.0.0.1:0", "--to", "127.0.0.1:0"], ["--seed"] + base,
             ["--rebind-after", "0"] + base, ["--queue", "0"] + base, ["stray"] + base):
    r = subprocess.run([FWD] + args, capture_output=True, timeout=10)
    check(r.returncode == 2 and r.stderr and not r.stdout,
          "usage error %s: exit %d, %s" % (args[:2], r.returncode,
                                           r.stderr.decode().splitlines()[:1]))

if failures:
    print("udpfwd_selftest: %d FAILED" % len(failures), flush=True)
    sys.exit(1)
print("udpfwd_selftest: all passed", flush=True)
EOF

start=$(date +%s)
"$py" "$tmp/selftest.py" "$fwd" "$tmp"
echo "udpfwd_selftest: $(( $(date +%s) - start )) s" >&2
