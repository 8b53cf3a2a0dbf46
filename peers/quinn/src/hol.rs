//! The head-of-line benchmark (bench/run.py hol, issue #23): quinn's row, the same contract as
//! tools/hol_bench.c (Pure's) and the ngtcp2 and TCP+TLS peers' `hol` modes.
//!
//!   quinn hol-serve
//!       prints {"port": N, "service": "hol", "cert_sha256": "<hex>"}; on every bidirectional
//!       stream of every connection, reads frames (u32 BE length + body): a body of at most 64
//!       bytes is echoed on the stream it came on (a query, below, is answered instead), a
//!       longer one is bulk and only counted. Until SIGTERM/SIGINT.
//!   quinn hol-client PORT [--cert-sha256 HEX] --mode alone|same|separate [--duration S]
//!                    [--warmup S] [--rate N] [--size N] [--bulk N] [--send-window BYTES]
//!       requests of --size bytes (default 61; the first 8 are the time it was due, CLOCK_MONOTONIC
//!       ns, BE) at --rate per second (default 1000) for --warmup (1) then --duration (10) s;
//!       bulk frames of --bulk bytes (default 1 MiB) back to back. Modes:
//!         alone     requests on one stream, no bulk;
//!         same      bulk frames and requests on one stream (a request waits for the bulk frame
//!                   being written to be wholly in quinn's send buffer);
//!         separate  bulk on one stream, requests on another (each stream its own writer task).
//!       A request that cannot be written yet (stream or connection flow control, quinn's send
//!       window, or in `same` the bulk frame being written) waits in the application and is
//!       timed from when it was due. In `separate` the request stream has the higher priority
//!       (quinn puts its data into packets first). --send-window: quinn's send window, bytes not
//!       yet acknowledged (sent or not) on all streams together, beyond which a write waits
//!       (default 8 MiB, Pure's send_backlog). Prints
//!       {"mode", "requests", "answered", "p50_us", "p99_us", "p999_us", "max_us", "bulk_mbps",
//!        "seconds", "bulk_bytes", "packets_lost", "packets_sent", "rtt_us", "cwnd"}.
//!
//! Goodput is what the server received: after the window the client sends a query (a 24-byte
//! frame: 8 bytes of 0xff, the window's start and end in CLOCK_MONOTONIC ns, BE; on a stream of
//! its own, as quinn may hold seconds of bulk ahead of it on the request stream) and the server
//! answers with the bulk body bytes it read between those instants (it logs its running count at
//! most once a millisecond; both processes read the same clock). Bulk goes on until the window's
//! requests are answered, then stops; the query follows.

use std::cell::{Cell, RefCell};
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use super::{client_crypto, endpoint_config, parse_pin, print_suite_once, runtime, server_crypto, transport, udp_socket, SERVER_NAME};

const ALPN: &[u8] = b"pure-hol";
/// A frame body of at most this many bytes is a request (echoed); longer ones are bulk.
pub const SMALL_MAX: usize = 64;
/// Largest frame body the server takes (the bulk's --bulk limit, as hol_bench.c's).
pub const MAX_FRAME: u32 = 16 << 20;
/// First 8 bytes of a query and of its answer (no request is due at this time).
const QUERY_MAGIC: u64 = u64::MAX;
const QUERY_LEN: usize = 24;
/// Long enough for a 5%-loss run's worst stall.
const IDLE_TIMEOUT_MS: u32 = 30_000;
/// Bytes of unacknowledged data quinn takes before a write waits (Pure's send_backlog default).
const SEND_WINDOW: u64 = 8 << 20;
/// Answers still missing after the window are waited for this long (hol_bench.c's 10 s).
const DRAIN_NS: u64 = 10_000_000_000;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clk: i32, ts: *mut Timespec) -> i32;
}

/// CLOCK_MONOTONIC in ns: the clock hol_bench.c (pure_now) and the server use too.
pub fn now_ns() -> u64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime fills a struct timespec (two longs on 64-bit Linux); 1 is CLOCK_MONOTONIC.
    unsafe { clock_gettime(1, &mut ts) };
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

fn be64(p: &[u8]) -> u64 {
    u64::from_be_bytes(p[..8].try_into().expect("8 bytes"))
}

// ---------------------------------------------------------------------------
// Framing (both sides)

