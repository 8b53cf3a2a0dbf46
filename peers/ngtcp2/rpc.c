/* SPDX-License-Identifier: MIT */
/*
 * ngtcp2 rpc-serve / rpc-client: the RPC workload over QUIC (bench/README.md, "RPC"; issue #14).
 * The requests, their check, the latency histogram and the report are bench/rpc_work.h's, as for
 * Pure's tools/rpc_bench.c and TCP + TLS's peers/tls/rpc.c, and both sides behave as those do.
 *
 *   ngtcp2 rpc-serve [--corrupt-every N] [--drop-every N]
 *       binds 127.0.0.1:0, prints {"port": N, ...}, serves any number of connections until
 *       SIGTERM or SIGINT, then prints {"served": N, "requests": N, "links": L, ...}. On each
 *       connection's one bidirectional stream every request (u32 BE length + body) is sent back
 *       unchanged, except a one-way request (rpc_server_echoes), which is only counted.
 *   ngtcp2 rpc-client PORT --links L --outstanding P --size S --duration SEC [--warmup SEC]
 *                     [--drain-timeout SEC] [--rate R] [--fanin N]
 *       L connections (at most 256 handshakes under way), one bidirectional stream each, P
 *       requests in flight per link (or R per second in all with --rate), every reply checked;
 *       with --fanin N each link sends N one-way requests and waits for the echo of its last.
 *
 * One thread and ONE UDP socket per side: connections are told apart by connection ID (every CID
 * starts with its connection's index, shared.h), a client's first Initials by the DCID it chose
 * (nq_cidmap). Timers: one min-heap over ngtcp2_conn_get_expiry. A loop turn reads one
 * recvmmsg batch (GRO: each datagram may hold many packets), handles due timers, writes every
 * connection the batch touched, and sends what they wrote with one sendmmsg: a message per
 * connection burst, several packets of one connection in one message with UDP_SEGMENT (GSO).
 *
 * Stream data lives in a per-connection send buffer of fixed 4 KiB chunks (sbuf below) that
 * never move, because ngtcp2 keeps pointers into the data until the peer acknowledges it
 * (acked_stream_data_offset then returns the chunks to a free list): in steady state neither
 * side allocates per request. The server copies each echoed request straight into that buffer
 * as it arrives; one-way requests are not copied at all.
 */
#define _GNU_SOURCE
#include "shared.h"
#include "../../bench/rpc_work.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

int rpc_serve_main(int argc, char **argv);
int rpc_client_main(int argc, char **argv);

#define PROG "ngtcp2 rpc"
#define ALPN "pure-rpc"
#define MAX_PAYLOAD 1472 /* 1500-byte MTU path: IPv4 + UDP headers */
#define MAX_BURST 44     /* packets per GSO message (44 * 1472 < 64 KiB) */
#define TX_BUF (2u << 20)
#define TX_MSGS 256
#define RX_MSGS 8
#define RX_BUF 65536 /* one GRO datagram is at most 64 KiB */
#define SOCK_BUF (64 << 20)
#define CHUNK 4096
#define MAX_VECS 8
#define CONN_WINDOW (2u << 20)
#define STREAM_WINDOW (1u << 20)
#define MAX_WINDOW (16u << 20) /* flow-control auto-tuning limit */
#define IDLE_TIMEOUT (300 * NGTCP2_SECONDS)
#define HANDSHAKE_TIMEOUT (120 * NGTCP2_SECONDS)
#define PACE_RETRY (100 * 1000) /* ns: see conn_write */
#define MAX_HANDSHAKES 256
#define FANIN_AHEAD (64u << 10) /* fan-in: request bytes a link keeps written and unacknowledged   \
                                 */

/* ---- the send buffer: stream offsets [base, base + n * CHUNK) in n chunks ----
 * acked <= sent <= ready <= wpos: acknowledged, handed to ngtcp2, ready to send, written (the
 * server writes an echo as it arrives and makes it ready once the whole request is in). */
typedef struct sbuf {
    uint8_t **ring;
    uint32_t head, n, cap;
    uint64_t base, acked, sent, ready, wpos;
} sbuf;

typedef struct side side;

typedef struct rconn {
    nq_timer tm; /* first member: heap entries are cast back to the connection */
    ngtcp2_conn *conn;
    gnutls_session_t tls;
    ngtcp2_crypto_conn_ref ref;
    side *s;
    uint32_t idx;
    int64_t sid; /* the one bidirectional stream, -1 before it exists */
    uint8_t established, dirty, echo, echoed;
    const char *why; /* a framing error found in the stream callback */
    struct sockaddr_storage remote;
    socklen_t remotelen;
    ngtcp2_cid odcid; /* server: the client's first DCID (nq_cidmap key) */
    sbuf out;
    uint8_t hdr[4], head[8]; /* a frame's length prefix; the server's look at a request's seq */
    uint32_t hdr_have, flen, fhave;
    uint8_t *acc; /* client: a reply that came in pieces */
    uint64_t next_seq, next_reply, fanin_next;
} rconn;

typedef struct client client;

struct side {
    int server, fd;
    struct sockaddr_storage local, remote;
    socklen_t locallen, remotelen;
    gnutls_certificate_credentials_t cred;
    rconn **conns;
    uint32_t nconns, cap;
    nq_heap heap;
    nq_cidmap od;
    uint32_t *dirty, ndirty, dcap;
    uint8_t **pool; /* free chunks */
    size_t npool, pcap;
    /* what this turn sends: messages of one connection's packets each */
    uint8_t *tx;
    size_t txlen, mstart, mpkts;
    uint32_t nmsgs;
    struct mmsghdr msgs[TX_MSGS];
    struct iovec iov[TX_MSGS];
    struct sockaddr_storage to[TX_MSGS];
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } cm[TX_MSGS];
    uint64_t pkts_out, sendmsgs, send_drops, established, closed, failed;
    /* server */
    uint64_t corrupt_every, drop_every, requests, served, corrupted, dropped, oneway;
    client *k;
};

struct client {
    side s;
    uint64_t l, p, size, rate, fanin, last_seq;
    uint64_t started, lost, echoes, t_last;
    uint64_t *sent_at;
    uint8_t *pat, *scratch;
    int measuring, stopping, closing;
    /* --rate: links with a free slot, in the order they got it */
    uint32_t *tok;
    uint64_t tok_head, tok_n, issued, t_rate;
    char why[200];
    rpc_hist hist;
    rpc_result r;
};

