/* SPDX-License-Identifier: MIT */
/* The head-of-line benchmark over QUIC with ngtcp2 (bench/run.py hol, issue #23), on
 * bench/hol_work.h (frames, the goodput query, timing and the output line, shared with the
 * TCP+TLS peer and mirrored by quinn's):
 *
 *   ngtcp2 hol-serve
 *       binds 127.0.0.1:0, prints {"port": N, "service": "hol"}; serves connections one after
 *       another (a new client's Initial replaces the connection) until SIGTERM/SIGINT. On every
 *       bidirectional stream, frames of at most 64 bytes are echoed on that stream (a query is
 *       answered), longer ones (bulk) counted.
 *   ngtcp2 hol-client PORT --mode alone|same|separate [--duration S] [--warmup S] [--rate N]
 *                     [--size N] [--bulk N]
 *       one connection to 127.0.0.1:PORT. `alone`: requests on one stream; `same`: bulk frames
 *       and requests on one stream, a request waiting for the bulk frame being sent to have been
 *       wholly handed to ngtcp2; `separate`: bulk on one stream, requests on another.
 *
 * ngtcp2 leaves buffering and stream scheduling to the application: nothing is queued inside
 * ngtcp2, the application offers stream data each time it builds a packet. This peer offers the
 * request stream's data first, then the bulk's, one stream per packet, so in `separate` a due
 * request goes into the next packet the congestion window and pacer allow. Bulk data is offered
 * straight from one fixed frame (u32 length + the pattern), requests and echoes from storage that
 * stays put until the connection ends (ngtcp2 keeps pointers to unacknowledged data).
 * Transport: 1472-byte datagrams, CUBIC (ngtcp2's default, set explicitly), 16 MiB stream and
 * 64 MiB connection windows, 4 MiB socket buffers, GSO sends, TLS as the drain (shared.c). */
#define _GNU_SOURCE
#include "hol_work.h"
#include "shared.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>

#define H_PAYLOAD 1472
#define H_BURST 16 /* packets per GSO sendmsg */
#define H_BURSTS 8 /* bursts per loop turn */
#define H_SOCKBUF (4 << 20)
#define H_CONN_WINDOW (64ull << 20)
#define H_STREAM_WINDOW (16ull << 20)
#define H_ALPN "pure-hol"
#define H_IDLE (30 * NGTCP2_SECONDS)
#define H_CHUNK 65536 /* stored stream bytes: fixed chunks, never moved */
#define H_OFFER 16384 /* contiguous bytes offered per writev call */
#define H_MAX_STREAMS 4
#define H_SCID_LEN 16

static const char *hprog = "ngtcp2";
static volatile sig_atomic_t h_stop;
static void h_on_signal(int sig)
{
    (void)sig;
    h_stop = 1;
}

/* Stream bytes kept until the connection ends: appended at `written`, offered from `sent`. */
typedef struct slog {
    uint8_t **ch;
    size_t nch, cap;
    uint64_t written, sent;
} slog;

static int slog_append(slog *l, const uint8_t *d, size_t n)
{
    while (n) {
        size_t at = (size_t)(l->written % H_CHUNK);
        if (at == 0 && l->written / H_CHUNK == l->nch) {
            if (l->nch == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 16;
                uint8_t **c = realloc(l->ch, cap * sizeof *c);
                if (!c)
                    return -1;
                l->ch = c, l->cap = cap;
            }
            if (!(l->ch[l->nch] = malloc(H_CHUNK)))
                return -1;
            l->nch++;
        }
        size_t t = H_CHUNK - at < n ? H_CHUNK - at : n;
        memcpy(l->ch[l->written / H_CHUNK] + at, d, t);
        l->written += t, d += t, n -= t;
    }
    return 0;
}

static void slog_free(slog *l)
{
    for (size_t i = 0; i < l->nch; i++)
        free(l->ch[i]);
    free(l->ch);
    memset(l, 0, sizeof *l);
}

