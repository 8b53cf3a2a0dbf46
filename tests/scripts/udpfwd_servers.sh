#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# udpfwd with several --to (tools/udpfwd.c, docs/udpfwd.md "Several servers"), on loopback with
# /usr/bin/python3 (standard library only) as two servers and two clients:
#  - `--clients 2 --to A --to B`: the first client to appear reaches server A only, the second
#    server B only, and each gets back only its own server's replies;
#  - both go through ONE bottleneck: two 8 Mbit/s streams into `--rate-up 10mbit` arrive at
#    10 Mbit/s in total (two queues would pass 16), both lose at the shared tail;
#  - the stats' per_client entries name each client's server and add up to the direction's
#    totals (datagrams out, bytes out, tail drops);
#  - several --to without --clients N (N >= their number) exit 2 with a message.
# Takes about 3 s. Usage: tests/scripts/udpfwd_servers.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
fwd=$(cd "$1" && pwd)/udpfwd
if [ ! -x "$fwd" ]; then echo "udpfwd_servers: $fwd not built" >&2; exit 1; fi
py=/usr/bin/python3 here=$(cd "$(dirname "$0")" && pwd) # udpstamp.py
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "$py" - "$fwd" "$tmp" <<'EOF'
import json, os, select, signal, socket, subprocess, sys, time
from udpstamp import recv_stamped, stamp

FWD, TMP = sys.argv[1], sys.argv[2]
LO = "127.0.0.1"
failures, passed = [], []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    (passed if cond else failures).append(what)

