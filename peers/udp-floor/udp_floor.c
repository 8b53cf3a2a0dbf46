/* SPDX-License-Identifier: MIT */
/* udp-floor: the drain stream over raw UDP with GSO/GRO and nothing else —
 * no retransmission, no congestion control: the floor under every UDP stack.
 *
 *   udp-floor serve [--seal]
 *       binds 127.0.0.1 on an ephemeral port, prints one JSON line
 *       {"port": N} (with --seal also "key": the 28-byte key + IV base, hex),
 *       and serves clients one after another until killed.
 *   udp-floor drain PORT N SIZE [--seal --key HEX]
 *       sends the preamble and N messages of SIZE bytes, prints one JSON line,
 *       exits 0 only if the server counted N messages.
 *   udp-floor aead-rate
 *       prints {"ns_per_byte": ...}: AES-128-GCM bulk cost per byte of one
 *       seal or one open, measured over 64 KiB buffers for ~0.5 s.
 *
 * Wire: every datagram starts with an 8-byte header, byte 0 the type and
 * bytes 1..7 a 56-bit big-endian sequence number per direction:
 *   'D' data  (client->server): stream bytes, seq 0, 1, 2, ...
 *   'F' fin   (client->server): u64 stream bytes, u64 data datagrams; resent
 *             every 100 ms with a fresh seq until the count arrives
 *   'C' credit(server->client): u64 stream bytes consumed so far, every 1 MiB
 *   'N' count (server->client): u64 messages, u64 body bytes, u64 failed flag
 * Datagrams are at most 1472 bytes. The client sends data in GSO bursts
 * (UDP_SEGMENT, up to 44 segments per sendmsg) and never runs more than
 * 3 MiB past the last credit; the server reads with UDP_GRO and recvmmsg.
 * Loopback delivers in order, so a sequence gap is a loss: the server says so
 * loudly on stderr and its count then fails the client.
 *
 * --seal: every datagram's payload is sealed with AES-128-GCM (16-byte tag,
 * the header as associated data, nonce = IV base XOR (direction, header)).
 * Each side keys its EVP_CIPHER_CTX once; per datagram only the IV is set.
 */
#define _GNU_SOURCE
#include "drain_stream.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define MAX_DGRAM 1472
#define HDR 8
#define TAG 16
#define MAX_SEGS 44
#define WINDOW (3u << 20) /* client may run this far past the last credit */
/* the server credits every WINDOW / 3 (1 MiB) consumed */
/* Both shrink when the socket buffers could not be made 4 MiB (not root and a
 * small net.core.rmem_max): window <= rcvbuf / 2, credit interval = window / 3. */
#define SOCKBUF (4 << 20)
#define RX_BATCH 8
#define RX_BUF 65536
#define KEYLEN 16
#define IVLEN 12

enum {
    DIR_C2S = 0,
    DIR_S2C = 1
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void ssl_errors(const char *what)
{
    fprintf(stderr, "udp-floor: %s failed", what);
    unsigned long e;
    char buf[256];
    while ((e = ERR_get_error()) != 0) {
        ERR_error_string_n(e, buf, sizeof buf);
        fprintf(stderr, ": %s", buf);
    }
    fputc('\n', stderr);
}

static void set_bufs(int fd)
{
    int v = SOCKBUF;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v))
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
}

/* Effective receive buffer (the kernel reports twice what was asked). */
static uint64_t rcvbuf_bytes(int fd)
{
    int v = 0;
    socklen_t l = sizeof v;
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l) || v <= 0)
        return 0;
    return (uint64_t)v;
}

static uint64_t window_for(int fd)
{
    uint64_t w = rcvbuf_bytes(fd) / 2;
    if (w == 0 || w > WINDOW)
        w = WINDOW;
    return w;
}

static void put_hdr(unsigned char *h, int type, uint64_t seq)
{
    put_be64(h, seq & 0x00ffffffffffffffull);
    h[0] = (unsigned char)type;
}

/* ---- AEAD: one context per direction, keyed once ---- */
struct aead {
    EVP_CIPHER_CTX *seal, *open;
    unsigned char iv[IVLEN];
    int seal_dir, open_dir;
};

