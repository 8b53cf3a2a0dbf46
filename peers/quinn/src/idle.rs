//! quinn idle: the idle-links experiment (/work/shared/design.md), mirroring
//! `pure bench idle` (src/cli/bench_idle.c):
//!
//!   quinn idle --links K --idle SECONDS [--keepalive SECONDS] [--json]
//!
//! K QUIC connections from this process (one quinn Endpoint = ONE UDP socket) to a server
//! process (this binary re-run as `quinn idle-serve`, also one Endpoint, one socket) on
//! 127.0.0.1. Both run a current-thread tokio runtime. The server reports its figures on a
//! command line over its stdin/stdout pipes (a helper thread reads the commands; the figures
//! are process-wide: VmRSS, getrusage CPU, and atomic counters).
//!
//! Counting: the Endpoint runs on a `quinn::Runtime` that wraps `TokioRuntime`: its UDP socket
//! counts every datagram sent (a GSO transmit counts as its segments), and its timers (quinn
//! makes one per connection, reset to `poll_timeout()`) count each expiry quinn observes.
//!
//! Steps as in `pure bench idle`: open K connections (at most 256 handshakes under way),
//! settle 2 s, RSS of both sides after malloc_trim minus RSS before, divided by K; idle
//! SECONDS: datagrams, timer expiries and CPU of both sides; then one 4-byte message on a new
//! bidirectional stream of every connection, answered with 1 byte; the time until all answers.
//! Max idle timeout 600 s; --keepalive sets TransportConfig::keep_alive_interval on the client.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::{endpoint_config, make_cert, runtime, udp_socket, ClientTls, PinVerifier, ServerTls, SUITES};

const MAX_HANDSHAKES: usize = 256;
const IDLE_TIMEOUT_MS: u32 = 600_000;
const ALPN: &[u8] = b"pure-idle";
/// How long the wake-up may take: stragglers wait for loss recovery's backoff.
const WAKE_LIMIT: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------
// Counting runtime: TokioRuntime with its socket's datagrams and its timers' expiries counted

static DATAGRAMS_OUT: AtomicU64 = AtomicU64::new(0);
static TIMERS_FIRED: AtomicU64 = AtomicU64::new(0);
static ESTABLISHED: AtomicU64 = AtomicU64::new(0);
static CLOSED: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
struct CountingRuntime(quinn::TokioRuntime);

#[derive(Debug)]
struct CountingTimer {
    inner: Pin<Box<dyn quinn::AsyncTimer>>,
    fired: bool,
}

impl quinn::AsyncTimer for CountingTimer {
    fn reset(mut self: Pin<&mut Self>, i: Instant) {
        self.fired = false;
        self.inner.as_mut().reset(i)
    }
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context) -> Poll<()> {
        let r = self.inner.as_mut().poll(cx);
        if r.is_ready() && !self.fired {
            self.fired = true;
            TIMERS_FIRED.fetch_add(1, Relaxed);
        }
        r
    }
}

#[derive(Debug)]
struct CountingSocket(Box<dyn quinn::AsyncUdpSocket>);

