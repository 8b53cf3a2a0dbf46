//! quinn rpc-serve / rpc-client: the RPC workload (bench/README.md, "RPC"; issue #14) over
//! QUIC with quinn 0.9, the same contract as tools/rpc_bench.c (Pure) and peers/tls/rpc.c
//! (TCP + TLS). bench/rpc_work.h (requests, their check, the latency histogram, the report
//! lines) is mirrored below byte for byte.
//!
//!   quinn rpc-serve [--threads N] [--corrupt-every N] [--drop-every N]
//!       one Endpoint (one UDP socket) on 127.0.0.1:0; prints {"port": N, "cert_sha256": ...},
//!       serves until SIGTERM or SIGINT, then prints {"served": N, "requests": N, "links": L,
//!       ...}. One task per connection: the client's one bidirectional stream carries
//!       requests (u32 BE length + body); every whole request of one read (up to READ_BATCH
//!       received segments) is sent back in one write_all, except one-way requests
//!       (rpc_server_echoes). --threads 1 (default): a current-thread tokio runtime;
//!       N > 1: a multi-thread runtime with N workers, still one endpoint.
//!   quinn rpc-client PORT [--cert-sha256 HEX] --links L --outstanding P --size S
//!                    --duration SEC [--warmup SEC] [--drain-timeout SEC] [--rate R] [--fanin N]
//!       one Endpoint (one UDP socket), a current-thread runtime, L connections (at most 256
//!       handshakes under way), one bidirectional stream each with a reader task and a writer
//!       task; the rest as rpc_bench.c's client (phase lines, ramp, drain, report).
//!
//! The client's tasks share one `Client` through an Rc (a LocalSet: everything is on one
//! thread). A link's reader checks each reply and, in the closed loop, owes the link one more
//! request; its writer wakes (a Notify), builds every owed request into one buffer and hands
//! it to quinn with write_chunk (no copy inside quinn). Latency runs from just before that
//! write_chunk to the reply passing rpc_check.

use std::cell::{Cell, RefCell};
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use super::idle::cpu_ns;
use super::{
    client_crypto, endpoint_config, parse_pin, print_suite_once, runtime, server_crypto, transport, udp_socket_with,
    SERVER_NAME,
};

const ALPN: &[u8] = b"pure-rpc";
/// Long enough that no connection times out during a run (the drain timeout included).
const IDLE_TIMEOUT_MS: u32 = 120_000;
const MAX_HANDSHAKES: usize = 256;
const MAX_THREADS: u64 = 64;
/// Stream segments taken per read_chunks call.
const READ_BATCH: usize = 32;
/// The fan-in client writes a link's one-way requests this many bytes at a time...
const FANIN_CHUNK: usize = 64 << 10;
/// ...and quinn buffers at most this much unacknowledged data per connection, so L links
/// hold at most L x 256 KiB, never the whole L x N.
const FANIN_SEND_WINDOW: u64 = 256 << 10;
/// Socket buffers, both sides: 64 MiB as Pure's own socket (src/io/udp.c), past rmem_max with
/// SO_RCVBUFFORCE where allowed: one socket carries every link, and L x P requests arrive in
/// bursts (at 10,000 links x 16 x 1 KiB, 8 MiB overflowed into losses that probe timeouts,
/// grown to seconds by the queueing, did not repair within the 10 s drain).
const SOCKET_BUFFER: usize = 64 << 20;
/// Application error code: a request over RPC_MAX_SIZE.
const BAD_FRAMING: u32 = 1;

// ---------------------------------------------------------------------------
// bench/rpc_work.h

const RPC_HDR: usize = 12;
const RPC_MAX_SIZE: u32 = 1 << 20;
const RPC_MAX_OUTSTANDING: u64 = 1024;
const RPC_ONEWAY: u64 = 1 << 63;
const RPC_LAST: u64 = 1 << 62;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clk: i32, ts: *mut Timespec) -> i32;
}

/// CLOCK_MONOTONIC in ns (rpc_now_ns).
fn now_ns() -> u64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime fills a struct timespec (two longs on 64-bit Linux); 1 is CLOCK_MONOTONIC.
    unsafe { clock_gettime(1, &mut ts) };
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

/// user + sys CPU of this process, seconds (rpc_cpu_s).
fn cpu_s() -> f64 {
    cpu_ns() as f64 / 1e9
}

fn be32(p: &[u8]) -> u32 {
    u32::from_be_bytes([p[0], p[1], p[2], p[3]])
}

fn be64(p: &[u8]) -> u64 {
    u64::from_be_bytes([p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]])
}

/// pat[j] = j % 251 for j < 251 + size (rpc_pattern_new).
fn pattern_new(size: u32) -> Vec<u8> {
    (0..251 + size as usize).map(|j| (j % 251) as u8).collect()
}

/// true if the server sends request d back: anything but a one-way request that is not its
/// link's last (rpc_server_echoes).
fn server_echoes(d: &[u8]) -> bool {
    d.len() < 8 || (d[0] & 0xc0) != 0x80
}

fn pattern_offset(link: u32, seq: u64) -> usize {
    (seq.wrapping_add(link as u64) % 251) as usize
}

/// Writes request (link, seq) of out.len() bytes into out (rpc_request).
fn request(out: &mut [u8], pat: &[u8], link: u32, seq: u64) {
    let size = out.len();
    out[..8].copy_from_slice(&seq.to_be_bytes());
    out[8..12].copy_from_slice(&link.to_be_bytes());
    let off = pattern_offset(link, seq);
    out[RPC_HDR..].copy_from_slice(&pat[off + RPC_HDR..off + size]);
}

