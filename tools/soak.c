/* SPDX-License-Identifier: MIT */
/* soak: Pure under real service traffic over real UDP sockets (tests/scripts/e2e_soak.sh).
 *
 *   soak serve [--listen ADDR:PORT] [--max-size BYTES] [--idle-timeout SECONDS]
 *              [--rekey-packets N]
 *   soak run PORT|ADDR:PORT KEY --links L --messages M --max-size BYTES --seed S
 *            [--service echo|count] [--loss-close P] [--abort P] [--duration SECONDS]
 *            [--idle-timeout SECONDS] [--handshake-timeout SECONDS] [--timeout SECONDS]
 *            [--rekey-packets N]
 *
 * `soak serve` listens (default 127.0.0.1:0, any client key), prints {"port": N, "public_key":
 * "..."} like `pure serve`, and offers two services: `echo` sends every message back from inside
 * on_message (queued in the application on PURE_EAGAIN and resent from on_writable, as pure.h
 * tells users) and finishes after the client finishes; `count` replies, when the client
 * finishes, with 24 bytes: message count, bytes and the hash of what arrived (u64 big-endian
 * each). On SIGINT/SIGTERM it closes every link, prints one JSON line of counts and exits 0,
 * or 1 if any callback came for a link after its on_closed.
 *
 * `soak run` opens L links at once to the service (default echo) and sends M messages on each
 * (or, with --duration, as many as fit in that time). Message k of link i has a size drawn from
 * a PRNG seeded by (S, i) — the first three are 0, 1 and max (= --max-size, also the client's
 * max_message_size), the rest log-uniform in 0..max — and bytes derived from (S, i, k), so
 * every echo is checked byte for byte without keeping a copy, and by a hash per link per
 * direction. Before sending, each link checks that a message of max+1 bytes is refused with
 * PURE_EMSGSIZE. --loss-close P closes a link early (pure_link_close, graceful) and --abort P
 * aborts one (pure_link_abort: on_closed before it returns) with probability P at each echo;
 * those links must still close without error, with correct bytes so far. Prints one JSON line:
 * links, messages, bytes, seconds, failures and their kinds; exits 0, or 1 on any mismatch,
 * loss, duplicate, link error, callback after on_closed, or link still open at --timeout
 * (default 120 s), 2 on usage errors. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pure.h"
#include "pure_loop.h"

#define NS 1000000000ull

/* ---- Message content: everything derives from seeds, so nothing sent is kept ---------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t mix2(uint64_t a, uint64_t b)
{
    uint64_t s = a ^ (b * 0xd6e8feb86659fd93ull);
    return splitmix(&s);
}

/* Size of the k-th message: the edges first (0, 1, max), then log-uniform so that small and
 * large messages both occur often. Sender and receiver keep equal rng states. */
static size_t next_size(uint64_t *rng, uint64_t k, size_t max)
{
    if (k == 0 || max == 0)
        return 0;
    if (k == 1)
        return 1;
    if (k == 2)
        return max;
    unsigned bits = 0;
    while (bits < 63 && (1ull << bits) < max)
        bits++;
    uint64_t lim = 1ull << (splitmix(rng) % (bits + 1));
    if (lim > max)
        lim = max;
    return (size_t)(splitmix(rng) % (lim + 1));
}

static void fill(uint8_t *p, size_t n, uint64_t link_seed, uint64_t k)
{
    uint64_t s = mix2(link_seed, k);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = splitmix(&s);
        memcpy(p + i, &v, 8);
    }
    if (i < n) {
        uint64_t v = splitmix(&s);
        memcpy(p + i, &v, n - i);
    }
}

/* Offset of the first byte that differs from fill()'s, or -1 when all match. */
static long check(const uint8_t *p, size_t n, uint64_t link_seed, uint64_t k)
{
    uint64_t s = mix2(link_seed, k);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = splitmix(&s);
        size_t m = n - i < 8 ? n - i : 8;
        if (memcmp(p + i, &v, m) != 0)
            for (size_t j = 0; j < m; j++)
                if (p[i + j] != ((uint8_t *)&v)[j])
                    return (long)(i + j);
    }
    return -1;
}