impl quinn::AsyncUdpSocket for CountingSocket {
    fn poll_send(
        &mut self,
        state: &quinn_udp::UdpState,
        cx: &mut Context,
        transmits: &[quinn::Transmit],
    ) -> Poll<io::Result<usize>> {
        let r = self.0.poll_send(state, cx, transmits);
        if let Poll::Ready(Ok(n)) = &r {
            let d: usize = transmits[..*n]
                .iter()
                .map(|t| match t.segment_size {
                    Some(s) if s > 0 => (t.contents.len() + s - 1) / s,
                    _ => 1,
                })
                .sum();
            DATAGRAMS_OUT.fetch_add(d as u64, Relaxed);
        }
        r
    }
    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [io::IoSliceMut<'_>],
        meta: &mut [quinn_udp::RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_recv(cx, bufs, meta)
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

impl quinn::Runtime for CountingRuntime {
    fn new_timer(&self, i: Instant) -> Pin<Box<dyn quinn::AsyncTimer>> {
        Box::pin(CountingTimer { inner: self.0.new_timer(i), fired: false })
    }
    fn spawn(&self, future: Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
        self.0.spawn(future)
    }
    fn wrap_udp_socket(&self, t: std::net::UdpSocket) -> io::Result<Box<dyn quinn::AsyncUdpSocket>> {
        Ok(Box::new(CountingSocket(self.0.wrap_udp_socket(t)?)))
    }
}

// ---------------------------------------------------------------------------
// Process figures

#[repr(C)]
struct Rusage {
    f: [i64; 18], // ru_utime, ru_stime (timeval each), then 14 longs
}

extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    fn malloc_trim(pad: usize) -> i32;
}

pub(crate) fn cpu_ns() -> u64 {
    let mut r = Rusage { f: [0; 18] };
    // SAFETY: getrusage fills a struct rusage, which is 18 longs on 64-bit Linux.
    unsafe { getrusage(0, &mut r) };
    ((r.f[0] + r.f[2]) as u64) * 1_000_000_000 + ((r.f[1] + r.f[3]) as u64) * 1000
}

fn trim() {
    // SAFETY: glibc's malloc_trim takes a pad and touches only the allocator's state.
    unsafe { malloc_trim(0) };
}

fn rss_kb() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(-1)
}

/// The kernel's count of UDP datagrams dropped for a full receive buffer (system-wide:
/// /proc/net/snmp, Udp RcvbufErrors).
fn udp_rcvbuf_errors() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let line = text.lines().filter(|l| l.starts_with("Udp: ")).nth(1)?;
    line.split_whitespace().nth(5)?.parse().ok()
}

fn transport(keepalive: Option<Duration>) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.initial_max_udp_payload_size(1452)
        .stream_receive_window(quinn::VarInt::from_u32(16 << 10))
        .receive_window(quinn::VarInt::from_u32(64 << 10))
        .send_window(64 << 10)
        .max_concurrent_uni_streams(quinn::VarInt::from_u32(0))
        .max_idle_timeout(Some(quinn::IdleTimeout::from(quinn::VarInt::from_u32(IDLE_TIMEOUT_MS))))
        .keep_alive_interval(keepalive);
    Arc::new(t)
}

// ---------------------------------------------------------------------------
// Server: `quinn idle-serve`

pub fn cmd_idle_serve() -> Result<(), String> {
    let (cert, key) = make_cert()?;
    let mut tls = rustls::ServerConfig::builder()
        .with_cipher_suites(SUITES)
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("rustls server config: {e}"))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| format!("rustls server certificate: {e}"))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = 0;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(ServerTls(Arc::new(tls))));
    server.transport_config(transport(None));
    server.concurrent_connections(2_000_000);
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    rt.block_on(async move {
        let endpoint =
            quinn::Endpoint::new(endpoint_config()?, Some(server), socket, CountingRuntime(quinn::TokioRuntime))
                .map_err(|e| format!("quinn endpoint: {e}"))?;
        let port = endpoint.local_addr().map_err(|e| format!("local_addr: {e}"))?.port();
        {
            let mut out = io::stdout().lock();
            writeln!(out, "{port}").and_then(|_| out.flush()).map_err(|e| format!("stdout: {e}"))?;
        }
        // Commands on stdin: T (trim, then report), S (report), Q or EOF (exit).
        std::thread::spawn(|| {
            let stdin = io::stdin();
            for line in stdin.lock().lines() {
                let line = match line {
                    Ok(l) => l,
                    Err(_) => break,
                };
                match line.trim() {
                    "T" => trim(),
                    "S" => {}
                    _ => break,
                }
                let mut out = io::stdout().lock();
                if writeln!(
                    out,
                    "{} {} {} {} {} {}",
                    rss_kb(),
                    ESTABLISHED.load(Relaxed),
                    DATAGRAMS_OUT.load(Relaxed),
                    TIMERS_FIRED.load(Relaxed),
                    cpu_ns(),
                    CLOSED.load(Relaxed)
                )
                .and_then(|_| out.flush())
                .is_err()
                {
                    break;
                }
            }
            std::process::exit(0);
        });
        while let Some(connecting) = endpoint.accept().await {
            tokio::spawn(async move {
                let conn = match connecting.await {
                    Ok(c) => c,
                    Err(e) => {
                        if CLOSED.fetch_add(1, Relaxed) < 3 {
                            eprintln!("quinn idle-serve: handshake failed: {e}");
                        }
                        return;
                    }
                };
                ESTABLISHED.fetch_add(1, Relaxed);
                // the wake-up: one stream, one message, one answer
                loop {
                    match conn.accept_bi().await {
                        Ok((mut send, recv)) => {
                            if recv.read_to_end(64).await.is_ok() && send.write_all(b"k").await.is_ok() {
                                let _ = send.finish().await;
                            }
                        }
                        Err(_) => {
                            CLOSED.fetch_add(1, Relaxed);
                            return;
                        }
                    }
                }
            });
        }
        Err("endpoint closed".to_string())
    })
}

