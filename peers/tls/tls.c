/* SPDX-License-Identifier: MIT */
/* tls: the drain benchmark over TCP + TLS 1.3 (OpenSSL 3.0), or plain TCP.
 *
 *   tls serve [--plain]
 *       binds 127.0.0.1 on an ephemeral port, prints one JSON line
 *       {"port": N, "cert_sha256": "<hex>"} (the certificate is self-signed,
 *       made in memory at start), then serves connections one after another.
 *   tls drain PORT N SIZE [--plain] [--cert-sha256 HEX]
 *       sends the preamble and N messages of SIZE bytes, ends its stream
 *       (TLS close_notify, or shutdown(SHUT_WR) with --plain), reads the
 *       server's 8-byte big-endian message count, prints one JSON line and
 *       exits 0 only if the count equals N.
 *   tls serve --echo [--plain] [--resume]
 *       the same server, but every whole message (u32 BE length + body, after
 *       the preamble) is sent back as it arrives (the latency and handshakes
 *       experiments).
 *   tls ping PORT N SIZE [--plain] [--cert-sha256 HEX]
 *       one connection, N round trips of one SIZE-byte message (one in flight),
 *       each echo compared byte for byte; prints the round-trip percentiles.
 *   tls handshakes PORT N [--plain] [--cert-sha256 HEX] [--resume]
 *       N connections one after another: connect, full TLS 1.3 handshake (no
 *       session resumption, X25519), one 61-byte message, its echo, close_notify
 *       and close; prints connections per second. With --resume (and a server
 *       started with --resume) every connection after the first resumes the
 *       first one's session (a TLS 1.3 ticket: PSK with X25519, no certificate);
 *       fewer resumed than N - 1 is a failure.
 *
 * TLS: TLS 1.3 only, TLS_AES_128_GCM_SHA256 only, P-256 ECDSA certificate.
 * The sender hands 256 KiB SSL_write calls pointing into a fixed pattern and
 * its records leave in one send() per SSL_write; the receiver reads ahead
 * 256 KiB per recv() (a buffered socket BIO, see rbuf below) and makes
 * 256 KiB SSL_read calls. No kTLS: this kernel's tcp_available_ulp lists only
 * mptcp (no "tls" ULP), so records are sealed and opened in user space.
 */
#define _GNU_SOURCE
#include "drain_stream.h"
#include "tls_setup.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define CHUNK (256u * 1024u)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- receive-side read-ahead ----
 * OpenSSL's own read-ahead (SSL_CTX_set_read_ahead with a big
 * default_read_buffer_len) reads big, but before each record whose payload is
 * misaligned it memmoves everything still buffered to the buffer's start
 * (ssl3_read_n, SSL3_ALIGN_PAYLOAD): with a 256 KiB buffer that is ~8 times
 * the record's bytes moved per record, a fifth of the receiver's CPU. This
 * BIO does the read-ahead instead: one 256 KiB recv() fills it, and OpenSSL's
 * exact-size reads (a 5-byte header, then the record) are served from it by
 * one copy. Writes go straight to the socket. */
struct rbuf {
    int fd, eof, werr;
    size_t off, len;
    size_t wlen; /* records waiting in wdata for one send() */
    unsigned char data[CHUNK];
    unsigned char wdata[CHUNK + CHUNK / 8]; /* a 256 KiB SSL_write's records and their overhead */
};

static int rbuf_flush(struct rbuf *r)
{
    size_t done = 0;
    while (done < r->wlen) {
        ssize_t w = send(r->fd, r->wdata + done, r->wlen - done, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            r->werr = errno;
            return -1;
        }
        done += (size_t)w;
    }
    r->wlen = 0;
    return 0;
}