def sock(connect=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        s.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
    if connect:
        s.connect(connect)
    else:
        s.bind((LO, 0))
    s.setblocking(False)
    return s

def recv_all(s):
    out = []
    while True:
        try:
            out.append(s.recvfrom(65536))
        except (BlockingIOError, ConnectionRefusedError):
            return out

def usage_run(args):
    """(exit status, stderr) of udpfwd with args; (None, ...) if it was still running after 3 s."""
    try:
        r = subprocess.run([FWD, "--listen", LO + ":0"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=3)
        return r.returncode, r.stderr.strip()
    except subprocess.TimeoutExpired:
        return None, "(still running: the options were accepted)"

# Bad usage first: two servers need --clients 2 or more.
for extra in ([], ["--clients", "1"]):
    rc, err = usage_run(["--to", LO + ":9", "--to", LO + ":10"] + extra)
    check(rc == 2 and "--clients" in err,
          "two --to with %s exit 2 naming --clients (%s: %s)" % (extra or "no --clients", rc, err[:120]))
rc, err = usage_run(["--clients", "32"] + sum([["--to", "%s:%d" % (LO, 9 + i)] for i in range(17)], []))
check(rc == 2 and "at most 16" in err, "a 17th --to exits 2 (%s: %s)" % (rc, err[:120]))

A, B = sock(), sock()
for srv in (A, B):
    stamp(srv)  # arrival times from the kernel (udpstamp.py)
stats = os.path.join(TMP, "stats.json")
p = subprocess.Popen([FWD, "--listen", LO + ":0", "--to", "%s:%d" % (LO, A.getsockname()[1]),
                      "--to", "%s:%d" % (LO, B.getsockname()[1]), "--clients", "2",
                      "--rate-up", "10mbit", "--queue-packets-up", "20", "--stats", stats, "--seed", "1"],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
port = json.loads(p.stdout.readline())["port"]
c1 = sock((LO, port))
c2 = sock((LO, port))
# c1 appears first: its first datagram must be at a server before c2 sends anything.
c1.send(b"1hello")
deadline = time.monotonic() + 5
first = []
while not first and time.monotonic() < deadline:
    select.select([A, B], [], [], 0.05)
    first = [("A", d) for d, _ in recv_all(A)] + [("B", d) for d, _ in recv_all(B)]
check(first == [("A", b"1hello")], "the first client's first datagram reaches the first --to (%s)" % first)

got = {"A": [], "B": []}
t0 = time.monotonic()
sent = 0
while time.monotonic() - t0 < 1.5:
    # each client 8 Mbit/s: 1000-byte datagrams, one per ms each, alternating which goes first
    while sent <= (time.monotonic() - t0) * 1000:
        pair = [(c1, b"1"), (c2, b"2")] if sent % 2 else [(c2, b"2"), (c1, b"1")]
        for c, tag in pair:
            c.send(tag + sent.to_bytes(4, "big") + bytes(995))
        sent += 1
    select.select([A, B], [], [], 0.002)
    for name, srv in (("A", A), ("B", B)):
        for data, addr, _, t in recv_stamped(srv, "udpfwd_servers"):
            got[name].append((data[:1], t))
            srv.sendto(name.encode() + data[:5], addr)  # a reply naming its server
end = time.monotonic() + 0.3
while time.monotonic() < end:
    select.select([A, B], [], [], 0.05)
    for name, srv in (("A", A), ("B", B)):
        for data, addr, _, t in recv_stamped(srv, "udpfwd_servers"):
            got[name].append((data[:1], t))
            srv.sendto(name.encode() + data[:5], addr)
time.sleep(0.1)
e1 = [d for d, _ in recv_all(c1)]
e2 = [d for d, _ in recv_all(c2)]
check(got["A"] and all(t == b"1" for t, _ in got["A"]), "server A gets client 1's datagrams only (%d, tags %s)"
      % (len(got["A"]), sorted(set(t for t, _ in got["A"]))))
check(got["B"] and all(t == b"2" for t, _ in got["B"]), "server B gets client 2's datagrams only (%d, tags %s)"
      % (len(got["B"]), sorted(set(t for t, _ in got["B"]))))
check(e1 and e2 and all(e[:2] == b"A1" for e in e1) and all(e[:2] == b"B2" for e in e2),
      "each client gets its own server's replies only (%d and %d)" % (len(e1), len(e2)))
arr = sorted(t for srv in got.values() for _, t in srv[1:])
rate = (len(arr) - 1) * 1000 * 8 / (arr[-1] - arr[0])
na, nb = len(got["A"]), len(got["B"])
check(9e6 <= rate <= 11e6 and min(na, nb) >= 0.25 * (na + nb),
      "two 8 Mbit/s streams to two servers share the one 10 Mbit/s bottleneck: %.2f Mbit/s in total, "
      "%d and %d datagrams" % (rate / 1e6, na, nb))
p.send_signal(signal.SIGTERM)
check(p.wait(timeout=10) == 0, "udpfwd exits 0")
st = json.load(open(stats))
pc = st.get("per_client", [])
up = st["up"]
check(len(pc) == 2 and [c["server"] for c in pc] == [0, 1]
      and pc[0]["addr"].endswith(":%d" % c1.getsockname()[1]) and pc[1]["addr"].endswith(":%d" % c2.getsockname()[1]),
      "per_client: client 1 -> server 0, client 2 -> server 1 (%s)" % [(c.get("addr"), c.get("server")) for c in pc])
if len(pc) == 2:
    check(sum(c["up"]["out"] for c in pc) == up["out"] and sum(c["up"]["bytes_out"] for c in pc) == up["bytes_out"]
          and sum(c["up"]["in"] for c in pc) == up["in"] and sum(c["up"]["dropped"] for c in pc) == up["dropped"]
          and pc[0]["up"]["dropped"] > 0 and pc[1]["up"]["dropped"] > 0 and up["queue_drop"] == up["dropped"],
          "per_client counts add up to the totals, and both flows lose at the shared tail (%s / %s)"
          % ([c["up"] for c in pc], {k: up[k] for k in ("in", "out", "dropped", "queue_drop")}))
    check(pc[0]["down"]["out"] == len(e1) and pc[1]["down"]["out"] == len(e2),
          "per_client down: each client's replies counted (%d, %d)" % (pc[0]["down"]["out"], pc[1]["down"]["out"]))
print("%d passed, %d failed" % (len(passed), len(failures)))
sys.exit(1 if failures else 0)
EOF