// ---------------------------------------------------------------------------
// Client: `quinn idle`

struct Report {
    rss_kb: i64,
    established: u64,
    datagrams: u64,
    timers: u64,
    cpu_ns: u64,
    closed: u64,
}

struct ServerProc {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl ServerProc {
    fn ask(&mut self, what: &str) -> Result<Report, String> {
        let stdin = self.child.stdin.as_mut().ok_or("server stdin closed")?;
        writeln!(stdin, "{what}").and_then(|_| stdin.flush()).map_err(|e| format!("asking the server: {e}"))?;
        let mut line = String::new();
        self.out.read_line(&mut line).map_err(|e| format!("reading the server's figures: {e}"))?;
        let v: Vec<i64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if v.len() != 6 {
            return Err(format!("the server's figures line is malformed: {:?}", line.trim()));
        }
        Ok(Report {
            rss_kb: v[0],
            established: v[1] as u64,
            datagrams: v[2] as u64,
            timers: v[3] as u64,
            cpu_ns: v[4] as u64,
            closed: v[5] as u64,
        })
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if let Some(mut s) = self.child.stdin.take() {
            let _ = writeln!(s, "Q");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct IdleOpts {
    pub links: u64,
    pub idle: f64,
    pub keepalive: Option<f64>,
    pub json: bool,
}

fn fail_line(o: &IdleOpts, stage: &str, opened: u64, why: &str) {
    eprintln!("quinn idle: stopped during {stage}: {why}");
    println!("links {}: stopped during {stage}: {why}", o.links);
    if o.json {
        println!(
            "{{\"links\": {}, \"idle_seconds\": {:.0}, \"keepalive\": {}, \"failed\": true, \"stage\": \"{stage}\", \
             \"opened\": {opened}, \"error\": \"{}\"}}",
            o.links,
            o.idle,
            o.keepalive.is_some(),
            why.replace('\\', "\\\\").replace('"', "'")
        );
    }
}

pub fn cmd_idle(o: IdleOpts) -> Result<bool, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut child = Command::new(exe)
        .arg("idle-serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the server process: {e}"))?;
    let out = BufReader::new(child.stdout.take().ok_or("no server stdout")?);
    let mut srv = ServerProc { child, out };
    let mut line = String::new();
    srv.out.read_line(&mut line).map_err(|e| format!("reading the server's port: {e}"))?;
    let port: u16 = line.trim().parse().map_err(|_| format!("the server did not start (said {:?})", line.trim()))?;
    let k = o.links;

    let mut c_rss0 = rss_kb();
    let s0 = srv.ask("T")?;
    let mut tls = rustls::ClientConfig::builder()
        .with_cipher_suites(SUITES)
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("rustls client config: {e}"))?
        .with_custom_certificate_verifier(Arc::new(PinVerifier { sha256: None }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = false;
    let mut client = quinn::ClientConfig::new(Arc::new(ClientTls(Arc::new(tls))));
    client.transport_config(transport(o.keepalive.map(Duration::from_secs_f64)));
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    rt.block_on(async move {
        let endpoint = quinn::Endpoint::new(endpoint_config()?, None, socket, CountingRuntime(quinn::TokioRuntime))
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        eprintln!(
            "quinn idle: {k} connections over one UDP socket per side, at most {MAX_HANDSHAKES} handshakes under way"
        );
        c_rss0 = c_rss0.max(rss_kb());
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));

        // open
        let t0 = Instant::now();
        let limit = t0 + Duration::from_secs(600);
        let mut conns: Vec<quinn::Connection> = Vec::with_capacity(k as usize);
        let mut set = tokio::task::JoinSet::new();
        let (mut started, mut failed, mut first_err) = (0u64, 0u64, String::new());
        while (conns.len() as u64) < k {
            while failed == 0 && started < k && set.len() < MAX_HANDSHAKES {
                match endpoint.connect_with(client.clone(), addr, super::SERVER_NAME) {
                    Ok(connecting) => {
                        set.spawn(async move { connecting.await.map_err(|e| e.to_string()) });
                    }
                    Err(e) => {
                        failed += 1;
                        first_err = format!("connect_with at connection {started}: {e}");
                    }
                }
                started += 1;
            }
            if set.is_empty() {
                break;
            }
            let left = limit.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, set.join_next()).await {
                Ok(Some(Ok(Ok(c)))) => conns.push(c),
                Ok(Some(Ok(Err(e)))) => {
                    failed += 1;
                    if first_err.is_empty() {
                        first_err = format!("handshake failed: {e}");
                    }
                }
                Ok(Some(Err(e))) => {
                    failed += 1;
                    if first_err.is_empty() {
                        first_err = format!("handshake task: {e}");
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    first_err = "600 s limit reached".into();
                    break;
                }
            }
        }
        let hs_seconds = t0.elapsed().as_secs_f64();
        if (conns.len() as u64) < k {
            fail_line(
                &o,
                "handshakes",
                conns.len() as u64,
                &format!("only {} of {k} connections opened in {hs_seconds:.1} s: {first_err}", conns.len()),
            );
            return Ok(false);
        }
        drop(set);

        // settle
        tokio::time::sleep(Duration::from_secs(2)).await;
        trim();
        let c_rss1 = rss_kb();
        let s1 = srv.ask("T")?;
        if s1.established < k {
            fail_line(&o, "handshakes", s1.established, &format!("the server holds only {} of {k} connections", s1.established));
            return Ok(false);
        }

        // idle
        let (cd0, ct0, ccpu0) = (DATAGRAMS_OUT.load(Relaxed), TIMERS_FIRED.load(Relaxed), cpu_ns());
        tokio::time::sleep(Duration::from_secs_f64(o.idle)).await;
        let (cd1, ct1, ccpu1) = (DATAGRAMS_OUT.load(Relaxed), TIMERS_FIRED.load(Relaxed), cpu_ns());
        let s2 = srv.ask("S")?;
        let closed_idle = conns.iter().filter(|c| c.close_reason().is_some()).count();
        if closed_idle > 0 || s2.closed > s1.closed {
            eprintln!(
                "quinn idle: {closed_idle} client and {} server connections closed while idle",
                s2.closed - s1.closed
            );
        }

        let kf = k as f64;
        let cli_bpl = (c_rss1 - c_rss0) as f64 * 1024.0 / kf;
        let srv_bpl = (s1.rss_kb - s0.rss_kb) as f64 * 1024.0 / kf;
        let (cpk, spk) = (cd1 - cd0, s2.datagrams - s1.datagrams);
        let (ctm, stm) = (ct1 - ct0, s2.timers - s1.timers);
        let link_seconds = kf * o.idle;
        let (ccpu, scpu) = ((ccpu1 - ccpu0) as f64 / 1e3, (s2.cpu_ns - s1.cpu_ns) as f64 / 1e3);
        println!("links {k}, idle {:.0} s, keepalive {}", o.idle, if o.keepalive.is_some() { "on" } else { "off" });
        println!("{:<28} {:>12} {:>12}", "", "client", "server");
        println!("{:<28} {:>12.0} {:>12.0}", "resident bytes per link", cli_bpl, srv_bpl);
        println!("{:<28} {:>12} {:>12}", "packets sent while idle", cpk, spk);
        println!("{:<28} {:>12} {:>12}", "timers fired while idle", ctm, stm);
        println!(
            "{:<28} {:>12.4} {:>12.4}",
            "CPU us per idle link-second",
            ccpu / link_seconds,
            scpu / link_seconds
        );
        println!("handshakes: {hs_seconds:.2} s for all {k} links");
        let _ = io::stdout().flush();

        // wake
        let t1 = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for c in conns.iter() {
            let c = c.clone();
            set.spawn(async move {
                let (mut send, recv) = c.open_bi().await.map_err(|e| format!("open_bi: {e}"))?;
                send.write_all(b"wake").await.map_err(|e| format!("write: {e}"))?;
                send.finish().await.map_err(|e| format!("finishing the stream: {e}"))?;
                let answer = recv.read_to_end(64).await.map_err(|e| format!("reading the answer: {e}"))?;
                if answer != b"k" {
                    return Err(format!("unexpected answer {answer:?}"));
                }
                Ok::<(), String>(())
            });
        }
        let drops0 = udp_rcvbuf_errors();
        let wake_limit = t1 + WAKE_LIMIT;
        let (mut woke, mut wake_err) = (0u64, String::new());
        loop {
            let left = wake_limit.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, set.join_next()).await {
                Ok(Some(Ok(Ok(())))) => woke += 1,
                Ok(Some(Ok(Err(e)))) => {
                    if wake_err.is_empty() {
                        wake_err = e
                    }
                }
                Ok(Some(Err(e))) => {
                    if wake_err.is_empty() {
                        wake_err = e.to_string()
                    }
                }
                Ok(None) => break,
                Err(_) => break,
            }
        }
        let wake_seconds = t1.elapsed().as_secs_f64();
        if let (Some(a), Some(b)) = (drops0, udp_rcvbuf_errors()) {
            if b > a {
                eprintln!(
                    "quinn idle: {} UDP datagrams dropped for full receive buffers during the wake-up \
                     (system-wide counter; QUIC loss recovery resends)",
                    b - a
                );
            }
        }
        let all = woke == k;
        if all {
            println!("wake-up: {wake_seconds:.3} s until every link answered");
        } else {
            println!(
                "wake-up: FAILED: {woke} of {k} links answered within {wake_seconds:.0} s{}",
                if wake_err.is_empty() { String::new() } else { format!(" (first error: {wake_err})") }
            );
        }
        if o.json {
            println!(
                "{{\"links\": {k}, \"idle_seconds\": {:.0}, \"keepalive\": {}, \
                 \"client_bytes_per_link\": {cli_bpl:.0}, \"server_bytes_per_link\": {srv_bpl:.0}, \
                 \"packets_while_idle\": {}, \"timers_fired_while_idle\": {}, \
                 \"cpu_us_per_link_second\": {:.5}, \"handshake_seconds\": {hs_seconds:.3}, \
                 \"wake_seconds\": {:.3}, \"woke\": {woke}, \
                 \"client_packets_while_idle\": {cpk}, \"server_packets_while_idle\": {spk}, \
                 \"client_timers_while_idle\": {ctm}, \"server_timers_while_idle\": {stm}, \"sockets_per_side\": 1}}",
                o.idle,
                o.keepalive.is_some(),
                cpk + spk,
                ctm + stm,
                (ccpu + scpu) / link_seconds,
                if all { wake_seconds } else { -1.0 },
            );
        }
        let _ = io::stdout().flush();
        for c in &conns {
            c.close(quinn::VarInt::from_u32(0), b"done");
        }
        let _ = tokio::time::timeout(Duration::from_millis(500), endpoint.wait_idle()).await;
        Ok(all)
    })
}
