/* SPDX-License-Identifier: MIT */
/* spray: sends junk datagrams at a Pure listener while real traffic runs, for the end-to-end
 * robustness test (tests/scripts/e2e_spray.sh). Only to the one address given with --to.
 *
 *   spray --to ADDR:PORT [--listen ADDR:PORT] [--rate N|line] [--seconds S] [--junk-seconds S]
 *         [--seed N] [--init-replays N] [--race N]
 *
 * With --listen it is also a plain relay (no faults): a client that sends to --listen reaches
 * --to and gets the replies, one datagram at a time. The relay captures the client's INIT and
 * its DATA packets, which gives the junk real material: the live link's receiver index, mutated
 * copies of the real INIT and of real DATA packets, and replays of old and recent DATA packets.
 *
 * Kinds of junk (each counted in the exit stats):
 *   random       random bytes, 0..1500 long (0: an empty datagram)
 *   truncated    a valid type byte (0x01-0x04, 0x08, 0x09) and fewer bytes than that type needs,
 *                or a prefix of the captured INIT
 *   typed        a valid type byte, a random link index and a random body of a plausible length
 *   live_index   (relay) a valid type byte with the live link's receiver index, random body: a
 *                DATA of this kind has a random packet number and fails authentication
 *   init_mutated (relay) the captured INIT with 1-4 bytes of its Noise message changed, cut
 *                short, extended, with another sender index, or with a random cookie (which
 *                still authenticates)
 *   init_replayed (relay) the captured INIT unchanged; with the random-cookie copies at most
 *                --init-replays (default 100) INITs that authenticate
 *   data_mutated (relay) a captured DATA packet with one byte changed
 *   data_old     (relay) a captured DATA packet at least 4096 packets older than the newest one
 *                relayed: outside the replay window
 *   data_recent  (relay) a DATA packet relayed a moment ago, sent again from the relay's own
 *                socket (the link's real peer address): a duplicate
 * --race N (not junk; off by default): N times, a copy of a fresh DATA packet goes out from the
 * spray socket just ahead of the original, as an on-path attacker could race it.
 * Everything but data_recent goes out from a separate socket (another source port), so none of
 * it may move the link's path. Replies from the server to that socket (REJECT, RESP, COOKIE)
 * are read and counted by type.
 *
 * Prints {"port": N} (the relay's port, or the spray socket's without --listen) on stdout once
 * ready, sprays --rate datagrams per second (default 20000; `line`: as fast as the socket takes
 * them, 64 between two looks at the relay, for the attack suite's junk-during-drain) until
 * SIGTERM/SIGINT or --seconds (--junk-seconds: the junk stops after that many seconds, the relay
 * goes on), then prints one JSON line of counts (with the rate reached while junk was sent) and
 * exits 0. Exit 1 on socket errors, 2 on usage errors. */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXD 1500    /* largest junk / captured datagram */
#define RING 8192    /* captured DATA packets kept */
#define OLD_GAP 4096 /* data_old replays at least this many packets back */
#define SOCK_BUF (4 << 20)

enum {
    K_RANDOM,
    K_TRUNC,
    K_TYPED,
    K_LIVE,
    K_INIT_MUT,
    K_INIT_REPLAY,
    K_DATA_MUT,
    K_DATA_OLD,
    K_DATA_RECENT,
    K_COUNT
};
static const char *const kind_name[K_COUNT] = {"random",       "truncated",    "typed",
                                               "live_index",   "init_mutated", "init_replayed",
                                               "data_mutated", "data_old",     "data_recent"};
static const uint8_t types[] = {0x01, 0x02, 0x03, 0x04, 0x08, 0x09};

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t rng_s;
static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull);
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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "spray: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: spray --to ADDR:PORT [--listen ADDR:PORT] [--rate N|line] "
                    "[--seconds S] [--junk-seconds S] [--seed N] [--init-replays N] [--race N]\n");
    return 2;
}

/* Numeric "A.B.C.D:PORT" or "[V6]:PORT". Returns 0 or -1. */
static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[128];
    const char *colon, *h = s;
    size_t hl;
    if (*s == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return -1;
        h = s + 1;
        hl = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - s);
    }
    if (hl == 0 || hl >= sizeof host || !colon[1])
        return -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    struct addrinfo hints, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
        return -1;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static int udp_socket(int family)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int v = SOCK_BUF;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) != 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    return fd;
}

static unsigned local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) != 0)
        return 0;
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
}

struct cap {
    uint16_t len;
    uint8_t d[MAXD];
};

