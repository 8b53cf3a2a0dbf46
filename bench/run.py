#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Pure's comparison runner: the same work through Pure and its peers, side by side.

Run with Debian's interpreter (it sees python3-matplotlib):

    /usr/bin/python3 bench/run.py [drain] [--quick] [--sizes 61,1024] [--rounds 5]
                                  [--only a,b] [--skip a,b] [--no-build] [--json]
    /usr/bin/python3 bench/run.py latency|handshakes [--quick] [--rounds 5] [--n N] [--only a,b]

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
        self.serve, self.drain, self.passes, self.desc = serve, drain, passes or {}, desc
        self.echo, self.ping, self.hs = echo, ping, hs

    @property
    def path(self):
        return os.path.join(BUILD, self.bin)


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
    Impl("tcp", "peers/tls", "tls", ["serve", "--plain"], ["drain", "{port}", "{n}", "{size}", "--plain"], {},
         "TCP plain (no encryption)", echo=["serve", "--plain", "--echo"], ping=PEER_PING + ["--plain"],
         hs=PEER_HS + ["--plain"]),
    Impl("udp", "peers/udp-floor", "udp-floor", ["serve"], ["drain", "{port}", "{n}", "{size}"], {},
         "raw UDP, GSO/GRO, no retransmission (floor)"),
    Impl("udp-seal", "peers/udp-floor", "udp-floor", ["serve", "--seal"],
         ["drain", "{port}", "{n}", "{size}", "--seal"], {"key": "--key"},
         "raw UDP + AES-128-GCM per datagram (OpenSSL EVP)"),
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
        if err:
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


class Server:
    """Starts `impl` serving, reads its JSON line; a context manager that kills it."""

    def __init__(self, impl, timeout=20.0, args=None):
        self.impl = impl
        self.out = tempfile.TemporaryFile(mode="w+")
        self.err = tempfile.TemporaryFile(mode="w+")
        try:
            self.proc = subprocess.Popen([impl.path] + (args or impl.serve), stdout=self.out, stderr=self.err,
                                         stdin=subprocess.DEVNULL, cwd=ROOT)
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
    c0 = children_cpu_s()
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             text=True, cwd=ROOT)
    except OSError as e:
        raise RunError(f"cannot start client: {e}")
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise RunError(f"client timed out after {timeout:.0f} s")
    wall = time.monotonic() - t0
    return p.returncode, out, err, children_cpu_s() - c0, wall


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
# kind -> (Impl attribute with the client's arguments, JSON key the client's line must have,
#          JSON key with the count of things done, unit name)
ECHO_KINDS = {
    "latency": ("ping", "round_trips", "echoes", "round trip"),
    "handshakes": ("hs", "handshakes", "ok", "handshake"),
}


def echo_one(impl, kind, n, size, timeout):
    """One latency or handshakes run. Returns a result dict (ok False with `error` on failure)."""
    attr, key, done_key, _ = ECHO_KINDS[kind]
    res = {"impl": impl.name, "experiment": kind, "n": n, "size": size, "ok": False}
    try:
        with Server(impl, args=impl.echo) as srv:
            argv = [impl.path] + [a.format(port=srv.port, n=n, size=size) for a in getattr(impl, attr)]
            argv += srv.client_extra()
            s0 = srv.cpu_ns()
            rc, out, err, ccpu, wall = run_client(argv, timeout)
            s1 = srv.cpu_ns()
            alive = srv.proc.poll() is None
            res.update(client_cpu_s=ccpu, server_cpu_s=(s1 - s0) / 1e9, wall_s=wall)
            rep = last_json(out, key)
            if rep is None:
                raise RunError(f"client exit {rc}, no JSON result; stderr: {err.strip()[-600:] or '(empty)'}"
                               f"; server stderr: {srv.stderr_tail()}")
            res["report"] = rep
            if rep.get(key) != n or rep.get(done_key) != n or rep.get("mismatches") != 0:
                raise RunError(f"count mismatch: asked for {n}, client reports {key}={rep.get(key)} "
                               f"{done_key}={rep.get(done_key)} mismatches={rep.get('mismatches')}; client stderr: "
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
                           per_core_s=1e6 / row["both_us"] if row["both_us"] else None)
        rows.append(row)
    return rows


def echo_print_table(kind, rows):
    unit = ECHO_KINDS[kind][3]
    if kind == "latency":
        hdr = ["impl", "p50 µs (min–max)", "p99 µs (min–max)", "mean µs", f"both CPU µs/{unit}", "client", "server",
               "runs"]
    else:
        hdr = ["impl", "handshakes/s (min–max)", f"both CPU µs/{unit} (min–max)", "client", "server",
               "per core-s", "runs"]

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
                          fmt(r.get("per_core_s")), runs])
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
    timeout = args.timeout or (30.0 if args.quick else 300.0)
    attr = ECHO_KINDS[kind][0]
    chosen = select_impls(args)
    if args.only:
        no_mode = [i.name for i in chosen if getattr(i, attr) is None]
        if no_mode:
            sys.exit(f"run.py {kind}: no {kind} mode for {', '.join(no_mode)}; rows: "
                     + ", ".join(i.name for i in IMPLS if getattr(i, attr)))
    impls = [i for i in chosen if getattr(i, attr) is not None]
    if not impls:
        sys.exit(f"run.py {kind}: no row left to run")
    runnable, skipped, broken = prepare(impls, args.no_build)
    names = [i.name for i in runnable]
    unit = ECHO_KINDS[kind][3]
    t_start = time.monotonic()
    runs = []
    for rnd in range(1, rounds + 1):
        for impl in runnable:  # interleaved: A B C ... A B C ...
            r = echo_one(impl, kind, n, args.size, timeout)
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
        log(f"handshakes: {n} connections one after another (handshake, one 61-byte message echoed, close); "
            f"median of {rounds} round(s)")
    echo_print_table(kind, rows)
    failed = [r for r in runs if not r["ok"]]
    meta = {"quick": args.quick, "rounds": rounds, "n": n, "size": args.size, "environment": environment(),
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


# name -> (help, add experiment-specific arguments, main)
EXPERIMENTS = {
    "drain": ("one stream of N messages; CPU per message on both sides", drain_args, drain_main),
    "transport": ("Pure alone: both link ends in one process, no sockets", transport_args, transport_main),
    "idle": ("K idle links between two processes: memory, CPU, packets, wake-up", idle_args, idle_main),
    "latency": ("ping-pong of one 61-byte message over one connection: p50/p99 round trip, CPU per round trip",
                echo_args, echo_main),
    "handshakes": ("N connections one after another (handshake, one echo, close): per second, CPU each",
                   echo_args, echo_main),
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
