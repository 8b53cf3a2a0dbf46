/* SPDX-License-Identifier: MIT */
/*
 * ngtcp2 drain peer for the Pure benchmark (see /work/shared/design.md and
 * peers/ngtcp2/README.md).
 *
 *   ngtcp2 serve                 bind 127.0.0.1:0, print {"port": N}, serve
 *                                connections one after another until killed
 *   ngtcp2 drain PORT N SIZE     one QUIC connection, one bidirectional stream:
 *                                "pure", then N x (u32 BE length, SIZE bytes)
 *   ngtcp2 serve --echo          the same server, but it sends the stream back
 *                                (every frame after the preamble, as it comes)
 *   ngtcp2 ping PORT N SIZE      one connection, N round trips of one message
 *                                (one in flight), every echo checked
 *   ngtcp2 handshakes PORT N     N connections one after another: handshake,
 *                                one 61-byte message, its echo, close
 *   ngtcp2 hol-serve / hol-client  the head-of-line benchmark (hol.c)
 *
 * Built against Debian's libngtcp2 0.12 with the GnuTLS crypto backend.
 * QUIC v1 + TLS 1.3 with TLS_AES_128_GCM_SHA256 (first in the priority
 * string; checked and printed after the handshake).  A self-signed ECDSA
 * certificate is generated at run time; the client does not verify it.
 *
 * I/O: UDP payloads of at most 1472 bytes, 4 MiB socket buffers, GSO bursts
 * (consecutive ngtcp2_conn_writev_stream calls into one buffer of up to 44
 * packets, one sendmsg with UDP_SEGMENT), GRO receive (UDP_GRO; each
 * coalesced datagram split by the gso_size cmsg into ngtcp2_conn_read_pkt
 * calls), timers from ngtcp2_conn_get_expiry with ppoll.
 *
 * The sender never copies or allocates per message: stream offsets map into a
 * precomputed pattern buffer ("pure" followed by a bit more than one period of
 * the 4 + SIZE byte frame), and ngtcp2 keeps pointers into that buffer for
 * retransmission; the buffer never changes.
 */
#define _GNU_SOURCE
#include "shared.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define MAX_PAYLOAD 1472            /* 1500-byte MTU path: IPv4 + UDP headers */
#define MAX_BURST 44                /* packets per GSO sendmsg (44 * 1472 < 64 KiB) */
#define SOCK_BUF (4 << 20)          /* 4 MiB socket buffers */
#define CONN_WINDOW (64ull << 20)   /* connection flow-control window */
#define STREAM_WINDOW (16ull << 20) /* stream flow-control window */
#define MAX_MSG_LEN (16u << 20)     /* largest message length the server accepts */
#define RX_BUF 65536                /* one GRO datagram is at most 64 KiB */
#define RX_CALLS 4                  /* recvmsg calls per loop turn before writing */
#define TX_BURSTS 8                 /* GSO bursts per loop turn before reading */
#define CHUNK 4096                  /* contiguous bytes offered per writev call */
#define SCID_LEN 16
#define ALPN "pure-drain"
#define IDLE_TIMEOUT (30 * NGTCP2_SECONDS)
#define HANDSHAKE_TIMEOUT (10 * NGTCP2_SECONDS)
#define APP_ERR_PROTOCOL 1
#define ECHUNK 65536 /* echo storage: fixed chunks, never moved */
#define HS_SIZE 61   /* the handshakes experiment's one message */

enum client_mode {
    MODE_DRAIN,
    MODE_PING,
    MODE_HANDSHAKES
};

static const char *prog = "ngtcp2";

static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Peer state                                                          */

typedef struct peer {
    int is_server;
    int fd;
    struct sockaddr_storage local;
    socklen_t locallen;
    struct sockaddr_storage remote;
    socklen_t remotelen;

    gnutls_certificate_credentials_t cred;
    gnutls_session_t tls;
    ngtcp2_conn *conn;
    ngtcp2_crypto_conn_ref ref;
    ngtcp2_path_storage ps;

    int printed_cipher;
    int conn_done;   /* connection finished (closed, drained, timed out) */
    int conn_failed; /* ... and unsuccessfully */
    char err[256];   /* why, when conn_failed */

    int64_t sid; /* the one bidirectional stream, -1 until known */

    /* client: what it sends */
    const uint8_t *pat; /* "pure" + frame pattern */
    size_t patlen;
    size_t period;  /* 4 + SIZE */
    uint64_t total; /* stream length including preamble */
    uint64_t off;   /* stream bytes handed to ngtcp2 */
    int fin_sent;
    uint64_t limit; /* stream bytes released so far (drain: all of them) */
    int mode;       /* enum client_mode */
    /* client: what it receives */
    uint8_t reply[8];
    size_t replylen;
    int reply_done;
    /* client, ping and handshakes: the echo of the message in flight */
    uint8_t *back;
    size_t backlen;
    uint64_t n, echoes, mismatches;
    uint64_t t_send; /* when the message in flight was released */
    uint64_t *rtt;

    /* server --echo: bytes to send back, in ECHUNK chunks that stay put until
       the connection ends (ngtcp2 keeps pointers to unacknowledged data) */
    int echo;
    /* ping, handshakes, serve --echo: tell ngtcp2 the send time once per turn,
       after every burst, instead of after each one.  Per burst, a short packet
       (a burst of its own) starts the pacer, which then holds the next packet
       of the same turn -- during the handshake the client's Finished -- and
       ngtcp2 0.12's expiry does not include the pacer's time: it went out only
       with a PTO or ACK timer ~25 ms later. */
    int tx_time_per_turn;
    uint8_t **echunks;
    size_t nechunks, echunks_cap;
    uint64_t ewritten, esent;
    int echo_fin;

    /* server: parser */
    uint32_t pre;      /* preamble bytes checked */
    uint32_t hdr_have; /* length-prefix bytes seen */
    uint32_t hdr;
    uint64_t body_left;
    uint64_t msgs;
    uint64_t body_bytes;
    uint64_t credit; /* bytes consumed, not yet returned as flow control */
    int proto_err;
    /* server: its reply */
    uint8_t out[8];
    size_t outoff;
    int reply_queued;
    int reply_sent;
    ngtcp2_cid odcid;   /* client's original DCID (server) */
    ngtcp2_cid cids[8]; /* connection IDs we issued (server) */
    size_t ncids;

    /* TX: one GSO burst, possibly waiting for socket space */
    uint8_t tx[MAX_BURST * MAX_PAYLOAD];
    size_t txlen;
    size_t txpkts;
    int txpending;

    /* stats */
    uint64_t sendmsgs, pkts_out, recvmsgs, pkts_in, polls, eagains;
} peer;

static void conn_fail(peer *p, const char *fmt, ...)
{
    va_list ap;
    if (!p->conn_failed) {
        va_start(ap, fmt);
        vsnprintf(p->err, sizeof(p->err), fmt, ap);
        va_end(ap);
    }
    p->conn_failed = 1;
    p->conn_done = 1;
}