static struct {
    int spray, cli, srv; /* sockets; cli/srv -1 without --listen */
    struct sockaddr_storage to, client;
    socklen_t to_len, client_len;
    uint8_t init[MAXD];
    size_t init_len;
    uint32_t live_index; /* the server's index for the relayed link; 0: none */
    struct cap *ring;    /* captured DATA packets, by relay sequence */
    uint64_t ring_seq;   /* DATA packets captured so far */
    uint64_t sent[K_COUNT], send_errors, replies[256], relayed_up, relayed_down;
    uint64_t init_replays_max, valid_inits; /* INITs that still authenticate: capped */
    uint64_t race_left, races;              /* --race */
} g;

static void send_junk(int kind, const uint8_t *d, size_t n)
{
    ssize_t r;
    if (kind == K_DATA_RECENT)
        r = send(g.srv, d, n, 0);
    else
        r = sendto(g.spray, d, n, 0, (struct sockaddr *)&g.to, g.to_len);
    if (r < 0)
        g.send_errors++;
    else
        g.sent[kind]++;
}

/* Picks a kind the captured material allows, and sends one datagram of it. */
static void junk_one(void)
{
    uint8_t b[MAXD];
    size_t n = 0;
    int kind;
    for (;;) {
        kind = (int)below(K_COUNT);
        if (kind == K_LIVE && !g.live_index)
            continue;
        if ((kind == K_INIT_MUT || kind == K_INIT_REPLAY) && !g.init_len)
            continue;
        if (kind == K_INIT_REPLAY && g.valid_inits >= g.init_replays_max)
            continue;
        if ((kind == K_DATA_MUT || kind == K_DATA_RECENT) && !g.ring_seq)
            continue;
        if (kind == K_DATA_OLD && g.ring_seq <= OLD_GAP)
            continue;
        break;
    }
    switch (kind) {
    case K_RANDOM:
        n = below(MAXD + 1);
        fill(b, n);
        break;
    case K_TRUNC:
        if (g.init_len && below(4) == 0) {
            n = below((uint32_t)g.init_len); /* a strict prefix of the real INIT */
            memcpy(b, g.init, n);
        } else {
            uint8_t t = types[below(sizeof types)];
            /* shorter than the smallest valid datagram of that type */
            uint32_t need = t >= 0x08 ? 28 : t == 0x01 ? 118 : t == 0x02 ? 57 : t == 0x03 ? 21 : 5;
            n = 1 + below(need - 1);
            b[0] = t;
            fill(b + 1, n - 1);
        }
        break;
    case K_TYPED:
    case K_LIVE: {
        uint8_t t = types[below(sizeof types)];
        static const uint16_t lens[] = {5, 21, 57, 118, 150, 28, 100, 600, 1472};
        n = lens[below(sizeof lens / sizeof *lens)];
        if (t == 0x01 && g.init_len)
            n = g.init_len;
        fill(b, n);
        b[0] = t;
        if (kind == K_LIVE) {
            uint32_t x = g.live_index;
            b[1] = (uint8_t)x, b[2] = (uint8_t)(x >> 8), b[3] = (uint8_t)(x >> 16),
            b[4] = (uint8_t)(x >> 24);
        }
        break;
    }
    case K_INIT_MUT:
        memcpy(b, g.init, g.init_len);
        n = g.init_len;
        int how = (int)below(5);
        if (how == 3 && g.valid_inits >= g.init_replays_max)
            how = 0;
        switch (how) {
        case 0: /* 1-4 bytes of the Noise message changed: it no longer authenticates */
            for (uint32_t k = 0, m = 1 + below(4); k < m; k++)
                b[5 + below((uint32_t)n - 21)] ^= (uint8_t)(1 + below(255));
            break;
        case 1: /* cut short */ n = 1 + below((uint32_t)n - 1); break;
        case 2: /* extended */
            n += 1 + below(64);
            fill(b + g.init_len, n - g.init_len);
            break;
        case 3: /* a random cookie: still a valid INIT while the listener is not under load */
            fill(b + n - 16, 16);
            g.valid_inits++;
            break;
        default: /* another sender index, and a Noise message that no longer authenticates */
            fill(b + 1, 4);
            b[5 + below((uint32_t)n - 21)] ^= 0x80;
            break;
        }
        break;
    case K_INIT_REPLAY:
        memcpy(b, g.init, g.init_len);
        n = g.init_len;
        g.valid_inits++;
        break;
    case K_DATA_MUT:
    case K_DATA_RECENT:
    case K_DATA_OLD: {
        uint64_t back = kind == K_DATA_OLD ? OLD_GAP + below(RING - OLD_GAP - 64)
                                           : below(g.ring_seq < 64 ? (uint32_t)g.ring_seq : 64);
        if (back >= g.ring_seq)
            back = g.ring_seq - 1;
        if (kind == K_DATA_OLD && back < OLD_GAP)
            return; /* not enough history yet */
        const struct cap *c = &g.ring[(g.ring_seq - 1 - back) % RING];
        n = c->len;
        memcpy(b, c->d, n);
        if (kind == K_DATA_MUT)
            b[below((uint32_t)n)] ^= (uint8_t)(1 + below(255));
        break;
    }
    }
    send_junk(kind, b, n);
}

