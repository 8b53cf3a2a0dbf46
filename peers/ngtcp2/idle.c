/* SPDX-License-Identifier: MIT */
/*
 * ngtcp2 idle-links mode (the idle-links experiment of /work/shared/design.md; it mirrors
 * `pure bench idle`, src/cli/bench_idle.c):
 *
 *   ngtcp2 idle --links K --idle SECONDS [--keepalive SECONDS] [--json]
 *
 * K QUIC connections from this process (the client) to a forked child (the server) on
 * 127.0.0.1.  Each side has ONE UDP socket; connections are told apart by connection ID:
 * every CID either side issues starts with the 4-byte big-endian index of its connection
 * (the rest is random), and the server finds a client's first Initials (whose DCID the
 * client chose at random) in a small hash table keyed by that DCID.  Timers: one indexed
 * min-heap per side over ngtcp2_conn_get_expiry(); ngtcp2_conn_handle_expiry() is called
 * for every connection whose expiry has passed, and each such call counts as one timer
 * fired.  The server reports its counters (VmRSS, packets sent, timers fired, CPU) over a
 * pipe when the client asks, as in `pure bench idle`.
 *
 * Steps: open K connections (at most 256 handshakes under way); settle 2 s; RSS of both
 * sides (after malloc_trim) minus RSS before, divided by K; idle SECONDS counting packets
 * sent and timers fired and CPU (getrusage) of both sides; then one 4-byte message on a
 * new bidirectional stream of every connection, which the server answers with 1 byte +
 * FIN; the time until every answer arrived.
 *
 * Idle timeout 600 s (both transport parameters); --keepalive S sets
 * ngtcp2_conn_set_keep_alive_timeout(S) on the client's connections (ngtcp2 then sends a
 * PING after S of quiet).
 */
#define _GNU_SOURCE
#include "shared.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

int idle_main(int argc, char **argv);

#define PAYLOAD 1452
#define MAX_HANDSHAKES 256 /* handshakes under way at once */
#define SOCK_BUF (32 << 20)
#define RX_BATCH 64
#define IDLE_TIMEOUT (600 * NGTCP2_SECONDS)
#define ALPN "pure-idle"
#define WAKE_LIMIT (300 * NGTCP2_SECONDS) /* stragglers wait for loss recovery's backoff */

static const uint8_t WAKE[4] = {'w', 'a', 'k', 'e'};
static const uint8_t ANSWER[1] = {'k'};

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* The kernel's count of UDP datagrams dropped for a full receive buffer (system-wide:
   /proc/net/snmp Udp RcvbufErrors), or -1. */
static long long udp_rcvbuf_errors(void)
{
    FILE *f = fopen("/proc/net/snmp", "r");
    char line[1024];
    long long v = -1;
    int seen = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Udp: ", 5) != 0)
            continue;
        if (seen++ == 0)
            continue; /* the header line */
        long long a, b, c, d, e;
        if (sscanf(line + 5, "%lld %lld %lld %lld %lld", &a, &b, &c, &d, &e) == 5)
            v = e;
        break;
    }
    if (f)
        fclose(f);
    return v;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

/* ------------------------------------------------------------------ */

typedef struct side side;

typedef struct iconn {
    nq_timer tm; /* first member: heap entries are cast back to the connection */
    ngtcp2_conn *conn;
    gnutls_session_t tls;
    ngtcp2_crypto_conn_ref ref;
    side *s;
    uint32_t idx;
    int64_t sid; /* the wake stream, -1 before */
    uint8_t established, want_send, sent, answered;
} iconn;

struct side {
    int is_server, fd;
    struct sockaddr_storage local, remote;
    socklen_t locallen, remotelen;
    gnutls_certificate_credentials_t cred;
    iconn **conns;
    uint32_t nconns, cap;
    nq_heap heap;
    nq_cidmap od; /* server: client's original DCID -> connection index + 1 */
    uint64_t keepalive;
    /* counters */
    uint64_t pkts_out, send_drops, timers, established, answered, closed, accepted;
    char first_err[200];
};

