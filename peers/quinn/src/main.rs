//! quinn: the drain benchmark over QUIC with quinn 0.9 (Debian's packaged crates).
//!
//!   quinn serve
//!       binds 127.0.0.1 on an ephemeral UDP port, prints one JSON line
//!       {"port": N, "cert_sha256": "<hex>"} (the certificate is a fresh self-signed
//!       P-256 one made with the openssl CLI at start), then serves connections until
//!       killed.
//!   quinn drain PORT N SIZE [--cert-sha256 HEX]
//!       connects, opens one bidirectional stream, writes the preamble "pure" and N
//!       messages (u32 big-endian length + SIZE bytes, byte i = i % 251), finishes the
//!       stream, reads the server's 8-byte big-endian message count, prints one JSON
//!       line and exits 0 only if the count equals N.
//!   quinn serve --echo
//!       the same server sending every whole message back (after the preamble);
//!       no TLS session resumption.
//!   quinn ping PORT N SIZE [--cert-sha256 HEX]
//!       one connection, N round trips of one SIZE-byte message (one in flight),
//!       each echo compared; prints round-trip percentiles.
//!   quinn handshakes PORT N [--cert-sha256 HEX]
//!       N connections one after another from one endpoint: full handshake, one
//!       61-byte message, its echo, close; prints connections per second.
//!
//!   quinn hol-serve / quinn hol-client
//!       the head-of-line benchmark (bench/README.md, "hol"): src/hol.rs.
//!
//!   quinn rpc-serve / quinn rpc-client
//!       the RPC workload (bench/README.md, "RPC"): src/rpc.rs.
//!
//! Both sides run a current-thread tokio runtime. TLS 1.3 with TLS_AES_128_GCM_SHA256
//! only; each side prints the suite rustls actually negotiated to stderr once. UDP
//! datagrams are 1472 bytes (quinn-proto 0.9 has no PMTU discovery, so the initial
//! size is set to 1472 and the advertised max_udp_payload_size to 1472), socket
//! buffers 4 MiB. quinn-udp 0.3.2 sends with UDP_SEGMENT (GSO, at most 10 datagrams
//! per sendmsg because quinn-proto caps a transmit at 10 segments) and receives with
//! UDP_GRO and recvmmsg.

mod hol;
mod idle;
mod rpc;

use std::any::Any;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use quinn_proto::crypto::{self as qcrypto, ExportKeyingMaterialError, KeyPair, Keys};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side, TransportError, TransportErrorCode};
use rustls::quic::{ClientQuicExt, KeyChange, QuicExt, Secrets, ServerQuicExt, Version};

const PREAMBLE: &[u8; 4] = b"pure";
/// Largest body a receiver accepts (the same limit as the other drain peers).
const MAX_SIZE: u64 = 64 << 20;
/// Bytes handed to one write_all call: many messages at a time, pointing into a
/// pattern that never changes.
const CHUNK: usize = 256 * 1024;
/// Stream segments taken per read_chunks call on the server.
const READ_BATCH: usize = 64;
/// Largest UDP payload on a 1500-byte MTU path (IPv4).
const UDP_PAYLOAD: u16 = 1472;
const SOCKET_BUFFER: usize = 4 << 20;
/// A connection with nothing heard for this long is dropped (and a drain to a port
/// where nobody answers gives up after it).
const IDLE_TIMEOUT_MS: u32 = 10_000;
const ALPN: &[u8] = b"pure-drain";
pub(crate) const SERVER_NAME: &str = "localhost";
/// Application error code sent when the server rejects the stream's framing.
const BAD_FRAMING: u32 = 1;

// ---------------------------------------------------------------------------
// The drain byte stream

/// The client's stream: "pure", then N × (u32 BE length, body with byte i = i % 251).
/// After the preamble it repeats every 4 + SIZE bytes, so any CHUNK bytes starting at
/// an offset are a slice of `pat` (or of `head` for the first ones). Slices of a
/// `Bytes` share its one allocation: handing them to quinn copies nothing.
struct Source {
    period: u64,
    total: u64,
    head: bytes::Bytes,
    pat: bytes::Bytes,
}

impl Source {
    fn new(n: u64, size: u32) -> Source {
        let period = 4 + size as u64;
        // One period (length prefix + body), then copies of it up to period + CHUNK bytes.
        let want = (period + CHUNK as u64) as usize;
        let mut pat = Vec::with_capacity(want);
        pat.extend_from_slice(&size.to_be_bytes());
        pat.extend((0..size as usize).map(|i| (i % 251) as u8));
        while pat.len() < want {
            let take = (want - pat.len()).min(pat.len());
            pat.extend_from_within(..take);
        }
        let mut head = Vec::with_capacity(4 + CHUNK);
        head.extend_from_slice(PREAMBLE);
        head.extend_from_slice(&pat[..CHUNK]);
        Source { period, total: 4 + n * period, head: head.into(), pat: pat.into() }
    }

    /// Stream bytes from `off`, at most CHUNK of them (a reference, not a copy).
    fn at(&self, off: u64) -> bytes::Bytes {
        let len = (self.total - off).min(CHUNK as u64) as usize;
        if off < 4 {
            let s = off as usize;
            self.head.slice(s..s + len)
        } else {
            let s = ((off - 4) % self.period) as usize;
            self.pat.slice(s..s + len)
        }
    }
}

/// The server's parser: checks the preamble and every length (all equal to the
/// first, at most MAX_SIZE), counts messages and body bytes.
#[derive(Default)]
struct Sink {
    pre: usize,
    hdr: [u8; 4],
    hdr_have: usize,
    size: Option<u32>,
    body_left: u64,
    messages: u64,
    body_bytes: u64,
    total: u64,
}

impl Sink {
    fn fail(&self, what: &str, v: u64) -> String {
        format!(
            "{what} (value {v}, at stream byte {}, after {} messages)",
            self.total, self.messages
        )
    }

    fn length(&mut self, len: u32) -> Result<(), String> {
        if len as u64 > MAX_SIZE {
            return Err(self.fail("message length exceeds the 64 MiB limit", len as u64));
        }
        match self.size {
            None => self.size = Some(len),
            Some(s) if s != len => {
                return Err(self.fail(
                    "message length differs from the first message's (drain messages all have one size)",
                    len as u64,
                ))
            }
            Some(_) => {}
        }
        if len == 0 {
            self.messages += 1;
        } else {
            self.body_left = len as u64;
        }
        Ok(())
    }