/* ------------------------------------------------------------------ */
/* Sockets                                                             */

static void set_bufs(int fd)
{
    int v = 1;
    nq_socket_bufs(fd, SOCK_BUF);
    if (setsockopt(fd, IPPROTO_UDP, UDP_GRO, &v, sizeof(v)) != 0)
        fprintf(stderr, "%s: warning: UDP_GRO unavailable: %s\n", prog, strerror(errno));
}

static int make_socket(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket: %s", strerror(errno));
    set_bufs(fd);
    return fd;
}

/* Sends p->tx (txpkts packets, all MAX_PAYLOAD bytes except maybe the last)
   in one sendmsg; UDP_SEGMENT when more than one.  Returns 0 when sent,
   1 when the socket is full (burst kept pending), -1 on error. */
static int flush_tx(peer *p)
{
    struct iovec iov = {p->tx, p->txlen};
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } cm;
    struct msghdr msg;
    ssize_t n;

    if (!p->txpending)
        return 0;
    memset(&msg, 0, sizeof(msg));
    if (p->is_server) {
        msg.msg_name = &p->remote;
        msg.msg_namelen = p->remotelen;
    }
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (p->txpkts > 1) {
        struct cmsghdr *c;
        memset(&cm, 0, sizeof(cm));
        msg.msg_control = cm.buf;
        msg.msg_controllen = sizeof(cm.buf);
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t seg = MAX_PAYLOAD;
        memcpy(CMSG_DATA(c), &seg, sizeof(seg));
    }
    for (;;) {
        n = sendmsg(p->fd, &msg, 0);
        if (n >= 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return 1;
        if (errno == ECONNREFUSED) {
            conn_fail(p, "nothing is listening on the server port (ICMP port "
                         "unreachable)");
            return -1;
        }
        conn_fail(p, "sendmsg (%zu bytes, %zu packets): %s", p->txlen, p->txpkts, strerror(errno));
        return -1;
    }
    p->sendmsgs++;
    p->pkts_out += p->txpkts;
    p->txpending = 0;
    p->txlen = 0;
    p->txpkts = 0;
    return 0;
}

/* ------------------------------------------------------------------ */
/* TLS                                                                 */

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
    return ((peer *)ref->user_data)->conn;
}

static void make_server_cred(peer *p)
{
    if (nq_server_cred(&p->cred, prog) != 0)
        exit(1);
}

static int tls_session_new(peer *p)
{
    p->ref.get_conn = get_conn;
    p->ref.user_data = p;
    return nq_tls_session(&p->tls, p->cred, p->is_server, ALPN, &p->ref, prog);
}

/* ------------------------------------------------------------------ */
/* ngtcp2 callbacks                                                    */

static int get_new_connection_id_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
                                    size_t cidlen, void *user_data)
{
    peer *p = user_data;
    (void)conn;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0 ||
        gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    if (p->ncids < sizeof(p->cids) / sizeof(p->cids[0]))
        p->cids[p->ncids++] = *cid;
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *conn, void *user_data)
{
    peer *p = user_data;
    (void)conn;
    if (!p->is_server && p->mode == MODE_PING && p->n && p->limit == 0) {
        p->limit = 4 + p->period; /* the first message, with the preamble */
        p->t_send = now_ns();
    }
    if (gnutls_cipher_get(p->tls) != GNUTLS_CIPHER_AES_128_GCM)
        fprintf(stderr, "%s: warning: negotiated %s, not TLS_AES_128_GCM_SHA256\n", prog,
                gnutls_ciphersuite_get(p->tls));
    if (!p->printed_cipher) {
        gnutls_datum_t proto;
        char alpn[64] = "none";
        if (gnutls_alpn_get_selected_protocol(p->tls, &proto) == 0 && proto.size < sizeof(alpn)) {
            memcpy(alpn, proto.data, proto.size);
            alpn[proto.size] = 0;
        }
        const char *group = gnutls_group_get_name(gnutls_group_get(p->tls));
        fprintf(stderr, "%s %s: QUIC v1, %s, cipher suite %s, group %s, ALPN %s\n", prog,
                p->is_server                 ? "serve"
                : p->mode == MODE_PING       ? "ping"
                : p->mode == MODE_HANDSHAKES ? "handshakes"
                                             : "drain",
                gnutls_protocol_get_name(gnutls_protocol_get_version(p->tls)),
                gnutls_ciphersuite_get(p->tls), group ? group : "?", alpn);
        p->printed_cipher = 1;
    }
    return 0;
}

/* Server side: framing parser.  Returns 0, or -1 with p->err set. */
static int parse(peer *p, const uint8_t *d, size_t n)
{
    static const uint8_t magic[4] = {'p', 'u', 'r', 'e'};
    const uint8_t *end = d + n;

    while (d < end) {
        if (p->body_left) {
            size_t take = (size_t)(end - d);
            if (take > p->body_left)
                take = (size_t)p->body_left;
            p->body_left -= take;
            p->body_bytes += take;
            d += take;
            if (p->body_left == 0)
                p->msgs++;
            continue;
        }
        if (p->pre < 4) {
            if (*d != magic[p->pre]) {
                snprintf(p->err, sizeof(p->err), "bad preamble: byte %u is 0x%02x, expected '%c'",
                         p->pre, *d, magic[p->pre]);
                return -1;
            }
            p->pre++;
            d++;
            continue;
        }
        if (p->hdr_have == 0 && end - d >= 4) { /* whole length prefix */
            uint32_t len =
                ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) | ((uint32_t)d[2] << 8) | d[3];
            if (len > MAX_MSG_LEN) {
                snprintf(p->err, sizeof(p->err),
                         "message %" PRIu64 " has length %u, above the %u limit", p->msgs, len,
                         MAX_MSG_LEN);
                return -1;
            }
            d += 4;
            p->body_left = len;
            if (len == 0)
                p->msgs++;
            continue;
        }
        p->hdr = (p->hdr << 8) | *d++;
        if (++p->hdr_have == 4) {
            if (p->hdr > MAX_MSG_LEN) {
                snprintf(p->err, sizeof(p->err),
                         "message %" PRIu64 " has length %u, above the %u limit", p->msgs, p->hdr,
                         MAX_MSG_LEN);
                return -1;
            }
            p->body_left = p->hdr;
            if (p->body_left == 0)
                p->msgs++;
            p->hdr = 0;
            p->hdr_have = 0;
        }
    }
    return 0;
}

