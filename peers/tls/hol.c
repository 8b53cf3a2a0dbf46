/* SPDX-License-Identifier: MIT */
/* tls-hol: the head-of-line benchmark over TCP + TLS 1.3 (bench/run.py hol, issue #23): the
 * TCP+TLS row, on bench/hol_work.h (the frames, the query for the goodput, the timing and the
 * output line, shared with the ngtcp2 peer and mirrored by quinn's).
 *
 *   tls-hol serve [--listen IP:PORT] [--cc NAME]
 *       Prints {"port": N, "service": "hol", "cert_sha256": "<hex>"} and serves connections one
 *       after another until SIGTERM/SIGINT: every frame of at most 64 bytes is echoed (a query
 *       answered), longer ones (bulk) are counted.
 *   tls-hol client IP:PORT [--cert-sha256 HEX] --mode alone|same [--duration S] [--warmup S]
 *             [--rate N] [--size N] [--bulk N] [--cc NAME] [--notsent-lowat BYTES]
 *       One TCP connection, one TLS stream: `alone` sends only the requests, `same` the bulk
 *       frames back to back with the requests between them. A TCP connection is one ordered
 *       stream, so there is no `separate`. A request waits in the application while the frame
 *       being written (a bulk frame in `same`) is not yet wholly in the socket, or the socket's
 *       send buffer is full, and is timed from when it was due. --notsent-lowat: TCP_NOTSENT_LOWAT
 *       (the socket takes more only while fewer bytes than that wait unsent; default: the
 *       kernel's, no limit short of the autotuned send buffer).
 *
 * TLS: tls_setup.c's (TLS 1.3, TLS_AES_128_GCM_SHA256, X25519), partial writes (a record at a
 * time). TCP_NODELAY on both sides. Congestion control: --cc (default cubic, the QUIC peers'
 * algorithm; the kernel's default may be another). Socket buffers: the kernel's autotuning. */
#define _GNU_SOURCE
#include "hol_work.h"
#include "tls_setup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define RBUF (64u * 1024u)
#define WMAX (256u * 1024u)          /* plaintext handed to one SSL_write */
#define WRITE_BUDGET (1024u * 1024u) /* the client's writes in one turn of its loop */

static volatile sig_atomic_t g_stop;
static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    if (*end || port < 0 || port > 65535 || inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return -1;
    a->sin_port = htons((uint16_t)port);
    return 0;
}

static void tcp_opts(int fd, const char *cc)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) != 0)
        fprintf(stderr,
                "tls-hol: note: congestion control %s unavailable (%s); the kernel's default\n", cc,
                strerror(errno));
}

static void set_nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* SSL_read until it would block or READ_BUDGET bytes are in; feeds the frames. 1 at the end of
 * the stream, 0, or -1. The budget returns to the caller's loop while a sender outpaces it (on
 * loopback the bulk can arrive as fast as it is read, for seconds): the server must write its
 * echoes and log the bulk with the time it came, not once when the stream pauses. What stays in
 * OpenSSL's buffer is not seen by poll: the caller polls with no wait while SSL_pending. */
#define READ_BUDGET (1024u * 1024u)
static int read_all(SSL *ssl, hol_framer *fr, hol_small_fn fn, void *arg, uint64_t *bulk)
{
    static uint8_t buf[RBUF];
    for (size_t taken = 0; taken < READ_BUDGET;) {
        size_t got = 0;
        if (SSL_read_ex(ssl, buf, sizeof buf, &got) != 1) {
            int e = SSL_get_error(ssl, 0);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                return 0;
            ERR_clear_error();
            return e == SSL_ERROR_ZERO_RETURN ? 1 : -1;
        }
        if (hol_feed(fr, buf, got, fn, arg, bulk))
            return -1;
        taken += got;
    }
    return 0;
}

/* Writes p[*off..len) as far as the socket takes it. 1 when all is written, 0 when it would
 * block (call again with the same p and len), -1 on error. */