static void cli_fail(client *k, const char *why)
{
    if (!k->r.first_error)
        k->r.first_error = why;
    if (k->r.errors++ < 5)
        fprintf(stderr, "ngtcp2 rpc-client: %s\n", why);
}

/* ---- send buffer ---- */

static uint8_t *chunk_get(side *s)
{
    return s->npool ? s->pool[--s->npool] : malloc(CHUNK);
}

static void chunk_put(side *s, uint8_t *p)
{
    if (s->npool == s->pcap) {
        size_t cap = s->pcap ? 2 * s->pcap : 1024;
        uint8_t **v = realloc(s->pool, cap * sizeof *v);
        if (!v) {
            free(p);
            return;
        }
        s->pool = v;
        s->pcap = cap;
    }
    s->pool[s->npool++] = p;
}

static uint8_t *sb_at(const sbuf *b, uint64_t off)
{
    uint64_t rel = off - b->base;
    return b->ring[(b->head + rel / CHUNK) & (b->cap - 1)] + rel % CHUNK;
}

static int sbuf_append(side *s, sbuf *b, const uint8_t *d, size_t n)
{
    if (b->n == 0)
        b->base = b->wpos;
    while (n) {
        if (b->wpos == b->base + (uint64_t)b->n * CHUNK) {
            if (b->n == b->cap) { /* the ring of chunk pointers grows; chunks stay put */
                uint32_t cap = b->cap ? 2 * b->cap : 4;
                uint8_t **r = malloc(cap * sizeof *r);
                if (!r)
                    return -1;
                for (uint32_t i = 0; i < b->n; i++)
                    r[i] = b->ring[(b->head + i) & (b->cap - 1)];
                free(b->ring);
                b->ring = r, b->cap = cap, b->head = 0;
            }
            uint8_t *c = chunk_get(s);
            if (!c)
                return -1;
            b->ring[(b->head + b->n++) & (b->cap - 1)] = c;
        }
        size_t room = CHUNK - (size_t)((b->wpos - b->base) % CHUNK), t = room < n ? room : n;
        memcpy(sb_at(b, b->wpos), d, t);
        b->wpos += t, d += t, n -= t;
    }
    return 0;
}

/* Vectors over [sent, ready). */
static size_t sbuf_vecs(const sbuf *b, ngtcp2_vec *v, size_t max)
{
    size_t nv = 0;
    for (uint64_t off = b->sent; off < b->ready && nv < max; nv++) {
        size_t room = CHUNK - (size_t)((off - b->base) % CHUNK);
        uint64_t left = b->ready - off;
        v[nv].base = sb_at(b, off);
        v[nv].len = left < room ? (size_t)left : room;
        off += v[nv].len;
    }
    return nv;
}

/* The peer acknowledged everything below `to`: whole chunks below it go back to the pool. */
static void sbuf_ack(side *s, sbuf *b, uint64_t to)
{
    if (to > b->acked)
        b->acked = to;
    int all = b->acked == b->wpos;
    while (b->n && (all || b->base + CHUNK <= b->acked)) {
        chunk_put(s, b->ring[b->head]);
        b->head = (b->head + 1) & (b->cap - 1);
        b->n--;
        b->base += CHUNK;
    }
}

static void sbuf_free(side *s, sbuf *b)
{
    for (uint32_t i = 0; i < b->n; i++)
        chunk_put(s, b->ring[(b->head + i) & (b->cap - 1)]);
    free(b->ring);
    memset(b, 0, sizeof *b);
}

/* ---- sending: sendmmsg of GSO messages ---- */

static void tx_flush(side *s)
{
    uint32_t i = 0;
    int waits = 0;
    while (i < s->nmsgs) {
        int r = sendmmsg(s->fd, s->msgs + i, s->nmsgs - i, 0);
        if (r > 0) {
            s->sendmsgs += (uint64_t)r;
            i += (uint32_t)r;
            continue;
        }
        if (errno == EINTR)
            continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) && waits++ < 50) {
            struct pollfd pfd = {s->fd, POLLOUT, 0};
            poll(&pfd, 1, 1);
            continue;
        }
        /* a full socket for 50 ms, or this message refused: QUIC's loss recovery resends */
        if (!s->server && errno == ECONNREFUSED && s->k && !s->k->closing)
            cli_fail(s->k, "the server's port is closed (ICMP port unreachable)");
        s->send_drops++;
        i++;
    }
    s->nmsgs = 0;
    s->txlen = s->mstart = s->mpkts = 0;
}

/* Ends the message being built (c's packets since mstart). */
static void tx_end_msg(side *s, rconn *c)
{
    if (!s->mpkts)
        return;
    struct mmsghdr *m = &s->msgs[s->nmsgs];
    memset(m, 0, sizeof *m);
    s->iov[s->nmsgs].iov_base = s->tx + s->mstart;
    s->iov[s->nmsgs].iov_len = s->txlen - s->mstart;
    m->msg_hdr.msg_iov = &s->iov[s->nmsgs];
    m->msg_hdr.msg_iovlen = 1;
    if (s->server) {
        memcpy(&s->to[s->nmsgs], &c->remote, c->remotelen);
        m->msg_hdr.msg_name = &s->to[s->nmsgs];
        m->msg_hdr.msg_namelen = c->remotelen;
    }
    if (s->mpkts > 1) {
        m->msg_hdr.msg_control = s->cm[s->nmsgs].buf;
        m->msg_hdr.msg_controllen = sizeof s->cm[s->nmsgs].buf;
        struct cmsghdr *h = CMSG_FIRSTHDR(&m->msg_hdr);
        h->cmsg_level = SOL_UDP;
        h->cmsg_type = UDP_SEGMENT;
        h->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t seg = MAX_PAYLOAD;
        memcpy(CMSG_DATA(h), &seg, sizeof seg);
    }
    s->pkts_out += s->mpkts;
    s->nmsgs++;
    s->mstart = s->txlen;
    s->mpkts = 0;
}

/* Makes room for one more packet of c. */
static uint8_t *tx_room(side *s, rconn *c)
{
    /* a message in progress always has its slot: nmsgs < TX_MSGS was checked at its start */
    if (s->txlen + MAX_PAYLOAD > TX_BUF || (s->mpkts == 0 && s->nmsgs == TX_MSGS)) {
        tx_end_msg(s, c);
        tx_flush(s);
    }
    return s->tx + s->txlen;
}

