/* SPDX-License-Identifier: MIT */
/* udpfwd: a fault-injecting UDP forwarder and path emulator for end-to-end tests (in the spirit
 * of quicly's t/udpfw.c). Datagrams from a client (whoever last sent to --listen, or with
 * --clients N each of up to N client addresses) go to the server at --to ("up"), and the server's
 * replies go back to the client ("down"), one datagram at a time as received, with seeded loss,
 * bursts, reordering, duplication, delay, jitter, corruption, scheduled or commanded blackholes
 * and NAT rebinding, and optionally through a bottleneck per direction: a FIFO served at --rate,
 * drop-tail at --queue-packets / --queue-bytes, CoDel (RFC 8289, tools/codel.h) with ECN marking.
 * See docs/udpfwd.md for usage.
 *
 * Shape: one socket towards the clients, one per client (replaceable: rebinding) towards the
 * server, a signalfd and one timerfd, all under epoll. Every datagram is received straight into a
 * slot of a preallocated pool, waits in its direction's bottleneck queue if there is one, and is
 * then queued on a binary heap ordered by (due time, sequence), so that delays, jitter and
 * reordering share one path and nothing is allocated per datagram. The bottleneck keeps its own
 * schedule: each datagram leaves the queue when the one before it has finished serialising (not
 * when the timer happened to fire), so the rate holds however late a wakeup is.
 *
 * Exit status: 0 after SIGTERM/SIGINT, 1 on a runtime error (socket setup), 2 on usage errors. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "codel.h"

#define SLOT_BYTES 65536u     /* a UDP payload is at most 65535 bytes */
#define BURST_MAX_NS 50000000 /* a burst ends after N datagrams or 50 ms */
#define MAX_MS 600000.0       /* delays are capped at 10 minutes */
#define READ_BATCH 64         /* datagrams read per socket per wakeup, for fairness */
#define SOCK_BUF (4 << 20)
#define MAX_CLIENTS 1024
#define MAX_SERVERS 16 /* --to given more than once */

enum {
    UP = 0,
    DOWN = 1
};
static const char *const dir_name[2] = {"up", "down"};

/* The faults applied to one direction. Times in nanoseconds, probabilities in [0, 1]. */
struct faults {
    double loss;
    double burst_p;
    uint64_t burst_n;
    double reorder_p;
    uint64_t reorder_ns;
    double dup;
    uint64_t delay_ns;
    uint64_t jitter_ns;
    double corrupt;
    uint64_t bh_every_ns, bh_len_ns; /* scheduled blackhole; 0 = none */
    /* the bottleneck (rate 0: none) */
    uint64_t rate;                       /* bits per second of UDP payload */
    uint64_t queue_packets, queue_bytes; /* drop-tail limits; 0 = none */
    bool codel, ecn;
    uint64_t codel_target_ns, codel_interval_ns;
};

struct dir_stats {
    uint64_t in, out, bytes_in, bytes_out;
    uint64_t lost, burst, blackholed, no_client, queue_full, oversize, send_errors;
    uint64_t duplicated, corrupted, reordered;
    uint64_t queue_drop, codel_drop, ecn_marked, too_many_clients, queue_max;
};

struct qent {
    uint64_t t; /* when it entered the queue; once served, when it left it */
    uint32_t slot, len;
};

/* A direction's bottleneck: a FIFO ring of slots (a duplicated datagram is in it twice). The
 * first `served` entries have left the queue already, at times later than the newest arrival
 * admitted: the forwarder serves up to its clock, while datagrams that arrived before those
 * times may still wait in its socket (a stall); they stay counted, as they were in the queue
 * when those datagrams arrived, until an arrival passes their time (bneck_retire). */
struct bneck {
    struct qent *q;
    uint32_t head, len, cap;
    uint32_t served;
    uint64_t bytes;        /* of the datagrams waiting */
    uint64_t served_bytes; /* of the first `served` */
    uint64_t newest;       /* the newest arrival admitted */
    uint64_t busy_until;   /* the link serialises until then */
    bool idle_seen;        /* CoDel was told the queue was found empty */
    struct codel cd;
    struct qdelay_hist *hist;
};

struct dir_state {
    struct faults f;
    struct dir_stats st;
    uint64_t rng[4];      /* xoshiro256**, one stream per direction */
    uint64_t burst_left;  /* datagrams still to drop in the current burst */
    uint64_t burst_until; /* ... unless this time has passed */
    uint64_t last_due;    /* FIFO clamp: delay + jitter never reorders */
    struct bneck b;
};

struct slot {
    uint32_t len;
    uint8_t dir;
    uint8_t refs;    /* queue and heap entries pointing here: 1, or 2 when duplicated */
    uint8_t ecn;     /* the IP header's ECN bits as received (CE once marked) */
    uint16_t client; /* which client it comes from or goes to */
    uint8_t *buf;
};

/* What one client's datagrams met, per direction (the stats' "per_client", with --clients N):
 * how each flow through a shared bottleneck fared. */
struct client_stats {
    uint64_t in, out, bytes_out, dropped;
};

/* A client and its own socket towards its server (the server tells clients apart by it). */
struct client {
    struct sockaddr_storage addr;
    socklen_t len; /* 0: not seen yet (only client 0 of --clients 1 exists before that) */
    int fd;
    uint32_t server; /* index into fwd.servers: the n-th client goes to --to number n mod count */
    struct client_stats st[2];
};

struct server {
    struct sockaddr_storage addr;
    socklen_t len;
};

struct entry {
    uint64_t due, seq;
    uint32_t slot;
};

struct fwd {
    struct dir_state d[2];
    struct slot *slots;
    uint32_t *free_list, nfree, nslots;
    struct entry *heap;
    uint32_t nheap;
    uint64_t seq;
    uint8_t *scratch; /* receives datagrams dropped because the pool is empty */

    int epfd, client_fd, sig_fd, timer_fd;
    struct server servers[MAX_SERVERS];
    uint32_t nservers;
    struct client *clients;
    uint32_t nclients, max_clients; /* max_clients 1: the latest client (see docs/udpfwd.md) */

    uint64_t start, seed;
    uint64_t rebind_at; /* 0: none pending */
    uint64_t stats_every, next_stats;
    uint64_t armed; /* the timerfd's current deadline, UINT64_MAX when disarmed */
    bool blackhole; /* SIGUSR1 toggle */
    uint64_t rebinds, client_changes;
    const char *stats_path;
};

/* ---- small helpers ---- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void logmsg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("udpfwd: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* A uniform double in [0, 1): so "u < 1.0" always holds and "u < 0.0" never does. */
static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

static bool chance(struct dir_state *d, double p)
{
    return p > 0 && rng_unit(d->rng) < p;
}

/* ---- usage and option parsing ---- */