/* A running hash of a message sequence (length, then bytes, a word at a time). */
static uint64_t hash_msg(uint64_t h, const uint8_t *p, size_t n)
{
    h = (h ^ n) * 0x100000001b3ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        h = ((h ^ v) * 0x100000001b3ull) ^ (h >> 29);
    }
    uint64_t v = 0;
    memcpy(&v, p + i, n - i);
    return ((h ^ v) * 0x100000001b3ull) ^ (h >> 29);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || *s == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_secs(const char *s, uint64_t *ns)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= 0) || v > 86400)
        return -1;
    *ns = (uint64_t)(v * 1e9);
    return 0;
}

static pure_loop *volatile stop_loop;
static void on_signal(int sig)
{
    (void)sig;
    if (stop_loop)
        pure_loop_stop(stop_loop);
}

static void stop_on_signals(pure_loop *loop)
{
    stop_loop = loop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ---- soak serve ------------------------------------------------------------------------------ */

typedef struct qmsg {
    struct qmsg *next;
    size_t len;
    uint8_t data[];
} qmsg;

/* A link's state stays allocated until exit, so a callback after on_closed is detected (and
 * counted) instead of touching freed memory. */
typedef struct slink {
    struct slink *next;
    struct sserver *srv;
    pure_link *link;
    int echo, closed, finish_when_empty;
    uint64_t messages, bytes, hash;
    qmsg *qhead, *qtail;
    size_t qbytes;
} slink;

typedef struct sserver {
    pure_ctx *ctx;
    pure_loop *loop;
    slink *all;
    uint64_t links, open, messages, bytes, late_callbacks, eagain, queued_max, link_errors;
} sserver;

/* A callback's link state, or NULL (counted, reported) when the core calls after on_closed. */
static slink *alive(void *user, const char *cb)
{
    slink *sl = user;
    if (!sl || sl->closed) {
        fprintf(stderr, "soak serve: %s after on_closed (user %p)\n", cb, user);
        if (sl)
            sl->srv->late_callbacks++;
        else
            fprintf(stderr, "soak serve: (a NULL user pointer: not counted per server)\n");
        return NULL;
    }
    return sl;
}

static void s_free_queue(slink *sl)
{
    while (sl->qhead) {
        qmsg *q = sl->qhead;
        sl->qhead = q->next;
        free(q);
    }
    sl->qtail = NULL;
    sl->qbytes = 0;
}

/* Sends queued echoes until the backlog is full again; finishes once empty if asked. */
static void s_flush(slink *sl)
{
    while (sl->qhead && !sl->closed) {
        qmsg *q = sl->qhead;
        int64_t rc = pure_link_send(sl->link, q->data, q->len);
        if (rc == PURE_EAGAIN) {
            sl->srv->eagain++;
            return;
        }
        if (rc < 0)
            return; /* closing: on_closed frees the queue */
        sl->qhead = q->next;
        sl->qbytes -= q->len;
        free(q);
    }
    if (!sl->qhead)
        sl->qtail = NULL;
    if (!sl->closed && !sl->qhead && sl->finish_when_empty) {
        sl->finish_when_empty = 0;
        pure_link_finish(sl->link);
    }
}

static void s_send(slink *sl, const uint8_t *d, size_t n)
{
    if (!sl->qhead) {
        int64_t rc = pure_link_send(sl->link, d, n);
        if (rc != PURE_EAGAIN)
            return; /* sent, or closing */
        sl->srv->eagain++;
    }
    qmsg *q = malloc(sizeof *q + n);
    if (!q) {
        pure_link_close(sl->link, 1, "soak serve: out of memory");
        return;
    }
    q->next = NULL;
    q->len = n;
    memcpy(q->data, d, n);
    if (sl->qtail)
        sl->qtail->next = q;
    else
        sl->qhead = q;
    sl->qtail = q;
    sl->qbytes += n;
    if (sl->qbytes > sl->srv->queued_max)
        sl->srv->queued_max = sl->qbytes;
}

static int s_on_accept(pure_link *link, const char *service, const uint8_t *key, void *user)
{
    (void)key;
    sserver *srv = user;
    slink *sl = calloc(1, sizeof *sl);
    if (!sl)
        return PURE_ENOMEM;
    sl->srv = srv;
    sl->link = link;
    sl->echo = strcmp(service, "echo") == 0;
    sl->next = srv->all;
    srv->all = sl;
    srv->links++;
    srv->open++;
    pure_link_set_user(link, sl);
    return 0;
}

static void s_on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    (void)link;
    slink *sl = alive(user, "on_message");
    if (!sl)
        return;
    sl->messages++;
    sl->bytes += n;
    sl->srv->messages++;
    sl->srv->bytes += n;
    if (sl->echo)
        s_send(sl, d, n);
    else
        sl->hash = hash_msg(sl->hash, d, n);
}