static int write_some(SSL *ssl, const uint8_t *p, size_t len, size_t *off)
{
    while (*off < len) {
        size_t w = 0, n = len - *off < WMAX ? len - *off : WMAX;
        if (SSL_write_ex(ssl, p + *off, n, &w) != 1) {
            int e = SSL_get_error(ssl, 0);
            if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ)
                return 0;
            tls_ssl_errors("SSL_write");
            return -1;
        }
        *off += w;
    }
    return 1;
}

/* A blocking handshake (bounded by the socket timeouts), then non-blocking. */
static SSL *handshake(SSL_CTX *ctx, int fd, int server)
{
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    SSL *ssl = SSL_new(ctx);
    if (!ssl || !SSL_set_fd(ssl, fd)) {
        tls_ssl_errors("SSL_new");
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if ((server ? SSL_accept(ssl) : SSL_connect(ssl)) != 1) {
        tls_ssl_errors(server ? "TLS handshake (server)" : "TLS handshake (client)");
        SSL_free(ssl);
        return NULL;
    }
    set_nonblock(fd);
    return ssl;
}

/* ---- server ---- */

typedef struct srv {
    hol_bulklog log;
    uint8_t *out;
    size_t out_len, out_off, out_cap;
} srv;

static void srv_small(void *arg, const uint8_t *d, size_t len)
{
    srv *s = arg;
    if (s->out_len + 4 + HOL_SMALL_MAX > s->out_cap) {
        size_t cap = s->out_cap ? 2 * s->out_cap : 65536;
        uint8_t *q = realloc(s->out, cap);
        if (!q)
            return; /* out of memory: this echo is lost, and the client counts it missing */
        s->out = q, s->out_cap = cap;
    }
    s->out_len += hol_server_reply(&s->log, d, len, s->out + s->out_len);
}

static void serve_conn(SSL_CTX *ctx, int fd, const char *cc)
{
    tcp_opts(fd, cc);
    SSL *ssl = handshake(ctx, fd, 1);
    if (!ssl) {
        close(fd);
        return;
    }
    srv s = {0};
    hol_framer fr = {0};
    int rc = 0;
    while (!g_stop && rc == 0) {
        struct pollfd pfd = {fd, POLLIN | (s.out_off < s.out_len ? POLLOUT : 0), 0};
        if (poll(&pfd, 1, SSL_pending(ssl) > 0 ? 0 : 200) < 0 && errno != EINTR)
            break;
        uint64_t bulk = 0;
        rc = read_all(ssl, &fr, srv_small, &s, &bulk);
        if (bulk)
            hol_bulklog_add(&s.log, bulk, hol_now_ns());
        if (s.out_off < s.out_len) {
            int w = write_some(ssl, s.out, s.out_len, &s.out_off);
            if (w < 0)
                rc = -1;
            else if (w == 1)
                s.out_off = s.out_len = 0;
        }
    }
    if (rc < 0 && !g_stop)
        fprintf(stderr,
                "tls-hol serve: connection ended with an error after %" PRIu64 " bulk bytes\n",
                s.log.total);
    else
        fprintf(stderr, "tls-hol serve: connection done, %" PRIu64 " bulk bytes\n", s.log.total);
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
    free(s.out);
    hol_bulklog_free(&s.log);
}

static int cmd_serve(int argc, char **argv)
{
    const char *listen_at = "127.0.0.1:0", *cc = "cubic";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--listen") && i + 1 < argc)
            listen_at = argv[++i];
        else if (!strcmp(argv[i], "--cc") && i + 1 < argc)
            cc = argv[++i];
        else {
            fprintf(stderr, "usage: tls-hol serve [--listen IP:PORT] [--cc NAME]\n");
            return 2;
        }
    }
    struct sockaddr_in a;
    if (parse_addr(listen_at, &a)) {
        fprintf(stderr, "tls-hol serve: bad address '%s' (IPv4 IP:PORT)\n", listen_at);
        return 2;
    }
    SSL_CTX *ctx = tls_ctx_new(1);
    char hex[65];
    if (!ctx || tls_make_cert(ctx, hex))
        return 1;
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    socklen_t al = sizeof a;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 16) ||
        getsockname(ls, (struct sockaddr *)&a, &al)) {
        fprintf(stderr, "tls-hol serve: cannot listen on %s: %s\n", listen_at, strerror(errno));
        return 1;
    }
    printf("{\"port\": %u, \"service\": \"hol\", \"cert_sha256\": \"%s\"}\n", ntohs(a.sin_port),
           hex);
    fflush(stdout);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    while (!g_stop) {
        struct pollfd pfd = {ls, POLLIN, 0};
        if (poll(&pfd, 1, 200) <= 0)
            continue;
        int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            serve_conn(ctx, fd, cc);
    }
    close(ls);
    SSL_CTX_free(ctx);
    return 0;
}

