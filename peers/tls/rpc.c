/* SPDX-License-Identifier: MIT */
/* tls-rpc: the RPC workload over TCP + TLS 1.3 (OpenSSL 3.0), or plain TCP (bench/README.md,
 * "RPC"; issue #14). The requests, their check and the latency histogram are bench/rpc_work.h's,
 * as for Pure's tools/rpc_bench.c; on the stream each message is a u32 big-endian length and the
 * body (no preamble).
 *
 *   tls-rpc serve [--plain] [--threads N] [--corrupt-every N] [--drop-every N]
 *       binds 127.0.0.1 on an ephemeral port, prints {"port": N, "cert_sha256": "<hex>"}, and
 *       serves until SIGTERM or SIGINT, then prints {"served": N, ...}. N threads (default 1),
 *       each with its own SO_REUSEPORT listening socket and epoll: the kernel spreads
 *       connections over them and a connection stays on its thread. Non-blocking sockets;
 *       every whole request read is sent back, all of one wakeup's replies on a connection in
 *       one SSL_write and one send(). --corrupt-every / --drop-every: every Nth reply has a
 *       byte flipped / is not sent (for the test that the client notices).
 *   tls-rpc client PORT --links L --outstanding P --size S --duration SEC [--warmup SEC]
 *                  [--drain-timeout SEC] [--rate R] [--cert-sha256 HEX] [--plain]
 *   tls-rpc client PORT --links L --size S --fanin N [--drain-timeout SEC] [--cert-sha256 HEX]
 *       L connections (at most 256 handshakes at once, full TLS 1.3 handshakes, certificate
 *       pinned), then P requests in flight on each, every reply checked; phase lines and the
 *       final JSON line as tools/rpc_bench.c. Exit 0 only if every reply arrived intact.
 *       --rate and --fanin as in tools/rpc_bench.c: a fixed total request rate; the fan-in drain
 *       of N one-way requests per connection (bench/rpc_work.h, RPC_ONEWAY).
 *
 * The socket BIO (nbio below) reads ahead up to 16 KiB with one recv() per wakeup (epoll is
 * level-triggered, so what is left wakes us again: no recv() that only says EAGAIN) and gathers
 * the records of a wakeup's SSL_writes for one send(). No kTLS (see tls.c).
 */
#define _GNU_SOURCE
#include "rpc_work.h"
#include "tls_setup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define RBUF (16u * 1024u) /* read-ahead per connection */
#define DEC (64u * 1024u)  /* plaintext read per SSL_read */
#define MAX_HANDSHAKES 256
#define MAX_THREADS 64

enum {
    C_CONNECTING = 1,
    C_HANDSHAKE,
    C_READY,
    C_CLOSED
};

typedef struct conn {
    int fd, state, out_armed, budget, eof;
    SSL *ssl; /* NULL with --plain */
    uint8_t *rbuf;
    size_t roff, rlen;
    uint8_t *wbuf; /* bytes for the socket (records, or plaintext with --plain) */
    size_t woff, wlen, wcap;
    uint8_t *acc; /* a partly received frame */
    size_t alen, acap;
    /* client */
    uint32_t idx;
    uint64_t next_seq, next_reply;
} conn;

/* Growable byte buffer: plaintext staged for one SSL_write. */
typedef struct bytes {
    uint8_t *p;
    size_t len, cap;
} bytes;

