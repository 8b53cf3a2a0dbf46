# SPDX-License-Identifier: MIT
"""The peers' rows of the head-of-line benchmark (`bench/run.py hol`, issue #23).

Pure's row is tools/hol_bench.c; these are quinn, ngtcp2 (QUIC: alone, same, separate) and
TCP+TLS 1.3 (alone and same: a TCP connection is one stream). Every client takes the same
arguments as hol_bench's (`--mode --duration --warmup --rate --size --bulk`) and prints the same
JSON line (`mode, requests, p50_us, p99_us, p999_us, bulk_mbps, ...`); bench/README.md ("hol")
says how each peer's side works.

- HOL_PEERS: impl -> HolPeer(bin, build, serve, client, passes, modes, transport, desc).
- run_peer_cell(impl, mode, loss, args, seed=0, build_dir=None) runs one cell and returns what
  run.py's hol_one returns: {"impl", "mode", "loss", "ok", "report" | "error"}.
  Every row crosses build/udpfwd exactly as Pure's (`--loss L` + args.path). udpfwd is UDP, so
  the TCP row runs between two network namespaces whose IP packets peers/tls/tunpath carries
  through udpfwd, one datagram each (TUN MTU 1472: a full TCP packet is as long as a full QUIC
  datagram); it needs root, else the cell fails saying so.
- hol_verdicts(rows): the issue's three targets at 1% loss, from run.py's rows.
- hol_plot(rows, path): the chart (p99 per impl, mode and loss; goodput below).

run.py hol takes these rows by importing this module: HOL_ROWS gets an Impl per peer (bin, build,
serve, client, passes, desc), hol_main runs run_peer_cell for them (hol_one for Pure's) and skips
the modes a peer lacks, and adds hol_verdicts(rows) to its verdict and hol_plot's chart to its
files.

Run alone: /usr/bin/python3 bench/hol_peers.py [--only quinn,ngtcp2,tls] [--modes ...]
[--losses 0,0.01] [--duration 5] prints one line per cell (it does not write results; run.py
hol does)."""
import argparse
import collections
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOL_CLIENT = ["--mode", "{mode}", "--duration", "{duration}", "--warmup", "{warmup}", "--rate", "{rate}",
              "--size", "{size}", "--bulk", "{bulk}"]
DEFAULT_PATH = "--delay 5 --rate 200mbit --queue-bytes 250000"

HolPeer = collections.namedtuple("HolPeer", "bin build serve client passes modes transport desc")
HOL_PEERS = {
    "quinn": HolPeer("peers/quinn", "quinn", ["hol-serve"], ["hol-client", "{port}"] + HOL_CLIENT,
                     {"cert_sha256": "--cert-sha256"}, ("alone", "same", "separate"), "udp",
                     "quinn 0.9 + rustls: peers/quinn/src/hol.rs (separate = two bidi streams, a writer task each)"),
    "ngtcp2": HolPeer("peers/ngtcp2", "ngtcp2", ["hol-serve"], ["hol-client", "{port}"] + HOL_CLIENT, {},
                      ("alone", "same", "separate"), "udp",
                      "ngtcp2 0.12 + GnuTLS: peers/ngtcp2/hol.c (separate = two bidi streams, requests offered first)"),
    "tls": HolPeer("peers/tls-hol", "tls", ["serve", "--listen", "{host}:0"],
                   ["client", "{host}:{port}"] + HOL_CLIENT, {"cert_sha256": "--cert-sha256"}, ("alone", "same"),
                   "tcp", "TCP + TLS 1.3 (OpenSSL 3.0, CUBIC): peers/tls/hol.c, one stream; two netns, IP packets through udpfwd"),
}
# The TCP row's namespaces: addresses that exist only inside them.
NS_SERVER_ADDR, NS_CLIENT_ADDR = "10.213.23.1", "10.213.23.2"


class CellError(Exception):
    pass


def _subst(args):
    return dict(duration=f"{args.duration:g}", warmup=f"{args.warmup:g}", rate=args.rate, size=args.size,
                bulk=args.bulk)