/* c wrote a packet of len bytes at tx_room(): a short one (or a full burst) ends the message. */
static void tx_packet(side *s, rconn *c, size_t len)
{
    s->txlen += len;
    s->mpkts++;
    if (len < MAX_PAYLOAD || s->mpkts == MAX_BURST)
        tx_end_msg(s, c);
}

/* ---- connections ---- */

static void mark_dirty(side *s, rconn *c)
{
    if (c->dirty)
        return;
    if (s->ndirty == s->dcap) {
        uint32_t cap = s->dcap ? 2 * s->dcap : 1024;
        uint32_t *v = realloc(s->dirty, cap * sizeof *v);
        if (!v)
            return; /* its timer writes it later */
        s->dirty = v, s->dcap = cap;
    }
    c->dirty = 1;
    s->dirty[s->ndirty++] = c->idx;
}

static rconn *conn_alloc(side *s)
{
    if (s->nconns == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 1024;
        rconn **v = realloc(s->conns, cap * sizeof *v);
        if (!v)
            return NULL;
        s->conns = v, s->cap = cap;
    }
    rconn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    nq_timer_init(&c->tm);
    c->s = s;
    c->sid = -1;
    c->idx = s->nconns++;
    s->conns[c->idx] = c;
    return c;
}

static void conn_free(side *s, rconn *c)
{
    nq_heap_remove(&s->heap, &c->tm);
    if (s->server && c->odcid.datalen)
        nq_cidmap_del(&s->od, c->odcid.data, c->odcid.datalen);
    if (c->conn)
        ngtcp2_conn_del(c->conn);
    if (c->tls)
        gnutls_deinit(c->tls);
    sbuf_free(s, &c->out);
    free(c->acc);
    s->conns[c->idx] = NULL;
    free(c);
}

/* c ended with ngtcp2 error rv from `what`: tells the peer if it can, counts it, frees c. */
static void conn_gone(side *s, rconn *c, const char *what, int rv)
{
    char msg[160];
    int peer_closed = rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING;
    if (peer_closed) {
        snprintf(msg, sizeof msg, "the %s closed a connection", s->server ? "client" : "server");
    } else if (rv == NGTCP2_ERR_IDLE_CLOSE) {
        snprintf(msg, sizeof msg, "a connection timed out (no packet for %d s)",
                 (int)(IDLE_TIMEOUT / NGTCP2_SECONDS));
    } else if (rv == NGTCP2_ERR_CALLBACK_FAILURE && c->why) {
        snprintf(msg, sizeof msg, "%s", c->why);
    } else {
        snprintf(msg, sizeof msg, "%s: %s", what, ngtcp2_strerror(rv));
    }
    if (!peer_closed && rv != NGTCP2_ERR_IDLE_CLOSE && rv != NGTCP2_ERR_HANDSHAKE_TIMEOUT &&
        !ngtcp2_conn_is_in_closing_period(c->conn) && !ngtcp2_conn_is_in_draining_period(c->conn)) {
        ngtcp2_connection_close_error ce;
        ngtcp2_pkt_info pi;
        ngtcp2_connection_close_error_default(&ce);
        if (c->why)
            ngtcp2_connection_close_error_set_application_error(&ce, 1, NULL, 0);
        else
            ngtcp2_connection_close_error_set_transport_error_liberr(&ce, rv, NULL, 0);
        uint8_t *p = tx_room(s, c);
        ngtcp2_ssize nw =
            ngtcp2_conn_write_connection_close(c->conn, NULL, &pi, p, MAX_PAYLOAD, &ce, nq_now());
        if (nw > 0) {
            tx_packet(s, c, (size_t)nw);
            tx_end_msg(s, c);
        }
    }
    s->closed++;
    if (s->server) {
        if (!peer_closed && s->failed++ < 5)
            fprintf(stderr, "ngtcp2 rpc-serve: connection %u: %s\n", c->idx, msg);
    } else {
        client *k = s->k;
        k->lost++;
        if (!k->closing) {
            char full[sizeof k->why];
            snprintf(full, sizeof full, "a connection was lost: %s", msg);
            if (!k->r.first_error) /* first_error keeps the first loss's words */
                memcpy(k->why, full, sizeof full);
            cli_fail(k, k->r.first_error ? full : k->why);
        }
    }
    conn_free(s, c);
}

static void cli_queue(client *k, rconn *c);

/* Client: opens c's stream once the handshake allows. 0, or -1 when c ended (and is freed). */
static int open_stream(side *s, rconn *c)
{
    if (c->sid >= 0 || !ngtcp2_conn_get_handshake_completed(c->conn) ||
        ngtcp2_conn_get_streams_bidi_left(c->conn) == 0)
        return 0;
    int rv = ngtcp2_conn_open_bidi_stream(c->conn, &c->sid, NULL);
    if (rv != 0) {
        conn_gone(s, c, "ngtcp2_conn_open_bidi_stream", rv);
        return -1;
    }
    return 0;
}

/* Writes what c has to send into this turn's messages. 0, or -1 when c ended (and is freed). */
static int conn_write(side *s, rconn *c, ngtcp2_tstamp ts)
{
    client *k = s->k;
    if (k && open_stream(s, c) != 0)
        return -1;
    if (k && k->fanin && k->measuring && c->sid >= 0) /* fan-in: more requests as room allows */
        while (c->fanin_next < k->fanin && c->out.wpos - c->out.acked < FANIN_AHEAD)
            cli_queue(k, c);
    int blocked = 0, stuck = 0, wrote = 0;
    for (;;) {
        ngtcp2_vec v[MAX_VECS];
        ngtcp2_pkt_info pi;
        ngtcp2_ssize dl = -1;
        size_t nv = 0;
        if (!blocked && c->sid >= 0 && c->out.sent < c->out.ready)
            nv = sbuf_vecs(&c->out, v, MAX_VECS);
        uint8_t *p = tx_room(s, c);
        ngtcp2_ssize nw = ngtcp2_conn_writev_stream(c->conn, NULL, &pi, p, MAX_PAYLOAD, &dl,
                                                    NGTCP2_WRITE_STREAM_FLAG_NONE, nv ? c->sid : -1,
                                                    nv ? v : NULL, nv, ts);
        if (nw < 0) {
            if (nv && (nw == NGTCP2_ERR_STREAM_DATA_BLOCKED || nw == NGTCP2_ERR_STREAM_SHUT_WR ||
                       nw == NGTCP2_ERR_STREAM_NOT_FOUND)) {
                blocked = 1;
                continue;
            }
            tx_end_msg(s, c);
            conn_gone(s, c, "ngtcp2_conn_writev_stream", (int)nw);
            return -1;
        }
        if (dl > 0)
            c->out.sent += (uint64_t)dl;
        if (nw == 0) {
            stuck = nv > 0;
            break;
        }
        tx_packet(s, c, (size_t)nw);
        wrote = 1;
    }
    tx_end_msg(s, c);
    if (wrote)
        ngtcp2_conn_update_pkt_tx_time(c->conn, ts);
    /* Stream data ngtcp2 would not send although the congestion window has room: the pacer holds
       it, and ngtcp2 0.12's expiry leaves the pacer's time out (README, "ngtcp2 0.12"): look again
       shortly rather than at the next ACK or PTO timer. */
    ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(c->conn);
    if (stuck && ngtcp2_conn_get_cwnd_left(c->conn) > 0 && exp > ts + PACE_RETRY)
        exp = ts + PACE_RETRY;
    nq_heap_set(&s->heap, &c->tm, exp);
    return 0;
}