typedef struct hstream {
    int64_t id;
    int requests, bulk; /* client: what this stream carries */
    hol_framer fr;
    uint64_t credit;    /* bytes consumed, not yet returned as flow control */
    slog out;           /* requests (client) or echoes (server) */
    const uint8_t *cur; /* client: the bulk frame being offered */
    size_t cur_len, cur_off;
    int blocked; /* flow-control blocked during this burst */
} hstream;

typedef struct hpeer {
    int server, fd;
    struct sockaddr_storage local, remote;
    socklen_t locallen, remotelen;
    gnutls_certificate_credentials_t cred;
    gnutls_session_t tls;
    ngtcp2_conn *conn;
    ngtcp2_crypto_conn_ref ref;
    ngtcp2_path_storage ps;
    ngtcp2_cid odcid, cids[8];
    size_t ncids;
    int handshake_done, done, failed;
    char err[256];
    hstream st[H_MAX_STREAMS];
    int nst;
    /* server */
    hol_bulklog log;
    /* client */
    hol_client *c;
    int bulk_on;
    /* TX: one GSO burst */
    uint8_t tx[H_BURST * H_PAYLOAD];
    size_t txlen, txpkts;
    int txpending;
} hpeer;

static void hfail(hpeer *p, const char *fmt, ...)
{
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err, sizeof p->err, fmt, ap);
        va_end(ap);
    }
    p->failed = p->done = 1;
}

static ngtcp2_conn *h_get_conn(ngtcp2_crypto_conn_ref *ref)
{
    return ((hpeer *)ref->user_data)->conn;
}

static hstream *stream_of(hpeer *p, int64_t id, int create)
{
    for (int i = 0; i < p->nst; i++)
        if (p->st[i].id == id)
            return &p->st[i];
    if (!create || p->nst == H_MAX_STREAMS)
        return NULL;
    hstream *s = &p->st[p->nst++];
    memset(s, 0, sizeof *s);
    s->id = id;
    return s;
}

static void streams_free(hpeer *p)
{
    for (int i = 0; i < p->nst; i++)
        slog_free(&p->st[i].out);
    p->nst = 0;
}

/* ---- callbacks ---- */

static int h_new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *ud)
{
    hpeer *p = ud;
    (void)conn;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0 ||
        gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    if (p->ncids < sizeof p->cids / sizeof p->cids[0])
        p->cids[p->ncids++] = *cid;
    return 0;
}

static int h_handshake_completed(ngtcp2_conn *conn, void *ud)
{
    hpeer *p = ud;
    (void)conn;
    if (gnutls_cipher_get(p->tls) != GNUTLS_CIPHER_AES_128_GCM)
        fprintf(stderr, "%s: warning: negotiated %s, not TLS_AES_128_GCM_SHA256\n", hprog,
                gnutls_ciphersuite_get(p->tls));
    p->handshake_done = 1;
    return 0;
}

typedef struct srv_arg {
    hpeer *p;
    hstream *s;
    int oom;
} srv_arg;

static void h_srv_small(void *arg, const uint8_t *d, size_t len)
{
    srv_arg *a = arg;
    uint8_t out[4 + HOL_SMALL_MAX];
    size_t n = hol_server_reply(&a->p->log, d, len, out);
    if (slog_append(&a->s->out, out, n))
        a->oom = 1;
}

