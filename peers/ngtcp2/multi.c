/* SPDX-License-Identifier: MIT */
/* Many QUIC connections over one UDP socket (multi.h). */
#define _GNU_SOURCE
#include "multi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define PROG "ngtcp2 rpc"
#define ALPN "pure-rpc"
#define MAX_BURST 44 /* packets per GSO message (44 * 1472 < 64 KiB) */
#define TX_BUF (2u << 20)
#define RX_MSGS 8
#define RX_BUF 65536 /* one GRO datagram is at most 64 KiB */
#define SOCK_BUF (64 << 20)
#define CHUNK 4096
#define MAX_VECS 8
#define CONN_WINDOW (2u << 20)
#define STREAM_WINDOW (1u << 20)
#define MAX_WINDOW (16u << 20) /* flow-control auto-tuning limit */
#define HANDSHAKE_TIMEOUT (120 * NGTCP2_SECONDS)
#define PACE_RETRY (100 * 1000) /* ns: see conn_write */

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

uint8_t *mq_sbuf_at(const sbuf *b, uint64_t off)
{
    uint64_t rel = off - b->base;
    return b->ring[(b->head + rel / CHUNK) & (b->cap - 1)] + rel % CHUNK;
}

int mq_sbuf_append(side *s, sbuf *b, const uint8_t *d, size_t n)
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
        memcpy(mq_sbuf_at(b, b->wpos), d, t);
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
        v[nv].base = mq_sbuf_at(b, off);
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

void mq_flush(side *s)
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
        if (errno == ECONNREFUSED && s->on_refused)
            s->on_refused(s);
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
        uint16_t seg = MQ_MAX_PAYLOAD;
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
    /* a message in progress always has its slot: nmsgs < MQ_TX_MSGS was checked at its start */
    if (s->txlen + MQ_MAX_PAYLOAD > TX_BUF || (s->mpkts == 0 && s->nmsgs == MQ_TX_MSGS)) {
        tx_end_msg(s, c);
        mq_flush(s);
    }
    return s->tx + s->txlen;
}

/* c wrote a packet of len bytes at tx_room(): a short one (or a full burst) ends the message. */
static void tx_packet(side *s, rconn *c, size_t len)
{
    s->txlen += len;
    s->mpkts++;
    if (len < MQ_MAX_PAYLOAD || s->mpkts == MAX_BURST)
        tx_end_msg(s, c);
}

/* ---- connections ---- */

void mq_mark_dirty(side *s, rconn *c)
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
                 (int)(MQ_IDLE_TIMEOUT / NGTCP2_SECONDS));
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
        ngtcp2_ssize nw = ngtcp2_conn_write_connection_close(c->conn, NULL, &pi, p, MQ_MAX_PAYLOAD,
                                                             &ce, nq_now());
        if (nw > 0) {
            tx_packet(s, c, (size_t)nw);
            tx_end_msg(s, c);
        }
    }
    s->closed++;
    s->failed += !peer_closed;
    if (s->on_end)
        s->on_end(s, c, msg, peer_closed);
    conn_free(s, c);
}

/* Client: opens c's stream once the handshake allows. 0, or -1 when c ended (and is freed). */
int mq_open_stream(side *s, rconn *c)
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
    if (!s->server && mq_open_stream(s, c) != 0)
        return -1;
    if (s->before_write)
        s->before_write(s, c);
    int blocked = 0, stuck = 0, wrote = 0;
    for (;;) {
        ngtcp2_vec v[MAX_VECS];
        ngtcp2_pkt_info pi;
        ngtcp2_ssize dl = -1;
        size_t nv = 0;
        if (!blocked && c->sid >= 0 && c->out.sent < c->out.ready)
            nv = sbuf_vecs(&c->out, v, MAX_VECS);
        uint8_t *p = tx_room(s, c);
        ngtcp2_ssize nw = ngtcp2_conn_writev_stream(c->conn, NULL, &pi, p, MQ_MAX_PAYLOAD, &dl,
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
       it. Look again shortly rather than at the next ACK or PTO timer (drain.c saw 0.12's pacer
       hold data that long; README, "RPC mode"). */
    ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(c->conn);
    if (stuck && ngtcp2_conn_get_cwnd_left(c->conn) > 0 && exp > ts + PACE_RETRY)
        exp = ts + PACE_RETRY, s->retries++;
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
    return s->on_data(s, c, data, datalen);
}

static void fill_callbacks(ngtcp2_callbacks *cb, int server)
{
    nq_fill_callbacks(cb, server, handshake_completed_cb, recv_stream_data_cb, new_cid_cb);
    cb->acked_stream_data_offset = acked_cb;
}

static void fill_settings(ngtcp2_settings *st, ngtcp2_transport_params *tp, int server,
                          ngtcp2_tstamp initial_ts)
{
    ngtcp2_settings_default(st);
    st->initial_ts = initial_ts; /* a server's: its first packet's */
    st->max_tx_udp_payload_size = MQ_MAX_PAYLOAD;
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
    tp->max_idle_timeout = MQ_IDLE_TIMEOUT;
    tp->max_udp_payload_size = MQ_MAX_PAYLOAD;
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
                         const struct sockaddr_storage *from, socklen_t fromlen, ngtcp2_tstamp ts)
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
    fill_settings(&st, &tp, 1, ts);
    NQ_SET_ORIGINAL_DCID(&tp, hd.dcid);
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
        c = v ? s->conns[v - 1] : srv_accept(s, pkt, len, from, fromlen, ts);
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
    mq_mark_dirty(s, c);
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
        if (n < 0 && errno == ECONNREFUSED && s->on_refused)
            s->on_refused(s);
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
        s->timers++;
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
void mq_turn(side *s, uint64_t until, const sigset_t *mask)
{
    int got = read_batch(s);
    run_timers(s);
    write_dirty(s);
    mq_flush(s);
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

int mq_side_init(side *s, int server)
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

int mq_connect(side *s)
{
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
    fill_settings(&st, &tp, 0, nq_now());
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

void mq_close(side *s, rconn *c)
{
    ngtcp2_connection_close_error ce;
    ngtcp2_pkt_info pi;
    ngtcp2_connection_close_error_default(&ce);
    uint8_t *p = tx_room(s, c);
    ngtcp2_ssize nw =
        ngtcp2_conn_write_connection_close(c->conn, NULL, &pi, p, MQ_MAX_PAYLOAD, &ce, nq_now());
    if (nw > 0) {
        tx_packet(s, c, (size_t)nw);
        tx_end_msg(s, c);
    }
    conn_free(s, c);
}