/// Splits a stream into frames: small bodies (at most SMALL_MAX bytes) are handed over whole,
/// bulk bodies are only counted, byte by byte as they arrive.
#[derive(Default)]
pub struct Framer {
    hdr: [u8; 4],
    hdr_have: usize,
    body_left: u64,
    small: Vec<u8>,
    in_small: bool,
}

impl Framer {
    /// Feeds stream bytes; `small` gets each small body, `bulk` each run of bulk body bytes.
    /// Err(len) for a frame longer than MAX_FRAME.
    pub fn feed(&mut self, mut p: &[u8], mut small: impl FnMut(&[u8]), mut bulk: impl FnMut(u64)) -> Result<(), u32> {
        while !p.is_empty() {
            if self.body_left > 0 {
                let t = (self.body_left.min(p.len() as u64)) as usize;
                if self.in_small {
                    self.small.extend_from_slice(&p[..t]);
                } else {
                    bulk(t as u64);
                }
                self.body_left -= t as u64;
                p = &p[t..];
                if self.body_left == 0 && self.in_small {
                    small(&self.small);
                    self.small.clear();
                }
                continue;
            }
            let t = (4 - self.hdr_have).min(p.len());
            self.hdr[self.hdr_have..self.hdr_have + t].copy_from_slice(&p[..t]);
            self.hdr_have += t;
            p = &p[t..];
            if self.hdr_have < 4 {
                break;
            }
            self.hdr_have = 0;
            let len = u32::from_be_bytes(self.hdr);
            if len > MAX_FRAME {
                return Err(len);
            }
            self.in_small = len as usize <= SMALL_MAX;
            self.body_left = len as u64;
            if len == 0 {
                small(&[]);
            }
        }
        Ok(())
    }
}

/// The server's running count of bulk bytes with a log of it, at most one entry per ms, to
/// answer "how many between t1 and t2" after the fact.
#[derive(Default)]
pub struct BulkLog {
    total: u64,
    log: Vec<(u64, u64)>, // (time ns, total at that time)
}

impl BulkLog {
    pub fn add(&mut self, n: u64, now: u64) {
        self.total += n;
        match self.log.last_mut() {
            Some(last) if now < last.0 + 1_000_000 => last.1 = self.total,
            _ => self.log.push((now, self.total)),
        }
    }

    /// The count at time t: that of the last entry at or before t (0 before the first).
    pub fn at(&self, t: u64) -> u64 {
        let i = self.log.partition_point(|e| e.0 <= t);
        if i == 0 {
            0
        } else {
            self.log[i - 1].1
        }
    }
}

fn query_frame(a: u64, b: u64) -> Vec<u8> {
    let mut f = Vec::with_capacity(4 + QUERY_LEN);
    f.extend_from_slice(&(QUERY_LEN as u32).to_be_bytes());
    f.extend_from_slice(&QUERY_MAGIC.to_be_bytes());
    f.extend_from_slice(&a.to_be_bytes());
    f.extend_from_slice(&b.to_be_bytes());
    f
}

// ---------------------------------------------------------------------------
// Server

async fn serve_stream(
    log: Rc<RefCell<BulkLog>>,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
) -> Result<(), String> {
    let mut fr = Framer::default();
    let mut bufs: Vec<Bytes> = vec![Bytes::new(); 32];
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    loop {
        let k = match recv.read_chunks(&mut bufs).await {
            Ok(Some(k)) => k,
            Ok(None) => return Ok(()),
            Err(quinn::ReadError::ConnectionLost(_)) => return Ok(()),
            Err(e) => return Err(format!("reading a stream: {e}")),
        };
        let now = now_ns();
        let mut bulk = 0u64;
        for b in &mut bufs[..k] {
            let r = fr.feed(
                b,
                |body| {
                    if body.len() == QUERY_LEN && be64(body) == QUERY_MAGIC {
                        let l = log.borrow();
                        let (a, z) = (be64(&body[8..]), be64(&body[16..]));
                        out.extend_from_slice(&query_frame(l.at(z) - l.at(a).min(l.at(z)), l.total));
                    } else {
                        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
                        out.extend_from_slice(body);
                    }
                },
                |n| bulk += n,
            );
            *b = Bytes::new();
            if let Err(len) = r {
                return Err(format!("a frame of {len} bytes, over the {MAX_FRAME}-byte limit"));
            }
        }
        if bulk > 0 {
            log.borrow_mut().add(bulk, now);
        }
        if !out.is_empty() {
            match send.write_all(&out).await {
                Ok(()) => {}
                Err(quinn::WriteError::ConnectionLost(_)) => return Ok(()),
                Err(e) => return Err(format!("sending an echo: {e}")),
            }
            out.clear();
        }
    }
}