static void note_close(side *s, iconn *c, const char *what, int rv)
{
    s->closed++;
    if (s->closed <= 3)
        fprintf(stderr, "ngtcp2 idle %s: connection %u closed: %s: %s%s\n",
                s->is_server ? "server" : "client", c->idx, what, ngtcp2_strerror(rv),
                s->closed == 3 ? " (further closes not shown)" : "");
    if (!s->first_err[0])
        snprintf(s->first_err, sizeof s->first_err, "%s: %s", what, ngtcp2_strerror(rv));
}

/* Puts c in the heap at its connection's current expiry (out of it when none). */
static void timer_update(side *s, iconn *c)
{
    nq_heap_set(&s->heap, &c->tm, ngtcp2_conn_get_expiry(c->conn));
}

/* ---- TLS ---- */

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
    return ((iconn *)ref->user_data)->conn;
}

static int tls_new(side *s, iconn *c)
{
    c->ref.get_conn = get_conn;
    c->ref.user_data = c;
    return nq_tls_session(&c->tls, s->cred, s->is_server, ALPN, &c->ref, "ngtcp2 idle");
}

/* ---- ngtcp2 callbacks ---- */

static int new_cid_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                      void *user_data)
{
    iconn *c = user_data;
    (void)conn;
    (void)cidlen; /* always NQ_CID_LEN: the length of the SCID we started with */
    nq_make_cid(cid, c->idx);
    if (gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *conn, void *user_data)
{
    iconn *c = user_data;
    (void)conn;
    if (!c->established) {
        c->established = 1;
        c->s->established++;
    }
    return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *conn, uint32_t flags, int64_t sid, uint64_t offset,
                               const uint8_t *data, size_t datalen, void *user_data, void *sud)
{
    iconn *c = user_data;
    (void)offset;
    (void)data;
    (void)sud;
    ngtcp2_conn_extend_max_stream_offset(conn, sid, datalen);
    ngtcp2_conn_extend_max_offset(conn, datalen);
    if (!(flags & NGTCP2_STREAM_DATA_FLAG_FIN))
        return 0;
    if (c->s->is_server) { /* the wake message: answer it */
        c->sid = sid;
        c->want_send = 1;
    } else if (!c->answered) {
        c->answered = 1;
        c->s->answered++;
    }
    return 0;
}

static void fill_callbacks(ngtcp2_callbacks *cb, int server)
{
    nq_fill_callbacks(cb, server, handshake_completed_cb, recv_stream_data_cb, new_cid_cb);
}

static void fill_settings(ngtcp2_settings *st, ngtcp2_transport_params *tp, int server,
                          ngtcp2_tstamp initial_ts)
{
    ngtcp2_settings_default(st);
    st->initial_ts = initial_ts; /* a server's: its first packet's */
    st->max_tx_udp_payload_size = PAYLOAD;
    st->no_pmtud = 1;
    st->handshake_timeout = 120 * NGTCP2_SECONDS;
    ngtcp2_transport_params_default(tp);
    tp->initial_max_data = 65536;
    tp->initial_max_stream_data_bidi_local = 16384;
    tp->initial_max_stream_data_bidi_remote = 16384;
    tp->initial_max_streams_bidi = server ? 1 : 0;
    tp->initial_max_streams_uni = 0;
    tp->max_idle_timeout = IDLE_TIMEOUT;
}

/* ---- I/O ---- */

static void conn_free(side *s, iconn *c)
{
    nq_heap_remove(&s->heap, &c->tm);
    if (c->conn)
        ngtcp2_conn_del(c->conn);
    if (c->tls)
        gnutls_deinit(c->tls);
    s->conns[c->idx] = NULL;
    free(c);
}

static int is_closing(int rv)
{
    return rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING;
}

/* Writes everything c has to send (and its wake stream data); 0, or -1 when c was closed
   and freed. */
static int conn_write(side *s, iconn *c, ngtcp2_tstamp ts)
{
    static uint8_t buf[PAYLOAD];
    for (;;) {
        ngtcp2_path_storage ps;
        ngtcp2_pkt_info pi;
        ngtcp2_vec v;
        ngtcp2_ssize dl = -1;
        int have = c->want_send && !c->sent && c->sid >= 0;
        if (have) {
            v.base = (uint8_t *)(s->is_server ? ANSWER : WAKE);
            v.len = s->is_server ? sizeof ANSWER : sizeof WAKE;
        }
        ngtcp2_path_storage_zero(&ps);
        ngtcp2_ssize nw = ngtcp2_conn_writev_stream(
            c->conn, &ps.path, &pi, buf, sizeof buf, &dl,
            have ? NGTCP2_WRITE_STREAM_FLAG_FIN : NGTCP2_WRITE_STREAM_FLAG_NONE, have ? c->sid : -1,
            have ? &v : NULL, have ? 1 : 0, ts);
        if (nw < 0) {
            if (have && (nw == NGTCP2_ERR_STREAM_DATA_BLOCKED || nw == NGTCP2_ERR_STREAM_SHUT_WR ||
                         nw == NGTCP2_ERR_STREAM_NOT_FOUND)) {
                c->sent = 1; /* cannot send: the client will time out waiting */
                continue;
            }
            if (!is_closing((int)nw))
                note_close(s, c, "ngtcp2_conn_writev_stream", (int)nw);
            else
                s->closed++;
            conn_free(s, c);
            return -1;
        }
        if (have && dl == (ngtcp2_ssize)v.len)
            c->sent = 1;
        if (nw == 0)
            break;
        ssize_t r;
        do
            r = sendto(s->fd, buf, (size_t)nw, 0, s->is_server ? ps.path.remote.addr : NULL,
                       s->is_server ? ps.path.remote.addrlen : 0);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            s->send_drops++; /* socket full: QUIC's loss recovery resends */
        else
            s->pkts_out++;
    }
    ngtcp2_conn_update_pkt_tx_time(c->conn, ts);
    timer_update(s, c);
    return 0;
}

static iconn *conn_alloc(side *s)
{
    if (s->nconns == s->cap)
        return NULL;
    iconn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->s = s;
    c->idx = s->nconns++;
    nq_timer_init(&c->tm);
    c->sid = -1;
    s->conns[c->idx] = c;
    return c;
}

/* Server: a client's first Initial. */
static iconn *server_accept(side *s, const uint8_t *pkt, size_t len, struct sockaddr_storage *from,
                            socklen_t fromlen, ngtcp2_tstamp ts)
{
    ngtcp2_pkt_hd hd;
    ngtcp2_callbacks cb;
    ngtcp2_settings st;
    ngtcp2_transport_params tp;
    ngtcp2_cid scid;
    ngtcp2_path path;
    if (ngtcp2_accept(&hd, pkt, len) != 0)
        return NULL;
    iconn *c = conn_alloc(s);
    if (!c) {
        if (!s->first_err[0])
            snprintf(s->first_err, sizeof s->first_err, "connection table full or out of memory");
        return NULL;
    }
    if (tls_new(s, c) != 0) {
        conn_free(s, c);
        return NULL;
    }
    nq_make_cid(&scid, c->idx);
    fill_callbacks(&cb, 1);
    fill_settings(&st, &tp, 1, ts);
    NQ_SET_ORIGINAL_DCID(&tp, hd.dcid);
    path.local.addr = (struct sockaddr *)&s->local;
    path.local.addrlen = s->locallen;
    path.remote.addr = (struct sockaddr *)from;
    path.remote.addrlen = fromlen;
    path.user_data = NULL;
    int rv = ngtcp2_conn_server_new(&c->conn, &hd.scid, &scid, &path, hd.version, &cb, &st, &tp,
                                    NULL, c);
    if (rv != 0) {
        note_close(s, c, "ngtcp2_conn_server_new", rv);
        conn_free(s, c);
        return NULL;
    }
    ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
    if (nq_cidmap_add(&s->od, hd.dcid.data, hd.dcid.datalen, c->idx + 1) != 0) {
        conn_free(s, c);
        return NULL;
    }
    s->accepted++;
    return c;
}

static void feed(side *s, uint8_t *pkt, size_t len, struct sockaddr_storage *from,
                 socklen_t fromlen, ngtcp2_tstamp ts)
{
    ngtcp2_version_cid vc;
    iconn *c = NULL;
    if (ngtcp2_pkt_decode_version_cid(&vc, pkt, len, NQ_CID_LEN) != 0)
        return;
    if (vc.dcidlen == NQ_CID_LEN) {
        uint32_t idx = nq_cid_index(vc.dcid);
        if (idx < s->nconns)
            c = s->conns[idx];
    } else if (s->is_server && (pkt[0] & 0x80)) {
        uint32_t v = nq_cidmap_find(&s->od, vc.dcid, vc.dcidlen);
        if (v)
            c = s->conns[v - 1];
        else
            c = server_accept(s, pkt, len, from, fromlen, ts);
    }
    if (!c)
        return;
    ngtcp2_path path;
    path.local.addr = (struct sockaddr *)&s->local;
    path.local.addrlen = s->locallen;
    path.remote.addr = (struct sockaddr *)from;
    path.remote.addrlen = fromlen;
    path.user_data = NULL;
    ngtcp2_pkt_info pi = {0};
    int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, pkt, len, ts);
    if (rv != 0) {
        if (is_closing(rv))
            s->closed++;
        else
            note_close(s, c, "ngtcp2_conn_read_pkt", rv);
        conn_free(s, c);
        return;
    }
    conn_write(s, c, ts);
}