static int bytes_reserve(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    uint8_t *q = realloc(*p, n);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int bytes_put(bytes *b, const void *d, size_t n)
{
    if (bytes_reserve(&b->p, &b->cap, b->len + n))
        return -1;
    memcpy(b->p + b->len, d, n);
    b->len += n;
    return 0;
}

static int set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

/* ---- nbio: a non-blocking socket BIO with read-ahead and gathered writes ---- */

static int nbio_read(BIO *b, char *out, int outl)
{
    conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (outl <= 0)
        return 0;
    if (c->roff == c->rlen) {
        if (c->eof)
            return 0;
        if (!c->budget) { /* one recv per wakeup; epoll says when there is more */
            BIO_set_retry_read(b);
            return -1;
        }
        c->budget--;
        ssize_t got;
        do
            got = recv(c->fd, c->rbuf, RBUF, 0);
        while (got < 0 && errno == EINTR);
        if (got == 0) {
            c->eof = 1;
            return 0;
        }
        if (got < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                BIO_set_retry_read(b);
            return -1;
        }
        c->roff = 0;
        c->rlen = (size_t)got;
    }
    size_t n = c->rlen - c->roff;
    if (n > (size_t)outl)
        n = (size_t)outl;
    memcpy(out, c->rbuf + c->roff, n);
    c->roff += n;
    return (int)n;
}

static int nbio_write(BIO *b, const char *in, int inl)
{
    conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (bytes_reserve(&c->wbuf, &c->wcap, c->wlen + (size_t)inl))
        return -1;
    memcpy(c->wbuf + c->wlen, in, (size_t)inl);
    c->wlen += (size_t)inl;
    return inl;
}

static long nbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    conn *c = BIO_get_data(b);
    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH: return 1; /* the event loop sends wbuf after every wakeup */
    case BIO_CTRL_WPENDING: return (long)(c->wlen - c->woff);
    case BIO_CTRL_PENDING: return (long)(c->rlen - c->roff);
    case BIO_CTRL_EOF: return c->eof && c->roff == c->rlen;
    default: return 0;
    }
}

static BIO_METHOD *nbio_method(void)
{
    static BIO_METHOD *m;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    if (!m) {
        m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rpc non-blocking socket");
        if (m && (!BIO_meth_set_read(m, nbio_read) || !BIO_meth_set_write(m, nbio_write) ||
                  !BIO_meth_set_ctrl(m, nbio_ctrl)))
            m = NULL;
    }
    pthread_mutex_unlock(&mu);
    return m;
}

static conn *conn_new(int fd, SSL_CTX *ctx, int server)
{
    conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    c->rbuf = malloc(RBUF);
    if (!c->rbuf)
        goto fail;
    if (ctx) {
        BIO_METHOD *m = nbio_method();
        BIO *b = m ? BIO_new(m) : NULL;
        c->ssl = b ? SSL_new(ctx) : NULL;
        if (!c->ssl) {
            BIO_free(b);
            tls_ssl_errors("SSL_new");
            goto fail;
        }
        BIO_set_data(b, c);
        BIO_set_init(b, 1);
        SSL_set_bio(c->ssl, b, b);
        if (server)
            SSL_set_accept_state(c->ssl);
        else
            SSL_set_connect_state(c->ssl);
    }
    return c;
fail:
    free(c->rbuf);
    free(c);
    return NULL;
}

static void conn_free(conn *c)
{
    SSL_free(c->ssl);
    if (c->fd >= 0)
        close(c->fd);
    free(c->rbuf);
    free(c->wbuf);
    free(c->acc);
    free(c);
}

/* Sends what wbuf holds; arms EPOLLOUT while the socket is full. 0, or -1 if the peer is gone. */
static int conn_flush(conn *c, int ep)
{
    while (c->woff < c->wlen) {
        ssize_t w = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -1;
            if (!c->out_armed) {
                struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                c->out_armed = 1;
            }
            return 0;
        }
        c->woff += (size_t)w;
    }
    c->woff = c->wlen = 0;
    if (c->out_armed && c->state != C_CONNECTING) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->out_armed = 0;
    }
    return 0;
}

/* Hands staged plaintext to TLS (or straight to wbuf with --plain). 0 or -1. */
static int conn_write(conn *c, bytes *stage)
{
    if (!stage->len)
        return 0;
    int rc = 0;
    if (c->ssl) {
        size_t w;
        if (SSL_write_ex(c->ssl, stage->p, stage->len, &w) != 1 || w != stage->len) {
            tls_ssl_errors("SSL_write");
            rc = -1;
        }
    } else if (bytes_reserve(&c->wbuf, &c->wcap, c->wlen + stage->len)) {
        rc = -1;
    } else {
        memcpy(c->wbuf + c->wlen, stage->p, stage->len);
        c->wlen += stage->len;
    }
    stage->len = 0;
    return rc;
}

typedef void (*frame_fn)(conn *c, const uint8_t *d, size_t len, void *arg);

/* Splits plaintext into frames (u32 BE length + body), calling fn for each whole one; a partial
 * frame waits in c->acc. -1 if a length is over max. */