async fn serve_conn(connecting: quinn::Connecting) -> Result<(), String> {
    let conn = connecting.await.map_err(|e| format!("handshake failed: {e}"))?;
    print_suite_once("hol-serve", &conn);
    let log = Rc::new(RefCell::new(BulkLog::default()));
    loop {
        match conn.accept_bi().await {
            Ok((send, recv)) => {
                let l = log.clone();
                tokio::task::spawn_local(async move {
                    if let Err(e) = serve_stream(l, send, recv).await {
                        eprintln!("quinn hol-serve: {e}");
                    }
                });
            }
            Err(_) => break, // closed by the client (or lost): nothing to report
        }
    }
    eprintln!("quinn hol-serve: connection done, {} bulk bytes", log.borrow().total);
    Ok(())
}

fn hol_transport(send_window: u64) -> quinn::TransportConfig {
    let mut t = transport(IDLE_TIMEOUT_MS);
    t.send_window(send_window).max_concurrent_bidi_streams(quinn::VarInt::from_u32(16));
    t
}

pub fn cmd_hol_serve() -> Result<(), String> {
    let (crypto, fingerprint) = server_crypto(ALPN, false)?;
    let mut server = quinn::ServerConfig::with_crypto(crypto);
    server.transport_config(Arc::new(hol_transport(SEND_WINDOW)));
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
        let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
        let endpoint = quinn::Endpoint::new(endpoint_config()?, Some(server), socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let port = endpoint.local_addr().map_err(|e| format!("local_addr: {e}"))?.port();
        {
            let mut out = io::stdout().lock();
            writeln!(out, "{{\"port\": {port}, \"service\": \"hol\", \"cert_sha256\": \"{fingerprint}\"}}")
                .and_then(|_| out.flush())
                .map_err(|e| format!("writing the port line to stdout: {e}"))?;
        }
        let ep = endpoint.clone();
        tokio::task::spawn_local(async move {
            while let Some(connecting) = ep.accept().await {
                tokio::task::spawn_local(async move {
                    if let Err(e) = serve_conn(connecting).await {
                        eprintln!("quinn hol-serve: {e}");
                    }
                });
            }
        });
        // (tokio's `macros` feature, for select!, is not among Debian's enabled ones.)
        let stop = Rc::new(Notify::new());
        let (s1, s2) = (stop.clone(), stop.clone());
        tokio::task::spawn_local(async move {
            term.recv().await;
            s1.notify_one();
        });
        tokio::task::spawn_local(async move {
            int.recv().await;
            s2.notify_one();
        });
        stop.notified().await;
        Ok::<(), String>(())
    })
}

// ---------------------------------------------------------------------------
// Client

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Mode {
    Alone,
    Same,
    Separate,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Alone => "alone",
            Mode::Same => "same",
            Mode::Separate => "separate",
        }
    }
}

#[derive(Debug)]
pub struct ClientOpts {
    pub port: u16,
    pub pin: Option<[u8; 32]>,
    pub mode: Mode,
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub rate: u64,
    pub size: usize,
    pub bulk: usize,
    /// quinn's send window (unacknowledged plus not yet sent bytes, all streams).
    pub send_window: u64,
}

/// What the client's tasks share (one thread: a LocalSet).
struct State {
    size: usize,
    interval: u64,
    t0: u64,
    from: u64,
    to: u64,
    /// Requests issued so far (request k is due at t0 + k × interval); no more once due ≥ to.
    next_seq: Cell<u64>,
    sent_in_window: Cell<u64>,
    rtt: RefCell<Vec<u64>>,
    bulk_on: Cell<bool>,
    wake: Arc<Notify>,
    answered: Notify,
    query_answer: Cell<Option<(u64, u64)>>,
    error: RefCell<Option<String>>,
}

impl State {
    fn fail(&self, e: String) {
        self.error.borrow_mut().get_or_insert(e);
        self.answered.notify_one();
    }