static int aead_init(struct aead *a, const unsigned char key_iv[KEYLEN + IVLEN], int seal_dir)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    a->seal = EVP_CIPHER_CTX_new();
    a->open = EVP_CIPHER_CTX_new();
    if (!c || !a->seal || !a->open || !EVP_EncryptInit_ex(a->seal, c, NULL, key_iv, NULL) ||
        !EVP_DecryptInit_ex(a->open, c, NULL, key_iv, NULL)) {
        EVP_CIPHER_free(c);
        ssl_errors("AES-128-GCM setup");
        return -1;
    }
    EVP_CIPHER_free(c);
    memcpy(a->iv, key_iv + KEYLEN, IVLEN);
    a->seal_dir = seal_dir;
    a->open_dir = !seal_dir;
    return 0;
}

static void make_nonce(const struct aead *a, int dir, const unsigned char *hdr,
                       unsigned char n[IVLEN])
{
    memcpy(n, a->iv, IVLEN);
    n[3] ^= (unsigned char)dir;
    for (int i = 0; i < HDR; i++)
        n[4 + i] ^= hdr[i];
}

/* out = hdr || seal(in[0..len)) || tag; hdr already at out[0..8). */
static int aead_seal(struct aead *a, unsigned char *out, const unsigned char *in, size_t len)
{
    unsigned char n[IVLEN];
    int l1, l2;
    make_nonce(a, a->seal_dir, out, n);
    if (!EVP_EncryptInit_ex(a->seal, NULL, NULL, NULL, n) ||
        !EVP_EncryptUpdate(a->seal, NULL, &l1, out, HDR) ||
        !EVP_EncryptUpdate(a->seal, out + HDR, &l1, in, (int)len) ||
        !EVP_EncryptFinal_ex(a->seal, out + HDR + l1, &l2) ||
        !EVP_CIPHER_CTX_ctrl(a->seal, EVP_CTRL_AEAD_GET_TAG, TAG, out + HDR + len)) {
        ssl_errors("AES-128-GCM seal");
        return -1;
    }
    return 0;
}

/* Opens d[0..len) in place (header, ciphertext, tag); returns plaintext length or -1. */
static long aead_open(struct aead *a, unsigned char *d, size_t len)
{
    if (len < HDR + TAG)
        return -1;
    size_t clen = len - HDR - TAG;
    unsigned char n[IVLEN];
    int l1, l2;
    make_nonce(a, a->open_dir, d, n);
    if (!EVP_DecryptInit_ex(a->open, NULL, NULL, NULL, n) ||
        !EVP_DecryptUpdate(a->open, NULL, &l1, d, HDR) ||
        !EVP_DecryptUpdate(a->open, d + HDR, &l1, d + HDR, (int)clen) ||
        !EVP_CIPHER_CTX_ctrl(a->open, EVP_CTRL_AEAD_SET_TAG, TAG, d + HDR + clen) ||
        EVP_DecryptFinal_ex(a->open, d + HDR + l1, &l2) <= 0) {
        ERR_clear_error();
        return -1;
    }
    return (long)clen;
}

static int parse_hex(const char *s, unsigned char *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        char tmp[3] = {s[2 * i], s[2 * i + 1], 0};
        char *e;
        if (!isxdigit((unsigned char)tmp[0]) || !isxdigit((unsigned char)tmp[1]))
            return -1;
        v = (unsigned)strtoul(tmp, &e, 16);
        out[i] = (unsigned char)v;
    }
    return 0;
}

/* Sends one small control datagram (credit / count / fin), sealed if a != NULL. */
static int send_ctl(int fd, struct aead *a, int type, uint64_t seq, const uint64_t *vals, int nvals,
                    const struct sockaddr_in *to)
{
    unsigned char plain[32], out[HDR + 32 + TAG];
    put_hdr(out, type, seq);
    for (int i = 0; i < nvals; i++)
        put_be64(plain + 8 * i, vals[i]);
    size_t len = (size_t)nvals * 8;
    if (a) {
        if (aead_seal(a, out, plain, len))
            return -1;
        len += TAG;
    } else {
        memcpy(out + HDR, plain, len);
    }
    ssize_t r = to ? sendto(fd, out, HDR + len, 0, (const struct sockaddr *)to, sizeof *to)
                   : send(fd, out, HDR + len, 0);
    return r < 0 ? -1 : 0;
}