static int h_recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t id, uint64_t offset,
                              const uint8_t *data, size_t len, void *ud, void *sud)
{
    hpeer *p = ud;
    (void)conn, (void)flags, (void)offset, (void)sud;
    hstream *s = stream_of(p, id, p->server);
    if (!s) {
        snprintf(p->err, sizeof p->err, "data on an unexpected stream %" PRId64, id);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    s->credit += len;
    uint64_t bulk = 0;
    int r;
    if (p->server) {
        srv_arg a = {p, s, 0};
        r = hol_feed(&s->fr, data, len, h_srv_small, &a, &bulk);
        if (a.oom) {
            snprintf(p->err, sizeof p->err, "out of memory for echoes");
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        if (bulk)
            hol_bulklog_add(&p->log, bulk, hol_now_ns());
    } else {
        r = hol_feed(&s->fr, data, len, hol_client_small, p->c, &bulk);
    }
    if (r) {
        snprintf(p->err, sizeof p->err, "a frame over the %u-byte limit on stream %" PRId64,
                 HOL_MAX_FRAME, id);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

static void h_settings(ngtcp2_settings *s, ngtcp2_transport_params *tp, int server)
{
    ngtcp2_settings_default(s);
    s->initial_ts = hol_now_ns();
    s->max_tx_udp_payload_size = H_PAYLOAD;
    s->no_tx_udp_payload_size_shaping = 1;
    s->no_pmtud = 1;
    s->max_window = H_CONN_WINDOW;
    s->max_stream_window = H_STREAM_WINDOW;
    s->handshake_timeout = 10 * NGTCP2_SECONDS;
    s->cc_algo = NGTCP2_CC_ALGO_CUBIC;
    ngtcp2_transport_params_default(tp);
    tp->initial_max_data = H_CONN_WINDOW;
    tp->initial_max_stream_data_bidi_local = H_STREAM_WINDOW;
    tp->initial_max_stream_data_bidi_remote = H_STREAM_WINDOW;
    tp->initial_max_streams_bidi = server ? H_MAX_STREAMS : 0;
    tp->initial_max_streams_uni = 0;
    tp->max_idle_timeout = H_IDLE;
    tp->max_udp_payload_size = H_PAYLOAD;
}

static void h_callbacks(ngtcp2_callbacks *cb, int server)
{
    nq_fill_callbacks(cb, server, h_handshake_completed, h_recv_stream_data, h_new_cid);
}

static int h_tls(hpeer *p)
{
    p->ref.get_conn = h_get_conn;
    p->ref.user_data = p;
    return nq_tls_session(&p->tls, p->cred, p->server, H_ALPN, &p->ref, hprog);
}

static void h_conn_free(hpeer *p)
{
    if (p->conn)
        ngtcp2_conn_del(p->conn);
    if (p->tls)
        gnutls_deinit(p->tls);
    p->conn = NULL, p->tls = NULL;
    streams_free(p);
    hol_bulklog_free(&p->log);
}

/* ---- I/O ---- */

static int h_flush(hpeer *p)
{
    if (!p->txpending)
        return 0;
    struct iovec iov = {p->tx, p->txlen};
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } cm;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    if (p->server)
        msg.msg_name = &p->remote, msg.msg_namelen = p->remotelen;
    msg.msg_iov = &iov, msg.msg_iovlen = 1;
    if (p->txpkts > 1) {
        memset(&cm, 0, sizeof cm);
        msg.msg_control = cm.buf, msg.msg_controllen = sizeof cm.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_UDP, c->cmsg_type = UDP_SEGMENT,
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t seg = H_PAYLOAD;
        memcpy(CMSG_DATA(c), &seg, sizeof seg);
    }
    for (;;) {
        if (sendmsg(p->fd, &msg, 0) >= 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return 1;
        if (errno == ECONNREFUSED && !p->server) {
            hfail(p, "nothing is listening on the server port");
            return -1;
        }
        if (p->server) { /* a client that went away: drop the burst */
            p->txpending = 0;
            return 0;
        }
        hfail(p, "sendmsg: %s", strerror(errno));
        return -1;
    }
    p->txpending = 0;
    return 0;
}

static void h_conn_error(hpeer *p, const char *what, int rv)
{
    if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING) {
        ngtcp2_connection_close_error ce;
        ngtcp2_conn_get_connection_close_error(p->conn, &ce);
        if (ce.error_code == 0 && p->server)
            p->done = 1;
        else
            hfail(p, "the peer closed the connection (error 0x%" PRIx64 ": %.*s)", ce.error_code,
                  (int)ce.reasonlen, ce.reason ? (const char *)ce.reason : "");
        return;
    }
    if (p->err[0])
        hfail(p, "%s", p->err);
    else
        hfail(p, "%s: %s", what, ngtcp2_strerror(rv));
}

/* The stream whose data goes into the next packet and that data (requests before bulk). */
static hstream *h_pick(hpeer *p, ngtcp2_vec *v)
{
    hstream *best = NULL;
    for (int pass = 0; pass < 2 && !best; pass++)
        for (int i = 0; i < p->nst; i++) {
            hstream *s = &p->st[i];
            if (s->blocked || (pass == 0 && s->cur) || (pass == 1 && !s->cur))
                continue;
            if (s->cur) {
                v->base = (uint8_t *)s->cur + s->cur_off;
                v->len = s->cur_len - s->cur_off < H_OFFER ? s->cur_len - s->cur_off : H_OFFER;
                return s;
            }
            if (s->out.sent < s->out.written) {
                size_t at = (size_t)(s->out.sent % H_CHUNK);
                uint64_t rem = s->out.written - s->out.sent;
                v->base = s->out.ch[s->out.sent / H_CHUNK] + at;
                v->len = H_CHUNK - at < rem ? H_CHUNK - at : (size_t)rem;
                if (v->len > H_OFFER)
                    v->len = H_OFFER;
                return s;
            }
        }
    return NULL;
}

static void h_advance(hstream *s, size_t n)
{
    if (s->cur) {
        s->cur_off += n;
        if (s->cur_off == s->cur_len)
            s->cur = NULL;
    } else {
        s->out.sent += n;
    }
}

/* Builds and sends bursts. Returns packets written, or -1. *pending: stream data left. */
static int h_write(hpeer *p, int *pending)
{
    ngtcp2_tstamp ts = hol_now_ns();
    int total = 0;
    *pending = 0;
    if (!p->conn || p->done)
        return 0;
    if (p->txpending) {
        int r = h_flush(p);
        if (r)
            return r < 0 ? -1 : 0;
    }
    for (int i = 0; i < p->nst; i++)
        p->st[i].blocked = 0;
    for (int b = 0; b < H_BURSTS; b++) {
        size_t maxpkts = ngtcp2_conn_get_send_quantum(p->conn) / H_PAYLOAD;
        if (maxpkts < 1)
            maxpkts = 1;
        if (maxpkts > H_BURST)
            maxpkts = H_BURST;
        p->txlen = p->txpkts = 0;
        for (;;) {
            ngtcp2_vec v = {0};
            hstream *s = h_pick(p, &v);
            ngtcp2_ssize dl = -1;
            ngtcp2_pkt_info pi;
            ngtcp2_ssize nw = ngtcp2_conn_writev_stream(
                p->conn, &p->ps.path, &pi, p->tx + p->txlen, H_PAYLOAD, &dl,
                NGTCP2_WRITE_STREAM_FLAG_NONE, s ? s->id : -1, s ? &v : NULL, s ? 1 : 0, ts);
            if (nw < 0) {
                if (s && (nw == NGTCP2_ERR_STREAM_DATA_BLOCKED || nw == NGTCP2_ERR_STREAM_SHUT_WR ||
                          nw == NGTCP2_ERR_STREAM_NOT_FOUND)) {
                    s->blocked = 1;
                    continue;
                }
                h_conn_error(p, "ngtcp2_conn_writev_stream", (int)nw);
                return -1;
            }
            if (s && dl > 0)
                h_advance(s, (size_t)dl);
            if (nw == 0) {
                *pending = s != NULL;
                break;
            }
            p->txlen += (size_t)nw;
            p->txpkts++;
            if ((size_t)nw < H_PAYLOAD || p->txpkts >= maxpkts)
                break;
        }
        if (!p->txpkts)
            break;
        total += (int)p->txpkts;
        p->txpending = 1;
        if (h_flush(p) < 0)
            return -1;
        if (p->txpending)
            break; /* socket full */
    }
    if (total)
        ngtcp2_conn_update_pkt_tx_time(p->conn, ts);
    return total;
}

static int h_cid_ours(const hpeer *p, const uint8_t *d, size_t n)
{
    if (n == p->odcid.datalen && !memcmp(d, p->odcid.data, n))
        return 1;
    for (size_t i = 0; i < p->ncids; i++)
        if (n == p->cids[i].datalen && !memcmp(d, p->cids[i].data, n))
            return 1;
    return 0;
}

static int h_accept(hpeer *p, const uint8_t *pkt, size_t len, const struct sockaddr_storage *from,
                    socklen_t fromlen)
{
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, pkt, len) != 0)
        return -1;
    if (p->conn) {
        fprintf(stderr,
                "%s hol-serve: a new client; dropping the previous connection (%" PRIu64
                " bulk bytes)\n",
                hprog, p->log.total);
        h_conn_free(p);
    }
    p->done = p->failed = p->handshake_done = 0;
    p->err[0] = 0;
    p->txpending = 0;
    memcpy(&p->remote, from, fromlen);
    p->remotelen = fromlen;
    if (h_tls(p))
        return -1;
    ngtcp2_cid scid;
    scid.datalen = H_SCID_LEN;
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    p->cids[0] = scid;
    p->ncids = 1;
    p->odcid = hd.dcid;
    ngtcp2_callbacks cb;
    ngtcp2_settings s;
    ngtcp2_transport_params tp;
    h_callbacks(&cb, 1);
    h_settings(&s, &tp, 1);
    NQ_SET_ORIGINAL_DCID(&tp, hd.dcid);
    ngtcp2_path path = {{(struct sockaddr *)&p->local, p->locallen},
                        {(struct sockaddr *)&p->remote, p->remotelen},
                        NULL};
    int rv =
        ngtcp2_conn_server_new(&p->conn, &hd.scid, &scid, &path, hd.version, &cb, &s, &tp, NULL, p);
    if (rv) {
        fprintf(stderr, "%s hol-serve: ngtcp2_conn_server_new: %s\n", hprog, ngtcp2_strerror(rv));
        h_conn_free(p);
        return -1;
    }
    ngtcp2_conn_set_tls_native_handle(p->conn, p->tls);
    ngtcp2_path_storage_zero(&p->ps);
    return 0;
}

static void h_feed(hpeer *p, const uint8_t *pkt, size_t len, struct sockaddr_storage *from,
                   socklen_t fromlen)
{
    if (p->server) {
        int fresh = !p->conn;
        if (!fresh && (pkt[0] & 0x80)) {
            ngtcp2_version_cid vc;
            if (ngtcp2_pkt_decode_version_cid(&vc, pkt, len, H_SCID_LEN) == 0 &&
                !h_cid_ours(p, vc.dcid, vc.dcidlen))
                fresh = 1;
        }
        if (fresh && h_accept(p, pkt, len, from, fromlen))
            return;
    }
    if (!p->conn || p->done)
        return;
    ngtcp2_path path = {
        {(struct sockaddr *)&p->local, p->locallen}, {(struct sockaddr *)from, fromlen}, NULL};
    ngtcp2_pkt_info pi = {0};
    int rv = ngtcp2_conn_read_pkt(p->conn, &path, &pi, pkt, len, hol_now_ns());
    if (rv)
        h_conn_error(p, "ngtcp2_conn_read_pkt", rv);
}

/* Reads what the socket has (at most 64 datagrams a turn). Returns datagrams read. */
static int h_read(hpeer *p)
{
    static uint8_t buf[65536];
    int got = 0;
    for (; got < 64; got++) {
        struct sockaddr_storage from;
        struct iovec iov = {buf, sizeof buf};
        struct msghdr msg = {
            .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1};
        ssize_t n = recvmsg(p->fd, &msg, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK && !p->server)
                hfail(p, "recvmsg: %s", strerror(errno));
            break;
        }
        if (n > 0)
            h_feed(p, buf, (size_t)n, &from, msg.msg_namelen);
        if (p->done && !p->server)
            break;
    }
    /* the flow-control credit the application consumed */
    for (int i = 0; p->conn && !p->done && i < p->nst; i++)
        if (p->st[i].credit) {
            ngtcp2_conn_extend_max_stream_offset(p->conn, p->st[i].id, p->st[i].credit);
            ngtcp2_conn_extend_max_offset(p->conn, p->st[i].credit);
            p->st[i].credit = 0;
        }
    return got;
}