/* ---- ngtcp2 callbacks ---- */

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
    return ((rconn *)ref->user_data)->conn;
}

static int new_cid_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                      void *user_data)
{
    (void)conn;
    (void)cidlen; /* NQ_CID_LEN: the length of the SCID we started with */
    nq_make_cid(cid, ((rconn *)user_data)->idx);
    nq_rand_cb(token, NGTCP2_STATELESS_RESET_TOKENLEN, NULL);
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *conn, void *user_data)
{
    rconn *c = user_data;
    (void)conn;
    if (!c->established) {
        c->established = 1;
        c->s->established++;
    }
    return 0;
}

static int acked_cb(ngtcp2_conn *conn, int64_t sid, uint64_t offset, uint64_t datalen,
                    void *user_data, void *sud)
{
    rconn *c = user_data;
    (void)conn, (void)sid, (void)sud;
    sbuf_ack(c->s, &c->out, offset + datalen);
    return 0;
}

/* Server: request c->flen bytes long is in (its echo, if any, written after c->out.ready). */
static void srv_request(side *s, rconn *c)
{
    c->hdr_have = 0;
    s->requests++;
    if (!c->echo) {
        s->oneway++;
        return;
    }
    if (s->drop_every && s->requests % s->drop_every == 0) {
        s->dropped++;
        c->out.wpos = c->out.ready; /* take the echo back */
        return;
    }
    if (s->corrupt_every && s->requests % s->corrupt_every == 0 && c->flen) {
        *sb_at(&c->out, c->out.wpos - 1) ^= 0x5a;
        s->corrupted++;
    }
    c->out.ready = c->out.wpos;
    s->served++;
    mark_dirty(s, c);
}

/* Server: request bytes. Echoed requests are copied into c->out as they come; whether a request
 * is echoed is known from its first 8 bytes (rpc_server_echoes). */
static int srv_take(side *s, rconn *c, const uint8_t *d, size_t n)
{
    while (n) {
        if (c->hdr_have < 4) {
            size_t t = 4 - c->hdr_have < n ? 4 - c->hdr_have : n;
            memcpy(c->hdr + c->hdr_have, d, t);
            c->hdr_have += (uint32_t)t, d += t, n -= t;
            if (c->hdr_have < 4)
                break;
            c->flen = rpc_get_be32(c->hdr);
            c->fhave = 0;
            if (c->flen > RPC_MAX_SIZE) {
                c->why = "a request longer than RPC_MAX_SIZE";
                return NGTCP2_ERR_CALLBACK_FAILURE;
            }
            if (c->flen == 0) {
                c->echo = 1;
                if (sbuf_append(s, &c->out, c->hdr, 4))
                    goto oom;
                srv_request(s, c);
            }
            continue;
        }
        size_t t = c->flen - c->fhave < n ? c->flen - c->fhave : n;
        if (c->fhave < 8) { /* the head: seq, which says one-way or not */
            size_t h = 8 - c->fhave < t ? 8 - c->fhave : t;
            memcpy(c->head + c->fhave, d, h);
            c->fhave += (uint32_t)h, d += h, n -= h, t -= h;
            if (c->fhave == (c->flen < 8 ? c->flen : 8)) {
                c->echo = (uint8_t)rpc_server_echoes(c->head, c->flen);
                if (c->echo && (sbuf_append(s, &c->out, c->hdr, 4) ||
                                sbuf_append(s, &c->out, c->head, c->fhave)))
                    goto oom;
            }
        }
        if (t && c->echo && sbuf_append(s, &c->out, d, t))
            goto oom;
        c->fhave += (uint32_t)t, d += t, n -= t;
        if (c->fhave == c->flen)
            srv_request(s, c);
    }
    return 0;
oom:
    c->why = "out of memory for replies";
    return NGTCP2_ERR_CALLBACK_FAILURE;
}

static void cli_reply(client *k, rconn *c, const uint8_t *d, size_t len);

/* Client: reply bytes, split into frames; a frame that came in pieces is gathered in c->acc. */
static int cli_take(client *k, rconn *c, const uint8_t *d, size_t n)
{
    while (n) {
        if (c->hdr_have == 0 && n >= 4) {
            uint32_t len = rpc_get_be32(d);
            if (len > k->size)
                goto framing;
            if (n - 4 >= len) { /* a whole reply: checked where it lies */
                cli_reply(k, c, d + 4, len);
                d += 4 + (size_t)len, n -= 4 + (size_t)len;
                continue;
            }
        }
        if (c->hdr_have < 4) {
            size_t t = 4 - c->hdr_have < n ? 4 - c->hdr_have : n;
            memcpy(c->hdr + c->hdr_have, d, t);
            c->hdr_have += (uint32_t)t, d += t, n -= t;
            if (c->hdr_have < 4)
                break;
            c->flen = rpc_get_be32(c->hdr);
            c->fhave = 0;
            if (c->flen > k->size)
                goto framing;
            if (!c->acc && !(c->acc = malloc(k->size))) {
                c->why = "out of memory";
                return NGTCP2_ERR_CALLBACK_FAILURE;
            }
        }
        size_t t = c->flen - c->fhave < n ? c->flen - c->fhave : n;
        memcpy(c->acc + c->fhave, d, t);
        c->fhave += (uint32_t)t, d += t, n -= t;
        if (c->fhave == c->flen) {
            c->hdr_have = 0;
            cli_reply(k, c, c->acc, c->flen);
        }
    }
    return 0;
framing:
    c->why = "bad reply framing (a length above the request size)";
    return NGTCP2_ERR_CALLBACK_FAILURE;
}