def _start(argv, what, timeout=20.0):
    """Starts a server or udpfwd; returns (proc, its first stdout line as JSON, stderr file)."""
    out, err = tempfile.TemporaryFile(mode="w+"), tempfile.TemporaryFile(mode="w+")
    try:
        p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT)
    except OSError as e:
        raise CellError(f"cannot start {what}: {e}")
    deadline = time.monotonic() + timeout
    while True:
        out.seek(0)
        line = out.readline()
        if line.endswith("\n"):
            break
        if p.poll() is not None or time.monotonic() > deadline:
            _stop(p)
            err.seek(0)
            raise CellError(f"{what} printed no JSON line; stderr: {err.read()[-300:].strip() or '(empty)'}")
        time.sleep(0.005)
    try:
        info = json.loads(line)
        int(info["port"])
    except (ValueError, KeyError, TypeError):
        _stop(p)
        raise CellError(f"{what}'s first line is not {{\"port\": N, ...}}: {line.strip()[:200]!r}")
    return p, info, err


def _stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _passes(peer, info):
    extra = []
    for key, flag in peer.passes.items():
        if key not in info:
            raise CellError(f"server JSON lacks {key!r}, which its client needs")
        extra += [flag, str(info[key])]
    return extra


def _client(argv, timeout):
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise CellError(f"client timed out after {timeout:.0f} s")
    rep = None
    for ln in reversed(r.stdout.splitlines()):
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if isinstance(d, dict) and "p99_us" in d:
            rep = d
            break
    if rep is None or r.returncode != 0:
        got = f" ({rep.get('answered')} of {rep.get('requests')} answered)" if rep else ""
        raise CellError(f"client exit {r.returncode}{got}; stderr: {r.stderr.strip()[-400:] or '(empty)'}")
    return rep


# ---- the TCP row's path: two namespaces whose IP packets cross udpfwd ----

TUN_MTU = 1472  # a full TCP/IP packet is then as long as a full QUIC or Pure datagram's payload