static void h_timer(hpeer *p)
{
    if (!p->conn || p->done)
        return;
    ngtcp2_tstamp now = hol_now_ns();
    if (ngtcp2_conn_get_expiry(p->conn) <= now) {
        int rv = ngtcp2_conn_handle_expiry(p->conn, now);
        if (rv)
            h_conn_error(p, "ngtcp2_conn_handle_expiry", rv);
    }
}

/* Waits for the socket, the connection's timer, or `wake` (ns, UINT64_MAX: none). When stream
 * data is left unsent (the congestion window or the pacer held it; ngtcp2 0.12's expiry does not
 * count the pacer), it wakes after about one packet's pacing interval. */
static void h_wait(hpeer *p, uint64_t wake, int pending)
{
    uint64_t now = hol_now_ns();
    if (p->conn && !p->done) {
        uint64_t e = ngtcp2_conn_get_expiry(p->conn);
        if (e < wake)
            wake = e;
        if (pending) {
#if NGTCP2_VERSION_NUM >= 0x010000
            uint64_t d = 100000; /* 1.x keeps its pacing rate to itself */
#else
            ngtcp2_conn_stat cs;
            ngtcp2_conn_get_conn_stat(p->conn, &cs);
            uint64_t d = cs.pacing_rate > 0 ? (uint64_t)(H_PAYLOAD / cs.pacing_rate) : 100000;
#endif
            if (d < 20000)
                d = 20000;
            if (d > 1000000)
                d = 1000000;
            if (now + d < wake)
                wake = now + d;
        }
    }
    struct pollfd pfd = {p->fd, POLLIN | (p->txpending ? POLLOUT : 0), 0};
    struct timespec ts, *tp = NULL;
    if (wake != UINT64_MAX) {
        uint64_t d = wake > now ? wake - now : 0;
        ts.tv_sec = (time_t)(d / 1000000000ull), ts.tv_nsec = (long)(d % 1000000000ull);
        tp = &ts;
    }
    if (ppoll(&pfd, 1, tp, NULL) < 0 && errno != EINTR)
        hfail(p, "ppoll: %s", strerror(errno));
}