static int recv_stream_data_cb(ngtcp2_conn *conn, uint32_t flags, int64_t sid, uint64_t offset,
                               const uint8_t *data, size_t datalen, void *user_data, void *sud)
{
    rconn *c = user_data;
    side *s = c->s;
    (void)flags, (void)offset, (void)sud;
    /* everything is consumed at once (copied or checked): the credit goes straight back */
    ngtcp2_conn_extend_max_stream_offset(conn, sid, datalen);
    ngtcp2_conn_extend_max_offset(conn, datalen);
    if (c->sid < 0)
        c->sid = sid;
    if (sid != c->sid) {
        c->why = "data on a second stream (the RPC uses one per connection)";
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    return s->server ? srv_take(s, c, data, datalen) : cli_take(s->k, c, data, datalen);
}

static void fill_callbacks(ngtcp2_callbacks *cb, int server)
{
    memset(cb, 0, sizeof *cb);
    if (server) {
        cb->recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    } else {
        cb->client_initial = ngtcp2_crypto_client_initial_cb;
        cb->recv_retry = ngtcp2_crypto_recv_retry_cb;
    }
    cb->recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb->handshake_completed = handshake_completed_cb;
    cb->encrypt = ngtcp2_crypto_encrypt_cb;
    cb->decrypt = ngtcp2_crypto_decrypt_cb;
    cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb->recv_stream_data = recv_stream_data_cb;
    cb->acked_stream_data_offset = acked_cb;
    cb->rand = nq_rand_cb;
    cb->get_new_connection_id = new_cid_cb;
    cb->update_key = ngtcp2_crypto_update_key_cb;
    cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb->delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
}

static void fill_settings(ngtcp2_settings *st, ngtcp2_transport_params *tp, int server)
{
    ngtcp2_settings_default(st);
    st->initial_ts = nq_now();
    st->max_tx_udp_payload_size = MAX_PAYLOAD;
    st->no_tx_udp_payload_size_shaping = 1;
    st->no_pmtud = 1;
    st->max_window = MAX_WINDOW;
    st->max_stream_window = MAX_WINDOW;
    st->handshake_timeout = HANDSHAKE_TIMEOUT;
    ngtcp2_transport_params_default(tp);
    tp->initial_max_data = CONN_WINDOW;
    tp->initial_max_stream_data_bidi_local = STREAM_WINDOW;
    tp->initial_max_stream_data_bidi_remote = STREAM_WINDOW;
    tp->initial_max_streams_bidi = server ? 1 : 0;
    tp->initial_max_streams_uni = 0;
    tp->max_idle_timeout = IDLE_TIMEOUT;
    tp->max_udp_payload_size = MAX_PAYLOAD;
}

static int conn_tls(side *s, rconn *c)
{
    c->ref.get_conn = get_conn;
    c->ref.user_data = c;
    return nq_tls_session(&c->tls, s->cred, s->server, ALPN, &c->ref, PROG);
}

/* ---- the loop ---- */

/* Server: a client's first Initial. */
static rconn *srv_accept(side *s, const uint8_t *pkt, size_t len,
                         const struct sockaddr_storage *from, socklen_t fromlen)
{
    ngtcp2_pkt_hd hd;
    ngtcp2_callbacks cb;
    ngtcp2_settings st;
    ngtcp2_transport_params tp;
    ngtcp2_cid scid;
    ngtcp2_path path = {
        {(struct sockaddr *)&s->local, s->locallen}, {(struct sockaddr *)from, fromlen}, NULL};
    if (ngtcp2_accept(&hd, pkt, len) != 0)
        return NULL;
    rconn *c = conn_alloc(s);
    if (!c)
        return NULL;
    memcpy(&c->remote, from, fromlen);
    c->remotelen = fromlen;
    if (conn_tls(s, c) != 0 || nq_cidmap_add(&s->od, hd.dcid.data, hd.dcid.datalen, c->idx + 1)) {
        conn_free(s, c);
        return NULL;
    }
    c->odcid = hd.dcid;
    nq_make_cid(&scid, c->idx);
    fill_callbacks(&cb, 1);
    fill_settings(&st, &tp, 1);
    tp.original_dcid = hd.dcid;
    int rv = ngtcp2_conn_server_new(&c->conn, &hd.scid, &scid, &path, hd.version, &cb, &st, &tp,
                                    NULL, c);
    if (rv != 0) {
        fprintf(stderr, "ngtcp2 rpc-serve: ngtcp2_conn_server_new: %s\n", ngtcp2_strerror(rv));
        conn_free(s, c);
        return NULL;
    }
    ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
    return c;
}

static void feed(side *s, uint8_t *pkt, size_t len, struct sockaddr_storage *from,
                 socklen_t fromlen, ngtcp2_tstamp ts)
{
    ngtcp2_version_cid vc;
    rconn *c = NULL;
    if (ngtcp2_pkt_decode_version_cid(&vc, pkt, len, NQ_CID_LEN) != 0)
        return;
    if (vc.dcidlen == NQ_CID_LEN) {
        uint32_t idx = nq_cid_index(vc.dcid);
        c = idx < s->nconns ? s->conns[idx] : NULL;
    } else if (s->server && (pkt[0] & 0x80)) {
        uint32_t v = nq_cidmap_find(&s->od, vc.dcid, vc.dcidlen);
        c = v ? s->conns[v - 1] : srv_accept(s, pkt, len, from, fromlen);
    }
    if (!c)
        return;
    ngtcp2_path path = {
        {(struct sockaddr *)&s->local, s->locallen}, {(struct sockaddr *)from, fromlen}, NULL};
    ngtcp2_pkt_info pi = {0};
    int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, pkt, len, ts);
    if (rv != 0) {
        conn_gone(s, c, "ngtcp2_conn_read_pkt", rv);
        return;
    }
    mark_dirty(s, c);
}

