#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Pure's comparison runner: the same work through Pure and its peers, side by side.

Run with Debian's interpreter (it sees python3-matplotlib):

    /usr/bin/python3 bench/run.py [drain] [--quick] [--sizes 61,1024] [--rounds 5]
                                  [--only a,b] [--skip a,b] [--no-build] [--json]
    /usr/bin/python3 bench/run.py latency|handshakes [--quick] [--rounds 5] [--n N] [--only a,b]
    /usr/bin/python3 bench/run.py rpc [--quick] [--links 1,100] [--outstanding 1,16] [--sizes 61,1024]
                                      [--duration 5] [--warmup 1] [--rounds 5] [--only pure,tls]
    /usr/bin/python3 bench/run.py paths [--quick] [--rtt 40,100] [--paths q10,codel] [--fair-paths q20]
                                        [--n 1500] [--fair-n 6000] [--only pure,2pure,pure+quinn]

Experiments are subcommands; `drain` is the default (see bench/README.md).
Each experiment registers itself in EXPERIMENTS at the bottom of this file;
the shared machinery (building, the invocation table, starting a server and
reading its JSON line, CPU accounting of both sides) is above it.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
PEERS_OUT = os.path.join(BUILD, "peers")
RESULTS = os.path.join(ROOT, "bench", "results")


# --------------------------------------------------------------------------
# The invocation table: the one place that knows how each implementation runs.
#
#   bin    binary path, relative to the build directory (default build/, --build-dir)
#   build  "cmake" (Pure itself) or the peer directory whose build.sh makes bin
#   serve  server arguments; it prints one JSON line {"port": N, ...}
#   drain  client arguments; {port} {n} {size} are substituted
#   pass   server JSON key -> client flag, for what the client needs to know
#          (a public key, a certificate pin, a symmetric key)
#   echo   server arguments for an echo server (latency, handshakes; None: no such mode)
#   ping   latency client: {port} {n} {size}; one message in flight, N round trips
#   hs     handshakes client: {port} {n}; N connections one after another, one echo each
# --------------------------------------------------------------------------
class Impl:
    def __init__(self, name, bin, build, serve, drain, passes=None, desc="", echo=None, ping=None, hs=None):
        self.name, self.bin, self.build = name, bin, build
        self.serve, self.drain, self.passes, self._desc = serve, drain, passes or {}, desc
        self.echo, self.ping, self.hs = echo, ping, hs

    @property
    def path(self):
        return os.path.join(BUILD, self.bin)

    @property
    def desc(self):
        """What the row is; an ngtcp2 row names the library its binary was built against."""
        v = ngtcp2_version() if "ngtcp2 0.12" in self._desc else None
        return self._desc.replace("ngtcp2 0.12", "ngtcp2 " + v) if v else self._desc


_NGTCP2_VERSION = {}


def ngtcp2_version():
    """The ngtcp2 version the peer binary reports in its --help ("0.12.1" from Debian's package; a 1.x
    when peers/ngtcp2/build.sh ran with NGTCP2_PREFIX), or None if there is no binary yet."""
    path = os.path.join(PEERS_OUT, "ngtcp2")
    try:
        key = (path, os.stat(path).st_mtime_ns)
    except OSError:
        return None
    if key not in _NGTCP2_VERSION:
        try:
            out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        m = re.search(r"\(ngtcp2 ([0-9][0-9.]*) \+", out)
        _NGTCP2_VERSION[key] = m.group(1) if m else None
    return _NGTCP2_VERSION[key]


PEER_PING = ["ping", "{port}", "{n}", "{size}"]
PEER_HS = ["handshakes", "{port}", "{n}"]
IMPLS = [
    Impl("pure", "pure", "cmake",
         ["serve", "--ephemeral", "--listen", "127.0.0.1:0", "--services", "drain"],
         ["drain", "127.0.0.1:{port}", "{n}", "{size}"], {"public_key": "--peer-key"},
         "Pure (Noise IK, one link)",
         echo=["serve", "--ephemeral", "--listen", "127.0.0.1:0", "--services", "echo"],
         ping=["ping", "127.0.0.1:{port}", "{n}", "{size}"],
         hs=["bench", "handshakes", "127.0.0.1:{port}", "{n}"]),
    Impl("ngtcp2", "peers/ngtcp2", "ngtcp2", ["serve"], ["drain", "{port}", "{n}", "{size}"], {},
         "QUIC: ngtcp2 0.12 + GnuTLS", echo=["serve", "--echo"], ping=PEER_PING, hs=PEER_HS),
    Impl("quinn", "peers/quinn", "quinn", ["serve"], ["drain", "{port}", "{n}", "{size}"],
         {"cert_sha256": "--cert-sha256"}, "QUIC: quinn 0.9 + rustls", echo=["serve", "--echo"], ping=PEER_PING,
         hs=PEER_HS),
    Impl("tls", "peers/tls", "tls", ["serve"], ["drain", "{port}", "{n}", "{size}"],
         {"cert_sha256": "--cert-sha256"}, "TCP + TLS 1.3 (OpenSSL 3.0, AES-128-GCM)", echo=["serve", "--echo"],
         ping=PEER_PING, hs=PEER_HS),
    # The handshakes experiment's TLS row with session resumption (a TLS 1.3 ticket from the first
    # connection, PSK with X25519 on every later one): no drain row of its own.
    Impl("tls-resume", "peers/tls", "tls", ["serve", "--resume"], None, {"cert_sha256": "--cert-sha256"},
         "TCP + TLS 1.3 resuming a session (handshakes only)", echo=["serve", "--echo", "--resume"],
         hs=PEER_HS + ["--resume"]),
    Impl("tcp", "peers/tls", "tls", ["serve", "--plain"], ["drain", "{port}", "{n}", "{size}", "--plain"], {},
         "TCP plain (no encryption)", echo=["serve", "--plain", "--echo"], ping=PEER_PING + ["--plain"],
         hs=PEER_HS + ["--plain"]),
    Impl("udp", "peers/udp-floor", "udp-floor", ["serve"], ["drain", "{port}", "{n}", "{size}"], {},
         "raw UDP, GSO/GRO, no retransmission (floor)"),
    Impl("udp-seal", "peers/udp-floor", "udp-floor", ["serve", "--seal"],
         ["drain", "{port}", "{n}", "{size}", "--seal"], {"key": "--key"},
         "raw UDP + AES-128-GCM per datagram (OpenSSL EVP)"),
    # The incumbents (issue #21; bench/README.md says how each is configured and why):
    Impl("zmq", "peers/zmq", "zmq", ["serve"], ["drain", "{port}", "{n}", "{size}"],
         {"server_key": "--server-key", "ack_port": "--ack-port"},
         "ZeroMQ 4.3 + CURVE: PUSH/PULL, HWM 10,000 (libzmq, libsodium)"),
    Impl("grpc", "peers/grpc", "grpc", ["serve"], ["drain", "{port}", "{n}", "{size}"],
         {"cert_b64": "--cert-b64"}, "gRPC 1.51 C++ over TLS (OpenSSL 3.0): one client-streaming call"),
]
IMPL_BY_NAME = {i.name: i for i in IMPLS}
AEAD_RATE_CMD = ["peers/udp-floor", "aead-rate"]  # relative to the build directory
FLOOR_ROW = "floor"  # derived: udp + 2 x AEAD ns/byte x bytes per message


def log(msg):
    print(msg, flush=True)