static void usage(FILE *out)
{
    fputs("usage: udpfwd --listen ADDR:PORT --to ADDR:PORT [--to ADDR:PORT ...] [options]\n"
          "Forwards UDP datagrams between a client (whoever last sent to --listen) and the server\n"
          "at --to, injecting faults. IPv6 addresses go in brackets: [::1]:4433.\n"
          "With --clients N and several --to, the clients are assigned to the servers in order\n"
          "of first appearance (the first to the first --to, ...; round robin beyond the last),\n"
          "all through the same bottleneck.\n"
          "Fault and bottleneck options apply to both directions, or with -up (client->server)\n"
          "or -down (server->client) appended to one only (e.g. --loss-up 0.1):\n"
          "  --loss P               drop each datagram with probability P\n"
          "  --burst P:N            with probability P drop the next N datagrams (a burst, <= 50 "
          "ms)\n"
          "  --reorder P:MS         with probability P delay a datagram by MS extra milliseconds\n"
          "  --dup P                send a datagram twice with probability P\n"
          "  --delay MS             delay every datagram by MS milliseconds\n"
          "  --jitter MS            add a uniform random 0..MS ms delay (order is kept)\n"
          "  --corrupt P            flip one random byte with probability P\n"
          "  --blackhole-every S:LEN  drop everything for LEN seconds every S seconds\n"
          "  --rate R               a bottleneck: serialise at R bits/s of UDP payload (suffix\n"
          "                         k, m, g or kbit, mbit, gbit: --rate 50mbit); faults apply\n"
          "                         before it, --delay and --jitter after it\n"
          "  --queue-packets N      the bottleneck's queue holds N datagrams (drop-tail)\n"
          "  --queue-bytes B        ... B bytes (either limit, or both; default: --queue)\n"
          "  --codel                CoDel (RFC 8289) at the queue's head: target 5 ms, interval\n"
          "                         100 ms (--codel-target MS, --codel-interval MS)\n"
          "  --ecn                  with --codel, mark ECN-capable datagrams CE instead of\n"
          "                         dropping them (ECN bits are forwarded in any case)\n"
          "Other options:\n"
          "  --clients N            keep up to N client addresses, each with its own socket\n"
          "                         towards the server, all sharing the bottleneck (default 1:\n"
          "                         only the latest client, which may move); the stats then\n"
          "                         count each client's datagrams (per_client)\n"
          "  --rebind-after S       after S seconds switch to a new socket (new source port)\n"
          "                         towards the server, as a NAT rebinding would\n"
          "  --seed N               seed for the random decisions (default: from the clock)\n"
          "  --stats FILE           write stats (one JSON line) to FILE instead of stderr\n"
          "  --stats-interval S     also write stats every S seconds\n"
          "  --queue N              datagrams held at once (default 4096; more are dropped)\n"
          "  --help                 this text\n"
          "Prints {\"port\": N} on stdout once listening. Signals: SIGUSR1 toggles a blackhole,\n"
          "SIGUSR2 rebinds now, SIGHUP writes stats now, SIGTERM/SIGINT write stats and exit.\n",
          out);
}

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("udpfwd: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n(udpfwd --help for usage)\n", stderr);
    va_end(ap);
    return -1;
}