/* One recvmmsg batch, each datagram split at its GRO segment size. Returns datagrams read. */
static int read_batch(side *s)
{
    static uint8_t bufs[RX_MSGS][RX_BUF];
    struct mmsghdr m[RX_MSGS];
    struct iovec iov[RX_MSGS];
    struct sockaddr_storage from[RX_MSGS];
    union {
        char buf[CMSG_SPACE(sizeof(int)) + 64];
        struct cmsghdr align;
    } cm[RX_MSGS];
    for (int i = 0; i < RX_MSGS; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = RX_BUF;
        memset(&m[i].msg_hdr, 0, sizeof m[i].msg_hdr);
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
        m[i].msg_hdr.msg_name = &from[i];
        m[i].msg_hdr.msg_namelen = sizeof from[i];
        m[i].msg_hdr.msg_control = cm[i].buf;
        m[i].msg_hdr.msg_controllen = sizeof cm[i].buf;
    }
    int n = recvmmsg(s->fd, m, RX_MSGS, MSG_DONTWAIT, NULL);
    if (n <= 0) {
        if (n < 0 && errno == ECONNREFUSED && s->k && !s->k->closing)
            cli_fail(s->k, "the server's port is closed (ICMP port unreachable)");
        return 0;
    }
    ngtcp2_tstamp ts = nq_now();
    for (int i = 0; i < n; i++) {
        size_t len = m[i].msg_len, seg = len;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m[i].msg_hdr); h;
             h = CMSG_NXTHDR(&m[i].msg_hdr, h)) {
            int g;
            if (h->cmsg_level == SOL_UDP && h->cmsg_type == UDP_GRO) {
                memcpy(&g, CMSG_DATA(h), sizeof g);
                if (g > 0)
                    seg = (size_t)g;
            }
        }
        struct sockaddr_storage *f = s->server ? &from[i] : &s->remote;
        socklen_t fl = s->server ? m[i].msg_hdr.msg_namelen : s->remotelen;
        for (size_t off = 0; off < len; off += seg)
            feed(s, bufs[i] + off, len - off < seg ? len - off : seg, f, fl, ts);
    }
    return n;
}

static void run_timers(side *s)
{
    ngtcp2_tstamp now = nq_now();
    for (uint32_t budget = s->heap.n; budget-- && nq_heap_top(&s->heap);) {
        rconn *c = (rconn *)nq_heap_top(&s->heap);
        if (c->tm.exp > now)
            break;
        nq_heap_remove(&s->heap, &c->tm);
        int rv = ngtcp2_conn_handle_expiry(c->conn, now);
        if (rv != 0)
            conn_gone(s, c, "ngtcp2_conn_handle_expiry", rv);
        else
            conn_write(s, c, now);
    }
}

static void write_dirty(side *s)
{
    ngtcp2_tstamp ts = nq_now();
    for (uint32_t i = 0; i < s->ndirty; i++) {
        rconn *c = s->conns[s->dirty[i]];
        if (c && c->dirty) {
            c->dirty = 0;
            conn_write(s, c, ts);
        }
    }
    s->ndirty = 0;
}

/* One turn: a read batch, due timers, writes, one send; when nothing was read, a sleep until a
 * datagram, the earliest expiry or `until`, whichever is first. */
static void turn(side *s, uint64_t until, const sigset_t *mask)
{
    int got = read_batch(s);
    run_timers(s);
    write_dirty(s);
    tx_flush(s);
    if (got)
        return;
    uint64_t now = nq_now(), wake = until;
    nq_timer *t = nq_heap_top(&s->heap);
    if (t && t->exp < wake)
        wake = t->exp;
    struct timespec tmo = {0, 0};
    if (wake > now) {
        tmo.tv_sec = (time_t)((wake - now) / NGTCP2_SECONDS);
        tmo.tv_nsec = (long)((wake - now) % NGTCP2_SECONDS);
    }
    struct pollfd pfd = {s->fd, POLLIN, 0};
    ppoll(&pfd, 1, &tmo, mask);
}

static int side_init(side *s, int server)
{
    s->server = server;
    s->tx = malloc(TX_BUF);
    if (!s->tx || (server && nq_cidmap_init(&s->od, 1024)))
        return -1;
    s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0)
        return -1;
    nq_socket_bufs(s->fd, SOCK_BUF);
    int one = 1;
    if (setsockopt(s->fd, IPPROTO_UDP, UDP_GRO, &one, sizeof one) != 0)
        fprintf(stderr, "%s: warning: UDP_GRO unavailable: %s\n", PROG, strerror(errno));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(s->fd, (struct sockaddr *)&sin, sizeof sin) != 0)
        return -1;
    s->locallen = sizeof s->local;
    return getsockname(s->fd, (struct sockaddr *)&s->local, &s->locallen);
}

/* ---- server ---- */

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static const char serve_usage[] = "usage: ngtcp2 rpc-serve [--corrupt-every N] [--drop-every N]\n";

int rpc_serve_main(int argc, char **argv)
{
    static side S;
    side *s = &S;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--corrupt-every") &&
            !rpc_parse_count(v, 1, UINT64_MAX, &s->corrupt_every))
            i++;
        else if (!strcmp(argv[i], "--drop-every") &&
                 !rpc_parse_count(v, 1, UINT64_MAX, &s->drop_every))
            i++;
        else {
            fputs(serve_usage, stderr);
            return 2;
        }
    }
    if (nq_server_cred(&s->cred, "ngtcp2 rpc-serve") != 0)
        return 1;
    if (side_init(s, 1) != 0) {
        fprintf(stderr, "ngtcp2 rpc-serve: cannot bind 127.0.0.1: %s\n", strerror(errno));
        return 1;
    }
    /* SIGTERM/SIGINT are blocked except inside ppoll, so none is missed between turns */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigprocmask(SIG_BLOCK, &block, &old);
    printf("{\"port\": %u, \"mode\": \"quic\", \"service\": \"rpc\", \"impl\": \"ngtcp2 %s\"}\n",
           ntohs(((struct sockaddr_in *)&s->local)->sin_port), ngtcp2_version(0)->version_str);
    fflush(stdout);
    while (!g_stop)
        turn(s, nq_now() + NGTCP2_SECONDS, &old);
    printf("{\"served\": %" PRIu64 ", \"requests\": %" PRIu64 ", \"links\": %" PRIu64
           ", \"oneway\": %" PRIu64 ", \"corrupted\": %" PRIu64 ", \"dropped\": %" PRIu64
           ", \"failed\": %" PRIu64 ", \"packets_out\": %" PRIu64 ", \"sendmsgs\": %" PRIu64
           ", \"send_drops\": %" PRIu64 "}\n",
           s->served, s->requests, s->established, s->oneway, s->corrupted, s->dropped, s->failed,
           s->pkts_out, s->sendmsgs, s->send_drops);
    fflush(stdout);
    return 0;
}

/* ---- client ---- */

