/* SPDX-License-Identifier: MIT */
/* attack: hostile traffic at a Pure listener over real sockets, for the attack suite
 * (tests/scripts/attack_netns.sh; docs/attacks.md says what each mode shows).
 *
 *   attack keys --count N --out FILE --allow FILE
 *   attack honest       --to A:P --peer-key KEY --keys FILE --count N --bind IP
 *                       [--spacing S] [--timeout S] [--service NAME]
 *   attack flood        --to A:P --peer-key KEY --key FILE --spoof CIDR [--rate R] [--seconds S]
 *                       [--pool N]
 *   attack replay       --to A:P --peer-key KEY --key FILE --spoof CIDR --bind IP [--rate R]
 *                       [--seconds S]
 *   attack cookie-reuse --to A:P --peer-key KEY --key FILE --keys FILE --count K --spoof CIDR
 *                       --bind IP [--load R] [--rate R]
 *   attack forge        --to A:P --peer-key KEY --key FILE --spoof CIDR --bind IP [--keys FILE]
 *                       [--links K] [--rate R] [--load R] [--timeout S]
 * Common: --seed N (the choice of junk, spoofed addresses and ports; keys are always random).
 *
 * Every handshake packet comes from the library: a throwaway pure_ctx connects to the victim's
 * public key and the datagram pure_ctx_write makes is the INIT, so the tool follows the INIT
 * format wherever it goes. "Invalid" INITs are such INITs with bytes flipped, cut short, or
 * random bytes behind the INIT's own type byte. The one place that knows the wire format is
 * forge, which writes COOKIE and REJECT packets itself (type bytes and lengths from wire.h) at
 * the link index its client's INIT carries.
 *
 * Spoofed traffic goes out through a raw socket (IPPROTO_RAW, IP_HDRINCL), IPv4 only, from
 * random addresses inside --spoof (e.g. 10.214.128.0/17) and random ports, in sendmmsg batches
 * paced to --rate datagrams per second. Only to the address given with --to (and, in forge, to
 * this tool's own client socket). The suite runs it inside a network namespace it creates.
 *
 *   keys          N new private keys (pure-priv:..., one per line) into --out and their public
 *                 keys into --allow (an allow file for pure serve).
 *   honest        N clients, each with its own key (line i of --keys), context, UDP socket and
 *                 source address (--bind plus i), started --spacing seconds apart (default
 *                 0.02); measures each one's connect time (pure_connect to on_established).
 *   flood         INITs from spoofed sources: valid ones (a pool of --pool made with the allowed
 *                 --key, first each once in the order made, then each many times: replays),
 *                 ones from an unknown key, and invalid ones (flipped, truncated, random). The
 *                 load of cookie-reuse and forge is the same traffic with a pool of 1,200: its
 *                 first pass leaves more than handshake_load (1,024) half-open links.
 *   replay        connects once for real from --bind with --key, records the INIT that made the
 *                 link, closes the link, then sends that INIT again from spoofed sources.
 *   cookie-reuse  under a spoofed INIT load (--load, default 20000/s) gets one cookie reply
 *                 from --bind and sends --count INITs carrying it, each from its own context and
 *                 allowed key (--keys), beside --count INITs from as many keys carrying no
 *                 cookie (the control); counts the handshakes the victim completed for each.
 *                 The cookie is found without knowing the format: after a reply that left the
 *                 link in its handshake, the library's next INIT for that link (at once, or at
 *                 its retry) differs from the first; the bytes that changed are copied into
 *                 the other INITs (if the whole INIT changed, they become copies of it).
 *   forge         --links links (at most 64: the library starts that many handshakes of a
 *                 context at once) of one client (key: the first of --keys, else --key) connect
 *                 from --bind while forged COOKIE and REJECT packets go to their indices (from
 *                 the victim's address and port, and from spoofed ones), under a spoofed INIT
 *                 load; measures the connect times and reads the client's guard counters. The
 *                 forging and the load run in a child process: the client has its own.
 *
 * Each mode prints one JSON line on stdout (what it sent: count, rate, seconds, and what it saw)
 * and progress on stderr. Exit 0; 1 on socket or library errors, or when honest/forge clients
 * did not all connect; 2 on usage errors. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pure.h"
#include "pure_loop.h"
#include "wire.h"

#define NS 1000000000ull
#define MAXD 1500 /* largest datagram made or received */
#define BATCH 64  /* datagrams per sendmmsg */
#define HDRS 28   /* IPv4 + UDP headers */
#define SOCK_BUF (4 << 20)

/* ---- Small things ---------------------------------------------------------------------------- */

static uint64_t rng_s = 1;
static uint64_t rnd(void)
{
    uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint32_t below(uint32_t n)
{
    return n ? (uint32_t)(rnd() % n) : 0;
}
static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
}

static void die(const char *what)
{
    fprintf(stderr, "attack: %s\n", what);
    exit(1);
}

static void die_errno(const char *what)
{
    fprintf(stderr, "attack: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of n sorted values, in ms. */
static double pct_ms(const uint64_t *v, size_t n, double p)
{
    if (!n)
        return -1;
    size_t k = (size_t)(p * (double)n + 0.999999);
    k = k ? k - 1 : 0;
    return (double)v[k < n ? k : n - 1] / 1e6;
}

/* ---- Options --------------------------------------------------------------------------------- */

typedef struct opts {
    const char *mode, *to, *peer_key, *key, *keys, *spoof, *bind, *service, *out, *allow;
    double rate, seconds, load, spacing, timeout;
    uint32_t pool, count, links;
    uint64_t seed;
} opts;

static const char usage_text[] =
    "usage: attack MODE [options]   (modes: keys, honest, flood, replay, cookie-reuse, forge)\n"
    "  attack keys --count N --out FILE --allow FILE\n"
    "  attack honest --to A:P --peer-key KEY --keys FILE --count N --bind IP [--spacing S]\n"
    "                [--timeout S] [--service NAME]\n"
    "  attack flood --to A:P --peer-key KEY --key FILE --spoof CIDR [--rate R] [--seconds S]\n"
    "               [--pool N]\n"
    "  attack replay --to A:P --peer-key KEY --key FILE --spoof CIDR --bind IP [--rate R]\n"
    "                [--seconds S]\n"
    "  attack cookie-reuse --to A:P --peer-key KEY --key FILE --keys FILE --count K\n"
    "                      --spoof CIDR --bind IP [--load R] [--rate R]\n"
    "  attack forge --to A:P --peer-key KEY --key FILE --spoof CIDR --bind IP [--keys FILE]\n"
    "               [--links K] [--rate R] [--load R] [--timeout S]\n"
    "  common: --seed N\n"
    "(see the comment at the top of tools/attack.c, and docs/attacks.md)\n";

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "attack: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage_text);
    exit(2);
}

static double num(const char *name, const char *v, double lo, double hi)
{
    char *end = NULL;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= lo && x <= hi))
        usage("bad value for %s", name);
    return x;
}

/* ---- Keys and addresses ---------------------------------------------------------------------- */

/* A key in the text pure keygen / pure pubkey print ("pure-priv:..." or "pure-pub:...", or bare
 * base64). Returns 0 or -1. */