/* Parses a finite decimal number that fills all of s. */
static bool parse_double(const char *s, double *out)
{
    char *end;
    if (*s == '\0')
        return false;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static int parse_prob(const char *opt, const char *s, double *out)
{
    if (!parse_double(s, out) || *out < 0 || *out > 1)
        return usage_error("%s: '%s' is not a probability between 0 and 1", opt, s);
    return 0;
}

static int parse_ms(const char *opt, const char *s, uint64_t *out_ns)
{
    double v;
    if (!parse_double(s, &v) || v < 0 || v > MAX_MS)
        return usage_error("%s: '%s' is not a number of milliseconds between 0 and %.0f", opt, s,
                           MAX_MS);
    *out_ns = (uint64_t)llround(v * 1e6);
    return 0;
}

static int parse_secs(const char *opt, const char *s, uint64_t *out_ns)
{
    double v;
    if (!parse_double(s, &v) || v <= 0 || v > 1e6)
        return usage_error("%s: '%s' is not a number of seconds above 0 (at most 1000000)", opt, s);
    *out_ns = (uint64_t)llround(v * 1e9);
    if (*out_ns == 0)
        return usage_error("%s: '%s' is below a nanosecond", opt, s);
    return 0;
}

/* Parses a rate in bits per second: a number with an optional k/m/g (or kbit/mbit/gbit, or bit)
 * suffix, decimal multiples. */
static int parse_rate(const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mul = 1;
    if (end == s || errno != 0 || !isfinite(v))
        goto bad;
    if (strcasecmp(end, "k") == 0 || strcasecmp(end, "kbit") == 0)
        mul = 1e3;
    else if (strcasecmp(end, "m") == 0 || strcasecmp(end, "mbit") == 0)
        mul = 1e6;
    else if (strcasecmp(end, "g") == 0 || strcasecmp(end, "gbit") == 0)
        mul = 1e9;
    else if (*end != '\0' && strcasecmp(end, "bit") != 0)
        goto bad;
    v *= mul;
    if (v < 8000 || v > 1e12)
        goto bad;
    *out = (uint64_t)llround(v);
    return 0;
bad:
    return usage_error("%s: '%s' is not a rate from 8kbit to 1000gbit (e.g. 50mbit)", opt, s);
}

/* Splits "A:B" at the last colon into two strings in buf. */
static int split_pair(const char *opt, const char *s, const char *form, char *buf, size_t cap,
                      const char **a, const char **b)
{
    size_t n = strlen(s);
    const char *colon = strrchr(s, ':');
    if (n >= cap)
        return usage_error("%s: value too long", opt);
    if (colon == NULL)
        return usage_error("%s: '%s' is not of the form %s", opt, s, form);
    memcpy(buf, s, n + 1);
    buf[colon - s] = '\0';
    *a = buf;
    *b = buf + (colon - s) + 1;
    return 0;
}

static int parse_fault(const char *base, const char *opt, const char *val, struct faults *f)
{
    char buf[128];
    const char *a = NULL, *b = NULL;
    if (strcmp(base, "loss") == 0)
        return parse_prob(opt, val, &f->loss);
    if (strcmp(base, "dup") == 0)
        return parse_prob(opt, val, &f->dup);
    if (strcmp(base, "corrupt") == 0)
        return parse_prob(opt, val, &f->corrupt);
    if (strcmp(base, "delay") == 0)
        return parse_ms(opt, val, &f->delay_ns);
    if (strcmp(base, "jitter") == 0)
        return parse_ms(opt, val, &f->jitter_ns);
    if (strcmp(base, "burst") == 0) {
        if (split_pair(opt, val, "P:N", buf, sizeof buf, &a, &b) < 0 ||
            parse_prob(opt, a, &f->burst_p) < 0)
            return -1;
        if (!parse_u64(b, &f->burst_n) || f->burst_n < 1 || f->burst_n > 1000000)
            return usage_error("%s: burst length '%s' is not a whole number from 1 to 1000000", opt,
                               b);
        return 0;
    }
    if (strcmp(base, "reorder") == 0) {
        if (split_pair(opt, val, "P:MS", buf, sizeof buf, &a, &b) < 0 ||
            parse_prob(opt, a, &f->reorder_p) < 0 || parse_ms(opt, b, &f->reorder_ns) < 0)
            return -1;
        return 0;
    }
    if (strcmp(base, "rate") == 0)
        return parse_rate(opt, val, &f->rate);
    if (strcmp(base, "queue-packets") == 0) {
        if (!parse_u64(val, &f->queue_packets) || f->queue_packets < 1 ||
            f->queue_packets > 1000000)
            return usage_error("%s: '%s' is not a whole number from 1 to 1000000", opt, val);
        return 0;
    }
    if (strcmp(base, "queue-bytes") == 0) {
        if (!parse_u64(val, &f->queue_bytes) || f->queue_bytes < 1 ||
            f->queue_bytes > ((uint64_t)1 << 36))
            return usage_error("%s: '%s' is not a whole number of bytes from 1 to 2^36", opt, val);
        return 0;
    }
    if (strcmp(base, "codel-target") == 0 || strcmp(base, "codel-interval") == 0) {
        uint64_t *t = base[6] == 't' ? &f->codel_target_ns : &f->codel_interval_ns;
        if (parse_ms(opt, val, t) < 0)
            return -1;
        if (*t == 0)
            return usage_error("%s: must be above 0 ms", opt);
        return 0;
    }
    if (strcmp(base, "codel") == 0) {
        f->codel = true;
        return 0;
    }
    if (strcmp(base, "ecn") == 0) {
        f->ecn = true;
        return 0;
    }
    if (strcmp(base, "blackhole-every") == 0) {
        if (split_pair(opt, val, "S:LEN", buf, sizeof buf, &a, &b) < 0 ||
            parse_secs(opt, a, &f->bh_every_ns) < 0 || parse_secs(opt, b, &f->bh_len_ns) < 0)
            return -1;
        if (f->bh_len_ns >= f->bh_every_ns)
            return usage_error("%s: LEN (%s s) must be shorter than the period S (%s s)", opt, b,
                               a);
        return 0;
    }
    return 1; /* not a fault option */
}

/* Resolves "ADDR:PORT" or "[ADDR6]:PORT". */
static int parse_addr(const char *opt, const char *s, bool port_zero_ok,
                      struct sockaddr_storage *out, socklen_t *len)
{
    char host[256];
    const char *port;
    size_t n = strlen(s);
    if (n >= sizeof host)
        return usage_error("%s: '%s' is too long", opt, s);
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return usage_error("%s: '%s' is not of the form [IPV6]:PORT", opt, s);
        memcpy(host, s + 1, (size_t)(close - s - 1));
        host[close - s - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon == NULL)
            return usage_error("%s: '%s' is not of the form ADDR:PORT", opt, s);
        if (memchr(s, ':', (size_t)(colon - s)) != NULL)
            return usage_error("%s: '%s': put an IPv6 address in brackets, e.g. [::1]:4433", opt,
                               s);
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
        port = colon + 1;
    }
    uint64_t p;
    if (host[0] == '\0')
        return usage_error("%s: '%s' has no address", opt, s);
    if (!parse_u64(port, &p) || p > 65535 || (p == 0 && !port_zero_ok))
        return usage_error("%s: '%s' is not a valid port in '%s'", opt, port, s);
    /* Numeric addresses only (and "localhost"): a test tool should never wait on a resolver. */
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM,
                             .ai_flags = AI_NUMERICSERV | AI_NUMERICHOST};
    struct addrinfo *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0)
        return usage_error("%s: '%s' is not an IPv4 or IPv6 address (%s)", opt, host,
                           gai_strerror(rc));
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

struct config {
    struct sockaddr_storage listen, to[MAX_SERVERS];
    socklen_t listen_len, to_len[MAX_SERVERS];
    uint32_t nto;
    bool have_listen, have_seed;
    uint64_t seed, rebind_after, stats_every, queue, clients;
    const char *stats_path;
    struct faults f[2];
};

static int parse_args(int argc, char **argv, struct config *c)
{
    memset(c, 0, sizeof *c);
    c->queue = 4096;
    c->clients = 1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val;
        char name[64];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0)
            return usage_error("unexpected argument '%s'", arg);
        const char *eq = strchr(arg, '=');
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        if (nlen >= sizeof name)
            return usage_error("unknown option '%s'", arg);
        memcpy(name, arg, nlen);
        name[nlen] = '\0';
        /* switches without a value */
        static const char *const flags[] = {"--codel", "--codel-up", "--codel-down",
                                            "--ecn",   "--ecn-up",   "--ecn-down"};
        bool flag = false;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            flag |= strcmp(name, flags[k]) == 0;
        if (flag) {
            if (eq)
                return usage_error("%s takes no value", name);
            val = "";
        } else if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", name);
            val = argv[++i];
        }
        const char *base = name + 2;
        if (strcmp(base, "listen") == 0) {
            if (parse_addr(name, val, true, &c->listen, &c->listen_len) < 0)
                return -1;
            c->have_listen = true;
        } else if (strcmp(base, "to") == 0) {
            if (c->nto == MAX_SERVERS)
                return usage_error("--to: at most %d servers", MAX_SERVERS);
            if (parse_addr(name, val, false, &c->to[c->nto], &c->to_len[c->nto]) < 0)
                return -1;
            c->nto++;
        } else if (strcmp(base, "seed") == 0) {
            if (!parse_u64(val, &c->seed))
                return usage_error("--seed: '%s' is not a whole number", val);
            c->have_seed = true;
        } else if (strcmp(base, "rebind-after") == 0) {
            if (parse_secs(name, val, &c->rebind_after) < 0)
                return -1;
        } else if (strcmp(base, "stats-interval") == 0) {
            if (parse_secs(name, val, &c->stats_every) < 0)
                return -1;
        } else if (strcmp(base, "stats") == 0) {
            if (val[0] == '\0')
                return usage_error("--stats: empty file name");
            c->stats_path = val;
        } else if (strcmp(base, "queue") == 0) {
            if (!parse_u64(val, &c->queue) || c->queue < 1 || c->queue > 65536)
                return usage_error("--queue: '%s' is not a whole number from 1 to 65536", val);
        } else if (strcmp(base, "clients") == 0) {
            if (!parse_u64(val, &c->clients) || c->clients < 1 || c->clients > MAX_CLIENTS)
                return usage_error("--clients: '%s' is not a whole number from 1 to %d", val,
                                   MAX_CLIENTS);
        } else {
            /* A fault option, for both directions or with -up / -down. */
            char fb[64];
            int which = 2; /* both */
            size_t bl = strlen(base);
            memcpy(fb, base, bl + 1);
            if (bl > 3 && strcmp(fb + bl - 3, "-up") == 0) {
                fb[bl - 3] = '\0';
                which = UP;
            } else if (bl > 5 && strcmp(fb + bl - 5, "-down") == 0) {
                fb[bl - 5] = '\0';
                which = DOWN;
            }
            for (int d = 0; d < 2; d++) {
                if (which != 2 && which != d)
                    continue;
                int rc = parse_fault(fb, name, val, &c->f[d]);
                if (rc < 0)
                    return -1;
                if (rc > 0)
                    return usage_error("unknown option '%s'", name);
            }
        }
    }
    if (!c->have_listen)
        return usage_error("--listen ADDR:PORT is required");
    if (c->nto == 0)
        return usage_error("--to ADDR:PORT is required");
    if (c->nto > c->clients)
        return usage_error("%u --to addresses need --clients N with N >= %u (one client per "
                           "server at least)",
                           c->nto, c->nto);
    for (int d = 0; d < 2; d++) {
        const struct faults *f = &c->f[d];
        if (f->rate == 0 && (f->queue_packets || f->queue_bytes || f->codel || f->ecn ||
                             f->codel_target_ns || f->codel_interval_ns))
            return usage_error("--queue-packets, --queue-bytes, --codel and --ecn need --rate "
                               "(in the %s direction)",
                               dir_name[d]);
        if ((f->ecn || f->codel_target_ns || f->codel_interval_ns) && !f->codel)
            return usage_error("--ecn, --codel-target and --codel-interval need --codel (in the "
                               "%s direction)",
                               dir_name[d]);
    }
    return 0;
}