static void s_on_writable(pure_link *link, void *user)
{
    (void)link;
    slink *sl = alive(user, "on_writable");
    if (sl)
        s_flush(sl);
}

static void s_on_peer_finished(pure_link *link, void *user)
{
    (void)link;
    slink *sl = alive(user, "on_peer_finished");
    if (!sl)
        return;
    if (!sl->echo) {
        uint8_t r[24];
        put64(r, sl->messages);
        put64(r + 8, sl->bytes);
        put64(r + 16, sl->hash);
        s_send(sl, r, sizeof r);
    }
    if (sl->closed)
        return;
    if (sl->qhead)
        sl->finish_when_empty = 1;
    else
        pure_link_finish(sl->link);
}

static void s_on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    (void)link;
    slink *sl = alive(user, "on_closed");
    if (!sl)
        return;
    sl->closed = 1;
    sl->srv->open--;
    if (info->error && info->error != PURE_ECLOSED)
        sl->srv->link_errors++;
    s_free_queue(sl);
}

static const pure_callbacks s_callbacks = {
    .on_accept = s_on_accept,
    .on_message = s_on_message,
    .on_writable = s_on_writable,
    .on_peer_finished = s_on_peer_finished,
    .on_closed = s_on_closed,
};

static int soak_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                         {"max-size", required_argument, NULL, 'm'},
                                         {"idle-timeout", required_argument, NULL, 'i'},
                                         {"rekey-packets", required_argument, NULL, 'r'},
                                         {NULL, 0, NULL, 0}};
    const char *listen = "127.0.0.1:0";
    uint64_t max = 16u << 20, idle = 0, rekey = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'l')
            listen = optarg;
        else if (c == 'm' && parse_u64(optarg, &max) == 0 && max <= (1u << 30))
            ;
        else if (c == 'i' && parse_secs(optarg, &idle) == 0)
            ;
        else if (c == 'r' && parse_u64(optarg, &rekey) == 0)
            ;
        else {
            fprintf(stderr, "soak serve: bad option (see the comment at the top of soak.c)\n");
            return 2;
        }
    }
    sserver srv;
    memset(&srv, 0, sizeof srv);
    pure_settings st;
    pure_settings_default(&st);
    if (pure_keygen(st.private_key) != 0)
        return 1;
    st.allow_any = 1;
    st.max_message_size = (uint32_t)max;
    if (idle)
        st.idle_timeout = idle;
    if (rekey)
        st.rekey_after_packets = rekey; /* pure_ctx_new refuses one out of range */
    st.callbacks = &s_callbacks;
    st.user = &srv;
    int rc = pure_ctx_new(&st, &srv.ctx);
    if (rc) {
        fprintf(stderr, "soak serve: pure_ctx_new: %s\n", pure_strerror(rc));
        return 1;
    }
    pure_ctx_add_service(srv.ctx, "echo");
    pure_ctx_add_service(srv.ctx, "count");
    if ((rc = pure_loop_new(srv.ctx, listen, &srv.loop)) != 0) {
        fprintf(stderr, "soak serve: cannot listen on %s: %s (%s)\n", listen, pure_strerror(rc),
                strerror(errno));
        pure_ctx_free(srv.ctx);
        return 2;
    }
    stop_on_signals(srv.loop);
    char pub[45];
    pure_key_to_base64(pub, pure_ctx_public_key(srv.ctx));
    printf("{\"port\": %u, \"public_key\": \"%s\"}\n", pure_loop_port(srv.loop), pub);
    fflush(stdout);
    rc = pure_loop_run(srv.loop, PURE_LOOP_FOREVER);
    for (slink *sl = srv.all; sl; sl = sl->next)
        if (!sl->closed)
            pure_link_close(sl->link, 0, "soak serve: shutting down");
    uint64_t until = pure_now() + NS;
    while (srv.open && pure_now() < until && rc == 0)
        rc = pure_loop_run(srv.loop, NS / 100);
    stop_on_signals(NULL);
    pure_loop_free(srv.loop);
    pure_ctx_free(srv.ctx); /* may call on_closed for links still open: they are all valid */
    printf("{\"links\": %llu, \"messages\": %llu, \"bytes\": %llu, \"eagain\": %llu, "
           "\"queued_max\": %llu, \"link_errors\": %llu, \"late_callbacks\": %llu}\n",
           (unsigned long long)srv.links, (unsigned long long)srv.messages,
           (unsigned long long)srv.bytes, (unsigned long long)srv.eagain,
           (unsigned long long)srv.queued_max, (unsigned long long)srv.link_errors,
           (unsigned long long)srv.late_callbacks);
    while (srv.all) {
        slink *sl = srv.all;
        srv.all = sl->next;
        s_free_queue(sl);
        free(sl);
    }
    if (rc)
        fprintf(stderr, "soak serve: the socket failed: %s\n", strerror(errno));
    return rc || srv.late_callbacks ? 1 : 0;
}