static int conn_feed(conn *c, const uint8_t *p, size_t n, size_t max, frame_fn fn, void *arg)
{
    while (n) {
        if (c->alen == 0 && n >= 4) {
            uint32_t len = rpc_get_be32(p);
            if (len > max)
                return -1;
            if (n - 4 >= len) {
                fn(c, p + 4, len, arg);
                p += 4 + (size_t)len;
                n -= 4 + (size_t)len;
                continue;
            }
        }
        size_t need = c->alen < 4 ? 4 - c->alen : 4 + (size_t)rpc_get_be32(c->acc) - c->alen;
        size_t t = need < n ? need : n;
        if (bytes_reserve(&c->acc, &c->acap, c->alen + t))
            return -1;
        memcpy(c->acc + c->alen, p, t);
        c->alen += t, p += t, n -= t;
        if (c->alen >= 4) {
            uint32_t len = rpc_get_be32(c->acc);
            if (len > max)
                return -1;
            if (c->alen == 4 + (size_t)len) {
                fn(c, c->acc + 4, len, arg);
                c->alen = 0;
            }
        }
    }
    return 0;
}

/* Reads what one wakeup allows and feeds it. 1 if the peer ended the stream, 0, or -1. */
static int conn_read(conn *c, uint8_t *dec, size_t max, frame_fn fn, void *arg)
{
    c->budget = 1;
    for (;;) {
        size_t got = 0;
        if (c->ssl) {
            if (SSL_read_ex(c->ssl, dec, DEC, &got) != 1) {
                int e = SSL_get_error(c->ssl, 0);
                if (e == SSL_ERROR_WANT_READ)
                    return 0;
                if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && c->eof))
                    return 1;
                ERR_clear_error();
                return -1;
            }
        } else {
            if (!c->budget)
                return 0;
            c->budget--;
            ssize_t r = recv(c->fd, dec, DEC, 0);
            if (r == 0)
                return 1;
            if (r < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -1;
            got = (size_t)r;
        }
        if (conn_feed(c, dec, got, max, fn, arg))
            return -1;
    }
}

/* Drives the handshake. 1 when it completed, 0 when it waits for the peer, -1 on failure. */
static int conn_handshake(conn *c)
{
    c->budget = 1;
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->state = C_READY;
        return 1;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    tls_ssl_errors("TLS handshake");
    return -1;
}

/* ---- server ---- */

static int g_stop_fd = -1;

static void on_signal(int sig)
{
    (void)sig;
    uint64_t one = 1;
    if (g_stop_fd >= 0 && write(g_stop_fd, &one, sizeof one) < 0) {
        /* nothing to do in a signal handler */
    }
}

typedef struct worker {
    pthread_t th;
    int ls, ep;
    SSL_CTX *ctx;
    uint64_t corrupt_every, drop_every;
    uint64_t requests, served, corrupted, dropped, conns, failed;
    bytes stage;
    uint8_t *dec;
} worker;

static void srv_frame(conn *c, const uint8_t *d, size_t len, void *arg)
{
    worker *w = arg;
    (void)c;
    w->requests++;
    if (!rpc_server_echoes(d, len)) /* the fan-in drain's one-way requests: counted only */
        return;
    if (w->drop_every && w->requests % w->drop_every == 0) {
        w->dropped++;
        return;
    }
    uint8_t hdr[4];
    rpc_put_be32(hdr, (uint32_t)len);
    size_t at = w->stage.len + 4;
    if (bytes_put(&w->stage, hdr, 4) || bytes_put(&w->stage, d, len)) {
        w->failed++;
        return;
    }
    if (w->corrupt_every && w->requests % w->corrupt_every == 0 && len) {
        w->stage.p[at + len - 1] ^= 0x5a;
        w->corrupted++;
    }
    w->served++;
}

static void srv_close(worker *w, conn *c)
{
    epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
    conn_free(c);
}