    fn feed(&mut self, mut p: &[u8]) -> Result<(), String> {
        while !p.is_empty() {
            if let (Some(size), 0, 0) = (self.size, self.body_left, self.hdr_have) {
                // At a message boundary with the size known: walk whole messages,
                // checking each length prefix.
                let period = 4 + size as usize;
                let be = size.to_be_bytes();
                let (mut msgs, mut q) = (0u64, p);
                while q.len() >= period && q[..4] == be {
                    q = &q[period..];
                    msgs += 1;
                }
                if msgs > 0 {
                    self.messages += msgs;
                    self.body_bytes += msgs * size as u64;
                    self.total += msgs * period as u64;
                    p = q;
                    continue;
                }
            }
            if self.body_left > 0 {
                let t = self.body_left.min(p.len() as u64);
                self.body_left -= t;
                self.body_bytes += t;
                self.total += t;
                p = &p[t as usize..];
                if self.body_left == 0 {
                    self.messages += 1;
                }
            } else if self.pre < 4 {
                if p[0] != PREAMBLE[self.pre] {
                    return Err(self.fail("bad preamble byte (expected \"pure\")", p[0] as u64));
                }
                self.pre += 1;
                self.total += 1;
                p = &p[1..];
            } else if self.hdr_have == 0 && p.len() >= 4 {
                let len = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                self.length(len)?;
                self.total += 4;
                p = &p[4..];
            } else {
                self.hdr[self.hdr_have] = p[0];
                self.hdr_have += 1;
                self.total += 1;
                p = &p[1..];
                if self.hdr_have == 4 {
                    self.hdr_have = 0;
                    self.length(u32::from_be_bytes(self.hdr))?;
                }
            }
        }
        Ok(())
    }