/* ---- soak run -------------------------------------------------------------------------------- */

typedef struct clink {
    struct client *c;
    pure_link *link;
    uint32_t idx;
    uint64_t seed, send_rng, recv_rng;
    uint64_t sent, recvd, tx_bytes, rx_bytes, tx_hash, rx_hash;
    size_t pending; /* size of message `sent`, drawn but not yet accepted */
    int has_pending, established, finished, peer_finished, closed, early, ok, counted;
    uint64_t last_rx; /* when anything last arrived (ns) */
} clink;

typedef struct client {
    pure_loop *loop;
    clink *links;
    uint32_t nlinks, open;
    uint64_t messages, max, close_rng, deadline;
    double loss_close, abort;
    int count;    /* the count service instead of echo */
    uint8_t *buf; /* max + 1 bytes */
    uint64_t eagain, mismatches, duplicates, losses, late, link_errors, emsgsize_bad, early, ok,
        unacked_at_close;
    uint64_t msgs_sent, msgs_recv, bytes_sent, bytes_recv;
    uint64_t errors[20]; /* link errors by -code */
    uint64_t t_last_close, max_silence_to_close;
    uint64_t rekeys; /* the links' key changes, counted as each closed */
} client;

static clink *c_alive(void *user, const char *cb)
{
    clink *l = user;
    if (l->closed) {
        l->c->late++;
        fprintf(stderr, "soak run: link %u: %s after on_closed\n", l->idx, cb);
        return NULL;
    }
    return l;
}

static void c_fail(clink *l, uint64_t *counter, const char *what)
{
    (*counter)++;
    fprintf(stderr, "soak run: link %u: %s\n", l->idx, what);
    if (!l->closed)
        pure_link_close(l->link, 9, what);
}

/* Sends messages until the backlog is full (PURE_EAGAIN: on_writable resumes), then finishes
 * the stream after the last one. */
static void c_pump(clink *l)
{
    client *c = l->c;
    while (!l->finished && !l->closed) {
        if (c->deadline ? pure_now() >= c->deadline : l->sent >= c->messages) {
            l->finished = 1;
            pure_link_finish(l->link);
            return;
        }
        if (!l->has_pending) {
            l->pending = next_size(&l->send_rng, l->sent, c->max);
            l->has_pending = 1;
        }
        fill(c->buf, l->pending, l->seed, l->sent);
        int64_t rc = pure_link_send(l->link, c->buf, l->pending);
        if (rc == PURE_EAGAIN) {
            c->eagain++;
            return; /* the message stays pending, retried from on_writable */
        }
        if (rc < 0) {
            if (!pure_err_is_fatal((int)rc) && rc != PURE_ECLOSED) {
                char why[96];
                snprintf(why, sizeof why, "pure_link_send: %s", pure_strerror((int)rc));
                c_fail(l, &c->link_errors, why);
            }
            return;
        }
        if ((uint64_t)rc != l->sent) {
            c_fail(l, &c->mismatches, "pure_link_send returned an id out of sequence");
            return;
        }
        l->tx_hash = hash_msg(l->tx_hash, c->buf, l->pending);
        l->tx_bytes += l->pending;
        c->bytes_sent += l->pending;
        c->msgs_sent++;
        l->sent++;
        l->has_pending = 0;
    }
}

static void c_on_established(pure_link *link, void *user)
{
    (void)link;
    clink *l = c_alive(user, "on_established");
    if (l)
        l->established = 1;
}

static void c_on_writable(pure_link *link, void *user)
{
    (void)link;
    clink *l = c_alive(user, "on_writable");
    if (l)
        c_pump(l);
}