/* ---- sockets ---- */

static const char *addr_str(const struct sockaddr_storage *a, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        port = ntohs(s->sin_port);
        snprintf(buf, cap, "%s:%u", host, port);
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        port = ntohs(s->sin6_port);
        snprintf(buf, cap, "[%s]:%u", host, port);
    } else {
        snprintf(buf, cap, "?");
    }
    return buf;
}

static unsigned local_port(int fd)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return 0;
    if (a.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&a)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
}

/* A non-blocking UDP socket with large buffers. GRO stays off (the default), so every datagram
 * is read, and forwarded, exactly as it was sent. */
static int udp_socket(int family)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int sz = SOCK_BUF;
    /* FORCE works for root beyond net.core.[rw]mem_max; otherwise take what the limit allows. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof sz) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    /* each datagram's TOS / traffic class comes with it, so its ECN bits can be forwarded (and
     * marked) */
    int on = 1;
    (void)setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof on);     /* IPv4, or v4-mapped on v6 */
    (void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on); /* recv_meta */
    if (family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof on);
    return fd;
}

static int epoll_add(int epfd, int fd, uint32_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

enum {
    TAG_CLIENT,
    TAG_SIGNAL,
    TAG_TIMER,
    TAG_SERVER /* + the client's index */
};

/* Opens a new socket towards the server for client i; the old one (if any) is closed only once
 * the new one holds its port, so the source port always changes. */
static int server_connect(struct fwd *w, uint32_t i)
{
    const struct server *sv = &w->servers[w->clients[i].server];
    int fd = udp_socket(sv->addr.ss_family);
    if (fd < 0) {
        logmsg("socket towards the server: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)&sv->addr, sv->len) < 0) {
        char a[80];
        logmsg("connect to %s: %s", addr_str(&sv->addr, a, sizeof a), strerror(errno));
        close(fd);
        return -1;
    }
    if (epoll_add(w->epfd, fd, TAG_SERVER + i) < 0) {
        logmsg("epoll_ctl: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (w->clients[i].fd >= 0)
        close(w->clients[i].fd); /* also leaves the epoll set */
    w->clients[i].fd = fd;
    return 0;
}

static void rebind(struct fwd *w)
{
    bool moved = false;
    for (uint32_t i = 0; i < w->nclients; i++) {
        unsigned old = local_port(w->clients[i].fd);
        if (server_connect(w, i) < 0) {
            logmsg("rebind failed; keeping source port %u", old);
            continue;
        }
        moved = true;
        logmsg("rebind: source port towards the server %u -> %u", old,
               local_port(w->clients[i].fd));
    }
    if (moved)
        w->rebinds++;
}

/* ---- stats ---- */

static void dir_json(FILE *f, const char *name, const struct dir_stats *s,
                     const struct qdelay_hist *h)
{
    uint64_t dropped = s->lost + s->burst + s->blackholed + s->no_client + s->queue_full +
                       s->oversize + s->send_errors + s->queue_drop + s->codel_drop +
                       s->too_many_clients;
    const struct {
        const char *key;
        uint64_t v;
    } field[] = {
        {"in", s->in},
        {"out", s->out},
        {"bytes_in", s->bytes_in},
        {"bytes_out", s->bytes_out},
        {"dropped", dropped}, /* the sum of the ten reasons that follow */
        {"lost", s->lost},
        {"burst", s->burst},
        {"blackholed", s->blackholed},
        {"no_client", s->no_client},
        {"queue_full", s->queue_full},
        {"oversize", s->oversize},
        {"send_errors", s->send_errors},
        {"queue_drop", s->queue_drop},
        {"codel_drop", s->codel_drop},
        {"too_many_clients", s->too_many_clients},
        {"duplicated", s->duplicated},
        {"corrupted", s->corrupted},
        {"reordered", s->reordered},
        {"ecn_marked", s->ecn_marked},
        {"queue_max", s->queue_max},
        /* queueing delay in the bottleneck of each datagram that left it, microseconds */
        {"qdelay_samples", h ? h->n : 0},
        {"qdelay_p50_us", h ? qdelay_quantile(h, 0.5) / 1000 : 0},
        {"qdelay_p95_us", h ? qdelay_quantile(h, 0.95) / 1000 : 0},
        {"qdelay_max_us", h ? h->max_ns / 1000 : 0},
    };
    fprintf(f, "\"%s\": {", name);
    for (size_t i = 0; i < sizeof field / sizeof field[0]; i++)
        fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", field[i].key, field[i].v);
    fputc('}', f);
}

static void stats_write_to(struct fwd *w, FILE *f)
{
    uint32_t pending[2] = {0, 0};
    for (uint32_t i = 0; i < w->nheap; i++)
        pending[w->slots[w->heap[i].slot].dir]++;
    pending[UP] += w->d[UP].b.len - w->d[UP].b.served;
    pending[DOWN] += w->d[DOWN].b.len - w->d[DOWN].b.served;
    fprintf(f, "{\"elapsed\": %.3f, \"seed\": %" PRIu64 ", ", (double)(now_ns() - w->start) / 1e9,
            w->seed);
    dir_json(f, "up", &w->d[UP].st, w->d[UP].b.hist);
    fputs(", ", f);
    dir_json(f, "down", &w->d[DOWN].st, w->d[DOWN].b.hist);
    fprintf(f,
            ", \"pending_up\": %u, \"pending_down\": %u, \"rebinds\": %" PRIu64
            ", \"client_changes\": %" PRIu64 ", \"clients\": %u, \"blackhole\": %s",
            pending[UP], pending[DOWN], w->rebinds, w->client_changes,
            w->max_clients == 1 ? (w->clients[0].len != 0) : w->nclients,
            w->blackhole ? "true" : "false");
    if (w->max_clients > 1) {
        /* each flow through the shared bottleneck: its address, its server (the --to index) and
         * its datagrams per direction (dropped: for any reason, after it was known) */
        fputs(", \"per_client\": [", f);
        for (uint32_t i = 0; i < w->nclients; i++) {
            const struct client *c = &w->clients[i];
            char a[80];
            fprintf(f, "%s{\"addr\": \"%s\", \"server\": %u", i ? ", " : "",
                    addr_str(&c->addr, a, sizeof a), c->server);
            for (int d = 0; d < 2; d++)
                fprintf(f,
                        ", \"%s\": {\"in\": %" PRIu64 ", \"out\": %" PRIu64
                        ", \"bytes_out\": %" PRIu64 ", \"dropped\": %" PRIu64 "}",
                        dir_name[d], c->st[d].in, c->st[d].out, c->st[d].bytes_out,
                        c->st[d].dropped);
            fputc('}', f);
        }
        fputc(']', f);
    }
    fputs("}\n", f);
}

/* Writes one JSON line: to stderr, or replaces --stats FILE whole (via a rename, so a reader
 * never sees half a line). */
static void stats_write(struct fwd *w)
{
    if (w->stats_path == NULL) {
        stats_write_to(w, stderr);
        return;
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", w->stats_path) >= sizeof tmp) {
        logmsg("--stats: path too long");
        return;
    }
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        logmsg("cannot write stats to %s: %s", tmp, strerror(errno));
        return;
    }
    stats_write_to(w, f);
    if (fclose(f) != 0 || rename(tmp, w->stats_path) != 0) {
        logmsg("cannot write stats to %s: %s", w->stats_path, strerror(errno));
        (void)unlink(tmp);
    }
}

/* ---- the delay heap: entries ordered by (due, seq) ---- */

static bool entry_before(const struct entry *a, const struct entry *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_push(struct fwd *w, uint64_t due, uint32_t slot)
{
    uint32_t i = w->nheap++;
    struct entry e = {.due = due, .seq = w->seq++, .slot = slot};
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!entry_before(&e, &w->heap[p]))
            break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = e;
}

static struct entry heap_pop(struct fwd *w)
{
    struct entry top = w->heap[0], last = w->heap[--w->nheap];
    uint32_t i = 0, n = w->nheap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && entry_before(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!entry_before(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n > 0)
        w->heap[i] = last;
    return top;
}

/* The counters of the client slot idx comes from or goes to, in its direction. */
static struct client_stats *client_st(struct fwd *w, uint32_t idx)
{
    const struct slot *s = &w->slots[idx];
    return &w->clients[s->client].st[s->dir];
}

static void slot_release(struct fwd *w, uint32_t idx)
{
    if (--w->slots[idx].refs == 0)
        w->free_list[w->nfree++] = idx;
}

/* ---- the data path ---- */

static bool blackholed(struct fwd *w, const struct faults *f, uint64_t now)
{
    if (w->blackhole)
        return true;
    if (f->bh_every_ns == 0)
        return false;
    uint64_t e = now - w->start;
    return e >= f->bh_every_ns && e % f->bh_every_ns < f->bh_len_ns;
}

/* True when a datagram to `a` leaves as IPv4 (also from an IPv6 socket, to a mapped address). */
static bool is_ipv4(const struct sockaddr_storage *a)
{
    return a->ss_family == AF_INET ||
           (a->ss_family == AF_INET6 &&
            IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)a)->sin6_addr));
}

/* Sends one datagram to `to` (through fd as it is connected, when connected), with its ECN bits
 * in the TOS byte / traffic class when they are set. */
static ssize_t send_ecn(int fd, const uint8_t *buf, size_t len, const struct sockaddr_storage *to,
                        socklen_t tolen, bool connected, uint8_t ecn)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr m = {.msg_name = connected ? NULL : (void *)to,
                       .msg_namelen = connected ? 0 : tolen,
                       .msg_iov = &iov,
                       .msg_iovlen = 1};
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    if (ecn != 0) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.b;
        m.msg_controllen = sizeof ctl.b;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = is_ipv4(to) ? IPPROTO_IP : IPPROTO_IPV6;
        c->cmsg_type = is_ipv4(to) ? IP_TOS : IPV6_TCLASS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        int v = ecn;
        memcpy(CMSG_DATA(c), &v, sizeof v);
    }
    return sendmsg(fd, &m, 0);
}