    /// The stream ended: it must end on a message boundary after the preamble.
    fn end(&self) -> Result<(), String> {
        if self.pre < 4 {
            Err(self.fail("stream ended inside the preamble", self.pre as u64))
        } else if self.hdr_have != 0 {
            Err(self.fail("stream ended inside a length prefix", self.hdr_have as u64))
        } else if self.body_left != 0 {
            Err(self.fail("stream ended inside a message body; bytes missing", self.body_left))
        } else {
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------
// TLS: rustls through a QUIC session adapter that can report the negotiated suite.
//
// quinn-proto's own adapter (crypto::rustls::TlsSession) does not expose which cipher
// suite rustls negotiated. This adapter is the same code (rustls's QUIC API, the same
// rustls packet and header keys, so the per-packet path is unchanged) with the
// suite added to the handshake data.

/// What `Connection::handshake_data()` returns with this adapter.
struct DrainHandshake {
    suite: Option<String>,
    version: Option<String>,
}

struct Session {
    version: Version,
    got_handshake_data: bool,
    next_secrets: Option<Secrets>,
    inner: rustls::Connection,
}

fn interpret_version(version: u32) -> Result<Version, qcrypto::UnsupportedVersion> {
    match version {
        0xff00_001d..=0xff00_0020 => Ok(Version::V1Draft),
        0x0000_0001 | 0xff00_0021..=0xff00_0022 => Ok(Version::V1),
        _ => Err(qcrypto::UnsupportedVersion),
    }
}

fn params_to_vec(params: &TransportParameters) -> Vec<u8> {
    let mut v = Vec::new();
    params.write(&mut v);
    v
}

fn initial_keys(version: Version, dst_cid: &ConnectionId, side: Side) -> Keys {
    let keys = rustls::quic::Keys::initial(version, dst_cid, side.is_client());
    Keys {
        header: KeyPair { local: Box::new(keys.local.header), remote: Box::new(keys.remote.header) },
        packet: KeyPair { local: Box::new(keys.local.packet), remote: Box::new(keys.remote.packet) },
    }
}

const RETRY_KEY_DRAFT: [u8; 16] = [
    0xcc, 0xce, 0x18, 0x7e, 0xd0, 0x9a, 0x09, 0xd0, 0x57, 0x28, 0x15, 0x5a, 0x6c, 0xb9, 0x6b, 0xe1,
];
const RETRY_NONCE_DRAFT: [u8; 12] = [0xe5, 0x49, 0x30, 0xf9, 0x7f, 0x21, 0x36, 0xf0, 0x53, 0x0a, 0x8c, 0x1c];
const RETRY_KEY_V1: [u8; 16] = [
    0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e,
];
const RETRY_NONCE_V1: [u8; 12] = [0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb];

fn retry_key(version: Version) -> (ring::aead::LessSafeKey, ring::aead::Nonce) {
    let (nonce, key) = match version {
        Version::V1Draft => (RETRY_NONCE_DRAFT, RETRY_KEY_DRAFT),
        _ => (RETRY_NONCE_V1, RETRY_KEY_V1),
    };
    let key = ring::aead::UnboundKey::new(&ring::aead::AES_128_GCM, &key).expect("16-byte AES key");
    (ring::aead::LessSafeKey::new(key), ring::aead::Nonce::assume_unique_for_key(nonce))
}

impl Session {
    fn side(&self) -> Side {
        match self.inner {
            rustls::Connection::Client(_) => Side::Client,
            rustls::Connection::Server(_) => Side::Server,
        }
    }
}

impl qcrypto::Session for Session {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        initial_keys(self.version, dst_cid, side)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        if !self.got_handshake_data {
            return None;
        }
        Some(Box::new(DrainHandshake {
            suite: self.inner.negotiated_cipher_suite().map(|s| format!("{:?}", s.suite())),
            version: self.inner.protocol_version().map(|v| format!("{:?}", v)),
        }))
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_certificates().map(|v| -> Box<dyn Any> { Box::new(v.to_vec()) })
    }

    fn early_crypto(&self) -> Option<(Box<dyn qcrypto::HeaderKey>, Box<dyn qcrypto::PacketKey>)> {
        let keys = self.inner.zero_rtt_keys()?;
        Some((Box::new(keys.header), Box::new(keys.packet)))
    }

    fn early_data_accepted(&self) -> Option<bool> {
        match self.inner {
            rustls::Connection::Client(ref c) => Some(c.is_early_data_accepted()),
            _ => None,
        }
    }

    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.inner.read_hs(buf).map_err(|e| {
            // quinn-proto maps a TLS alert to the QUIC crypto error code 0x100 + alert,
            // but that constructor is crate-private; the alert goes into the reason.
            let reason = match self.inner.alert() {
                Some(alert) => format!("TLS error (alert {:?}): {}", alert, e),
                None => format!("TLS error: {}", e),
            };
            TransportError { code: TransportErrorCode::PROTOCOL_VIOLATION, frame: None, reason }
        })?;
        if !self.got_handshake_data {
            // As in quinn-proto: rustls gives no explicit signal that the ClientHello
            // (server) or ALPN (client) is in, so infer it.
            let have_server_name = match self.inner {
                rustls::Connection::Client(_) => false,
                rustls::Connection::Server(ref s) => s.sni_hostname().is_some(),
            };
            if self.inner.alpn_protocol().is_some() || have_server_name || !self.is_handshaking() {
                self.got_handshake_data = true;
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        match self.inner.quic_transport_parameters() {
            None => Ok(None),
            Some(buf) => match TransportParameters::read(self.side(), &mut io::Cursor::new(buf)) {
                Ok(params) => Ok(Some(params)),
                Err(e) => Err(e.into()),
            },
        }
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let keys = match self.inner.write_hs(buf)? {
            KeyChange::Handshake { keys } => keys,
            KeyChange::OneRtt { keys, next } => {
                self.next_secrets = Some(next);
                keys
            }
        };
        Some(Keys {
            header: KeyPair { local: Box::new(keys.local.header), remote: Box::new(keys.remote.header) },
            packet: KeyPair { local: Box::new(keys.local.packet), remote: Box::new(keys.remote.packet) },
        })
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn qcrypto::PacketKey>>> {
        let secrets = self.next_secrets.as_mut()?;
        let keys = secrets.next_packet_keys();
        Some(KeyPair { local: Box::new(keys.local), remote: Box::new(keys.remote) })
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        let tag_start = match payload.len().checked_sub(16) {
            Some(x) => x,
            None => return false,
        };
        let mut pseudo = Vec::with_capacity(header.len() + payload.len() + orig_dst_cid.len() + 1);
        pseudo.push(orig_dst_cid.len() as u8);
        pseudo.extend_from_slice(orig_dst_cid);
        pseudo.extend_from_slice(header);
        let tag_start = tag_start + pseudo.len();
        pseudo.extend_from_slice(payload);
        let (key, nonce) = retry_key(self.version);
        let (aad, tag) = pseudo.split_at_mut(tag_start);
        key.open_in_place(nonce, ring::aead::Aad::from(aad), tag).is_ok()
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner
            .export_keying_material(output, label, Some(context))
            .map(|_| ())
            .map_err(|_| ExportKeyingMaterialError)
    }
}

pub(crate) struct ClientTls(Arc<rustls::ClientConfig>);

impl qcrypto::ClientConfig for ClientTls {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn qcrypto::Session>, ConnectError> {
        let version = interpret_version(version)?;
        let name = server_name
            .try_into()
            .map_err(|_| ConnectError::InvalidDnsName(server_name.into()))?;
        let conn = rustls::ClientConnection::new_quic(self.0.clone(), version, name, params_to_vec(params))
            .map_err(|e| ConnectError::InvalidDnsName(format!("{server_name}: rustls refused the client config: {e}")))?;
        Ok(Box::new(Session {
            version,
            got_handshake_data: false,
            next_secrets: None,
            inner: rustls::Connection::Client(conn),
        }))
    }
}

pub(crate) struct ServerTls(Arc<rustls::ServerConfig>);

impl qcrypto::ServerConfig for ServerTls {
    fn initial_keys(&self, version: u32, dst_cid: &ConnectionId, side: Side) -> Result<Keys, qcrypto::UnsupportedVersion> {
        Ok(initial_keys(interpret_version(version)?, dst_cid, side))
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        // Only called for versions initial_keys accepted.
        let version = interpret_version(version).unwrap_or(Version::V1);
        let mut pseudo = Vec::with_capacity(packet.len() + orig_dst_cid.len() + 1);
        pseudo.push(orig_dst_cid.len() as u8);
        pseudo.extend_from_slice(orig_dst_cid);
        pseudo.extend_from_slice(packet);
        let (key, nonce) = retry_key(version);
        let tag = key
            .seal_in_place_separate_tag(nonce, ring::aead::Aad::from(pseudo), &mut [])
            .expect("sealing an empty retry payload");
        let mut out = [0u8; 16];
        out.copy_from_slice(tag.as_ref());
        out
    }

    fn start_session(self: Arc<Self>, version: u32, params: &TransportParameters) -> Box<dyn qcrypto::Session> {
        // quinn-proto calls this only after initial_keys accepted `version`, and
        // new_quic only fails for configs without TLS 1.3, which this one has.
        let version = interpret_version(version).unwrap_or(Version::V1);
        let conn = rustls::ServerConnection::new_quic(self.0.clone(), version, params_to_vec(params))
            .expect("rustls server config supports TLS 1.3");
        Box::new(Session {
            version,
            got_handshake_data: false,
            next_secrets: None,
            inner: rustls::Connection::Server(conn),
        })
    }
}

/// Accepts the server's certificate if its SHA-256 matches the pinned one (or any
/// certificate when no pin was given: a loopback benchmark). The handshake signature
/// is still checked against the certificate's key by rustls's default methods.
pub(crate) struct PinVerifier {
    sha256: Option<[u8; 32]>,
}

impl rustls::client::ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::Certificate,
        _intermediates: &[rustls::Certificate],
        _server_name: &rustls::ServerName,
        _scts: &mut dyn Iterator<Item = &[u8]>,
        _ocsp_response: &[u8],
        _now: SystemTime,
    ) -> Result<rustls::client::ServerCertVerified, rustls::Error> {
        if let Some(want) = &self.sha256 {
            let got = ring::digest::digest(&ring::digest::SHA256, &end_entity.0);
            if got.as_ref() != want {
                return Err(rustls::Error::General(
                    "server certificate SHA-256 does not match --cert-sha256".into(),
                ));
            }
        }
        Ok(rustls::client::ServerCertVerified::assertion())
    }

    fn request_scts(&self) -> bool {
        false
    }
}

pub(crate) static SUITES: &[rustls::SupportedCipherSuite] = &[rustls::cipher_suite::TLS13_AES_128_GCM_SHA256];

/// Makes a self-signed P-256 certificate with the openssl CLI in a private temp
/// directory, loads it, and removes the files.
pub(crate) fn make_cert() -> Result<(rustls::Certificate, rustls::PrivateKey), String> {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("pure-quinn-{}-{}", std::process::id(), nanos));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create temp dir {}: {e}", dir.display()))?;
    }
    let key_path = dir.join("key.pem");
    let cert_path = dir.join("cert.pem");
    let result = (|| {
        let out = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
            .arg("-keyout")
            .arg(&key_path)
            .arg("-out")
            .arg(&cert_path)
            .output()
            .map_err(|e| format!("cannot run the openssl CLI to make a certificate ({e}); apt-get install openssl"))?;
        if !out.status.success() {
            return Err(format!(
                "openssl req failed making the self-signed certificate: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let cert_pem = std::fs::read(&cert_path).map_err(|e| format!("reading {}: {e}", cert_path.display()))?;
        let key_pem = std::fs::read(&key_path).map_err(|e| format!("reading {}: {e}", key_path.display()))?;
        let cert = rustls_pemfile::certs(&mut &cert_pem[..])
            .map_err(|e| format!("parsing the certificate PEM: {e}"))?
            .into_iter()
            .next()
            .ok_or("openssl wrote no certificate")?;
        let key = rustls_pemfile::pkcs8_private_keys(&mut &key_pem[..])
            .map_err(|e| format!("parsing the private key PEM: {e}"))?
            .into_iter()
            .next()
            .ok_or("openssl wrote no PKCS#8 private key")?;
        Ok((rustls::Certificate(cert), rustls::PrivateKey(key)))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

// ---------------------------------------------------------------------------
// QUIC configuration

fn transport_config() -> Arc<quinn::TransportConfig> {
    Arc::new(transport(IDLE_TIMEOUT_MS))
}

/// The transport settings every mode shares: 1472-byte datagrams, 16 MiB stream and 64 MiB
/// connection receive windows, a 64 MiB send window, no unidirectional streams, and the
/// given idle timeout.
pub(crate) fn transport(idle_timeout_ms: u32) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.initial_max_udp_payload_size(UDP_PAYLOAD)
        .stream_receive_window(quinn::VarInt::from_u32(16 << 20))
        .receive_window(quinn::VarInt::from_u32(64 << 20))
        .send_window(64 << 20)
        .max_concurrent_uni_streams(quinn::VarInt::from_u32(0))
        .max_idle_timeout(Some(quinn::IdleTimeout::from(quinn::VarInt::from_u32(idle_timeout_ms))));
    t
}

pub(crate) fn endpoint_config() -> Result<quinn::EndpointConfig, String> {
    let mut e = quinn::EndpointConfig::default();
    e.max_udp_payload_size(UDP_PAYLOAD as u64)
        .map_err(|e| format!("max_udp_payload_size: {e}"))?;
    Ok(e)
}

/// A UDP socket on 127.0.0.1 with 4 MiB buffers, ready for quinn.
pub(crate) fn udp_socket(port: u16) -> Result<std::net::UdpSocket, String> {
    udp_socket_with(port, SOCKET_BUFFER, false)
}

extern "C" {
    fn setsockopt(fd: i32, level: i32, name: i32, value: *const std::ffi::c_void, len: u32) -> i32;
}

/// A UDP socket on 127.0.0.1 with `buffer`-byte send and receive buffers, ready for quinn.
/// With `force`, SO_RCVBUFFORCE / SO_SNDBUFFORCE first (past net.core.[rw]mem_max; needs
/// CAP_NET_ADMIN), as Pure's own socket does (src/io/udp.c); the capped options otherwise.
pub(crate) fn udp_socket_with(port: u16, buffer: usize, force: bool) -> Result<std::net::UdpSocket, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    use std::os::unix::io::AsRawFd;
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(|e| format!("socket: {e}"))?;
    let forced = |name: i32| {
        let v = buffer.min(i32::MAX as usize) as i32;
        // SAFETY: setsockopt reads an int from the pointer; the fd is the socket above.
        force && unsafe { setsockopt(s.as_raw_fd(), 1, name, &v as *const i32 as *const _, 4) } == 0
    };
    const SO_SNDBUFFORCE: i32 = 32;
    const SO_RCVBUFFORCE: i32 = 33;
    if !forced(SO_RCVBUFFORCE) {
        s.set_recv_buffer_size(buffer).map_err(|e| format!("SO_RCVBUF: {e}"))?;
    }
    if !forced(SO_SNDBUFFORCE) {
        s.set_send_buffer_size(buffer).map_err(|e| format!("SO_SNDBUF: {e}"))?;
    }
    let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    s.bind(&addr.into()).map_err(|e| format!("bind {addr}: {e}"))?;
    s.set_nonblocking(true).map_err(|e| format!("O_NONBLOCK: {e}"))?;
    // Linux doubles the value asked for and caps it at net.core.[rw]mem_max.
    let (r, w) = (s.recv_buffer_size().unwrap_or(0), s.send_buffer_size().unwrap_or(0));
    if r < buffer || w < buffer {
        eprintln!(
            "quinn: note: socket buffers are {r}/{w} bytes (receive/send), less than {} MiB: raise net.core.rmem_max / wmem_max",
            buffer >> 20
        );
    }
    Ok(s.into())
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

static SUITE_PRINTED: AtomicBool = AtomicBool::new(false);

pub(crate) fn print_suite_once(who: &str, conn: &quinn::Connection) {
    if SUITE_PRINTED.swap(true, Ordering::Relaxed) {
        return;
    }
    let hd = conn.handshake_data();
    match hd.as_ref().and_then(|b| b.downcast_ref::<DrainHandshake>()) {
        Some(h) => eprintln!(
            "quinn {who}: negotiated {} {}",
            h.version.as_deref().unwrap_or("(unknown version)"),
            h.suite.as_deref().unwrap_or("(no cipher suite)")
        ),
        None => eprintln!("quinn {who}: handshake data not available"),
    }
}

/// With --stats: datagrams, GSO transmits, losses and RTT to stderr.
fn print_stats(who: &str, conn: &quinn::Connection) {
    let s = conn.stats();
    let avg = |bytes: u64, n: u64| if n == 0 { 0 } else { bytes / n };
    eprintln!(
        "quinn {who}: tx {} datagrams in {} sendmsg ({} B avg datagram), rx {} datagrams ({} B avg); \
         sent packets {}, lost packets {}, congestion events {}, cwnd {} B, rtt {:?}; ack frames tx {} rx {}",
        s.udp_tx.datagrams,
        s.udp_tx.transmits,
        avg(s.udp_tx.bytes, s.udp_tx.datagrams),
        s.udp_rx.datagrams,
        avg(s.udp_rx.bytes, s.udp_rx.datagrams),
        s.path.sent_packets,
        s.path.lost_packets,
        s.path.congestion_events,
        s.path.cwnd,
        s.path.rtt,
        s.frame_tx.acks,
        s.frame_rx.acks,
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------------------
// serve

/// The server's TLS side: a fresh self-signed certificate, TLS 1.3 with SUITES only, the
/// given ALPN, no early data; without `resumption` no session storage either (every
/// handshake a full one). Returns it with the certificate's SHA-256 in hex.
pub(crate) fn server_crypto(alpn: &[u8], resumption: bool) -> Result<(Arc<ServerTls>, String), String> {
    let (cert, key) = make_cert()?;
    let fingerprint = hex(ring::digest::digest(&ring::digest::SHA256, &cert.0).as_ref());
    let mut tls = rustls::ServerConfig::builder()
        .with_cipher_suites(SUITES)
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("rustls server config: {e}"))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| format!("rustls server certificate: {e}"))?;
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls.max_early_data_size = 0;
    if !resumption {
        tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        tls.send_half_rtt_data = false;
    }
    Ok((Arc::new(ServerTls(Arc::new(tls))), fingerprint))
}

fn cmd_serve(stats: bool, echo: bool) -> Result<(), String> {
    // With --echo every handshake is a full one (the handshakes experiment): no resumption.
    let (crypto, fingerprint) = server_crypto(ALPN, !echo)?;
    let mut server = quinn::ServerConfig::with_crypto(crypto);
    server.transport_config(transport_config());
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    rt.block_on(async move {
        let endpoint = quinn::Endpoint::new(endpoint_config()?, Some(server), socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let port = endpoint.local_addr().map_err(|e| format!("local_addr: {e}"))?.port();
        {
            use std::io::Write;
            let mut out = io::stdout().lock();
            let service = if echo { "echo" } else { "drain" };
            writeln!(out, "{{\"port\": {port}, \"service\": \"{service}\", \"cert_sha256\": \"{fingerprint}\"}}")
                .and_then(|_| out.flush())
                .map_err(|e| format!("writing the port line to stdout: {e}"))?;
        }
        while let Some(connecting) = endpoint.accept().await {
            // Each connection is a task, so a client that vanishes without closing
            // does not hold up the next one until its idle timeout.
            tokio::spawn(async move {
                let peer = connecting.remote_address();
                let r = if echo { serve_echo_conn(connecting).await } else { serve_conn(connecting, stats).await };
                if let Err(e) = r {
                    eprintln!("quinn serve: connection from {peer}: {e}");
                }
            });
        }
        Err("endpoint closed".to_string())
    })
}

async fn serve_conn(connecting: quinn::Connecting, stats: bool) -> Result<(), String> {
    let conn = connecting.await.map_err(|e| format!("handshake failed: {e}"))?;
    print_suite_once("serve", &conn);
    let (mut send, mut recv) = conn.accept_bi().await.map_err(|e| format!("waiting for the stream: {e}"))?;
    let mut sink = Sink::default();
    // Up to READ_BATCH received segments per call, each a reference into the
    // decrypted packet (no copy).
    let mut bufs: Vec<bytes::Bytes> = vec![bytes::Bytes::new(); READ_BATCH];
    loop {
        match recv.read_chunks(&mut bufs).await {
            Ok(Some(k)) => {
                for b in &mut bufs[..k] {
                    let r = sink.feed(b);
                    *b = bytes::Bytes::new();
                    if let Err(e) = r {
                        conn.close(quinn::VarInt::from_u32(BAD_FRAMING), e.as_bytes());
                        return Err(format!("bad stream: {e}"));
                    }
                }
            }
            Ok(None) => break,
            Err(e) => return Err(format!("reading the stream: {e}")),
        }
    }
    if let Err(e) = sink.end() {
        conn.close(quinn::VarInt::from_u32(BAD_FRAMING), e.as_bytes());
        return Err(format!("bad stream: {e}"));
    }
    send.write_all(&sink.messages.to_be_bytes())
        .await
        .map_err(|e| format!("sending the count: {e}"))?;
    // Completes once the client has acknowledged the count.
    send.finish().await.map_err(|e| format!("finishing the reply: {e}"))?;
    if stats {
        print_stats("serve", &conn);
    }
    // The client closes the connection once it has read the count.
    conn.closed().await;
    Ok(())
}

// ---------------------------------------------------------------------------
// drain

pub(crate) fn parse_u64(what: &str, s: &str, min: u64, max: u64) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if v >= min && v <= max => Ok(v),
        _ => Err(format!("{what} must be {min}..{max}, got '{s}'")),
    }
}

pub(crate) fn parse_pin(s: &str) -> Result<[u8; 32], String> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return Err("--cert-sha256 needs 64 hex digits".into());
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        let hx = std::str::from_utf8(&b[2 * i..2 * i + 2]).map_err(|_| "--cert-sha256 needs 64 hex digits".to_string())?;
        *o = u8::from_str_radix(hx, 16).map_err(|_| "--cert-sha256 needs 64 hex digits".to_string())?;
    }
    Ok(out)
}

/// Options of `drain` beyond PORT N SIZE.
#[derive(Default)]
struct DrainOpts {
    /// The server certificate's SHA-256 (from the server's JSON line).
    pin: Option<[u8; 32]>,
    /// Use write_all(&[u8]) (quinn copies every chunk into a new buffer) instead of
    /// write_chunk(Bytes) (quinn keeps a reference into the pattern).
    write_all: bool,
    stats: bool,
}

fn cmd_drain(port: u16, n: u64, size: u32, opts: DrainOpts) -> Result<bool, String> {
    let src = Source::new(n, size);
    let mut tls = rustls::ClientConfig::builder()
        .with_cipher_suites(SUITES)
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("rustls client config: {e}"))?
        .with_custom_certificate_verifier(Arc::new(PinVerifier { sha256: opts.pin }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = false;
    let mut client = quinn::ClientConfig::new(Arc::new(ClientTls(Arc::new(tls))));
    client.transport_config(transport_config());
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    rt.block_on(async move {
        let endpoint = quinn::Endpoint::new(endpoint_config()?, None, socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        let t0 = Instant::now();
        let conn = endpoint
            .connect_with(client, addr, SERVER_NAME)
            .map_err(|e| format!("connect to {addr}: {e}"))?
            .await
            .map_err(|e| format!("QUIC handshake with {addr}: {e}"))?;
        print_suite_once("drain", &conn);
        let (mut send, recv) = conn.open_bi().await.map_err(|e| format!("opening the stream: {e}"))?;
        let mut off = 0u64;
        while off < src.total {
            let b = src.at(off);
            let len = b.len() as u64;
            if opts.write_all {
                send.write_all(&b).await
            } else {
                send.write_chunk(b).await
            }
            .map_err(|e| format!("sending at stream byte {off}: {e}"))?;
            off += len;
        }
        send.finish().await.map_err(|e| format!("finishing the stream: {e}"))?;
        let reply = recv
            .read_to_end(8)
            .await
            .map_err(|e| format!("reading the server's count: {e}"))?;
        let secs = t0.elapsed().as_secs_f64();
        if reply.len() != 8 {
            return Err(format!(
                "the server's reply was {} bytes, expected an 8-byte count",
                reply.len()
            ));
        }
        let m = u64::from_be_bytes(reply[..8].try_into().expect("8 bytes"));
        if opts.stats {
            print_stats("drain", &conn);
        }
        conn.close(quinn::VarInt::from_u32(0), b"done");
        println!(
            "{{\"messages\": {n}, \"size\": {size}, \"bytes\": {}, \"seconds\": {secs:.6}, \"server_messages\": {m}}}",
            src.total
        );
        {
            use std::io::Write;
            let _ = io::stdout().flush();
        }
        // Let the endpoint send the CONNECTION_CLOSE before the process exits.
        let _ = tokio::time::timeout(Duration::from_millis(250), endpoint.wait_idle()).await;
        if m != n {
            eprintln!("quinn drain: server counted {m} messages, sent {n}");
            return Ok(false);
        }
        Ok(true)
    })
}

// ---------------------------------------------------------------------------
// serve --echo, ping and handshakes (the latency and handshakes experiments)

/// Largest message the echo server takes.
const ECHO_MAX: usize = 1 << 20;
/// The handshakes experiment's one message.
const HS_SIZE: u32 = 61;

/// Echo server side of one connection: checks the preamble, then sends every whole
/// frame (u32 BE length + body) back as it arrives; finishes when the client does.
async fn serve_echo_conn(connecting: quinn::Connecting) -> Result<(), String> {
    let conn = connecting.await.map_err(|e| format!("handshake failed: {e}"))?;
    print_suite_once("serve", &conn);
    let closed_ok = |e: &quinn::ConnectionError| {
        matches!(e, quinn::ConnectionError::ApplicationClosed(a) if a.error_code == quinn::VarInt::from_u32(0))
    };
    let (mut send, mut recv) = match conn.accept_bi().await {
        Ok(s) => s,
        Err(e) if closed_ok(&e) => return Ok(()),
        Err(e) => return Err(format!("waiting for the stream: {e}")),
    };
    let mut acc: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut pre = 0usize;
    loop {
        let got = match recv.read(&mut buf).await {
            Ok(Some(k)) => k,
            Ok(None) => break,
            Err(quinn::ReadError::ConnectionLost(e)) if closed_ok(&e) => return Ok(()),
            Err(e) => return Err(format!("reading the stream: {e}")),
        };
        let mut p = &buf[..got];
        while pre < 4 && !p.is_empty() {
            if p[0] != PREAMBLE[pre] {
                conn.close(quinn::VarInt::from_u32(BAD_FRAMING), b"bad preamble");
                return Err(format!("bad preamble byte {pre}"));
            }
            pre += 1;
            p = &p[1..];
        }
        acc.extend_from_slice(p);
        let mut off = 0usize;
        while acc.len() - off >= 4 {
            let len = u32::from_be_bytes(acc[off..off + 4].try_into().expect("4 bytes")) as usize;
            if len > ECHO_MAX {
                conn.close(quinn::VarInt::from_u32(BAD_FRAMING), b"message over the echo limit");
                return Err(format!("message of {len} bytes is over the echo limit"));
            }
            if acc.len() - off < 4 + len {
                break;
            }
            off += 4 + len;
        }
        if off > 0 {
            match send.write_all(&acc[..off]).await {
                Ok(()) => {}
                Err(quinn::WriteError::ConnectionLost(e)) if closed_ok(&e) => return Ok(()),
                Err(e) => return Err(format!("sending an echo: {e}")),
            }
            acc.drain(..off);
        }
    }
    let _ = send.finish().await;
    conn.closed().await;
    Ok(())
}

/// The client's TLS side: TLS 1.3 with SUITES only, the server certificate pinned (or any
/// with no pin), the given ALPN, no early data, no session cache and no tickets (every
/// handshake a full one).
pub(crate) fn client_crypto(pin: Option<[u8; 32]>, alpn: &[u8]) -> Result<Arc<ClientTls>, String> {
    let mut tls = rustls::ClientConfig::builder()
        .with_cipher_suites(SUITES)
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("rustls client config: {e}"))?
        .with_custom_certificate_verifier(Arc::new(PinVerifier { sha256: pin }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls.enable_early_data = false;
    tls.session_storage = Arc::new(rustls::client::NoClientSessionStorage {});
    tls.enable_tickets = false;
    Ok(Arc::new(ClientTls(Arc::new(tls))))
}

fn client_config(pin: Option<[u8; 32]>) -> Result<quinn::ClientConfig, String> {
    let mut client = quinn::ClientConfig::new(client_crypto(pin, ALPN)?);
    client.transport_config(transport_config());
    Ok(client)
}

/// "pure" + one frame (u32 BE length, body byte i = i % 251).
fn first_frame(size: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + size as usize);
    f.extend_from_slice(PREAMBLE);
    f.extend_from_slice(&size.to_be_bytes());
    f.extend((0..size as usize).map(|i| (i % 251) as u8));
    f
}

/// The q-quantile of sorted nanoseconds (nearest rank), in µs.
fn quantile_us(v: &[u64], q: f64) -> f64 {
    let n = v.len();
    let k = ((q * n as f64 + 0.999999) as usize).clamp(1, n);
    v[k - 1] as f64 / 1e3
}

fn cmd_ping(port: u16, n: u64, size: u32, pin: Option<[u8; 32]>) -> Result<bool, String> {
    let client = client_config(pin)?;
    let frame = first_frame(size);
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    rt.block_on(async move {
        let endpoint = quinn::Endpoint::new(endpoint_config()?, None, socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        let conn = endpoint
            .connect_with(client, addr, SERVER_NAME)
            .map_err(|e| format!("connect to {addr}: {e}"))?
            .await
            .map_err(|e| format!("QUIC handshake with {addr}: {e}"))?;
        print_suite_once("ping", &conn);
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| format!("opening the stream: {e}"))?;
        let mut back = vec![0u8; 4 + size as usize];
        let mut rtt: Vec<u64> = Vec::with_capacity(n as usize);
        let mut mismatches = 0u64;
        for i in 0..n {
            let t = Instant::now();
            let msg = if i == 0 { &frame[..] } else { &frame[4..] };
            send.write_all(msg).await.map_err(|e| format!("sending message {i}: {e}"))?;
            recv.read_exact(&mut back).await.map_err(|e| format!("reading echo {i}: {e}"))?;
            rtt.push(t.elapsed().as_nanos() as u64);
            if back[..] != frame[4..] {
                mismatches += 1;
                if mismatches <= 3 {
                    eprintln!("quinn ping: echo {i} differs from what was sent");
                }
            }
        }
        conn.close(quinn::VarInt::from_u32(0), b"done");
        let secs = rtt.iter().sum::<u64>() as f64 / 1e9;
        let mean = secs * 1e6 / n as f64;
        rtt.sort_unstable();
        println!(
            "{{\"round_trips\": {n}, \"size\": {size}, \"echoes\": {}, \"mismatches\": {mismatches}, \
             \"seconds\": {secs:.6}, \"mean_us\": {mean:.2}, \"min_us\": {:.2}, \"p50_us\": {:.2}, \
             \"p90_us\": {:.2}, \"p99_us\": {:.2}, \"max_us\": {:.2}}}",
            rtt.len(),
            quantile_us(&rtt, 0.0),
            quantile_us(&rtt, 0.5),
            quantile_us(&rtt, 0.9),
            quantile_us(&rtt, 0.99),
            quantile_us(&rtt, 1.0)
        );
        {
            use std::io::Write;
            let _ = io::stdout().flush();
        }
        let _ = tokio::time::timeout(Duration::from_millis(250), endpoint.wait_idle()).await;
        Ok(mismatches == 0)
    })
}

fn cmd_handshakes(port: u16, n: u64, pin: Option<[u8; 32]>) -> Result<bool, String> {
    let client = client_config(pin)?;
    let frame = first_frame(HS_SIZE);
    let socket = udp_socket(0)?;
    let rt = runtime()?;
    rt.block_on(async move {
        let endpoint = quinn::Endpoint::new(endpoint_config()?, None, socket, quinn::TokioRuntime)
            .map_err(|e| format!("quinn endpoint: {e}"))?;
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        let mut back = vec![0u8; 4 + HS_SIZE as usize];
        let mut lat: Vec<u64> = Vec::with_capacity(n as usize);
        let mut mismatches = 0u64;
        let t0 = Instant::now();
        for i in 0..n {
            let t = Instant::now();
            let conn = endpoint
                .connect_with(client.clone(), addr, SERVER_NAME)
                .map_err(|e| format!("connect to {addr}: {e}"))?
                .await
                .map_err(|e| format!("connection {i}: QUIC handshake with {addr}: {e}"))?;
            print_suite_once("handshakes", &conn);
            let (mut send, mut recv) =
                conn.open_bi().await.map_err(|e| format!("connection {i}: opening the stream: {e}"))?;
            send.write_all(&frame).await.map_err(|e| format!("connection {i}: sending: {e}"))?;
            recv.read_exact(&mut back).await.map_err(|e| format!("connection {i}: reading the echo: {e}"))?;
            if back[..] != frame[4..] {
                mismatches += 1;
                if mismatches <= 3 {
                    eprintln!("quinn handshakes: connection {i}'s echo differs from what was sent");
                }
            }
            lat.push(t.elapsed().as_nanos() as u64);
            conn.close(quinn::VarInt::from_u32(0), b"done"); // no waiting for the server
        }
        let secs = t0.elapsed().as_secs_f64();
        let mean = lat.iter().sum::<u64>() as f64 / n as f64 / 1e3;
        lat.sort_unstable();
        println!(
            "{{\"handshakes\": {n}, \"size\": {HS_SIZE}, \"ok\": {}, \"mismatches\": {mismatches}, \
             \"seconds\": {secs:.6}, \"per_second\": {:.1}, \"mean_us\": {mean:.1}, \"p50_us\": {:.1}, \
             \"p99_us\": {:.1}}}",
            n - mismatches,
            n as f64 / secs,
            quantile_us(&lat, 0.5),
            quantile_us(&lat, 0.99)
        );
        {
            use std::io::Write;
            let _ = io::stdout().flush();
        }
        let _ = tokio::time::timeout(Duration::from_millis(250), endpoint.wait_idle()).await;
        Ok(mismatches == 0)
    })
}

fn usage() -> &'static str {
    "usage: quinn serve [--stats] [--echo]\n       quinn drain PORT N SIZE [--cert-sha256 HEX] [--write-all] [--stats]\n\
     \x20      quinn ping PORT N SIZE [--cert-sha256 HEX]\n\
     \x20      quinn handshakes PORT N [--cert-sha256 HEX]\n\
     \x20      quinn idle --links K --idle SECONDS [--keepalive SECONDS] [--json]\n\
     \x20      quinn hol-serve\n\
     \x20      quinn hol-client PORT [--cert-sha256 HEX] --mode alone|same|separate [--duration S] [--warmup S]\n\
     \x20                       [--rate N] [--size 8..64] [--bulk N] [--send-window BYTES]\n\
     \x20      quinn rpc-serve [--threads N] [--corrupt-every N] [--drop-every N]\n\
     \x20      quinn rpc-client PORT [--cert-sha256 HEX] --links L --outstanding P --size S --duration SEC\n\
     \x20                       [--warmup SEC] [--drain-timeout SEC] [--rate R] [--fanin N]\n\
     QUIC (quinn 0.9, rustls, TLS_AES_128_GCM_SHA256) drain peer for Pure's benchmark.\n\
     --cert-sha256 HEX  pin the server certificate (serve prints it as cert_sha256)\n\
     --write-all        send with write_all(&[u8]) (a copy per chunk) instead of write_chunk(Bytes)\n\
     --stats            print quinn's connection stats (datagrams, GSO transmits, losses) to stderr\n\
     serve --echo       send every message back (latency, handshakes; no TLS resumption)\n\
     ping               one connection, N round trips of one SIZE-byte message, each echo checked\n\
     handshakes         N connections one after another: full handshake, one 61-byte message, its echo, close\n\
     hol-serve/-client  the head-of-line benchmark (bench/README.md, \"hol\"; src/hol.rs)\n\
     rpc-serve/-client  the RPC workload (bench/README.md, \"RPC\"; src/rpc.rs)\n"
}

fn run(args: &[String]) -> Result<bool, (u8, String)> {
    let usage_err = |what: String| (2, format!("quinn: {what}\n{}", usage().trim_end()));
    match args.first().map(String::as_str) {
        Some("serve") => {
            let (mut stats, mut echo) = (false, false);
            for a in &args[1..] {
                match a.as_str() {
                    "--stats" => stats = true,
                    "--echo" => echo = true,
                    _ => return Err(usage_err(format!("serve: unknown argument '{a}'"))),
                }
            }
            cmd_serve(stats, echo).map(|_| true).map_err(|e| (1, format!("quinn serve: {e}")))
        }
        Some("drain") => {
            let bad = |e: String| (2, format!("quinn drain: {e}"));
            if args.len() < 4 {
                return Err(usage_err("drain needs PORT N SIZE".into()));
            }
            let port = parse_u64("PORT", &args[1], 1, 65535).map_err(bad)? as u16;
            let n = parse_u64("N", &args[2], 0, 1 << 40).map_err(bad)?;
            let size = parse_u64("SIZE (bytes)", &args[3], 0, MAX_SIZE).map_err(bad)? as u32;
            let mut opts = DrainOpts::default();
            let mut rest = args[4..].iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--cert-sha256" => {
                        let v = rest.next().ok_or_else(|| bad("--cert-sha256 needs a value".into()))?;
                        opts.pin = Some(parse_pin(v).map_err(bad)?);
                    }
                    "--write-all" => opts.write_all = true,
                    "--stats" => opts.stats = true,
                    _ => return Err(usage_err(format!("drain: unknown argument '{a}'"))),
                }
            }
            cmd_drain(port, n, size, opts).map_err(|e| (1, format!("quinn drain: {e}")))
        }
        Some(cmd @ ("ping" | "handshakes")) => {
            let bad = |e: String| (2, format!("quinn {cmd}: {e}"));
            let npos = if cmd == "ping" { 3 } else { 2 };
            if args.len() < 1 + npos || args[1..1 + npos].iter().any(|a| a.starts_with('-')) {
                return Err(usage_err(format!("{cmd} needs PORT N{}", if cmd == "ping" { " SIZE" } else { "" })));
            }
            let port = parse_u64("PORT", &args[1], 1, 65535).map_err(bad)? as u16;
            let n = parse_u64("N", &args[2], 1, 100_000_000).map_err(bad)?;
            let size = if cmd == "ping" {
                parse_u64("SIZE (bytes)", &args[3], 0, ECHO_MAX as u64).map_err(bad)? as u32
            } else {
                HS_SIZE
            };
            let mut pin = None;
            let mut rest = args[1 + npos..].iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--cert-sha256" => {
                        let v = rest.next().ok_or_else(|| bad("--cert-sha256 needs a value".into()))?;
                        pin = Some(parse_pin(v).map_err(bad)?);
                    }
                    _ => return Err(usage_err(format!("{cmd}: unknown argument '{a}'"))),
                }
            }
            let r = if cmd == "ping" { cmd_ping(port, n, size, pin) } else { cmd_handshakes(port, n, pin) };
            r.map_err(|e| (1, format!("quinn {cmd}: {e}")))
        }
        Some("rpc-serve") => {
            let o = rpc::parse_serve(&args[1..])?;
            rpc::cmd_rpc_serve(o).map(|_| true).map_err(|e| (1, format!("quinn rpc-serve: {e}")))
        }
        Some("rpc-client") => {
            let o = rpc::parse_client(&args[1..])?;
            rpc::cmd_rpc_client(o).map_err(|e| (1, format!("quinn rpc-client: {e}")))
        }
        Some("hol-serve") => {
            if args.len() > 1 {
                return Err(usage_err(format!("hol-serve: unknown argument '{}'", args[1])));
            }
            hol::cmd_hol_serve().map(|_| true).map_err(|e| (1, format!("quinn hol-serve: {e}")))
        }
        Some("hol-client") => {
            let o = hol::parse_client(&args[1..])?;
            hol::cmd_hol_client(o).map_err(|e| (1, format!("quinn hol-client: {e}")))
        }
        Some("idle-serve") => idle::cmd_idle_serve().map(|_| true).map_err(|e| (1, format!("quinn idle-serve: {e}"))),
        Some("idle") => {
            let bad = |e: String| (2, format!("quinn idle: {e}"));
            let mut o = idle::IdleOpts { links: 0, idle: -1.0, keepalive: None, json: false };
            let mut rest = args[1..].iter();
            let secs = |v: Option<&String>, what: &str| -> Result<f64, (u8, String)> {
                v.and_then(|s| s.parse::<f64>().ok())
                    .filter(|x| x.is_finite() && *x >= 0.0 && *x <= 86400.0)
                    .ok_or_else(|| (2, format!("quinn idle: {what} takes seconds")))
            };
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--links" => {
                        let v = rest.next().ok_or_else(|| bad("--links needs a count".into()))?;
                        o.links = parse_u64("--links", v, 1, 1_000_000).map_err(bad)?;
                    }
                    "--idle" => o.idle = secs(rest.next(), "--idle")?,
                    "--keepalive" => {
                        let v = secs(rest.next(), "--keepalive")?;
                        if v <= 0.0 {
                            return Err(bad("--keepalive takes seconds above 0".into()));
                        }
                        o.keepalive = Some(v);
                    }
                    "--json" => o.json = true,
                    _ => return Err(usage_err(format!("idle: unknown argument '{a}'"))),
                }
            }
            if o.links == 0 || o.idle < 0.0 {
                return Err(usage_err("idle needs --links K and --idle SECONDS".into()));
            }
            idle::cmd_idle(o).map_err(|e| (1, format!("quinn idle: {e}")))
        }
        Some("-h") | Some("--help") | Some("help") => {
            print!("{}", usage());
            Ok(true)
        }
        Some(other) => Err(usage_err(format!("unknown command '{other}'"))),
        None => Err(usage_err("missing command".into())),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err((code, msg)) => {
            eprintln!("{msg}");
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(n: u64, size: u32) -> Vec<u8> {
        let src = Source::new(n, size);
        let mut v = Vec::new();
        let mut off = 0;
        while off < src.total {
            let b = src.at(off);
            off += b.len() as u64;
            v.extend_from_slice(&b);
        }
        v
    }

    #[test]
    fn source_is_the_contract_stream() {
        for &(n, size) in &[(0u64, 61u32), (3, 0), (1000, 61), (300, 1024), (20, 16384), (2, 300_000)] {
            let v = stream(n, size);
            assert_eq!(v.len() as u64, 4 + n * (4 + size as u64));
            assert_eq!(&v[..4], b"pure");
            let mut p = &v[4..];
            for _ in 0..n {
                assert_eq!(u32::from_be_bytes([p[0], p[1], p[2], p[3]]), size);
                for (i, &b) in p[4..4 + size as usize].iter().enumerate() {
                    assert_eq!(b as usize, i % 251);
                }
                p = &p[4 + size as usize..];
            }
            assert!(p.is_empty());
        }
    }

    #[test]
    fn sink_counts_whatever_the_split() {
        for &(n, size) in &[(0u64, 61u32), (7, 0), (1000, 61), (50, 1024), (3, 16384)] {
            let v = stream(n, size);
            for split in [1usize, 2, 3, 5, 64, 1471, 100_000] {
                let mut k = Sink::default();
                for c in v.chunks(split) {
                    k.feed(c).unwrap();
                }
                k.end().unwrap();
                assert_eq!(k.messages, n, "n {n} size {size} split {split}");
                assert_eq!(k.body_bytes, n * size as u64);
                assert_eq!(k.total, v.len() as u64);
            }
        }
    }

    #[test]
    fn sink_rejects_bad_streams() {
        let mut k = Sink::default();
        assert!(k.feed(b"purx").unwrap_err().contains("preamble"));

        let mut v = stream(3, 10);
        v[4 + 14 + 3] = 11; // second length differs
        assert!(Sink::default().feed(&v).unwrap_err().contains("differs"));

        let mut v = b"pure".to_vec();
        v.extend_from_slice(&(65u32 << 20).to_be_bytes());
        assert!(Sink::default().feed(&v).unwrap_err().contains("64 MiB"));

        let v = stream(3, 10);
        for cut in [2usize, 6, 20] {
            let mut k = Sink::default();
            k.feed(&v[..cut]).unwrap();
            assert!(k.end().is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn pin_parsing() {
        assert!(parse_pin("ab").is_err());
        assert!(parse_pin(&"g".repeat(64)).is_err());
        assert_eq!(parse_pin(&"0f".repeat(32)).unwrap(), [15u8; 32]);
    }
}