static void c_on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    (void)link;
    clink *l = c_alive(user, "on_message");
    if (!l)
        return;
    client *c = l->c;
    l->last_rx = pure_now();
    c->msgs_recv++;
    c->bytes_recv += n;
    if (c->count) {
        if (l->recvd++ != 0 || n != 24) {
            c_fail(l, &c->duplicates, "count: more than one reply, or not 24 bytes");
            return;
        }
        if (get64(d) != l->sent || get64(d + 8) != l->tx_bytes || get64(d + 16) != l->tx_hash) {
            char why[160];
            snprintf(why, sizeof why,
                     "count: server counted %llu messages %llu bytes, sent %llu "
                     "messages %llu bytes (hashes %s)",
                     (unsigned long long)get64(d), (unsigned long long)get64(d + 8),
                     (unsigned long long)l->sent, (unsigned long long)l->tx_bytes,
                     get64(d + 16) == l->tx_hash ? "equal" : "differ");
            c_fail(l, &c->mismatches, why);
        }
        return;
    }
    if (l->recvd >= l->sent) {
        c_fail(l, &c->duplicates, "an echo of a message not sent (duplicate?)");
        return;
    }
    size_t want = next_size(&l->recv_rng, l->recvd, c->max);
    long off = n == want ? check(d, n, l->seed, l->recvd) : -2;
    if (off != -1) {
        char why[128];
        snprintf(why, sizeof why, "echo %llu: %zu bytes (want %zu), first difference at %ld",
                 (unsigned long long)l->recvd, n, want, off);
        c_fail(l, &c->mismatches, why);
        return;
    }
    l->rx_hash = hash_msg(l->rx_hash, d, n);
    l->rx_bytes += n;
    l->recvd++;
    if (l->early)
        return;
    double r = (double)(splitmix(&c->close_rng) >> 11) / 9007199254740992.0;
    if (r < c->loss_close) {
        l->early = 1;
        pure_link_close(l->link, 0, "soak run: closing early");
    } else if (r < c->loss_close + c->abort) {
        l->early = 1;
        pure_link_abort(l->link, 0, "soak run: aborting"); /* on_closed has run */
    }
}

static void c_on_peer_finished(pure_link *link, void *user)
{
    clink *l = c_alive(user, "on_peer_finished");
    if (!l)
        return;
    client *c = l->c;
    l->peer_finished = 1;
    if (!l->finished) {
        c_fail(l, &c->duplicates, "the server finished before we did");
        return;
    }
    if (c->count ? l->recvd != 1 : l->recvd != l->sent || l->rx_hash != l->tx_hash) {
        char why[128];
        snprintf(why, sizeof why, "%llu of %llu %s came back before the server finished",
                 (unsigned long long)l->recvd, (unsigned long long)(c->count ? 1 : l->sent),
                 c->count ? "counts" : "echoes");
        c_fail(l, &c->losses, why);
        return;
    }
    l->ok = 1;
    pure_link_close(link, 0, "soak run: done");
}

static void c_on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    clink *l = c_alive(user, "on_closed");
    if (!l)
        return;
    client *c = l->c;
    uint64_t now = pure_now();
    pure_link_stats ls;
    pure_link_stats_get(link, &ls);
    c->rekeys += ls.rekeys;
    l->closed = 1;
    c->open--;
    c->t_last_close = now;
    uint64_t silence = now - l->last_rx;
    if (silence > c->max_silence_to_close)
        c->max_silence_to_close = silence;
    if (info->next_id != info->first_unacked)
        c->unacked_at_close++;
    if (info->error) {
        int e = -info->error;
        c->errors[e > 0 && e < 20 ? e : 0]++;
        c->link_errors++;
        if (c->link_errors <= 5)
            fprintf(stderr, "soak run: link %u closed: %s%s%s (%llu sent, %llu back)\n", l->idx,
                    pure_strerror(info->error), *info->reason ? ": " : "", info->reason,
                    (unsigned long long)l->sent, (unsigned long long)l->recvd);
    } else if (l->ok) {
        c->ok++;
    } else if (l->early) {
        c->early++;
    } else if (!l->peer_finished) {
        c_fail(l, &c->losses, "closed cleanly by the server before every echo came back");
    }
    if (c->open == 0 && c->loop)
        pure_loop_stop(c->loop);
}