/* Server --echo: keeps bytes to send back.  Returns 0 or -1 (out of memory). */
static int echo_append(peer *p, const uint8_t *d, size_t n)
{
    while (n) {
        size_t at = (size_t)(p->ewritten % ECHUNK);
        if (at == 0 && p->ewritten / ECHUNK == p->nechunks) {
            if (p->nechunks == p->echunks_cap) {
                size_t cap = p->echunks_cap ? 2 * p->echunks_cap : 64;
                uint8_t **c = realloc(p->echunks, cap * sizeof(*c));
                if (!c)
                    return -1;
                p->echunks = c;
                p->echunks_cap = cap;
            }
            if (!(p->echunks[p->nechunks] = malloc(ECHUNK)))
                return -1;
            p->nechunks++;
        }
        size_t take = ECHUNK - at < n ? ECHUNK - at : n;
        memcpy(p->echunks[p->ewritten / ECHUNK] + at, d, take);
        p->ewritten += take;
        d += take;
        n -= take;
    }
    return 0;
}

static void echo_free(peer *p)
{
    for (size_t i = 0; i < p->nechunks; i++)
        free(p->echunks[i]);
    free(p->echunks);
    p->echunks = NULL;
    p->nechunks = p->echunks_cap = 0;
    p->ewritten = p->esent = 0;
    p->echo_fin = 0;
}

/* Client, ping and handshakes: takes echo bytes; a whole echo is checked, timed,
   and releases the next message.  Returns 0 or -1 with p->err set. */