def note(msg):
    print("note: " + msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------
def build_pure():
    """Configure (if needed) and build Pure; returns an error string or None."""
    if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
        return "no CMakeLists.txt"
    try:
        if not os.path.exists(os.path.join(BUILD, "build.ninja")):
            r = subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
            if r.returncode:
                return "cmake configure failed:\n" + r.stdout[-2000:]
        r = subprocess.run(["ninja", "-C", BUILD], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=1800)
        if r.returncode:
            return "ninja failed:\n" + r.stdout[-3000:]
    except FileNotFoundError as e:
        return f"build tool missing: {e.filename} (apt-get install cmake ninja-build)"
    except subprocess.TimeoutExpired:
        return "build timed out"
    return None


PEER_ABSENT_RC = 3  # a build.sh exits so when its Debian packages are not installed
PEERS_ABSENT = set()  # peers whose build.sh said so: their rows are skipped, not failed


def build_peer(peer):
    script = os.path.join(ROOT, "peers", peer, "build.sh")
    if not os.path.exists(script):
        return f"peers/{peer}/build.sh does not exist"
    t0 = time.monotonic()
    try:
        r = subprocess.run([script, PEERS_OUT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=3600)
    except subprocess.TimeoutExpired:
        return f"peers/{peer}/build.sh timed out"
    dt = time.monotonic() - t0
    if r.returncode == PEER_ABSENT_RC:
        PEERS_ABSENT.add(peer)
        return r.stdout.strip()[-600:]
    if r.returncode:
        return f"peers/{peer}/build.sh failed (exit {r.returncode}):\n" + r.stdout[-3000:]
    if dt > 5:
        log(f"built peer {peer} in {dt:.0f} s")
    return None


def prepare(impls, no_build):
    """Builds what the chosen rows need. Returns (runnable impls, {name: reason skipped}, {name: build error})."""
    skipped, broken, done = {}, {}, {}
    for impl in impls:
        if impl.build == "cmake":
            # Only when missing: build/ is the lead's working tree; don't race their ninja.
            if not no_build and "cmake" not in done and not os.path.exists(impl.path):
                done["cmake"] = build_pure()
                if done["cmake"]:
                    note("Pure's build failed; " + ("using the existing build/pure" if os.path.exists(impl.path)
                                                    else "skipping the pure row") + "\n" + done["cmake"])
            if not os.path.exists(impl.path):
                skipped[impl.name] = f"{impl.path} does not exist yet"
            continue
        if not no_build and impl.build not in done:
            done[impl.build] = build_peer(impl.build)
        err = done.get(impl.build)
        if err and impl.build in PEERS_ABSENT:
            skipped[impl.name] = err
        elif err:
            broken[impl.name] = err
        elif not os.access(impl.path, os.X_OK):
            broken[impl.name] = f"{impl.path} missing" + (" (--no-build given)" if no_build else "")
    runnable = [i for i in impls if i.name not in skipped and i.name not in broken]
    for name, why in skipped.items():
        note(f"skipping {name}: {why}")
    for name, why in broken.items():
        print(f"ERROR: {name} cannot run: {why}", file=sys.stderr, flush=True)
    return runnable, skipped, broken


# --------------------------------------------------------------------------
# Running one server + client pair, with both sides' CPU
# --------------------------------------------------------------------------
class RunError(Exception):
    pass


def server_cpu_ns(pid):
    """Sum of every live thread's on-CPU time (schedstat, ns); without
    schedstat (CONFIG_SCHED_INFO off), the process's utime + stime in ticks."""
    total = 0
    task_dir = f"/proc/{pid}/task"
    try:
        tids = os.listdir(task_dir)
    except OSError:
        raise RunError("server process vanished")
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            if not os.path.exists(f"{task_dir}/{tid}"):
                continue  # a thread exited between listdir and open
            return stat_cpu_ns(pid)
        except (OSError, ValueError, IndexError):
            pass
    return total


def stat_cpu_ns(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        raise RunError("cannot read the server's CPU time from /proc")


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def pin_to(cpu):
    """A preexec_fn that binds the child to one CPU, or None (the scheduler places it)."""
    return None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))


def rpc_pins(args):
    """(server CPU, client CPU) for the RPC experiments: the client on the first CPU this process
    may use, the server on the last, unless --no-pin or fewer than 2 CPUs. Pinned apart, each
    side's wakeups cost the same in every run: left to the scheduler, client and server sometimes
    share a core (a wakeup is then a cheap switch) and sometimes not (an idle core is woken), and
    the server's CPU per request at a fixed rate came out 5 or 15 µs from one run to the next."""
    cpus = sorted(os.sched_getaffinity(0))
    if getattr(args, "no_pin", False) or len(cpus) < 2:
        return None, None
    return cpus[-1], cpus[0]


class Server:
    """Starts `impl` serving, reads its JSON line; a context manager that kills it."""

    def __init__(self, impl, timeout=20.0, args=None, cpu=None):
        self.impl = impl
        self.out = tempfile.TemporaryFile(mode="w+")
        self.err = tempfile.TemporaryFile(mode="w+")
        try:
            self.proc = subprocess.Popen([impl.path] + (args or impl.serve), stdout=self.out, stderr=self.err,
                                         stdin=subprocess.DEVNULL, cwd=ROOT, preexec_fn=pin_to(cpu))
        except OSError as e:
            raise RunError(f"cannot start {impl.path}: {e}")
        deadline = time.monotonic() + timeout
        line = ""
        while True:
            self.out.seek(0)
            line = self.out.readline()
            if line.endswith("\n"):
                break
            if self.proc.poll() is not None:
                raise RunError(f"server exited ({self.proc.returncode}) before printing its JSON line; "
                               f"stderr: {self.stderr_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RunError(f"server printed no JSON line within {timeout:.0f} s")
            time.sleep(0.005)
        try:
            self.info = json.loads(line)
            self.port = int(self.info["port"])
        except (ValueError, KeyError, TypeError):
            self.kill()
            raise RunError(f"server's first line is not {{\"port\": N, ...}} JSON: {line.strip()[:200]!r}")

    def client_extra(self):
        extra = []
        for key, flag in self.impl.passes.items():
            if key not in self.info:
                raise RunError(f"server JSON lacks {key!r}, which its client needs")
            extra += [flag, str(self.info[key])]
        return extra

    def cpu_ns(self):
        return server_cpu_ns(self.proc.pid)

    def memory_kb(self, field="VmRSS"):
        """The server's VmRSS (or VmHWM: its peak) in KiB, None if unreadable (Linux /proc)."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        return None

    def stderr_tail(self, n=600):
        try:
            self.err.seek(0)
            return self.err.read()[-n:].strip() or "(empty)"
        except (OSError, ValueError):
            return "(unreadable)"

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        self.out.close()
        self.err.close()


def run_client(argv, timeout):
    """Runs a client to completion; returns (rc, stdout, stderr, client CPU s, wall s)."""
    outs, cpu, wall = run_clients([argv], timeout)
    rc, out, err = outs[0]
    return rc, out, err, cpu, wall


def last_json(text, key):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if key in d:
                return d
    return None


# --------------------------------------------------------------------------
# Experiment: drain
# --------------------------------------------------------------------------
DRAIN_N = {61: 1_000_000, 1024: 300_000, 16384: 30_000}
DRAIN_N_QUICK = {61: 2000, 1024: 1000, 16384: 200}


def drain_n(size, quick):
    table = DRAIN_N_QUICK if quick else DRAIN_N
    if size in table:
        return table[size]
    # Other sizes: about as many bytes as the 1 KiB run.
    base = 1000 * 1028 if quick else 300_000 * 1028
    return max(1, base // (size + 4))


def drain_one(impl, n, size, timeout):
    """One drain run. Returns a result dict (ok False with `error` on failure)."""
    res = {"impl": impl.name, "size": size, "messages": n, "ok": False}
    try:
        with Server(impl) as srv:
            argv = [impl.path] + [a.format(port=srv.port, n=n, size=size) for a in impl.drain] + srv.client_extra()
            s0 = srv.cpu_ns()
            rc, out, err, ccpu, wall = run_client(argv, timeout)
            s1 = srv.cpu_ns()
            alive = srv.proc.poll() is None
            res.update(client_cpu_s=ccpu, server_cpu_s=(s1 - s0) / 1e9, wall_s=wall)
            rep = last_json(out, "messages")
            if rep is None:
                raise RunError(f"client exit {rc}, no JSON result; stderr: {err.strip()[-600:] or '(empty)'}"
                               f"; server stderr: {srv.stderr_tail()}")
            res["report"] = rep
            sm = rep.get("server_messages")
            res["server_messages"] = sm
            if sm != n or rep.get("messages") != n:
                raise RunError(f"count mismatch: sent {n}, client reports messages={rep.get('messages')} "
                               f"server_messages={sm}; client stderr: "
                               f"{err.strip()[-400:]}; server stderr: {srv.stderr_tail()}")
            if rc != 0:
                raise RunError(f"client exit {rc}; stderr: {err.strip()[-600:]}")
            if not alive:
                raise RunError(f"server died during the run; stderr: {srv.stderr_tail()}")
            secs = rep.get("seconds")
            res["seconds"] = float(secs) if isinstance(secs, (int, float)) and secs > 0 else wall
            res["ok"] = True
    except RunError as e:
        res["error"] = str(e)
    return res


def med(xs):
    return statistics.median(xs) if xs else None


def summarize(runs, impl_names, sizes, aead, startup=None):
    """Per (impl, size): medians and ranges in µs per message; plus the floor row."""
    rows = []
    by = {}
    for r in runs:
        by.setdefault((r["impl"], r["size"]), []).append(r)
    for size in sizes:
        pure_med = None
        group = []
        for name in impl_names:
            rs = by.get((name, size), [])
            ok = [r for r in rs if r["ok"]]
            row = {"impl": name, "size": size, "runs": len(rs), "ok_runs": len(ok),
                   "failed_runs": len(rs) - len(ok)}
            if ok:
                n = ok[0]["messages"]
                both = [(r["client_cpu_s"] + r["server_cpu_s"]) * 1e6 / n for r in ok]
                cl = [r["client_cpu_s"] * 1e6 / n for r in ok]
                sv = [r["server_cpu_s"] * 1e6 / n for r in ok]
                secs = [r["seconds"] for r in ok]
                mbs = [n * size / s / 1e6 for s in secs]
                st = (startup or {}).get(name)
                if st and n > 1:
                    fixed = st["client_cpu_s"] + st["server_cpu_s"]
                    row["net_us"] = med([(r["client_cpu_s"] + r["server_cpu_s"] - fixed) * 1e6 / (n - 1) for r in ok])
                row.update(messages=n, both_us=med(both), both_min=min(both), both_max=max(both),
                           client_us=med(cl), server_us=med(sv), seconds=med(secs), mb_s=med(mbs))
            group.append(row)
            if name == "pure" and "both_us" in row:
                pure_med = row["both_us"]
        udp = next((r for r in group if r["impl"] == "udp" and "both_us" in r), None)
        if udp and aead:
            add = 2 * aead * (4 + size) / 1000.0  # µs: seal + open of every stream byte
            fl = {"impl": FLOOR_ROW, "size": size, "runs": 0, "ok_runs": 0, "failed_runs": 0,
                  "derived": True, "both_us": udp["both_us"] + add, "both_min": udp["both_min"] + add,
                  "both_max": udp["both_max"] + add}
            if "net_us" in udp:
                fl["net_us"] = udp["net_us"] + add
            group.append(fl)
        pure_net = next((r.get("net_us") for r in group if r["impl"] == "pure"), None)
        for row in group:
            if pure_med and "both_us" in row:
                row["vs_pure"] = row["both_us"] / pure_med
            if pure_net and row.get("net_us") is not None and pure_net > 0:
                row["vs_pure_net"] = row["net_us"] / pure_net
        rows += group
    return rows


def fmt(v, digits=3):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.{digits}f}"


def print_table(rows):
    hdr = ["impl", "size", "both µs/msg (min–max)", "client", "server", "net", "wall s", "MB/s", "×pure", "runs"]
    lines = []
    for r in rows:
        if "both_us" in r:
            both = f"{fmt(r['both_us'])} ({fmt(r['both_min'])}–{fmt(r['both_max'])})"
        else:
            both = "FAILED"
        runs = "derived" if r.get("derived") else f"{r['ok_runs']}/{r['runs']}"
        lines.append([r["impl"], str(r["size"]), both, fmt(r.get("client_us")), fmt(r.get("server_us")),
                      fmt(r.get("net_us")), fmt(r.get("seconds")), fmt(r.get("mb_s"), 1), fmt(r.get("vs_pure"), 2), runs])
    widths = [max(len(x[i]) for x in [hdr] + lines) for i in range(len(hdr))]
    out = ["  ".join(h.ljust(w) for h, w in zip(hdr, widths))]
    prev = None
    for ln, r in zip(lines, rows):
        if prev is not None and r["size"] != prev:
            out.append("")
        prev = r["size"]
        out.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(ln, widths))))
    log("\n".join(out))


def plot(rows, sizes, names, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        note("matplotlib missing (apt-get install python3-matplotlib; run with /usr/bin/python3): no chart")
        return None
    names = names + ([FLOOR_ROW] if any(r["impl"] == FLOOR_ROW for r in rows) else [])
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(sizes) * max(1, len(names)) / 3), 4.8))
    width = 0.8 / max(1, len(names))
    for k, name in enumerate(names):
        xs, ys, lo, hi = [], [], [], []
        for j, size in enumerate(sizes):
            r = next((r for r in rows if r["impl"] == name and r["size"] == size and "both_us" in r), None)
            if r:
                xs.append(j + (k - (len(names) - 1) / 2) * width)
                ys.append(r["both_us"])
                lo.append(r["both_us"] - r["both_min"])
                hi.append(r["both_max"] - r["both_us"])
        if xs:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=name,
                   hatch="//" if name == FLOOR_ROW else None)
    ax.set_yscale("log")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"{s} B" for s in sizes])
    ax.set_ylabel("both sides' CPU per message (µs, log)")
    ax.set_title("drain: CPU per message, median of rounds (bars: min–max)")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def aead_rate():
    path = os.path.join(BUILD, AEAD_RATE_CMD[0])
    if not os.access(path, os.X_OK):
        return None
    try:
        r = subprocess.run([path] + AEAD_RATE_CMD[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=30)
        d = last_json(r.stdout, "ns_per_byte")
        return float(d["ns_per_byte"]) if r.returncode == 0 and d else None
    except (subprocess.TimeoutExpired, ValueError, TypeError):
        return None


def environment():
    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "kernel": platform.release(), "machine": platform.machine(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        env["git"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return env


def write_results(kind, stamp, outdir, meta, runs, rows, sizes, names):
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, f"{kind}-{stamp}")
    with open(base + ".json", "w") as f:
        json.dump({"experiment": kind, **meta, "runs": runs, "summary": rows}, f, indent=1)
    fields = ["impl", "size", "round", "messages", "ok", "client_cpu_s", "server_cpu_s", "wall_s", "seconds",
              "both_us_per_msg", "server_messages", "error"]
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            row = dict(r)
            if r["ok"]:
                row["both_us_per_msg"] = (r["client_cpu_s"] + r["server_cpu_s"]) * 1e6 / r["messages"]
            w.writerow(row)
    png = plot(rows, sizes, names, base + ".png")
    return [base + ".json", base + ".csv"] + ([png] if png else [])


def drain_args(p):
    p.add_argument("--sizes", default=None, help="comma-separated body sizes (default 61,1024,16384)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per implementation and size (default 5)")
    p.add_argument("--n", type=int, default=None, help="messages per run, overriding the per-size table")
    p.add_argument("--timeout", type=float, default=None, help="seconds per client run (default 120, quick 30)")
    p.add_argument("--no-startup", action="store_true",
                   help="skip the one-message runs that measure each row's fixed per-connection cost")


def drain_main(args):
    sizes = [61, 1024, 16384]
    if args.sizes:
        try:
            sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        except ValueError:
            sys.exit("run.py: --sizes takes comma-separated integers, e.g. 61,1024")
        if not sizes or any(s < 0 or s > 64 << 20 for s in sizes):
            sys.exit("run.py: sizes must be 0 .. 64 MiB")
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    if rounds < 1:
        sys.exit("run.py: --rounds must be at least 1")
    if args.n is not None and args.n < 1:
        sys.exit("run.py: --n must be at least 1")
    timeout = args.timeout or (30.0 if args.quick else 120.0)
    impls = select_impls(args)
    no_drain = [i.name for i in impls if i.drain is None]
    if args.only and no_drain:
        sys.exit(f"run.py drain: {', '.join(no_drain)} has no drain mode")
    impls = [i for i in impls if i.drain is not None]
    runnable, skipped, broken = prepare(impls, args.no_build)
    names = [i.name for i in runnable]
    aead = aead_rate()  # for the floor row (needs the udp row) and the record
    if aead:
        log(f"AES-128-GCM bulk rate: {aead:.4f} ns/byte (udp-floor aead-rate)")
    t_start = time.monotonic()
    startup = {}
    if not args.quick and not args.no_startup:
        # Fixed cost of one connection carrying one message (process start, library
        # init, keys, handshake, teardown): the "net" column subtracts it.
        for impl in runnable:
            b = [drain_one(impl, 1, sizes[0], timeout) for _ in range(2)]
            b = [r for r in b if r["ok"]]
            if b:
                best = min(b, key=lambda r: r["client_cpu_s"] + r["server_cpu_s"])
                startup[impl.name] = {"client_cpu_s": best["client_cpu_s"], "server_cpu_s": best["server_cpu_s"],
                                      "wall_s": best["wall_s"]}
                log(f"[startup] {impl.name:<8} one-message connection: client {best['client_cpu_s'] * 1e3:.1f} ms, "
                    f"server {best['server_cpu_s'] * 1e3:.1f} ms CPU")
    runs = []
    for size in sizes:
        n = args.n or drain_n(size, args.quick)
        for rnd in range(1, rounds + 1):
            for impl in runnable:
                r = drain_one(impl, n, size, timeout)
                r["round"] = rnd
                runs.append(r)
                tag = f"[drain {size} B × {n}  round {rnd}/{rounds}] {impl.name:<8}"
                if r["ok"]:
                    both = (r["client_cpu_s"] + r["server_cpu_s"]) * 1e6 / n
                    log(f"{tag} {both:8.3f} µs/msg both (client {r['client_cpu_s'] * 1e6 / n:.3f}, "
                        f"server {r['server_cpu_s'] * 1e6 / n:.3f})  {r['seconds']:.3f} s  "
                        f"{n * size / r['seconds'] / 1e6:.0f} MB/s  ok")
                else:
                    log(f"{tag} FAILED: {r['error']}")
    rows = summarize(runs, names, sizes, aead, startup)
    log("")
    print_table(rows)
    if aead:
        if startup:
            log("\nnet: both sides' CPU per message after subtracting the row's one-message connection "
                "(process start, init, handshake)")
        log(f"{FLOOR_ROW}: udp row + 2 × {aead:.4f} ns/byte × (4 + size) bytes per message (seal + open)")
    failed = [r for r in runs if not r["ok"]]
    meta = {"quick": args.quick, "rounds": rounds, "startup": startup, "sizes": sizes, "aead_ns_per_byte": aead,
            "environment": environment(), "skipped": skipped, "broken": broken,
            "elapsed_s": round(time.monotonic() - t_start, 1),
            "impls": {i.name: {"bin": i.bin, "serve": i.serve, "drain": i.drain, "desc": i.desc} for i in runnable}}
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or (os.path.join(RESULTS, "tmp") if args.quick else RESULTS)
    files = write_results("drain", stamp, outdir, meta, runs, rows, sizes, names)
    log("wrote " + ", ".join(os.path.relpath(f, ROOT) for f in files))
    ok = not failed and not broken
    if failed:
        log(f"{len(failed)} run(s) FAILED")
    if args.json:
        print(json.dumps({"experiment": "drain", "ok": ok, "failed_runs": len(failed), "broken": sorted(broken),
                          "skipped": sorted(skipped), "aead_ns_per_byte": aead, "files": files,
                          "summary": [{k: v for k, v in r.items() if k in ("impl", "size", "both_us", "net_us", "client_us",
                                                                           "server_us", "seconds", "mb_s",
                                                                           "vs_pure", "vs_pure_net", "ok_runs",
                                                                           "runs")}
                                      for r in rows]}), flush=True)
    return 0 if ok else 1


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------
def select_impls(args):
    def names(s):
        out = [x.strip() for x in s.split(",") if x.strip()]
        bad = [x for x in out if x not in IMPL_BY_NAME]
        if bad:
            sys.exit(f"run.py: unknown implementation(s) {', '.join(bad)}; known: {', '.join(IMPL_BY_NAME)}")
        return out
    chosen = names(args.only) if args.only else [i.name for i in IMPLS]
    skip = set(names(args.skip)) if args.skip else set()
    impls = [IMPL_BY_NAME[n] for n in chosen if n not in skip]
    if not impls:
        sys.exit("run.py: no implementation left to run")
    return impls


# --------------------------------------------------------------------------
# Transport alone: Pure's own cost with both link ends in one process, no sockets
# --------------------------------------------------------------------------
def transport_args(p):
    p.add_argument("--sizes", default=None, help="comma-separated body sizes (default 61,1024,16384)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per size (default 5)")


def transport_main(args):
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else [61, 1024, 16384]
    rounds = args.rounds or (1 if args.quick else 5)
    if not args.no_build:
        err = build_pure()
        if err:
            sys.exit("run.py: building Pure failed: " + err)
    binary = os.path.join(BUILD, "transport_bench")
    if not os.path.exists(binary):
        sys.exit(f"run.py: {binary} is missing (build Pure first)")
    rows, failed = [], 0
    for size in sizes:
        n = drain_n(size, args.quick)
        cpu = []
        for rnd in range(1, rounds + 1):
            r = subprocess.run([binary, str(n), str(size)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=600)
            j = last_json(r.stdout, "cpu_us_per_message")
            if r.returncode or not j or j.get("messages") != n:
                failed += 1
                log(f"[transport {size} B × {n} round {rnd}/{rounds}] FAILED: {r.stderr.strip()[-300:]}")
                continue
            cpu.append(j["cpu_us_per_message"])
            log(f"[transport {size} B × {n} round {rnd}/{rounds}] {j['cpu_us_per_message']:.4f} µs/msg "
                f"(both ends, one process)")
        if cpu:
            rows.append({"size": size, "n": n, "cpu_us": med(cpu), "min": min(cpu), "max": max(cpu), "runs": len(cpu)})
    log("\ntransport alone (Pure, both link ends in one process, datagrams handed over in memory):")
    log(f"{'size':>8} {'µs/msg median':>14} {'min–max':>18}")
    for r in rows:
        log(f"{r['size']:>8} {r['cpu_us']:>14.4f} {r['min']:>8.4f}–{r['max']:<8.4f}")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or (os.path.join(RESULTS, "tmp") if args.quick else RESULTS)
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, f"transport-{stamp}.json")
    with open(path, "w") as f:
        json.dump({"experiment": "transport", "rows": rows, "environment": environment()}, f, indent=1)
    log("wrote " + os.path.relpath(path, ROOT))
    if args.json:
        print(json.dumps({"experiment": "transport", "ok": not failed, "rows": rows}), flush=True)
    return 1 if failed else 0


# --------------------------------------------------------------------------
# Idle links: K connections between two processes, idle, then woken (Pure, ngtcp2, quinn)
# --------------------------------------------------------------------------
# row -> (binary relative to the build directory, arguments before --links ...). Every one
# takes --links K --idle S [--keepalive S] --json, prints the same table lines and ends with
# one JSON line (client_bytes_per_link, ..., or "failed": true with "stage" and "error").
IDLE_ROWS = {
    "pure": ("pure", ["bench", "idle"]),
    "ngtcp2": ("peers/ngtcp2", ["idle"]),
    "quinn": ("peers/quinn", ["idle"]),
}


def idle_args(p):
    p.add_argument("--links", default=None, help="comma-separated link counts (default 10000,100000)")
    p.add_argument("--idle", type=float, default=None, help="idle seconds (default 60)")
    p.add_argument("--keepalive", type=float, default=25.0, help="keepalive seconds for the second run of each")
    p.add_argument("--no-keepalive-runs", action="store_true", help="only the runs without keepalive")
    p.add_argument("--keepalive-only", action="store_true", help="only the runs with keepalive")


def idle_main(args):
    links = [int(x) for x in args.links.split(",")] if args.links else ([200] if args.quick else [10000, 100000])
    idle = args.idle if args.idle is not None else (2.0 if args.quick else 60.0)
    names = [i.name for i in select_impls(args) if i.name in IDLE_ROWS]
    if args.only:
        other = [x.strip() for x in args.only.split(",") if x.strip() and x.strip() not in IDLE_ROWS]
        if other:
            sys.exit(f"run.py idle: no idle mode for {', '.join(other)}; idle rows: {', '.join(IDLE_ROWS)}")
    if not names:
        sys.exit("run.py idle: no row left to run (idle rows: " + ", ".join(IDLE_ROWS) + ")")
    broken = {}
    if not args.no_build:
        for name in names:
            err = build_pure() if name == "pure" else build_peer(IMPL_BY_NAME[name].build)
            if err:
                broken[name] = err
    for name in names:
        if name not in broken and not os.access(os.path.join(BUILD, IDLE_ROWS[name][0]), os.X_OK):
            broken[name] = os.path.join(BUILD, IDLE_ROWS[name][0]) + " missing"
    for name, why in broken.items():
        print(f"ERROR: {name} cannot run: {why}", file=sys.stderr, flush=True)
    names = [n for n in names if n not in broken]
    kas = [None, args.keepalive]
    if args.no_keepalive_runs:
        kas = [None]
    elif args.keepalive_only:
        kas = [args.keepalive]
    rows, failed = [], 0
    for k in links:
        for ka in kas:
            for name in names:  # one run at a time: the CPU figures are the point
                binary, pre = IDLE_ROWS[name]
                argv = [os.path.join(BUILD, binary)] + pre + ["--links", str(k), "--idle", f"{idle:g}", "--json"]
                if ka:
                    argv += ["--keepalive", f"{ka:g}"]
                log(f"[idle] {name}: {k} links, {idle:.0f} s idle, keepalive {f'{ka:g} s' if ka else 'off'} ...")
                t0 = time.monotonic()
                try:
                    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       timeout=idle + 1800, cwd=ROOT)
                    out, err, rc = r.stdout, r.stderr, r.returncode
                except subprocess.TimeoutExpired as e:
                    out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(errors="replace")
                    err, rc = f"timed out after {idle + 1800:.0f} s", -1
                j = last_json(out, "links")
                base = {"impl": name, "links": k, "keepalive_s": ka, "wall_seconds": round(time.monotonic() - t0, 1)}
                if rc or not j or j.get("failed") or "client_bytes_per_link" not in j:
                    failed += 1
                    why = (j or {}).get("error") or err.strip()[-500:] or f"exit {rc}"
                    if j and "client_bytes_per_link" in j and j.get("wake_seconds", 0) < 0:
                        why = f"wake-up incomplete: {j.get('woke')} of {k} links answered; " + why
                    stage = (j or {}).get("stage", "")
                    log(out.strip())
                    log(f"[idle] {name} FAILED{' during ' + stage if stage else ''}: {why}")
                    row = dict(base, failed=True, stage=stage, error=why)
                    if j and "client_bytes_per_link" in j:
                        row.update(j, failed=True, error=why)  # figures up to the failure
                    rows.append(row)
                    continue
                rows.append(dict(j, **base))
                log(out.strip())
                for line in err.strip().splitlines()[-3:]:
                    note(f"{name}: {line}")
    log("\nidle links (bytes: RSS growth per link after the links settle; packets, timers: both sides, "
        "whole idle period; CPU: both sides per idle link-second):")
    hdr = (f"{'row':<7} {'links':>7} {'keepalive':>9} {'client B/link':>13} {'server B/link':>13} "
           f"{'pkts idle':>9} {'timers idle':>11} {'CPU us/link-s':>13} {'handshake s':>11} {'wake s':>7}")
    log(hdr)
    for r in rows:
        ka = f"{r['keepalive_s']:g} s" if r.get("keepalive_s") else "off"
        if r.get("failed") and "client_bytes_per_link" not in r:
            log(f"{r['impl']:<7} {r['links']:>7} {ka:>9}  FAILED{' during ' + r['stage'] if r.get('stage') else ''}: "
                f"{r['error'][:160]}")
            continue
        wake = f"{r['wake_seconds']:.3f}" if r.get("wake_seconds", -1) >= 0 else "FAILED"
        log(f"{r['impl']:<7} {r['links']:>7} {ka:>9} {r['client_bytes_per_link']:>13.0f} "
            f"{r['server_bytes_per_link']:>13.0f} {r['packets_while_idle']:>9} {r['timers_fired_while_idle']:>11} "
            f"{r['cpu_us_per_link_second']:>13.4f} {r['handshake_seconds']:>11.2f} {wake:>7}")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or (os.path.join(RESULTS, "tmp") if args.quick else RESULTS)
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, f"idle-{stamp}.json")
    with open(path, "w") as f:
        json.dump({"experiment": "idle", "idle_seconds": idle, "rows": rows, "broken": broken,
                   "environment": environment()}, f, indent=1)
    log("wrote " + os.path.relpath(path, ROOT))
    ok = not failed and not broken
    if args.json:
        print(json.dumps({"experiment": "idle", "ok": ok, "rows": rows, "broken": sorted(broken)}), flush=True)
    return 0 if ok else 1


# --------------------------------------------------------------------------
# Latency and handshakes: an echo server, and a client that either makes N round trips of
# one message on one connection (latency) or N connections one after another, one echoed
# message each (handshakes). Server CPU from schedstat, client CPU from rusage, as for the drain.
# --------------------------------------------------------------------------
LATENCY_N, LATENCY_N_QUICK = 100_000, 200
HANDSHAKES_N, HANDSHAKES_N_QUICK = 3000, 20
# Rows whose echo server serves one connection at a time (peers/ngtcp2/drain.c: a new client
# replaces the previous one), so they cannot take part in handshakes --clients N.
HS_ONE_CONNECTION = {"ngtcp2"}
# kind -> (Impl attribute with the client's arguments, JSON key the client's line must have,
#          JSON key with the count of things done, unit name)
ECHO_KINDS = {
    "latency": ("ping", "round_trips", "echoes", "round trip"),
    "handshakes": ("hs", "handshakes", "ok", "handshake"),
}


def run_clients(argvs, timeout, cpu=None):
    """Runs several clients at once to completion; returns ([(rc, stdout, stderr)], their CPU s
    together, wall s from the first start to the last exit)."""
    c0 = children_cpu_s()
    t0 = time.monotonic()
    procs, outs = [], []
    try:
        for argv in argvs:
            procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          stdin=subprocess.DEVNULL, text=True, cwd=ROOT, preexec_fn=pin_to(cpu)))
        for p in procs:
            left = max(0.1, timeout - (time.monotonic() - t0))
            out, err = p.communicate(timeout=left)
            outs.append((p.returncode, out, err))
    except OSError as e:
        raise RunError(f"cannot start client: {e}")
    except subprocess.TimeoutExpired:
        raise RunError(f"client{'s' if len(argvs) > 1 else ''} timed out after {timeout:.0f} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return outs, children_cpu_s() - c0, time.monotonic() - t0


def echo_one(impl, kind, n, size, timeout, clients=1, pins=(None, None)):
    """One latency or handshakes run. Returns a result dict (ok False with `error` on failure).
    With clients > 1 (handshakes), that many client processes connect at once, n / clients
    connections each, the server and the clients pinned to `pins` (server CPU, client CPU)."""
    attr, key, done_key, _ = ECHO_KINDS[kind]
    res = {"impl": impl.name, "experiment": kind, "n": n, "size": size, "clients": clients, "ok": False}
    try:
        with Server(impl, args=impl.echo, cpu=pins[0]) as srv:
            each = n // clients
            argv = [impl.path] + [a.format(port=srv.port, n=each, size=size) for a in getattr(impl, attr)]
            argv += srv.client_extra()
            s0 = srv.cpu_ns()
            outs, ccpu, wall = run_clients([argv] * clients, timeout, cpu=pins[1])
            s1 = srv.cpu_ns()
            alive = srv.proc.poll() is None
            res.update(client_cpu_s=ccpu, server_cpu_s=(s1 - s0) / 1e9, wall_s=wall)
            reps = []
            for rc, out, err in outs:
                rep = last_json(out, key)
                if rep is None:
                    raise RunError(f"client exit {rc}, no JSON result; stderr: {err.strip()[-600:] or '(empty)'}"
                                   f"; server stderr: {srv.stderr_tail()}")
                if rep.get(key) != each or rep.get(done_key) != each or rep.get("mismatches") != 0:
                    raise RunError(f"count mismatch: asked for {each}, client reports {key}={rep.get(key)} "
                                   f"{done_key}={rep.get(done_key)} mismatches={rep.get('mismatches')}; client "
                                   f"stderr: {err.strip()[-400:]}; server stderr: {srv.stderr_tail()}")
                if rc != 0:
                    raise RunError(f"client exit {rc}; stderr: {err.strip()[-600:]}")
                reps.append(rep)
            res["report"] = reps[0] if clients == 1 else {"clients": reps}
            if not alive:
                raise RunError(f"server died during the run; stderr: {srv.stderr_tail()}")
            secs = reps[0].get("seconds") if clients == 1 else None
            res["seconds"] = float(secs) if isinstance(secs, (int, float)) and secs > 0 else wall
            res["ok"] = True
    except RunError as e:
        res["error"] = str(e)
    return res


def echo_summarize(kind, runs, names):
    rows = []
    for name in names:
        rs = [r for r in runs if r["impl"] == name]
        ok = [r for r in rs if r["ok"]]
        row = {"impl": name, "runs": len(rs), "ok_runs": len(ok), "failed_runs": len(rs) - len(ok)}
        if ok:
            n = ok[0]["n"]
            both = [(r["client_cpu_s"] + r["server_cpu_s"]) * 1e6 / n for r in ok]
            row.update(n=n, size=ok[0]["size"], both_us=med(both), both_min=min(both), both_max=max(both),
                       client_us=med([r["client_cpu_s"] * 1e6 / n for r in ok]),
                       server_us=med([r["server_cpu_s"] * 1e6 / n for r in ok]),
                       seconds=med([r["seconds"] for r in ok]))
            if kind == "latency":
                for q in ("p50_us", "p99_us", "mean_us"):
                    v = [r["report"][q] for r in ok if isinstance(r["report"].get(q), (int, float))]
                    if v:
                        row[q], row[q + "_min"], row[q + "_max"] = med(v), min(v), max(v)
            else:
                v = [n / r["seconds"] for r in ok]
                row.update(per_s=med(v), per_s_min=min(v), per_s_max=max(v),
                           per_core_s=1e6 / row["both_us"] if row["both_us"] else None,
                           per_server_core_s=1e6 / row["server_us"] if row["server_us"] else None)
        rows.append(row)
    return rows


def echo_print_table(kind, rows):
    unit = ECHO_KINDS[kind][3]
    if kind == "latency":
        hdr = ["impl", "p50 µs (min–max)", "p99 µs (min–max)", "mean µs", f"both CPU µs/{unit}", "client", "server",
               "runs"]
    else:
        hdr = ["impl", "handshakes/s (min–max)", f"both CPU µs/{unit} (min–max)", "client", "server",
               "per core-s", "per server core-s", "runs"]

    def rng(r, k):
        return f"{fmt(r[k])} ({fmt(r[k + '_min'])}–{fmt(r[k + '_max'])})" if k in r else "FAILED"

    lines = []
    for r in rows:
        runs = f"{r['ok_runs']}/{r['runs']}"
        if kind == "latency":
            lines.append([r["impl"], rng(r, "p50_us"), rng(r, "p99_us"), fmt(r.get("mean_us")),
                          fmt(r.get("both_us")), fmt(r.get("client_us")), fmt(r.get("server_us")), runs])
        else:
            both = f"{fmt(r['both_us'])} ({fmt(r['both_min'])}–{fmt(r['both_max'])})" if "both_us" in r else "FAILED"
            lines.append([r["impl"], rng(r, "per_s"), both, fmt(r.get("client_us")), fmt(r.get("server_us")),
                          fmt(r.get("per_core_s")), fmt(r.get("per_server_core_s")), runs])
    widths = [max(len(x[i]) for x in [hdr] + lines) for i in range(len(hdr))]
    out = ["  ".join(h.ljust(w) for h, w in zip(hdr, widths))]
    for ln in lines:
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(ln, widths))))
    log("\n".join(out))


def echo_write_results(kind, stamp, outdir, meta, runs, rows):
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, f"{kind}-{stamp}")
    with open(base + ".json", "w") as f:
        json.dump({"experiment": kind, **meta, "runs": runs, "summary": rows}, f, indent=1)
    extra = ["p50_us", "p99_us", "mean_us", "min_us", "max_us"] if kind == "latency" else ["per_second"]
    fields = ["impl", "round", "n", "size", "ok", "client_cpu_s", "server_cpu_s", "wall_s", "seconds",
              "both_us_per_op"] + extra + ["error"]
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            row = dict(r)
            if r["ok"]:
                row["both_us_per_op"] = (r["client_cpu_s"] + r["server_cpu_s"]) * 1e6 / r["n"]
                for k in extra:
                    row[k] = r["report"].get(k)
            w.writerow(row)
    return [base + ".json", base + ".csv"]


def echo_args(p):
    p.add_argument("--rounds", type=int, default=None, help="rounds per implementation (default 5)")
    p.add_argument("--n", type=int, default=None, help="round trips (latency; default 100000, quick 200) or "
                                                       "connections (handshakes; default 3000, quick 20) per run")
    p.add_argument("--size", type=int, default=61, help="message body bytes (latency; default 61)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per client run (default 300, quick 30)")
    p.add_argument("--clients", type=int, default=1,
                   help="handshakes: client processes connecting at once, each doing N / CLIENTS connections, "
                        "the server pinned to the last CPU and the clients to the first (default 1: one client, "
                        "unpinned); the table then adds the server's CPU per connection and links per server "
                        "core-second")
    p.add_argument("--no-pin", action="store_true", help="with --clients: leave placement to the scheduler")


def echo_main(args):
    kind = args.experiment
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    if rounds < 1:
        sys.exit("run.py: --rounds must be at least 1")
    if args.n is not None and args.n < 1:
        sys.exit("run.py: --n must be at least 1")
    if not 0 <= args.size <= 1 << 20:
        sys.exit("run.py: --size must be 0 .. 1 MiB")
    if kind == "handshakes" and args.size != 61:
        sys.exit("run.py handshakes: the message is 61 bytes (--size is for latency)")
    n = args.n or ((LATENCY_N_QUICK if args.quick else LATENCY_N) if kind == "latency"
                   else (HANDSHAKES_N_QUICK if args.quick else HANDSHAKES_N))
    clients = args.clients
    if clients < 1 or (clients > 1 and kind != "handshakes"):
        sys.exit("run.py: --clients is a number >= 1, for handshakes only")
    if n % clients:
        sys.exit(f"run.py handshakes: --n ({n}) must be a multiple of --clients ({clients})")
    pins = rpc_pins(args) if clients > 1 else (None, None)
    timeout = args.timeout or (30.0 if args.quick else 300.0)
    attr = ECHO_KINDS[kind][0]
    chosen = select_impls(args)
    if args.only:
        no_mode = [i.name for i in chosen if getattr(i, attr) is None]
        if no_mode:
            sys.exit(f"run.py {kind}: no {kind} mode for {', '.join(no_mode)}; rows: "
                     + ", ".join(i.name for i in IMPLS if getattr(i, attr)))
    impls = [i for i in chosen if getattr(i, attr) is not None]
    if clients > 1:
        single = [i.name for i in impls if i.name in HS_ONE_CONNECTION]
        if single:
            log(f"handshakes --clients: leaving out {', '.join(single)}: its echo server holds one connection "
                f"at a time (a new client replaces the previous one)")
        impls = [i for i in impls if i.name not in HS_ONE_CONNECTION]
    if not impls:
        sys.exit(f"run.py {kind}: no row left to run")
    runnable, skipped, broken = prepare(impls, args.no_build)
    names = [i.name for i in runnable]
    unit = ECHO_KINDS[kind][3]
    t_start = time.monotonic()
    runs = []
    for rnd in range(1, rounds + 1):
        for impl in runnable:  # interleaved: A B C ... A B C ...
            r = echo_one(impl, kind, n, args.size, timeout, clients, pins)
            r["round"] = rnd
            runs.append(r)
            tag = f"[{kind} × {n}  round {rnd}/{rounds}] {impl.name:<8}"
            if not r["ok"]:
                log(f"{tag} FAILED: {r['error']}")
                continue
            both = (r["client_cpu_s"] + r["server_cpu_s"]) * 1e6 / n
            cpu = (f"{both:8.2f} µs/{unit} both (client {r['client_cpu_s'] * 1e6 / n:.2f}, "
                   f"server {r['server_cpu_s'] * 1e6 / n:.2f})")
            if kind == "latency":
                rep = r["report"]
                log(f"{tag} p50 {rep.get('p50_us', 0):7.1f} µs  p99 {rep.get('p99_us', 0):7.1f} µs  "
                    f"mean {rep.get('mean_us', 0):7.1f} µs  {cpu}  ok")
            else:
                log(f"{tag} {n / r['seconds']:8.0f} /s  {cpu}  ok")
    rows = echo_summarize(kind, runs, names)
    log("")
    if kind == "latency":
        log(f"latency: one connection, {n} round trips of one {args.size}-byte message, one in flight; "
            f"median of {rounds} round(s)")
    else:
        how = ("one after another" if clients == 1 else
               f"from {clients} client processes at once ({n // clients} each, one after another"
               + (", server and clients pinned apart)" if pins[0] is not None else ")"))
        log(f"handshakes: {n} connections {how} (handshake, one 61-byte message echoed, close); "
            f"median of {rounds} round(s); per core-s = 10^6 / both sides' CPU, per server core-s = "
            f"10^6 / the server's")
    echo_print_table(kind, rows)
    failed = [r for r in runs if not r["ok"]]
    meta = {"quick": args.quick, "rounds": rounds, "n": n, "size": args.size, "clients": clients,
            "pinned": pins[0] is not None, "environment": environment(),
            "skipped": skipped, "broken": broken, "elapsed_s": round(time.monotonic() - t_start, 1),
            "impls": {i.name: {"bin": i.bin, "serve": i.echo, "client": getattr(i, attr), "desc": i.desc}
                      for i in runnable}}
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or (os.path.join(RESULTS, "tmp") if args.quick else RESULTS)
    files = echo_write_results(kind, stamp, outdir, meta, runs, rows)
    log("wrote " + ", ".join(os.path.relpath(f, ROOT) for f in files))
    ok = not failed and not broken
    if failed:
        log(f"{len(failed)} run(s) FAILED")
    if args.json:
        print(json.dumps({"experiment": kind, "ok": ok, "failed_runs": len(failed), "broken": sorted(broken),
                          "skipped": sorted(skipped), "files": files, "summary": rows}), flush=True)
    return 0 if ok else 1


# --------------------------------------------------------------------------
# RPC: L links (connections) from one client process to one server, P requests in flight on
# each, every request echoed by the server and every reply checked by the client, for a fixed
# time. The rows' own table below says how each is started; the ngtcp2 and quinn peers slot in
# by adding a row whose server and client take the same arguments (bench/README.md, "RPC").
# --------------------------------------------------------------------------
# Client arguments every RPC client takes after its address; {links} {p} {size} {duration}
# {warmup} {drain} are substituted.
RPC_CLIENT = ["--links", "{links}", "--outstanding", "{p}", "--size", "{size}", "--duration", "{duration}",
              "--warmup", "{warmup}", "--drain-timeout", "{drain}"]
# Impl objects, so prepare() and Server work for them: `serve` starts the RPC server, `drain`
# holds the client's arguments.
RPC_ROWS = [
    Impl("pure", "rpc_bench", "cmake", ["serve"], ["client", "127.0.0.1:{port}"] + RPC_CLIENT,
         {"public_key": "--peer-key"}, "Pure: tools/rpc_bench (pure_loop, one thread, echo from on_message)"),
    Impl("tls", "peers/tls-rpc", "tls", ["serve"], ["client", "{port}"] + RPC_CLIENT,
         {"cert_sha256": "--cert-sha256"}, "TCP + TLS 1.3: peers/tls/rpc.c (epoll, one thread, OpenSSL 3.0)"),
    Impl("ngtcp2", "peers/ngtcp2", "ngtcp2", ["rpc-serve"], ["rpc-client", "{port}"] + RPC_CLIENT, {},
         "ngtcp2 0.12 (GnuTLS): peers/ngtcp2/rpc.c (one thread, one socket each side, GSO/GRO)"),
    Impl("tcp", "peers/tls-rpc", "tls", ["serve", "--plain"], ["client", "{port}", "--plain"] + RPC_CLIENT, {},
         "plain TCP: peers/tls/rpc.c --plain (no encryption; not in the default rows)"),
    Impl("quinn", "peers/quinn", "quinn", ["rpc-serve"], ["rpc-client", "{port}"] + RPC_CLIENT,
         {"cert_sha256": "--cert-sha256"}, "quinn 0.9 (tokio current-thread, rustls): peers/quinn/src/rpc.rs"),
    Impl("zmq", "peers/zmq", "zmq", ["rpc-serve"], ["rpc-client", "{port}"] + RPC_CLIENT,
         {"server_key": "--server-key"},
         "ZeroMQ 4.3 + CURVE: peers/zmq/zmq.c (a DEALER per link, one ROUTER, per-peer HWM 2048)"),
    Impl("grpc", "peers/grpc", "grpc", ["rpc-serve"], ["rpc-client", "{port}"] + RPC_CLIENT,
         {"cert_b64": "--cert-b64"},
         "gRPC 1.51 C++ over TLS: peers/grpc/grpc_peer.cc (async unary Echo, one completion queue each side)"),
]
RPC_BY_NAME = {i.name: i for i in RPC_ROWS}
RPC_DEFAULT_ROWS = ["pure", "tls", "ngtcp2", "quinn", "zmq", "grpc"]  # every row but plain tcp (issues #14, #21)
RPC_BASE = "tls"  # the ratio columns divide by this row's figure in the same cell
RPC_QUIC = ["ngtcp2", "quinn"]  # "×QUIC server": server CPU ÷ the best of these in the same cell
RPC_LINKS, RPC_LINKS_QUICK = [1, 100, 1000, 10000], [1, 100]
RPC_P = [1, 16]
RPC_SIZES = [61, 1024]


class LineReader:
    """Reads a child's stdout line by line with a deadline (select on the pipe)."""

    def __init__(self, f):
        self.f, self.buf = f, b""

    def readline(self, deadline):
        import select
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunError("client timed out")
            r, _, _ = select.select([self.f], [], [], left)
            if r:
                chunk = os.read(self.f.fileno(), 65536)
                if not chunk:
                    if self.buf:
                        line, self.buf = self.buf, b""
                        return line.decode(errors="replace")
                    return None
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace") + "\n"


def rpc_client_argv(impl, rate=0, fanin=0):
    """The client's arguments (unsubstituted): the row's own, with the RPC_CLIENT flags replaced
    by the fan-in's when `fanin`, and --rate added when `rate`."""
    base = impl.drain[:-len(RPC_CLIENT)] if impl.drain[-len(RPC_CLIENT):] == RPC_CLIENT else impl.drain
    if fanin:
        return base + ["--links", "{links}", "--size", "{size}", "--fanin", str(fanin), "--drain-timeout", "{drain}"]
    return base + RPC_CLIENT + (["--rate", str(rate)] if rate else [])


def rpc_one(impl, links, p, size, duration, warmup, drain, timeout, rate=0, fanin=0, pins=(None, None)):
    """One RPC run (or, with `fanin`, one fan-in drain of `fanin` one-way requests per link; with
    `rate`, the RPC workload at that fixed total rate). Returns a result dict (ok False with
    `error` on failure). The server's CPU is sampled (schedstat, as for the drain) when the client
    prints its measure_start and measure_end phase lines, so connecting the links and the warm-up
    are not counted. `pins`: (server CPU, client CPU), None for either to let the scheduler place it."""
    res = {"impl": impl.name, "links": links, "p": p, "size": size, "ok": False, "rate": rate, "fanin": fanin}
    subst = dict(links=links, p=p, size=size, duration=f"{duration:g}", warmup=f"{warmup:g}", drain=f"{drain:g}")
    key = "fanin" if fanin else "rpc"
    try:
        with Server(impl, cpu=pins[0]) as srv:
            rss0 = srv.memory_kb()  # before any link: the process, its libraries, its context
            argv = ([impl.path] + [a.format(port=srv.port, **subst) for a in rpc_client_argv(impl, rate, fanin)]
                    + srv.client_extra())
            err = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT,
                                    preexec_fn=pin_to(pins[1]))
            reader, rep, s0, s1 = LineReader(proc.stdout), None, None, None
            deadline = time.monotonic() + timeout
            try:
                while True:
                    line = reader.readline(deadline)
                    if line is None:
                        break
                    if '"measure_start"' in line:
                        s0 = srv.cpu_ns()
                    elif '"measure_end"' in line:
                        s1 = srv.cpu_ns()
                    elif line.startswith("{"):
                        try:
                            d = json.loads(line)
                        except ValueError:
                            continue
                        if key in d:
                            rep = d
                rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except (RunError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
                raise RunError(f"client timed out after {timeout:.0f} s")
            finally:
                proc.stdout.close()
                err.seek(0)
                cerr = err.read().strip()
                err.close()
            alive = srv.proc.poll() is None
            peak = srv.memory_kb("VmHWM")  # the most it held, links and buffers at their busiest
            if rss0 is not None and peak is not None:
                res["server_rss_start_kb"], res["server_rss_peak_kb"] = rss0, peak
                res["server_bytes_per_link"] = max(0, peak - rss0) * 1024 / links
            srv.kill()  # SIGTERM: the server prints its counts and exits
            srv.out.seek(0)
            counts = last_json(srv.out.read(), "served")
            if rep is None:
                raise RunError(f"client exit {rc}, no JSON result; stderr: {cerr[-600:] or '(empty)'}; "
                               f"server stderr: {srv.stderr_tail()}")
            res["report"], res["server_counts"] = rep, counts
            if not alive:
                raise RunError(f"server died during the run; stderr: {srv.stderr_tail()}")
            if s0 is None or s1 is None:
                raise RunError(f"client printed no measure_start/measure_end lines (exit {rc}); stderr: {cerr[-600:]}")
            res.update(server_cpu_s=(s1 - s0) / 1e9, client_cpu_s=rep.get("client_cpu_s"),
                       requests=rep.get("messages" if fanin else "requests"), seconds=rep.get("seconds"))
            if rep.get("errors") or rep.get("missing") or rc != 0:
                raise RunError(f"client exit {rc}: {rep.get('errors')} error(s), {rep.get('missing')} reply(ies) "
                               f"missing (first: {rep.get('first_error') or '-'}); stderr: {cerr[-400:]}")
            if counts is None:
                raise RunError("the server printed no counts on SIGTERM")
            served = links if fanin else rep.get("sent")  # the fan-in echoes each link's last request only
            if counts.get("served") != served or counts.get("requests") != rep.get("sent"):
                raise RunError(f"counts differ: client sent {rep.get('sent')}, got {rep.get('replies')} replies; "
                               f"server took {counts.get('requests')} requests, sent {counts.get('served')} replies")
            if counts.get("links") != links:
                raise RunError(f"the server accepted {counts.get('links')} links, the client opened {links}")
            if not res["requests"]:
                raise RunError("no reply inside the measured window")
            res["ok"] = True
    except RunError as e:
        res["error"] = str(e)
    return res


RPC_FIELDS = [("requests_per_s", "req/s"), ("server_us", "server µs/req"), ("client_us", "client µs/req"),
              ("p50_us", "p50 µs"), ("p99_us", "p99 µs"), ("p999_us", "p99.9 µs")]


def rpc_summarize(runs, names, cells):
    rows = []
    for (links, p, size) in cells:
        group = []
        for name in names:
            rs = [r for r in runs if r["impl"] == name and (r["links"], r["p"], r["size"]) == (links, p, size)]
            ok = [r for r in rs if r["ok"]]
            row = {"impl": name, "links": links, "p": p, "size": size, "runs": len(rs), "ok_runs": len(ok)}
            if ok:
                vals = {
                    "requests_per_s": [r["report"]["requests_per_s"] for r in ok],
                    "server_us": [r["server_cpu_s"] * 1e6 / r["requests"] for r in ok],
                    "client_us": [r["client_cpu_s"] * 1e6 / r["requests"] for r in ok],
                    "p50_us": [r["report"]["p50_us"] for r in ok],
                    "p99_us": [r["report"]["p99_us"] for r in ok],
                    "p999_us": [r["report"]["p999_us"] for r in ok],
                }
                for k, v in vals.items():
                    row[k], row[k + "_min"], row[k + "_max"] = med(v), min(v), max(v)
                row["connect_s"] = med([r["report"].get("connect_seconds", 0) for r in ok])
                mem = [r["server_bytes_per_link"] for r in ok if r.get("server_bytes_per_link") is not None]
                if mem:
                    row["server_bytes_per_link"] = med(mem)
            errs = [r["error"] for r in rs if not r["ok"]]
            if errs:
                row["error"] = errs[0][:300]
            group.append(row)
        base = next((r for r in group if r["impl"] == RPC_BASE and "requests_per_s" in r), None)
        quic = [r["server_us"] for r in group if r["impl"] in RPC_QUIC and r.get("server_us")]
        for row in group:
            if quic and "server_us" in row:
                row["x_quic_server"] = row["server_us"] / min(quic)
            if base and "requests_per_s" in row:
                row["x_rps"] = row["requests_per_s"] / base["requests_per_s"]
                row["x_server"] = row["server_us"] / base["server_us"] if base["server_us"] else None
                row["x_p99"] = row["p99_us"] / base["p99_us"] if base["p99_us"] else None
        rows += group
    return rows


def rpc_table(rows):
    """The table as lists of cells (header first)."""
    hdr = ["L", "P", "size", "impl", "req/s", "server µs/req", "client µs/req", "p50 µs", "p99 µs", "p99.9 µs",
           f"×{RPC_BASE} req/s", f"×{RPC_BASE} server", f"×{RPC_BASE} p99", "×QUIC server", "server KiB/link", "runs"]
    out = [hdr]
    for r in rows:
        runs = f"{r['ok_runs']}/{r['runs']}"
        if "requests_per_s" not in r:
            out.append([f"{r['links']:,}", str(r["p"]), str(r["size"]), r["impl"], "FAILED"] + [""] * 10 + [runs])
            continue
        out.append([f"{r['links']:,}", str(r["p"]), str(r["size"]), r["impl"], f"{r['requests_per_s']:,.0f}",
                    fmt(r["server_us"]), fmt(r["client_us"]), fmt(r["p50_us"]), fmt(r["p99_us"]), fmt(r["p999_us"]),
                    fmt(r.get("x_rps"), 2), fmt(r.get("x_server"), 2), fmt(r.get("x_p99"), 2),
                    fmt(r.get("x_quic_server"), 2),
                    fmt(r["server_bytes_per_link"] / 1024, 1) if r.get("server_bytes_per_link") is not None else "",
                    runs])
    return out


def rpc_print_table(rows):
    t = rpc_table(rows)
    widths = [max(len(x[i]) for x in t) for i in range(len(t[0]))]
    lines = []
    prev = None
    for ln, r in zip(t, [None] + rows):
        cell = r and (r["links"], r["p"], r["size"])
        if r and prev is not None and cell != prev:
            lines.append("")
        prev = cell
        lines.append("  ".join(c.ljust(w) if 3 <= i <= 3 else c.rjust(w) for i, (c, w) in enumerate(zip(ln, widths))))
    log("\n".join(lines))


def rpc_markdown(rows, meta):
    t = rpc_table(rows)
    md = [f"# RPC: {meta['environment'].get('date', '')} (git {meta['environment'].get('git', '?')})", "",
          f"{meta['duration']:g} s measured after {meta['warmup']:g} s warm-up, median of {meta['rounds']} round(s); "
          f"server and client CPU per request inside the window; latency from send to checked reply.", "",
          "| " + " | ".join(t[0]) + " |", "|" + "|".join("---" if i == 3 else "---:" for i in range(len(t[0]))) + "|"]
    md += ["| " + " | ".join(ln) + " |" for ln in t[1:]]
    failed = [r for r in rows if r.get("error")]
    if failed:
        md += ["", "Failures (first of each cell):", ""]
        md += [f"- {r['impl']} L={r['links']} P={r['p']} {r['size']} B: {r['error']}" for r in failed]
    return "\n".join(md) + "\n"


def bar_panels(plt, path, rows, cells, names, cell_of, panels, title, tick):
    """Bar charts, one panel per (key, label): a group of bars per cell, a bar per row (median,
    whisker min-max), log scale. cell_of(row) is the row's cell, tick(cell) its x label."""
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 0.45 * len(cells) * max(1, len(names))),
                                                       3.4 * len(panels)), sharex=True, squeeze=False)
    axes = axes[:, 0]
    width = 0.8 / max(1, len(names))
    for ax, (key, label) in zip(axes, panels):
        for k, name in enumerate(names):
            pts = [(j, r) for j, c in enumerate(cells) for r in rows
                   if r["impl"] == name and cell_of(r) == c and r.get(key)]
            if pts:
                ax.bar([j + (k - (len(names) - 1) / 2) * width for j, _ in pts], [r[key] for _, r in pts], width,
                       yerr=[[r[key] - r[key + "_min"] for _, r in pts], [r[key + "_max"] - r[key] for _, r in pts]],
                       capsize=2, label=name)
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[0].set_title(title)
    axes[-1].set_xticks(range(len(cells)))
    axes[-1].set_xticklabels([tick(c) for c in cells], fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rpc_plot(rows, cells, names, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        note("matplotlib missing (apt-get install python3-matplotlib; run with /usr/bin/python3): no chart")
        return None
    bar_panels(plt, path, rows, cells, names, lambda r: (r["links"], r["p"], r["size"]),
               [("server_us", "server CPU µs / request"), ("requests_per_s", "requests / s"),
                ("p99_us", "p99 latency µs")],
               "rpc: median of rounds (bars: min–max)", lambda c: f"L={c[0]:,}\nP={c[1]}\n{c[2]} B")
    return path


def rpc_args(p):
    p.add_argument("--no-pin", action="store_true",
                   help="let the scheduler place server and client (default: server on the last CPU, client on the first)")
    p.add_argument("--links", default=None, help="comma-separated link counts (default 1,100,1000,10000; quick 1,100)")
    p.add_argument("--outstanding", default=None, help="comma-separated requests in flight per link (default 1,16)")
    p.add_argument("--sizes", default=None, help="comma-separated request sizes, >= 12 (default 61,1024)")
    p.add_argument("--duration", type=float, default=None, help="measured seconds per run (default 5, quick 1)")
    p.add_argument("--warmup", type=float, default=None, help="seconds of traffic before measuring (default 1, quick 0.3)")
    p.add_argument("--drain-timeout", type=float, default=10.0,
                   help="seconds the client waits for the last replies before calling them missing (default 10)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per row and cell (default 5, quick 1)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per client run (default 300)")


def rpc_ints(exp, s, default, lo, what):
    """A comma-separated list of integers >= lo from a flag, or `default` when the flag is absent."""
    if not s:
        return default
    try:
        v = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"run.py {exp}: {what} takes comma-separated integers")
    if not v or any(x < lo for x in v):
        sys.exit(f"run.py {exp}: {what} must be at least {lo}")
    return v


def rpc_impls(args, exp):
    """The RPC rows --only/--skip leave (default RPC_DEFAULT_ROWS), for the rpc, fanin and growth
    experiments."""
    def names(s):
        out = [x.strip() for x in s.split(",") if x.strip()]
        bad = [x for x in out if x not in RPC_BY_NAME]
        if bad:
            sys.exit(f"run.py {exp}: no rpc row {', '.join(bad)}; rpc rows: {', '.join(RPC_BY_NAME)}")
        return out
    chosen = names(args.only) if args.only else RPC_DEFAULT_ROWS
    skip = set(names(args.skip)) if args.skip else set()
    impls = [RPC_BY_NAME[n] for n in chosen if n not in skip]
    if not impls:
        sys.exit(f"run.py {exp}: no row left to run")
    return impls


def rpc_main(args):
    def ints(s, default, lo, what):
        return rpc_ints("rpc", s, default, lo, what)
    links = ints(args.links, RPC_LINKS_QUICK if args.quick else RPC_LINKS, 1, "--links")
    ps = ints(args.outstanding, RPC_P, 1, "--outstanding")
    sizes = ints(args.sizes, RPC_SIZES, 12, "--sizes")
    duration = args.duration if args.duration is not None else (1.0 if args.quick else 5.0)
    warmup = args.warmup if args.warmup is not None else (0.3 if args.quick else 1.0)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    timeout = args.timeout or 300.0
    if rounds < 1 or duration <= 0 or warmup < 0:
        sys.exit("run.py rpc: --rounds >= 1, --duration > 0, --warmup >= 0")
    impls = rpc_impls(args, "rpc")
    runnable, skipped, broken = prepare(impls, args.no_build)
    rnames = [i.name for i in runnable]
    pins = rpc_pins(args)
    cells = [(l, p, s) for l in links for p in ps for s in sizes]
    t_start = time.monotonic()
    runs = []
    for cell in cells:
        for rnd in range(1, rounds + 1):
            for impl in runnable:  # interleaved within a cell: A B A B ...
                r = rpc_one(impl, *cell, duration, warmup, args.drain_timeout, timeout, pins=pins)
                r["round"] = rnd
                runs.append(r)
                tag = f"[rpc L={cell[0]} P={cell[1]} {cell[2]} B  round {rnd}/{rounds}] {impl.name:<5}"
                if r["ok"]:
                    rep = r["report"]
                    log(f"{tag} {rep['requests_per_s']:>11,.0f} req/s  server {r['server_cpu_s'] * 1e6 / r['requests']:.2f}"
                        f"  client {r['client_cpu_s'] * 1e6 / r['requests']:.2f} µs/req  p50 {rep['p50_us']:.0f}"
                        f"  p99 {rep['p99_us']:.0f}  p99.9 {rep['p999_us']:.0f} µs  (connect {rep['connect_seconds']:.2f} s)  ok")
                else:
                    log(f"{tag} FAILED: {r['error']}")
    rows = rpc_summarize(runs, rnames, cells)
    log("")
    log(f"rpc: {duration:g} s measured after {warmup:g} s warm-up, median of {rounds} round(s); CPU per request "
        f"inside the window; ratios to the {RPC_BASE} row of the same cell")
    rpc_print_table(rows)
    failed = [r for r in runs if not r["ok"]]
    meta = {"quick": args.quick, "rounds": rounds, "duration": duration, "warmup": warmup, "links": links,
            "outstanding": ps, "sizes": sizes, "environment": environment(), "skipped": skipped, "broken": broken,
            "pins": {"server_cpu": pins[0], "client_cpu": pins[1]},
            "elapsed_s": round(time.monotonic() - t_start, 1),
            "impls": {i.name: {"bin": i.bin, "serve": i.serve, "client": i.drain, "desc": i.desc} for i in runnable}}
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or (os.path.join(RESULTS, "tmp") if args.quick else RESULTS)
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, f"rpc-{stamp}")
    with open(base + ".json", "w") as f:
        json.dump({"experiment": "rpc", **meta, "runs": runs, "summary": rows}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(rpc_markdown(rows, meta))
    files = [base + ".json", base + ".md"]
    png = rpc_plot(rows, cells, rnames, base + ".png")
    if png:
        files.append(png)
    log("wrote " + ", ".join(os.path.relpath(f, ROOT) for f in files))
    ok = not failed and not broken
    if failed:
        log(f"{len(failed)} run(s) FAILED")
    if args.json:
        print(json.dumps({"experiment": "rpc", "ok": ok, "failed_runs": len(failed), "broken": sorted(broken),
                          "skipped": sorted(skipped), "files": files, "summary": rows}), flush=True)
    return 0 if ok else 1


# --------------------------------------------------------------------------
# Fan-in and cost growth: two more experiments over the RPC rows' servers and clients.
# fanin:  L links (1, 100, 1,000) each send N one-way requests into one server at once (N = the
#         --messages total / L); the server counts them and echoes each link's last; messages/s
#         and server/client CPU per message from the first send to the last echo.
# growth: the RPC workload at one fixed total rate (--rate, default 20,000 requests/s) over
#         L = 1 ... 10,000 links: server CPU per request as L grows, ÷ its figure at the fewest
#         links (issue #14's "≤ 1.3× at 10,000 links").
# --------------------------------------------------------------------------
FANIN_LINKS, FANIN_LINKS_QUICK = [1, 100, 1000], [1, 100]
FANIN_MESSAGES, FANIN_MESSAGES_QUICK = 1_000_000, 20_000
GROWTH_LINKS, GROWTH_LINKS_QUICK = [1, 10, 100, 1000, 10000], [1, 100]
GROWTH_RATE, GROWTH_RATE_QUICK = 20_000, 5_000
GROWTH_P = 64  # enough that one link carries the rate: the client issues a millisecond's due at once


def cell_runs(exp, runnable, cells, rounds, one, show):
    """Runs one(impl, cell) for every cell, round and row (rows interleaved within a cell) and
    logs each run with show(run)."""
    runs = []
    for cell in cells:
        for rnd in range(1, rounds + 1):
            for impl in runnable:
                r = one(impl, cell)
                r["round"] = rnd
                runs.append(r)
                tag = f"[{exp} {' '.join(str(c) for c in cell)}  round {rnd}/{rounds}] {impl.name:<6}"
                log(f"{tag} {show(r)}" if r["ok"] else f"{tag} FAILED: {r['error']}")
    return runs


def cell_summarize(runs, names, cells, cellkey, values):
    """Per (cell, row): the median and min-max of each of values(run)'s figures over the good runs."""
    rows = []
    for cell in cells:
        for name in names:
            rs = [r for r in runs if r["impl"] == name and cellkey(r) == cell]
            ok = [r for r in rs if r["ok"]]
            row = {"impl": name, "cell": list(cell), "runs": len(rs), "ok_runs": len(ok)}
            if ok:
                vals = [values(r) for r in ok]
                for k in vals[0]:
                    v = [x[k] for x in vals]
                    row[k], row[k + "_min"], row[k + "_max"] = med(v), min(v), max(v)
            errs = [r["error"] for r in rs if not r["ok"]]
            if errs:
                row["error"] = errs[0][:300]
            rows.append(row)
    return rows


def text_table(hdr, body):
    """Lines of a space-aligned table; a blank line where the first column changes."""
    widths = [max(len(x[i]) for x in [hdr] + body) for i in range(len(hdr))]
    out, prev = [], None
    for ln in [hdr] + body:
        if prev is not None and ln is not hdr and ln[0] != prev:
            out.append("")
        prev = None if ln is hdr else ln[0]
        out.append("  ".join(c.rjust(w) for c, w in zip(ln, widths)))
    return out


def write_cells(exp, meta, runs, rows, hdr, body, title, plot_fn, args):
    outdir = args.out or (os.path.join(RESULTS, "tmp") if args.quick else RESULTS)
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, f"{exp}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    with open(base + ".json", "w") as f:
        json.dump({"experiment": exp, **meta, "runs": runs, "summary": rows}, f, indent=1)
    md = [f"# {exp}: {meta['environment'].get('date', '')} (git {meta['environment'].get('git', '?')})", "", title, "",
          "| " + " | ".join(hdr) + " |", "|" + "|".join("---:" for _ in hdr) + "|"]
    md += ["| " + " | ".join(ln) + " |" for ln in body]
    failed = [r for r in rows if r.get("error")]
    md += ["", "Failures (first of each cell):", ""] + [f"- {r['impl']} {r['cell']}: {r['error']}" for r in failed] \
        if failed else []
    with open(base + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    files = [base + ".json", base + ".md"]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plot_fn(plt, base + ".png")
        files.append(base + ".png")
    except ImportError:
        note("matplotlib missing (apt-get install python3-matplotlib; run with /usr/bin/python3): no chart")
    log("wrote " + ", ".join(os.path.relpath(f, ROOT) for f in files))
    return files


def finish_cells(exp, args, runs, files, rows, broken, skipped):
    failed = [r for r in runs if not r["ok"]]
    if failed:
        log(f"{len(failed)} run(s) FAILED")
    ok = not failed and not broken
    if args.json:
        print(json.dumps({"experiment": exp, "ok": ok, "failed_runs": len(failed), "broken": sorted(broken),
                          "skipped": sorted(skipped), "files": files, "summary": rows}), flush=True)
    return 0 if ok else 1


def fanin_args(p):
    p.add_argument("--no-pin", action="store_true",
                   help="let the scheduler place server and client (default: server on the last CPU, client on the first)")
    p.add_argument("--links", default=None, help="comma-separated link counts (default 1,100,1000; quick 1,100)")
    p.add_argument("--sizes", default=None, help="comma-separated request sizes, >= 12 (default 61,1024)")
    p.add_argument("--messages", type=int, default=None,
                   help="one-way requests per run over all links (default 1,000,000; quick 20,000)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per row and cell (default 5, quick 1)")
    p.add_argument("--drain-timeout", type=float, default=120.0, help="seconds a run may take (default 120)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per client run (default 300)")


def fanin_main(args):
    links = rpc_ints("fanin", args.links, FANIN_LINKS_QUICK if args.quick else FANIN_LINKS, 1, "--links")
    sizes = rpc_ints("fanin", args.sizes, RPC_SIZES, 12, "--sizes")
    total = args.messages or (FANIN_MESSAGES_QUICK if args.quick else FANIN_MESSAGES)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    if rounds < 1 or total < 1:
        sys.exit("run.py fanin: --rounds >= 1, --messages >= 1")
    runnable, skipped, broken = prepare(rpc_impls(args, "fanin"), args.no_build)
    names = [i.name for i in runnable]
    cells = [(l, s) for l in links for s in sizes]
    t0 = time.monotonic()

    def one(impl, cell):
        n = max(1, total // cell[0])
        return rpc_one(impl, cell[0], 1, cell[1], 0, 0, args.drain_timeout, args.timeout or 300.0, fanin=n,
                       pins=rpc_pins(args))

    def show(r):
        return (f"{r['report']['messages_per_s']:>12,.0f} msg/s  server {r['server_cpu_s'] * 1e6 / r['requests']:.3f}"
                f"  client {r['client_cpu_s'] * 1e6 / r['requests']:.3f} µs/msg  ({r['report']['seconds']:.2f} s)  ok")
    runs = cell_runs("fanin", runnable, cells, rounds, one, show)
    rows = cell_summarize(runs, names, cells, lambda r: (r["links"], r["size"]), lambda r: {
        "messages_per_s": r["report"]["messages_per_s"], "server_us": r["server_cpu_s"] * 1e6 / r["requests"],
        "client_us": r["client_cpu_s"] * 1e6 / r["requests"], "seconds": r["report"]["seconds"],
        "server_bytes_per_link": r.get("server_bytes_per_link", 0.0)})
    for row in rows:
        base = next((b for b in rows if b["cell"] == row["cell"] and b["impl"] == RPC_BASE and "server_us" in b), None)
        if base and "server_us" in row and base["server_us"] and base["messages_per_s"]:
            row["x_server"] = row["server_us"] / base["server_us"]
            row["x_rate"] = row["messages_per_s"] / base["messages_per_s"]
    hdr = ["L", "size", "impl", "msg/link", "msg/s", "server µs/msg", "client µs/msg", f"×{RPC_BASE} msg/s",
           f"×{RPC_BASE} server", "server KiB/link", "runs"]
    body = []
    for r in rows:
        l, size = r["cell"]
        head = [f"{l:,}", str(size), r["impl"], f"{max(1, total // l):,}"]
        if "server_us" not in r:
            body.append(head + ["FAILED", "", "", "", "", "", f"{r['ok_runs']}/{r['runs']}"])
            continue
        body.append(head + [f"{r['messages_per_s']:,.0f}", fmt(r["server_us"]), fmt(r["client_us"]),
                            fmt(r.get("x_rate"), 2), fmt(r.get("x_server"), 2),
                            fmt(r.get("server_bytes_per_link", 0) / 1024, 1), f"{r['ok_runs']}/{r['runs']}"])
    title = (f"{total:,} one-way requests per run split over the L links, sent at once into one server; the server "
             f"counts them and echoes each link's last; median of {rounds} round(s); CPU per message from the first "
             f"send to the last echo; ratios to the {RPC_BASE} row of the same cell.")
    log("")
    log(title)
    log("\n".join(text_table(hdr, body)))

    def plot(plt, path):
        bar_panels(plt, path, rows, cells, names, lambda r: tuple(r["cell"]),
                   [("server_us", "server CPU µs / message"), ("messages_per_s", "messages / s")],
                   "fan-in drain: median of rounds (bars: min–max)", lambda c: f"L={c[0]:,}\n{c[1]} B")
    meta = {"quick": args.quick, "rounds": rounds, "messages": total, "links": links, "sizes": sizes,
            "pins": dict(zip(("server_cpu", "client_cpu"), rpc_pins(args))),
            "environment": environment(), "skipped": skipped, "broken": broken,
            "elapsed_s": round(time.monotonic() - t0, 1),
            "impls": {i.name: {"bin": i.bin, "serve": i.serve, "client": rpc_client_argv(i, fanin=1), "desc": i.desc}
                      for i in runnable}}
    files = write_cells("fanin", meta, runs, rows, hdr, body, title, plot, args)
    return finish_cells("fanin", args, runs, files, rows, broken, skipped)


def growth_args(p):
    p.add_argument("--no-pin", action="store_true",
                   help="let the scheduler place server and client (default: server on the last CPU, client on the first)")
    p.add_argument("--links", default=None, help="comma-separated link counts (default 1,10,100,1000,10000; quick 1,100)")
    p.add_argument("--rate", type=int, default=None, help="requests/s over all links (default 20,000; quick 5,000)")
    p.add_argument("--outstanding", type=int, default=GROWTH_P, help=f"most requests in flight per link (default {GROWTH_P})")
    p.add_argument("--size", type=int, default=61, help="request bytes (default 61)")
    p.add_argument("--duration", type=float, default=None, help="measured seconds per run (default 3, quick 1)")
    p.add_argument("--warmup", type=float, default=None, help="seconds at the rate before measuring (default 1, quick 0.3)")
    p.add_argument("--drain-timeout", type=float, default=10.0, help="seconds to wait for the last replies (default 10)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per row and cell (default 5, quick 1)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per client run (default 300)")


def growth_main(args):
    links = rpc_ints("growth", args.links, GROWTH_LINKS_QUICK if args.quick else GROWTH_LINKS, 1, "--links")
    rate = args.rate or (GROWTH_RATE_QUICK if args.quick else GROWTH_RATE)
    duration = args.duration if args.duration is not None else (1.0 if args.quick else 3.0)
    warmup = args.warmup if args.warmup is not None else (0.3 if args.quick else 1.0)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    if rounds < 1 or duration <= 0 or warmup < 0 or rate < 1 or args.size < 12 or args.outstanding < 1:
        sys.exit("run.py growth: --rounds >= 1, --duration > 0, --warmup >= 0, --rate >= 1, --size >= 12, "
                 "--outstanding >= 1")
    runnable, skipped, broken = prepare(rpc_impls(args, "growth"), args.no_build)
    names = [i.name for i in runnable]
    cells = [(l,) for l in links]
    t0 = time.monotonic()

    def one(impl, cell):
        return rpc_one(impl, cell[0], args.outstanding, args.size, duration, warmup, args.drain_timeout,
                       args.timeout or 300.0, rate=rate, pins=rpc_pins(args))

    def show(r):
        rep = r["report"]
        return (f"{rep['requests_per_s']:>9,.0f} req/s  server {r['server_cpu_s'] * 1e6 / r['requests']:.2f}"
                f"  client {r['client_cpu_s'] * 1e6 / r['requests']:.2f} µs/req  p50 {rep['p50_us']:.0f}"
                f"  p99 {rep['p99_us']:.0f} µs  skipped {rep.get('rate_skipped', 0)}  ok")
    runs = cell_runs("growth", runnable, cells, rounds, one, show)
    rows = cell_summarize(runs, names, cells, lambda r: (r["links"],), lambda r: {
        "requests_per_s": r["report"]["requests_per_s"], "server_us": r["server_cpu_s"] * 1e6 / r["requests"],
        "client_us": r["client_cpu_s"] * 1e6 / r["requests"], "p50_us": r["report"]["p50_us"],
        "p99_us": r["report"]["p99_us"], "skipped": r["report"].get("rate_skipped", 0)})
    for row in rows:
        first = next((b for b in rows if b["impl"] == row["impl"] and "server_us" in b), None)
        if first and "server_us" in row and first["server_us"]:
            row["growth"] = row["server_us"] / first["server_us"]
        base = next((b for b in rows if b["cell"] == row["cell"] and b["impl"] == RPC_BASE and "server_us" in b), None)
        if base and "server_us" in row and base["server_us"]:
            row["x_server"] = row["server_us"] / base["server_us"]
    hdr = ["L", "impl", "req/s", "server µs/req", f"× L={links[0]:,}", f"×{RPC_BASE} server", "client µs/req",
           "p50 µs", "p99 µs", "skipped", "runs"]
    body = []
    for r in rows:
        head = [f"{r['cell'][0]:,}", r["impl"]]
        if "server_us" not in r:
            body.append(head + ["FAILED"] + [""] * 7 + [f"{r['ok_runs']}/{r['runs']}"])
            continue
        body.append(head + [f"{r['requests_per_s']:,.0f}", fmt(r["server_us"]), fmt(r.get("growth"), 2),
                            fmt(r.get("x_server"), 2), fmt(r["client_us"]), fmt(r["p50_us"]), fmt(r["p99_us"]),
                            f"{r['skipped']:,.0f}", f"{r['ok_runs']}/{r['runs']}"])
    title = (f"{rate:,} requests/s of {args.size} B in total over L links (at most {args.outstanding} in flight on "
             f"one), {duration:g} s measured after {warmup:g} s; median of {rounds} round(s); × L={links[0]:,}: this "
             f"row's server CPU per request ÷ its own at L={links[0]:,}; skipped: due requests that found every "
             f"link full (the rate not held).")
    log("")
    log(title)
    log("\n".join(text_table(hdr, body)))

    def plot(plt, path):
        fig, ax = plt.subplots(figsize=(8, 5))
        for name in names:
            pts = [(r["cell"][0], r["server_us"]) for r in rows if r["impl"] == name and "server_us" in r]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("active links")
        ax.set_ylabel("server CPU µs / request")
        ax.set_title(f"cost growth at {rate:,} requests/s in total (median of rounds)")
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
    meta = {"quick": args.quick, "rounds": rounds, "rate": rate, "outstanding": args.outstanding, "size": args.size,
            "pins": dict(zip(("server_cpu", "client_cpu"), rpc_pins(args))),
            "duration": duration, "warmup": warmup, "links": links, "environment": environment(),
            "skipped": skipped, "broken": broken, "elapsed_s": round(time.monotonic() - t0, 1),
            "impls": {i.name: {"bin": i.bin, "serve": i.serve, "client": rpc_client_argv(i, rate=rate),
                               "desc": i.desc} for i in runnable}}
    files = write_cells("growth", meta, runs, rows, hdr, body, title, plot, args)
    return finish_cells("growth", args, runs, files, rows, broken, skipped)


# --------------------------------------------------------------------------
# paths: the real-paths matrix (issue #25). Each flow runs the drain (16 KiB messages) through
# udpfwd (docs/udpfwd.md) emulating a bottleneck: --rate each way, --delay RTT/2 after it, and
# the path's queue (drop-tail of a number of datagrams, CoDel, or random loss on the data
# direction). Alone: one flow of each implementation; goodput (the drain's bytes / its seconds,
# connect to the server's count), the flow's own loss (udpfwd's up-direction drops / the
# datagrams it received) and the queueing delay of the data direction (median, p95). Sharing: K
# flows started one after another into ONE udpfwd (--clients K, one --to per server: the n-th
# client to appear reaches the n-th server), each flow's share over the window where all run.
# --------------------------------------------------------------------------
PATHS_RATE_MBIT = 50
PATHS_DATAGRAM = 1472  # the bytes a BDP is counted in (docs/udpfwd.md: rates count UDP payload)
PATHS_ALONE = ["q10", "q0.25bdp", "q1bdp", "q4bdp", "codel", "loss0.5", "loss2"]
PATHS_FAIR = ["q20", "q1bdp", "codel"]  # the sharing cells the targets name
PATHS_ALL = PATHS_ALONE + ["q20"]
PATHS_IMPLS = ["pure", "pure-newreno", "quinn", "ngtcp2"]
# Pure with its other controller (pure drain --cc newreno: the drain client is the sender)
PATHS_EXTRA = {"pure-newreno": Impl("pure-newreno", "pure", "cmake", IMPL_BY_NAME["pure"].serve,
                                    IMPL_BY_NAME["pure"].drain + ["--cc", "newreno"], IMPL_BY_NAME["pure"].passes,
                                    "Pure with NewReno (pure drain --cc newreno)")}


def paths_impl(name):
    return PATHS_EXTRA.get(name) or IMPL_BY_NAME[name]
PATHS_GROUPS = {"2pure": ["pure", "pure"], "4pure": ["pure"] * 4, "pure+quinn": ["pure", "quinn"],
                "pure+ngtcp2": ["pure", "ngtcp2"],
                # the controls: each peer sharing with itself, and started before Pure. Flows start a
                # moment apart and the window opens 2 s later, before CUBIC has converged at this BDP
                # (its K is ~5 s), so a same-implementation pair shows the share the first flow's
                # head start alone buys; a Pure pair is judged beside that.
                "quinn+pure": ["quinn", "pure"], "ngtcp2+pure": ["ngtcp2", "pure"],
                "2quinn": ["quinn", "quinn"], "2ngtcp2": ["ngtcp2", "ngtcp2"],
                "quinn+ngtcp2": ["quinn", "ngtcp2"], "ngtcp2+quinn": ["ngtcp2", "quinn"]}
PATHS_N, PATHS_N_QUICK = 1500, 150       # messages of 16 KiB per alone run
# messages per sharing run, over all its flows: 20,000 x 16 KiB is ~55 s at half the link each,
# long enough for CUBIC to converge at 1 BDP (K ~ 5 s) and be measured after (PATHS_LATE)
PATHS_FAIR_N, PATHS_FAIR_N_QUICK = 20000, 600
PATHS_LATE = 15.0  # seconds after the last start from which the converged shares are taken
PATHS_SIZE = 16384


def paths_bdp(rtt_ms, frac=1.0):
    """Datagrams in frac x the bandwidth-delay product, rounded as paths_sim does."""
    return max(1, round(frac * PATHS_RATE_MBIT * 1e6 / 8 * rtt_ms / 1e3 / PATHS_DATAGRAM))


def paths_fwd_args(path, rtt_ms, ecn):
    """udpfwd's bottleneck arguments for one path at one RTT."""
    bdp = paths_bdp(rtt_ms)
    base = ["--rate", f"{PATHS_RATE_MBIT}mbit", "--delay", f"{rtt_ms / 2:g}"]
    if path.startswith("q") and path.endswith("bdp"):
        return base + ["--queue-packets", str(paths_bdp(rtt_ms, float(path[1:-3])))]
    if path.startswith("q"):
        return base + ["--queue-packets", str(int(path[1:]))]
    if path == "codel":
        return base + ["--queue-packets", "1000", "--codel"] + (["--ecn"] if ecn else [])
    if path.startswith("loss"):
        return base + ["--queue-packets", str(bdp), "--loss-up", f"{float(path[4:]) / 100:g}"]
    raise ValueError(path)


class Forwarder:
    """udpfwd in front of servers: a context manager; stop() returns its final stats."""

    def __init__(self, tos, args, stats_path, clients=1, interval=None):
        cmd = [os.path.join(BUILD, "udpfwd"), "--listen", "127.0.0.1:0", "--seed", "1", "--stats", stats_path]
        for port in tos:
            cmd += ["--to", f"127.0.0.1:{port}"]
        if clients > 1:
            cmd += ["--clients", str(clients)]
        if interval:
            cmd += ["--stats-interval", str(interval)]
        self.stats_path = stats_path
        self.err = tempfile.TemporaryFile(mode="w+")
        try:
            self.proc = subprocess.Popen(cmd + args, stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL,
                                         text=True)
        except OSError as e:
            raise RunError(f"cannot start udpfwd: {e}")
        self.t0 = time.monotonic()  # its "elapsed" counts from about here
        line = self.proc.stdout.readline()
        try:
            self.port = int(json.loads(line)["port"])
        except (ValueError, KeyError, TypeError):
            self.stop()
            self.err.seek(0)
            raise RunError(f"udpfwd printed {line.strip()[:200]!r}; stderr: {self.err.read()[-400:]}")

    def stats(self):
        try:
            with open(self.stats_path) as f:
                return json.loads(f.read())
        except (OSError, ValueError):
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.stats()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self.err.close()


def paths_client(impl, srv, port, n, time_limit):
    """Starts impl's drain client towards udpfwd's port; a Popen writing to temporary files."""
    argv = [impl.path] + [a.format(port=port, n=n, size=PATHS_SIZE) for a in impl.drain] + srv.client_extra()
    out, err = tempfile.TemporaryFile(mode="w+"), tempfile.TemporaryFile(mode="w+")
    try:
        p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT)
    except OSError as e:
        raise RunError(f"cannot start {impl.path}: {e}")
    p.files, p.deadline, p.impl, p.n, p.t_start, p.t_end = (out, err), time.monotonic() + time_limit, impl, n, \
        time.monotonic(), None
    return p


def paths_reap(p, now=None):
    """Once the client has exited (or its time ran out: killed), its report: (rep or None, error or None)."""
    if p.t_end is None:
        p.t_end = now or time.monotonic()
    if p.poll() is None:
        p.kill()
        p.wait()
        timed_out = True
    else:
        timed_out = False
    p.timed_out = timed_out
    out, err = p.files
    out.seek(0)
    err.seek(0)
    text, etext = out.read(), err.read()
    out.close()
    err.close()
    if timed_out:
        return None, f"did not finish {p.n} messages in {p.deadline - p.t_start:.0f} s (killed)"
    rep = last_json(text, "messages")
    if p.returncode != 0 or rep is None or rep.get("server_messages") != p.n:
        return None, (f"{p.impl.name} drain exit {p.returncode}, report {json.dumps(rep)[:200] if rep else 'none'}; "
                      f"stderr: {etext.strip()[-400:] or '(empty)'}")
    return rep, None


def paths_alone(impl, path, rtt, n, time_limit, ecn):
    res = {"kind": "alone", "impl": impl.name, "path": path, "rtt_ms": rtt, "messages": n, "ok": False}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with Server(impl) as srv, Forwarder([srv.port], paths_fwd_args(path, rtt, ecn),
                                                os.path.join(tmp, "fwd.json")) as fwd:
                c = paths_client(impl, srv, fwd.port, n, time_limit)
                while c.poll() is None and time.monotonic() < c.deadline:
                    time.sleep(0.02)
                rep, err = paths_reap(c)
                st = fwd.stop()
                alive = srv.proc.poll() is None
            if st is None:
                raise RunError("udpfwd wrote no stats")
            up = st["up"]
            res["fwd_up"] = {k: up[k] for k in ("in", "out", "bytes_out", "dropped", "lost", "queue_drop", "codel_drop",
                                                "ecn_marked", "queue_max", "qdelay_p50_us", "qdelay_p95_us",
                                                "qdelay_max_us")}
            res["loss_pct"] = 100.0 * up["dropped"] / up["in"] if up["in"] else 0.0
            res["q50_ms"], res["q95_ms"] = up["qdelay_p50_us"] / 1000, up["qdelay_p95_us"] / 1000
            if err:
                # What crossed the bottleneck while it ran, for the record (not a goodput: it
                # includes headers and retransmissions).
                res["wire_mbit"] = up["bytes_out"] * 8 / (c.t_end - c.t_start) / 1e6
                res["unfinished"] = c.timed_out  # a figure of its own (too slow), not a failure
                raise RunError(err)
            if not alive:
                raise RunError(f"{impl.name} server died during the run; stderr: {srv.stderr_tail()}")
            res["report"] = rep
            res["seconds"] = float(rep["seconds"])
            res["mbit"] = rep["bytes"] * 8 / res["seconds"] / 1e6
            res["link_pct"] = 100.0 * res["mbit"] / PATHS_RATE_MBIT
            res["ok"] = True
        except RunError as e:
            res["error"] = str(e)
    return res


def jain(xs):
    """Jain's fairness index of the flows' shares."""
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 0.0


def paths_shared(group, path, rtt, total, time_limit, warmup, ecn, late=0.0):
    """K flows into one bottleneck, started one after another (each once the previous one has
    reached udpfwd, so that the n-th client maps to the n-th flow and, with two kinds of server,
    to its own server). Each flow's share is its bytes forwarded to the server over the window
    from warmup seconds after the last one started to the first one's end, times its own ratio of
    drain bytes to bytes forwarded (its headers and retransmissions are not goodput)."""
    kinds = PATHS_GROUPS[group]
    res = {"kind": "shared", "impl": group, "path": path, "rtt_ms": rtt, "flows": kinds, "ok": False}
    n = max(1, total // len(kinds))
    res["messages"] = n
    servers, clients = [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            order = list(dict.fromkeys(kinds))  # one server per kind, in order of first flow
            if len(order) == 1 and kinds[0] != "pure":
                # a peer's drain server may serve one connection at a time: one server per flow
                servers = [Server(paths_impl(k)) for k in kinds]
                per_flow = servers
            else:
                for k in order:
                    servers.append(Server(paths_impl(k)))
                by_kind = dict(zip(order, servers))
                per_flow = [by_kind[k] for k in kinds]
            # --to per flow, so the n-th client reaches its own kind's server
            tos = [x.port for x in per_flow] if len(set(map(id, per_flow))) > 1 else [servers[0].port]
            samples = []
            with Forwarder(tos, paths_fwd_args(path, rtt, ecn), os.path.join(tmp, "fwd.json"), clients=len(kinds),
                           interval=0.1) as fwd:
                def sample():
                    st = fwd.stats()
                    if st and "per_client" in st:
                        t = fwd.t0 + st["elapsed"]
                        if not samples or t > samples[-1][0]:
                            samples.append((t, [c["up"]["bytes_out"] for c in st["per_client"]]))
                    return st
                for i, k in enumerate(kinds):
                    clients.append(paths_client(paths_impl(k), per_flow[i], fwd.port, n, time_limit))
                    deadline = time.monotonic() + 10
                    while True:
                        st = sample()
                        if st and st.get("clients", 0) > i:
                            break
                        if time.monotonic() > deadline or clients[-1].poll() is not None:
                            raise RunError(f"flow {i + 1} ({k}) did not reach udpfwd within 10 s")
                        time.sleep(0.02)
                t_all = time.monotonic()
                first_end = None
                while any(c.poll() is None for c in clients):
                    now = time.monotonic()
                    for c in clients:
                        if c.t_end is None and c.poll() is not None:
                            c.t_end = now
                            first_end = first_end or now
                    if now > max(c.deadline for c in clients):
                        break
                    sample()
                    time.sleep(0.05)
                now = time.monotonic()
                for c in clients:
                    if c.t_end is None and c.poll() is not None:
                        c.t_end = now
                first_end = first_end or now
                reps = [paths_reap(c, now) for c in clients]
                st = fwd.stop()
            alive = all(s.proc.poll() is None for s in servers)
        if st is None or len(st.get("per_client", [])) != len(kinds):
            raise RunError(f"udpfwd saw {st and st.get('clients')} clients, not {len(kinds)}")
        pc = st["per_client"]
        res["fwd_up"] = {k: st["up"][k] for k in ("in", "out", "bytes_out", "dropped", "queue_drop", "codel_drop",
                                                  "ecn_marked", "qdelay_p50_us", "qdelay_p95_us")}
        res["q50_ms"], res["q95_ms"] = st["up"]["qdelay_p50_us"] / 1000, st["up"]["qdelay_p95_us"] / 1000
        res["per_client"] = pc
        res["loss_pct_flows"] = [100.0 * c["up"]["dropped"] / c["up"]["in"] if c["up"]["in"] else 0.0 for c in pc]
        # the window: from warmup after the last flow started to the first flow's end (the last
        # sample before it: a flow that has finished sends nothing more)
        w0 = [s for s in samples if s[0] >= t_all + warmup]
        w = [s for s in w0 if s[0] <= first_end]
        bad = [f"flow {i + 1} ({kinds[i]}): {e}" for i, (_, e) in enumerate(reps) if e]
        if len(w) < 2 or w[-1][0] - w[0][0] < 0.5:
            if bad:
                raise RunError("; ".join(bad))
            raise RunError(f"the window where all {len(kinds)} flows ran is too short "
                           f"({(w[-1][0] - w[0][0]) if len(w) >= 2 else 0:.2f} s after {warmup:g} s of warm-up): "
                           f"give more --fair-n")
        span = w[-1][0] - w[0][0]
        res["window_s"] = span
        app = [rep["bytes"] / pc[i]["up"]["bytes_out"] if rep and pc[i]["up"]["bytes_out"] else None
               for i, (rep, _) in enumerate(reps)]

        def shares_between(a, b):
            """Each flow's goodput (Mbit/s) between two samples."""
            return [(b[1][i] - a[1][i]) * 8 / (b[0] - a[0]) / 1e6 * (app[i] or 1.0) for i in range(len(kinds))]
        shares = shares_between(w[0], w[-1])
        # each flow's goodput second by second from the last start to the first end, and over the
        # part of the window from `late` seconds after the last start (when the window reaches past it)
        tl, last = [], None
        for s in (s for s in samples if t_all <= s[0] <= first_end):
            if last is None or s[0] - last[0] >= 1.0:
                if last is not None:
                    tl.append([round(last[0] - t_all, 2)] + [round(x, 2) for x in shares_between(last, s)])
                last = s
        res["timeline"] = tl
        wl = [s for s in w if s[0] >= t_all + late]
        if late > 0 and len(wl) >= 2 and wl[-1][0] - wl[0][0] >= 1.0:
            res["late_mbit"] = shares_between(wl[0], wl[-1])
            res["late_window_s"] = wl[-1][0] - wl[0][0]
            res["late_ratio"] = (max(res["late_mbit"]) / min(res["late_mbit"]) if min(res["late_mbit"]) > 0
                                 else float("inf"))
            res["late_jain"] = jain(res["late_mbit"])
            res["late_s"] = late
        res["flow_mbit"] = shares
        res["app_fraction"] = app
        res["flow_errors"] = [e for _, e in reps]
        res["flow_seconds"] = [float(r["seconds"]) if r else None for r, _ in reps]
        res["aggregate_mbit"] = sum(shares)
        res["link_pct"] = 100.0 * res["aggregate_mbit"] / PATHS_RATE_MBIT
        res["ratio"] = max(shares) / min(shares) if min(shares) > 0 else float("inf")
        res["jain"] = jain(shares)
        if not alive:
            raise RunError("a server died during the run")
        if bad:
            raise RunError("; ".join(bad))
        res["ok"] = True
    except RunError as e:
        res["error"] = str(e)
    finally:
        for c in clients:
            if c.poll() is None:
                c.kill()
                c.wait()
        for s in servers:
            s.__exit__()
    return res


def paths_args(p):
    p.add_argument("--rtt", default=None, help="comma-separated round-trip times in ms (default 40,100; quick 40)")
    p.add_argument("--paths", default=None,
                   help="comma-separated paths for the alone rows (default " + ",".join(PATHS_ALONE) +
                        "; quick q1bdp,codel; also q20, qN, qFbdp)")
    p.add_argument("--fair-paths", default=None,
                   help="paths for the sharing rows (default " + ",".join(PATHS_FAIR) + "; quick q1bdp; "
                        "'all': every alone path and q20)")
    p.add_argument("--fair-rtt", default=None, help="RTTs for the sharing rows (default: the first --rtt)")
    p.add_argument("--n", type=int, default=None,
                   help=f"16 KiB messages per alone run (default {PATHS_N}, quick {PATHS_N_QUICK})")
    p.add_argument("--fair-n", type=int, default=None,
                   help=f"16 KiB messages per sharing run, split over its flows (default {PATHS_FAIR_N}, "
                        f"quick {PATHS_FAIR_N_QUICK})")
    p.add_argument("--warmup", type=float, default=None,
                   help="seconds after the last flow starts before a sharing window opens (default 2, quick 0)")
    p.add_argument("--late", type=float, default=None,
                   help="seconds after the last flow starts from which the sharing cells also report each "
                        f"flow's goodput to the first end, once the flows have had time to converge (default "
                        f"{PATHS_LATE:g}; quick 0: not reported)")
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 1)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds a flow may take before it is killed and the cell marked unfinished "
                        "(default 30 alone, 150 sharing; quick 20)")
    p.add_argument("--ecn", action="store_true", help="CoDel marks ECN-capable datagrams (udpfwd --ecn) "
                                                      "instead of dropping them")


def paths_targets(rows):
    """Issue #25's targets, checked on the 40 ms cells: (text, met, figure); met is None when the
    cell was not run, False when it ran without a figure (failed, or unfinished in its time)."""
    def cell(kind, impl, path):
        return next((r for r in rows if r["kind"] == kind and r["impl"] == impl and r["path"] == path
                     and r["rtt_ms"] == 40), None)

    def check(text, r, key, ok, show):
        if r is None:
            return text, None, ""
        if r.get(key) is None:
            return text, False, "no figure: " + r.get("error", "failed")[:80]
        return text, bool(ok(r)), show(r)
    out = []
    for path in ["q0.25bdp", "q1bdp", "q4bdp", "codel"]:
        out.append(check(f"alone, {path}: Pure ≥ 90% of the link", cell("alone", "pure", path), "mbit",
                         lambda r: r["link_pct"] >= 90, lambda r: f"{r['link_pct']:.1f}%"))
    peers = [cell("alone", p, "q10") for p in ("quinn", "ngtcp2")]
    peers = [p for p in peers if p is not None]
    best = max((p.get("mbit") or 0.0 for p in peers), default=None)  # an unfinished peer: beaten
    t = "alone, 10-packet queue: Pure ≥ the better QUIC peer's goodput, its own loss < 2%"
    if best is None:
        out.append((t, None, "no peer ran"))
    else:
        out.append(check(t, cell("alone", "pure", "q10"), "mbit",
                         lambda r: r["mbit"] >= best and r["loss_pct"] < 2,
                         lambda r: f"{r['mbit']:.1f} vs {best:.1f} Mbit/s, loss {r['loss_pct']:.2f}%"))
    out.append(check("CoDel: Pure's median queueing ≤ 5 ms", cell("alone", "pure", "codel"), "mbit",
                     lambda r: r["q50_ms"] <= 5, lambda r: f"{r['q50_ms']:.1f} ms"))
    for path, pct in (("loss0.5", 70), ("loss2", 50)):
        out.append(check(f"random loss {path[4:]}%: Pure ≥ {pct}% of the link", cell("alone", "pure", path), "mbit",
                         lambda r, pct=pct: r["link_pct"] >= pct, lambda r: f"{r['link_pct']:.1f}%"))
    for path in ["q20", "q1bdp", "codel"]:
        out.append(check(f"sharing, {path}: two Pure flows Jain ≥ 0.95", cell("shared", "2pure", path), "jain",
                         lambda r: r["jain"] >= 0.95, lambda r: f"{r['jain']:.3f}"))
        for g in ("pure+quinn", "pure+ngtcp2", "quinn+pure", "ngtcp2+pure"):
            out.append(check(f"sharing, {path}: {g} within 1.5× and aggregate ≥ 85%", cell("shared", g, path),
                             "ratio", lambda r: r["ratio"] <= 1.5 and r["link_pct"] >= 85,
                             lambda r: " / ".join(f"{x:.1f}" for x in r["flow_mbit"]) +
                             f" Mbit/s ({r['ratio']:.2f}×), aggregate {r['link_pct']:.1f}%"))
    # the same pairs once converged (--late): reported beside the window above, never instead of it
    for path in ["q20", "q1bdp", "codel"]:
        for g in ("2pure", "pure+quinn", "pure+ngtcp2", "quinn+pure", "ngtcp2+pure"):
            r = cell("shared", g, path)
            if r is None or r.get("late_ratio") is None:
                continue
            if g == "2pure":
                out.append(check(f"sharing, {path}, from {r['late_s']:g} s: two Pure flows Jain ≥ 0.95", r,
                                 "late_jain", lambda r: r["late_jain"] >= 0.95, lambda r: f"{r['late_jain']:.3f}"))
            else:
                out.append(check(f"sharing, {path}, from {r['late_s']:g} s: {g} within 1.5×", r, "late_ratio",
                                 lambda r: r["late_ratio"] <= 1.5,
                                 lambda r: " / ".join(f"{x:.1f}" for x in r["late_mbit"]) +
                                 f" Mbit/s ({r['late_ratio']:.2f}×)"))
    return out


def paths_main(args):
    quick = args.quick

    def names(s, known, what):
        out = [x.strip() for x in s.split(",") if x.strip()]
        bad = [x for x in out if x not in known]
        if bad:
            sys.exit(f"run.py paths: unknown {what} {', '.join(bad)}; known: {', '.join(known)}")
        return out

    def path_list(s, default):
        if s is None:
            return default
        if s == "all":
            return PATHS_ALL
        out = [x.strip() for x in s.split(",") if x.strip()]
        for x in out:
            try:
                paths_fwd_args(x, 40, False)
            except ValueError:
                sys.exit(f"run.py paths: unknown path {x!r}: q10, q20, qN, q0.25bdp, qFbdp, codel, loss0.5, lossP")
        return out
    rows_known = PATHS_IMPLS + list(PATHS_GROUPS)
    chosen = names(args.only, rows_known, "row(s)") if args.only else list(rows_known)
    skip = set(names(args.skip, rows_known, "row(s)")) if args.skip else set()
    chosen = [r for r in chosen if r not in skip]
    if quick and not args.only:
        chosen = [r for r in chosen if r != "4pure"]
    try:
        rtts = [float(x) for x in args.rtt.split(",")] if args.rtt else ([40.0] if quick else [40.0, 100.0])
        fair_rtts = [float(x) for x in args.fair_rtt.split(",")] if args.fair_rtt else rtts[:1]
    except ValueError:
        sys.exit("run.py paths: --rtt and --fair-rtt take comma-separated milliseconds, e.g. 40,100")
    if any(r <= 0 or r > 2000 for r in rtts + fair_rtts):
        sys.exit("run.py paths: RTTs must be 0 .. 2000 ms")
    rtts = [int(r) if r == int(r) else r for r in rtts]
    fair_rtts = [int(r) if r == int(r) else r for r in fair_rtts]
    alone_paths = path_list(args.paths, ["q1bdp", "codel"] if quick else PATHS_ALONE)
    fair_paths = path_list(args.fair_paths, ["q1bdp"] if quick else PATHS_FAIR)
    n = args.n or (PATHS_N_QUICK if quick else PATHS_N)
    fair_n = args.fair_n or (PATHS_FAIR_N_QUICK if quick else PATHS_FAIR_N)
    warmup = args.warmup if args.warmup is not None else (0.0 if quick else 2.0)
    rounds = args.rounds or 1
    late = args.late if args.late is not None else (0.0 if quick else PATHS_LATE)
    if n < 1 or fair_n < 1 or rounds < 1 or warmup < 0 or late < 0:
        sys.exit("run.py paths: --n, --fair-n, --rounds >= 1, --warmup, --late >= 0")
    limit_alone = args.time_limit or (20.0 if quick else 30.0)
    limit_fair = args.time_limit or (20.0 if quick else 150.0)

    need = [paths_impl(i) for i in PATHS_IMPLS
            if i in chosen or any(i in PATHS_GROUPS[g] for g in chosen if g in PATHS_GROUPS)]
    runnable, skipped, broken = prepare(need, args.no_build)
    have = {i.name for i in runnable}
    if not os.access(os.path.join(BUILD, "udpfwd"), os.X_OK):
        sys.exit(f"run.py paths: {os.path.join(BUILD, 'udpfwd')} is not built (ninja -C {BUILD} udpfwd)")
    alone_rows = [r for r in chosen if r in PATHS_IMPLS and r in have]
    groups = [g for g in chosen if g in PATHS_GROUPS and all(k in have for k in PATHS_GROUPS[g])]
    for g in chosen:
        if g in PATHS_GROUPS and g not in groups:
            note(f"skipping {g}: {', '.join(k for k in PATHS_GROUPS[g] if k not in have)} cannot run")
            skipped[g] = "a flow's implementation cannot run"
    if not alone_rows and not groups:
        sys.exit("run.py paths: nothing to run")
    log(f"paths: {PATHS_RATE_MBIT} Mbit/s each way through udpfwd; RTT {', '.join(f'{r:g}' for r in rtts)} ms; "
        f"alone {n} x 16 KiB; sharing {fair_n} x 16 KiB over the flows; BDP at 40 ms = {paths_bdp(40)} datagrams")
    t0 = time.monotonic()
    runs = []
    for rnd in range(1, rounds + 1):
        for rtt in rtts:
            for path in alone_paths:
                for name in alone_rows:
                    r = paths_alone(paths_impl(name), path, rtt, n, limit_alone, args.ecn)
                    r["round"] = rnd
                    runs.append(r)
                    tag = f"[paths {rtt:g} ms {path:<8} round {rnd}/{rounds}] {name:<12}"
                    if r["ok"]:
                        log(f"{tag} {r['mbit']:6.1f} Mbit/s ({r['link_pct']:5.1f}%)  loss {r['loss_pct']:5.2f}%  "
                            f"queue p50 {r['q50_ms']:6.1f} p95 {r['q95_ms']:6.1f} ms  {r['seconds']:.1f} s")
                    else:
                        log(f"{tag} FAILED: {r['error']}")
        for rtt in fair_rtts:
            for path in fair_paths:
                for g in groups:
                    r = paths_shared(g, path, rtt, fair_n, limit_fair, warmup, args.ecn, late)
                    r["round"] = rnd
                    runs.append(r)
                    tag = f"[paths {rtt:g} ms {path:<8} round {rnd}/{rounds}] {g:<11}"
                    if r.get("flow_mbit"):
                        lt = (f"; from {late:g} s {' + '.join(f'{x:.1f}' for x in r['late_mbit'])}  max/min "
                              f"{r['late_ratio']:.2f}  Jain {r['late_jain']:.3f} over {r['late_window_s']:.1f} s"
                              if "late_mbit" in r else "")
                        log(f"{tag} {' + '.join(f'{x:.1f}' for x in r['flow_mbit'])} = {r['aggregate_mbit']:.1f} Mbit/s "
                            f"({r['link_pct']:.1f}%)  max/min {r['ratio']:.2f}  Jain {r['jain']:.3f}  "
                            f"over {r['window_s']:.1f} s" + lt + ("" if r["ok"] else f"  FAILED: {r['error']}"))
                    else:
                        log(f"{tag} FAILED: {r['error']}")
    rows = paths_summarize(runs)
    hdr_a, body_a, hdr_s, body_s = paths_tables(rows)
    targets = paths_targets(rows)
    title = (f"{PATHS_RATE_MBIT} Mbit/s each way through udpfwd (--rate, --delay RTT/2; BDP = "
             f"{paths_bdp(40)} datagrams of {PATHS_DATAGRAM} B at 40 ms); alone: {n} x 16 KiB, goodput = the drain's "
             f"bytes / its seconds, loss = udpfwd's drops in the data direction / datagrams in, queueing = the data "
             f"direction's; sharing: {fair_n} x 16 KiB over the flows, started one after another, each flow's "
             f"goodput over the window from {warmup:g} s after the last start to the first end" +
             (f" (and, in the late columns, from {late:g} s after it)" if late else "") +
             f"; median of {rounds} round(s).")
    log("")
    log(title)
    log("\n".join(text_table(hdr_a, body_a)))
    if body_s:
        log("")
        log("\n".join(text_table(hdr_s, body_s)))
    tlines = [f"{'met' if v else 'NOT met' if v is False else 'not measured'}: {t}" + (f" ({s})" if s else "")
              for t, v, s in targets]
    log("")
    log("targets (40 ms RTT):")
    for t in tlines:
        log("  " + t)
    meta = {"quick": quick, "rounds": rounds, "rate_mbit": PATHS_RATE_MBIT, "rtt_ms": rtts, "fair_rtt_ms": fair_rtts,
            "alone_paths": alone_paths, "fair_paths": fair_paths, "n": n, "fair_n": fair_n, "warmup_s": warmup,
            "late_s": late,
            "ecn": args.ecn, "environment": environment(), "skipped": skipped, "broken": broken,
            "elapsed_s": round(time.monotonic() - t0, 1),
            "udpfwd": {p: " ".join(paths_fwd_args(p, 40, args.ecn)) for p in dict.fromkeys(alone_paths + fair_paths)},
            "targets": [{"target": t, "met": v, "value": s} for t, v, s in targets],
            "impls": {i.name: {"bin": i.bin, "serve": i.serve, "drain": i.drain, "desc": i.desc} for i in runnable}}
    outdir = args.out or (os.path.join(RESULTS, "tmp") if quick else RESULTS)
    files = paths_write(outdir, meta, runs, rows, title, (hdr_a, body_a), (hdr_s, body_s), tlines)
    slow = [r for r in runs if r.get("unfinished")]
    if slow:
        log(f"{len(slow)} alone run(s) did not finish in --time-limit (shown as unfinished; not failures)")
    return finish_cells("paths", args, [r for r in runs if not r.get("unfinished")], files, rows, broken, skipped)


def paths_summarize(runs):
    """Per (kind, row, path, RTT): the median of each figure over the good rounds."""
    keys = list(dict.fromkeys((r["kind"], r["impl"], r["path"], r["rtt_ms"]) for r in runs))
    rows = []
    for kind, impl, path, rtt in keys:
        rs = [r for r in runs if (r["kind"], r["impl"], r["path"], r["rtt_ms"]) == (kind, impl, path, rtt)]
        ok = [r for r in rs if r["ok"]]
        row = {"kind": kind, "impl": impl, "path": path, "rtt_ms": rtt, "runs": len(rs), "ok_runs": len(ok)}
        for k in ("mbit", "link_pct", "loss_pct", "q50_ms", "q95_ms", "seconds", "aggregate_mbit", "ratio", "jain",
                  "window_s", "late_ratio", "late_jain", "late_window_s", "late_s"):
            v = [r[k] for r in ok if r.get(k) is not None]
            if v:
                row[k] = med(v)
        if ok and kind == "shared":
            row["flows"] = ok[0]["flows"]
            row["flow_mbit"] = [med([r["flow_mbit"][i] for r in ok]) for i in range(len(ok[0]["flows"]))]
            row["loss_pct_flows"] = [med([r["loss_pct_flows"][i] for r in ok]) for i in range(len(ok[0]["flows"]))]
            late = [r for r in ok if r.get("late_mbit")]
            if late:
                row["late_mbit"] = [med([r["late_mbit"][i] for r in late]) for i in range(len(ok[0]["flows"]))]
        errs = [r for r in rs if not r["ok"]]
        if errs:
            row["error"] = errs[0]["error"][:300]
            if kind == "alone" and errs[0].get("wire_mbit") is not None:
                row["wire_mbit"] = errs[0]["wire_mbit"]
                row["loss_pct"] = row.get("loss_pct", errs[0].get("loss_pct"))
                row["q50_ms"] = row.get("q50_ms", errs[0].get("q50_ms"))
                row["q95_ms"] = row.get("q95_ms", errs[0].get("q95_ms"))
        rows.append(row)
    return rows


def paths_tables(rows):
    def f1(v):
        return "" if v is None else f"{v:.1f}"
    hdr_a = ["RTT ms", "path", "impl", "Mbit/s", "% link", "loss %", "queue p50 ms", "queue p95 ms", "seconds", "runs"]
    body_a = []
    for r in rows:
        if r["kind"] != "alone":
            continue
        head = [f"{r['rtt_ms']:g}", r["path"], r["impl"]]
        tail = [f"{r['ok_runs']}/{r['runs']}"]
        if "mbit" in r:
            body_a.append(head + [f1(r["mbit"]), f1(r["link_pct"]), f"{r['loss_pct']:.2f}", f1(r["q50_ms"]),
                                  f1(r["q95_ms"]), f1(r["seconds"])] + tail)
        elif "wire_mbit" in r:  # ran out of time: what crossed the bottleneck, headers and resends included
            body_a.append(head + [f"(unfinished; {r['wire_mbit']:.1f} on the wire)", "", f"{r['loss_pct']:.2f}",
                                  f1(r["q50_ms"]), f1(r["q95_ms"]), "killed"] + tail)
        else:
            body_a.append(head + ["FAILED", "", "", "", "", ""] + tail)
    hdr_s = ["RTT ms", "path", "flows", "each flow Mbit/s", "aggregate", "% link", "max/min", "Jain",
             "each flow's loss %", "queue p50 ms", "queue p95 ms", "window s", "runs"]
    # --late: each flow's goodput from that many seconds after the last start, once converged
    hdr_late = (["from late s: each flow Mbit/s", "max/min", "Jain", "late window s"]
                if any(r.get("late_mbit") for r in rows) else [])

    def late_cols(r):
        if not hdr_late:
            return []
        if not r.get("late_mbit"):
            return [""] * len(hdr_late)
        return [f"from {r['late_s']:g} s: " + " / ".join(f"{x:.1f}" for x in r["late_mbit"]),
                f"{r['late_ratio']:.2f}", f"{r['late_jain']:.3f}", f1(r["late_window_s"])]
    body_s = []
    for r in rows:
        if r["kind"] != "shared":
            continue
        head = [f"{r['rtt_ms']:g}", r["path"], r["impl"]]
        tail = [f"{r['ok_runs']}/{r['runs']}"]
        if "flow_mbit" in r:
            body_s.append(head + [" / ".join(f"{k} {x:.1f}" for k, x in zip(r["flows"], r["flow_mbit"])),
                                  f1(r["aggregate_mbit"]), f1(r["link_pct"]), f"{r['ratio']:.2f}", f"{r['jain']:.3f}",
                                  " / ".join(f"{x:.2f}" for x in r["loss_pct_flows"]), f1(r["q50_ms"]),
                                  f1(r["q95_ms"]), f1(r["window_s"])] + late_cols(r) + tail)
        else:
            body_s.append(head + ["FAILED"] + [""] * (8 + len(hdr_late)) + tail)
    return hdr_a, body_a, hdr_s[:-1] + hdr_late + hdr_s[-1:], body_s


def paths_write(outdir, meta, runs, rows, title, alone, shared, tlines):
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, f"paths-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    with open(base + ".json", "w") as f:
        json.dump({"experiment": "paths", **meta, "runs": runs, "summary": rows}, f, indent=1)
    env = meta["environment"]
    md = [f"# paths: {env.get('date', '')} (git {env.get('git', '?')}, {env.get('cpus')} CPUs, {env.get('cpu', '')})",
          "", title, "", "Rows: " + "; ".join(f"{k} = {v['desc']}" for k, v in meta["impls"].items()) + ".", ""]
    for hdr, body in (alone, shared):
        if body:
            md += ["| " + " | ".join(hdr) + " |", "|" + "|".join("---:" for _ in hdr) + "|"]
            md += ["| " + " | ".join(ln) + " |" for ln in body] + [""]
    md += ["Targets (issue #25, 40 ms RTT):", ""] + [f"- {t}" for t in tlines]
    failed = [r for r in rows if r.get("error")]
    if failed:
        md += ["", "Failures (first of each cell):", ""]
        md += [f"- {r['impl']} {r['path']} {r['rtt_ms']:g} ms: {r['error']}" for r in failed]
    with open(base + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    files = [base + ".json", base + ".md"]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        paths_plot(plt, base + ".png", rows, meta)
        files.append(base + ".png")
    except ImportError:
        note("matplotlib missing (apt-get install python3-matplotlib; run with /usr/bin/python3): no chart")
    log("wrote " + ", ".join(os.path.relpath(f, ROOT) for f in files))
    return files


def paths_plot(plt, path, rows, meta):
    """One panel of goodput per RTT (a group of bars per path, a bar per implementation), and one
    of the sharing cells (each flow's share stacked)."""
    alone_rtts = list(dict.fromkeys(r["rtt_ms"] for r in rows if r["kind"] == "alone"))
    shared = [r for r in rows if r["kind"] == "shared"]
    npan = len(alone_rtts) + (1 if shared else 0)
    fig, axes = plt.subplots(npan, 1, figsize=(10, 3.6 * npan), squeeze=False)
    axes = axes[:, 0]
    colors = {"pure": "tab:blue", "pure-newreno": "tab:purple", "quinn": "tab:orange", "ngtcp2": "tab:green"}
    for ax, rtt in zip(axes, alone_rtts):
        rs = [r for r in rows if r["kind"] == "alone" and r["rtt_ms"] == rtt]
        paths = list(dict.fromkeys(r["path"] for r in rs))
        impls = list(dict.fromkeys(r["impl"] for r in rs))
        width = 0.8 / max(1, len(impls))
        for k, impl in enumerate(impls):
            xs, ys = [], []
            for j, p in enumerate(paths):
                r = next((r for r in rs if r["impl"] == impl and r["path"] == p), None)
                if r and r.get("mbit") is not None:
                    xs.append(j + (k - (len(impls) - 1) / 2) * width)
                    ys.append(r["mbit"])
            ax.bar(xs, ys, width, label=impl, color=colors.get(impl))
        ax.axhline(meta["rate_mbit"], color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(paths)))
        ax.set_xticklabels(paths)
        ax.set_ylabel("goodput Mbit/s")
        ax.set_title(f"alone, {rtt:g} ms RTT, {meta['rate_mbit']} Mbit/s (dashed)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    if shared:
        ax = axes[-1]
        labels = []
        for j, r in enumerate(shared):
            labels.append(f"{r['impl']}\n{r['path']} {r['rtt_ms']:g} ms")
            bottom = 0.0
            for k, x in zip(r.get("flows", []), r.get("flow_mbit", [])):
                ax.bar(j, x, 0.6, bottom=bottom, color=colors.get(k, "grey"), edgecolor="white")
                bottom += x
        ax.axhline(meta["rate_mbit"], color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(shared)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("goodput Mbit/s, stacked per flow")
        ax.set_title("sharing one bottleneck (blue Pure, orange quinn, green ngtcp2)")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# name -> (help, add experiment-specific arguments, main)
# --------------------------------------------------------------------------
# python: the pure package against asyncio's TLS streams and pyzmq+CURVE, with the C library as
# the ceiling. Each Python run is one process holding both sides (bench/python_bench.py, run
# with the interpreter of the venv python/test.sh makes); the C rows are pure serve + pure drain
# (one-way) and rpc_bench (round trips), two processes, both sides' CPU counted.
# --------------------------------------------------------------------------
PY_CELLS = [("drain", 61, 1), ("drain", 1024, 1), ("drain", 16384, 1), ("rr", 61, 1), ("rr", 61, 16)]
PY_ROWS = {"pure": "the pure package (python/): async for / await link.send",
           "tls": "asyncio streams over TLS 1.3 (start_server/open_connection, ssl, 4-byte framing)",
           "zmq": "pyzmq 24 (zmq.asyncio) with CURVE: PUSH/PULL one-way, DEALER/ROUTER round trips",
           "c": "the C library: pure serve + pure drain (one-way), rpc_bench (round trips), 2 processes"}
# Messages per run: each run takes ~0.2-2 s whatever the row's speed (quick: a tenth).
PY_N = {"pure": {"drain": {61: 1_000_000, 1024: 300_000, 16384: 30_000}, "rr": {1: 30_000, 16: 200_000}},
        "tls": {"drain": {61: 200_000, 1024: 150_000, 16384: 30_000}, "rr": {1: 10_000, 16: 50_000}},
        "zmq": {"drain": {61: 50_000, 1024: 50_000, 16384: 10_000}, "rr": {1: 5_000, 16: 20_000}},
        "c": {"drain": {61: 1_000_000, 1024: 300_000, 16384: 30_000}, "rr": {}}}


def py_cell(work, size, inflight):
    return f"{work}-{size}" if work == "drain" else f"rr{inflight}-{size}"


def python_args(p):
    p.add_argument("--rounds", type=int, default=None, help="rounds per row and cell (default 5, quick 1)")
    p.add_argument("--python", default=None,
                   help="interpreter with the pure package (default build/pyvenv/bin/python, made by python/test.sh)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take (default 300)")


def python_one(py, impl, work, size, inflight, n, timeout):
    res = {"impl": impl, "cell": py_cell(work, size, inflight), "n": n, "ok": False}
    try:
        if impl == "c" and work == "drain":
            r = drain_one(IMPL_BY_NAME["pure"], n, size, timeout)
            if not r["ok"]:
                raise RunError(r.get("error", "failed"))
            res.update(messages=n, seconds=r["seconds"], cpu_s=r["client_cpu_s"] + r["server_cpu_s"])
        elif impl == "c":
            r = rpc_one(RPC_BY_NAME["pure"], 1, inflight, size, 2.0, 0.5, 10.0, timeout)
            if not r["ok"]:
                raise RunError(r.get("error", "failed"))
            res.update(messages=r["requests"], seconds=r["seconds"], cpu_s=r["client_cpu_s"] + r["server_cpu_s"])
        else:
            argv = [py, os.path.join(ROOT, "bench", "python_bench.py"), impl, work, str(size), str(n), str(inflight)]
            rc, out, err, _, _ = run_client(argv, timeout)
            rep = last_json(out, "messages")
            if rc != 0 or rep is None or rep.get("messages") != n:
                raise RunError(f"exit {rc}, report {rep}; stderr: {err.strip()[-600:]}")
            res.update(messages=n, seconds=rep["seconds"], cpu_s=rep["cpu_s"])
        res["msgs_per_s"] = res["messages"] / res["seconds"]
        res["cpu_us_per_msg"] = res["cpu_s"] * 1e6 / res["messages"]
        res["ok"] = True
    except RunError as e:
        res["error"] = str(e)
    return res


def python_main(args):
    py = args.python or os.path.join(BUILD, "pyvenv", "bin", "python")
    if not os.access(py, os.X_OK) and not args.python and not args.no_build:
        # The venv python/test.sh makes, without its tests: the package as a user installs it.
        venv = os.path.join(BUILD, "pyvenv")
        log(f"making {os.path.relpath(venv, ROOT)} with the pure package")
        for argv in (["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                     [os.path.join(venv, "bin", "pip"), "install", "-q", "--no-build-isolation", "--no-index",
                      os.path.join(ROOT, "python")]):
            if subprocess.run(argv, cwd=ROOT).returncode != 0:
                sys.exit("run.py python: " + " ".join(argv) + " failed")
    if not os.access(py, os.X_OK):
        sys.exit(f"run.py python: {py} missing: run `bash python/test.sh` (it makes the venv), or pass --python")
    rows = list(PY_ROWS)
    if args.only:
        rows = [r for r in args.only.split(",") if r in PY_ROWS]
    if args.skip:
        rows = [r for r in rows if r not in args.skip.split(",")]
    rounds = args.rounds or (1 if args.quick else 5)
    if "c" in rows:
        runnable, _, _ = prepare([IMPL_BY_NAME["pure"], RPC_BY_NAME["pure"]], args.no_build)
        if len(runnable) < 2:
            rows.remove("c")
    runs = []
    for rnd in range(rounds):
        for impl in rows:
            for work, size, inflight in PY_CELLS:
                if work == "rr" and impl == "c":
                    n = 0
                else:
                    n = PY_N[impl][work][size if work == "drain" else inflight]
                    if args.quick:
                        n = max(100, n // 10)
                r = python_one(py, impl, work, size, inflight, n, args.timeout)
                r["round"] = rnd
                runs.append(r)
                log(f"round {rnd + 1}/{rounds} {impl:5s} {r['cell']:12s} " +
                    (f"{r['msgs_per_s']:12,.0f} msg/s {r['cpu_us_per_msg']:8.3f} us CPU/msg" if r["ok"]
                     else "FAILED: " + r["error"][:300]))
    summary = []
    for impl in rows:
        for work, size, inflight in PY_CELLS:
            cell = py_cell(work, size, inflight)
            ok = [r for r in runs if r["impl"] == impl and r["cell"] == cell and r["ok"]]
            summary.append({"impl": impl, "cell": cell, "rounds": len(ok),
                            "msgs_per_s": med([r["msgs_per_s"] for r in ok]),
                            "cpu_us_per_msg": med([r["cpu_us_per_msg"] for r in ok]),
                            "error": None if ok else "every round failed"})
    by = {(r["impl"], r["cell"]): r for r in summary}
    cells = [py_cell(*c) for c in PY_CELLS]
    hdr = ["row"] + [f"{c} msg/s" for c in cells] + [f"{c} µs CPU/msg" for c in cells]
    body = []
    for impl in rows:
        line = [impl]
        for key in ("msgs_per_s", "cpu_us_per_msg"):
            for c in cells:
                v = by[(impl, c)][key]
                line.append("-" if v is None else (f"{v:,.0f}" if key == "msgs_per_s" else f"{v:.3f}"))
        body.append(line)
    targets = []
    pr = lambda i, c: (by.get((i, c)) or {}).get("msgs_per_s")
    for other, want, cs in (("tls", 3.0, ["drain-61", "drain-1024"]), ("zmq", 3.0, ["drain-61", "drain-1024"]),
                            ("c", 0.25, ["drain-16384"])):
        for c in cs:
            a, b = pr("pure", c), pr(other, c)
            if a and b:
                targets.append(f"pure / {other} at {c}: {a / b:.2f}x (target >= {want:g}x): "
                               + ("met" if a / b >= want else "NOT met"))
    title = ("Messages/s and CPU (user + system, both sides) per message, medians of "
             f"{rounds} round(s). Rows: " + "; ".join(f"{k} = {PY_ROWS[k]}" for k in rows)
             + ".\n\n" + "\n".join("- " + t for t in targets))

    def plot_fn(plt, path):
        fig, ax = plt.subplots(figsize=(10, 4.5))
        w = 0.8 / max(1, len(rows))
        for i, impl in enumerate(rows):
            ys = [by[(impl, c)]["msgs_per_s"] or 0 for c in cells]
            ax.bar([x + i * w for x in range(len(cells))], ys, w, label=impl)
        ax.set_xticks([x + w * (len(rows) - 1) / 2 for x in range(len(cells))])
        ax.set_xticklabels(cells)
        ax.set_yscale("log")
        ax.set_ylabel("messages/s (log)")
        ax.set_title("Python transports: messages/s (median)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=110)

    meta = {"environment": environment(), "rounds": rounds, "rows": {k: PY_ROWS[k] for k in rows}}
    print("\n".join(text_table(hdr, body)), flush=True)
    for t in targets:
        print(t, flush=True)
    files = write_cells("python", meta, runs, summary, hdr, body, title, plot_fn, args)
    return finish_cells("python", args, runs, files, summary, {}, {})


# --------------------------------------------------------------------------
# fleet: what the director of a fleet costs (bench/fleet_director.sh; docs/fleet.md)
# --------------------------------------------------------------------------
def fleet_args(p):
    p.add_argument("--pings", type=int, default=2000, help="round trips per path and round (default 2000)")
    p.add_argument("--packets", type=int, default=300000, help="datagrams per path and round (default 300000)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, the paths interleaved (default 3)")


def fleet_main(args):
    """Runs bench/fleet_director.sh (network namespaces: root and nft) and keeps its JSON line."""
    if not args.no_build:
        err = build_pure()
        if err:
            print("bench: " + err, file=sys.stderr)
            return 1
    pings, packets, rounds = (200, 30000, 1) if args.quick else (args.pings, args.packets, args.rounds)
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "fleet_director.sh"), BUILD, str(pings), str(packets),
                        str(rounds)], stdout=subprocess.PIPE, text=True)
    if r.returncode == 77:
        print(r.stdout, end="")
        return 0
    lines = r.stdout.strip().splitlines()
    if r.returncode or not lines:
        print(r.stdout, end="", file=sys.stderr)
        return 1
    print("\n".join(lines[:-1]), flush=True)
    res = json.loads(lines[-1])
    outdir = args.out or os.path.join(ROOT, "bench", "results", "tmp" if args.quick else "")
    os.makedirs(outdir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(outdir, f"fleet-{stamp}.json")
    with open(path, "w") as f:
        json.dump({"experiment": "fleet", "environment": environment(), **res}, f, indent=1)
    log(f"wrote {path}")
    if args.json:
        print(json.dumps(res))
    return 0


# --------------------------------------------------------------------------
# Head-of-line blocking (issue #23): one link (connection); channel A carries a bulk stream (1 MiB
# messages back to back), channel B 61-byte requests at a fixed rate (1,000/s), each echoed. Through
# udpfwd with random loss (both directions) on an emulated path; B's round trips and A's goodput in
# three modes: alone (no bulk), same (bulk on B's own channel/stream), separate (bulk on another).
# A row is a server + client pair: `serve` prints {"port": N, ...}; the client takes the address,
# what `pass` names, and HOL_CLIENT, and prints one JSON line with p50_us, p99_us, p999_us and
# bulk_mbps (tools/hol_bench.c says exactly). quinn, ngtcp2 and TCP+TLS rows slot in by adding a
# row here whose binaries take the same arguments (separate = two streams; TCP has no separate).
# --------------------------------------------------------------------------
HOL_CLIENT = ["--mode", "{mode}", "--duration", "{duration}", "--warmup", "{warmup}", "--rate", "{rate}",
              "--size", "{size}", "--bulk", "{bulk}"]
HOL_ROWS = [
    Impl("pure", "hol_bench", "cmake", ["serve"], ["client", "127.0.0.1:{port}"] + HOL_CLIENT,
         {"public_key": "--peer-key"}, "Pure: tools/hol_bench (channels 1 and 2; same = both on channel 0)"),
]
import hol_peers  # noqa: E402  bench/hol_peers.py: the quinn, ngtcp2 and TCP+TLS rows (their own cell runner)
if hol_peers:
    HOL_ROWS += [Impl(n, p.bin, p.build, p.serve, p.client, p.passes, p.desc) for n, p in hol_peers.HOL_PEERS.items()]
HOL_BY_NAME = {i.name: i for i in HOL_ROWS}
HOL_MODES = ["alone", "same", "separate", "datagram"]  # datagram: Pure's row only (issue #23)
HOL_LOSSES = [0.0, 0.01, 0.05]


def hol_has(impl, mode):
    """Whether a row has this mode (TCP+TLS has no `separate`)."""
    peer = hol_peers.HOL_PEERS.get(impl) if hol_peers else None
    return peer is None or (mode in peer.modes and mode != "datagram")


def hol_args(p):
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 3, quick 1)")
    p.add_argument("--duration", type=float, default=None, help="measured seconds per run (default 10, quick 2)")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds before measuring (default 1)")
    p.add_argument("--losses", help="comma-separated loss rates (default 0,0.01,0.05)")
    p.add_argument("--modes", help="comma-separated modes (default alone,same,separate,datagram; "
                                   "datagram: Pure's requests as datagrams)")
    p.add_argument("--rate", type=int, default=1000, help="requests per second (default 1000)")
    p.add_argument("--size", type=int, default=61, help="request bytes (default 61)")
    p.add_argument("--bulk", type=int, default=1 << 20, help="bulk message bytes (default 1 MiB)")
    p.add_argument("--path", default="--delay 5 --rate 200mbit --queue-bytes 250000",
                   help="udpfwd's path besides the loss (default: 10 ms RTT, 200 Mbit/s, a 250 kB queue "
                        "(one BDP)); '' for bare loopback")


def hol_one(impl, fwd, mode, loss, seed, args, timeout):
    res = {"impl": impl.name, "mode": mode, "loss": loss, "ok": False}
    subst = dict(mode=mode, duration=f"{args.duration:g}", warmup=f"{args.warmup:g}", rate=args.rate,
                 size=args.size, bulk=args.bulk)
    try:
        with Server(impl) as srv:
            fargv = [fwd, "--listen", "127.0.0.1:0", "--to", f"127.0.0.1:{srv.port}", "--seed", str(seed),
                     "--loss", f"{loss:g}"] + args.path.split()
            fout = tempfile.TemporaryFile(mode="w+")
            ferr = tempfile.TemporaryFile(mode="w+")
            fp = subprocess.Popen(fargv, stdout=fout, stderr=ferr, stdin=subprocess.DEVNULL, cwd=ROOT)
            try:
                deadline = time.monotonic() + 10
                line = ""
                while not line.endswith("\n"):
                    if fp.poll() is not None or time.monotonic() > deadline:
                        ferr.seek(0)
                        raise RunError(f"udpfwd did not start: {ferr.read()[-300:]}")
                    time.sleep(0.005)
                    fout.seek(0)
                    line = fout.readline()
                fport = json.loads(line)["port"]
                argv = ([impl.path] + [a.format(port=fport, **subst) for a in impl.drain] + srv.client_extra())
                r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=timeout, cwd=ROOT)
            except subprocess.TimeoutExpired:
                raise RunError(f"client timed out after {timeout:.0f} s")
            finally:
                fp.send_signal(signal.SIGTERM)
                try:
                    fp.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    fp.kill()
                    fp.wait()
            rep = last_json(r.stdout, "p99_us")
            if rep is None or r.returncode != 0:
                raise RunError(f"client exit {r.returncode}; stderr: {r.stderr.strip()[-400:] or '(empty)'}")
            srv.kill()  # SIGTERM: hol_bench's server prints its CPU and echo count
            srv.out.seek(0)
            counts = last_json(srv.out.read(), "server_cpu_ns")
            if counts and counts.get("echoed"):
                rep["server_cpu_us"] = counts["server_cpu_ns"] / 1e3 / counts["echoed"]
            res["report"] = rep
            res["ok"] = True
    except RunError as e:
        res["error"] = str(e)
    return res


def hol_main(args):
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    if args.duration is None:
        args.duration = 2.0 if args.quick else 10.0
    if rounds < 1 or args.duration <= 0 or args.warmup < 0:
        sys.exit("run.py hol: --rounds, --duration must be positive")
    losses = [float(x) for x in args.losses.split(",")] if args.losses else HOL_LOSSES
    modes = args.modes.split(",") if args.modes else HOL_MODES
    if any(m not in HOL_MODES for m in modes) or any(not 0 <= x < 1 for x in losses):
        sys.exit(f"run.py hol: modes are {','.join(HOL_MODES)}; losses in [0, 1)")
    names = args.only.split(",") if args.only else list(HOL_BY_NAME)
    names = [n for n in names if n not in (args.skip or "").split(",")]
    unknown = [n for n in names if n not in HOL_BY_NAME]
    if unknown:
        sys.exit(f"run.py hol: no hol row for {', '.join(unknown)} yet; rows: {', '.join(HOL_BY_NAME)}")
    runnable, skipped, broken = prepare([HOL_BY_NAME[n] for n in names], args.no_build)
    fwd = os.path.join(BUILD, "udpfwd")
    if not os.access(fwd, os.X_OK):
        sys.exit(f"run.py hol: {fwd} missing (ninja -C {BUILD} udpfwd)")
    timeout = args.warmup + args.duration + 40
    t_start = time.monotonic()
    runs = []
    for rnd in range(1, rounds + 1):
        for loss in losses:
            for mode in modes:
                for impl in runnable:
                    if not hol_has(impl.name, mode):
                        continue  # TCP+TLS: one stream, no `separate`
                    seed = 1000 * rnd + int(loss * 1000)
                    if hol_peers and impl.name in hol_peers.HOL_PEERS:
                        r = hol_peers.run_peer_cell(impl.name, mode, loss, args, seed=seed, build_dir=BUILD)
                    else:
                        r = hol_one(impl, fwd, mode, loss, seed, args, timeout)
                    r["round"] = rnd
                    runs.append(r)
                    tag = f"[hol round {rnd}/{rounds}] {impl.name:<6} {mode:<8} loss {loss:<5g}"
                    if not r["ok"]:
                        log(f"{tag} FAILED: {r['error']}")
                        continue
                    rep = r["report"]
                    log(f"{tag} p50 {rep['p50_us']:9.1f} µs  p99 {rep['p99_us']:9.1f} µs  "
                        f"p99.9 {rep['p999_us']:9.1f} µs  bulk {rep['bulk_mbps']:8.1f} Mbit/s")
    rows = []
    for impl in runnable:
        for loss in losses:
            for mode in modes:
                if not hol_has(impl.name, mode):
                    continue
                good = [r["report"] for r in runs if r["ok"] and r["impl"] == impl.name and r["mode"] == mode
                        and r["loss"] == loss]
                row = {"impl": impl.name, "mode": mode, "loss": loss, "runs": len(good)}
                for k in ("p50_us", "p99_us", "p999_us", "bulk_mbps"):
                    row[k] = round(med([g[k] for g in good]), 1) if good else None
                for k in ("requests", "answered", "dgram_sent", "dgram_lost", "dgram_refused", "client_cpu_us",
                          "server_cpu_us"):
                    vals = [g[k] for g in good if g.get(k) is not None]
                    if vals:
                        row[k] = med(vals)
                rows.append(row)
    hdr = ["impl", "mode", "loss", "p50 µs", "p99 µs", "p99.9 µs", "bulk Mbit/s"]
    body = [[r["impl"], r["mode"], f"{r['loss']:g}"] + [("-" if r[k] is None else f"{r[k]:.1f}")
                                                        for k in ("p50_us", "p99_us", "p999_us", "bulk_mbps")]
            for r in rows]
    log("")
    for ln in text_table(hdr, body):
        log(ln)
    # the datagram row: Pure's requests as datagrams beside the same requests as channel messages
    dg_hdr = ["loss", "datagrams sent", "echoed", "lost (round trip) %", "declared lost", "not queued",
              "client µs/datagram", "server µs/echo", "client µs/message", "server µs/echo (message)"]
    dg_body = []
    for loss in losses:
        d = next((r for r in rows if r["impl"] == "pure" and r["mode"] == "datagram" and r["loss"] == loss), None)
        a = next((r for r in rows if r["impl"] == "pure" and r["mode"] == "alone" and r["loss"] == loss), None)
        if not d or d.get("requests") is None:
            continue
        lost = 100.0 * (1 - d["answered"] / d["requests"]) if d["requests"] else 0.0
        dg_body.append([f"{loss:g}", f"{d['requests']:.0f}", f"{d['answered']:.0f}", f"{lost:.2f}",
                        f"{d.get('dgram_lost', 0):.0f}", f"{d.get('dgram_refused', 0):.0f}",
                        fmt(d.get("client_cpu_us")), fmt(d.get("server_cpu_us")),
                        fmt(a.get("client_cpu_us")) if a else "-", fmt(a.get("server_cpu_us")) if a else "-"])
    if dg_body:
        log("")
        for ln in text_table(dg_hdr, dg_body):
            log(ln)
    verdict = []
    for impl in runnable:
        cell = {(r["mode"], r["loss"]): r for r in rows if r["impl"] == impl.name}
        a, s = cell.get(("alone", 0.01)), cell.get(("separate", 0.01))
        if a and s and a["p99_us"] and s["p99_us"]:
            ratio = s["p99_us"] / a["p99_us"]
            verdict.append(f"{impl.name}: at 1% loss, p99 with bulk on another channel / alone = {ratio:.2f} "
                           f"(target <= 2): {'met' if ratio <= 2 else 'NOT met'}")
    if hol_peers:
        verdict += hol_peers.hol_verdicts(rows)
    for v in verdict:
        log(v)
    meta = {"quick": args.quick, "rounds": rounds, "duration": args.duration, "warmup": args.warmup,
            "rate": args.rate, "size": args.size, "bulk": args.bulk, "path": args.path, "losses": losses,
            "modes": modes, "environment": environment(), "skipped": skipped, "broken": broken,
            "elapsed_s": round(time.monotonic() - t_start, 1), "verdict": verdict,
            "impls": {i.name: {"bin": i.bin, "serve": i.serve, "client": i.drain, "desc": i.desc}
                      for i in runnable}}
    outdir = args.out or (os.path.join(RESULTS, "tmp") if args.quick else RESULTS)
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, f"hol-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    with open(base + ".json", "w") as f:
        json.dump({"experiment": "hol", "rows": [{k: r[k] for k in ("impl", "mode", "loss", "p50_us", "p99_us",
                                                                     "p999_us", "bulk_mbps")} for r in rows],
                   **meta, "runs": runs}, f, indent=1)
    md = [f"# hol: {meta['environment'].get('date', '')} (git {meta['environment'].get('git', '?')})", "",
          f"One link through udpfwd ({args.path or 'bare loopback'}, random loss both ways): {args.size}-byte "
          f"requests at {args.rate}/s echoed, bulk of {args.bulk}-byte messages back to back; "
          f"{args.duration:g} s measured after {args.warmup:g} s; median of {rounds} round(s).", "",
          "| " + " | ".join(hdr) + " |", "|" + "|".join("---:" for _ in hdr) + "|"]
    md += ["| " + " | ".join(ln) + " |" for ln in body]
    if dg_body:
        md += ["", "Datagrams (Pure): the same requests sent with pure_link_send_datagram and echoed as datagrams, "
               "beside them as channel messages (`alone`); lost is the round trip's (either way), declared lost the "
               "sender's count of its datagrams in packets declared lost; CPU per request in the client's measured "
               "window, the server's over its whole run.", "",
               "| " + " | ".join(dg_hdr) + " |", "|" + "|".join("---:" for _ in dg_hdr) + "|"]
        md += ["| " + " | ".join(ln) + " |" for ln in dg_body]
    md += [""] + [f"- {v}" for v in verdict]
    with open(base + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    files = [base + ".json", base + ".md"]
    if hol_peers and hol_peers.hol_plot(rows, base + ".png"):
        files.append(base + ".png")
    log("wrote " + ", ".join(os.path.relpath(f, ROOT) for f in files))
    return finish_cells("hol", args, runs, files, rows, broken, skipped)


EXPERIMENTS = {
    "drain": ("one stream of N messages; CPU per message on both sides", drain_args, drain_main),
    "transport": ("Pure alone: both link ends in one process, no sockets", transport_args, transport_main),
    "idle": ("K idle links between two processes: memory, CPU, packets, wake-up", idle_args, idle_main),
    "latency": ("ping-pong of one 61-byte message over one connection: p50/p99 round trip, CPU per round trip",
                echo_args, echo_main),
    "handshakes": ("N connections one after another (handshake, one echo, close): per second, CPU each",
                   echo_args, echo_main),
    "rpc": ("L links x P requests in flight, echoed and checked: requests/s, CPU per request, p50/p99/p99.9",
            rpc_args, rpc_main),
    "fanin": ("L links each draining one-way requests into one server at once: messages/s, CPU per message",
              fanin_args, fanin_main),
    "python": ("the pure package against asyncio+TLS 1.3 streams and pyzmq+CURVE, the C library as ceiling",
               python_args, python_main),
    "growth": ("the RPC workload at one fixed total rate over 1 ... 10,000 links: server CPU per request",
               growth_args, growth_main),
    "fleet": ("the director of a fleet (nftables, stateless): added round trip and CPU per packet (root)",
              fleet_args, fleet_main),
    "hol": ("head-of-line blocking: 61-byte requests beside a bulk stream on one link, under loss",
            hol_args, hol_main),
    "paths": ("a 50 Mbit/s bottleneck through udpfwd (queues, CoDel, random loss; 40/100 ms): goodput, loss, "
              "queueing; Pure sharing it with itself, quinn and ngtcp2", paths_args, paths_main),
}


def common_args(p):
    p.add_argument("--quick", action="store_true", help="one small round each (CI smoke test: counts only)")
    p.add_argument("--only", help="comma-separated implementations to run (" + ",".join(IMPL_BY_NAME) + ")")
    p.add_argument("--skip", help="comma-separated implementations to leave out")
    p.add_argument("--no-build", action="store_true", help="use existing binaries; build nothing")
    p.add_argument("--json", action="store_true", help="print a summary JSON object as the last line")
    p.add_argument("--build-dir", help="build directory holding pure and peers/ (default build)")
    p.add_argument("--out", help="results directory (default bench/results, bench/results/tmp with --quick)")


def main(argv):
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="experiments: " + ", ".join(f"{k} ({v[0]})" for k, v in EXPERIMENTS.items())
                                        + "\nrows: " + "; ".join(f"{i.name} = {i.desc}" for i in IMPLS))
    sub = ap.add_subparsers(dest="experiment")
    for name, (hlp, add, _) in EXPERIMENTS.items():
        p = sub.add_parser(name, help=hlp)
        common_args(p)
        add(p)
    if not argv or (argv[0] not in EXPERIMENTS and argv[0] not in ("-h", "--help")):
        argv = ["drain"] + argv  # drain is the default experiment
    args = ap.parse_args(argv)
    if args.build_dir:
        global BUILD, PEERS_OUT
        BUILD = os.path.abspath(args.build_dir)
        PEERS_OUT = os.path.join(BUILD, "peers")
    return EXPERIMENTS[args.experiment][2](args)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