static int key_parse(uint8_t key[PURE_KEY_LEN], const char *text)
{
    while (*text == ' ' || *text == '\t')
        text++;
    const char *colon = strchr(text, ':');
    if (colon && colon - text < 16)
        text = colon + 1;
    char b[64];
    size_t n = strcspn(text, "\r\n");
    if (n >= sizeof b)
        return -1;
    memcpy(b, text, n);
    b[n] = 0;
    return pure_key_from_base64(key, b) == 0 ? 0 : -1;
}

/* Reads up to max keys, one per line, from path. Returns how many. */
static size_t keys_read(const char *path, uint8_t (*keys)[PURE_KEY_LEN], size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die_errno(path);
    char line[256];
    size_t n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == 0)
            continue;
        if (key_parse(keys[n], line) != 0) {
            fprintf(stderr, "attack: %s: not a key: %s", path, line);
            exit(2);
        }
        n++;
    }
    fclose(f);
    return n;
}

static void key_read1(const char *path, uint8_t key[PURE_KEY_LEN])
{
    if (keys_read(path, (uint8_t(*)[PURE_KEY_LEN])key, 1) != 1)
        usage("no key in %s", path);
}

typedef struct target {
    pure_addr addr; /* the victim, as the library sees it */
    struct sockaddr_in sin;
    uint8_t pub[PURE_KEY_LEN];
    const char *service;
} target;

static void target_parse(target *t, const opts *o)
{
    if (!o->to || pure_addr_from_string(&t->addr, o->to) != 0 ||
        t->addr.len != sizeof(struct sockaddr_in))
        usage("--to '%s' must be a numeric IPv4 ADDR:PORT", o->to ? o->to : "");
    memcpy(&t->sin, t->addr.bytes, sizeof t->sin);
    if (!o->peer_key || key_parse(t->pub, o->peer_key) != 0)
        usage("--peer-key '%s' is not a public key", o->peer_key ? o->peer_key : "");
    t->service = o->service ? o->service : "echo";
}

/* ---- Contexts: the library makes every handshake packet ---------------------------------------
 */

/* Per-link bookkeeping of the modes that drive real links. */
typedef struct rec {
    int group; /* the mode's: which set the link belongs to */
    uint64_t started, established;
    int closed, error;
    pure_link *link;
} rec;

static void on_established(pure_link *link, void *user)
{
    (void)link;
    rec *r = user;
    if (r && !r->established)
        r->established = pure_now();
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    (void)link;
    rec *r = user;
    if (r) {
        r->closed = 1;
        r->error = info->error;
        r->link = NULL;
    }
}

static const pure_callbacks client_cb = {.on_established = on_established, .on_closed = on_closed};

/* A context with this private key (NULL: a new random one). */
static pure_ctx *ctx_make(const uint8_t *priv)
{
    pure_settings s;
    pure_settings_default(&s);
    if (priv)
        memcpy(s.private_key, priv, PURE_KEY_LEN);
    else if (pure_keygen(s.private_key) != 0)
        die("no randomness");
    s.callbacks = &client_cb;
    pure_ctx *ctx = NULL;
    int rc = pure_ctx_new(&s, &ctx);
    memset(s.private_key, 0, sizeof s.private_key);
    if (rc)
        die(pure_strerror(rc));
    return ctx;
}

/* Connects a new link of ctx to the target and returns the first datagram the library makes for
 * it: the INIT. Nothing is sent. */
static size_t init_make(pure_ctx *ctx, const target *t, rec *r, uint8_t *out)
{
    pure_link *link = NULL;
    uint64_t now = pure_now();
    int rc = pure_connect(ctx, &t->addr, t->pub, t->service, r, &link, now);
    if (rc)
        die(pure_strerror(rc));
    if (r) {
        r->link = link;
        r->started = now;
    }
    uint8_t b[65536];
    size_t seg = 0, len = 0;
    pure_addr to;
    int64_t n;
    while ((n = pure_ctx_write(ctx, b, sizeof b, &seg, &to, now)) > 0)
        if (!len && seg <= MAXD && (size_t)n >= seg) {
            len = seg;
            memcpy(out, b, len);
        }
    if (!len)
        die("the library made no INIT for a new link (more handshakes under way in one context "
            "than it starts at once?)");
    return len;
}

/* An INIT from ctx for the pools: the link is aborted once its INIT is taken, so the context
 * never has more than one handshake under way (the library queues those beyond
 * PURE_HS_IN_FLIGHT without making their INIT). */
static size_t init_take(pure_ctx *ctx, const target *t, uint8_t *out)
{
    rec r;
    memset(&r, 0, sizeof r);
    size_t len = init_make(ctx, t, &r, out);
    if (r.link && !r.closed)
        pure_link_abort(r.link, 0, "");
    uint8_t b[65536];
    size_t seg;
    pure_addr to;
    while (pure_ctx_write(ctx, b, sizeof b, &seg, &to, pure_now()) > 0) {
    }
    return len;
}

/* A pool of INITs, all from one context (one static key) and the same length. */
typedef struct pool {
    uint32_t n;
    uint16_t len[4096];
    uint8_t (*d)[MAXD];
} pool;

static void pool_make(pool *p, uint32_t n, const uint8_t *priv, const target *t, pure_ctx **keep)
{
    if (n > 4096)
        n = 4096;
    p->d = malloc((size_t)n * MAXD);
    if (!p->d)
        die("out of memory");
    pure_ctx *ctx = ctx_make(priv);
    for (uint32_t i = 0; i < n; i++)
        p->len[i] = (uint16_t)init_take(ctx, t, p->d[i]);
    p->n = n;
    *keep = ctx; /* freed at exit */
}

/* ---- UDP sockets for the real links ---------------------------------------------------------- */

static int udp_open(const char *ip, pure_addr *local)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die_errno("socket");
    int v = SOCK_BUF;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
        usage("--bind '%s' is not an IPv4 address", ip);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
        die_errno(ip);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    memset(local, 0, sizeof *local);
    memcpy(local->bytes, &a, sizeof a);
    local->len = sizeof a;
    return fd;
}

/* Sends everything ctx has to send (each burst split into its datagrams). If cap_out is not
 * NULL the last datagram sent is copied there (*cap_len its length). */
static void ctx_flush(pure_ctx *ctx, int fd, uint64_t now, uint8_t *cap_out, size_t *cap_len)
{
    static uint8_t b[65536];
    size_t seg = 0;
    pure_addr to;
    int64_t n;
    while ((n = pure_ctx_write(ctx, b, sizeof b, &seg, &to, now)) > 0) {
        for (size_t off = 0; off < (size_t)n; off += seg) {
            size_t len = (size_t)n - off < seg ? (size_t)n - off : seg;
            sendto(fd, b + off, len, 0, (const struct sockaddr *)to.bytes, to.len);
            if (cap_out && len <= MAXD) {
                memcpy(cap_out, b + off, len);
                *cap_len = len;
            }
        }
    }
}

/* Receives one datagram. Returns its length, or -1 when none is waiting. */
static ssize_t udp_recv(int fd, uint8_t *b, size_t cap, pure_addr *from)
{
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    ssize_t r = recvfrom(fd, b, cap, 0, (struct sockaddr *)&a, &l);
    if (r < 0)
        return -1;
    memset(from, 0, sizeof *from);
    memcpy(from->bytes, &a, sizeof a);
    from->len = sizeof a;
    return r;
}