static int h_socket(hpeer *p)
{
    p->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->fd < 0)
        return -1;
    nq_socket_bufs(p->fd, H_SOCKBUF);
    return 0;
}

/* ---- server ---- */

int hol_serve_main(int argc, char **argv)
{
    (void)argv;
    if (argc != 0) {
        fprintf(stderr, "usage: %s hol-serve\n", hprog);
        return 2;
    }
    static hpeer P;
    hpeer *p = &P;
    p->server = 1;
    if (nq_server_cred(&p->cred, hprog) || h_socket(p))
        return 1;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->locallen = sizeof p->local;
    if (bind(p->fd, (struct sockaddr *)&sin, sizeof sin) ||
        getsockname(p->fd, (struct sockaddr *)&p->local, &p->locallen)) {
        fprintf(stderr, "%s hol-serve: bind 127.0.0.1:0: %s\n", hprog, strerror(errno));
        return 1;
    }
    printf("{\"port\": %u, \"service\": \"hol\"}\n",
           ntohs(((struct sockaddr_in *)&p->local)->sin_port));
    fflush(stdout);
    struct sigaction sa = {.sa_handler = h_on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    while (!h_stop) {
        int got = h_read(p);
        h_timer(p);
        int pending = 0, wrote = h_write(p, &pending);
        if (p->conn && p->done) {
            if (p->failed)
                fprintf(stderr, "%s hol-serve: connection failed: %s\n", hprog, p->err);
            fprintf(stderr, "%s hol-serve: connection done, %" PRIu64 " bulk bytes\n", hprog,
                    p->log.total);
            h_conn_free(p);
            p->done = p->failed = 0;
            p->err[0] = 0;
            continue;
        }
        if (!got && wrote <= 0)
            h_wait(p, hol_now_ns() + 200000000ull, pending); /* 200 ms: see h_stop */
    }
    h_conn_free(p);
    return 0;
}

/* ---- client ---- */

/* Due requests into the streams that carry them (a stream offering a bulk frame takes them after
 * it); the bulk frame next where the stream has nothing else. */
static void h_refill(hpeer *p, uint64_t now)
{
    static uint8_t buf[4096];
    for (int i = 0; i < p->nst; i++) {
        hstream *s = &p->st[i];
        if (s->cur)
            continue;
        if (s->requests) {
            size_t n;
            while ((n = hol_take_due(p->c, now, buf, sizeof buf)) > 0)
                if (slog_append(&s->out, buf, n))
                    hfail(p, "out of memory for requests");
        }
        if (s->bulk && p->bulk_on && s->out.sent == s->out.written) {
            s->cur = p->c->bulk_frame;
            s->cur_len = p->c->bulk_len;
            s->cur_off = 0;
        }
    }
}

int hol_client_main(int argc, char **argv)
{
    const char *port_s = argc > 0 ? argv[0] : NULL;
    hol_opts o;
    hol_opts_default(&o);
    for (int i = 1; i < argc; i += 2)
        if (hol_opt(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL) != 1) {
            fprintf(stderr, "%s hol-client: bad or unknown argument '%s'\n", hprog, argv[i]);
            goto usage;
        }
    char *end = NULL;
    long port = port_s ? strtol(port_s, &end, 10) : 0;
    if (!port_s || *end || port < 1 || port > 65535 || o.mode < 0)
        goto usage;

    static hpeer P;
    hpeer *p = &P;
    hol_client c;
    gnutls_certificate_allocate_credentials(&p->cred);
    if (h_socket(p))
        return 1;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memcpy(&p->remote, &sin, sizeof sin);
    p->remotelen = sizeof sin;
    p->locallen = sizeof p->local;
    if (connect(p->fd, (struct sockaddr *)&sin, sizeof sin) ||
        getsockname(p->fd, (struct sockaddr *)&p->local, &p->locallen)) {
        fprintf(stderr, "%s hol-client: connect 127.0.0.1:%ld: %s\n", hprog, port, strerror(errno));
        return 1;
    }
    if (h_tls(p))
        return 1;
    ngtcp2_cid dcid, scid;
    dcid.datalen = 18;
    gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen);
    scid.datalen = H_SCID_LEN;
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    ngtcp2_callbacks cb;
    ngtcp2_settings s;
    ngtcp2_transport_params tp;
    h_callbacks(&cb, 0);
    h_settings(&s, &tp, 0);
    ngtcp2_path path = {{(struct sockaddr *)&p->local, p->locallen},
                        {(struct sockaddr *)&p->remote, p->remotelen},
                        NULL};
    int rv = ngtcp2_conn_client_new(&p->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &s,
                                    &tp, NULL, p);
    if (rv) {
        fprintf(stderr, "%s hol-client: ngtcp2_conn_client_new: %s\n", hprog, ngtcp2_strerror(rv));
        return 1;
    }
    ngtcp2_conn_set_tls_native_handle(p->conn, p->tls);
    ngtcp2_path_storage_zero(&p->ps);

    uint64_t deadline = hol_now_ns() + 10000000000ull;
    int pending = 0;
    while (!p->handshake_done && !p->done && hol_now_ns() < deadline) {
        int got = h_read(p);
        h_timer(p);
        int wrote = h_write(p, &pending);
        if (!got && wrote <= 0)
            h_wait(p, deadline, 0);
    }
    if (!p->handshake_done) {
        fprintf(stderr, "%s hol-client: no handshake with 127.0.0.1:%ld: %s\n", hprog, port,
                p->err[0] ? p->err : "timed out");
        return 1;
    }
    /* the streams: requests on the first; bulk on it too (same) or on a second (separate) */
    int64_t ids[2];
    int nids = o.mode == HOL_SEPARATE ? 2 : 1;
    for (int i = 0; i < nids; i++)
        if ((rv = ngtcp2_conn_open_bidi_stream(p->conn, &ids[i], NULL))) {
            fprintf(stderr, "%s hol-client: opening a stream: %s\n", hprog, ngtcp2_strerror(rv));
            return 1;
        }
    hstream *rs = stream_of(p, ids[0], 1);
    rs->requests = 1;
    rs->bulk = o.mode == HOL_SAME;
    if (o.mode == HOL_SEPARATE)
        stream_of(p, ids[1], 1)->bulk = 1;

    if (hol_client_start(&c, &o)) {
        fprintf(stderr, "%s hol-client: out of memory\n", hprog);
        return 1;
    }
    p->c = &c;
    p->bulk_on = o.mode != HOL_ALONE;
    uint64_t t_from = 0, t_to = 0, drain_end = 0, query_end = 0;
    int query_sent = 0;
    while (!p->done) {
        uint64_t now = hol_now_ns();
        if (!t_from && now >= c.from)
            t_from = now;
        if (!t_to && now >= c.to)
            t_to = now, drain_end = now + HOL_DRAIN_NS;
        if (t_to && p->bulk_on && (hol_all_answered(&c) || now >= drain_end))
            p->bulk_on = 0; /* the window's answers are in: the bulk stops after its frame */
        if (t_to && !p->bulk_on && !query_sent && !rs->cur &&
            (hol_all_answered(&c) || now >= drain_end)) {
            uint8_t q[4 + HOL_QUERY_LEN];
            hol_query_frame(q, t_from, t_to);
            if (slog_append(&rs->out, q, sizeof q))
                hfail(p, "out of memory");
            query_sent = 1;
            query_end = now + HOL_DRAIN_NS;
        }
        if (c.answered_query || (query_sent && now >= query_end))
            break;
        h_refill(p, now);
        int got = h_read(p);
        h_timer(p);
        int wrote = h_write(p, &pending);
        if (got || wrote > 0)
            continue;
        uint64_t wake = query_sent ? query_end : UINT64_MAX;
        if (!hol_requests_done(&c))
            wake = hol_next_due(&c);
        if (!t_from && c.from < wake)
            wake = c.from;
        if (!t_to && c.to < wake)
            wake = c.to;
        if (t_to && !query_sent && now + 5000000 < wake)
            wake = now + 5000000;
        h_wait(p, wake, pending);
    }
    if (!t_to)
        t_to = hol_now_ns();
    if (!t_from)
        t_from = t_to;
    ngtcp2_conn_stat cs;
    ngtcp2_conn_get_conn_stat(p->conn, &cs);
    char extra[256];
#if NGTCP2_VERSION_NUM >= 0x010000 /* 1.x does not report its probe timeouts */
    snprintf(extra, sizeof extra, ", \"rtt_us\": %.1f, \"min_rtt_us\": %.1f, \"cwnd\": %" PRIu64,
             cs.smoothed_rtt / 1e3, cs.min_rtt / 1e3, cs.cwnd);
#else
    snprintf(extra, sizeof extra,
             ", \"rtt_us\": %.1f, \"min_rtt_us\": %.1f, \"cwnd\": %" PRIu64 ", \"ptos\": %zu",
             cs.smoothed_rtt / 1e3, cs.min_rtt / 1e3, cs.cwnd, cs.pto_count);
#endif
    if (p->failed)
        fprintf(stderr, "%s hol-client: %s\n", hprog, p->err);
    else if (!c.answered_query)
        fprintf(stderr, "%s hol-client: no answer to the goodput query within %llu s\n", hprog,
                (unsigned long long)(HOL_DRAIN_NS / 1000000000ull));
    hol_print(&c, o.mode, t_from, t_to, extra);
    int ok = !p->failed && c.n_rtt > 0 && c.answered_query;
    /* a CONNECTION_CLOSE so the server is free for the next client at once */
    if (!p->failed) {
        ngtcp2_connection_close_error ce;
        ngtcp2_pkt_info pi;
        ngtcp2_connection_close_error_default(&ce);
        ngtcp2_connection_close_error_set_application_error(&ce, 0, NULL, 0);
        ngtcp2_ssize nw = ngtcp2_conn_write_connection_close(p->conn, &p->ps.path, &pi, p->tx,
                                                             H_PAYLOAD, &ce, hol_now_ns());
        if (nw > 0 && !p->txpending) {
            p->txlen = (size_t)nw, p->txpkts = 1, p->txpending = 1;
            (void)h_flush(p);
        }
    }
    h_conn_free(p);
    hol_client_free(&c);
    return ok ? 0 : 1;
usage:
    fprintf(stderr, "usage: %s hol-client PORT " HOL_CLIENT_OPTS "\n", hprog);
    return 2;
}