static int rbuf_read(BIO *b, char *out, int outl)
{
    struct rbuf *r = BIO_get_data(b);
    if (outl <= 0)
        return 0;
    if (r->off == r->len) {
        if (r->eof)
            return 0;
        ssize_t got;
        do
            got = recv(r->fd, r->data, sizeof r->data, 0);
        while (got < 0 && errno == EINTR);
        if (got <= 0) {
            if (got == 0)
                r->eof = 1;
            return got == 0 ? 0 : -1;
        }
        r->off = 0;
        r->len = (size_t)got;
    }
    size_t n = r->len - r->off;
    if (n > (size_t)outl)
        n = (size_t)outl;
    memcpy(out, r->data + r->off, n);
    r->off += n;
    return (int)n;
}

/* Records are gathered and sent 256 KiB at a time (one send() instead of
 * sixteen); rbuf_flush() runs on BIO_flush (OpenSSL flushes handshake flights
 * and alerts) and after each SSL_write of the drain. */
static int rbuf_write(BIO *b, const char *in, int inl)
{
    struct rbuf *r = BIO_get_data(b);
    size_t n = (size_t)inl;
    if (r->werr)
        return -1;
    if (r->wlen + n > sizeof r->wdata && rbuf_flush(r))
        return -1;
    if (n >= sizeof r->wdata) {
        size_t done = 0;
        while (done < n) {
            ssize_t w = send(r->fd, in + done, n - done, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                r->werr = errno;
                return -1;
            }
            done += (size_t)w;
        }
        return inl;
    }
    memcpy(r->wdata + r->wlen, in, n);
    r->wlen += n;
    return inl;
}

static long rbuf_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    struct rbuf *r = BIO_get_data(b);
    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH: return rbuf_flush(r) ? 0 : 1;
    case BIO_CTRL_WPENDING: return (long)r->wlen;
    case BIO_CTRL_PENDING: return (long)(r->len - r->off);
    case BIO_CTRL_EOF: return r->eof && r->off == r->len;
    default: return 0;
    }
}

static BIO_METHOD *rbuf_method(void)
{
    static BIO_METHOD *m;
    if (!m) {
        m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "drain read-ahead socket");
        if (!m || !BIO_meth_set_read(m, rbuf_read) || !BIO_meth_set_write(m, rbuf_write) ||
            !BIO_meth_set_ctrl(m, rbuf_ctrl))
            return NULL;
    }
    return m;
}

/* Attaches fd to ssl through the read-ahead BIO; *rb is freed by the caller after SSL_free. */
static int attach_fd(SSL *ssl, int fd, struct rbuf **rb)
{
    BIO_METHOD *m = rbuf_method();
    BIO *b = m ? BIO_new(m) : NULL;
    *rb = malloc(sizeof **rb);
    if (!b || !*rb) {
        BIO_free(b);
        free(*rb);
        *rb = NULL;
        return 0;
    }
    (*rb)->fd = fd;
    (*rb)->eof = 0;
    (*rb)->off = (*rb)->len = (*rb)->wlen = 0;
    (*rb)->werr = 0;
    BIO_set_data(b, *rb);
    BIO_set_init(b, 1);
    SSL_set_bio(ssl, b, b);
    return 1;
}

/* Sends what the BIO holds; 0 on success. */
static int flush_ssl(SSL *ssl)
{
    BIO *w = SSL_get_wbio(ssl);
    return w && BIO_flush(w) == 1 ? 0 : -1;
}

/* ---- server ---- */

/* Writes are 256 KiB or the last few bytes of a stream; without NODELAY the
 * small end-of-stream records (close_notify, the count) wait for a delayed ACK. */