/* ---- server ---- */
struct session {
    int active, done, failed;
    struct sockaddr_in peer;
    uint64_t expect;   /* next data seq */
    uint64_t consumed; /* stream bytes received */
    uint64_t credited;
    uint64_t tx_seq;
    uint64_t dgrams;
    uint64_t credit_every;
    struct stream_sink sink;
};

static void session_start(struct session *s, const struct sockaddr_in *from, uint64_t credit_every)
{
    memset(s, 0, sizeof *s);
    s->credit_every = credit_every;
    s->active = 1;
    s->peer = *from;
    stream_sink_init(&s->sink);
}

static void session_reply_count(int fd, struct aead *a, struct session *s)
{
    uint64_t v[3] = {s->sink.messages, s->sink.body_bytes, (uint64_t)(s->failed || s->sink.failed)};
    if (send_ctl(fd, a, 'N', s->tx_seq++, v, 3, &s->peer))
        fprintf(stderr, "udp-floor serve: sending the count: %s\n", strerror(errno));
}

static void server_segment(int fd, struct aead *a, struct session *s, unsigned char *d, size_t len,
                           const struct sockaddr_in *from)
{
    if (len < HDR) {
        static uint64_t runts;
        if (runts++ < 3)
            fprintf(stderr, "udp-floor serve: ignoring a %zu-byte runt datagram\n", len);
        return;
    }
    int type = d[0];
    uint64_t seq = get_be64(d) & 0x00ffffffffffffffull;
    long plen;
    if (a) {
        plen = aead_open(a, d, len);
        if (plen < 0) {
            static uint64_t bad_auth;
            if (bad_auth++ < 3 || bad_auth % 10000 == 0)
                fprintf(stderr,
                        "udp-floor serve: datagram type %d seq %" PRIu64 " failed authentication: "
                        "dropped (wrong --key?) [%" PRIu64 " so far]\n",
                        type, seq, bad_auth);
            return;
        }
    } else {
        plen = (long)(len - HDR);
    }
    int same = s->active && s->peer.sin_addr.s_addr == from->sin_addr.s_addr &&
               s->peer.sin_port == from->sin_port;
    if (!same || s->done) {
        if (type == 'D' && seq == 0) {
            if (s->active && !s->done)
                fprintf(stderr,
                        "udp-floor serve: a new client arrived; abandoning the unfinished stream "
                        "(%" PRIu64 " datagrams received)\n",
                        s->dgrams);
            session_start(s, from, window_for(fd) / 3);
        } else if (!same) {
            return; /* stray datagram from an old or unknown client */
        }
    }
    unsigned char *p = d + HDR;
    if (type == 'D') {
        if (s->done)
            return;
        if (seq != s->expect) {
            fprintf(stderr,
                    "udp-floor serve: SEQUENCE GAP: expected data datagram %" PRIu64
                    ", got %" PRIu64 " — %" PRIu64
                    " datagram(s) lost on loopback (receive buffer overrun?); "
                    "this run fails\n",
                    s->expect, seq, seq > s->expect ? seq - s->expect : 0);
            s->failed = 1;
        }
        s->expect = seq + 1;
        s->dgrams++;
        if (!s->failed && stream_sink_feed(&s->sink, p, (size_t)plen))
            fprintf(stderr, "udp-floor serve: bad stream: %s\n", s->sink.err);
        s->consumed += (uint64_t)plen;
        if (s->consumed - s->credited >= s->credit_every) {
            s->credited = s->consumed;
            uint64_t v = s->consumed;
            if (send_ctl(fd, a, 'C', s->tx_seq++, &v, 1, &s->peer))
                fprintf(stderr, "udp-floor serve: sending credit: %s\n", strerror(errno));
        }
    } else if (type == 'F') {
        if (plen != 16) {
            fprintf(stderr, "udp-floor serve: malformed fin (%ld bytes)\n", plen);
            return;
        }
        if (!s->done) {
            uint64_t total = get_be64(p), dg = get_be64(p + 8);
            if (seq < s->expect || dg != s->expect || total != s->consumed) {
                fprintf(stderr,
                        "udp-floor serve: at fin the client sent %" PRIu64 " datagrams / %" PRIu64
                        " bytes, received %" PRIu64 " / %" PRIu64 "; this run fails\n",
                        dg, total, s->expect, s->consumed);
                s->failed = 1;
            }
            if (!s->failed && !s->sink.failed && stream_sink_finish(&s->sink))
                fprintf(stderr, "udp-floor serve: bad stream end: %s\n", s->sink.err);
            s->done = 1;
        }
        session_reply_count(fd, a, s); /* also for a retried fin: the reply may have been lost */
    } else {
        fprintf(stderr, "udp-floor serve: ignoring datagram of unknown type %d\n", type);
    }
}