/* ---- client ---- */

static int cmd_client(int argc, char **argv)
{
    const char *addr = argc > 0 ? argv[0] : NULL, *pin = NULL, *cc = "cubic";
    long lowat = 0;
    hol_opts o;
    hol_opts_default(&o);
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = hol_opt(&o, argv[i], v);
        if (r == 1)
            continue;
        if (r == 0 && v && !strcmp(argv[i], "--cert-sha256"))
            pin = v;
        else if (r == 0 && v && !strcmp(argv[i], "--cc"))
            cc = v;
        else if (r == 0 && v && !strcmp(argv[i], "--notsent-lowat") && (lowat = atol(v)) > 0)
            continue;
        else {
            fprintf(stderr, "tls-hol client: bad or unknown argument '%s'\n", argv[i]);
            goto usage;
        }
    }
    struct sockaddr_in a;
    if (!addr || parse_addr(addr, &a) || o.mode < 0)
        goto usage;
    if (o.mode == HOL_SEPARATE) {
        fprintf(stderr, "tls-hol client: a TCP connection is one stream: no --mode separate\n");
        return 2;
    }
    SSL_CTX *ctx = tls_client_ctx(0);
    if (!ctx)
        return 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    tcp_opts(fd, cc);
    if (lowat > 0) {
        int lw = (int)(lowat > (1l << 30) ? 1l << 30 : lowat);
        if (setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lw, sizeof lw))
            fprintf(stderr, "tls-hol client: TCP_NOTSENT_LOWAT: %s\n", strerror(errno));
    }
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect() */
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        fprintf(stderr, "tls-hol client: connect %s: %s\n", addr, strerror(errno));
        close(fd);
        SSL_CTX_free(ctx);
        return 1;
    }
    SSL *ssl = handshake(ctx, fd, 0);
    if (!ssl || (pin && tls_check_fingerprint(ssl, pin))) {
        SSL_free(ssl);
        SSL_CTX_free(ctx);
        close(fd);
        return 1;
    }

    hol_client c;
    if (hol_client_start(&c, &o)) {
        fprintf(stderr, "tls-hol client: out of memory\n");
        return 1;
    }
    hol_framer fr = {0};
    static uint8_t reqbuf[65536];
    uint8_t query[4 + HOL_QUERY_LEN];
    const uint8_t *cur = NULL; /* the frame(s) being written */
    size_t cur_len = 0, cur_off = 0;
    int bulk_on = o.mode == HOL_SAME, query_state = 0; /* 1 queued/written, 2 answered */
    uint64_t t_from = 0, t_to = 0, drain_end = 0, query_end = 0, ignore = 0;
    const char *fail = NULL;
    for (;;) {
        uint64_t now = hol_now_ns();
        if (!t_from && now >= c.from)
            t_from = now;
        if (!t_to && now >= c.to) {
            t_to = now;
            drain_end = now + HOL_DRAIN_NS;
        }
        if (t_to && bulk_on && (hol_all_answered(&c) || now >= drain_end))
            bulk_on = 0; /* the window's answers are in (or given up on): the bulk stops */
        /* the next frame(s): due requests first, then bulk, and at the end the query. At most
         * WRITE_BUDGET bytes a turn: a server that reads as fast as this writes would keep the
         * loop here with a stale clock (requests taken late, the window's ends missed). */
        int w = 1, more = 0;
        for (size_t turn = 0; w == 1; turn += cur_len) {
            if (turn >= WRITE_BUDGET) {
                more = 1;
                break;
            }
            if (!cur) {
                size_t n = hol_take_due(&c, now, reqbuf, sizeof reqbuf);
                if (n)
                    cur = reqbuf, cur_len = n;
                else if (bulk_on)
                    cur = c.bulk_frame, cur_len = c.bulk_len;
                else if (t_to && !bulk_on && query_state == 0 &&
                         (hol_all_answered(&c) || now >= drain_end)) {
                    hol_query_frame(query, t_from, t_to);
                    cur = query, cur_len = sizeof query;
                    query_state = 1;
                    query_end = now + HOL_DRAIN_NS;
                } else
                    break;
                cur_off = 0;
            }
            w = write_some(ssl, cur, cur_len, &cur_off);
            if (w == 1)
                cur = NULL;
        }
        if (w < 0) {
            fail = "writing";
            break;
        }
        int r = read_all(ssl, &fr, hol_client_small, &c, &ignore);
        if (r) {
            fail = r > 0 ? "the server ended the stream" : "reading";
            break;
        }
        if (c.answered_query || (query_state == 1 && now >= query_end))
            break;
        /* sleep until the socket is ready or the next request is due */
        uint64_t wake = UINT64_MAX;
        if (!hol_requests_done(&c))
            wake = hol_next_due(&c);
        if (!t_from && c.from < wake)
            wake = c.from;
        if (!t_to && c.to < wake)
            wake = c.to;
        if (t_to && !query_state && wake > now + 5000000)
            wake = now + 5000000;
        if (query_state == 1 && query_end < wake)
            wake = query_end;
        if (more || SSL_pending(ssl) > 0)
            wake = 0; /* a budget stopped the writes or read_all: no sleep */
        now = hol_now_ns();
        struct timespec ts = {0, 0};
        if (wake > now)
            ts.tv_sec = (time_t)((wake - now) / 1000000000ull),
            ts.tv_nsec = (long)((wake - now) % 1000000000ull);
        struct pollfd pfd = {fd, POLLIN | (cur ? POLLOUT : 0), 0};
        if (wake > now && ppoll(&pfd, 1, wake == UINT64_MAX ? NULL : &ts, NULL) < 0 &&
            errno != EINTR) {
            fail = "ppoll";
            break;
        }
    }
    if (!t_to)
        t_to = hol_now_ns();
    if (!t_from)
        t_from = t_to;
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    memset(&ti, 0, sizeof ti);
    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
    char cong[16] = "?";
    socklen_t cl = sizeof cong - 1;
    getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cong, &cl);
    cong[sizeof cong - 1] = 0;
    char extra[256];
    snprintf(extra, sizeof extra,
             ", \"retransmitted_segments\": %u, \"rtt_us\": %u, \"cwnd\": %u, "
             "\"cc\": \"%s\"",
             ti.tcpi_total_retrans, ti.tcpi_rtt, ti.tcpi_snd_cwnd, cong);
    if (fail)
        fprintf(stderr, "tls-hol client: stopped: %s\n", fail);
    else if (!c.answered_query)
        fprintf(stderr, "tls-hol client: no answer to the goodput query within %llu s\n",
                (unsigned long long)(HOL_DRAIN_NS / 1000000000ull));
    hol_print(&c, o.mode, t_from, t_to, extra);
    int ok = !fail && c.n_rtt > 0 && c.answered_query;
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(ctx);
    hol_client_free(&c);
    return ok ? 0 : 1;
usage:
    fprintf(stderr, "usage: tls-hol client IP:PORT [--cert-sha256 HEX] " HOL_CLIENT_OPTS
                    " [--cc NAME] [--notsent-lowat BYTES]\n"
                    "       (--mode alone|same: TCP has one stream)\n");
    return 2;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && !strcmp(argv[1], "serve"))
        return cmd_serve(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "client"))
        return cmd_client(argc - 2, argv + 2);
    fprintf(stderr, "usage: tls-hol serve [--listen IP:PORT] [--cc NAME]\n"
                    "       tls-hol client IP:PORT [--cert-sha256 HEX] " HOL_CLIENT_OPTS
                    " [--cc NAME] [--notsent-lowat BYTES]\n");
    return 2;
}