static const pure_callbacks c_callbacks = {
    .on_established = c_on_established,
    .on_message = c_on_message,
    .on_writable = c_on_writable,
    .on_peer_finished = c_on_peer_finished,
    .on_closed = c_on_closed,
};

static int soak_run(int argc, char **argv)
{
    static const struct option opts[] = {{"links", required_argument, NULL, 'L'},
                                         {"messages", required_argument, NULL, 'M'},
                                         {"max-size", required_argument, NULL, 'x'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"service", required_argument, NULL, 'S'},
                                         {"loss-close", required_argument, NULL, 'c'},
                                         {"abort", required_argument, NULL, 'a'},
                                         {"duration", required_argument, NULL, 'd'},
                                         {"idle-timeout", required_argument, NULL, 'i'},
                                         {"handshake-timeout", required_argument, NULL, 'H'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"rekey-packets", required_argument, NULL, 'r'},
                                         {NULL, 0, NULL, 0}};
    uint64_t links = 1, messages = 10, max = 1024, seed = 1, duration = 0, idle = 0, hs = 0;
    uint64_t rekey = 0;
    uint64_t timeout = 120 * NS;
    const char *service = "echo";
    double loss_close = 0, abort_p = 0;
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'L': bad |= parse_u64(optarg, &links) || links == 0 || links > 100000; break;
        case 'M': bad |= parse_u64(optarg, &messages); break;
        case 'x': bad |= parse_u64(optarg, &max) || max >= (1u << 30); break;
        case 's': bad |= parse_u64(optarg, &seed); break;
        case 'S': service = optarg; break;
        case 'c': loss_close = atof(optarg); break;
        case 'a': abort_p = atof(optarg); break;
        case 'd': bad |= parse_secs(optarg, &duration); break;
        case 'i': bad |= parse_secs(optarg, &idle); break;
        case 'H': bad |= parse_secs(optarg, &hs); break;
        case 't': bad |= parse_secs(optarg, &timeout); break;
        case 'r': bad |= parse_u64(optarg, &rekey); break;
        default: bad = 1;
        }
    }
    if (bad || argc - optind != 2 || (strcmp(service, "echo") && strcmp(service, "count"))) {
        fprintf(stderr,
                "soak run: usage: soak run PORT|ADDR:PORT KEY --links L --messages M "
                "--max-size BYTES --seed S [--service echo|count] [--loss-close P] [--abort P] "
                "[--duration S] [--idle-timeout S] [--handshake-timeout S] "
                "[--timeout S] [--rekey-packets N]\n");
        return 2;
    }
    char target[128];
    uint64_t port;
    if (parse_u64(argv[optind], &port) == 0)
        snprintf(target, sizeof target, "127.0.0.1:%llu", (unsigned long long)port);
    else
        snprintf(target, sizeof target, "%s", argv[optind]);
    pure_addr to;
    uint8_t key[PURE_KEY_LEN];
    const char *keytext = argv[optind + 1];
    if (strncmp(keytext, "pure-pub:", 9) == 0) /* as pure serve prints it */
        keytext += 9;
    if (pure_addr_from_string(&to, target) || pure_key_from_base64(key, keytext)) {
        fprintf(stderr, "soak run: bad address '%s' or key '%s'\n", target, argv[optind + 1]);
        return 2;
    }

    client cl;
    memset(&cl, 0, sizeof cl);
    cl.nlinks = cl.open = (uint32_t)links;
    cl.messages = messages;
    cl.max = max;
    cl.count = strcmp(service, "count") == 0;
    cl.loss_close = loss_close;
    cl.abort = abort_p;
    cl.close_rng = seed ^ 0x5eed;
    cl.buf = malloc(max + 1);
    cl.links = calloc(links, sizeof *cl.links);
    pure_settings st;
    pure_settings_default(&st);
    if (!cl.buf || !cl.links || pure_keygen(st.private_key) != 0)
        return 1;
    st.max_message_size = (uint32_t)max;
    if (idle)
        st.idle_timeout = idle;
    if (hs)
        st.handshake_timeout = hs;
    if (rekey)
        st.rekey_after_packets = rekey;
    st.callbacks = &c_callbacks;
    pure_ctx *ctx;
    int rc = pure_ctx_new(&st, &ctx);
    if (rc == 0 && (rc = pure_loop_new(ctx, to.len == 16 ? "0.0.0.0:0" : "[::]:0", &cl.loop)))
        pure_ctx_free(ctx);
    if (rc) {
        fprintf(stderr, "soak run: cannot start: %s (%s)\n", pure_strerror(rc), strerror(errno));
        return 1;
    }
    uint64_t t0 = pure_now();
    if (duration)
        cl.deadline = t0 + duration;
    for (uint32_t i = 0; i < links; i++) {
        clink *l = &cl.links[i];
        l->c = &cl;
        l->idx = i;
        l->seed = mix2(seed, i);
        l->send_rng = l->recv_rng = mix2(l->seed, 0x512e);
        l->last_rx = t0;
        if ((rc = pure_connect(ctx, &to, key, service, l, &l->link, t0)) != 0) {
            fprintf(stderr, "soak run: pure_connect: %s\n", pure_strerror(rc));
            l->closed = 1;
            cl.open--;
            cl.link_errors++;
            continue;
        }
        /* the edge above the limit: refused at once, nothing accepted */
        int64_t big = pure_link_send(l->link, cl.buf, max + 1);
        if (big != PURE_EMSGSIZE) {
            fprintf(stderr,
                    "soak run: link %u: a message of max+1 = %llu bytes gave %lld, not "
                    "PURE_EMSGSIZE\n",
                    i, (unsigned long long)max + 1, (long long)big);
            cl.emsgsize_bad++;
        }
        c_pump(l);
    }
    while (cl.open > 0 && rc == 0) {
        uint64_t now = pure_now();
        if (now >= t0 + timeout)
            break;
        rc = pure_loop_run(cl.loop, t0 + timeout - now);
    }
    double secs = (double)(pure_now() - t0) / 1e9;
    if (rc)
        fprintf(stderr, "soak run: the socket failed: %s\n", strerror(errno));
    uint64_t unclosed = cl.open;
    if (unclosed)
        fprintf(stderr, "soak run: %llu links still open after %.1f s\n",
                (unsigned long long)unclosed, secs);
    pure_loop_free(cl.loop);
    cl.loop = NULL;
    uint64_t link_errors = cl.link_errors; /* before pure_ctx_free closes what is left */
    pure_ctx_free(ctx);                    /* links still open get on_closed (PURE_ECLOSED) here */
    cl.link_errors = link_errors;
    uint64_t failures = cl.mismatches + cl.duplicates + cl.losses + cl.late + cl.link_errors +
                        cl.emsgsize_bad + unclosed + (rc != 0);
    printf("{\"links\": %u, \"links_ok\": %llu, \"links_closed_early\": %llu, "
           "\"link_errors\": %llu, \"timed_out\": %llu, \"reset\": %llu, \"unclosed\": %llu, "
           "\"messages_sent\": %llu, \"messages_received\": %llu, \"bytes_sent\": %llu, "
           "\"bytes_received\": %llu, \"seconds\": %.3f, \"eagain\": %llu, "
           "\"mismatches\": %llu, \"duplicates\": %llu, \"losses\": %llu, "
           "\"late_callbacks\": %llu, \"emsgsize_bad\": %llu, \"unacked_at_close\": %llu, "
           "\"max_silence_to_close\": %.3f, \"rekeys\": %llu, \"failures\": %llu}\n",
           cl.nlinks, (unsigned long long)cl.ok, (unsigned long long)cl.early,
           (unsigned long long)cl.link_errors, (unsigned long long)cl.errors[-PURE_ETIMEDOUT],
           (unsigned long long)cl.errors[-PURE_ERESET], (unsigned long long)unclosed,
           (unsigned long long)cl.msgs_sent, (unsigned long long)cl.msgs_recv,
           (unsigned long long)cl.bytes_sent, (unsigned long long)cl.bytes_recv, secs,
           (unsigned long long)cl.eagain, (unsigned long long)cl.mismatches,
           (unsigned long long)cl.duplicates, (unsigned long long)cl.losses,
           (unsigned long long)cl.late, (unsigned long long)cl.emsgsize_bad,
           (unsigned long long)cl.unacked_at_close, (double)cl.max_silence_to_close / 1e9,
           (unsigned long long)cl.rekeys, (unsigned long long)failures);
    free(cl.buf);
    free(cl.links);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "serve") == 0)
        return soak_serve(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return soak_run(argc - 1, argv + 1);
    fprintf(stderr, "usage: soak serve [...] | soak run PORT KEY [...] (see tools/soak.c)\n");
    return 2;
}