static int cmd_serve(int seal)
{
    unsigned char key_iv[KEYLEN + IVLEN];
    struct aead aead, *a = NULL;
    if (seal) {
        if (RAND_bytes(key_iv, sizeof key_iv) != 1) {
            ssl_errors("RAND_bytes");
            return 1;
        }
        if (aead_init(&aead, key_iv, DIR_S2C))
            return 1;
        a = &aead;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        fprintf(stderr, "udp-floor serve: socket: %s\n", strerror(errno));
        return 1;
    }
    set_bufs(fd);
    int one = 1;
    if (setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof one)) {
        fprintf(stderr, "udp-floor serve: UDP_GRO not available: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) ||
        getsockname(fd, (struct sockaddr *)&sa, &sl)) {
        fprintf(stderr, "udp-floor serve: bind 127.0.0.1: %s\n", strerror(errno));
        return 1;
    }
    if (seal) {
        char hex[2 * (KEYLEN + IVLEN) + 1];
        for (int i = 0; i < KEYLEN + IVLEN; i++)
            snprintf(hex + 2 * i, 3, "%02x", key_iv[i]);
        printf("{\"port\": %u, \"mode\": \"udp-seal\", \"key\": \"%s\"}\n", ntohs(sa.sin_port),
               hex);
    } else {
        printf("{\"port\": %u, \"mode\": \"udp\"}\n", ntohs(sa.sin_port));
    }
    fflush(stdout);

    static unsigned char bufs[RX_BATCH][RX_BUF];
    static char ctl[RX_BATCH][CMSG_SPACE(sizeof(int))];
    struct mmsghdr mm[RX_BATCH];
    struct iovec iov[RX_BATCH];
    struct sockaddr_in from[RX_BATCH];
    struct session s;
    memset(&s, 0, sizeof s);
    for (;;) {
        for (int i = 0; i < RX_BATCH; i++) {
            iov[i].iov_base = bufs[i];
            iov[i].iov_len = RX_BUF;
            memset(&mm[i].msg_hdr, 0, sizeof mm[i].msg_hdr);
            mm[i].msg_hdr.msg_name = &from[i];
            mm[i].msg_hdr.msg_namelen = sizeof from[i];
            mm[i].msg_hdr.msg_iov = &iov[i];
            mm[i].msg_hdr.msg_iovlen = 1;
            mm[i].msg_hdr.msg_control = ctl[i];
            mm[i].msg_hdr.msg_controllen = sizeof ctl[i];
        }
        int n = recvmmsg(fd, mm, RX_BATCH, MSG_WAITFORONE, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "udp-floor serve: recvmmsg: %s\n", strerror(errno));
            return 1;
        }
        for (int i = 0; i < n; i++) {
            size_t len = mm[i].msg_len;
            size_t seg = len;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&mm[i].msg_hdr); c;
                 c = CMSG_NXTHDR(&mm[i].msg_hdr, c))
                if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                    int g;
                    memcpy(&g, CMSG_DATA(c), sizeof g);
                    if (g > 0)
                        seg = (size_t)g;
                }
            if (mm[i].msg_hdr.msg_flags & MSG_TRUNC) {
                fprintf(stderr, "udp-floor serve: truncated datagram dropped\n");
                continue;
            }
            for (size_t off = 0; off < len; off += seg) {
                size_t l = len - off < seg ? len - off : seg;
                server_segment(fd, a, &s, bufs[i] + off, l, &from[i]);
            }
        }
    }
}