    /// Appends every request due by now (and before the window's end) to buf.
    fn take_due(&self, buf: &mut Vec<u8>) {
        let now = now_ns();
        loop {
            let due = self.t0 + self.next_seq.get() * self.interval;
            if due > now || due >= self.to {
                break;
            }
            self.next_seq.set(self.next_seq.get() + 1);
            buf.extend_from_slice(&(self.size as u32).to_be_bytes());
            buf.extend_from_slice(&due.to_be_bytes());
            buf.resize(buf.len() + self.size - 8, 0xab);
            if due >= self.from {
                self.sent_in_window.set(self.sent_in_window.get() + 1);
            }
        }
    }

    fn requests_done(&self) -> bool {
        self.t0 + self.next_seq.get() * self.interval >= self.to
    }
}

/// One stream's writer: requests when `requests` (as they fall due), bulk frames back to back
/// while `bulk` and the bulk is on. Between two frames it looks for due requests first, so in
/// `same` a request waits for at most the bulk frame being written. Returns the stream when
/// it has nothing more to write (requests all issued and the bulk stopped).
async fn writer(st: Rc<State>, mut send: quinn::SendStream, requests: bool, bulk: Option<Bytes>) -> quinn::SendStream {
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        if requests {
            buf.clear();
            st.take_due(&mut buf);
            if !buf.is_empty() {
                if let Err(e) = send.write_all(&buf).await {
                    st.fail(format!("writing requests: {e}"));
                    return send;
                }
                continue;
            }
        }
        match &bulk {
            Some(b) if st.bulk_on.get() => {
                if let Err(e) = send.write_chunk(b.clone()).await {
                    st.fail(format!("writing bulk: {e}"));
                    return send;
                }
                continue;
            }
            _ => {}
        }
        if (!requests || st.requests_done()) && (bulk.is_none() || !st.bulk_on.get()) {
            return send;
        }
        st.wake.notified().await;
    }
}

/// Reads the echoes (and the query's answer) on a stream that carries requests.
async fn reader(st: Rc<State>, mut recv: quinn::RecvStream) {
    let mut fr = Framer::default();
    let mut bufs: Vec<Bytes> = vec![Bytes::new(); 32];
    loop {
        let k = match recv.read_chunks(&mut bufs).await {
            Ok(Some(k)) => k,
            Ok(None) => return,
            Err(e) => {
                st.fail(format!("reading echoes: {e}"));
                return;
            }
        };
        let now = now_ns();
        for b in &mut bufs[..k] {
            let r = fr.feed(
                b,
                |body| {
                    if body.len() < 8 {
                        return;
                    }
                    let due = be64(body);
                    if due == QUERY_MAGIC && body.len() == QUERY_LEN {
                        st.query_answer.set(Some((be64(&body[8..]), be64(&body[16..]))));
                        st.answered.notify_one();
                    } else if due >= st.from && due < st.to {
                        st.rtt.borrow_mut().push(now.saturating_sub(due));
                        st.answered.notify_one();
                    }
                },
                |_| {},
            );
            *b = Bytes::new();
            if r.is_err() {
                st.fail("the server sent a frame over the limit".into());
                return;
            }
        }
    }
}

/// The q-quantile as hol_bench.c takes it (element ⌊q·n⌋ of the sorted round trips), in µs.
pub fn pct_us(v: &[u64], q: f64) -> f64 {
    if v.is_empty() {
        return -1.0;
    }
    let i = ((q * v.len() as f64) as usize).min(v.len() - 1);
    v[i] as f64 / 1e3
}