static void transmit(struct fwd *w, uint32_t idx)
{
    struct slot *s = &w->slots[idx];
    struct dir_stats *st = &w->d[s->dir].st;
    const struct client *c = &w->clients[s->client];
    ssize_t n;
    if (s->dir == UP) {
        n = send_ecn(c->fd, s->buf, s->len, &w->servers[c->server].addr, w->servers[c->server].len,
                     true, s->ecn);
    } else {
        if (c->len == 0) {
            st->no_client++;
            client_st(w, idx)->dropped++;
            return;
        }
        n = send_ecn(w->client_fd, s->buf, s->len, &c->addr, c->len, false, s->ecn);
    }
    if (n < 0) {
        /* A full buffer (EAGAIN, ENOBUFS) or an ICMP error from an earlier datagram
         * (ECONNREFUSED): a router drops the datagram and carries on, and so do we. */
        st->send_errors++;
        client_st(w, idx)->dropped++;
        return;
    }
    st->out++;
    st->bytes_out += (uint64_t)n;
    client_st(w, idx)->out++;
    client_st(w, idx)->bytes_out += (uint64_t)n;
}

static void flush_due(struct fwd *w, uint64_t now)
{
    while (w->nheap > 0 && w->heap[0].due <= now) {
        struct entry e = heap_pop(w);
        transmit(w, e.slot);
        slot_release(w, e.slot);
    }
}