static void srv_event(worker *w, conn *c, uint32_t events)
{
    if (c->out_armed && (events & EPOLLOUT) && conn_flush(c, w->ep)) {
        srv_close(w, c);
        return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    int end = 0;
    if (c->state == C_HANDSHAKE) {
        int h = conn_handshake(c);
        if (h < 0) {
            w->failed++;
            conn_flush(c, w->ep); /* the alert, if any */
            srv_close(w, c);
            return;
        }
    }
    if (c->state == C_READY)
        end = conn_read(c, w->dec, RPC_MAX_SIZE, srv_frame, w);
    if (end >= 0 && conn_write(c, &w->stage))
        end = -1;
    if (end == 1 && c->ssl) {
        SSL_shutdown(c->ssl); /* our close_notify */
    }
    if (conn_flush(c, w->ep) || end) {
        if (end < 0)
            w->failed++;
        srv_close(w, c);
    }
}

static void srv_accept(worker *w)
{
    for (;;) {
        int fd = accept4(w->ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or an aborted connection */
        set_nodelay(fd);
        conn *c = conn_new(fd, w->ctx, 1);
        if (!c) {
            close(fd);
            continue;
        }
        c->state = c->ssl ? C_HANDSHAKE : C_READY;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev)) {
            conn_free(c);
            continue;
        }
        w->conns++;
    }
}

static void *srv_run(void *arg)
{
    worker *w = arg;
    static char listen_tag, stop_tag;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listen_tag};
    epoll_ctl(w->ep, EPOLL_CTL_ADD, w->ls, &ev);
    ev.data.ptr = &stop_tag;
    epoll_ctl(w->ep, EPOLL_CTL_ADD, g_stop_fd, &ev);
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(w->ep, evs, 256, -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &stop_tag)
                return NULL; /* connections are left to the process's exit */
            if (evs[i].data.ptr == &listen_tag)
                srv_accept(w);
            else
                srv_event(w, evs[i].data.ptr, evs[i].events);
        }
    }
    return NULL;
}

static int listen_socket(uint16_t port, uint16_t *bound)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (ls < 0)
        return -1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(ls, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096) ||
        getsockname(ls, (struct sockaddr *)&a, &al)) {
        close(ls);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return ls;
}

static int cmd_serve(int argc, char **argv)
{
    int plain = 0;
    uint64_t threads = 1, corrupt = 0, drop = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--plain"))
            plain = 1;
        else if (!strcmp(argv[i], "--threads") && !rpc_parse_count(v, 1, MAX_THREADS, &threads))
            i++;
        else if (!strcmp(argv[i], "--corrupt-every") &&
                 !rpc_parse_count(v, 1, UINT64_MAX, &corrupt))
            i++;
        else if (!strcmp(argv[i], "--drop-every") && !rpc_parse_count(v, 1, UINT64_MAX, &drop))
            i++;
        else {
            fprintf(
                stderr,
                "usage: tls-rpc serve [--plain] [--threads N] [--corrupt-every N] [--drop-every N]\n");
            return 2;
        }
    }
    SSL_CTX *ctx = NULL;
    char fp[65] = {0};
    if (!plain) {
        ctx = tls_ctx_new(1);
        if (!ctx || tls_make_cert(ctx, fp))
            return 1;
        SSL_CTX_set_num_tickets(ctx, 0); /* no resumption: every connection a full handshake */
    }
    g_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    static worker ws[MAX_THREADS];
    uint16_t port = 0;
    for (uint64_t t = 0; t < threads; t++) {
        worker *w = &ws[t];
        w->ctx = ctx;
        w->corrupt_every = corrupt, w->drop_every = drop;
        w->ls = listen_socket(port, &port);
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        w->dec = malloc(DEC);
        if (w->ls < 0 || w->ep < 0 || !w->dec || g_stop_fd < 0) {
            fprintf(stderr, "tls-rpc serve: cannot listen on 127.0.0.1: %s\n", strerror(errno));
            return 1;
        }
    }
    if (plain)
        printf("{\"port\": %u, \"mode\": \"tcp\", \"service\": \"rpc\", \"threads\": %" PRIu64
               "}\n",
               port, threads);
    else
        printf("{\"port\": %u, \"mode\": \"tls1.3\", \"service\": \"rpc\", \"threads\": %" PRIu64
               ", \"cert_sha256\": \"%s\"}\n",
               port, threads, fp);
    fflush(stdout);
    for (uint64_t t = 1; t < threads; t++)
        pthread_create(&ws[t].th, NULL, srv_run, &ws[t]);
    srv_run(&ws[0]);
    uint64_t req = 0, served = 0, corrupted = 0, dropped = 0, conns = 0, failed = 0;
    for (uint64_t t = 0; t < threads; t++) {
        if (t)
            pthread_join(ws[t].th, NULL);
        req += ws[t].requests, served += ws[t].served, corrupted += ws[t].corrupted;
        dropped += ws[t].dropped, conns += ws[t].conns, failed += ws[t].failed;
    }
    printf("{\"served\": %" PRIu64 ", \"requests\": %" PRIu64 ", \"links\": %" PRIu64
           ", \"corrupted\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"failed\": %" PRIu64 "}\n",
           served, req, conns, corrupted, dropped, failed);
    fflush(stdout);
    return 0;
}