static int echo_recv(peer *p, const uint8_t *d, size_t n)
{
    while (n) {
        if (p->echoes >= p->n || p->off < p->limit || p->limit <= 4) {
            snprintf(p->err, sizeof(p->err), "%zu bytes arrived with no message in flight", n);
            return -1;
        }
        size_t take = p->period - p->backlen < n ? p->period - p->backlen : n;
        memcpy(p->back + p->backlen, d, take);
        p->backlen += take;
        d += take;
        n -= take;
        if (p->backlen < p->period)
            continue;
        uint64_t now = now_ns();
        if (memcmp(p->back, p->pat + 4, p->period) != 0 && p->mismatches++ < 3)
            fprintf(stderr, "%s: echo %" PRIu64 " differs from what was sent\n", prog, p->echoes);
        p->backlen = 0;
        if (p->rtt)
            p->rtt[p->echoes] = now - p->t_send;
        p->echoes++;
        if (p->mode == MODE_PING && p->echoes < p->n) {
            p->limit += p->period;
            p->t_send = now;
        } else {
            p->reply_done = 1;
        }
    }
    return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                               uint64_t offset, const uint8_t *data, size_t datalen,
                               void *user_data, void *stream_user_data)
{
    peer *p = user_data;
    (void)conn;
    (void)offset;
    (void)stream_user_data;

    if (p->sid < 0 && p->is_server)
        p->sid = stream_id;
    if (stream_id != p->sid) {
        snprintf(p->err, sizeof(p->err),
                 "data on unexpected stream %" PRId64 " (the drain uses one stream)", stream_id);
        p->proto_err = 1;
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    p->credit += datalen;

    if (p->is_server) {
        uint32_t pre = p->pre;
        if (parse(p, data, datalen) != 0) {
            p->proto_err = 1;
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        if (p->echo) {
            size_t skip = pre < 4 ? 4 - pre : 0; /* the preamble is not echoed */
            if (skip > datalen)
                skip = datalen;
            if (echo_append(p, data + skip, datalen - skip) != 0) {
                snprintf(p->err, sizeof(p->err), "out of memory for the echo");
                p->proto_err = 1;
                return NGTCP2_ERR_CALLBACK_FAILURE;
            }
        }
        if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) {
            if (p->pre < 4 || p->hdr_have || p->body_left) {
                snprintf(p->err, sizeof(p->err),
                         "stream ended inside a %s (after %" PRIu64 " whole messages)",
                         p->pre < 4    ? "preamble"
                         : p->hdr_have ? "length prefix"
                                       : "message body",
                         p->msgs);
                p->proto_err = 1;
                return NGTCP2_ERR_CALLBACK_FAILURE;
            }
            if (p->echo) {
                p->echo_fin = 1; /* FIN after the last echo */
                return 0;
            }
            for (int i = 0; i < 8; i++)
                p->out[i] = (uint8_t)(p->msgs >> (56 - 8 * i));
            p->outoff = 0;
            p->reply_queued = 1;
        }
        return 0;
    }
    if (p->mode != MODE_DRAIN) {
        if (echo_recv(p, data, datalen) != 0) {
            p->proto_err = 1;
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        return 0;
    }

    /* client: the 8-byte count, then FIN */
    if (datalen > sizeof(p->reply) - p->replylen) {
        snprintf(p->err, sizeof(p->err), "server sent more than the 8-byte message count");
        p->proto_err = 1;
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    memcpy(p->reply + p->replylen, data, datalen);
    p->replylen += datalen;
    if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) {
        if (p->replylen != sizeof(p->reply)) {
            snprintf(p->err, sizeof(p->err),
                     "server's reply is %zu bytes, expected an 8-byte count", p->replylen);
            p->proto_err = 1;
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        p->reply_done = 1;
    }
    return 0;
}

static void fill_callbacks(ngtcp2_callbacks *cb, int server)
{
    nq_fill_callbacks(cb, server, handshake_completed_cb, recv_stream_data_cb,
                      get_new_connection_id_cb);
}

static void log_printf_cb(void *user_data, const char *fmt, ...)
{
    va_list ap;
    (void)user_data;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void fill_settings(ngtcp2_settings *s, ngtcp2_transport_params *tp, int server,
                          ngtcp2_tstamp initial_ts)
{
    ngtcp2_settings_default(s);
    s->initial_ts = initial_ts; /* a server's: its first packet's */
    s->max_tx_udp_payload_size = MAX_PAYLOAD;
    s->no_tx_udp_payload_size_shaping = 1;
    s->no_pmtud = 1;
    s->max_window = CONN_WINDOW;
    s->max_stream_window = STREAM_WINDOW;
    s->handshake_timeout = HANDSHAKE_TIMEOUT;
    if (getenv("NGTCP2_DRAIN_LOG"))
        s->log_printf = log_printf_cb;

    ngtcp2_transport_params_default(tp);
    tp->initial_max_data = CONN_WINDOW;
    tp->initial_max_stream_data_bidi_local = STREAM_WINDOW;
    tp->initial_max_stream_data_bidi_remote = STREAM_WINDOW;
    tp->initial_max_stream_data_uni = 0;
    tp->initial_max_streams_bidi = server ? 1 : 0;
    tp->initial_max_streams_uni = 0;
    tp->max_idle_timeout = IDLE_TIMEOUT;
    tp->max_udp_payload_size = MAX_PAYLOAD;
}

/* ------------------------------------------------------------------ */
/* Connection teardown                                                 */

static void conn_free(peer *p)
{
    echo_free(p);
    if (p->conn) {
        ngtcp2_conn_del(p->conn);
        p->conn = NULL;
    }
    if (p->tls) {
        gnutls_deinit(p->tls);
        p->tls = NULL;
    }
}

/* Sends a CONNECTION_CLOSE (application error |code|) right away. */
static void send_close(peer *p, uint64_t code, const char *reason)
{
    ngtcp2_connection_close_error ccerr;
    ngtcp2_pkt_info pi;
    ngtcp2_ssize nw;

    if (!p->conn || ngtcp2_conn_is_in_closing_period(p->conn) ||
        ngtcp2_conn_is_in_draining_period(p->conn))
        return;
    if (p->txpending)
        (void)flush_tx(p);
    if (p->txpending)
        return; /* socket full: the peer's idle timeout will do */
    ngtcp2_connection_close_error_default(&ccerr);
    ngtcp2_connection_close_error_set_application_error(&ccerr, code, (const uint8_t *)reason,
                                                        reason ? strlen(reason) : 0);
    nw = ngtcp2_conn_write_connection_close(p->conn, &p->ps.path, &pi, p->tx, MAX_PAYLOAD, &ccerr,
                                            now_ns());
    if (nw > 0) {
        p->txlen = (size_t)nw;
        p->txpkts = 1;
        p->txpending = 1;
        (void)flush_tx(p);
        p->txpending = 0;
    }
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

/* Stream data to offer in the next packet: points into the fixed pattern
   (client) or the 8-byte count (server). */
static int stream_source(peer *p, ngtcp2_vec *v, uint32_t *flags)
{
    *flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
    if (p->sid < 0)
        return 0;
    if (p->is_server && p->echo) {
        if (p->reply_sent)
            return 0;
        if (p->esent < p->ewritten) {
            size_t at = (size_t)(p->esent % ECHUNK);
            uint64_t rem = p->ewritten - p->esent;
            v->base = p->echunks[p->esent / ECHUNK] + at;
            v->len = ECHUNK - at < rem ? ECHUNK - at : (size_t)rem;
            if (v->len > CHUNK)
                v->len = CHUNK;
            if (p->echo_fin && v->len == rem)
                *flags = NGTCP2_WRITE_STREAM_FLAG_FIN;
            return 1;
        }
        if (!p->echo_fin)
            return 0;
        v->base = NULL;
        v->len = 0;
        *flags = NGTCP2_WRITE_STREAM_FLAG_FIN;
        return 1;
    }
    if (p->is_server) {
        if (!p->reply_queued || p->reply_sent)
            return 0;
        v->base = p->out + p->outoff;
        v->len = sizeof(p->out) - p->outoff;
        *flags = NGTCP2_WRITE_STREAM_FLAG_FIN;
        return 1;
    }
    if (p->fin_sent || p->off >= p->limit)
        return 0;
    uint64_t rem = p->limit - p->off;
    size_t idx = p->off < 4 ? (size_t)p->off : 4 + (size_t)((p->off - 4) % p->period);
    size_t len = p->patlen - idx;
    if (len > CHUNK)
        len = CHUNK;
    if (len > rem)
        len = (size_t)rem;
    v->base = (uint8_t *)p->pat + idx;
    v->len = len;
    if (len == rem && p->mode == MODE_DRAIN)
        *flags = NGTCP2_WRITE_STREAM_FLAG_FIN;
    return 1;
}

static void stream_advance(peer *p, size_t n, uint32_t flags, size_t offered)
{
    if (p->is_server && p->echo) {
        p->esent += n;
        if (n == offered && (flags & NGTCP2_WRITE_STREAM_FLAG_FIN))
            p->reply_sent = 1;
        return;
    }
    if (p->is_server) {
        p->outoff += n;
        if (n == offered && (flags & NGTCP2_WRITE_STREAM_FLAG_FIN))
            p->reply_sent = 1;
        return;
    }
    p->off += n;
    if (n == offered && (flags & NGTCP2_WRITE_STREAM_FLAG_FIN))
        p->fin_sent = 1;
}

/* Handles a fatal ngtcp2 error from read/write/expiry. */
static void conn_error(peer *p, const char *what, int rv)
{
    if (p->proto_err) {
        /* p->err already says why (set by the stream callback) */
        send_close(p, APP_ERR_PROTOCOL, p->err);
        p->conn_failed = 1;
        p->conn_done = 1;
        return;
    }
    if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING) {
        ngtcp2_connection_close_error ce;
        ngtcp2_conn_get_connection_close_error(p->conn, &ce);
        if (ce.error_code == 0) {
            p->conn_done = 1;
            if (!p->is_server && !p->reply_done)
                conn_fail(p, "server closed the connection before confirming the "
                             "count");
        } else {
            conn_fail(p, "peer closed the connection with %s error 0x%" PRIx64 ": %.*s",
                      ce.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application"
                                                                                     : "transport",
                      ce.error_code, (int)ce.reasonlen, ce.reason ? (const char *)ce.reason : "");
        }
        return;
    }
    if (rv == NGTCP2_ERR_IDLE_CLOSE) {
        conn_fail(p, "connection idle for %d s: peer gone", (int)(IDLE_TIMEOUT / NGTCP2_SECONDS));
        return;
    }
    if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
        conn_fail(p,
                  "QUIC handshake did not complete within %d s (is the server "
                  "running on that port?)",
                  (int)(HANDSHAKE_TIMEOUT / NGTCP2_SECONDS));
        return;
    }
    if (rv == NGTCP2_ERR_DROP_CONN) {
        conn_fail(p, "connection dropped by ngtcp2");
        return;
    }
    {
        ngtcp2_connection_close_error ccerr;
        ngtcp2_pkt_info pi;
        ngtcp2_ssize nw;
        ngtcp2_connection_close_error_default(&ccerr);
        ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr, rv, NULL, 0);
        if (!p->txpending && !ngtcp2_conn_is_in_closing_period(p->conn) &&
            !ngtcp2_conn_is_in_draining_period(p->conn)) {
            nw = ngtcp2_conn_write_connection_close(p->conn, &p->ps.path, &pi, p->tx, MAX_PAYLOAD,
                                                    &ccerr, now_ns());
            if (nw > 0) {
                p->txlen = (size_t)nw;
                p->txpkts = 1;
                p->txpending = 1;
                (void)flush_tx(p);
                p->txpending = 0;
            }
        }
    }
    conn_fail(p, "%s: %s", what, ngtcp2_strerror(rv));
}

/* Builds one GSO burst.  Returns the number of packets written (0: nothing
   to send now), or -1 after a connection error. */
static int write_burst(peer *p, ngtcp2_tstamp ts)
{
    size_t maxpkts = ngtcp2_conn_get_send_quantum(p->conn) / MAX_PAYLOAD;
    int blocked = 0;
    ngtcp2_pkt_info pi;

    if (maxpkts < 1)
        maxpkts = 1;
    if (maxpkts > MAX_BURST)
        maxpkts = MAX_BURST;
    p->txlen = 0;
    p->txpkts = 0;

    for (;;) {
        ngtcp2_vec v = {0};
        uint32_t flags = 0;
        ngtcp2_ssize dl = -1, nw;
        int have = blocked ? 0 : stream_source(p, &v, &flags);

        nw = ngtcp2_conn_writev_stream(p->conn, &p->ps.path, &pi, p->tx + p->txlen, MAX_PAYLOAD,
                                       &dl, flags, have ? p->sid : -1, have ? &v : NULL,
                                       have ? 1 : 0, ts);
        if (nw < 0) {
            if (have && (nw == NGTCP2_ERR_STREAM_DATA_BLOCKED || nw == NGTCP2_ERR_STREAM_SHUT_WR ||
                         nw == NGTCP2_ERR_STREAM_NOT_FOUND)) {
                blocked = 1;
                continue;
            }
            conn_error(p, "ngtcp2_conn_writev_stream", (int)nw);
            return -1;
        }
        if (have && dl >= 0)
            stream_advance(p, (size_t)dl, flags, v.len);
        if (nw == 0)
            break;
        p->txlen += (size_t)nw;
        p->txpkts++;
        if ((size_t)nw < MAX_PAYLOAD || p->txpkts >= maxpkts)
            break;
    }
    if (p->txpkts == 0)
        return 0;
    if (!p->tx_time_per_turn)
        ngtcp2_conn_update_pkt_tx_time(p->conn, ts);
    p->txpending = 1;
    if (flush_tx(p) < 0)
        return -1;
    return (int)p->txpkts;
}

/* Writes bursts until ngtcp2 has nothing more, the socket is full or the
   turn's budget is used.  Returns packets written, or -1. */
static int write_some(peer *p)
{
    int total = 0;
    ngtcp2_tstamp ts = now_ns();

    if (!p->conn || p->conn_done)
        return 0;
    if (p->txpending) {
        int r = flush_tx(p);
        if (r != 0)
            return r < 0 ? -1 : 0;
    }
    if (!p->is_server && p->sid < 0 && ngtcp2_conn_get_streams_bidi_left(p->conn) > 0) {
        int rv = ngtcp2_conn_open_bidi_stream(p->conn, &p->sid, NULL);
        if (rv != 0) {
            conn_error(p, "ngtcp2_conn_open_bidi_stream", rv);
            return -1;
        }
    }
    for (int i = 0; i < TX_BURSTS; i++) {
        int n = write_burst(p, ts);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        total += n;
        if (p->txpending)
            break; /* socket full */
    }
    if (p->tx_time_per_turn && total > 0)
        ngtcp2_conn_update_pkt_tx_time(p->conn, ts);
    return total;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */

static int cid_is_ours(const peer *p, const uint8_t *d, size_t n)
{
    if (n == p->odcid.datalen && memcmp(d, p->odcid.data, n) == 0)
        return 1;
    for (size_t i = 0; i < p->ncids; i++)
        if (n == p->cids[i].datalen && memcmp(d, p->cids[i].data, n) == 0)
            return 1;
    return 0;
}

static void server_reset_state(peer *p)
{
    p->conn_done = p->conn_failed = 0;
    p->err[0] = 0;
    p->sid = -1;
    p->pre = p->hdr_have = p->hdr = 0;
    p->body_left = p->msgs = p->body_bytes = p->credit = 0;
    p->proto_err = 0;
    p->outoff = 0;
    p->reply_queued = p->reply_sent = 0;
    p->ncids = 0;
    p->txpending = 0;
    p->txlen = p->txpkts = 0;
    p->sendmsgs = p->pkts_out = p->recvmsgs = p->pkts_in = 0;
    p->polls = p->eagains = 0;
}

/* Server: makes a connection for a client's first Initial packet. */
static int server_accept(peer *p, const uint8_t *pkt, size_t len,
                         const struct sockaddr_storage *from, socklen_t fromlen, ngtcp2_tstamp ts)
{
    ngtcp2_pkt_hd hd;
    ngtcp2_callbacks cb;
    ngtcp2_settings s;
    ngtcp2_transport_params tp;
    ngtcp2_cid scid;
    ngtcp2_path path;
    int rv;

    if (ngtcp2_accept(&hd, pkt, len) != 0)
        return -1; /* not a valid first packet: drop it */
    if (p->conn) {
        fprintf(stderr,
                "%s serve: a new client arrived; dropping the previous "
                "connection (%" PRIu64 " messages counted)\n",
                prog, p->msgs);
        conn_free(p);
    }
    server_reset_state(p);
    memcpy(&p->remote, from, fromlen);
    p->remotelen = fromlen;
    if (tls_session_new(p) != 0) {
        conn_free(p);
        return -1;
    }

    scid.datalen = SCID_LEN;
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    p->cids[0] = scid;
    p->ncids = 1;
    p->odcid = hd.dcid;

    fill_callbacks(&cb, 1);
    fill_settings(&s, &tp, 1, ts);
    NQ_SET_ORIGINAL_DCID(&tp, hd.dcid);

    path.local.addr = (struct sockaddr *)&p->local;
    path.local.addrlen = p->locallen;
    path.remote.addr = (struct sockaddr *)&p->remote;
    path.remote.addrlen = p->remotelen;
    path.user_data = NULL;

    rv =
        ngtcp2_conn_server_new(&p->conn, &hd.scid, &scid, &path, hd.version, &cb, &s, &tp, NULL, p);
    if (rv != 0) {
        fprintf(stderr, "%s serve: ngtcp2_conn_server_new: %s\n", prog, ngtcp2_strerror(rv));
        conn_free(p);
        return -1;
    }
    ngtcp2_conn_set_tls_native_handle(p->conn, p->tls);
    ngtcp2_path_storage_zero(&p->ps);
    return 0;
}

static void feed(peer *p, const uint8_t *pkt, size_t len, const struct sockaddr_storage *from,
                 socklen_t fromlen, ngtcp2_tstamp ts)
{
    ngtcp2_path path;
    int rv;

    if (p->is_server) {
        int need_new = !p->conn;
        if (!need_new && (pkt[0] & 0x80)) {
            /* long header: a new client's Initial has a DCID we never saw */
            ngtcp2_version_cid vc;
            if (ngtcp2_pkt_decode_version_cid(&vc, pkt, len, SCID_LEN) == 0 &&
                !cid_is_ours(p, vc.dcid, vc.dcidlen))
                need_new = 1;
        }
        if (need_new && server_accept(p, pkt, len, from, fromlen, ts) != 0)
            return;
    }
    if (!p->conn || p->conn_done)
        return;

    path.local.addr = (struct sockaddr *)&p->local;
    path.local.addrlen = p->locallen;
    path.remote.addr = (struct sockaddr *)from;
    path.remote.addrlen = fromlen;
    path.user_data = NULL;

    ngtcp2_pkt_info pi = {0};
    rv = ngtcp2_conn_read_pkt(p->conn, &path, &pi, pkt, len, ts);
    p->pkts_in++;
    if (rv != 0) {
        conn_error(p, "ngtcp2_conn_read_pkt", rv);
        return;
    }
}

/* Returns the flow-control credit the application consumed. */
static void give_credit(peer *p)
{
    if (p->credit && p->conn && !p->conn_done && p->sid >= 0) {
        ngtcp2_conn_extend_max_stream_offset(p->conn, p->sid, p->credit);
        ngtcp2_conn_extend_max_offset(p->conn, p->credit);
    }
    p->credit = 0;
}

static uint8_t rxbuf[RX_BUF];

/* Reads up to RX_CALLS datagrams (each possibly GRO-coalesced).  Returns the
   number of recvmsg calls that returned data. */
static int read_some(peer *p)
{
    int got = 0;
    for (int i = 0; i < RX_CALLS; i++) {
        struct sockaddr_storage from;
        union {
            char buf[CMSG_SPACE(sizeof(int)) + 64];
            struct cmsghdr align;
        } cm;
        struct iovec iov = {rxbuf, sizeof(rxbuf)};
        struct msghdr msg;
        ssize_t n;
        size_t seg;

        memset(&msg, 0, sizeof(msg));
        msg.msg_name = &from;
        msg.msg_namelen = sizeof(from);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cm.buf;
        msg.msg_controllen = sizeof(cm.buf);
        n = recvmsg(p->fd, &msg, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                p->eagains++;
                break;
            }
            if (errno == ECONNREFUSED && !p->is_server) {
                conn_fail(p, "nothing is listening on 127.0.0.1 at that port (ICMP "
                             "port unreachable)");
                break;
            }
            if (p->is_server)
                continue; /* e.g. an ICMP error from a client that left */
            conn_fail(p, "recvmsg: %s", strerror(errno));
            break;
        }
        got++;
        p->recvmsgs++;
        seg = (size_t)n;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                int g;
                memcpy(&g, CMSG_DATA(c), sizeof(g));
                if (g > 0)
                    seg = (size_t)g;
            }
        }
        if (n == 0)
            continue;
        ngtcp2_tstamp ts = now_ns();
        for (size_t off = 0; off < (size_t)n; off += seg) {
            size_t len = (size_t)n - off < seg ? (size_t)n - off : seg;
            feed(p, rxbuf + off, len, &from, msg.msg_namelen, ts);
            if (!p->conn || p->conn_done)
                break;
        }
        give_credit(p);
        if (p->conn_done)
            break;
    }
    return got;
}