/* Reads what fd holds into ctx, runs its timers, sends what it makes. */
static void ctx_pump(pure_ctx *ctx, int fd, uint64_t *datagrams)
{
    uint8_t b[MAXD + 64];
    pure_addr from;
    ssize_t r;
    for (int i = 0; i < 1024 && (r = udp_recv(fd, b, sizeof b, &from)) >= 0; i++) {
        pure_ctx_read(ctx, &from, b, (size_t)r, pure_now());
        if (datagrams)
            ++*datagrams;
    }
    uint64_t now = pure_now();
    if (pure_ctx_deadline(ctx) <= now)
        pure_ctx_timeout(ctx, now);
    ctx_flush(ctx, fd, now, NULL, NULL);
}

/* ---- The raw sender: spoofed IPv4/UDP datagrams in sendmmsg batches ---------------------------
 */

typedef struct rawtx {
    int fd;
    uint32_t net, hostmask; /* spoofed sources: net | random host part (host order) */
    double rate;            /* datagrams per second */
    uint64_t t0, t_last;    /* first and last batch sent */
    uint64_t sent, refused; /* datagrams the kernel took / did not take */
    struct mmsghdr m[BATCH];
    struct iovec iov[BATCH];
    struct sockaddr_in dst[BATCH];
    uint8_t buf[BATCH][HDRS + MAXD];
} rawtx;

static rawtx tx;