static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int write_all_fd(int fd, const unsigned char *p, size_t len)
{
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static void serve_conn(int fd, SSL_CTX *ctx, unsigned char *buf)
{
    struct stream_sink sink;
    stream_sink_init(&sink);
    SSL *ssl = NULL;
    struct rbuf *rb = NULL;
    if (ctx) {
        ssl = SSL_new(ctx);
        if (!ssl || !attach_fd(ssl, fd, &rb)) {
            tls_ssl_errors("SSL_new");
            goto out;
        }
        if (SSL_accept(ssl) != 1) {
            tls_ssl_errors("TLS handshake (SSL_accept)");
            goto out;
        }
    }
    int bad = 0;
    for (;;) {
        size_t got = 0;
        if (ssl) {
            if (SSL_read_ex(ssl, buf, CHUNK, &got) != 1) {
                int e = SSL_get_error(ssl, 0);
                if (e == SSL_ERROR_ZERO_RETURN)
                    break; /* close_notify: the client ended its stream */
                tls_ssl_errors("SSL_read (client went away without close_notify?)");
                goto out;
            }
        } else {
            ssize_t r = read(fd, buf, CHUNK);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                fprintf(stderr, "tls serve: read: %s\n",
                        errno == EAGAIN ? "client silent for 60 s; dropping it" : strerror(errno));
                goto out;
            }
            if (r == 0)
                break;
            got = (size_t)r;
        }
        if (stream_sink_feed(&sink, buf, got)) {
            /* Not a drain stream (or a TLS client at a --plain server): report
             * the count so far and close rather than wait for an end that the
             * peer may never send. */
            fprintf(stderr, "tls serve: bad stream: %s; closing\n", sink.err);
            bad = 1;
            break;
        }
    }
    if (!bad && stream_sink_finish(&sink))
        fprintf(stderr, "tls serve: bad stream end: %s\n", sink.err);
    unsigned char reply[8];
    put_be64(reply, sink.messages);
    if (ssl) {
        size_t w;
        if (SSL_write_ex(ssl, reply, 8, &w) != 1 || flush_ssl(ssl)) {
            tls_ssl_errors("SSL_write of the count");
            goto out;
        }
        SSL_shutdown(ssl); /* our close_notify */
        flush_ssl(ssl);
    } else if (write_all_fd(fd, reply, 8)) {
        fprintf(stderr, "tls: writing the count: %s\n", strerror(errno));
    }
out:
    SSL_free(ssl);
    free(rb);
    close(fd);
}

static void serve_echo_conn(int fd, SSL_CTX *ctx, unsigned char *buf);

static int cmd_serve(int plain, int echo, int resume)
{
    SSL_CTX *ctx = NULL;
    char fp[65] = {0};
    if (!plain) {
        ctx = tls_ctx_new(1);
        if (!ctx || tls_make_cert(ctx, fp))
            return 1;
        /* Without --resume: one connection each, no tickets, every handshake a full one. With
         * it: one stateless ticket per connection (TLS 1.3 resumption, PSK with (EC)DHE, so each
         * resumed handshake still does X25519 but no certificate signature or check). */
        SSL_CTX_set_num_tickets(ctx, resume ? 1 : 0);
        if (resume)
            SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
    }
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) {
        fprintf(stderr, "tls serve: socket: %s\n", strerror(errno));
        return 1;
    }
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 16) ||
        getsockname(ls, (struct sockaddr *)&a, &al)) {
        fprintf(stderr, "tls serve: bind/listen on 127.0.0.1: %s\n", strerror(errno));
        return 1;
    }
    if (plain)
        printf("{\"port\": %u, \"mode\": \"tcp\", \"service\": \"%s\"}\n", ntohs(a.sin_port),
               echo ? "echo" : "drain");
    else
        printf(
            "{\"port\": %u, \"mode\": \"tls1.3\", \"service\": \"%s\", \"cert_sha256\": \"%s\"}\n",
            ntohs(a.sin_port), echo ? "echo" : "drain", fp);
    fflush(stdout);
    unsigned char *buf = malloc(CHUNK);
    if (!buf) {
        fprintf(stderr, "tls serve: out of memory\n");
        return 1;
    }
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            fprintf(stderr, "tls serve: accept: %s\n", strerror(errno));
            return 1;
        }
        set_nodelay(fd);
        /* One connection at a time: a client that goes silent must not wedge the server. */
        struct timeval tv = {.tv_sec = 60};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (echo)
            serve_echo_conn(fd, ctx, buf);
        else
            serve_conn(fd, ctx, buf);
    }
}

/* ---- client ---- */