pub fn cmd_hol_client(o: ClientOpts) -> Result<bool, String> {
    let mut client = quinn::ClientConfig::new(client_crypto(o.pin, ALPN)?);
    client.transport_config(Arc::new(hol_transport(o.send_window)));
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let endpoint = quinn::Endpoint::new(endpoint_config()?, None, socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, o.port));
        let conn = tokio::time::timeout(
            Duration::from_secs(10),
            endpoint.connect_with(client, addr, SERVER_NAME).map_err(|e| format!("connect to {addr}: {e}"))?,
        )
        .await
        .map_err(|_| format!("no QUIC handshake with {addr} within 10 s"))?
        .map_err(|e| format!("QUIC handshake with {addr}: {e}"))?;
        print_suite_once("hol-client", &conn);

        let mut bulk = Vec::with_capacity(4 + o.bulk);
        bulk.extend_from_slice(&(o.bulk as u32).to_be_bytes());
        bulk.extend((0..o.bulk).map(|i| (i % 251) as u8));
        let bulk = Bytes::from(bulk);
        let t0 = now_ns();
        let st = Rc::new(State {
            size: o.size,
            interval: 1_000_000_000 / o.rate,
            t0,
            from: t0 + o.warmup_ns,
            to: t0 + o.warmup_ns + o.duration_ns,
            next_seq: Cell::new(0),
            sent_in_window: Cell::new(0),
            rtt: RefCell::new(Vec::with_capacity((o.rate * o.duration_ns / 1_000_000_000 + 16) as usize)),
            bulk_on: Cell::new(o.mode != Mode::Alone),
            wake: Arc::new(Notify::new()),
            answered: Notify::new(),
            query_answer: Cell::new(None),
            error: RefCell::new(None),
        });

        // The request stream (and in `same` the bulk's too); in `separate` the bulk's own.
        let (rsend, rrecv) = conn.open_bi().await.map_err(|e| format!("opening a stream: {e}"))?;
        // The request stream's data goes into packets before the bulk's (quinn sends the highest
        // priority first; the ngtcp2 peer offers the request stream first too).
        if o.mode == Mode::Separate {
            let _ = rsend.set_priority(1);
        }
        // (The bulk stream's receive side is kept, not dropped: dropping it would stop the
        // server's side of that stream, which it never writes to anyway.)
        let mut _bulk_recv = None;
        let bulk_task = if o.mode == Mode::Separate {
            let (bsend, brecv) = conn.open_bi().await.map_err(|e| format!("opening a stream: {e}"))?;
            _bulk_recv = Some(brecv);
            Some(tokio::task::spawn_local(writer(st.clone(), bsend, false, Some(bulk.clone()))))
        } else {
            None
        };
        let req_task = tokio::task::spawn_local(writer(
            st.clone(),
            rsend,
            true,
            if o.mode == Mode::Same { Some(bulk.clone()) } else { None },
        ));
        tokio::task::spawn_local(reader(st.clone(), rrecv));

        // The pacer: tokio's timers tick in whole milliseconds, so a thread sleeps until each
        // request is due and wakes the writer.
        let stop = Arc::new(AtomicBool::new(false));
        let (wake, stop2, interval, end) = (st.wake.clone(), stop.clone(), st.interval, st.to);
        let pacer = std::thread::Builder::new()
            .name("pacer".into())
            .spawn(move || {
                let mut k = 1u64;
                while !stop2.load(Relaxed) {
                    let due = t0 + k * interval;
                    if due >= end {
                        break;
                    }
                    let now = now_ns();
                    if due > now {
                        std::thread::sleep(Duration::from_nanos(due - now));
                    }
                    wake.notify_one();
                    k = (now_ns().max(due) - t0) / interval + 1;
                }
                wake.notify_one();
            })
            .map_err(|e| format!("cannot start the pacing thread: {e}"))?;

        let sleep_until = |t: u64| {
            let now = now_ns();
            tokio::time::sleep(Duration::from_nanos(t.saturating_sub(now)))
        };
        sleep_until(st.from).await;
        let t_from = now_ns();
        sleep_until(st.to).await;
        let t_to = now_ns();
        // The window's last answers, bulk still going (as hol_bench.c), at most DRAIN_NS.
        let deadline = now_ns() + DRAIN_NS;
        while st.error.borrow().is_none()
            && (!st.requests_done() || (st.rtt.borrow().len() as u64) < st.sent_in_window.get())
            && now_ns() < deadline
        {
            let _ = tokio::time::timeout(Duration::from_millis(5), st.answered.notified()).await;
        }
        stop.store(true, Relaxed);
        let _ = pacer.join();
        st.bulk_on.set(false); // the bulk writer stops after the frame it is writing
        st.wake.notify_one();
        // The query goes on a stream of its own at the highest priority: in `same` the request
        // stream may still hold seconds of bulk in quinn's send buffer. (Its write still waits
        // for room in the connection's send window.)
        let mut qerr = None;
        match conn.open_bi().await {
            Ok((mut qsend, qrecv)) => {
                let _ = qsend.set_priority(2);
                tokio::task::spawn_local(reader(st.clone(), qrecv));
                let end = now_ns() + DRAIN_NS;
                match tokio::time::timeout(Duration::from_nanos(DRAIN_NS), qsend.write_all(&query_frame(t_from, t_to)))
                    .await
                {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => qerr = Some(format!("sending the query: {e}")),
                    Err(_) => qerr = Some("the query could not be written within 10 s".into()),
                }
                while qerr.is_none() && st.query_answer.get().is_none() && st.error.borrow().is_none() && now_ns() < end
                {
                    let _ = tokio::time::timeout(Duration::from_millis(5), st.answered.notified()).await;
                }
            }
            Err(e) => qerr = Some(format!("opening the query's stream: {e}")),
        }
        drop((bulk_task, req_task)); // writers still blocked (in `same`) end with the connection
        let (bulk_bytes, _) = st.query_answer.get().unwrap_or((0, 0));
        if st.query_answer.get().is_none() && o.mode != Mode::Alone {
            eprintln!("quinn hol-client: no answer to the goodput query: {}", qerr.as_deref().unwrap_or("timed out"));
        }
        let stats = conn.stats();
        let failure = st.error.borrow().clone(); // before the close makes the reader fail
        conn.close(quinn::VarInt::from_u32(0), b"done");
        let mut rtt = st.rtt.borrow_mut();
        rtt.sort_unstable();
        let secs = (t_to - t_from) as f64 / 1e9;
        println!(
            "{{\"mode\": \"{}\", \"requests\": {}, \"answered\": {}, \"p50_us\": {:.1}, \"p99_us\": {:.1}, \
             \"p999_us\": {:.1}, \"max_us\": {:.1}, \"bulk_mbps\": {:.2}, \"seconds\": {secs:.3}, \
             \"bulk_bytes\": {bulk_bytes}, \"packets_sent\": {}, \"packets_lost\": {}, \"rtt_us\": {:.1}, \
             \"cwnd\": {}, \"goodput_answered\": {}}}",
            o.mode.name(),
            st.sent_in_window.get(),
            rtt.len(),
            pct_us(&rtt, 0.5),
            pct_us(&rtt, 0.99),
            pct_us(&rtt, 0.999),
            rtt.last().map_or(-1.0, |v| *v as f64 / 1e3),
            bulk_bytes as f64 * 8.0 / 1e6 / secs,
            stats.path.sent_packets,
            stats.path.lost_packets,
            stats.path.rtt.as_secs_f64() * 1e6,
            stats.path.cwnd,
            st.query_answer.get().is_some(),
        );
        let _ = io::stdout().flush();
        let _ = tokio::time::timeout(Duration::from_millis(250), endpoint.wait_idle()).await;
        if rtt.is_empty() {
            eprintln!(
                "quinn hol-client: none of the window's {} requests was answered within 10 s of its end",
                st.sent_in_window.get()
            );
        }
        if let Some(e) = failure {
            eprintln!("quinn hol-client: {e}");
            return Ok(false);
        }
        Ok(!rtt.is_empty() && (st.query_answer.get().is_some() || o.mode == Mode::Alone))
    })
}