/* Puts one copy of slot idx on the delay heap: it arrived (or left the bottleneck) at t. */
static void schedule(struct fwd *w, struct dir_state *d, uint32_t idx, uint64_t t)
{
    const struct faults *f = &d->f;
    uint64_t due = t + f->delay_ns;
    if (f->jitter_ns > 0)
        due += (uint64_t)(rng_unit(d->rng) * (double)f->jitter_ns);
    if (due < d->last_due)
        due = d->last_due; /* jitter alone never reorders */
    d->last_due = due;
    if (chance(d, f->reorder_p)) {
        due += f->reorder_ns; /* not recorded in last_due: later datagrams overtake it */
        d->st.reordered++;
    }
    heap_push(w, due, idx);
}

/* ---- the bottleneck: a FIFO served at the direction's rate ---- */

/* Forgets the served entries that had left the queue by time t. */
static void bneck_retire(struct bneck *b, uint64_t t)
{
    while (b->served > 0 && b->q[b->head].t <= t) {
        b->served_bytes -= b->q[b->head].len;
        b->head = (b->head + 1) % b->cap;
        b->len--;
        b->served--;
    }
}

/* One copy of slot idx enters the queue at now (when it arrived), or is dropped at its tail. */
static void bneck_push(struct fwd *w, struct dir_state *d, uint32_t idx, uint64_t now)
{
    struct bneck *b = &d->b;
    uint32_t len = w->slots[idx].len;
    if (now > b->newest)
        b->newest = now;
    bneck_retire(b, now);
    if (b->len == b->cap && b->served > 0)
        bneck_retire(b, b->q[b->head].t); /* the ring is full: forget the oldest left */
    if ((d->f.queue_packets && b->len >= d->f.queue_packets) ||
        (d->f.queue_bytes && b->bytes + b->served_bytes + len > d->f.queue_bytes) ||
        b->len == b->cap) {
        d->st.queue_drop++;
        client_st(w, idx)->dropped++;
        slot_release(w, idx);
        return;
    }
    b->q[(b->head + b->len) % b->cap] = (struct qent){.t = now, .slot = idx, .len = len};
    b->len++;
    b->bytes += len;
    if (b->len > d->st.queue_max)
        d->st.queue_max = b->len;
}

/* When the first waiting datagram leaves the queue: once the link is free, and not before it
 * arrived. */
static uint64_t bneck_next(const struct bneck *b)
{
    if (b->len == b->served)
        return UINT64_MAX;
    uint64_t enq = b->q[(b->head + b->served) % b->cap].t;
    return b->busy_until > enq ? b->busy_until : enq;
}

/* Serves the queue up to now, on its own schedule: each datagram leaves at the time the one
 * before it finished serialising (CoDel judging it then), and goes on to the delay heap due when
 * it has finished serialising itself. */
static void bneck_serve(struct fwd *w, struct dir_state *d, uint64_t now)
{
    struct bneck *b = &d->b;
    for (;;) {
        bneck_retire(b, b->newest);
        if (b->len == b->served) {
            /* the link's next dequeue finds the queue empty (RFC 8289's dequeue of NULL) */
            if (!b->idle_seen && b->busy_until <= now) {
                codel_empty(&b->cd);
                b->idle_seen = true;
            }
            return;
        }
        uint64_t t = bneck_next(b);
        if (t > now)
            return;
        struct qent *e = &b->q[(b->head + b->served) % b->cap];
        struct slot *s = &w->slots[e->slot];
        uint32_t idx = e->slot;
        uint64_t sojourn = t - e->t;
        e->t = t; /* it leaves the queue now (bneck_retire) */
        b->served++;
        b->bytes -= e->len;
        b->served_bytes += e->len;
        b->idle_seen = false;
        if (d->f.codel) {
            int v = codel_judge(&b->cd, t, sojourn, b->bytes, s->ecn != 0);
            if (v == CODEL_DROP) {
                d->st.codel_drop++;
                client_st(w, idx)->dropped++;
                slot_release(w, idx);
                continue;
            }
            if (v == CODEL_MARK) {
                s->ecn = 3; /* CE */
                d->st.ecn_marked++;
            }
        }
        qdelay_add(b->hist, sojourn);
        b->busy_until = t + (uint64_t)s->len * 8 * 1000000000u / d->f.rate;
        schedule(w, d, idx, b->busy_until);
    }
}

/* Queues one received datagram (in slot idx) through the faults of its direction. */
static void admit(struct fwd *w, uint32_t idx, uint64_t now)
{
    struct slot *s = &w->slots[idx];
    struct dir_state *d = &w->d[s->dir];
    const struct faults *f = &d->f;

    if (s->dir == DOWN && w->clients[s->client].len == 0) {
        d->st.no_client++;
        goto drop;
    }
    if (blackholed(w, f, now)) {
        d->st.blackholed++;
        goto drop;
    }
    if (d->burst_left > 0 && now < d->burst_until) {
        d->burst_left--;
        d->st.burst++;
        goto drop;
    }
    d->burst_left = 0;
    if (chance(d, f->burst_p)) {
        /* This datagram is the first of the burst's N. */
        d->burst_left = f->burst_n - 1;
        d->burst_until = now + BURST_MAX_NS;
        d->st.burst++;
        goto drop;
    }
    if (chance(d, f->loss)) {
        d->st.lost++;
        goto drop;
    }
    if (s->len > 0 && chance(d, f->corrupt)) {
        uint32_t at = (uint32_t)(rng_next(d->rng) % s->len);
        s->buf[at] ^= (uint8_t)(1 + rng_next(d->rng) % 255); /* never 0: the byte changes */
        d->st.corrupted++;
    }
    int copies = 1;
    if (chance(d, f->dup)) {
        copies = 2;
        d->st.duplicated++;
    }
    s->refs = (uint8_t)copies;
    for (int c = 0; c < copies; c++) {
        if (f->rate != 0)
            bneck_push(w, d, idx, now);
        else
            schedule(w, d, idx, now);
    }
    return;
drop:
    client_st(w, idx)->dropped++;
    w->free_list[w->nfree++] = idx;
}

static bool same_addr(const struct sockaddr_storage *a, socklen_t alen,
                      const struct sockaddr_storage *b, socklen_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}

/* What a received datagram's control messages say, in one walk: its ECN bits (IP_TOS /
 * IPV6_TCLASS) and when it reached the forwarder's socket, on now_ns()'s clock: the kernel's
 * receive time (SO_TIMESTAMPNS, CLOCK_REALTIME) moved back from now by its age. So a stall of
 * this process (a busy machine) delays datagrams, as any forwarding does, but does not idle the
 * emulated link while they wait in the socket: the bottleneck serves them from the moment they
 * arrived. No timestamp, or one from the future (the wall clock stepped), is now. */