static int cmd_drain(const char *port_s, const char *n_s, const char *size_s, int plain,
                     const char *fp)
{
    uint64_t port, n, size;
    if (parse_u64(port_s, 1, 65535, &port)) {
        fprintf(stderr, "tls drain: PORT must be 1..65535, got '%s'\n", port_s);
        return 2;
    }
    if (parse_u64(n_s, 0, 1ull << 40, &n)) {
        fprintf(stderr, "tls drain: N must be a message count 0..2^40, got '%s'\n", n_s);
        return 2;
    }
    if (parse_u64(size_s, 0, DRAIN_MAX_SIZE, &size)) {
        fprintf(stderr, "tls drain: SIZE must be 0..%u bytes, got '%s'\n", DRAIN_MAX_SIZE, size_s);
        return 2;
    }
    if (fp && strlen(fp) != 64) {
        fprintf(stderr, "tls drain: --cert-sha256 needs 64 hex digits\n");
        return 2;
    }
    struct stream_src src;
    if (stream_src_init(&src, n, (uint32_t)size, CHUNK)) {
        fprintf(stderr, "tls drain: out of memory\n");
        return 1;
    }
    double t0 = now_s();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        fprintf(stderr, "tls drain: connect to 127.0.0.1:%u: %s\n", (unsigned)port,
                strerror(errno));
        return 1;
    }
    set_nodelay(fd);
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    struct rbuf *rb = NULL;
    if (!plain) {
        ctx = tls_ctx_new(0);
        if (!ctx)
            return 1;
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE,
                           NULL); /* self-signed: pinned by --cert-sha256 instead */
        ssl = SSL_new(ctx);
        if (!ssl || !attach_fd(ssl, fd, &rb) || !SSL_set_tlsext_host_name(ssl, "localhost")) {
            tls_ssl_errors("SSL_new");
            return 1;
        }
        if (SSL_connect(ssl) != 1) {
            tls_ssl_errors("TLS handshake (SSL_connect)");
            return 1;
        }
        if (fp && tls_check_fingerprint(ssl, fp))
            return 1;
    }
    for (uint64_t off = 0; off < src.total;) {
        uint64_t rem = src.total - off;
        size_t len = rem < CHUNK ? (size_t)rem : CHUNK;
        const unsigned char *p = stream_at(&src, off);
        if (ssl) {
            size_t w = 0;
            if (SSL_write_ex(ssl, p, len, &w) != 1 || flush_ssl(ssl)) {
                tls_ssl_errors("SSL_write");
                return 1;
            }
            off += w;
        } else {
            ssize_t w = write(fd, p, len);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                fprintf(stderr, "tls drain: write: %s\n", strerror(errno));
                return 1;
            }
            off += (uint64_t)w;
        }
    }
    /* End of stream: close_notify (TLS 1.3 half-close) or a TCP FIN. */
    if (ssl) {
        if (SSL_shutdown(ssl) < 0 || flush_ssl(ssl)) {
            tls_ssl_errors("SSL_shutdown (sending close_notify)");
            return 1;
        }
    } else if (shutdown(fd, SHUT_WR)) {
        fprintf(stderr, "tls drain: shutdown(SHUT_WR): %s\n", strerror(errno));
        return 1;
    }
    unsigned char reply[8];
    size_t have = 0;
    while (have < 8) {
        if (ssl) {
            size_t got = 0;
            if (SSL_read_ex(ssl, reply + have, 8 - have, &got) != 1) {
                if (SSL_get_error(ssl, 0) == SSL_ERROR_ZERO_RETURN)
                    break;
                tls_ssl_errors("SSL_read of the server's count");
                return 1;
            }
            have += got;
        } else {
            ssize_t r = read(fd, reply + have, 8 - have);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                fprintf(stderr, "tls drain: reading the server's count: %s\n", strerror(errno));
                return 1;
            }
            if (r == 0)
                break;
            have += (size_t)r;
        }
    }
    double secs = now_s() - t0;
    if (have < 8) {
        fprintf(
            stderr,
            "tls drain: connection closed before the server's 8-byte count arrived (%zu bytes)\n",
            have);
        return 1;
    }
    uint64_t m = get_be64(reply);
    printf("{\"messages\": %" PRIu64 ", \"size\": %" PRIu64 ", \"bytes\": %" PRIu64
           ", \"seconds\": %.6f, "
           "\"server_messages\": %" PRIu64 "}\n",
           n, size, src.total, secs, m);
    fflush(stdout);
    SSL_free(ssl);
    free(rb);
    SSL_CTX_free(ctx);
    close(fd);
    stream_src_free(&src);
    if (m != n) {
        fprintf(stderr, "tls drain: server counted %" PRIu64 " messages, sent %" PRIu64 "\n", m, n);
        return 1;
    }
    return 0;
}