static uint8_t rxbufs[RX_BATCH][1600];

/* Reads what the socket holds (bounded); returns datagrams read. */
static int read_some(side *s)
{
    struct mmsghdr m[RX_BATCH];
    struct iovec iov[RX_BATCH];
    struct sockaddr_storage from[RX_BATCH];
    int total = 0;
    for (int round = 0; round < 16; round++) {
        for (int i = 0; i < RX_BATCH; i++) {
            iov[i].iov_base = rxbufs[i];
            iov[i].iov_len = sizeof rxbufs[i];
            memset(&m[i].msg_hdr, 0, sizeof m[i].msg_hdr);
            m[i].msg_hdr.msg_iov = &iov[i];
            m[i].msg_hdr.msg_iovlen = 1;
            m[i].msg_hdr.msg_name = &from[i];
            m[i].msg_hdr.msg_namelen = sizeof from[i];
        }
        int n = recvmmsg(s->fd, m, RX_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            break;
        ngtcp2_tstamp ts = nq_now();
        for (int i = 0; i < n; i++) {
            struct sockaddr_storage *f = s->is_server ? &from[i] : &s->remote;
            socklen_t fl = s->is_server ? m[i].msg_hdr.msg_namelen : s->remotelen;
            feed(s, rxbufs[i], m[i].msg_len, f, fl, ts);
        }
        total += n;
        if (n < RX_BATCH)
            break;
    }
    return total;
}

static void run_timers(side *s)
{
    ngtcp2_tstamp now = nq_now();
    while (s->heap.n && nq_heap_top(&s->heap)->exp <= now) {
        iconn *c = (iconn *)nq_heap_top(&s->heap);
        nq_heap_remove(&s->heap, &c->tm);
        s->timers++;
        int rv = ngtcp2_conn_handle_expiry(c->conn, now);
        if (rv != 0) {
            if (is_closing(rv))
                s->closed++;
            else
                note_close(s, c, "ngtcp2_conn_handle_expiry", rv);
            conn_free(s, c);
            continue;
        }
        conn_write(s, c, now);
    }
}

/* One turn: sleep until a datagram, a command (cmd_fd >= 0) or the earliest timer (but
   no later than `until`), then read, then run due timers.  Returns 1 when cmd_fd is
   readable. */
static int turn(side *s, int cmd_fd, uint64_t until)
{
    struct pollfd pfd[2] = {{s->fd, POLLIN, 0}, {cmd_fd, POLLIN, 0}};
    uint64_t now = nq_now(), wake = until;
    if (s->heap.n && nq_heap_top(&s->heap)->exp < wake)
        wake = nq_heap_top(&s->heap)->exp;
    struct timespec tmo = {0, 0};
    if (wake > now) {
        tmo.tv_sec = (time_t)((wake - now) / NGTCP2_SECONDS);
        tmo.tv_nsec = (long)((wake - now) % NGTCP2_SECONDS);
    }
    int n = ppoll(pfd, cmd_fd >= 0 ? 2 : 1, &tmo, NULL);
    if (n < 0 && errno != EINTR) {
        perror("ngtcp2 idle: ppoll");
        exit(1);
    }
    if (n > 0 && (pfd[0].revents & POLLIN))
        read_some(s);
    run_timers(s);
    return n > 0 && cmd_fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP));
}