/* ---- client ---- */

/* Reads every queued server datagram; updates *credit, sets *got_count. */
static int client_poll(int fd, struct aead *a, int wait_ms, uint64_t *credit, int *got_count,
                       uint64_t cnt[3])
{
    unsigned char buf[256];
    int waited = 0, got = 0;
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ECONNREFUSED) {
                fprintf(
                    stderr,
                    "udp-floor drain: server port refused the datagrams (no server listening?)\n");
                return -1;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                fprintf(stderr, "udp-floor drain: recv: %s\n", strerror(errno));
                return -1;
            }
            if (waited || got || wait_ms <= 0)
                return 0; /* wait only while nothing has arrived */
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int pr = poll(&pfd, 1, wait_ms);
            if (pr < 0 && errno != EINTR) {
                fprintf(stderr, "udp-floor drain: poll: %s\n", strerror(errno));
                return -1;
            }
            waited = 1;
            continue;
        }
        long plen = r - HDR;
        if (r < HDR)
            continue;
        got = 1;
        if (a) {
            plen = aead_open(a, buf, (size_t)r);
            if (plen < 0) {
                static int bad_auth;
                if (bad_auth++ < 3)
                    fprintf(
                        stderr,
                        "udp-floor drain: server datagram failed authentication (wrong --key?)\n");
                continue;
            }
        }
        if (buf[0] == 'C' && plen == 8) {
            uint64_t c = get_be64(buf + HDR);
            if (c > *credit)
                *credit = c;
        } else if (buf[0] == 'N' && plen == 24) {
            cnt[0] = get_be64(buf + HDR);
            cnt[1] = get_be64(buf + HDR + 8);
            cnt[2] = get_be64(buf + HDR + 16);
            *got_count = 1;
        }
    }
}