// ---------------------------------------------------------------------------
// Arguments

pub const USAGE: &str = "  quinn hol-serve\n  quinn hol-client PORT [--cert-sha256 HEX] --mode alone|same|separate [--duration S] [--warmup S]\n                   [--rate N] [--size 8..64] [--bulk 65..16777216] [--send-window BYTES]\n";

fn bad(what: String) -> (u8, String) {
    (2, format!("quinn hol-client: {what}\nusage:\n{}", USAGE.trim_end()))
}

pub fn parse_client(args: &[String]) -> Result<ClientOpts, (u8, String)> {
    let mut o = ClientOpts {
        port: 0,
        pin: None,
        mode: Mode::Alone,
        duration_ns: 10_000_000_000,
        warmup_ns: 1_000_000_000,
        rate: 1000,
        size: 61,
        bulk: 1 << 20,
        send_window: SEND_WINDOW,
    };
    let mut have_mode = false;
    let secs = |v: &str, a: &str, min: f64| -> Result<u64, (u8, String)> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= min && x <= 3600.0 => Ok((x * 1e9) as u64),
            _ => Err(bad(format!("bad value '{v}' for {a}"))),
        }
    };
    let int = |v: &str, a: &str, lo: u64, hi: u64| -> Result<u64, (u8, String)> {
        match v.parse::<u64>() {
            Ok(x) if (lo..=hi).contains(&x) => Ok(x),
            _ => Err(bad(format!("{a} takes {lo}..{hi}, got '{v}'"))),
        }
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if !a.starts_with("--") {
            if o.port != 0 {
                return Err(bad(format!("unexpected argument '{a}'")));
            }
            o.port = int(a, "PORT", 1, 65535)? as u16;
            continue;
        }
        let v = it.next().ok_or_else(|| bad(format!("{a} needs a value")))?;
        match a.as_str() {
            "--cert-sha256" => o.pin = Some(parse_pin(v).map_err(bad)?),
            "--mode" => {
                o.mode = match v.as_str() {
                    "alone" => Mode::Alone,
                    "same" => Mode::Same,
                    "separate" => Mode::Separate,
                    _ => return Err(bad(format!("--mode is alone, same or separate, got '{v}'"))),
                };
                have_mode = true;
            }
            "--duration" => o.duration_ns = secs(v, a, 0.001)?,
            "--warmup" => o.warmup_ns = secs(v, a, 0.0)?,
            "--rate" => o.rate = int(v, a, 1, 100_000)?,
            "--size" => o.size = int(v, a, 8, SMALL_MAX as u64)? as usize,
            "--bulk" => o.bulk = int(v, a, SMALL_MAX as u64 + 1, MAX_FRAME as u64)? as usize,
            "--send-window" => o.send_window = int(v, a, 65536, 1 << 30)?,
            _ => return Err(bad(format!("unknown argument '{a}'"))),
        }
    }
    if o.port == 0 || !have_mode {
        return Err(bad("PORT and --mode are required".into()));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framer_any_split() {
        let mut s = Vec::new();
        let small = [7u8; 61];
        for i in 0..5u32 {
            s.extend_from_slice(&61u32.to_be_bytes());
            s.extend_from_slice(&small);
            let n = 1000 + i;
            s.extend_from_slice(&n.to_be_bytes());
            s.extend(std::iter::repeat(1u8).take(n as usize));
        }
        s.extend_from_slice(&0u32.to_be_bytes());
        for split in [1usize, 3, 4, 5, 61, 64, 65, 1000, 100_000] {
            let mut fr = Framer::default();
            let (mut smalls, mut empties, mut bulk) = (0, 0, 0u64);
            for c in s.chunks(split) {
                fr.feed(
                    c,
                    |b| {
                        if b.is_empty() {
                            empties += 1
                        } else {
                            assert_eq!(b, &small[..]);
                            smalls += 1
                        }
                    },
                    |n| bulk += n,
                )
                .unwrap();
            }
            assert_eq!((smalls, empties, bulk), (5, 1, 5 * 1000 + 10), "split {split}");
        }
        let mut fr = Framer::default();
        assert_eq!(fr.feed(&(MAX_FRAME + 1).to_be_bytes(), |_| {}, |_| {}), Err(MAX_FRAME + 1));
    }

    #[test]
    fn bulk_log() {
        let mut l = BulkLog::default();
        l.add(100, 1_000_000_000);
        l.add(50, 1_000_500_000); // same millisecond: folded into the entry above
        l.add(10, 1_002_000_000);
        assert_eq!(l.at(999_999_999), 0);
        assert_eq!(l.at(1_000_000_000), 150);
        assert_eq!(l.at(1_001_999_999), 150);
        assert_eq!(l.at(1_002_000_000), 160);
        assert_eq!(l.total, 160);
    }

    #[test]
    fn arguments() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse_client(&a(&["4433", "--mode", "separate", "--duration", "2", "--rate", "500"])).unwrap();
        assert_eq!((o.port, o.mode, o.duration_ns, o.rate, o.size, o.bulk), (4433, Mode::Separate, 2_000_000_000, 500, 61, 1 << 20));
        assert!(parse_client(&a(&["4433"])).is_err());
        assert!(parse_client(&a(&["4433", "--mode", "both"])).is_err());
        assert!(parse_client(&a(&["4433", "--mode", "same", "--size", "65"])).is_err());
        assert!(parse_client(&a(&["4433", "--mode", "same", "--bulk", "64"])).is_err());
        assert!(parse_client(&a(&["--mode", "same"])).is_err());
        assert_eq!(pct_us(&[], 0.5), -1.0);
        assert_eq!(pct_us(&[1000, 2000, 3000, 4000], 0.5), 3.0);
    }
}