/* Relays what is waiting on one side; captures the INIT and DATA packets going up. */
static void relay(int up)
{
    uint8_t b[65536];
    for (int i = 0; i < 256; i++) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t r = up ? recvfrom(g.cli, b, sizeof b, 0, (struct sockaddr *)&from, &fl)
                       : recv(g.srv, b, sizeof b, 0);
        if (r < 0)
            return;
        size_t n = (size_t)r;
        if (up) {
            g.client = from;
            g.client_len = fl;
            if (n > 0 && b[0] == 0x01 && !g.init_len && n <= MAXD) {
                memcpy(g.init, b, n);
                g.init_len = n;
            }
            if (n >= 28 && n <= MAXD && (b[0] == 0x08 || b[0] == 0x09)) {
                g.live_index = (uint32_t)b[1] | (uint32_t)b[2] << 8 | (uint32_t)b[3] << 16 |
                               (uint32_t)b[4] << 24;
                struct cap *c = &g.ring[g.ring_seq++ % RING];
                c->len = (uint16_t)n;
                memcpy(c->d, b, n);
            }
            /* --race: a copy of a fresh DATA packet from the spray socket, ahead of the
             * original (an on-path attacker's race; not part of the junk mix) */
            if (g.race_left && g.ring_seq % 5000 == 4999 && (b[0] == 0x08 || b[0] == 0x09) &&
                sendto(g.spray, b, n, 0, (struct sockaddr *)&g.to, g.to_len) >= 0) {
                g.race_left--;
                g.races++;
            }
            if (send(g.srv, b, n, 0) >= 0)
                g.relayed_up++;
        } else if (g.client_len) {
            if (sendto(g.cli, b, n, 0, (struct sockaddr *)&g.client, g.client_len) >= 0)
                g.relayed_down++;
        }
    }
}