static void raw_open(rawtx *r, const char *cidr, double rate)
{
    char ip[32];
    const char *slash = cidr ? strchr(cidr, '/') : NULL;
    if (!slash || (size_t)(slash - cidr) >= sizeof ip)
        usage("--spoof '%s' must be an IPv4 CIDR such as 10.214.128.0/17", cidr ? cidr : "");
    memcpy(ip, cidr, (size_t)(slash - cidr));
    ip[slash - cidr] = 0;
    int bits = (int)num("--spoof prefix length", slash + 1, 8, 30);
    struct in_addr a;
    if (inet_pton(AF_INET, ip, &a) != 1)
        usage("--spoof '%s' must be an IPv4 CIDR", cidr);
    r->hostmask = (1u << (32 - bits)) - 1;
    r->net = ntohl(a.s_addr) & ~r->hostmask;
    r->rate = rate;
    r->fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    if (r->fd < 0)
        die_errno("raw socket (needs CAP_NET_RAW)");
    int one = 1, v = SOCK_BUF;
    if (setsockopt(r->fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof one) != 0)
        die_errno("IP_HDRINCL");
    if (setsockopt(r->fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) != 0)
        setsockopt(r->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    for (int i = 0; i < BATCH; i++) {
        r->iov[i].iov_base = r->buf[i];
        r->m[i].msg_hdr.msg_iov = &r->iov[i];
        r->m[i].msg_hdr.msg_iovlen = 1;
        r->m[i].msg_hdr.msg_name = &r->dst[i];
        r->m[i].msg_hdr.msg_namelen = sizeof r->dst[i];
    }
}

static uint32_t raw_spoof_ip(const rawtx *r)
{
    return r->net | (1 + below(r->hostmask - 1));
}
static uint16_t raw_spoof_port(void)
{
    return (uint16_t)(1024 + below(65536 - 1024));
}

static uint32_t csum_add(uint32_t s, const uint8_t *p, size_t n)
{
    for (; n > 1; p += 2, n -= 2)
        s += (uint32_t)p[0] << 8 | p[1];
    if (n)
        s += (uint32_t)p[0] << 8;
    return s;
}

/* Slot i of the next batch: one UDP datagram from src (host order ip, port) to dst. */
static void raw_put(rawtx *r, int i, uint32_t src_ip, uint16_t src_port,
                    const struct sockaddr_in *dst, const uint8_t *payload, size_t n)
{
    uint8_t *b = r->buf[i];
    size_t udp_len = 8 + n, tot = 20 + udp_len;
    uint32_t s = htonl(src_ip);
    memset(b, 0, HDRS);
    b[0] = 0x45;
    b[2] = (uint8_t)(tot >> 8), b[3] = (uint8_t)tot;
    b[8] = 64; /* TTL */
    b[9] = IPPROTO_UDP;
    memcpy(b + 12, &s, 4);
    memcpy(b + 16, &dst->sin_addr, 4);
    /* the kernel fills in the IP checksum (and the id, left 0) with IP_HDRINCL */
    uint8_t *u = b + 20;
    u[0] = (uint8_t)(src_port >> 8), u[1] = (uint8_t)src_port;
    memcpy(u + 2, &dst->sin_port, 2);
    u[4] = (uint8_t)(udp_len >> 8), u[5] = (uint8_t)udp_len;
    memcpy(u + 8, payload, n);
    uint32_t sum = csum_add(0, b + 12, 8); /* pseudo-header: addresses, protocol, length */
    sum += IPPROTO_UDP + (uint32_t)udp_len;
    sum = csum_add(sum, u, udp_len);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    uint16_t c = (uint16_t)~sum;
    if (c == 0)
        c = 0xffff;
    u[6] = (uint8_t)(c >> 8), u[7] = (uint8_t)c;
    r->dst[i] = *dst;
    r->dst[i].sin_port = 0; /* raw sockets take no port */
    r->iov[i].iov_len = tot;
}

/* Fills slot i of a batch: the mode's traffic. */
typedef void (*gen_fn)(void *st, rawtx *r, int i);

/* Sends the batches due by now at r->rate (at most 32 per call, so the caller's other work goes
 * on; when the CPU cannot keep up the rate reached is simply lower). Returns datagrams sent. */
static uint64_t raw_pump(rawtx *r, gen_fn gen, void *st)
{
    uint64_t now = pure_now(), done = 0;
    if (!r->t0)
        r->t0 = now;
    uint64_t due = (uint64_t)((double)(now - r->t0) * r->rate / 1e9) + 1;
    for (int b = 0; b < 32 && r->sent + r->refused < due; b++) {
        uint64_t left = due - r->sent - r->refused;
        int n = left < BATCH ? (int)left : BATCH;
        for (int i = 0; i < n; i++)
            gen(st, r, i);
        int off = 0;
        while (off < n) {
            int k = sendmmsg(r->fd, r->m + off, (unsigned)(n - off), MSG_DONTWAIT);
            if (k <= 0) {
                if (k < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
                    die_errno("sendmmsg");
                r->refused += (uint64_t)(n - off); /* a full queue: these are lost */
                break;
            }
            off += k;
            r->sent += (uint64_t)k;
            done += (uint64_t)k;
        }
        r->t_last = pure_now();
    }
    return done;
}

/* The time until the next batch is due, in ms for poll (0: now). */
static int raw_wait_ms(const rawtx *r)
{
    if (!r->t0 || r->rate <= 0)
        return 1;
    double next = (double)(r->sent + r->refused + BATCH) / r->rate * 1e9 + (double)r->t0;
    double now = (double)pure_now();
    return next <= now ? 0 : (int)((next - now) / 1e6);
}

static double raw_seconds(const rawtx *r)
{
    return r->t_last > r->t0 ? (double)(r->t_last - r->t0) / 1e9 : 0;
}

/* ---- Flood traffic: INITs of five kinds from spoofed sources ----------------------------------
 */

enum {
    F_VALID,
    F_UNKNOWN,
    F_FLIPPED,
    F_TRUNC,
    F_RANDOM,
    F_KINDS
};
static const char *const f_name[F_KINDS] = {"valid", "unknown_key", "flipped", "truncated",
                                            "random"};
/* Shares of each kind, in percent. */
static const uint32_t f_share[F_KINDS] = {30, 15, 25, 10, 20};

typedef struct flood {
    const target *t;
    pool valid, unknown;
    uint32_t primed; /* valid INITs sent once each, in the order made, before the mix */
    uint64_t kinds[F_KINDS];
    const uint8_t *replay; /* replay mode: only this INIT */
    size_t replay_len;
} flood;

static void flood_gen(void *st, rawtx *r, int i)
{
    flood *f = st;
    uint8_t b[MAXD];
    size_t n;
    int kind = F_VALID;
    if (f->replay) {
        memcpy(b, f->replay, f->replay_len);
        n = f->replay_len;
    } else if (f->primed < f->valid.n) {
        /* every valid INIT once, fresh: a half-open link each, which is what puts a listener
         * under load (docs/protocol.md, "Handshake admission") */
        n = f->valid.len[f->primed];
        memcpy(b, f->valid.d[f->primed++], n);
    } else {
        uint32_t x = below(100), acc = 0;
        for (kind = 0; kind < F_KINDS - 1; kind++)
            if (x < (acc += f_share[kind]))
                break;
        const pool *p = kind == F_UNKNOWN ? &f->unknown : &f->valid;
        uint32_t k = below(p->n);
        n = p->len[k];
        memcpy(b, p->d[k], n);
        switch (kind) {
        case F_FLIPPED: /* 1-4 bytes changed, never the type byte */
            for (uint32_t j = 0, m = 1 + below(4); j < m; j++)
                b[1 + below((uint32_t)n - 1)] ^= (uint8_t)(1 + below(255));
            break;
        case F_TRUNC: n = 1 + below((uint32_t)n - 1); break;
        case F_RANDOM: /* the INIT's type byte, then random bytes */ fill(b + 1, n - 1); break;
        default: break;
        }
    }
    f->kinds[kind]++;
    raw_put(r, i, raw_spoof_ip(r), raw_spoof_port(), &f->t->sin, b, n);
}

static void flood_setup(flood *f, const target *t, const uint8_t *allowed, uint32_t n,
                        pure_ctx **keep)
{
    memset(f, 0, sizeof *f);
    f->t = t;
    uint64_t t0 = pure_now();
    pool_make(&f->valid, n, allowed, t, &keep[0]);
    pool_make(&f->unknown, n / 4 ? n / 4 : 1, NULL, t, &keep[1]);
    fprintf(stderr,
            "attack: %u valid and %u unknown-key INITs (%u bytes) made by the library in "
            "%.2f s\n",
            f->valid.n, f->unknown.n, f->valid.len[0], (double)(pure_now() - t0) / 1e9);
}

static void flood_free(flood *f, pure_ctx **keep)
{
    free(f->valid.d);
    free(f->unknown.d);
    pure_ctx_free(keep[0]);
    pure_ctx_free(keep[1]);
}

static void print_sent(const char *mode, const rawtx *r)
{
    double s = raw_seconds(r);
    printf("{\"mode\": \"%s\", \"sent\": %" PRIu64 ", \"refused\": %" PRIu64
           ", \"seconds\": %.3f, \"rate\": %.0f",
           mode, r->sent, r->refused, s, s > 0 ? (double)r->sent / s : 0);
}

static void print_kinds(const flood *f)
{
    printf(", \"kinds\": {");
    for (int k = 0; k < F_KINDS; k++)
        printf("%s\"%s\": %" PRIu64, k ? ", " : "", f_name[k], f->kinds[k]);
    printf("}");
}

/* Paces the raw sender alone for `seconds`. */
static void raw_run(rawtx *r, gen_fn gen, void *st, double seconds)
{
    uint64_t until = pure_now() + (uint64_t)(seconds * 1e9);
    while (pure_now() < until) {
        raw_pump(r, gen, st);
        int ms = raw_wait_ms(r);
        if (ms > 0) {
            struct timespec ts = {0, (long)(ms > 5 ? 5 : ms) * 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

static int mode_flood(const opts *o)
{
    target t;
    target_parse(&t, o);
    if (!o->key)
        usage("%s", "flood needs --key (the allowed key its valid INITs use)");
    uint8_t priv[PURE_KEY_LEN];
    key_read1(o->key, priv);
    raw_open(&tx, o->spoof, o->rate);
    flood f;
    pure_ctx *keep[2];
    flood_setup(&f, &t, priv, o->pool, keep);
    fprintf(stderr, "attack: flood: sending\n");
    raw_run(&tx, flood_gen, &f, o->seconds);
    print_sent("flood", &tx);
    print_kinds(&f);
    printf(", \"pool\": %u, \"init_len\": %u}\n", f.valid.n, f.valid.len[0]);
    fflush(stdout);
    flood_free(&f, keep);
    return 0;
}

/* ---- replay ---------------------------------------------------------------------------------- */

static int mode_replay(const opts *o)
{
    target t;
    target_parse(&t, o);
    if (!o->key || !o->bind)
        usage("%s", "replay needs --key (an allowed key) and --bind (its real source address)");
    uint8_t priv[PURE_KEY_LEN];
    key_read1(o->key, priv);
    raw_open(&tx, o->spoof, o->rate);

    /* One real handshake; the INIT recorded is the last datagram sent before the link was
     * established (after a cookie reply, the INIT that carried the cookie). */
    pure_addr local;
    int fd = udp_open(o->bind, &local);
    pure_ctx *ctx = ctx_make(priv);
    rec r;
    memset(&r, 0, sizeof r);
    uint8_t init[MAXD];
    size_t init_len = 0;
    pure_link *link;
    uint64_t t0 = pure_now();
    if (pure_connect(ctx, &t.addr, t.pub, t.service, &r, &link, t0) != 0)
        die("pure_connect");
    r.link = link;
    while (!r.established && !r.closed && pure_now() - t0 < 10 * NS) {
        ctx_flush(ctx, fd, pure_now(), init, &init_len);
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 5);
        uint8_t b[MAXD + 64];
        pure_addr from;
        ssize_t n;
        while (!r.established && (n = udp_recv(fd, b, sizeof b, &from)) >= 0)
            pure_ctx_read(ctx, &from, b, (size_t)n, pure_now());
        if (!r.established && pure_ctx_deadline(ctx) <= pure_now())
            pure_ctx_timeout(ctx, pure_now());
    }
    if (!r.established || !init_len) {
        fprintf(stderr, "attack: replay: the real handshake failed (%s)\n",
                r.closed ? pure_strerror(r.error) : "no answer in 10 s");
        return 1;
    }
    double connect_ms = (double)(r.established - t0) / 1e6;
    /* The session ends; its INIT is replayed later, as a recorded one would be. */
    pure_link_abort(link, 0, "done");
    ctx_flush(ctx, fd, pure_now(), NULL, NULL);
    fprintf(stderr, "attack: replay: recorded a %zu-byte INIT (link up in %.1f ms); replaying\n",
            init_len, connect_ms);

    flood f;
    memset(&f, 0, sizeof f);
    f.t = &t;
    f.replay = init;
    f.replay_len = init_len;
    raw_run(&tx, flood_gen, &f, o->seconds);
    print_sent("replay", &tx);
    printf(", \"init_len\": %zu, \"connect_ms\": %.1f}\n", init_len, connect_ms);
    fflush(stdout);
    pure_ctx_free(ctx);
    close(fd);
    return 0;
}

/* ---- honest ---------------------------------------------------------------------------------- */

typedef struct client {
    pure_ctx *ctx;
    int fd;
    rec r;
    int started;
} client;

/* Drives n clients until each is established or closed, or until `until`. Starts client i at
 * start[i] if not started. Runs `side` (raw traffic) between rounds when not NULL. Returns the
 * number established. */
static uint32_t clients_run(client *c, uint32_t n, const uint64_t *start, const target *t,
                            uint64_t until, gen_fn side, void *side_st)
{
    struct pollfd *p = calloc(n, sizeof *p);
    if (!p)
        die("out of memory");
    uint32_t done = 0, up = 0;
    while (done < n && pure_now() < until) {
        uint64_t now = pure_now(), wake = now + 20 * 1000000ull;
        for (uint32_t i = 0; i < n; i++) {
            if (!c[i].started && start && now >= start[i]) {
                pure_link *l;
                c[i].started = 1;
                c[i].r.started = now;
                if (pure_connect(c[i].ctx, &t->addr, t->pub, t->service, &c[i].r, &l, now) != 0)
                    die("pure_connect");
                c[i].r.link = l;
                ctx_flush(c[i].ctx, c[i].fd, now, NULL, NULL);
            }
            if (!c[i].started && start && start[i] < wake)
                wake = start[i];
            uint64_t d = pure_ctx_deadline(c[i].ctx);
            if (d < wake)
                wake = d;
            p[i].fd = c[i].fd;
            p[i].events = POLLIN;
        }
        int ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
        if (side) {
            raw_pump(&tx, side, side_st);
            int rw = raw_wait_ms(&tx);
            if (rw < ms)
                ms = rw;
        }
        poll(p, n, ms);
        done = up = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (c[i].started && (p[i].revents || pure_ctx_deadline(c[i].ctx) <= pure_now()))
                ctx_pump(c[i].ctx, c[i].fd, NULL);
            if (c[i].r.established)
                up++;
            if (c[i].r.established || c[i].r.closed)
                done++;
        }
    }
    free(p);
    return up;
}

/* Connect times of the established clients, sorted, into v. Returns how many. */
static size_t connect_times(const client *c, uint32_t n, uint64_t *v)
{
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (c[i].r.established)
            v[k++] = c[i].r.established - c[i].r.started;
    qsort(v, k, sizeof *v, cmp_u64);
    return k;
}

static void clients_close(client *c, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (c[i].r.link && !c[i].r.closed)
            pure_link_abort(c[i].r.link, 0, "done");
        ctx_flush(c[i].ctx, c[i].fd, pure_now(), NULL, NULL);
        pure_ctx_free(c[i].ctx);
        close(c[i].fd);
    }
}

/* --bind plus i, as text. */
static void ip_plus(const char *base, uint32_t i, char out[INET_ADDRSTRLEN])
{
    struct in_addr a;
    if (inet_pton(AF_INET, base, &a) != 1)
        usage("--bind '%s' is not an IPv4 address", base);
    a.s_addr = htonl(ntohl(a.s_addr) + i);
    inet_ntop(AF_INET, &a, out, INET_ADDRSTRLEN);
}

static void print_times(const char *prefix, const uint64_t *v, size_t k)
{
    printf("%s\"p50_ms\": %.1f, \"p90_ms\": %.1f, \"max_ms\": %.1f", prefix, pct_ms(v, k, 0.5),
           pct_ms(v, k, 0.9), k ? (double)v[k - 1] / 1e6 : -1.0);
}

static int mode_honest(const opts *o)
{
    target t;
    target_parse(&t, o);
    if (!o->keys || !o->bind || !o->count)
        usage("%s", "honest needs --keys FILE, --count N and --bind IP");
    uint32_t n = o->count;
    uint8_t(*keys)[PURE_KEY_LEN] = calloc(n, PURE_KEY_LEN);
    client *c = calloc(n, sizeof *c);
    uint64_t *start = calloc(n, sizeof *start), *v = calloc(n, sizeof *v);
    if (!keys || !c || !start || !v)
        die("out of memory");
    if (keys_read(o->keys, keys, n) != n)
        usage("%s holds fewer keys than --count", o->keys);
    uint64_t t0 = pure_now() + 10000000ull;
    for (uint32_t i = 0; i < n; i++) {
        char ip[INET_ADDRSTRLEN];
        pure_addr local;
        ip_plus(o->bind, i, ip);
        c[i].fd = udp_open(ip, &local);
        c[i].ctx = ctx_make(keys[i]);
        start[i] = t0 + (uint64_t)((double)i * o->spacing * 1e9);
    }
    memset(keys, 0, (size_t)n * PURE_KEY_LEN);
    uint64_t until = start[n - 1] + (uint64_t)(o->timeout * 1e9);
    uint32_t up = clients_run(c, n, start, &t, until, NULL, NULL);
    size_t k = connect_times(c, n, v);
    double secs = (double)(pure_now() - t0) / 1e9;
    for (uint32_t i = 0; i < n; i++)
        if (!c[i].r.established)
            fprintf(stderr, "attack: honest: client %u did not connect: %s\n", i,
                    c[i].r.closed ? pure_strerror(c[i].r.error) : "timeout");
    printf("{\"mode\": \"honest\", \"clients\": %u, \"connected\": %u, \"seconds\": %.3f", n, up,
           secs);
    print_times(", ", v, k);
    printf("}\n");
    fflush(stdout);
    clients_close(c, n);
    free(keys), free(c), free(start), free(v);
    return up == n ? 0 : 1;
}

/* ---- cookie-reuse ---------------------------------------------------------------------------- */

enum {
    G_FIRST = 1,
    G_REUSE,
    G_CONTROL
};

typedef struct hs1 { /* one context, one link */
    pure_ctx *ctx;
    rec r;
    uint8_t init[MAXD];
    size_t len;
} hs1;

/* Feeds a reply to every context: the one whose link it names takes it, the others drop it
 * (link indices are random 32-bit numbers). No format knowledge, and no reliance on what
 * pure_ctx_read returns for a datagram that is not its own. */
static void dispatch(hs1 *h, uint32_t n, const uint8_t *b, size_t len, const pure_addr *from)
{
    uint8_t copy[MAXD + 64];
    for (uint32_t i = 0; i < n; i++) {
        memcpy(copy, b, len); /* pure_ctx_read decrypts in place */
        pure_ctx_read(h[i].ctx, from, copy, len, pure_now());
    }
}

static int mode_cookie_reuse(const opts *o)
{
    target t;
    target_parse(&t, o);
    if (!o->key || !o->keys || !o->bind || !o->count)
        usage("%s", "cookie-reuse needs --key (for the load), --keys FILE (2 x --count + 8 "
                    "allowed keys), --count K and --bind IP");
    uint32_t k = o->count, nkeys = 2 * k + 8;
    uint8_t priv[PURE_KEY_LEN];
    key_read1(o->key, priv);
    uint8_t(*keys)[PURE_KEY_LEN] = calloc(nkeys, PURE_KEY_LEN);
    hs1 *h = calloc(2 * k + 1, sizeof *h);
    if (!keys || !h)
        die("out of memory");
    if (keys_read(o->keys, keys, nkeys) != nkeys)
        usage("%s holds fewer than 2 x --count + 8 keys", o->keys);
    raw_open(&tx, o->spoof, o->load);
    flood f;
    pure_ctx *keep[2];
    flood_setup(&f, &t, priv, 1200, keep);
    pure_addr local;
    int fd = udp_open(o->bind, &local);
    uint8_t b[MAXD + 64];
    pure_addr from;
    ssize_t n;

    /* The load first: the victim demands cookies only under load. */
    raw_run(&tx, flood_gen, &f, 0.5);

    /* One cookie: an INIT from a fresh key and link, until a reply leaves the link in its
     * handshake and the library then makes a different INIT for it (at once, as Pure 0.2 does,
     * or at its next retry): the INIT that carries the cookie. An established link means the
     * victim was not demanding cookies: another key, another try. */
    hs1 *a = &h[0];
    uint8_t with_cookie[MAXD];
    size_t wc_len = 0;
    int attempts = 0;
    for (uint32_t ki = 2 * k; !wc_len && ki < nkeys; ki++) {
        attempts++;
        if (a->ctx)
            pure_ctx_free(a->ctx);
        memset(a, 0, sizeof *a);
        a->r.group = G_FIRST;
        a->ctx = ctx_make(keys[ki]);
        a->len = init_make(a->ctx, &t, &a->r, a->init);
        sendto(fd, a->init, a->len, 0, (const struct sockaddr *)&t.sin, sizeof t.sin);
        uint64_t until = pure_now() + 1500 * 1000000ull;
        int answered = 0;
        while (!wc_len && !a->r.established && !a->r.closed && pure_now() < until) {
            raw_pump(&tx, flood_gen, &f);
            struct pollfd p = {fd, POLLIN, 0};
            poll(&p, 1, raw_wait_ms(&tx));
            while ((n = udp_recv(fd, b, sizeof b, &from)) >= 0) {
                pure_ctx_read(a->ctx, &from, b, (size_t)n, pure_now());
                answered++;
            }
            uint64_t now = pure_now();
            if (pure_ctx_deadline(a->ctx) <= now)
                pure_ctx_timeout(a->ctx, now);
            size_t seg;
            pure_addr to;
            while (!wc_len && !a->r.established && !a->r.closed &&
                   pure_ctx_write(a->ctx, b, sizeof b, &seg, &to, now) > 0) {
                if (answered && seg <= MAXD && (seg != a->len || memcmp(b, a->init, seg) != 0)) {
                    wc_len = seg; /* kept, not sent yet */
                    memcpy(with_cookie, b, seg);
                } else { /* a plain retry */
                    sendto(fd, b, seg, 0, (const struct sockaddr *)&t.sin, sizeof t.sin);
                }
            }
        }
    }
    if (!wc_len) {
        fprintf(stderr,
                "attack: cookie-reuse: no cookie reply in %d tries under a load of %.0f "
                "INITs/s\n",
                attempts, o->load);
        print_sent("cookie-reuse", &tx);
        printf(", \"cookie\": 0, \"tries\": %d}\n", attempts);
        fflush(stdout);
        if (a->ctx)
            pure_ctx_free(a->ctx);
        flood_free(&f, keep);
        free(h), free(keys);
        close(fd);
        return 1;
    }
    /* Where the library put the cookie: the bytes that changed. */
    uint32_t changed = 0;
    uint8_t mask[MAXD];
    memset(mask, 0, sizeof mask);
    if (wc_len == a->len)
        for (size_t i = 0; i < wc_len; i++)
            if (with_cookie[i] != a->init[i])
                mask[i] = 1, changed++;
    fprintf(stderr,
            "attack: cookie-reuse: cookie after %d tries: the INIT changed in %u of %zu "
            "bytes\n",
            attempts, changed, wc_len);

    /* K INITs with that cookie copied in, and K carrying none, each from its own allowed key. */
    for (uint32_t i = 0; i < 2 * k; i++) {
        hs1 *x = &h[1 + i];
        x->r.group = i % 2 ? G_CONTROL : G_REUSE;
        x->ctx = ctx_make(keys[i]);
        x->len = init_make(x->ctx, &t, &x->r, x->init);
        if (x->r.group == G_REUSE) {
            if (x->len == wc_len) {
                for (size_t j = 0; j < wc_len; j++)
                    if (mask[j])
                        x->init[j] = with_cookie[j];
            } else { /* another length: the INIT that carried the cookie itself */
                memcpy(x->init, with_cookie, wc_len);
                x->len = wc_len;
            }
        }
        raw_pump(&tx, flood_gen, &f);
    }
    memset(keys, 0, (size_t)nkeys * PURE_KEY_LEN);

    /* The INIT that got the cookie goes first (its one honest use), then the others, paced. */
    uint64_t sent_real = 0, replies = 0, t0 = pure_now();
    sendto(fd, with_cookie, wc_len, 0, (const struct sockaddr *)&t.sin, sizeof t.sin);
    sent_real++;
    uint32_t next = 0;
    uint64_t linger = 0;
    while (!linger || pure_now() < linger) {
        raw_pump(&tx, flood_gen, &f);
        uint64_t due = (uint64_t)((double)(pure_now() - t0) * o->rate / 1e9);
        for (; next < 2 * k && next < due; next++) {
            hs1 *x = &h[1 + next];
            x->r.started = pure_now();
            sendto(fd, x->init, x->len, 0, (const struct sockaddr *)&t.sin, sizeof t.sin);
            sent_real++;
        }
        if (next == 2 * k && !linger)
            linger = pure_now() + 500 * 1000000ull;
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, raw_wait_ms(&tx));
        while ((n = udp_recv(fd, b, sizeof b, &from)) >= 0) {
            replies++;
            dispatch(h, 2 * k + 1, b, (size_t)n, &from);
        }
    }
    /* Admitted: the victim did the handshake's work (an established link, or a refusal, which
     * it can only send after reading the INIT's key). */
    uint32_t adm[4] = {0}, est[4] = {0};
    for (uint32_t i = 0; i < 2 * k + 1; i++) {
        int g = h[i].r.group;
        if (h[i].r.established)
            est[g]++;
        if (h[i].r.established || (h[i].r.closed && h[i].r.error != PURE_ETIMEDOUT))
            adm[g]++;
    }
    print_sent("cookie-reuse", &tx);
    printf(", \"load_rate\": %.0f", o->load);
    print_kinds(&f);
    printf(", \"cookie\": 1, \"tries\": %d, \"cookie_bytes\": %u, \"init_len\": %zu"
           ", \"real_sent\": %" PRIu64 ", \"replies\": %" PRIu64 ", \"first_admitted\": %u"
           ", \"reused\": %u, \"reuse_admitted\": %u, \"reuse_established\": %u"
           ", \"control\": %u, \"control_admitted\": %u, \"control_established\": %u}\n",
           attempts, changed, wc_len, sent_real, replies, adm[G_FIRST], k, adm[G_REUSE],
           est[G_REUSE], k, adm[G_CONTROL], est[G_CONTROL]);
    fflush(stdout);
    for (uint32_t i = 0; i < 2 * k + 1; i++)
        pure_ctx_free(h[i].ctx);
    flood_free(&f, keep);
    free(h), free(keys);
    close(fd);
    return 0;
}

/* ---- forge ----------------------------------------------------------------------------------- */

typedef struct forge {
    flood *load;
    double forge_share;        /* of the raw datagrams, the forged ones */
    struct sockaddr_in client; /* where the forged packets go */
    uint32_t idx[256];         /* link indices still in their handshake */
    uint32_t nidx;
    uint64_t cookies, rejects;
} forge;

static void forge_gen(void *st, rawtx *r, int i)
{
    forge *g = st;
    if (!g->nidx || (double)below(1000000) >= g->forge_share * 1e6) {
        flood_gen(g->load, r, i);
        return;
    }
    uint8_t b[128];
    size_t n;
    int cookie = below(2) == 0;
    /* Mostly the length wire.h gives, sometimes another (the format may grow). */
    if (cookie)
        n = below(4) ? PURE_COOKIE_PKT : 1 + 4 + below(100);
    else
        n = below(4) ? PURE_REJECT_PKT : 1 + 4 + below(100);
    fill(b, n);
    b[0] = cookie ? PURE_PKT_COOKIE : PURE_PKT_REJECT;
    uint32_t x = g->idx[below(g->nidx)]; /* type | receiver u32 (little-endian) | ... */
    b[1] = (uint8_t)x, b[2] = (uint8_t)(x >> 8), b[3] = (uint8_t)(x >> 16),
    b[4] = (uint8_t)(x >> 24);
    uint32_t src;
    uint16_t sport;
    if (below(2)) { /* as if from the victim itself */
        src = ntohl(g->load->t->sin.sin_addr.s_addr);
        sport = ntohs(g->load->t->sin.sin_port);
    } else {
        src = raw_spoof_ip(r);
        sport = raw_spoof_port();
    }
    raw_put(r, i, src, sport, &g->client, b, n);
    if (cookie)
        g->cookies++;
    else
        g->rejects++;
}

/* What the forging process sent, for the parent's JSON line. */
typedef struct forge_report {
    uint64_t sent, refused, t0, t_last, cookies, rejects, kinds[F_KINDS];
} forge_report;

static volatile sig_atomic_t forge_stop;
static void on_forge_stop(int sig)
{
    (void)sig;
    forge_stop = 1;
}

/* The forging process: the load alone until the link indices come down `idx_fd`, then forged
 * COOKIEs and REJECTs at them with the load, until SIGTERM; then its report up `rep_fd`. Once
 * the first forged packets are out it says so up `go_fd`, so the client's INITs leave into the
 * forgery, not before it (the handshakes take ~5 ms: a forger a little late hit only links
 * already open, which drop its packets as for an unknown index). */
static void forger(forge *g, int idx_fd, int rep_fd, int go_fd)
{
    int said = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_forge_stop;
    sigaction(SIGTERM, &sa, NULL);
    while (!forge_stop) {
        if (!g->nidx) {
            ssize_t n = read(idx_fd, g->idx, sizeof g->idx);
            if (n > 0)
                g->nidx = (uint32_t)((size_t)n / sizeof g->idx[0]);
        }
        raw_pump(&tx, forge_gen, g);
        if (!said && g->cookies + g->rejects > 0) {
            said = 1;
            if (write(go_fd, "g", 1) != 1)
                _exit(1);
        }
        int ms = raw_wait_ms(&tx);
        if (ms > 0) {
            struct timespec ts = {0, (long)(ms > 2 ? 2 : ms) * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    forge_report rep = {tx.sent, tx.refused, tx.t0, tx.t_last, g->cookies, g->rejects, {0}};
    memcpy(rep.kinds, g->load->kinds, sizeof rep.kinds);
    if (write(rep_fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        _exit(1);
    _exit(0);
}

static int mode_forge(const opts *o)
{
    target t;
    target_parse(&t, o);
    if (!o->key || !o->bind)
        usage("%s", "forge needs --key (its client's allowed key, also the load's) and --bind");
    uint32_t nl = o->links;
    uint8_t priv[PURE_KEY_LEN], cpriv[PURE_KEY_LEN];
    key_read1(o->key, priv);
    key_read1(o->keys ? o->keys : o->key, cpriv);
    raw_open(&tx, o->spoof, o->rate + o->load);
    flood f;
    pure_ctx *keep[2];
    flood_setup(&f, &t, priv, 1200, keep);
    forge g;
    memset(&g, 0, sizeof g);
    g.load = &f;
    g.forge_share = o->rate / (o->rate + o->load);
    client c;
    memset(&c, 0, sizeof c);
    pure_addr local;
    c.fd = udp_open(o->bind, &local);
    memcpy(&g.client, local.bytes, sizeof g.client);

    /* The attacker is not the client: the forging runs in a process of its own, so the client
     * reads its socket as fast as a real one would, on its own. */
    int idx_pipe[2], rep_pipe[2], go_pipe[2];
    if (pipe2(idx_pipe, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(rep_pipe, O_CLOEXEC) != 0 ||
        pipe2(go_pipe, O_CLOEXEC) != 0)
        die_errno("pipe");
    pid_t child = fork();
    if (child < 0)
        die_errno("fork");
    if (child == 0) {
        close(idx_pipe[1]);
        close(rep_pipe[0]);
        close(go_pipe[0]);
        close(c.fd);
        forger(&g, idx_pipe[0], rep_pipe[1], go_pipe[1]);
    }
    close(idx_pipe[0]);
    close(rep_pipe[1]);
    close(go_pipe[1]);
    c.ctx = ctx_make(cpriv);
    /* The load alone for a second first: the victim is under load when the links start, and
     * has worked through the load's fresh INITs (5 DH each). */
    struct timespec second = {1, 0};
    nanosleep(&second, NULL);

    rec *r = calloc(nl, sizeof *r);
    uint64_t *v = calloc(nl, sizeof *v);
    uint32_t lidx[64] = {0};
    if (!r || !v)
        die("out of memory");
    static uint8_t inits[64][MAXD];
    size_t ilen[64];
    for (uint32_t i = 0; i < nl; i++) {
        ilen[i] = init_make(c.ctx, &t, &r[i], inits[i]);
        /* wire.h: INIT = type | sender u32 | ...: the index replies name */
        lidx[i] = (uint32_t)inits[i][1] | (uint32_t)inits[i][2] << 8 | (uint32_t)inits[i][3] << 16 |
                  (uint32_t)inits[i][4] << 24;
    }
    if (write(idx_pipe[1], lidx, nl * sizeof lidx[0]) != (ssize_t)(nl * sizeof lidx[0]))
        die_errno("pipe to the forger");
    struct pollfd go = {go_pipe[0], POLLIN, 0};
    char gb;
    if (poll(&go, 1, 2000) != 1 || read(go_pipe[0], &gb, 1) != 1)
        fprintf(stderr, "attack: forge: the forger did not start within 2 s\n");
    uint64_t t0 = pure_now();
    for (uint32_t i = 0; i < nl; i++)
        sendto(c.fd, inits[i], ilen[i], 0, (const struct sockaddr *)&t.sin, sizeof t.sin);
    uint64_t until = t0 + (uint64_t)(o->timeout * 1e9), datagrams = 0;
    uint32_t up = 0, done = 0;
    while (done < nl && pure_now() < until) {
        struct pollfd p = {c.fd, POLLIN, 0};
        uint64_t d = pure_ctx_deadline(c.ctx), now = pure_now();
        int ms = d <= now ? 0 : (d - now) / 1000000 < 5 ? (int)((d - now) / 1000000) : 5;
        poll(&p, 1, ms);
        ctx_pump(c.ctx, c.fd, &datagrams);
        up = done = 0;
        for (uint32_t i = 0; i < nl; i++) {
            up += r[i].established != 0;
            done += r[i].established || r[i].closed;
        }
    }
    forge_report rep;
    memset(&rep, 0, sizeof rep);
    kill(child, SIGTERM);
    if (read(rep_pipe[0], &rep, sizeof rep) != (ssize_t)sizeof rep)
        fprintf(stderr, "attack: forge: no report from the forging process\n");
    waitpid(child, NULL, 0);
    tx.sent = rep.sent, tx.refused = rep.refused, tx.t0 = rep.t0, tx.t_last = rep.t_last;
    g.cookies = rep.cookies, g.rejects = rep.rejects;
    memcpy(f.kinds, rep.kinds, sizeof f.kinds);

    size_t k = 0;
    for (uint32_t i = 0; i < nl; i++)
        if (r[i].established)
            v[k++] = r[i].established - r[i].started;
    qsort(v, k, sizeof *v, cmp_u64);
    for (uint32_t i = 0; i < nl; i++)
        if (!r[i].established)
            fprintf(stderr, "attack: forge: link %u did not connect: %s\n", i,
                    r[i].closed ? pure_strerror(r[i].error) : "timeout");
    pure_guard_stats gs;
    pure_ctx_stats cs;
    memset(&gs, 0, sizeof gs);
    pure_ctx_guard_stats_get(c.ctx, &gs, sizeof gs);
    pure_ctx_stats_get(c.ctx, &cs);
    print_sent("forge", &tx);
    printf(", \"forged_cookie\": %" PRIu64 ", \"forged_reject\": %" PRIu64, g.cookies, g.rejects);
    print_kinds(&f);
    printf(", \"links\": %u, \"connected\": %u", nl, up);
    print_times(", ", v, k);
    printf(", \"client_datagrams_in\": %" PRIu64 ", \"client_datagrams_out\": %" PRIu64
           ", \"client_timers_fired\": %" PRIu64 ", \"client_cookie_replies_bad\": %" PRIu64
           ", \"client_rejects_bad\": %" PRIu64 ", \"client_dropped_unknown_link\": %" PRIu64
           ", \"client_dropped_malformed\": %" PRIu64 "}\n",
           cs.datagrams_in, cs.datagrams_out, cs.timers_fired, gs.cookie_replies_bad,
           gs.rejects_bad, cs.dropped_unknown_link, cs.dropped_malformed);
    fflush(stdout);
    for (uint32_t i = 0; i < nl; i++)
        if (r[i].link && !r[i].closed)
            pure_link_abort(r[i].link, 0, "done");
    ctx_flush(c.ctx, c.fd, pure_now(), NULL, NULL);
    pure_ctx_free(c.ctx);
    close(c.fd);
    close(idx_pipe[1]);
    close(rep_pipe[0]);
    flood_free(&f, keep);
    free(r), free(v);
    return up == nl ? 0 : 1;
}

/* ---- keys ------------------------------------------------------------------------------------ */

static int mode_keys(const opts *o)
{
    if (!o->out || !o->allow || !o->count)
        usage("%s", "keys needs --count N, --out FILE and --allow FILE");
    int pfd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *priv = pfd >= 0 ? fdopen(pfd, "w") : NULL, *pub = fopen(o->allow, "w");
    if (!priv || !pub)
        die_errno("keys: cannot write the files");
    for (uint32_t i = 0; i < o->count; i++) {
        uint8_t k[PURE_KEY_LEN], p[PURE_KEY_LEN];
        char t[45];
        if (pure_keygen(k) != 0 || pure_public_key(p, k) != 0)
            die("no randomness");
        pure_key_to_base64(t, k);
        fprintf(priv, "pure-priv:%s\n", t);
        pure_key_to_base64(t, p);
        fprintf(pub, "pure-pub:%s\n", t);
        memset(k, 0, sizeof k);
    }
    if (fclose(priv) != 0 || fclose(pub) != 0)
        die_errno("keys: write");
    printf("{\"mode\": \"keys\", \"count\": %u}\n", o->count);
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*run)(const opts *);
} modes[] = {{"keys", mode_keys},
             {"honest", mode_honest},
             {"flood", mode_flood},
             {"replay", mode_replay},
             {"cookie-reuse", mode_cookie_reuse},
             {"forge", mode_forge}};

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"to", required_argument, NULL, 't'},      {"peer-key", required_argument, NULL, 'P'},
        {"key", required_argument, NULL, 'k'},     {"keys", required_argument, NULL, 'K'},
        {"spoof", required_argument, NULL, 's'},   {"bind", required_argument, NULL, 'b'},
        {"service", required_argument, NULL, 'S'}, {"out", required_argument, NULL, 'o'},
        {"allow", required_argument, NULL, 'a'},   {"rate", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 'd'}, {"load", required_argument, NULL, 'L'},
        {"spacing", required_argument, NULL, 'g'}, {"timeout", required_argument, NULL, 'T'},
        {"pool", required_argument, NULL, 'p'},    {"count", required_argument, NULL, 'n'},
        {"links", required_argument, NULL, 'l'},   {"seed", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    opts o = {.rate = 50000,
              .seconds = 5,
              .load = 20000,
              .spacing = 0.02,
              .timeout = 10,
              .pool = 1024,
              .links = 16,
              .seed = 1};
    if (argc < 2)
        usage("%s", "no mode given");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    o.mode = argv[1];
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 't': o.to = optarg; break;
        case 'P': o.peer_key = optarg; break;
        case 'k': o.key = optarg; break;
        case 'K': o.keys = optarg; break;
        case 's': o.spoof = optarg; break;
        case 'b': o.bind = optarg; break;
        case 'S': o.service = optarg; break;
        case 'o': o.out = optarg; break;
        case 'a': o.allow = optarg; break;
        case 'r': o.rate = num("--rate", optarg, 1, 1e8); break;
        case 'd': o.seconds = num("--seconds", optarg, 0, 3600); break;
        case 'L': o.load = num("--load", optarg, 1, 1e8); break;
        case 'g': o.spacing = num("--spacing", optarg, 0, 60); break;
        case 'T': o.timeout = num("--timeout", optarg, 0.01, 3600); break;
        case 'p': o.pool = (uint32_t)num("--pool", optarg, 1, 4096); break;
        case 'n': o.count = (uint32_t)num("--count", optarg, 1, 100000); break;
        case 'l': o.links = (uint32_t)num("--links", optarg, 1, 64); break;
        case 'e': o.seed = (uint64_t)num("--seed", optarg, 0, 1e18); break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: usage("%s", "unknown option");
        }
    }
    if (optind < argc)
        usage("unexpected argument '%s'", argv[optind]);
    rng_s = o.seed;
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        if (strcmp(o.mode, modes[i].name) == 0)
            return modes[i].run(&o);
    return usage("unknown mode '%s'", o.mode);
}