static void handle_timer(peer *p)
{
    if (!p->conn || p->conn_done)
        return;
    ngtcp2_tstamp now = now_ns();
    if (ngtcp2_conn_get_expiry(p->conn) <= now) {
        int rv = ngtcp2_conn_handle_expiry(p->conn, now);
        if (rv != 0)
            conn_error(p, "ngtcp2_conn_handle_expiry", rv);
    }
}

/* Sleeps until the socket is readable (or writable when a burst waits) or
   the connection's next timer. */
static void wait_io(peer *p)
{
    struct pollfd pfd = {p->fd, POLLIN, 0};
    struct timespec tmo, *tp = NULL;

    if (p->txpending)
        pfd.events |= POLLOUT;
    if (p->conn && !p->conn_done) {
        ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(p->conn), now = now_ns();
        if (exp != UINT64_MAX) {
            uint64_t d = exp > now ? exp - now : 0;
            tmo.tv_sec = (time_t)(d / NGTCP2_SECONDS);
            tmo.tv_nsec = (long)(d % NGTCP2_SECONDS);
            tp = &tmo;
        }
    }
    p->polls++;
    if (ppoll(&pfd, 1, tp, NULL) < 0 && errno != EINTR)
        die("ppoll: %s", strerror(errno));
}

/* One turn: read, timers, write; sleeps only when nothing happened. */
static void turn(peer *p)
{
    int got = read_some(p);
    handle_timer(p);
    int wrote = write_some(p);
    if (wrote < 0)
        return;
    if (!got && !wrote && !p->conn_done)
        wait_io(p);
}