/// None if d is exactly request (link, seq) of `size` bytes; else a short reason (rpc_check).
fn check(d: &[u8], pat: &[u8], size: u32, link: u32, seq: u64) -> Option<&'static str> {
    if d.len() != size as usize {
        return Some("wrong length");
    }
    if be64(d) != seq {
        return Some("wrong sequence number (a reply missing, repeated or out of order)");
    }
    if be32(&d[8..]) != link {
        return Some("another link's reply");
    }
    let off = pattern_offset(link, seq);
    if d[RPC_HDR..] != pat[off + RPC_HDR..off + size as usize] {
        return Some("body differs from the request");
    }
    None
}

/// Appends one frame (u32 BE length + request (link, seq)) to out.
fn put_request(out: &mut Vec<u8>, pat: &[u8], size: u32, link: u32, seq: u64) {
    out.extend_from_slice(&size.to_be_bytes());
    let at = out.len();
    out.resize(at + size as usize, 0);
    request(&mut out[at..], pat, link, seq);
}

// The latency histogram: HDR-style log-linear buckets over ns, values below 2^SUB exact,
// then 2^SUB buckets per power of two.
const HIST_SUB: u32 = 6;
const HIST_BUCKETS: usize = ((64 - HIST_SUB + 1) << HIST_SUB) as usize;

struct Hist {
    n: u64,
    sum_ns: u64,
    max_ns: u64,
    count: Vec<u64>,
}

fn hist_index(v: u64) -> usize {
    if v < (1 << HIST_SUB) {
        return v as usize;
    }
    let shift = (63 - v.leading_zeros()) - HIST_SUB;
    (((shift + 1) << HIST_SUB) as u64 + ((v >> shift) - (1 << HIST_SUB))) as usize
}

/// The middle of bucket i, ns.
fn hist_value(i: usize) -> f64 {
    if i < (1 << HIST_SUB) {
        return i as f64;
    }
    let shift = (i >> HIST_SUB) as u32 - 1;
    let mant = (i as u128 & ((1 << HIST_SUB) - 1)) + (1 << HIST_SUB);
    ((mant << shift) as f64 + ((mant + 1) << shift) as f64 - 1.0) / 2.0
}

impl Hist {
    fn new() -> Hist {
        Hist { n: 0, sum_ns: 0, max_ns: 0, count: vec![0; HIST_BUCKETS] }
    }

    fn add(&mut self, ns: u64) {
        self.count[hist_index(ns)] += 1;
        self.n += 1;
        self.sum_ns += ns;
        if ns > self.max_ns {
            self.max_ns = ns;
        }
    }

    /// The q-quantile (nearest rank) in µs; 0 for an empty histogram.
    fn quantile_us(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((q * self.n as f64 + 0.999999) as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.count.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let v = hist_value(i);
                return (if v > self.max_ns as f64 { self.max_ns as f64 } else { v }) / 1e3;
            }
        }
        self.max_ns as f64 / 1e3
    }
}

/// The client's report (rpc_result).
#[derive(Default)]
struct RpcResult {
    links: u64,
    outstanding: u64,
    size: u64,
    connect_s: f64,
    window_s: f64,
    requests: u64,
    client_cpu_s: f64,
    sent: u64,
    replies: u64,
    errors: u64,
    missing: u64,
    first_error: Option<&'static str>,
    rate: f64,
    /// More JSON members (", \"key\": value ..."), or empty.
    extra: String,
}

fn flush() {
    let _ = io::stdout().flush();
}

/// The phase line the runner samples the server's CPU at (rpc_phase).
fn phase(name: &str) {
    println!("{{\"phase\": \"{name}\", \"t_ns\": {}}}", now_ns());
    flush();
}

fn print_result(r: &RpcResult, h: &Hist, imp: &str) {
    let w = if r.window_s > 0.0 { r.window_s } else { 1e-9 };
    let per = if r.requests > 0 { r.client_cpu_s * 1e6 / r.requests as f64 } else { 0.0 };
    let mean = if h.n > 0 { h.sum_ns as f64 / h.n as f64 / 1e3 } else { 0.0 };
    println!(
        "{{\"rpc\": \"{imp}\", \"links\": {}, \"outstanding\": {}, \"size\": {}, \"connect_seconds\": {:.3}, \
         \"seconds\": {:.6}, \"requests\": {}, \"requests_per_s\": {:.1}, \"client_cpu_s\": {:.6}, \
         \"client_cpu_us_per_request\": {:.4}, \"mean_us\": {:.2}, \"p50_us\": {:.2}, \"p99_us\": {:.2}, \
         \"p999_us\": {:.2}, \"max_us\": {:.2}, \"sent\": {}, \"replies\": {}, \"errors\": {}, \"missing\": {}, \
         \"rate_per_s\": {:.0}, \"first_error\": \"{}\"{}}}",
        r.links,
        r.outstanding,
        r.size,
        r.connect_s,
        r.window_s,
        r.requests,
        r.requests as f64 / w,
        r.client_cpu_s,
        per,
        mean,
        h.quantile_us(0.5),
        h.quantile_us(0.99),
        h.quantile_us(0.999),
        h.max_ns as f64 / 1e3,
        r.sent,
        r.replies,
        r.errors,
        r.missing,
        r.rate,
        r.first_error.unwrap_or(""),
        r.extra
    );
    flush();
}

/// The fan-in client's one line (rpc_print_fanin).
fn print_fanin(r: &RpcResult, per_link: u64, imp: &str) {
    let w = if r.window_s > 0.0 { r.window_s } else { 1e-9 };
    println!(
        "{{\"fanin\": \"{imp}\", \"links\": {}, \"messages_per_link\": {per_link}, \"size\": {}, \
         \"connect_seconds\": {:.3}, \"seconds\": {:.6}, \"messages\": {}, \"messages_per_s\": {:.1}, \
         \"client_cpu_s\": {:.6}, \"client_cpu_us_per_message\": {:.4}, \"sent\": {}, \"replies\": {}, \
         \"errors\": {}, \"missing\": {}, \"first_error\": \"{}\"{}}}",
        r.links,
        r.size,
        r.connect_s,
        r.window_s,
        r.requests,
        r.requests as f64 / w,
        r.client_cpu_s,
        if r.requests > 0 { r.client_cpu_s * 1e6 / r.requests as f64 } else { 0.0 },
        r.sent,
        r.replies,
        r.errors,
        r.missing,
        r.first_error.unwrap_or(""),
        r.extra
    );
    flush();
}