/* Writes c's next request into its stream buffer (conn_write hands it to ngtcp2). */
static void cli_queue(client *k, rconn *c)
{
    uint64_t seq = c->next_seq;
    if (k->fanin)
        seq = c->fanin_next | RPC_ONEWAY | (c->fanin_next + 1 == k->fanin ? RPC_LAST : 0);
    rpc_put_be32(k->scratch, (uint32_t)k->size);
    rpc_request(k->scratch + 4, k->pat, (uint32_t)k->size, c->idx, seq);
    if (sbuf_append(&k->s, &c->out, k->scratch, 4 + k->size)) {
        cli_fail(k, "out of memory for requests");
        return;
    }
    c->out.ready = c->out.wpos;
    if (k->fanin) {
        c->fanin_next++;
    } else {
        k->sent_at[(uint64_t)c->idx * k->p + c->next_seq % k->p] = nq_now();
        c->next_seq++;
    }
    k->r.sent++;
}

static void cli_send(client *k, rconn *c)
{
    cli_queue(k, c);
    mark_dirty(&k->s, c);
}

static void tok_push(client *k, uint32_t idx)
{
    k->tok[(k->tok_head + k->tok_n++) % (k->l * k->p)] = idx;
}

static void cli_reply(client *k, rconn *c, const uint8_t *d, size_t len)
{
    uint64_t now = nq_now();
    const char *bad;
    k->r.replies++;
    if (k->fanin) {
        bad = c->echoed ? "a second echo on a fan-in link"
                        : rpc_check(d, len, k->pat, (uint32_t)k->size, c->idx, k->last_seq);
        if (bad)
            cli_fail(k, bad);
        if (!c->echoed) {
            c->echoed = 1;
            k->echoes++;
            k->t_last = now;
        }
        return;
    }
    bad = rpc_check(d, len, k->pat, (uint32_t)k->size, c->idx, c->next_reply);
    if (bad)
        cli_fail(k, bad);
    if (k->measuring) {
        rpc_hist_add(&k->hist, now - k->sent_at[(uint64_t)c->idx * k->p + c->next_reply % k->p]);
        k->r.requests++;
    }
    c->next_reply++;
    if (k->stopping)
        return;
    if (k->rate)
        tok_push(k, c->idx); /* a free slot: the pace decides when it is used */
    else
        cli_send(k, c);
}

/* --rate: issues the requests due by now, round-robin over links with a free slot. */
static void rate_issue(client *k)
{
    if (!k->rate || !k->t_rate || k->stopping)
        return;
    uint64_t due = (uint64_t)((double)k->rate * (double)(nq_now() - k->t_rate) / 1e9);
    while (k->issued < due && k->tok_n) {
        uint32_t idx = k->tok[k->tok_head];
        k->tok_head = (k->tok_head + 1) % (k->l * k->p);
        k->tok_n--;
        rconn *c = k->s.conns[idx];
        if (c && c->sid >= 0) {
            cli_send(k, c);
            k->issued++;
        }
    }
}

static int client_connect(client *k)
{
    side *s = &k->s;
    rconn *c = conn_alloc(s);
    ngtcp2_callbacks cb;
    ngtcp2_settings st;
    ngtcp2_transport_params tp;
    ngtcp2_cid dcid, scid;
    ngtcp2_path path = {{(struct sockaddr *)&s->local, s->locallen},
                        {(struct sockaddr *)&s->remote, s->remotelen},
                        NULL};
    if (!c || conn_tls(s, c) != 0) {
        if (c)
            conn_free(s, c);
        return -1;
    }
    dcid.datalen = NQ_CLIENT_DCID_LEN;
    nq_rand_cb(dcid.data, dcid.datalen, NULL);
    nq_make_cid(&scid, c->idx);
    fill_callbacks(&cb, 0);
    fill_settings(&st, &tp, 0);
    int rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &st,
                                    &tp, NULL, c);
    if (rv != 0) {
        fprintf(stderr, "ngtcp2 rpc-client: ngtcp2_conn_client_new: %s\n", ngtcp2_strerror(rv));
        conn_free(s, c);
        return -1;
    }
    ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
    return conn_write(s, c, nq_now());
}

static void connect_more(client *k)
{
    while (k->started < k->l && k->started - k->s.established - k->lost < MAX_HANDSHAKES) {
        k->started++;
        if (client_connect(k) != 0) {
            k->lost++;
            cli_fail(k, "cannot make a connection (out of memory?)");
        }
    }
}

static int all_connected(client *k)
{
    connect_more(k);
    return k->s.established + k->lost >= k->l;
}
static int all_answered(client *k)
{
    return k->r.replies >= k->r.sent || k->lost;
}
static int all_echoed(client *k)
{
    return k->echoes + k->lost >= k->l;
}

static void run_for(client *k, uint64_t ns, int (*done)(client *))
{
    uint64_t end = nq_now() + ns;
    for (uint64_t now; (now = nq_now()) < end && !(done && done(k));) {
        rate_issue(k);
        uint64_t until = k->rate || done ? now + 1000000 : end; /* a look every ms */
        turn(&k->s, until < end ? until : end, NULL);
    }
}

/* Every link started (traffic in 20 steps over the first half of the warm-up, as rpc_bench.c),
 * warm-up, the measured window, then the drain of what is outstanding. */
static void run_rpc(client *k, uint64_t warmup, uint64_t duration, uint64_t drain)
{
    if (k->rate) { /* full pace from the start: every slot free */
        for (uint64_t j = 0; j < k->p; j++)
            for (uint64_t i = 0; i < k->l; i++)
                tok_push(k, (uint32_t)i);
        k->t_rate = nq_now();
        run_for(k, warmup, NULL);
    } else {
        uint64_t steps = k->l < 20 ? k->l : 20;
        for (uint64_t st = 0; st < steps; st++) {
            for (uint64_t i = st * k->l / steps; i < (st + 1) * k->l / steps; i++) {
                rconn *c = k->s.conns[i];
                if (c && open_stream(&k->s, c) != 0)
                    c = NULL;
                for (uint64_t j = 0; c && c->sid >= 0 && j < k->p; j++)
                    cli_send(k, c);
            }
            run_for(k, warmup / 2 / steps, NULL);
        }
        run_for(k, warmup - warmup / 2, NULL);
    }
    rpc_phase("measure_start");
    double cpu0 = rpc_cpu_s();
    uint64_t w0 = nq_now();
    k->measuring = 1;
    run_for(k, duration, NULL);
    k->measuring = 0;
    k->r.window_s = (double)(nq_now() - w0) / 1e9;
    k->r.client_cpu_s = rpc_cpu_s() - cpu0;
    rpc_phase("measure_end");
    k->stopping = 1;
    run_for(k, drain, all_answered);
    k->r.missing = k->r.sent - k->r.replies;
    if (k->r.missing)
        cli_fail(k, "replies missing at the end of the run");
}