/* ---- echo server, ping and handshakes clients (latency and handshakes experiments) ----
 * The echo server takes the drain's stream (preamble "pure", then u32 BE length + body
 * frames) and sends every whole frame back as it arrives, without the preamble; it ends
 * when the client ends its stream (close_notify or FIN) or closes. */

#define ECHO_MAX (1u << 20) /* largest message the echo server takes */

static int echo_write(SSL *ssl, int fd, const unsigned char *p, size_t len)
{
    if (ssl) {
        size_t w;
        return SSL_write_ex(ssl, p, len, &w) == 1 && flush_ssl(ssl) == 0 ? 0 : -1;
    }
    return write_all_fd(fd, p, len);
}

static void serve_echo_conn(int fd, SSL_CTX *ctx, unsigned char *buf)
{
    SSL *ssl = NULL;
    struct rbuf *rb = NULL;
    unsigned char *acc = malloc(ECHO_MAX + 4);
    size_t have = 0, pre = 0;
    if (!acc) {
        fprintf(stderr, "tls serve: out of memory\n");
        close(fd);
        return;
    }
    if (ctx) {
        ssl = SSL_new(ctx);
        if (!ssl || !attach_fd(ssl, fd, &rb)) {
            tls_ssl_errors("SSL_new");
            goto out;
        }
        if (SSL_accept(ssl) != 1) {
            tls_ssl_errors("TLS handshake (SSL_accept)");
            goto out;
        }
    }
    for (;;) {
        size_t got = 0;
        if (ssl) {
            if (SSL_read_ex(ssl, buf, CHUNK, &got) != 1) {
                int e = SSL_get_error(ssl, 0);
                if (e != SSL_ERROR_ZERO_RETURN && e != SSL_ERROR_SYSCALL)
                    tls_ssl_errors("SSL_read");
                break; /* close_notify, or the client closed without one */
            }
        } else {
            ssize_t r = read(fd, buf, CHUNK);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got = (size_t)r;
        }
        const unsigned char *p = buf;
        while (pre < 4 && got) {
            if (*p != (unsigned char)DRAIN_PREAMBLE[pre]) {
                fprintf(stderr, "tls serve: bad preamble byte %zu; closing\n", pre);
                goto out;
            }
            pre++, p++, got--;
        }
        /* Echo whole frames straight from buf when nothing is pending; keep a partial tail. */
        while (got) {
            size_t take = got;
            if (have + take > ECHO_MAX + 4)
                take = ECHO_MAX + 4 - have;
            memcpy(acc + have, p, take);
            have += take, p += take, got -= take;
            size_t off = 0;
            while (have - off >= 4) {
                uint32_t len = get_be32(acc + off);
                if (len > ECHO_MAX) {
                    fprintf(stderr,
                            "tls serve: message of %u bytes is over the echo limit; closing\n",
                            len);
                    goto out;
                }
                if (have - off < 4 + (size_t)len)
                    break;
                off += 4 + (size_t)len;
            }
            if (off && echo_write(ssl, fd, acc, off)) {
                fprintf(stderr, "tls serve: writing an echo failed\n");
                goto out;
            }
            memmove(acc, acc + off, have - off);
            have -= off;
        }
    }
    if (ssl) {
        SSL_shutdown(ssl);
        flush_ssl(ssl);
    }
out:
    SSL_free(ssl);
    free(rb);
    free(acc);
    close(fd);
}