static void recv_meta(struct msghdr *m, uint64_t now, uint8_t *ecn, uint64_t *arrived)
{
    bool have_ecn = false; /* the first TOS / traffic class message counts */
    *ecn = 0;
    *arrived = now;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c != NULL; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec ts, real;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            clock_gettime(CLOCK_REALTIME, &real);
            int64_t age =
                (int64_t)(real.tv_sec - ts.tv_sec) * 1000000000 + (real.tv_nsec - ts.tv_nsec);
            if (age > 0 && (uint64_t)age < now)
                *arrived = now - (uint64_t)age;
        } else if (!have_ecn && ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) ||
                                 (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS))) {
            have_ecn = true;
            int v = 0;
            if (c->cmsg_len >= CMSG_LEN(sizeof(int)))
                memcpy(&v, CMSG_DATA(c), sizeof v);
            else if (c->cmsg_len >= CMSG_LEN(1))
                v = *(const uint8_t *)CMSG_DATA(c); /* IP_TOS comes as one byte */
            *ecn = (uint8_t)(v & 3);
        }
    }
}

/* The client a datagram from `from` belongs to: with --clients 1 the one client, who becomes
 * `from`; otherwise the client with that address, added (with its own socket towards the server)
 * while there is room. Returns -1 when there is none. */
static int client_of(struct fwd *w, const struct sockaddr_storage *from, socklen_t flen)
{
    char a[80];
    if (w->max_clients == 1) {
        struct client *c = &w->clients[0];
        if (!same_addr(from, flen, &c->addr, c->len)) {
            if (c->len != 0)
                w->client_changes++;
            memcpy(&c->addr, from, flen);
            c->len = flen;
            logmsg("client is %s", addr_str(from, a, sizeof a));
        }
        return 0;
    }
    for (uint32_t i = 0; i < w->nclients; i++)
        if (same_addr(from, flen, &w->clients[i].addr, w->clients[i].len))
            return (int)i;
    if (w->nclients == w->max_clients)
        return -1;
    uint32_t i = w->nclients;
    w->clients[i].server = i % w->nservers; /* in order of first appearance (docs/udpfwd.md) */
    if (server_connect(w, i) < 0)
        return -1;
    memcpy(&w->clients[i].addr, from, flen);
    w->clients[i].len = flen;
    w->nclients++;
    char b[80];
    logmsg("client %u is %s (source port %u towards the server %s)", i, addr_str(from, a, sizeof a),
           local_port(w->clients[i].fd),
           addr_str(&w->servers[w->clients[i].server].addr, b, sizeof b));
    return (int)i;
}

/* Reads from the socket facing the clients (UP) or from client ci's socket facing the server. */
static void read_socket(struct fwd *w, int dir, uint32_t ci)
{
    for (int i = 0; i < READ_BATCH; i++) {
        int fd = dir == UP ? w->client_fd : w->clients[ci].fd;
        bool have_slot = w->nfree > 0;
        uint32_t idx = have_slot ? w->free_list[w->nfree - 1] : 0;
        uint8_t *buf = have_slot ? w->slots[idx].buf : w->scratch;
        struct sockaddr_storage from;
        union {
            char b[CMSG_SPACE(sizeof(int)) * 2 + CMSG_SPACE(sizeof(struct timespec))];
            struct cmsghdr align;
        } ctl;
        struct iovec iov = {.iov_base = buf, .iov_len = SLOT_BYTES};
        struct msghdr m = {.msg_name = &from,
                           .msg_namelen = sizeof from,
                           .msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = ctl.b,
                           .msg_controllen = sizeof ctl.b};
        ssize_t n = recvmsg(fd, &m, MSG_TRUNC);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            /* ICMP errors (ECONNREFUSED while the server is not listening) and the like. */
            if (errno == EINTR || errno == ECONNREFUSED || errno == EHOSTUNREACH ||
                errno == ENETUNREACH)
                continue;
            logmsg("receive (%s): %s", dir_name[dir], strerror(errno));
            return;
        }
        uint64_t now = now_ns();
        struct dir_state *d = &w->d[dir];
        d->st.in++;
        d->st.bytes_in += (uint64_t)n;
        int client = (int)ci;
        if (dir == UP && (client = client_of(w, &from, m.msg_namelen)) < 0) {
            d->st.too_many_clients++;
            continue;
        }
        struct client_stats *cs = &w->clients[client].st[dir];
        cs->in++;
        if (!have_slot) {
            d->st.queue_full++;
            cs->dropped++;
            continue;
        }
        if (n > (ssize_t)SLOT_BYTES) { /* only an IPv6 jumbogram could be */
            d->st.oversize++;
            cs->dropped++;
            continue;
        }
        w->nfree--;
        w->slots[idx].len = (uint32_t)n;
        w->slots[idx].dir = (uint8_t)dir;
        w->slots[idx].refs = 1;
        uint64_t arrived;
        recv_meta(&m, now, &w->slots[idx].ecn, &arrived);
        w->slots[idx].client = (uint16_t)client;
        if (d->f.rate != 0)
            bneck_serve(w, d, arrived); /* the queue as it was when this one arrived */
        admit(w, idx, arrived);
        if (d->f.rate != 0)
            bneck_serve(w, d, now); /* an idle link takes it at once */
        flush_due(w, now);          /* keeps undelayed datagrams prompt and in order */
    }
}