static int side_init(side *s, int server, uint32_t k)
{
    s->is_server = server;
    s->cap = k;
    s->conns = calloc(k, sizeof *s->conns);
    s->heap.v = calloc(k, sizeof *s->heap.v); /* sized up front: it never grows */
    s->heap.cap = k;
    if (server && nq_cidmap_init(&s->od, k) != 0)
        return -1;
    if (!s->conns || !s->heap.v)
        return -1;
    s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0)
        return -1;
    nq_socket_bufs(s->fd, SOCK_BUF);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(s->fd, (struct sockaddr *)&sin, sizeof sin) != 0)
        return -1;
    s->locallen = sizeof s->local;
    return getsockname(s->fd, (struct sockaddr *)&s->local, &s->locallen);
}

/* ---- server (child) ---- */

static int run_server(uint32_t k, int cmd_fd, int out_fd)
{
    static side S;
    side *s = &S;
    if (side_init(s, 1, k) != 0) {
        perror("ngtcp2 idle server: setup");
        return 1;
    }
    if (nq_server_cred(&s->cred, "ngtcp2 idle server") != 0)
        return 1;
    char line[64];
    int len =
        snprintf(line, sizeof line, "%u\n", ntohs(((struct sockaddr_in *)&s->local)->sin_port));
    if (write(out_fd, line, (size_t)len) != len)
        return 1;
    for (;;) {
        if (!turn(s, cmd_fd, nq_now() + 3600 * NGTCP2_SECONDS))
            continue;
        char c;
        if (read(cmd_fd, &c, 1) != 1 || c == 'Q')
            return 0;
        if (c == 'T')
            malloc_trim(0);
        char buf[256];
        len = snprintf(
            buf, sizeof buf,
            "%ld %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
            rss_kb(), s->established, s->pkts_out, s->timers, cpu_ns(), s->accepted, s->closed);
        if (write(out_fd, buf, (size_t)len) != len)
            return 1;
    }
}