int main(int argc, char **argv)
{
    const char *to = NULL, *listen = NULL;
    double rate = 20000, seconds = 0, junk_seconds = 0;
    int line = 0; /* --rate line: no pacing */
    uint64_t seed = 1;
    g.init_replays_max = 100;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value, but --help */
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(o, "--help") == 0) {
            printf("usage: spray --to ADDR:PORT [--listen ADDR:PORT] [--rate N|line] [--seconds S] "
                   "[--junk-seconds S] [--seed N] [--init-replays N] [--race N]\n"
                   "(see the comment at the top of tools/spray.c)\n");
            return 0;
        }
        if (!v)
            return usage("%s needs a value", o);
        if (strcmp(o, "--to") == 0)
            to = v;
        else if (strcmp(o, "--listen") == 0)
            listen = v;
        else if (strcmp(o, "--rate") == 0 && strcmp(v, "line") == 0)
            line = 1;
        else if (strcmp(o, "--rate") == 0) {
            rate = strtod(v, &end);
            if (*end || !(rate > 0 && rate <= 1e7))
                return usage("bad --rate '%s'", v);
        } else if (strcmp(o, "--seconds") == 0) {
            seconds = strtod(v, &end);
            if (*end || !(seconds >= 0))
                return usage("bad --seconds '%s'", v);
        } else if (strcmp(o, "--junk-seconds") == 0) {
            junk_seconds = strtod(v, &end);
            if (*end || !(junk_seconds > 0))
                return usage("bad --junk-seconds '%s'", v);
        } else if (strcmp(o, "--seed") == 0) {
            seed = strtoull(v, &end, 10);
            if (*end)
                return usage("bad --seed '%s'", v);
        } else if (strcmp(o, "--race") == 0) {
            g.race_left = strtoull(v, &end, 10);
            if (*end)
                return usage("bad --race '%s'", v);
        } else if (strcmp(o, "--init-replays") == 0) {
            g.init_replays_max = strtoull(v, &end, 10);
            if (*end)
                return usage("bad --init-replays '%s'", v);
        } else
            return usage("unknown option '%s'", o);
    }
    if (!to)
        return usage("%s", "--to ADDR:PORT is required");
    if (parse_addr(to, &g.to, &g.to_len) != 0)
        return usage("--to '%s' is not a numeric ADDR:PORT", to);
    rng_s = seed;

    g.cli = g.srv = -1;
    g.spray = udp_socket(g.to.ss_family);
    if (g.spray < 0) {
        perror("spray: socket");
        return 1;
    }
    unsigned port = local_port(g.spray);
    if (listen) {
        struct sockaddr_storage la;
        socklen_t ll;
        if (parse_addr(listen, &la, &ll) != 0)
            return usage("--listen '%s' is not a numeric ADDR:PORT", listen);
        g.ring = calloc(RING, sizeof *g.ring);
        g.cli = udp_socket(la.ss_family);
        g.srv = udp_socket(g.to.ss_family);
        if (!g.ring || g.cli < 0 || g.srv < 0 || bind(g.cli, (struct sockaddr *)&la, ll) != 0 ||
            connect(g.srv, (struct sockaddr *)&g.to, g.to_len) != 0) {
            perror("spray: relay setup");
            return 1;
        }
        port = local_port(g.cli);
    } else {
        /* The spray socket needs a port for replies; sendto binds it, but print it now. */
        struct sockaddr_storage any;
        memset(&any, 0, sizeof any);
        any.ss_family = g.to.ss_family;
        if (bind(g.spray, (struct sockaddr *)&any,
                 any.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                           : sizeof(struct sockaddr_in)) != 0) {
            perror("spray: bind");
            return 1;
        }
        port = local_port(g.spray);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    printf("{\"port\": %u}\n", port);
    fflush(stdout);

    uint64_t t0 = now_ns(), total = 0;
    uint64_t until = seconds > 0 ? t0 + (uint64_t)(seconds * 1e9) : UINT64_MAX;
    uint64_t junk_until = junk_seconds > 0 ? t0 + (uint64_t)(junk_seconds * 1e9) : UINT64_MAX;
    uint64_t t_junk = t0; /* the last junk sent */
    while (!stop) {
        struct pollfd p[3] = {{g.spray, POLLIN, 0}, {g.cli, POLLIN, 0}, {g.srv, POLLIN, 0}};
        int np = listen ? 3 : 1, junking = now_ns() < junk_until;
        if (poll(p, (nfds_t)np, line && junking ? 0 : 1) < 0 && errno != EINTR)
            break;
        if (listen) {
            if (p[1].revents)
                relay(1);
            if (p[2].revents)
                relay(0);
        }
        if (p[0].revents) {
            uint8_t b[2048];
            ssize_t r;
            while ((r = recv(g.spray, b, sizeof b, 0)) >= 0)
                if (r > 0)
                    g.replies[b[0]]++;
        }
        uint64_t t = now_ns();
        if (t >= until)
            break;
        if (t >= junk_until)
            continue;
        /* line rate: 64 at a time, so the relay is looked at between them */
        uint64_t due = line ? total + 64 : (uint64_t)((double)(t - t0) * rate / 1e9);
        for (int k = 0; total < due && k < 512; k++, total++)
            junk_one();
        t_junk = now_ns();
    }
    uint64_t sum = 0;
    for (int k = 0; k < K_COUNT; k++)
        sum += g.sent[k];
    double secs = (double)(now_ns() - t0) / 1e9, jsecs = (double)(t_junk - t0) / 1e9;
    printf("{\"seconds\": %.3f, \"junk\": %" PRIu64 ", \"junk_seconds\": %.3f, \"rate\": %.0f",
           secs, sum, jsecs, jsecs > 0 ? (double)sum / jsecs : 0.0);
    for (int k = 0; k < K_COUNT; k++)
        printf(", \"%s\": %" PRIu64, kind_name[k], g.sent[k]);
    printf(", \"send_errors\": %" PRIu64 ", \"relayed_up\": %" PRIu64 ", \"relayed_down\": %" PRIu64
           ", \"link_index\": %" PRIu32 ", \"init_len\": %zu"
           ", \"data_captured\": %" PRIu64 ", \"races\": %" PRIu64,
           g.send_errors, g.relayed_up, g.relayed_down, g.live_index, g.init_len, g.ring_seq,
           g.races);
    printf(", \"replies\": {\"resp\": %" PRIu64 ", \"cookie\": %" PRIu64 ", \"reject\": %" PRIu64
           ", \"data\": %" PRIu64 ", \"other\": %" PRIu64 "}}\n",
           g.replies[0x02], g.replies[0x03], g.replies[0x04], g.replies[0x08] + g.replies[0x09],
           g.replies[0x01]);
    fflush(stdout);
    free(g.ring);
    return 0;
}