/* ------------------------------------------------------------------ */
/* serve                                                               */

static int serve(int echo)
{
    static peer P;
    peer *p = &P;
    struct sockaddr_in sin;

    p->is_server = 1;
    p->echo = echo;
    p->tx_time_per_turn = echo;
    p->sid = -1;
    make_server_cred(p);
    p->fd = make_socket();
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = 0;
    if (bind(p->fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
        die("bind 127.0.0.1:0: %s", strerror(errno));
    p->locallen = sizeof(p->local);
    if (getsockname(p->fd, (struct sockaddr *)&p->local, &p->locallen) != 0)
        die("getsockname: %s", strerror(errno));
    printf("{\"port\": %u, \"service\": \"%s\"}\n",
           ntohs(((struct sockaddr_in *)&p->local)->sin_port), echo ? "echo" : "drain");
    fflush(stdout);

    for (;;) {
        turn(p);
        if (p->conn && p->conn_done) {
            if (p->conn_failed)
                fprintf(stderr,
                        "%s serve: connection failed: %s (%" PRIu64 " messages, %" PRIu64
                        " body bytes counted)\n",
                        prog, p->err, p->msgs, p->body_bytes);
            else if (getenv("NGTCP2_DRAIN_VERBOSE"))
                fprintf(stderr,
                        "%s serve: connection done: %" PRIu64 " messages, %" PRIu64
                        " body bytes; %" PRIu64 " packets in %" PRIu64 " recvmsg, %" PRIu64
                        " packets out in %" PRIu64 " sendmsg; %" PRIu64 " ppoll, %" PRIu64
                        " empty recvmsg\n",
                        prog, p->msgs, p->body_bytes, p->pkts_in, p->recvmsgs, p->pkts_out,
                        p->sendmsgs, p->polls, p->eagains);
            conn_free(p);
            p->conn_done = 0; /* idle again: turn() sleeps until the next client */
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* drain (client)                                                      */

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

static void client_socket(peer *p, uint64_t port);
static void client_conn_new(peer *p);

static int drain(const char *port_s, const char *n_s, const char *size_s)
{
    static peer P;
    peer *p = &P;
    uint64_t port, n, size;
    uint8_t *pat;

    if (parse_u64(port_s, 65535, &port) != 0 || port == 0)
        die("PORT must be 1..65535, got '%s'", port_s);
    if (parse_u64(n_s, UINT64_MAX / 2, &n) != 0)
        die("N must be a non-negative integer, got '%s'", n_s);
    if (parse_u64(size_s, 0xffffffffu, &size) != 0)
        die("SIZE must be an integer 0..4294967295, got '%s'", size_s);
    if (size > MAX_MSG_LEN)
        die("SIZE %" PRIu64 " is above the server's %u-byte message limit", size, MAX_MSG_LEN);
    if (n && (UINT64_MAX - 4) / n < 4 + size)
        die("N x (4 + SIZE) overflows");

    /* "pure" + one period (u32 BE length + body) + CHUNK more bytes */
    p->period = 4 + (size_t)size;
    p->patlen = 4 + p->period + CHUNK;
    pat = malloc(p->patlen);
    if (!pat)
        die("out of memory for the %zu-byte pattern", p->patlen);
    memcpy(pat, "pure", 4);
    for (size_t j = 0; j < p->period + CHUNK; j++) {
        size_t k = j % p->period;
        pat[4 + j] = k < 4 ? (uint8_t)(size >> (24 - 8 * k)) : (uint8_t)((k - 4) % 251);
    }
    p->pat = pat;
    p->total = 4 + n * p->period;
    p->limit = p->total;
    p->sid = -1;

    client_socket(p, port);
    uint64_t t0 = now_ns();
    client_conn_new(p);

    while (!p->conn_done && !p->reply_done)
        turn(p);
    uint64_t t1 = now_ns();

    if (p->conn_failed) {
        fprintf(stderr, "%s drain: %s (sent %" PRIu64 " of %" PRIu64 " stream bytes)\n", prog,
                p->err, p->off, p->total);
        conn_free(p);
        return 1;
    }
    if (!p->reply_done) {
        fprintf(stderr, "%s drain: connection ended without the server's count\n", prog);
        conn_free(p);
        return 1;
    }
    send_close(p, 0, NULL);

    uint64_t m = 0;
    for (int i = 0; i < 8; i++)
        m = (m << 8) | p->reply[i];
    printf("{\"messages\": %" PRIu64 ", \"size\": %" PRIu64 ", \"bytes\": %" PRIu64
           ", \"seconds\": %.6f, \"server_messages\": %" PRIu64 "}\n",
           n, size, n * size, (double)(t1 - t0) / 1e9, m);
    fflush(stdout);
    if (getenv("NGTCP2_DRAIN_VERBOSE"))
        fprintf(stderr,
                "%s drain: %" PRIu64 " packets out in %" PRIu64
                " sendmsg (%.1f per burst), %" PRIu64 " packets in %" PRIu64 " recvmsg; %" PRIu64
                " ppoll, %" PRIu64 " empty recvmsg\n",
                prog, p->pkts_out, p->sendmsgs,
                p->sendmsgs ? (double)p->pkts_out / (double)p->sendmsgs : 0.0, p->pkts_in,
                p->recvmsgs, p->polls, p->eagains);
    if (getenv("NGTCP2_DRAIN_VERBOSE")) {
        ngtcp2_conn_stat st;
        ngtcp2_conn_get_conn_stat(p->conn, &st);
        fprintf(stderr,
                "%s drain: cwnd %" PRIu64 " ssthresh %" PRIu64 " srtt %.1f us "
                "min_rtt %.1f us, stream loss count %zu\n",
                prog, st.cwnd, st.ssthresh, st.smoothed_rtt / 1e3, st.min_rtt / 1e3,
                ngtcp2_conn_get_stream_loss_count(p->conn, p->sid));
    }
    conn_free(p);
    free(pat);
    if (m != n) {
        fprintf(stderr, "%s drain: server counted %" PRIu64 " messages, client sent %" PRIu64 "\n",
                prog, m, n);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* ping and handshakes (clients of serve --echo)                       */

/* "pure" + one frame + CHUNK more bytes of the pattern, as the drain's. */
static void make_pattern(peer *p, uint64_t size)
{
    uint8_t *pat;
    p->period = 4 + (size_t)size;
    p->patlen = 4 + p->period + CHUNK;
    pat = malloc(p->patlen);
    p->back = malloc(p->period);
    if (!pat || !p->back)
        die("out of memory for the %zu-byte pattern", p->patlen);
    memcpy(pat, "pure", 4);
    for (size_t j = 0; j < p->period + CHUNK; j++) {
        size_t k = j % p->period;
        pat[4 + j] = k < 4 ? (uint8_t)(size >> (24 - 8 * k)) : (uint8_t)((k - 4) % 251);
    }
    p->pat = pat;
}

/* A connected UDP socket to 127.0.0.1:port, for every connection of a run. */
static void client_socket(peer *p, uint64_t port)
{
    struct sockaddr_in sin;
    gnutls_certificate_allocate_credentials(&p->cred);
    p->fd = make_socket();
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons((uint16_t)port);
    memcpy(&p->remote, &sin, sizeof(sin));
    p->remotelen = sizeof(sin);
    if (connect(p->fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
        die("connect 127.0.0.1:%" PRIu64 ": %s", port, strerror(errno));
    p->locallen = sizeof(p->local);
    if (getsockname(p->fd, (struct sockaddr *)&p->local, &p->locallen) != 0)
        die("getsockname: %s", strerror(errno));
}

/* A new client connection on p's socket: fresh TLS session (no resumption),
   fresh connection IDs, state of the stream reset. */
static void client_conn_new(peer *p)
{
    ngtcp2_callbacks cb;
    ngtcp2_settings s;
    ngtcp2_transport_params tp;
    ngtcp2_cid dcid, scid;
    ngtcp2_path path;
    int rv;

    p->conn_done = p->conn_failed = p->proto_err = 0;
    p->err[0] = 0;
    p->sid = -1;
    p->off = 0;
    p->fin_sent = 0;
    p->reply_done = 0;
    p->replylen = p->backlen = 0;
    p->echoes = 0;
    p->txpending = 0;
    p->txlen = p->txpkts = 0;
    p->credit = 0;
    if (tls_session_new(p) != 0)
        die("TLS setup failed");
    dcid.datalen = 18;
    gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen);
    scid.datalen = SCID_LEN;
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    fill_callbacks(&cb, 0);
    fill_settings(&s, &tp, 0, now_ns());
    path.local.addr = (struct sockaddr *)&p->local;
    path.local.addrlen = p->locallen;
    path.remote.addr = (struct sockaddr *)&p->remote;
    path.remote.addrlen = p->remotelen;
    path.user_data = NULL;
    rv = ngtcp2_conn_client_new(&p->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &s, &tp,
                                NULL, p);
    if (rv != 0)
        die("ngtcp2_conn_client_new: %s", ngtcp2_strerror(rv));
    ngtcp2_conn_set_tls_native_handle(p->conn, p->tls);
    ngtcp2_path_storage_zero(&p->ps);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values (nearest rank), in us. */
static double quantile_us(const uint64_t *v, uint64_t n, double q)
{
    uint64_t k = (uint64_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)v[k - 1] / 1e3;
}

static int ping(const char *port_s, const char *n_s, const char *size_s)
{
    static peer P;
    peer *p = &P;
    uint64_t port, n, size;

    if (parse_u64(port_s, 65535, &port) != 0 || port == 0 || parse_u64(n_s, 100000000, &n) != 0 ||
        n == 0 || parse_u64(size_s, MAX_MSG_LEN, &size) != 0) {
        fprintf(stderr,
                "%s ping: PORT (1..65535) N (1..10^8) SIZE (0..%u) "
                "expected, got '%s' '%s' '%s'\n",
                prog, MAX_MSG_LEN, port_s, n_s, size_s);
        return 2;
    }
    p->mode = MODE_PING;
    p->tx_time_per_turn = 1;
    p->n = n;
    p->rtt = malloc(n * sizeof(*p->rtt));
    if (!p->rtt)
        die("out of memory");
    make_pattern(p, size);
    p->total = 4 + n * p->period;
    p->limit = 0; /* the first message goes once the handshake is done */
    client_socket(p, port);
    client_conn_new(p);
    while (!p->conn_done && !p->reply_done)
        turn(p);
    if (p->conn_failed || !p->reply_done) {
        fprintf(stderr, "%s ping: %s (after %" PRIu64 " of %" PRIu64 " echoes)\n", prog,
                p->conn_failed ? p->err : "connection ended early", p->echoes, n);
        conn_free(p);
        return 1;
    }
    send_close(p, 0, NULL);
    conn_free(p);
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)p->rtt[i];
    double secs = sum / 1e9;
    qsort(p->rtt, n, sizeof(*p->rtt), cmp_u64);
    printf("{\"round_trips\": %" PRIu64 ", \"size\": %" PRIu64 ", \"echoes\": %" PRIu64
           ", \"mismatches\": %" PRIu64 ", \"seconds\": %.6f, \"mean_us\": %.2f, \"min_us\": %.2f, "
           "\"p50_us\": %.2f, \"p90_us\": %.2f, \"p99_us\": %.2f, "
           "\"max_us\": %.2f}\n",
           n, size, p->echoes, p->mismatches, secs, sum / (double)n / 1e3,
           quantile_us(p->rtt, n, 0), quantile_us(p->rtt, n, 0.5), quantile_us(p->rtt, n, 0.9),
           quantile_us(p->rtt, n, 0.99), quantile_us(p->rtt, n, 1));
    fflush(stdout);
    return p->mismatches ? 1 : 0;
}

static int handshakes(const char *port_s, const char *n_s)
{
    static peer P;
    peer *p = &P;
    uint64_t port, n, done, mismatches = 0;

    if (parse_u64(port_s, 65535, &port) != 0 || port == 0 || parse_u64(n_s, 100000000, &n) != 0 ||
        n == 0) {
        fprintf(stderr,
                "%s handshakes: PORT (1..65535) N (1..10^8) expected, "
                "got '%s' '%s'\n",
                prog, port_s, n_s);
        return 2;
    }
    uint64_t *lat = malloc(n * sizeof(*lat));
    if (!lat)
        die("out of memory");
    p->mode = MODE_HANDSHAKES;
    p->tx_time_per_turn = 1;
    p->n = 1; /* one echo per connection */
    make_pattern(p, HS_SIZE);
    p->total = p->limit = 4 + p->period; /* preamble + one message, no FIN */
    client_socket(p, port);
    uint64_t t0 = now_ns();
    for (done = 0; done < n; done++) {
        uint64_t ts = now_ns();
        client_conn_new(p);
        while (!p->conn_done && !p->reply_done)
            turn(p);
        if (p->conn_failed || !p->reply_done) {
            fprintf(stderr, "%s handshakes: connection %" PRIu64 ": %s\n", prog, done,
                    p->conn_failed ? p->err : "ended before its echo");
            conn_free(p);
            return 1;
        }
        lat[done] = now_ns() - ts;
        mismatches += p->mismatches;
        p->mismatches = 0;
        send_close(p, 0, NULL); /* CONNECTION_CLOSE, no waiting */
        conn_free(p);
    }
    double secs = (double)(now_ns() - t0) / 1e9, sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)lat[i];
    qsort(lat, n, sizeof(*lat), cmp_u64);
    printf("{\"handshakes\": %" PRIu64 ", \"size\": %d, \"ok\": %" PRIu64
           ", \"mismatches\": %" PRIu64 ", \"seconds\": %.6f, \"per_second\": "
           "%.1f, \"mean_us\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f}\n",
           n, HS_SIZE, n - mismatches, mismatches, secs, (double)n / secs, sum / (double)n / 1e3,
           quantile_us(lat, n, 0.5), quantile_us(lat, n, 0.99));
    fflush(stdout);
    free(lat);
    return mismatches ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s serve [--echo]\n"
            "       %s drain PORT N SIZE\n"
            "       %s ping PORT N SIZE\n"
            "       %s handshakes PORT N\n"
            "       %s idle --links K --idle SECONDS [--keepalive SECONDS] [--json]\n"
            "       %s rpc-serve [--corrupt-every N] [--drop-every N]\n"
            "       %s rpc-client PORT --links L --outstanding P --size S --duration SEC\n"
            "                  [--warmup SEC] [--drain-timeout SEC] [--rate R] [--fanin N]\n"
            "       %s hol-serve\n"
            "       %s hol-client PORT --mode alone|same|separate [--duration S] [--warmup S]\n"
            "                  [--rate N] [--size 8..64] [--bulk N]\n"
            "QUIC (ngtcp2 %s + GnuTLS %s) drain peer for the Pure benchmark.\n",
            prog, prog, prog, prog, prog, prog, prog, prog, prog, ngtcp2_version(0)->version_str,
            gnutls_check_version(NULL));
}

int idle_main(int argc, char **argv);       /* idle.c: the idle-links experiment */
int rpc_serve_main(int argc, char **argv);  /* rpc.c: the RPC workload's server */
int rpc_client_main(int argc, char **argv); /* rpc.c: and its client */
int hol_serve_main(int argc, char **argv);  /* hol.c: the head-of-line benchmark's server */
int hol_client_main(int argc, char **argv); /* hol.c: and its client */

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "idle") == 0)
        return idle_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "rpc-serve") == 0)
        return rpc_serve_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "rpc-client") == 0)
        return rpc_client_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "hol-serve") == 0)
        return hol_serve_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "hol-client") == 0)
        return hol_client_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "serve") == 0 && argc == 2)
        return serve(0);
    if (argc == 3 && strcmp(argv[1], "serve") == 0 && strcmp(argv[2], "--echo") == 0)
        return serve(1);
    if (argc >= 2 && strcmp(argv[1], "ping") == 0) {
        if (argc != 5) {
            usage(stderr);
            return 2;
        }
        return ping(argv[2], argv[3], argv[4]);
    }
    if (argc >= 2 && strcmp(argv[1], "handshakes") == 0) {
        if (argc != 4) {
            usage(stderr);
            return 2;
        }
        return handshakes(argv[2], argv[3]);
    }
    if (argc >= 2 && strcmp(argv[1], "drain") == 0) {
        if (argc != 5) {
            usage(stderr);
            return 2;
        }
        return drain(argv[2], argv[3], argv[4]);
    }
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