/* ---- client ---- */

typedef struct client {
    int ep, plain;
    SSL_CTX *ctx;
    const char *fp;
    uint16_t port;
    conn **conns;
    uint64_t *sent_at;
    uint8_t *pat, *dec;
    uint32_t size, p;
    uint64_t l, started, established, closed;
    int measuring, stopping, closing;
    uint64_t rate, rate_t0, rate_cursor, rate_skipped; /* --rate, as in tools/rpc_bench.c */
    uint64_t fanin;                                    /* --fanin N, 0 for the RPC workload */
    bytes stage;
    rpc_hist hist;
    rpc_result r;
} client;

static void cli_fail(client *k, const char *why)
{
    rpc_fail(&k->r, "tls-rpc client", why);
}

static void cli_lose(client *k, conn *c, const char *why)
{
    if (!k->closing)
        cli_fail(k, why);
    epoll_ctl(k->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->state = C_CLOSED;
    k->closed++;
}

static void cli_connect_more(client *k)
{
    while (k->started < k->l && k->started - k->established - k->closed < MAX_HANDSHAKES) {
        uint64_t i = k->started++;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        conn *c = fd >= 0 ? conn_new(fd, k->ctx, 0) : NULL;
        if (!c) {
            if (fd >= 0)
                close(fd);
            k->closed++;
            cli_fail(k, "cannot make a connection (out of file descriptors or memory?)");
            continue;
        }
        k->conns[i] = c;
        c->idx = (uint32_t)i;
        set_nodelay(fd);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(k->port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        c->state = C_CONNECTING;
        c->out_armed = 1;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        if ((connect(fd, (struct sockaddr *)&a, sizeof a) && errno != EINPROGRESS) ||
            epoll_ctl(k->ep, EPOLL_CTL_ADD, fd, &ev)) {
            fprintf(stderr, "tls-rpc client: connect to 127.0.0.1:%u: %s\n", k->port,
                    strerror(errno));
            cli_lose(k, c, "connect failed");
        }
    }
}

/* Stages request next_seq of c. */
static void cli_stage(client *k, conn *c)
{
    uint8_t *p;
    if (bytes_reserve(&k->stage.p, &k->stage.cap, k->stage.len + 4 + k->size)) {
        cli_fail(k, "out of memory");
        return;
    }
    p = k->stage.p + k->stage.len;
    rpc_put_be32(p, k->size);
    uint64_t seq = c->next_seq;
    if (k->fanin)
        seq |= RPC_ONEWAY | (seq + 1 == k->fanin ? RPC_LAST : 0);
    rpc_request(p + 4, k->pat, k->size, c->idx, seq);
    k->stage.len += 4 + (size_t)k->size;
    if (!k->fanin)
        k->sent_at[(uint64_t)c->idx * k->p + c->next_seq % k->p] = rpc_now_ns();
    c->next_seq++;
    k->r.sent++;
}

/* --fanin: hands c its one-way requests, 64 KiB at a time, until they are all written or the
 * socket is full (EPOLLOUT then brings the connection back here). */
static void cli_pump(client *k, conn *c)
{
    while (c->state == C_READY && c->next_seq < k->fanin && c->woff == c->wlen) {
        while (c->next_seq < k->fanin && k->stage.len < 65536)
            cli_stage(k, c);
        if (conn_write(c, &k->stage) || conn_flush(c, k->ep)) {
            cli_lose(k, c, "send failed");
            return;
        }
    }
}

static void cli_frame(conn *c, const uint8_t *d, size_t len, void *arg)
{
    client *k = arg;
    uint64_t now = rpc_now_ns();
    if (k->fanin) { /* only the last request's echo comes back */
        const char *bad =
            rpc_check(d, len, k->pat, k->size, c->idx, (k->fanin - 1) | RPC_ONEWAY | RPC_LAST);
        if (bad || c->next_reply)
            cli_fail(k, bad ? bad : "a second echo on a fan-in connection");
        c->next_reply++;
        k->r.replies++;
        return;
    }
    const char *bad = rpc_check(d, len, k->pat, k->size, c->idx, c->next_reply);
    if (bad)
        cli_fail(k, bad);
    if (k->measuring) {
        rpc_hist_add(&k->hist, now - k->sent_at[(uint64_t)c->idx * k->p + c->next_reply % k->p]);
        k->r.requests++;
    }
    c->next_reply++;
    k->r.replies++;
    if (!k->stopping && !k->rate) /* paced: a reply only frees a slot */
        cli_stage(k, c);
}

static void cli_event(client *k, conn *c, uint32_t events)
{
    if (c->state == C_CLOSED)
        return;
    if (c->state == C_CONNECTING) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            fprintf(stderr, "tls-rpc client: connect: %s\n", strerror(err));
            cli_lose(k, c, "connect failed");
            return;
        }
        c->state = c->ssl ? C_HANDSHAKE : C_READY;
        if (!c->ssl) {
            k->established++;
            cli_connect_more(k);
        }
        events |= EPOLLIN;
    }
    if (c->out_armed && (events & EPOLLOUT) && conn_flush(c, k->ep)) {
        cli_lose(k, c, "send failed");
        return;
    }
    if (c->state == C_HANDSHAKE) {
        int h = conn_handshake(c);
        if (h < 0) {
            cli_lose(k, c, "TLS handshake failed");
            return;
        }
        if (h == 1) {
            if (k->fp && tls_check_fingerprint(c->ssl, k->fp)) {
                cli_lose(k, c, "certificate pin mismatch");
                return;
            }
            k->established++;
            cli_connect_more(k);
        }
    }
    int end = 0;
    if (c->state == C_READY && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        end = conn_read(c, k->dec, k->size, cli_frame, k);
    if (end < 0) {
        cli_lose(k, c, "bad reply framing or a TLS error");
        return;
    }
    if (conn_write(c, &k->stage) || conn_flush(c, k->ep)) {
        cli_lose(k, c, "send failed");
        return;
    }
    if (end == 1) {
        cli_lose(k, c, "the server closed a connection");
        return;
    }
    if (k->fanin && k->measuring)
        cli_pump(k, c);
}

/* Waits up to ns for events (epoll_pwait2: the pacing tick is below a millisecond) and handles
 * them. */
static void cli_poll(client *k, uint64_t ns)
{
    struct epoll_event evs[256];
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    int n = epoll_pwait2(k->ep, evs, 256, &ts, NULL);
    if (n < 0 && errno == ENOSYS)
        n = epoll_wait(k->ep, evs, 256, (int)(ns / 1000000 + (ns % 1000000 != 0)));
    for (int i = 0; i < n; i++)
        cli_event(k, evs[i].data.ptr, evs[i].events);
}

/* --rate: stages the requests due by now on the next connections in turn with fewer than P
 * outstanding, then writes them; due requests that find every connection full are skipped. */
static void cli_pace(client *k, uint64_t now)
{
    uint64_t due = (uint64_t)((double)(now - k->rate_t0) * (double)k->rate / 1e9);
    for (uint64_t issued = k->r.sent + k->rate_skipped; issued < due; issued++) {
        uint64_t tries = 0;
        for (; tries < k->l; tries++) {
            conn *c = k->conns[k->rate_cursor];
            k->rate_cursor = (k->rate_cursor + 1) % k->l;
            if (c && c->state == C_READY && c->next_seq - c->next_reply < k->p) {
                cli_stage(k, c);
                if (conn_write(c, &k->stage) || conn_flush(c, k->ep))
                    cli_lose(k, c, "send failed");
                break;
            }
        }
        if (tries == k->l) { /* every connection full: skip what is due now, not a scan each */
            k->rate_skipped += due - issued;
            break;
        }
    }
}

static void run_for(client *k, uint64_t ns, int (*done)(client *))
{
    uint64_t end = rpc_now_ns() + ns;
    for (uint64_t now; (now = rpc_now_ns()) < end && !(done && done(k));) {
        uint64_t left = end - now;
        int pacing = k->rate && k->rate_t0 && !k->stopping;
        if (pacing)
            cli_pace(k, now);
        uint64_t tick = 1000000000ull / (k->rate ? k->rate : 1); /* as rpc_bench.c's pace_tick_ns */
        tick = tick < 20000 ? 20000 : tick > 1000000 ? 1000000 : tick;
        if (pacing && left > tick)
            left = tick;
        cli_poll(k, left);
    }
}

static int all_connected(client *k)
{
    return k->established + k->closed >= k->l;
}
static int all_answered(client *k)
{
    return k->r.replies >= k->r.sent || k->closed;
}
static int all_echoed(client *k)
{
    return k->r.replies >= k->l || k->closed;
}

/* --fanin: every connection writes its N one-way requests; the window ends at the last echo. */
static void cli_fanin(client *k, uint64_t drain)
{
    rpc_phase("measure_start");
    double cpu0 = rpc_cpu_s();
    uint64_t w0 = rpc_now_ns();
    k->measuring = 1;
    for (uint64_t i = 0; i < k->l; i++)
        cli_pump(k, k->conns[i]);
    run_for(k, drain, all_echoed);
    k->measuring = 0;
    k->r.window_s = (double)(rpc_now_ns() - w0) / 1e9;
    k->r.client_cpu_s = rpc_cpu_s() - cpu0;
    rpc_phase("measure_end");
    k->r.requests = k->r.sent;
}

static int cmd_client(int argc, char **argv)
{
    const char *port_s = NULL, *fp = NULL;
    uint64_t port = 0, l = 0, p = 0, size = 0, duration = 0, warmup = 500000000ull,
             drain = 10000000000ull, rate = 0, fanin = 0;
    int plain = 0, have_d = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--plain"))
            plain = 1;
        else if (!strcmp(a, "--cert-sha256") && v)
            fp = v, i++;
        else if (!strcmp(a, "--links") && !rpc_parse_count(v, 1, 1000000, &l))
            i++;
        else if (!strcmp(a, "--outstanding") && !rpc_parse_count(v, 1, RPC_MAX_OUTSTANDING, &p))
            i++;
        else if (!strcmp(a, "--size") && !rpc_parse_count(v, RPC_HDR, RPC_MAX_SIZE, &size))
            i++;
        else if (!strcmp(a, "--duration") && !rpc_parse_seconds(v, &duration))
            i++, have_d = 1;
        else if (!strcmp(a, "--warmup") && !rpc_parse_seconds(v, &warmup))
            i++;
        else if (!strcmp(a, "--drain-timeout") && !rpc_parse_seconds(v, &drain))
            i++;
        else if (!strcmp(a, "--rate") && !rpc_parse_count(v, 0, 1000000000, &rate))
            i++;
        else if (!strcmp(a, "--fanin") && !rpc_parse_count(v, 1, 1ull << 40, &fanin))
            i++;
        else if (a[0] != '-' && !port_s && !rpc_parse_count(a, 1, 65535, &port))
            port_s = a;
        else
            goto usage;
    }
    if (fanin && !p)
        p = 1; /* unused: the fan-in keeps no send times */
    if (!port_s || !l || !p || !size || (!have_d && !fanin) || (fanin && rate) ||
        (fp && strlen(fp) != 64))
        goto usage;
    /* L connections need L descriptors: raise the soft limit to the hard one. */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    static client k;
    k.l = l, k.p = (uint32_t)p, k.size = (uint32_t)size, k.port = (uint16_t)port, k.fp = fp,
    k.plain = plain;
    k.r.links = l, k.r.outstanding = p, k.r.size = size, k.r.rate = (double)rate;
    k.rate = rate, k.fanin = fanin;
    k.ctx = tls_client_ctx(plain);
    k.ep = epoll_create1(EPOLL_CLOEXEC);
    k.conns = calloc(l, sizeof *k.conns);
    k.sent_at = calloc(l * p, sizeof *k.sent_at);
    k.pat = rpc_pattern_new(k.size);
    k.dec = malloc(DEC);
    if ((!plain && !k.ctx) || k.ep < 0 || !k.conns || !k.sent_at || !k.pat || !k.dec) {
        fprintf(stderr, "tls-rpc client: cannot set up\n");
        return 1;
    }
    uint64_t t0 = rpc_now_ns();
    cli_connect_more(&k);
    run_for(&k, 120000000000ull, all_connected);
    k.r.connect_s = (double)(rpc_now_ns() - t0) / 1e9;
    if (k.established < l) {
        fprintf(stderr,
                "tls-rpc client: only %" PRIu64 " of %" PRIu64 " connections opened in %.1f s\n",
                k.established, l, k.r.connect_s);
        cli_fail(&k, "not every connection opened");
    }
    printf("{\"phase\": \"connected\", \"links\": %" PRIu64 ", \"seconds\": %.3f}\n", k.established,
           k.r.connect_s);
    fflush(stdout);
    if (k.established == l && fanin) {
        cli_fanin(&k, drain);
    } else if (k.established == l) {
        uint64_t steps = rate     ? 0
                         : l < 20 ? l
                                  : 20; /* traffic starts in steps, as in rpc_bench.c */
        k.rate_t0 = rate ? rpc_now_ns() : 0;
        for (uint64_t s = 0; s < steps; s++) {
            for (uint64_t i = s * l / steps; i < (s + 1) * l / steps; i++) {
                conn *c = k.conns[i];
                if (c->state != C_READY)
                    continue;
                for (uint64_t j = 0; j < p; j++)
                    cli_stage(&k, c);
                if (conn_write(c, &k.stage) || conn_flush(c, k.ep))
                    cli_lose(&k, c, "send failed");
            }
            run_for(&k, warmup / 2 / steps, NULL);
        }
        run_for(&k, rate ? warmup : warmup - warmup / 2, NULL);
        rpc_phase("measure_start");
        double cpu0 = rpc_cpu_s();
        uint64_t w0 = rpc_now_ns();
        k.measuring = 1;
        run_for(&k, duration, NULL);
        k.measuring = 0;
        k.r.window_s = (double)(rpc_now_ns() - w0) / 1e9;
        k.r.client_cpu_s = rpc_cpu_s() - cpu0;
        rpc_phase("measure_end");
        k.stopping = 1;
        run_for(&k, drain, all_answered);
    }
    k.r.missing = fanin ? k.l - k.r.replies : k.r.sent - k.r.replies;
    if (k.r.missing)
        cli_fail(&k, "replies missing at the end of the run");
    k.closing = 1;
    for (uint64_t i = 0; i < k.started; i++) {
        conn *c = k.conns[i];
        if (!c)
            continue;
        if (c->state != C_CLOSED) {
            if (c->ssl && c->state == C_READY) {
                SSL_shutdown(c->ssl); /* close_notify, then FIN */
                conn_flush(c, k.ep);
            }
            epoll_ctl(k.ep, EPOLL_CTL_DEL, c->fd, NULL);
        }
        conn_free(c);
    }
    char extra[64];
    snprintf(extra, sizeof extra, ", \"rate_skipped\": %" PRIu64, k.rate_skipped);
    k.r.extra = extra;
    if (fanin)
        rpc_print_fanin(&k.r, fanin, plain ? "tcp" : "tls");
    else
        rpc_print_result(&k.r, &k.hist, plain ? "tcp" : "tls");
    SSL_CTX_free(k.ctx);
    return k.r.errors == 0 && k.r.missing == 0 && k.established == l ? 0 : 1;
usage:
    fprintf(
        stderr,
        "usage: tls-rpc client PORT --links L --outstanding P --size S --duration SEC\n"
        "                      [--warmup SEC] [--drain-timeout SEC] [--rate R] [--cert-sha256 HEX] [--plain]\n"
        "       tls-rpc client PORT --links L --size S --fanin N [--drain-timeout SEC]\n"
        "                      [--cert-sha256 HEX] [--plain]\n");
    return 2;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && !strcmp(argv[1], "serve"))
        return cmd_serve(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "client"))
        return cmd_client(argc - 2, argv + 2);
    fprintf(
        stderr,
        "usage: tls-rpc serve [--plain] [--threads N] [--corrupt-every N] [--drop-every N]\n"
        "       tls-rpc client PORT --links L --outstanding P --size S --duration SEC\n"
        "                      [--warmup SEC] [--drain-timeout SEC] [--rate R] [--cert-sha256 HEX] [--plain]\n"
        "       tls-rpc client PORT --links L --size S --fanin N [--drain-timeout SEC]\n"
        "                      [--cert-sha256 HEX] [--plain]\n");
    return 2;
}