typedef struct report {
    long rss_kb;
    uint64_t established, pkts_out, timers, cpu_ns, accepted, closed;
} report;

static int ask(int cmd, FILE *in, char what, report *r)
{
    if (write(cmd, &what, 1) != 1)
        return -1;
    if (fscanf(in, "%ld %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
               &r->rss_kb, &r->established, &r->pkts_out, &r->timers, &r->cpu_ns, &r->accepted,
               &r->closed) != 7)
        return -1;
    return 0;
}

/* ---- client ---- */

static int client_connect(side *s)
{
    iconn *c = conn_alloc(s);
    ngtcp2_callbacks cb;
    ngtcp2_settings st;
    ngtcp2_transport_params tp;
    ngtcp2_cid dcid, scid;
    ngtcp2_path path;
    if (!c) {
        snprintf(s->first_err, sizeof s->first_err, "out of memory at connection %u", s->nconns);
        return -1;
    }
    if (tls_new(s, c) != 0) {
        snprintf(s->first_err, sizeof s->first_err, "GnuTLS session setup failed at connection %u",
                 c->idx);
        conn_free(s, c);
        return -1;
    }
    dcid.datalen = NQ_CLIENT_DCID_LEN;
    gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen);
    nq_make_cid(&scid, c->idx);
    fill_callbacks(&cb, 0);
    fill_settings(&st, &tp, 0, nq_now());
    path.local.addr = (struct sockaddr *)&s->local;
    path.local.addrlen = s->locallen;
    path.remote.addr = (struct sockaddr *)&s->remote;
    path.remote.addrlen = s->remotelen;
    path.user_data = NULL;
    int rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &st,
                                    &tp, NULL, c);
    if (rv != 0) {
        snprintf(s->first_err, sizeof s->first_err, "ngtcp2_conn_client_new at connection %u: %s",
                 c->idx, ngtcp2_strerror(rv));
        conn_free(s, c);
        return -1;
    }
    ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
    if (s->keepalive)
        ngtcp2_conn_set_keep_alive_timeout(c->conn, s->keepalive);
    conn_write(s, c, nq_now());
    return 0;
}