/* The fan-in drain: every link sends its N one-way requests as room allows (conn_write). */
static void run_fanin(client *k, uint64_t drain)
{
    rpc_phase("measure_start");
    double cpu0 = rpc_cpu_s();
    uint64_t w0 = nq_now();
    k->measuring = 1;
    for (uint32_t i = 0; i < k->s.nconns; i++)
        if (k->s.conns[i])
            mark_dirty(&k->s, k->s.conns[i]);
    run_for(k, drain, all_echoed);
    k->r.client_cpu_s = rpc_cpu_s() - cpu0;
    k->r.window_s = (double)((k->echoes == k->l ? k->t_last : nq_now()) - w0) / 1e9;
    k->measuring = 0;
    rpc_phase("measure_end");
    k->r.requests = k->r.sent;
    k->r.missing = k->l - k->echoes;
    if (k->r.missing)
        cli_fail(k, "links without the echo of their last request at the end of the run");
}

/* Closes every connection (CONNECTION_CLOSE, no error) and frees it. */
static void close_all(client *k)
{
    side *s = &k->s;
    ngtcp2_connection_close_error ce;
    ngtcp2_connection_close_error_default(&ce);
    k->closing = 1;
    for (uint32_t i = 0; i < s->nconns; i++) {
        rconn *c = s->conns[i];
        if (!c)
            continue;
        ngtcp2_pkt_info pi;
        uint8_t *p = tx_room(s, c);
        ngtcp2_ssize nw =
            ngtcp2_conn_write_connection_close(c->conn, NULL, &pi, p, MAX_PAYLOAD, &ce, nq_now());
        if (nw > 0) {
            tx_packet(s, c, (size_t)nw);
            tx_end_msg(s, c);
        }
        conn_free(s, c);
    }
    tx_flush(s);
}

static const char client_usage[] =
    "usage: ngtcp2 rpc-client PORT --links L --outstanding P --size S --duration SEC\n"
    "                         [--warmup SEC] [--drain-timeout SEC] [--rate R]\n"
    "       ngtcp2 rpc-client PORT --links L --size S --fanin N [--drain-timeout SEC]\n";

int rpc_client_main(int argc, char **argv)
{
    static client K;
    client *k = &K;
    uint64_t port = 0, duration = 0, warmup = 500000000ull, drain = 10000000000ull;
    int have_port = 0, have_d = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--links") && !rpc_parse_count(v, 1, 1000000, &k->l))
            i++;
        else if (!strcmp(a, "--outstanding") && !rpc_parse_count(v, 1, RPC_MAX_OUTSTANDING, &k->p))
            i++;
        else if (!strcmp(a, "--size") && !rpc_parse_count(v, RPC_HDR, RPC_MAX_SIZE, &k->size))
            i++;
        else if (!strcmp(a, "--duration") && !rpc_parse_seconds(v, &duration))
            i++, have_d = 1;
        else if (!strcmp(a, "--warmup") && !rpc_parse_seconds(v, &warmup))
            i++;
        else if (!strcmp(a, "--drain-timeout") && !rpc_parse_seconds(v, &drain))
            i++;
        else if (!strcmp(a, "--rate") && !rpc_parse_count(v, 0, 1000000000, &k->rate))
            i++;
        else if (!strcmp(a, "--fanin") && !rpc_parse_count(v, 1, 1ull << 40, &k->fanin))
            i++;
        else if (a[0] != '-' && !have_port && !rpc_parse_count(a, 1, 65535, &port))
            have_port = 1;
        else
            goto usage;
    }
    if (!have_port || !k->l || !k->size || (k->fanin && k->rate) ||
        (!k->fanin && (!k->p || !have_d)))
        goto usage;
    if (k->fanin)
        k->p = 1; /* unused; keeps the arrays below non-empty */
    k->last_seq = (k->fanin - 1) | RPC_ONEWAY | RPC_LAST;
    k->r.links = k->l, k->r.outstanding = k->fanin ? 0 : k->p, k->r.size = k->size;
    k->r.rate = (double)k->rate;
    side *s = &k->s;
    s->k = k;
    k->sent_at = calloc(k->l * k->p, sizeof *k->sent_at);
    k->tok = k->rate ? calloc(k->l * k->p, sizeof *k->tok) : NULL;
    k->pat = rpc_pattern_new((uint32_t)k->size);
    k->scratch = malloc(4 + k->size);
    if (!k->sent_at || (k->rate && !k->tok) || !k->pat || !k->scratch ||
        gnutls_certificate_allocate_credentials(&s->cred) < 0 || side_init(s, 0) != 0) {
        fprintf(stderr, "ngtcp2 rpc-client: cannot set up: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memcpy(&s->remote, &sin, sizeof sin);
    s->remotelen = sizeof sin;
    if (connect(s->fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        fprintf(stderr, "ngtcp2 rpc-client: connect: %s\n", strerror(errno));
        return 1;
    }
    uint64_t t0 = nq_now();
    run_for(k, 120 * NGTCP2_SECONDS, all_connected);
    k->r.connect_s = (double)(nq_now() - t0) / 1e9;
    if (s->established < k->l) {
        fprintf(stderr,
                "ngtcp2 rpc-client: only %" PRIu64 " of %" PRIu64 " connections opened in %.1f s\n",
                s->established, k->l, k->r.connect_s);
        cli_fail(k, "not every connection opened");
    }
    printf("{\"phase\": \"connected\", \"links\": %" PRIu64 ", \"seconds\": %.3f}\n",
           s->established, k->r.connect_s);
    fflush(stdout);
    if (s->established == k->l && !k->lost) {
        if (k->fanin)
            run_fanin(k, drain);
        else
            run_rpc(k, warmup, duration, drain);
    }
    close_all(k);
    if (k->fanin)
        rpc_print_fanin(&k->r, k->fanin, "ngtcp2");
    else
        rpc_print_result(&k->r, &k->hist, "ngtcp2");
    if (s->send_drops)
        fprintf(stderr, "ngtcp2 rpc-client: %" PRIu64 " sends dropped (full socket)\n",
                s->send_drops);
    return k->r.errors == 0 && k->r.missing == 0 && s->established == k->l ? 0 : 1;
usage:
    fputs(client_usage, stderr);
    return 2;
}