static int cmd_drain(const char *port_s, const char *n_s, const char *size_s, int seal,
                     const char *key_hex)
{
    uint64_t port, n, size;
    if (parse_u64(port_s, 1, 65535, &port)) {
        fprintf(stderr, "udp-floor drain: PORT must be 1..65535, got '%s'\n", port_s);
        return 2;
    }
    if (parse_u64(n_s, 0, 1ull << 40, &n)) {
        fprintf(stderr, "udp-floor drain: N must be a message count 0..2^40, got '%s'\n", n_s);
        return 2;
    }
    if (parse_u64(size_s, 0, DRAIN_MAX_SIZE, &size)) {
        fprintf(stderr, "udp-floor drain: SIZE must be 0..%u bytes, got '%s'\n", DRAIN_MAX_SIZE,
                size_s);
        return 2;
    }
    struct aead aead, *a = NULL;
    if (seal) {
        unsigned char key_iv[KEYLEN + IVLEN];
        if (!key_hex || parse_hex(key_hex, key_iv, sizeof key_iv)) {
            fprintf(stderr,
                    "udp-floor drain: --seal needs --key with the server's 56 hex digits\n");
            return 2;
        }
        if (aead_init(&aead, key_iv, DIR_C2S))
            return 1;
        a = &aead;
    } else if (key_hex) {
        fprintf(stderr, "udp-floor drain: --key given without --seal\n");
        return 2;
    }
    const size_t pl = MAX_DGRAM - HDR - (seal ? TAG : 0); /* stream bytes per datagram */
    const size_t wire = pl + HDR + (seal ? TAG : 0);
    struct stream_src src;
    if (stream_src_init(&src, n, (uint32_t)size, pl)) {
        fprintf(stderr, "udp-floor drain: out of memory\n");
        return 1;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        fprintf(stderr, "udp-floor drain: connect 127.0.0.1:%u: %s\n", (unsigned)port,
                strerror(errno));
        return 1;
    }
    set_bufs(fd);
    const uint64_t window = window_for(fd);
    if (window < WINDOW)
        fprintf(stderr,
                "udp-floor drain: socket buffers below 4 MiB (not root?): window %" PRIu64
                " bytes\n",
                window);

    static unsigned char sbuf[MAX_SEGS * MAX_DGRAM];
    unsigned char hdrs[MAX_SEGS][HDR];
    struct iovec iov[2 * MAX_SEGS];
    char cbuf[CMSG_SPACE(sizeof(uint16_t))];
    memset(cbuf, 0, sizeof cbuf);
    uint64_t credit = 0, seq = 0, off = 0, cnt[3] = {0, 0, 0};
    int got_count = 0;
    double t0 = now_s(), last_progress = t0;
    while (off < src.total) {
        uint64_t limit = credit + window;
        uint64_t rem = src.total - off;
        uint64_t room = limit > off ? limit - off : 0;
        size_t nseg;
        if (rem <= room) {
            nseg = (size_t)((rem + pl - 1) / pl); /* the end of the stream fits */
        } else {
            nseg = (size_t)(room / pl); /* full datagrams only */
        }
        if (nseg > MAX_SEGS)
            nseg = MAX_SEGS;
        if (nseg == 0) {
            uint64_t before = credit;
            if (client_poll(fd, a, 100, &credit, &got_count, cnt))
                return 1;
            if (credit > before) {
                last_progress = now_s();
            } else if (now_s() - last_progress > 5.0) {
                fprintf(
                    stderr,
                    "udp-floor drain: no credit from the server for 5 s (server gone or stalled, or a --seal/--key "
                    "mismatch) "
                    "at stream byte %" PRIu64 "\n",
                    off);
                return 1;
            }
            continue;
        }
        size_t bytes = 0, niov = 0;
        for (size_t i = 0; i < nseg; i++) {
            size_t l = src.total - off < pl ? (size_t)(src.total - off) : pl;
            const unsigned char *p = stream_at(&src, off);
            if (a) {
                unsigned char *o = sbuf + bytes;
                put_hdr(o, 'D', seq);
                if (aead_seal(a, o, p, l))
                    return 1;
                bytes += HDR + l + TAG;
            } else {
                put_hdr(hdrs[i], 'D', seq);
                iov[niov].iov_base = hdrs[i];
                iov[niov++].iov_len = HDR;
                iov[niov].iov_base = (void *)p;
                iov[niov++].iov_len = l;
                bytes += HDR + l;
            }
            seq++;
            off += l;
        }
        if (a) {
            iov[0].iov_base = sbuf;
            iov[0].iov_len = bytes;
            niov = 1;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = niov};
        if (nseg > 1) {
            mh.msg_control = cbuf;
            mh.msg_controllen = sizeof cbuf;
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t g = (uint16_t)wire;
            memcpy(CMSG_DATA(c), &g, sizeof g);
        }
        for (;;) {
            ssize_t r = sendmsg(fd, &mh, 0);
            if (r >= 0)
                break;
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS || errno == EAGAIN) {
                struct timespec ts = {0, 50000};
                nanosleep(&ts, NULL);
                continue;
            }
            if (errno == ECONNREFUSED)
                fprintf(
                    stderr,
                    "udp-floor drain: server port refused the datagrams (no server listening?)\n");
            else
                fprintf(stderr, "udp-floor drain: sendmsg (GSO burst of %zu): %s\n", nseg,
                        strerror(errno));
            return 1;
        }
    }
    /* End of stream: fin, resent every 100 ms until the count arrives (5 s). */
    uint64_t fin[2] = {off, seq};
    for (int tries = 0; !got_count; tries++) {
        if (tries == 50) {
            fprintf(stderr, "udp-floor drain: no count from the server after 50 fins over 5 s\n");
            return 1;
        }
        if (send_ctl(fd, a, 'F', seq + (uint64_t)tries, fin, 2, NULL)) {
            fprintf(stderr, "udp-floor drain: sending fin: %s\n", strerror(errno));
            return 1;
        }
        if (client_poll(fd, a, 100, &credit, &got_count, cnt))
            return 1;
    }
    double secs = now_s() - t0;
    printf("{\"messages\": %" PRIu64 ", \"size\": %" PRIu64 ", \"bytes\": %" PRIu64
           ", \"seconds\": %.6f, "
           "\"server_messages\": %" PRIu64 ", \"datagrams\": %" PRIu64 "}\n",
           n, size, src.total, secs, cnt[0], seq);
    fflush(stdout);
    close(fd);
    stream_src_free(&src);
    if (cnt[0] != n || cnt[2]) {
        fprintf(stderr,
                "udp-floor drain: server counted %" PRIu64 " messages%s, sent %" PRIu64 "\n",
                cnt[0], cnt[2] ? " and reported a failed stream (see its stderr)" : "", n);
        return 1;
    }
    return 0;
}