/// A duration in seconds ("1", "0.5") in [0, 86400], as ns (rpc_parse_seconds).
fn parse_seconds(s: Option<&String>) -> Option<u64> {
    let v: f64 = s?.parse().ok()?;
    if (0.0..=86400.0).contains(&v) {
        Some((v * 1e9) as u64)
    } else {
        None
    }
}

/// A decimal count in [lo, hi] (rpc_parse_count).
fn parse_count(s: Option<&String>, lo: u64, hi: u64) -> Option<u64> {
    let s = s?;
    if !s.bytes().next().map_or(false, |c| c.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|v| (lo..=hi).contains(v))
}

// ---------------------------------------------------------------------------
// Framing: u32 BE length + body, split wherever the stream's segments end

#[derive(Default)]
struct Framer {
    /// A partly received frame (its length prefix included).
    acc: Vec<u8>,
}

impl Framer {
    /// Calls f for every whole frame's body in p (and in what earlier calls left over).
    /// Err(length) if a length is over max.
    fn feed(&mut self, mut p: &[u8], max: u32, mut f: impl FnMut(&[u8])) -> Result<(), u32> {
        while !p.is_empty() {
            if self.acc.is_empty() && p.len() >= 4 {
                let len = be32(p);
                if len > max {
                    return Err(len);
                }
                if p.len() - 4 >= len as usize {
                    f(&p[4..4 + len as usize]);
                    p = &p[4 + len as usize..];
                    continue;
                }
            }
            let have = self.acc.len();
            let need = if have < 4 { 4 - have } else { 4 + be32(&self.acc) as usize - have };
            let t = need.min(p.len());
            self.acc.extend_from_slice(&p[..t]);
            p = &p[t..];
            if self.acc.len() >= 4 {
                let len = be32(&self.acc);
                if len > max {
                    return Err(len);
                }
                if self.acc.len() == 4 + len as usize {
                    f(&self.acc[4..]);
                    self.acc.clear();
                    if self.acc.capacity() > 64 << 10 {
                        self.acc.shrink_to(4 << 10);
                    }
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Server: `quinn rpc-serve`

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    served: AtomicU64,
    links: AtomicU64,
    corrupted: AtomicU64,
    dropped: AtomicU64,
    oneway: AtomicU64,
    failed: AtomicU64,
}

struct Server {
    c: Counters,
    corrupt_every: u64,
    drop_every: u64,
}

pub struct ServeOpts {
    pub threads: u64,
    pub corrupt_every: u64,
    pub drop_every: u64,
}

pub fn cmd_rpc_serve(o: ServeOpts) -> Result<(), String> {
    let (crypto, fingerprint) = server_crypto(ALPN, false)?;
    let mut server = quinn::ServerConfig::with_crypto(crypto);
    server.transport_config(Arc::new(transport(IDLE_TIMEOUT_MS)));
    server.concurrent_connections(1_000_000);
    let socket = udp_socket_with(0, SOCKET_BUFFER, true)?;
    let rt = if o.threads == 1 {
        runtime()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(o.threads as usize)
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?
    };
    let sv = Arc::new(Server { c: Counters::default(), corrupt_every: o.corrupt_every, drop_every: o.drop_every });
    let s2 = sv.clone();
    rt.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
        let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
        let stop = Arc::new(Notify::new());
        let (st1, st2) = (stop.clone(), stop.clone());
        tokio::spawn(async move {
            term.recv().await;
            st1.notify_one();
        });
        tokio::spawn(async move {
            int.recv().await;
            st2.notify_one();
        });
        let endpoint = quinn::Endpoint::new(endpoint_config()?, Some(server), socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let port = endpoint.local_addr().map_err(|e| format!("local_addr: {e}"))?.port();
        {
            let mut out = io::stdout().lock();
            writeln!(
                out,
                "{{\"port\": {port}, \"service\": \"rpc\", \"threads\": {}, \"cert_sha256\": \"{fingerprint}\"}}",
                o.threads
            )
            .and_then(|_| out.flush())
            .map_err(|e| format!("writing the port line to stdout: {e}"))?;
        }
        tokio::spawn(async move {
            while let Some(connecting) = endpoint.accept().await {
                tokio::spawn(serve_conn(connecting, s2.clone()));
            }
        });
        stop.notified().await;
        Ok::<(), String>(())
    })?;
    let c = &sv.c;
    println!(
        "{{\"served\": {}, \"requests\": {}, \"links\": {}, \"corrupted\": {}, \"dropped\": {}, \"oneway\": {}, \
         \"failed\": {}}}",
        c.served.load(Relaxed),
        c.requests.load(Relaxed),
        c.links.load(Relaxed),
        c.corrupted.load(Relaxed),
        c.dropped.load(Relaxed),
        c.oneway.load(Relaxed),
        c.failed.load(Relaxed)
    );
    flush();
    // The connections and the runtime are left to the process's exit.
    std::process::exit(0)
}

/// What one connection counted since its counts were last added to the shared ones.
#[derive(Default)]
struct Local {
    requests: u64,
    served: u64,
    oneway: u64,
}

/// Request d: counted, and echoed into out (framed) unless it is one-way or dropped.
fn on_request(sv: &Server, local: &mut Local, out: &mut Vec<u8>, d: &[u8]) {
    let faults = sv.corrupt_every != 0 || sv.drop_every != 0;
    // With faults, every Nth request counts over the whole server (as tls-rpc's per thread).
    let nth = if faults { sv.c.requests.fetch_add(1, Relaxed) + 1 } else { 0 };
    local.requests += 1;
    if !server_echoes(d) {
        local.oneway += 1;
        return;
    }
    if sv.drop_every != 0 && nth % sv.drop_every == 0 {
        sv.c.dropped.fetch_add(1, Relaxed);
        return;
    }
    out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    out.extend_from_slice(d);
    if sv.corrupt_every != 0 && nth % sv.corrupt_every == 0 && !d.is_empty() {
        let last = out.len() - 1;
        out[last] ^= 0x5a;
        sv.c.corrupted.fetch_add(1, Relaxed);
    }
    local.served += 1;
}

fn add_local(sv: &Server, local: &mut Local) {
    if sv.corrupt_every == 0 && sv.drop_every == 0 {
        sv.c.requests.fetch_add(local.requests, Relaxed);
    }
    sv.c.served.fetch_add(local.served, Relaxed);
    if local.oneway > 0 {
        sv.c.oneway.fetch_add(local.oneway, Relaxed);
    }
    *local = Local::default();
}

async fn serve_conn(connecting: quinn::Connecting, sv: Arc<Server>) {
    let conn = match connecting.await {
        Ok(c) => c,
        Err(e) => {
            if sv.c.failed.fetch_add(1, Relaxed) < 3 {
                eprintln!("quinn rpc-serve: handshake failed: {e}");
            }
            return;
        }
    };
    sv.c.links.fetch_add(1, Relaxed);
    print_suite_once("rpc-serve", &conn);
    // The client closing the connection ends everything below: that is the normal end.
    let (mut send, mut recv) = match conn.accept_bi().await {
        Ok(s) => s,
        Err(_) => return,
    };
    let mut fr = Framer::default();
    let mut out: Vec<u8> = Vec::new();
    let mut local = Local::default();
    let mut bufs: [Bytes; READ_BATCH] = Default::default();
    loop {
        let n = match recv.read_chunks(&mut bufs).await {
            Ok(Some(n)) => n,
            Ok(None) => {
                let _ = send.finish().await;
                break;
            }
            Err(_) => break,
        };
        let mut bad = None;
        for b in &mut bufs[..n] {
            let chunk = std::mem::take(b);
            if bad.is_none() {
                if let Err(len) = fr.feed(&chunk, RPC_MAX_SIZE, |d| on_request(&sv, &mut local, &mut out, d)) {
                    bad = Some(len);
                }
            }
        }
        add_local(&sv, &mut local);
        if let Some(len) = bad {
            if sv.c.failed.fetch_add(1, Relaxed) < 3 {
                eprintln!("quinn rpc-serve: a request of {len} bytes is over the 1 MiB limit; closing that connection");
            }
            conn.close(quinn::VarInt::from_u32(BAD_FRAMING), b"request over 1 MiB");
            return;
        }
        if !out.is_empty() {
            if send.write_all(&out).await.is_err() {
                break;
            }
            out.clear();
            if out.capacity() > 1 << 20 {
                out.shrink_to(64 << 10);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Client: `quinn rpc-client`

pub struct ClientOpts {
    pub port: u16,
    pub pin: Option<[u8; 32]>,
    pub links: u64,
    pub outstanding: u64,
    pub size: u32,
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub drain_ns: u64,
    pub rate: u64,
    pub fanin: u64,
}

struct Link {
    /// Requests to send as soon as the writer runs.
    owed: Cell<u32>,
    next_seq: Cell<u64>,
    next_reply: Cell<u64>,
    lost: Cell<bool>,
    wake: Notify,
}

struct Client {
    p: u32,
    size: u32,
    rate: u64,
    pat: Vec<u8>,
    links: Vec<Link>,
    /// links x P send times: request seq of link i at [i * P + seq % P].
    sent_at: Vec<Cell<u64>>,
    measuring: Cell<bool>,
    stopping: Cell<bool>,
    closing: Cell<bool>,
    hist: RefCell<Hist>,
    sent: Cell<u64>,
    replies: Cell<u64>,
    requests: Cell<u64>,
    errors: Cell<u64>,
    first_error: Cell<Option<&'static str>>,
    lost_links: Cell<u64>,
    /// --rate: due requests that found every link full.
    rate_skipped: Cell<u64>,
    /// Fan-in: when the last link's final echo arrived.
    last_echo_ns: Cell<u64>,
    done: Notify,
}

impl Client {
    fn fail(&self, why: &'static str) {
        if self.first_error.get().is_none() {
            self.first_error.set(Some(why));
        }
        let e = self.errors.get();
        self.errors.set(e + 1);
        if e < 5 {
            eprintln!("quinn rpc-client: {why}");
        }
    }

    /// Link i is gone (a connection or stream error): an error unless the client is closing.
    fn lose(&self, i: usize, why: &'static str, detail: &dyn std::fmt::Display) {
        let l = &self.links[i];
        if l.lost.replace(true) {
            return;
        }
        self.lost_links.set(self.lost_links.get() + 1);
        if !self.closing.get() {
            if self.errors.get() < 5 {
                eprintln!("quinn rpc-client: link {i}: {detail}");
            }
            self.fail(why);
        }
        l.wake.notify_one();
        self.done.notify_one();
    }

    fn on_reply(&self, i: usize, d: &[u8]) {
        let l = &self.links[i];
        let now = now_ns();
        let seq = l.next_reply.get();
        if let Some(bad) = check(d, &self.pat, self.size, i as u32, seq) {
            self.fail(bad);
        }
        if self.measuring.get() {
            let at = self.sent_at[i * self.p as usize + (seq % self.p as u64) as usize].get();
            self.hist.borrow_mut().add(now.saturating_sub(at));
            self.requests.set(self.requests.get() + 1);
        }
        l.next_reply.set(seq + 1);
        self.replies.set(self.replies.get() + 1);
        if self.stopping.get() {
            if self.replies.get() >= self.sent.get() {
                self.done.notify_one();
            }
        } else if self.rate == 0 {
            l.owed.set(l.owed.get() + 1);
        }
    }
}

async fn writer(k: Rc<Client>, i: usize, mut send: quinn::SendStream) {
    let l = &k.links[i];
    let (p, size) = (k.p as u64, k.size);
    loop {
        while l.owed.get() == 0 {
            if k.closing.get() || l.lost.get() {
                return;
            }
            l.wake.notified().await;
        }
        if k.stopping.get() || l.lost.get() {
            l.owed.set(0);
            continue;
        }
        let n = l.owed.replace(0) as u64;
        let mut buf = Vec::with_capacity(n as usize * (4 + size as usize));
        let seq0 = l.next_seq.get();
        for seq in seq0..seq0 + n {
            put_request(&mut buf, &k.pat, size, i as u32, seq);
        }
        let now = now_ns();
        for seq in seq0..seq0 + n {
            k.sent_at[i * p as usize + (seq % p) as usize].set(now);
        }
        l.next_seq.set(seq0 + n);
        k.sent.set(k.sent.get() + n);
        if let Err(e) = send.write_chunk(Bytes::from(buf)).await {
            k.lose(i, "a connection was lost before the end of the run", &format!("sending: {e}"));
            return;
        }
    }
}

async fn reader(k: Rc<Client>, i: usize, mut recv: quinn::RecvStream) {
    let mut fr = Framer::default();
    let mut bufs: [Bytes; READ_BATCH] = Default::default();
    loop {
        match recv.read_chunks(&mut bufs).await {
            Ok(Some(n)) => {
                for b in &mut bufs[..n] {
                    let chunk = std::mem::take(b);
                    if let Err(len) = fr.feed(&chunk, k.size, |d| k.on_reply(i, d)) {
                        k.lose(
                            i,
                            "bad reply framing (a length other than the request size)",
                            &format!("a reply length of {len} bytes"),
                        );
                        return;
                    }
                }
                if k.links[i].owed.get() > 0 {
                    k.links[i].wake.notify_one();
                }
            }
            Ok(None) => {
                k.lose(i, "the server ended a stream", &"the server finished its side of the stream");
                return;
            }
            Err(e) => {
                k.lose(i, "a connection was lost before the end of the run", &format!("reading: {e}"));
                return;
            }
        }
    }
}

/// The pacing tick for --rate: 1/R, between 20 µs and 1 ms (rpc_bench.c's pace_tick_ns). One
/// request per tick is what a service's independent callers look like; a millisecond's worth
/// at once would batch them into one packet on a single link.
fn pace_tick_ns(rate: u64) -> u64 {
    (1_000_000_000 / rate).clamp(20_000, 1_000_000)
}

/// --rate: at every pacing tick, issues the requests due by then (R x time since traffic
/// start), each on the next link in turn with fewer than P in flight; a due request that finds
/// every link full is skipped and counted (rate_skipped). tokio's timers have 1 ms
/// granularity, so the tick comes from a thread of its own sleeping 1/R and waking this task.
async fn ticker(k: Rc<Client>, t0: u64) {
    let tick = Arc::new(Notify::new());
    let stop = Arc::new(AtomicBool::new(false));
    let (tick2, stop2, period) = (tick.clone(), stop.clone(), Duration::from_nanos(pace_tick_ns(k.rate)));
    let pacer = std::thread::Builder::new().name("pacer".into()).spawn(move || {
        while !stop2.load(Relaxed) {
            std::thread::sleep(period);
            tick2.notify_one();
        }
    });
    if let Err(e) = pacer {
        eprintln!("quinn rpc-client: cannot start the pacing thread: {e}");
        k.fail("cannot pace --rate");
        return;
    }
    let (mut issued, mut cursor) = (0u64, 0usize);
    let n = k.links.len();
    loop {
        if k.stopping.get() || k.closing.get() {
            stop.store(true, Relaxed);
            return;
        }
        let due = ((now_ns() - t0) as f64 * k.rate as f64 / 1e9) as u64;
        while issued < due {
            issued += 1;
            let mut tries = 0;
            while tries < n {
                let l = &k.links[cursor];
                cursor = if cursor + 1 == n { 0 } else { cursor + 1 };
                tries += 1;
                if !l.lost.get() && l.next_seq.get() - l.next_reply.get() + (l.owed.get() as u64) < k.p as u64 {
                    l.owed.set(l.owed.get() + 1);
                    if l.owed.get() == 1 {
                        l.wake.notify_one();
                    }
                    break;
                }
                if tries == n {
                    k.rate_skipped.set(k.rate_skipped.get() + 1);
                }
            }
        }
        tick.notified().await;
    }
}

/// Waits until `done` says so or the deadline (CLOCK_MONOTONIC ns) passes.
async fn wait_until(k: &Client, deadline: u64, done: impl Fn(&Client) -> bool) {
    while !done(k) {
        let now = now_ns();
        if now >= deadline {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_nanos(deadline - now), k.done.notified()).await;
    }
}

/// Opens L connections, at most MAX_HANDSHAKES under way. Returns them in link order (the
/// ones that opened) and the first error.
async fn connect_all(
    endpoint: &quinn::Endpoint,
    client: &quinn::ClientConfig,
    addr: SocketAddr,
    l: u64,
) -> (Vec<Option<quinn::Connection>>, Option<String>) {
    let mut conns: Vec<Option<quinn::Connection>> = (0..l).map(|_| None).collect();
    let mut set = tokio::task::JoinSet::new();
    let (mut started, mut first_err) = (0u64, None);
    let limit = now_ns() + 120_000_000_000;
    loop {
        while first_err.is_none() && started < l && set.len() < MAX_HANDSHAKES {
            let i = started;
            started += 1;
            match endpoint.connect_with(client.clone(), addr, SERVER_NAME) {
                Ok(connecting) => {
                    set.spawn(async move { (i, connecting.await.map_err(|e| e.to_string())) });
                }
                Err(e) => first_err = Some(format!("connect_with at connection {i}: {e}")),
            }
        }
        if set.is_empty() {
            break;
        }
        let left = Duration::from_nanos(limit.saturating_sub(now_ns()));
        match tokio::time::timeout(left, set.join_next()).await {
            Ok(Some(Ok((i, Ok(c))))) => {
                print_suite_once("rpc-client", &c);
                conns[i as usize] = Some(c);
            }
            Ok(Some(Ok((i, Err(e))))) => {
                first_err.get_or_insert(format!("connection {i}: handshake failed: {e}"));
            }
            Ok(Some(Err(e))) => {
                first_err.get_or_insert(format!("handshake task: {e}"));
            }
            Ok(None) => break,
            Err(_) => {
                first_err.get_or_insert("the 120 s limit for opening the connections passed".into());
                break;
            }
        }
    }
    (conns, first_err)
}

pub fn cmd_rpc_client(o: ClientOpts) -> Result<bool, String> {
    let mut t = transport(IDLE_TIMEOUT_MS);
    if o.fanin > 0 {
        t.send_window(FANIN_SEND_WINDOW);
    }
    let mut client = quinn::ClientConfig::new(client_crypto(o.pin, ALPN)?);
    client.transport_config(Arc::new(t));
    let socket = udp_socket_with(0, SOCKET_BUFFER, true)?;
    let rt = runtime()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let endpoint = quinn::Endpoint::new(endpoint_config()?, None, socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, o.port));
        let p = if o.fanin > 0 { 1 } else { o.outstanding as u32 };
        let k = Rc::new(Client {
            p,
            size: o.size,
            rate: o.rate,
            pat: pattern_new(o.size),
            links: (0..o.links)
                .map(|_| Link {
                    owed: Cell::new(0),
                    next_seq: Cell::new(0),
                    next_reply: Cell::new(0),
                    lost: Cell::new(false),
                    wake: Notify::new(),
                })
                .collect(),
            sent_at: (0..o.links * p as u64).map(|_| Cell::new(0)).collect(),
            measuring: Cell::new(false),
            stopping: Cell::new(false),
            closing: Cell::new(false),
            hist: RefCell::new(Hist::new()),
            sent: Cell::new(0),
            replies: Cell::new(0),
            requests: Cell::new(0),
            errors: Cell::new(0),
            first_error: Cell::new(None),
            lost_links: Cell::new(0),
            rate_skipped: Cell::new(0),
            last_echo_ns: Cell::new(0),
            done: Notify::new(),
        });
        let mut r = RpcResult {
            links: o.links,
            outstanding: if o.fanin > 0 { 0 } else { o.outstanding },
            size: o.size as u64,
            rate: o.rate as f64,
            ..Default::default()
        };

        let t0 = now_ns();
        let (conns, first_err) = connect_all(&endpoint, &client, addr, o.links).await;
        // Every link's stream (opening one sends nothing: the first request does).
        let mut streams = Vec::with_capacity(o.links as usize);
        let mut open_err = first_err;
        for c in conns.iter().flatten() {
            match c.open_bi().await {
                Ok(s) => streams.push(s),
                Err(e) => {
                    open_err.get_or_insert(format!("opening a stream: {e}"));
                    break;
                }
            }
        }
        r.connect_s = (now_ns() - t0) as f64 / 1e9;
        let established = streams.len() as u64;
        if established < o.links {
            eprintln!(
                "quinn rpc-client: only {established} of {} connections opened in {:.1} s: {}",
                o.links,
                r.connect_s,
                open_err.as_deref().unwrap_or("?")
            );
            k.fail("not every connection opened");
        }
        println!("{{\"phase\": \"connected\", \"links\": {established}, \"seconds\": {:.3}}}", r.connect_s);
        flush();

        if established == o.links && o.fanin > 0 {
            fanin(&k, &o, streams, &mut r).await;
        } else if established == o.links {
            for (i, (send, recv)) in streams.into_iter().enumerate() {
                tokio::task::spawn_local(writer(k.clone(), i, send));
                tokio::task::spawn_local(reader(k.clone(), i, recv));
            }
            let sleep = |ns: u64| tokio::time::sleep(Duration::from_nanos(ns));
            if o.rate > 0 {
                // No ramp: the rate is the ramp.
                tokio::task::spawn_local(ticker(k.clone(), now_ns()));
                sleep(o.warmup_ns).await;
            } else {
                // Traffic starts on the links in 20 steps over the first half of the warm-up,
                // as in rpc_bench.c: all L x P requests at once would be one burst.
                let (l, steps) = (o.links, o.links.min(20));
                for s in 0..steps {
                    for i in s * l / steps..(s + 1) * l / steps {
                        let li = &k.links[i as usize];
                        if !li.lost.get() {
                            li.owed.set(li.owed.get() + p);
                            li.wake.notify_one();
                        }
                    }
                    sleep(o.warmup_ns / 2 / steps).await;
                }
                sleep(o.warmup_ns - o.warmup_ns / 2).await;
            }
            phase("measure_start");
            let cpu0 = cpu_s();
            let w0 = now_ns();
            k.measuring.set(true);
            sleep(o.duration_ns).await;
            k.measuring.set(false);
            r.window_s = (now_ns() - w0) as f64 / 1e9;
            r.client_cpu_s = cpu_s() - cpu0;
            phase("measure_end");
            k.stopping.set(true);
            wait_until(&k, now_ns() + o.drain_ns, |k| k.replies.get() >= k.sent.get() || k.lost_links.get() > 0)
                .await;
            r.requests = k.requests.get();
            r.sent = k.sent.get();
            r.replies = k.replies.get();
            r.missing = r.sent - r.replies;
            if r.missing > 0 {
                k.fail("replies missing at the end of the run");
            }
        }

        // Loss recovery's share over the whole run (handshakes included), from quinn's
        // per-connection stats: packets sent and declared lost, and PINGs sent (mostly the
        // probes of a probe timeout, PTO).
        let (mut sent_pk, mut lost_pk, mut pings) = (0u64, 0u64, 0u64);
        for c in conns.iter().flatten() {
            let st = c.stats();
            sent_pk += st.path.sent_packets;
            lost_pk += st.path.lost_packets;
            pings += st.frame_tx.ping;
        }
        r.extra = format!(
            ", \"rate_skipped\": {}, \"packets_sent\": {sent_pk}, \"packets_lost\": {lost_pk}, \"pings_sent\": {pings}",
            k.rate_skipped.get()
        );
        // Close every connection so the server sees clean ends, then report.
        k.closing.set(true);
        for c in conns.iter().flatten() {
            c.close(quinn::VarInt::from_u32(0), b"done");
        }
        for l in &k.links {
            l.wake.notify_one();
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
        r.errors = k.errors.get();
        r.first_error = k.first_error.get();
        let ok = r.errors == 0 && r.missing == 0 && established == o.links;
        if o.fanin > 0 {
            print_fanin(&r, o.fanin, "quinn");
        } else {
            print_result(&r, &k.hist.borrow(), "quinn");
        }
        Ok(ok)
    })
}

// ---------------------------------------------------------------------------
// The fan-in drain: N one-way requests per link, the last one echoed

async fn fanin_link(k: Rc<Client>, i: usize, n: u64, mut send: quinn::SendStream, mut recv: quinn::RecvStream) {
    let (size, frame) = (k.size, 4 + k.size as usize);
    let per_chunk = (FANIN_CHUNK / frame).max(1) as u64;
    let last = (n - 1) | RPC_ONEWAY | RPC_LAST;
    let mut j = 0u64;
    while j < n {
        let m = per_chunk.min(n - j);
        let mut buf = Vec::with_capacity(m as usize * frame);
        for s in j..j + m {
            let seq = if s == n - 1 { last } else { s | RPC_ONEWAY };
            put_request(&mut buf, &k.pat, size, i as u32, seq);
        }
        if let Err(e) = send.write_chunk(Bytes::from(buf)).await {
            k.lose(i, "a connection was lost before the end of the run", &format!("sending: {e}"));
            return;
        }
        k.sent.set(k.sent.get() + m);
        j += m;
    }
    let mut hdr = [0u8; 4];
    if let Err(e) = recv.read_exact(&mut hdr).await {
        k.lose(i, "a connection was lost before the end of the run", &format!("reading the echo: {e}"));
        return;
    }
    let len = u32::from_be_bytes(hdr);
    if len > RPC_MAX_SIZE {
        k.lose(i, "bad reply framing (a length other than the request size)", &format!("an echo of {len} bytes"));
        return;
    }
    let mut body = vec![0u8; len as usize];
    if let Err(e) = recv.read_exact(&mut body).await {
        k.lose(i, "a connection was lost before the end of the run", &format!("reading the echo: {e}"));
        return;
    }
    let now = now_ns();
    if let Some(bad) = check(&body, &k.pat, size, i as u32, last) {
        k.fail(bad);
    }
    k.replies.set(k.replies.get() + 1);
    k.last_echo_ns.set(now);
    k.done.notify_one();
    // Only the last request comes back: anything more on the stream is an error.
    if let Ok(Some(_)) = recv.read_chunk(usize::MAX, true).await {
        if !k.closing.get() {
            k.fail("a second echo on a fan-in connection");
        }
    }
}

async fn fanin(
    k: &Rc<Client>,
    o: &ClientOpts,
    streams: Vec<(quinn::SendStream, quinn::RecvStream)>,
    r: &mut RpcResult,
) {
    phase("measure_start");
    let cpu0 = cpu_s();
    let w0 = now_ns();
    for (i, (send, recv)) in streams.into_iter().enumerate() {
        tokio::task::spawn_local(fanin_link(k.clone(), i, o.fanin, send, recv));
    }
    let links = o.links;
    wait_until(k, w0 + o.drain_ns, |k| k.replies.get() + k.lost_links.get() >= links).await;
    let end = if k.replies.get() == links { k.last_echo_ns.get() } else { now_ns() };
    r.window_s = (end - w0) as f64 / 1e9;
    r.client_cpu_s = cpu_s() - cpu0;
    phase("measure_end");
    r.requests = k.sent.get();
    r.sent = k.sent.get();
    r.replies = k.replies.get();
    r.missing = links - r.replies;
    if r.missing > 0 {
        k.fail("replies missing at the end of the run");
    }
}

// ---------------------------------------------------------------------------
// Arguments

const USAGE: &str = concat!(
    "  quinn rpc-serve [--threads N] [--corrupt-every N] [--drop-every N]\n",
    "  quinn rpc-client PORT [--cert-sha256 HEX] --links L --outstanding P --size S --duration SEC\n",
    "                   [--warmup SEC] [--drain-timeout SEC] [--rate R] [--fanin N]\n",
    "  (--fanin N: no --outstanding or --duration; L 1..1000000, P 1..1024, S 12..1048576 bytes)\n",
);

fn usage(cmd: &str, what: &str) -> (u8, String) {
    (2, format!("quinn {cmd}: {what}\nusage:\n{}", USAGE.trim_end()))
}

pub fn parse_serve(args: &[String]) -> Result<ServeOpts, (u8, String)> {
    let mut o = ServeOpts { threads: 1, corrupt_every: 0, drop_every: 0 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let bad = || usage("rpc-serve", &format!("bad or missing value for {a}"));
        match a.as_str() {
            "--threads" => o.threads = parse_count(it.next(), 1, MAX_THREADS).ok_or_else(bad)?,
            "--corrupt-every" => o.corrupt_every = parse_count(it.next(), 1, u64::MAX).ok_or_else(bad)?,
            "--drop-every" => o.drop_every = parse_count(it.next(), 1, u64::MAX).ok_or_else(bad)?,
            _ => return Err(usage("rpc-serve", &format!("unknown argument '{a}'"))),
        }
    }
    Ok(o)
}

pub fn parse_client(args: &[String]) -> Result<ClientOpts, (u8, String)> {
    let mut o = ClientOpts {
        port: 0,
        pin: None,
        links: 0,
        outstanding: 0,
        size: 0,
        duration_ns: 0,
        warmup_ns: 500_000_000,
        drain_ns: 10_000_000_000,
        rate: 0,
        fanin: 0,
    };
    let mut have_duration = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let bad = || usage("rpc-client", &format!("bad or missing value for {a}"));
        match a.as_str() {
            "--cert-sha256" => {
                let v = it.next().ok_or_else(bad)?;
                o.pin = Some(parse_pin(v).map_err(|e| usage("rpc-client", &e))?);
            }
            "--links" => o.links = parse_count(it.next(), 1, 1_000_000).ok_or_else(bad)?,
            "--outstanding" => o.outstanding = parse_count(it.next(), 1, RPC_MAX_OUTSTANDING).ok_or_else(bad)?,
            "--size" => o.size = parse_count(it.next(), RPC_HDR as u64, RPC_MAX_SIZE as u64).ok_or_else(bad)? as u32,
            "--duration" => {
                o.duration_ns = parse_seconds(it.next()).ok_or_else(bad)?;
                have_duration = true;
            }
            "--warmup" => o.warmup_ns = parse_seconds(it.next()).ok_or_else(bad)?,
            "--drain-timeout" => o.drain_ns = parse_seconds(it.next()).ok_or_else(bad)?,
            "--rate" => o.rate = parse_count(it.next(), 0, 1_000_000_000).ok_or_else(bad)?,
            "--fanin" => o.fanin = parse_count(it.next(), 1, 1 << 40).ok_or_else(bad)?,
            _ if !a.starts_with('-') && o.port == 0 => {
                o.port = parse_count(Some(a), 1, 65535).ok_or_else(|| usage("rpc-client", &format!("bad PORT '{a}'")))?
                    as u16
            }
            _ => return Err(usage("rpc-client", &format!("unknown argument '{a}'"))),
        }
    }
    if o.port == 0 || o.links == 0 || o.size == 0 {
        return Err(usage("rpc-client", "PORT, --links and --size are required"));
    }
    if o.fanin == 0 && (o.outstanding == 0 || !have_duration) {
        return Err(usage("rpc-client", "--outstanding and --duration are required (except with --fanin)"));
    }
    if o.fanin > 0 && o.rate > 0 {
        return Err(usage("rpc-client", "--rate and --fanin do not go together"));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_check() {
        let pat = pattern_new(100);
        let mut b = vec![0u8; 100];
        request(&mut b, &pat, 7, 1000);
        assert_eq!(be64(&b), 1000);
        assert_eq!(be32(&b[8..]), 7);
        for j in RPC_HDR..100 {
            assert_eq!(b[j] as u64, (j as u64 + 1000 + 7) % 251);
        }
        assert_eq!(check(&b, &pat, 100, 7, 1000), None);
        assert_eq!(check(&b[..99], &pat, 100, 7, 1000), Some("wrong length"));
        assert!(check(&b, &pat, 100, 7, 1001).unwrap().starts_with("wrong sequence"));
        assert_eq!(check(&b, &pat, 100, 8, 1000), Some("another link's reply"));
        b[99] ^= 0x5a;
        assert_eq!(check(&b, &pat, 100, 7, 1000), Some("body differs from the request"));
        let seq = 5 | RPC_ONEWAY | RPC_LAST;
        request(&mut b, &pat, 3, seq);
        assert!(server_echoes(&b));
        assert_eq!(check(&b, &pat, 100, 3, seq), None);
        request(&mut b, &pat, 3, 5 | RPC_ONEWAY);
        assert!(!server_echoes(&b));
    }

    #[test]
    fn histogram() {
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1000, 123_456_789, u64::MAX >> 2] {
            let i = hist_index(v);
            assert!(i < HIST_BUCKETS);
            let mid = hist_value(i);
            assert!((mid - v as f64).abs() <= v as f64 / 64.0 + 0.5, "v {v} bucket {i} middle {mid}");
        }
        assert_eq!(hist_index(64), 64);
        assert_eq!(hist_index(128), 128);
        assert_eq!(hist_value(64), 64.0);
        assert_eq!(hist_value(128), 128.5);
        let mut h = Hist::new();
        for v in 1..=1000u64 {
            h.add(v * 1000);
        }
        assert_eq!(h.quantile_us(1.0), 1000.0);
        let p50 = h.quantile_us(0.5);
        assert!((p50 - 500.0).abs() < 8.0, "{p50}");
        assert_eq!(Hist::new().quantile_us(0.5), 0.0);
    }

    #[test]
    fn framer_any_split() {
        let pat = pattern_new(61);
        let mut stream = Vec::new();
        for s in 0..50 {
            put_request(&mut stream, &pat, 61, 2, s);
        }
        for split in [1usize, 3, 4, 5, 64, 65, 66, 1000, 10_000] {
            let mut fr = Framer::default();
            let mut seq = 0u64;
            for c in stream.chunks(split) {
                fr.feed(c, 61, |d| {
                    assert_eq!(check(d, &pat, 61, 2, seq), None);
                    seq += 1;
                })
                .unwrap();
            }
            assert_eq!(seq, 50);
            assert!(fr.acc.is_empty());
        }
        let mut fr = Framer::default();
        assert_eq!(fr.feed(&62u32.to_be_bytes(), 61, |_| {}), Err(62));
    }
}