/* One client connection: TCP connect (+ TLS handshake and pin check). */
struct client_conn {
    int fd;
    SSL *ssl;
    struct rbuf *rb;
};

/* handshakes --resume: the session to resume (the first connection's ticket), or NULL. */
static SSL_SESSION *g_resume;

static int client_open(struct client_conn *c, uint16_t port, SSL_CTX *ctx, const char *fp,
                       const char *cmd)
{
    c->ssl = NULL;
    c->rb = NULL;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof a)) {
        fprintf(stderr, "tls %s: connect to 127.0.0.1:%u: %s\n", cmd, (unsigned)port,
                strerror(errno));
        if (c->fd >= 0)
            close(c->fd);
        return -1;
    }
    set_nodelay(c->fd);
    if (!ctx)
        return 0;
    c->ssl = SSL_new(ctx);
    if (!c->ssl || !attach_fd(c->ssl, c->fd, &c->rb) ||
        !SSL_set_tlsext_host_name(c->ssl, "localhost")) {
        tls_ssl_errors("SSL_new");
        return -1;
    }
    if (g_resume && SSL_set_session(c->ssl, g_resume) != 1) {
        tls_ssl_errors("SSL_set_session");
        return -1;
    }
    if (SSL_connect(c->ssl) != 1) {
        tls_ssl_errors("TLS handshake (SSL_connect)");
        return -1;
    }
    if (fp && tls_check_fingerprint(c->ssl, fp))
        return -1;
    return 0;
}

/* Ends the stream (close_notify or FIN) and closes the socket without waiting for the server. */
static void client_close(struct client_conn *c)
{
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        flush_ssl(c->ssl);
    } else if (c->fd >= 0) {
        shutdown(c->fd, SHUT_WR);
    }
    SSL_free(c->ssl);
    free(c->rb);
    if (c->fd >= 0)
        close(c->fd);
    c->ssl = NULL;
    c->rb = NULL;
    c->fd = -1;
}

static int client_write(struct client_conn *c, const unsigned char *p, size_t len)
{
    return echo_write(c->ssl, c->fd, p, len);
}