/* ---- aead-rate ---- */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmd_aead_rate(void)
{
    enum {
        LEN = 65536
    };
    static unsigned char in[LEN], out[HDR + LEN + TAG];
    unsigned char key_iv[KEYLEN + IVLEN];
    struct aead s, o;
    if (RAND_bytes(key_iv, sizeof key_iv) != 1 || RAND_bytes(in, sizeof in) != 1) {
        ssl_errors("RAND_bytes");
        return 1;
    }
    if (aead_init(&s, key_iv, DIR_C2S) || aead_init(&o, key_iv, DIR_S2C))
        return 1;
    double seal_t = 0, open_t = 0;
    uint64_t iters = 0;
    double start = cpu_s();
    while (cpu_s() - start < 0.5) {
        for (int k = 0; k < 16; k++, iters++) {
            double t0 = cpu_s();
            put_hdr(out, 'D', iters);
            if (aead_seal(&s, out, in, LEN))
                return 1;
            double t1 = cpu_s();
            if (aead_open(&o, out, sizeof out) != LEN) {
                fprintf(stderr, "udp-floor aead-rate: open failed on our own sealed buffer\n");
                return 1;
            }
            double t2 = cpu_s();
            seal_t += t1 - t0;
            open_t += t2 - t1;
        }
    }
    double bytes = (double)iters * LEN;
    printf("{\"ns_per_byte\": %.5f, \"seal_ns_per_byte\": %.5f, \"open_ns_per_byte\": %.5f, "
           "\"cipher\": \"AES-128-GCM\", \"buffer\": %d, \"iterations\": %" PRIu64 "}\n",
           (seal_t + open_t) * 1e9 / (2 * bytes), seal_t * 1e9 / bytes, open_t * 1e9 / bytes, LEN,
           iters);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: udp-floor serve [--seal]\n"
        "       udp-floor drain PORT N SIZE [--seal --key HEX]\n"
        "       udp-floor aead-rate\n"
        "Raw UDP (GSO/GRO, credit flow control, no retransmission) drain peer; --seal: AES-128-GCM\n"
        "per datagram. aead-rate: AES-128-GCM bulk ns per byte (64 KiB buffers, ~0.5 s).\n");
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    int seal = 0;
    const char *key = NULL;
    const char *pos[4];
    int npos = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--seal"))
            seal = 1;
        else if (!strcmp(argv[i], "--key") && i + 1 < argc)
            key = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "udp-floor: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (npos < 4)
            pos[npos++] = argv[i];
        else {
            fprintf(stderr, "udp-floor: too many arguments\n");
            return 2;
        }
    }
    if (!strcmp(argv[1], "serve") && npos == 0 && !key)
        return cmd_serve(seal);
    if (!strcmp(argv[1], "drain") && npos == 3)
        return cmd_drain(pos[0], pos[1], pos[2], seal, key);
    if (!strcmp(argv[1], "aead-rate") && npos == 0 && !seal && !key)
        return cmd_aead_rate();
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "udp-floor: bad command line\n");
    usage(stderr);
    return 2;
}