class Netns:
    """Two network namespaces, each with a TUN device, joined by peers/tunpath: every IP packet
    one sends becomes a datagram through udpfwd (the same path and loss as the UDP rows) and
    comes out of the other's TUN. Deleted on exit. Needs root."""

    def __init__(self, build, fwd_argv):
        if os.geteuid() != 0:
            raise CellError("the TCP row needs network namespaces and TUN devices (peers/tls/tunpath.c): run as root")
        tag = f"hol{os.getpid() % 100000}"
        self.ns, self.nc = tag + "s", tag + "c"
        self.made, self.procs = [], []
        try:
            for n in (self.ns, self.nc):
                self._run(["ip", "netns", "add", n])
                self.made.append(n)
            tun = os.path.join(build, "peers", "tunpath")
            tp = subprocess.Popen([tun, "--client-ns", self.nc, "--server-ns", self.ns], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=tempfile.TemporaryFile(mode="w+"), text=True,
                                  cwd=ROOT)
            self.procs.append(tp)
            line = tp.stdout.readline()
            try:
                sport = int(json.loads(line)["port"])
            except (ValueError, KeyError, TypeError):
                raise CellError(f"tunpath did not start (printed {line.strip()[:100]!r})")
            for n, addr in ((self.ns, NS_SERVER_ADDR), (self.nc, NS_CLIENT_ADDR)):
                self._run(["ip", "-n", n, "addr", "add", addr + "/24", "dev", "holtun"])
                self._run(["ip", "-n", n, "link", "set", "dev", "holtun", "mtu", str(TUN_MTU), "up"])
                self._run(["ip", "-n", n, "link", "set", "dev", "lo", "up"])
            fp, finfo, _ = _start(fwd_argv(sport), "udpfwd", timeout=10)
            self.procs.append(fp)
            tp.stdin.write(f"{finfo['port']}\n")
            tp.stdin.flush()
        except CellError:
            self.close()
            raise

    def _run(self, argv):
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise CellError(f"{' '.join(argv)}: {r.stderr.strip()[:300]}")

    def exec_in(self, ns):
        return ["ip", "netns", "exec", ns]

    def close(self):
        for p in reversed(self.procs):
            _stop(p)
        self.procs = []
        for n in self.made:
            subprocess.run(["ip", "netns", "del", n], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.made = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_peer_cell(impl, mode, loss, args, seed=0, build_dir=None):
    """One cell of a peer's row, in the shape of run.py's hol_one. args needs duration, warmup,
    rate, size, bulk, path (udpfwd's options besides --loss)."""
    res = {"impl": impl, "mode": mode, "loss": loss, "ok": False}
    build = build_dir or os.path.join(ROOT, "build")
    try:
        peer = HOL_PEERS.get(impl)
        if peer is None:
            raise CellError(f"no hol peer {impl!r}; peers: {', '.join(HOL_PEERS)}")
        if mode not in peer.modes:
            raise CellError(f"{impl} has no {mode!r} mode (modes: {', '.join(peer.modes)})")
        binary = os.path.join(build, peer.bin)
        if not os.access(binary, os.X_OK):
            raise CellError(f"{binary} missing (peers/{peer.build}/build.sh {os.path.join(build, 'peers')})")
        timeout = args.warmup + args.duration + 40
        sub = _subst(args)
        fwd = os.path.join(build, "udpfwd")
        if not os.access(fwd, os.X_OK):
            raise CellError(f"{fwd} missing (ninja -C {build} udpfwd)")

        def fwd_argv(port):
            return [fwd, "--listen", "127.0.0.1:0", "--to", f"127.0.0.1:{port}", "--seed", str(seed),
                    "--loss", f"{loss:g}"] + shlex.split(args.path)

        if peer.transport == "udp":
            srv, info, _ = _start([binary] + peer.serve, f"{impl} server")
            try:
                fp, finfo, _ = _start(fwd_argv(info["port"]), "udpfwd", timeout=10)
                try:
                    argv = [binary] + [a.format(port=finfo["port"], mode=mode, **sub) for a in peer.client]
                    res["report"] = _client(argv + _passes(peer, info), timeout)
                finally:
                    _stop(fp)
            finally:
                _stop(srv)
        else:
            with Netns(build, fwd_argv) as ns:
                srv, info, _ = _start(ns.exec_in(ns.ns) + [binary] + [a.format(host=NS_SERVER_ADDR)
                                                                       for a in peer.serve], f"{impl} server")
                try:
                    argv = ns.exec_in(ns.nc) + [binary] + [
                        a.format(host=NS_SERVER_ADDR, port=info["port"], mode=mode, **sub) for a in peer.client]
                    res["report"] = _client(argv + _passes(peer, info), timeout)
                finally:
                    _stop(srv)
        rep = res["report"]
        if rep.get("answered", 0) < rep.get("requests", 0):
            # as hol_bench.c: the answers still missing 10 s after the window are not counted, so
            # the percentiles are of the answered requests only (a lower bound on the real ones)
            res["incomplete"] = (f"{rep['answered']} of {rep['requests']} requests answered within the drain: "
                                 "percentiles of the answered only")
        res["ok"] = True
    except CellError as e:
        res["error"] = str(e)
    return res


def hol_verdicts(rows, loss=0.01):
    """The issue's targets in one run at `loss`, from rows {"impl", "mode", "loss", "p99_us", ...}:
    Pure's separate p99 <= 2 x its alone p99, <= 0.5 x TCP+TLS's same p99, <= the better QUIC
    peer's separate p99. One line per target that the rows allow judging."""
    cell = {(r["impl"], r["mode"], r["loss"]): r.get("p99_us") for r in rows}
    loss = next((x for x in {r["loss"] for r in rows} if abs(x - loss) < 1e-9), loss)
    pure = cell.get(("pure", "separate", loss))
    out = []
    if pure is None:
        return out
    alone = cell.get(("pure", "alone", loss))
    if alone:
        out.append(f"target: pure separate p99 {pure:.0f} us <= 2 x pure alone p99 {alone:.0f} us: "
                   f"{'met' if pure <= 2 * alone else 'NOT met'}")
    tls = cell.get(("tls", "same", loss))
    if tls:
        out.append(f"target: pure separate p99 {pure:.0f} us <= 0.5 x TCP+TLS same p99 {tls:.0f} us: "
                   f"{'met' if pure <= 0.5 * tls else 'NOT met'}")
    quic = [(cell.get((q, "separate", loss)), q) for q in ("quinn", "ngtcp2")]
    quic = [x for x in quic if x[0]]
    if quic:
        best, who = min(quic)
        out.append(f"target: pure separate p99 {pure:.0f} us <= the better QUIC peer's separate p99 ({who}) {best:.0f} us: "
                   f"{'met' if pure <= best else 'NOT met'}")
    return out


def hol_plot(rows, path, title="hol: requests beside a bulk stream"):
    """A chart of run.py hol's rows: per loss rate, the requests' p99 (log scale; p50 as a tick,
    p99.9 as a whisker) and the bulk's goodput, one bar per impl and mode. Returns path, or None
    without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    losses = sorted({r["loss"] for r in rows})
    cells = []  # (impl, mode) in the rows' order
    for r in rows:
        if (r["impl"], r["mode"]) not in cells:
            cells.append((r["impl"], r["mode"]))
    by = {(r["impl"], r["mode"], r["loss"]): r for r in rows}
    fig, axes = plt.subplots(2, 1, figsize=(min(16, max(8, 0.3 * len(cells) * len(losses) + 3)), 8), sharex=True)
    width = 0.8 / max(1, len(cells))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    impls = list(dict.fromkeys(c[0] for c in cells))
    hatch = {"alone": "", "same": "//", "separate": ".."}
    for k, (impl, mode) in enumerate(cells):
        xs = [i + (k - (len(cells) - 1) / 2) * width for i in range(len(losses))]
        got = [by.get((impl, mode, x)) or {} for x in losses]
        p99 = [g.get("p99_us") or 0 for g in got]
        p50 = [g.get("p50_us") or 0 for g in got]
        p999 = [g.get("p999_us") or 0 for g in got]
        col = colors[impls.index(impl) % len(colors)]
        axes[0].bar(xs, [v / 1e3 for v in p99], width, color=col, hatch=hatch.get(mode, ""), edgecolor="black",
                    linewidth=0.4, label=f"{impl} {mode}")
        axes[0].errorbar(xs, [v / 1e3 for v in p99], yerr=[[0] * len(xs), [max(0, (c - b) / 1e3) for b, c in
                                                                            zip(p99, p999)]],
                         fmt="none", ecolor="black", linewidth=0.8)
        axes[0].scatter(xs, [v / 1e3 if v else float("nan") for v in p50], marker="_", color="black", s=60,
                        zorder=3)
        axes[1].bar(xs, [g.get("bulk_mbps") or 0 for g in got], width, color=col, hatch=hatch.get(mode, ""),
                    edgecolor="black", linewidth=0.4)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("request round trip p99, ms\n(tick: p50, whisker: p99.9)")
    axes[1].set_ylabel("bulk goodput, Mbit/s")
    axes[1].set_xticks(range(len(losses)))
    axes[1].set_xticklabels([f"loss {x * 100:g}%" for x in losses])
    axes[0].legend(fontsize=7, ncol=4, loc="upper left")
    axes[0].set_title(title)
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv):
    p = argparse.ArgumentParser(description="Runs the peers' hol cells (run.py hol writes the results).")
    p.add_argument("--only", help="comma-separated peers (default all)")
    p.add_argument("--modes", help="comma-separated modes (default each peer's)")
    p.add_argument("--losses", default="0", help="comma-separated loss rates (default 0)")
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--size", type=int, default=61)
    p.add_argument("--bulk", type=int, default=1 << 20)
    p.add_argument("--path", default=DEFAULT_PATH)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    a = p.parse_args(argv)
    names = a.only.split(",") if a.only else list(HOL_PEERS)
    failed = 0
    for loss in [float(x) for x in a.losses.split(",")]:
        for name in names:
            for mode in (a.modes.split(",") if a.modes else HOL_PEERS[name].modes):
                if name in HOL_PEERS and mode not in HOL_PEERS[name].modes:
                    continue
                r = run_peer_cell(name, mode, loss, a, seed=int(loss * 1000) + 1, build_dir=a.build_dir)
                if r["ok"]:
                    rep = r["report"]
                    print(f"{name:<6} {mode:<8} loss {loss:<5g} p50 {rep['p50_us']:9.1f} us  p99 {rep['p99_us']:9.1f} us"
                          f"  p99.9 {rep['p999_us']:9.1f} us  bulk {rep['bulk_mbps']:8.1f} Mbit/s  "
                          f"{json.dumps(rep)}" + (f"  ({r['incomplete']})" if "incomplete" in r else ""), flush=True)
                else:
                    failed += 1
                    print(f"{name:<6} {mode:<8} loss {loss:<5g} FAILED: {r['error']}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