/* Reads exactly len bytes; 0, or -1 if the connection ended first. */
static int client_read(struct client_conn *c, unsigned char *p, size_t len)
{
    while (len) {
        size_t got = 0;
        if (c->ssl) {
            if (SSL_read_ex(c->ssl, p, len, &got) != 1)
                return -1;
        } else {
            ssize_t r = read(c->fd, p, len);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return -1;
            got = (size_t)r;
        }
        p += got;
        len -= got;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values (nearest rank), in µs. */
static double quantile_us(const uint64_t *v, uint64_t n, double q)
{
    uint64_t k = (uint64_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)v[k - 1] / 1e3;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "pure" + one frame (u32 BE length, body byte i = i % 251): the first message goes out with
 * the preamble, the rest from frame + 4. */
static unsigned char *make_frame(uint32_t size)
{
    unsigned char *f = malloc(8 + (size_t)size);
    if (!f)
        return NULL;
    memcpy(f, DRAIN_PREAMBLE, 4);
    put_be32(f + 4, size);
    for (uint32_t i = 0; i < size; i++)
        f[8 + i] = (unsigned char)(i % 251);
    return f;
}

static int cmd_ping(const char *port_s, const char *n_s, const char *size_s, int plain,
                    const char *fp)
{
    uint64_t port, n, size;
    if (parse_u64(port_s, 1, 65535, &port) || parse_u64(n_s, 1, 100000000, &n) ||
        parse_u64(size_s, 0, ECHO_MAX, &size)) {
        fprintf(stderr,
                "tls ping: PORT (1..65535) N (1..10^8) SIZE (0..%u) expected, got '%s' '%s' '%s'\n",
                ECHO_MAX, port_s, n_s, size_s);
        return 2;
    }
    if (fp && strlen(fp) != 64) {
        fprintf(stderr, "tls ping: --cert-sha256 needs 64 hex digits\n");
        return 2;
    }
    unsigned char *frame = make_frame((uint32_t)size), *back = malloc(4 + (size_t)size);
    uint64_t *rtt = malloc(n * sizeof *rtt);
    if (!frame || !back || !rtt) {
        fprintf(stderr, "tls ping: out of memory\n");
        return 1;
    }
    SSL_CTX *ctx = tls_client_ctx(plain);
    if (!plain && !ctx)
        return 1;
    struct client_conn c;
    if (client_open(&c, (uint16_t)port, ctx, fp, "ping"))
        return 1;
    uint64_t mismatches = 0, done = 0, t0 = mono_ns();
    for (; done < n; done++) {
        uint64_t ts = mono_ns();
        int w = done == 0 ? client_write(&c, frame, 8 + (size_t)size)
                          : client_write(&c, frame + 4, 4 + (size_t)size);
        if (w) {
            fprintf(stderr, "tls ping: writing message %" PRIu64 " failed\n", done);
            break;
        }
        if (client_read(&c, back, 4 + (size_t)size)) {
            fprintf(stderr, "tls ping: the connection ended before echo %" PRIu64 "\n", done);
            break;
        }
        rtt[done] = mono_ns() - ts;
        if (memcmp(back, frame + 4, 4 + (size_t)size) && mismatches++ < 3)
            fprintf(stderr, "tls ping: echo %" PRIu64 " differs from what was sent\n", done);
    }
    double secs = (double)(mono_ns() - t0) / 1e9;
    client_close(&c);
    SSL_CTX_free(ctx);
    if (done < n)
        return 1;
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)rtt[i];
    qsort(rtt, n, sizeof *rtt, cmp_u64);
    printf(
        "{\"round_trips\": %" PRIu64 ", \"size\": %" PRIu64 ", \"echoes\": %" PRIu64
        ", \"mismatches\": %" PRIu64
        ", \"seconds\": %.6f, \"mean_us\": %.2f, \"min_us\": %.2f, \"p50_us\": %.2f, \"p90_us\": %.2f, "
        "\"p99_us\": %.2f, \"max_us\": %.2f}\n",
        n, size, done, mismatches, secs, sum / (double)n / 1e3, quantile_us(rtt, n, 0),
        quantile_us(rtt, n, 0.5), quantile_us(rtt, n, 0.9), quantile_us(rtt, n, 0.99),
        quantile_us(rtt, n, 1));
    fflush(stdout);
    free(frame);
    free(back);
    free(rtt);
    return mismatches ? 1 : 0;
}

static int cmd_handshakes(const char *port_s, const char *n_s, int plain, const char *fp,
                          int resume)
{
    uint64_t port, n;
    const uint32_t size = 61;
    if (parse_u64(port_s, 1, 65535, &port) || parse_u64(n_s, 1, 100000000, &n)) {
        fprintf(stderr, "tls handshakes: PORT (1..65535) N (1..10^8) expected, got '%s' '%s'\n",
                port_s, n_s);
        return 2;
    }
    if (fp && strlen(fp) != 64) {
        fprintf(stderr, "tls handshakes: --cert-sha256 needs 64 hex digits\n");
        return 2;
    }
    unsigned char *frame = make_frame(size), back[4 + 61];
    uint64_t *lat = malloc(n * sizeof *lat);
    if (!frame || !lat) {
        fprintf(stderr, "tls handshakes: out of memory\n");
        return 1;
    }
    SSL_CTX *ctx = tls_client_ctx(plain);
    if (!plain && !ctx)
        return 1;
    uint64_t mismatches = 0, done = 0, resumed = 0, t0 = mono_ns();
    for (; done < n; done++) {
        uint64_t ts = mono_ns();
        struct client_conn c;
        if (client_open(&c, (uint16_t)port, ctx, fp, "handshakes"))
            break;
        if (client_write(&c, frame, 8 + size) || client_read(&c, back, sizeof back)) {
            fprintf(stderr, "tls handshakes: connection %" PRIu64 " ended before its echo\n", done);
            client_close(&c);
            break;
        }
        if (memcmp(back, frame + 4, sizeof back) && mismatches++ < 3)
            fprintf(stderr,
                    "tls handshakes: connection %" PRIu64 "'s echo differs from what was sent\n",
                    done);
        lat[done] = mono_ns() - ts;
        if (c.ssl && SSL_session_reused(c.ssl))
            resumed++;
        /* The server's ticket arrived before its echo: the first connection's session serves
         * every later one. */
        if (resume && c.ssl && !g_resume) {
            SSL_SESSION *sess = SSL_get1_session(c.ssl);
            if (sess && SSL_SESSION_is_resumable(sess))
                g_resume = sess;
            else
                SSL_SESSION_free(sess);
        }
        client_close(&c);
    }
    SSL_SESSION_free(g_resume);
    g_resume = NULL;
    double secs = (double)(mono_ns() - t0) / 1e9;
    SSL_CTX_free(ctx);
    if (done < n)
        return 1;
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)lat[i];
    if (resume && !plain && resumed + 1 < n) {
        fprintf(stderr,
                "tls handshakes: --resume, but only %" PRIu64 " of %" PRIu64
                " connections were resumed\n",
                resumed, n);
        mismatches++; /* counted as a failure: the row would measure full handshakes */
    }
    qsort(lat, n, sizeof *lat, cmp_u64);
    printf("{\"handshakes\": %" PRIu64 ", \"size\": %u, \"ok\": %" PRIu64
           ", \"mismatches\": %" PRIu64 ", \"resumed\": %" PRIu64
           ", \"seconds\": %.6f, \"per_second\": %.1f, \"mean_us\": %.1f, "
           "\"p50_us\": %.1f, \"p99_us\": %.1f}\n",
           n, size, n - mismatches, mismatches, resumed, secs, (double)n / secs,
           sum / (double)n / 1e3, quantile_us(lat, n, 0.5), quantile_us(lat, n, 0.99));
    fflush(stdout);
    free(frame);
    free(lat);
    return mismatches ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tls serve [--plain] [--echo] [--resume]\n"
        "       tls drain PORT N SIZE [--plain] [--cert-sha256 HEX]\n"
        "       tls ping PORT N SIZE [--plain] [--cert-sha256 HEX]\n"
        "       tls handshakes PORT N [--plain] [--cert-sha256 HEX] [--resume]\n"
        "TCP + TLS 1.3 (TLS_AES_128_GCM_SHA256, X25519) drain peer; --plain: TCP without TLS.\n"
        "serve --echo: send every message back (latency, handshakes); ping: N round trips of one\n"
        "message on one connection; handshakes: N connections one after another, each a full\n"
        "handshake (no resumption), one 61-byte message echoed, close. --resume (serve and\n"
        "handshakes): the server issues a TLS 1.3 ticket and the client resumes the first\n"
        "connection's session on every later one (PSK with X25519, no certificate).\n");
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    int plain = 0, echo = 0, resume = 0;
    const char *fp = NULL;
    const char *pos[4];
    int npos = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--plain"))
            plain = 1;
        else if (!strcmp(argv[i], "--echo"))
            echo = 1;
        else if (!strcmp(argv[i], "--resume"))
            resume = 1;
        else if (!strcmp(argv[i], "--cert-sha256") && i + 1 < argc)
            fp = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "tls: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (npos < 4)
            pos[npos++] = argv[i];
        else {
            fprintf(stderr, "tls: too many arguments\n");
            return 2;
        }
    }
    if (!strcmp(argv[1], "serve") && npos == 0)
        return cmd_serve(plain, echo, resume);
    if (!strcmp(argv[1], "ping") && npos == 3 && !echo)
        return cmd_ping(pos[0], pos[1], pos[2], plain, fp);
    if (!strcmp(argv[1], "handshakes") && npos == 2 && !echo)
        return cmd_handshakes(pos[0], pos[1], plain, fp, resume);
    if (!strcmp(argv[1], "drain") && npos == 3)
        return cmd_drain(pos[0], pos[1], pos[2], plain, fp);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "tls: bad command line\n");
    usage(stderr);
    return 2;
}