static int parse_num(const char *a, double max, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(a, &e);
    if (errno || e == a || *e || !(v >= 0) || v > max)
        return -1;
    *out = v;
    return 0;
}

static const char idle_usage[] =
    "usage: ngtcp2 idle --links K --idle SECONDS [--keepalive SECONDS] [--json]\n"
    "Opens K QUIC connections (one UDP socket) to a forked server process on\n"
    "127.0.0.1, lets them idle, then wakes each with one message; the figures of\n"
    "`pure bench idle`.\n";

int idle_main(int argc, char **argv)
{
    static const struct option opts[] = {{"links", required_argument, NULL, 'k'},
                                         {"idle", required_argument, NULL, 'i'},
                                         {"keepalive", required_argument, NULL, 'a'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    double kd = 0, idle_s = -1, ka = 0;
    int json = 0, o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'k':
            if (parse_num(optarg, 1000000, &kd) || kd < 1 || kd != (double)(uint32_t)kd) {
                fprintf(stderr, "ngtcp2 idle: --links takes a count from 1 to 1000000\n");
                return 2;
            }
            break;
        case 'i':
            if (parse_num(optarg, 86400, &idle_s)) {
                fprintf(stderr, "ngtcp2 idle: --idle takes seconds\n");
                return 2;
            }
            break;
        case 'a':
            if (parse_num(optarg, 86400, &ka) || ka <= 0) {
                fprintf(stderr, "ngtcp2 idle: --keepalive takes seconds above 0\n");
                return 2;
            }
            break;
        case 'j': json = 1; break;
        case 'h': fputs(idle_usage, stdout); return 0;
        default: fputs(idle_usage, stderr); return 2;
        }
    }
    if (kd < 1 || idle_s < 0 || optind < argc) {
        fputs(idle_usage, stderr);
        return 2;
    }
    uint32_t k = (uint32_t)kd;
    uint64_t idle = (uint64_t)(idle_s * 1e9);

    int to_child[2], from_child[2];
    if (pipe(to_child) || pipe(from_child)) {
        perror("ngtcp2 idle: pipe");
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("ngtcp2 idle: fork");
        return 1;
    }
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        _exit(run_server(k, to_child[0], from_child[1]));
    }
    close(to_child[0]);
    close(from_child[1]);
    FILE *in = fdopen(from_child[0], "r");
    int cmd = to_child[1], rc = 1;
    unsigned port = 0;
    report s0, s1, s2;
    static side C;
    side *s = &C;
    const char *stage = "setup";
    char why[300] = "";
    if (!in || fscanf(in, "%u", &port) != 1) {
        fprintf(stderr, "ngtcp2 idle: the server process did not start\n");
        goto out;
    }
    long c_rss0 = rss_kb();
    if (ask(cmd, in, 'T', &s0))
        goto out;
    if (side_init(s, 0, k) != 0 || gnutls_certificate_allocate_credentials(&s->cred) < 0) {
        perror("ngtcp2 idle: client setup");
        goto out;
    }
    s->keepalive = (uint64_t)(ka * 1e9);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    memcpy(&s->remote, &sin, sizeof sin);
    s->remotelen = sizeof sin;
    if (connect(s->fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        perror("ngtcp2 idle: connect");
        goto out;
    }
    fprintf(stderr,
            "ngtcp2 idle: %u connections over one UDP socket per side, "
            "at most %d handshakes under way\n",
            k, MAX_HANDSHAKES);
    if (rss_kb() > c_rss0)
        c_rss0 = rss_kb();

    /* open */
    stage = "handshakes";
    uint64_t t0 = nq_now(), limit = t0 + 600 * NGTCP2_SECONDS;
    int setup_failed = 0;
    while (s->established < k && nq_now() < limit) {
        while (!setup_failed && s->nconns < k &&
               s->nconns - s->established - s->closed < MAX_HANDSHAKES)
            if (client_connect(s) != 0)
                setup_failed = 1;
        if (s->established + s->closed >= s->nconns && (setup_failed || s->closed))
            break; /* nothing under way and no way forward */
        if (s->closed && !setup_failed)
            break;
        turn(s, -1, nq_now() + 100 * 1000000ull);
    }
    double hs_seconds = (double)(nq_now() - t0) / 1e9;
    if (s->established < k) {
        snprintf(why, sizeof why, "only %" PRIu64 " of %u connections opened in %.1f s: %s",
                 s->established, k, hs_seconds,
                 s->first_err[0]     ? s->first_err
                 : nq_now() >= limit ? "600 s limit reached"
                                     : "connections closed");
        goto fail;
    }
    /* settle */
    uint64_t settle = nq_now() + 2 * NGTCP2_SECONDS;
    while (nq_now() < settle)
        turn(s, -1, settle);
    malloc_trim(0);
    long c_rss1 = rss_kb();
    if (ask(cmd, in, 'T', &s1))
        goto out;
    if (s1.established < k) {
        snprintf(why, sizeof why, "the server holds only %" PRIu64 " of %u connections",
                 s1.established, k);
        goto fail;
    }

    /* idle */
    stage = "idle";
    uint64_t cp0 = s->pkts_out, ct0 = s->timers, cc0 = s->closed, ccpu0 = cpu_ns();
    uint64_t idle_end = nq_now() + idle;
    while (nq_now() < idle_end)
        turn(s, -1, idle_end);
    uint64_t ccpu1 = cpu_ns();
    if (ask(cmd, in, 'S', &s2))
        goto out;
    if (s->closed != cc0 || s2.closed != s1.closed)
        fprintf(stderr,
                "ngtcp2 idle: %" PRIu64 " client and %" PRIu64
                " server connections closed while idle\n",
                s->closed - cc0, s2.closed - s1.closed);

    double cli_bpl = (double)(c_rss1 - c_rss0) * 1024 / k;
    double srv_bpl = (double)(s1.rss_kb - s0.rss_kb) * 1024 / k;
    uint64_t cpk = s->pkts_out - cp0, spk = s2.pkts_out - s1.pkts_out;
    uint64_t ctm = s->timers - ct0, stm = s2.timers - s1.timers;
    double link_seconds = (double)k * (double)idle / 1e9;
    double ccpu = (double)(ccpu1 - ccpu0) / 1e3, scpu = (double)(s2.cpu_ns - s1.cpu_ns) / 1e3;
    printf("links %u, idle %.0f s, keepalive %s\n", k, idle_s, ka > 0 ? "on" : "off");
    printf("%-28s %12s %12s\n", "", "client", "server");
    printf("%-28s %12.0f %12.0f\n", "resident bytes per link", cli_bpl, srv_bpl);
    printf("%-28s %12" PRIu64 " %12" PRIu64 "\n", "packets sent while idle", cpk, spk);
    printf("%-28s %12" PRIu64 " %12" PRIu64 "\n", "timers fired while idle", ctm, stm);
    printf("%-28s %12.4f %12.4f\n", "CPU us per idle link-second", ccpu / link_seconds,
           scpu / link_seconds);
    printf("handshakes: %.2f s for all %u links\n", hs_seconds, k);
    fflush(stdout);

    /* wake */
    stage = "wake-up";
    long long drops0 = udp_rcvbuf_errors();
    uint64_t t1 = nq_now(), wake_limit = t1 + WAKE_LIMIT;
    for (uint32_t i = 0; i < s->nconns; i++) {
        iconn *c = s->conns[i];
        if (!c)
            continue;
        if (ngtcp2_conn_open_bidi_stream(c->conn, &c->sid, NULL) != 0) {
            note_close(s, c, "ngtcp2_conn_open_bidi_stream", NGTCP2_ERR_STREAM_ID_BLOCKED);
            continue;
        }
        c->want_send = 1;
        conn_write(s, c, nq_now());
    }
    while (s->answered < k && nq_now() < wake_limit && s->answered + s->closed < k)
        turn(s, -1, wake_limit);
    double wake_seconds = (double)(nq_now() - t1) / 1e9;
    long long drops1 = udp_rcvbuf_errors();
    if (drops0 >= 0 && drops1 > drops0)
        fprintf(stderr,
                "ngtcp2 idle: %lld UDP datagrams dropped for full receive buffers during "
                "the wake-up (system-wide counter; QUIC loss recovery resends)\n",
                drops1 - drops0);
    int woke = s->answered == k;
    if (woke)
        printf("wake-up: %.3f s until every link answered\n", wake_seconds);
    else
        printf("wake-up: FAILED: %" PRIu64 " of %u links answered within %.0f s (%" PRIu64
               " connections closed)\n",
               s->answered, k, wake_seconds, s->closed);
    if (json)
        printf("{\"links\": %u, \"idle_seconds\": %.0f, \"keepalive\": %s, "
               "\"client_bytes_per_link\": %.0f, \"server_bytes_per_link\": %.0f, "
               "\"packets_while_idle\": %" PRIu64 ", \"timers_fired_while_idle\": %" PRIu64 ", "
               "\"cpu_us_per_link_second\": %.5f, \"handshake_seconds\": %.3f, "
               "\"wake_seconds\": %.3f, \"woke\": %" PRIu64 ", "
               "\"client_packets_while_idle\": %" PRIu64 ", \"server_packets_while_idle\": %" PRIu64
               ", \"client_timers_while_idle\": %" PRIu64 ", \"server_timers_while_idle\": %" PRIu64
               ", \"sockets_per_side\": 1}\n",
               k, idle_s, ka > 0 ? "true" : "false", cli_bpl, srv_bpl, cpk + spk, ctm + stm,
               (ccpu + scpu) / link_seconds, hs_seconds, woke ? wake_seconds : -1.0, s->answered,
               cpk, spk, ctm, stm);
    if (s->send_drops)
        fprintf(stderr,
                "ngtcp2 idle: client: %" PRIu64 " datagrams dropped by a full socket "
                "(resent by QUIC loss recovery)\n",
                s->send_drops);
    rc = woke ? 0 : 1;
    goto out;
fail:
    fprintf(stderr, "ngtcp2 idle: stopped during %s: %s\n", stage, why);
    printf("links %u: stopped during %s: %s\n", k, stage, why);
    if (json)
        printf("{\"links\": %u, \"idle_seconds\": %.0f, \"keepalive\": %s, \"failed\": true, "
               "\"stage\": \"%s\", \"opened\": %" PRIu64 ", \"error\": \"%s\"}\n",
               k, idle_s, ka > 0 ? "true" : "false", stage, s->established, why);
out:
    if (cmd >= 0) {
        char q = 'Q';
        if (write(cmd, &q, 1) != 1)
            kill(pid, SIGTERM);
        close(cmd);
    }
    waitpid(pid, NULL, 0);
    if (in)
        fclose(in);
    fflush(stdout);
    return rc;
}