/* Arms the timerfd for the earliest of: the heap's top, the pending rebind, the next stats. */
static void arm_timer(struct fwd *w)
{
    uint64_t next = UINT64_MAX;
    if (w->nheap > 0)
        next = w->heap[0].due;
    for (int d = 0; d < 2; d++) {
        uint64_t b = bneck_next(&w->d[d].b);
        if (b < next)
            next = b;
    }
    if (w->rebind_at != 0 && w->rebind_at < next)
        next = w->rebind_at;
    if (w->stats_every != 0 && w->next_stats < next)
        next = w->next_stats;
    if (next == w->armed)
        return;
    struct itimerspec its = {{0, 0}, {0, 0}};
    if (next != UINT64_MAX) {
        if (next == 0)
            next = 1; /* 0 would disarm */
        its.it_value.tv_sec = (time_t)(next / 1000000000u);
        its.it_value.tv_nsec = (long)(next % 1000000000u);
    }
    if (timerfd_settime(w->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
        w->armed = next;
}

static void on_timer(struct fwd *w)
{
    uint64_t expirations;
    if (read(w->timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        logmsg("timerfd: %s", strerror(errno));
    w->armed = UINT64_MAX;
    uint64_t now = now_ns();
    for (int d = 0; d < 2; d++)
        if (w->d[d].f.rate != 0)
            bneck_serve(w, &w->d[d], now);
    flush_due(w, now);
    if (w->rebind_at != 0 && now >= w->rebind_at) {
        w->rebind_at = 0;
        rebind(w);
    }
    if (w->stats_every != 0 && now >= w->next_stats) {
        stats_write(w);
        while (w->next_stats <= now)
            w->next_stats += w->stats_every;
    }
}

/* Returns true when the forwarder should exit. */
static bool on_signal(struct fwd *w)
{
    struct signalfd_siginfo si;
    while (read(w->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        switch (si.ssi_signo) {
        case SIGUSR1:
            w->blackhole = !w->blackhole;
            logmsg("blackhole %s", w->blackhole ? "on" : "off");
            break;
        case SIGUSR2: rebind(w); break;
        case SIGHUP: stats_write(w); break;
        case SIGTERM:
        case SIGINT: return true;
        default: break;
        }
    }
    return false;
}

/* ---- setup ---- */

static int fwd_init(struct fwd *w, const struct config *c)
{
    memset(w, 0, sizeof *w);
    w->epfd = w->client_fd = w->sig_fd = w->timer_fd = -1;
    w->armed = UINT64_MAX;
    w->start = now_ns();
    w->seed = c->have_seed ? c->seed : (w->start ^ ((uint64_t)getpid() << 32));
    w->stats_path = c->stats_path;
    for (int d = 0; d < 2; d++) {
        uint64_t sm = w->seed ^ (d == UP ? 0x7570u : 0x646f776eu);
        w->d[d].f = c->f[d];
        for (int k = 0; k < 4; k++)
            w->d[d].rng[k] = splitmix64(&sm);
    }

    /* The pool: buffers are reserved, not touched, and reused last-in first-out, so resident
     * memory follows the datagrams actually held rather than --queue. */
    w->nslots = (uint32_t)c->queue;
    size_t bytes = (size_t)(w->nslots + 1) * SLOT_BYTES;
    uint8_t *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    w->slots = calloc(w->nslots, sizeof *w->slots);
    w->free_list = calloc(w->nslots, sizeof *w->free_list);
    w->heap = calloc(2 * (size_t)w->nslots, sizeof *w->heap);
    if (mem == MAP_FAILED || !w->slots || !w->free_list || !w->heap) {
        logmsg("cannot allocate a pool of %u datagrams", w->nslots);
        return -1;
    }
    for (int d = 0; d < 2; d++) {
        const struct faults *f = &c->f[d];
        struct bneck *b = &w->d[d].b;
        if (f->rate == 0)
            continue;
        b->cap = 2 * w->nslots; /* a duplicated datagram is queued twice */
        b->q = calloc(b->cap, sizeof *b->q);
        b->hist = calloc(1, sizeof *b->hist);
        if (!b->q || !b->hist) {
            logmsg("cannot allocate the bottleneck queue");
            return -1;
        }
        codel_init(&b->cd, f->codel_target_ns, f->codel_interval_ns, 1500, f->ecn);
    }
    /* The bottleneck's schedule is kept in virtual terms, but a timer that fires 50 us late (the
     * default timer slack) still delays each datagram by that much: ask for no slack. */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    w->max_clients = (uint32_t)c->clients;
    w->clients = calloc(w->max_clients, sizeof *w->clients);
    if (!w->clients) {
        logmsg("cannot allocate %u clients", w->max_clients);
        return -1;
    }
    for (uint32_t i = 0; i < w->max_clients; i++)
        w->clients[i].fd = -1;
    for (uint32_t i = 0; i < w->nslots; i++) {
        w->slots[i].buf = mem + (size_t)i * SLOT_BYTES;
        w->free_list[i] = w->nslots - 1 - i; /* slot 0 on top */
    }
    w->nfree = w->nslots;
    w->scratch = mem + (size_t)w->nslots * SLOT_BYTES;

    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0) {
        logmsg("epoll_create1: %s", strerror(errno));
        return -1;
    }
    char a[80];
    w->client_fd = udp_socket(c->listen.ss_family);
    if (w->client_fd < 0 ||
        bind(w->client_fd, (const struct sockaddr *)&c->listen, c->listen_len) < 0) {
        logmsg("cannot listen on %s: %s", addr_str(&c->listen, a, sizeof a), strerror(errno));
        return -1;
    }
    if (epoll_add(w->epfd, w->client_fd, TAG_CLIENT) < 0) {
        logmsg("epoll_ctl: %s", strerror(errno));
        return -1;
    }
    w->nservers = c->nto;
    for (uint32_t i = 0; i < c->nto; i++) {
        memcpy(&w->servers[i].addr, &c->to[i], c->to_len[i]);
        w->servers[i].len = c->to_len[i];
    }
    if (w->max_clients == 1) {
        /* one client, whoever it is: its socket towards the server is open from the start */
        w->nclients = 1;
        if (server_connect(w, 0) < 0)
            return -1;
    }

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGHUP);
    /* main blocked these before calling us, so none is lost at startup. */
    w->sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    w->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (w->sig_fd < 0 || w->timer_fd < 0 || epoll_add(w->epfd, w->sig_fd, TAG_SIGNAL) < 0 ||
        epoll_add(w->epfd, w->timer_fd, TAG_TIMER) < 0) {
        logmsg("signalfd/timerfd: %s", strerror(errno));
        return -1;
    }
    if (c->rebind_after != 0)
        w->rebind_at = w->start + c->rebind_after;
    if (c->stats_every != 0) {
        w->stats_every = c->stats_every;
        w->next_stats = w->start + c->stats_every;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct config c;
    if (parse_args(argc, argv, &c) < 0)
        return 2;

    /* Block the control signals before anything else, so they queue for the signalfd. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    static struct fwd w;
    if (fwd_init(&w, &c) < 0)
        return 1;
    printf("{\"port\": %u}\n", local_port(w.client_fd));
    if (fflush(stdout) != 0)
        logmsg("stdout: %s", strerror(errno));

    bool done = false;
    while (!done) {
        arm_timer(&w);
        struct epoll_event ev[8];
        int n = epoll_wait(w.epfd, ev, 8, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            logmsg("epoll_wait: %s", strerror(errno));
            return 1;
        }
        for (int i = 0; i < n && !done; i++) {
            switch (ev[i].data.u32) {
            case TAG_CLIENT: read_socket(&w, UP, 0); break;
            case TAG_TIMER: on_timer(&w); break;
            case TAG_SIGNAL: done = on_signal(&w); break;
            default: read_socket(&w, DOWN, ev[i].data.u32 - TAG_SERVER); break;
            }
        }
    }
    stats_write(&w);
    return 0;
}
