/* SPDX-License-Identifier: MIT */
/* fanout_broker.c: a publish/subscribe broker on shared sends (docs/channels.md, "Shared sends
 * and slow peers"), with its publishers and subscribers.
 *
 *   fanout_broker broker [ADDR:PORT] [--limit BYTES] [--max-age MS] [--verbose]
 *   fanout_broker subscribe ADDR:PORT KEY COUNT [--slow]
 *   fanout_broker publish ADDR:PORT KEY ID COUNT SIZE [RATE]
 *
 * The broker prints "PORT PUBLIC_KEY", then serves two services until SIGINT/SIGTERM: "pub",
 * whose links send messages on channel 0, and "sub", whose links receive every message
 * published, on channel 1. Each message is copied once (pure_shared_copy) and sent to every
 * subscriber from that one buffer (pure_link_send_shared): 200 subscribers cost one copy, not
 * 200, and the buffer is freed when the last subscriber has acknowledged it.
 *
 * Slow subscribers. Each subscriber's link has a queue limit (--limit, default 4 MiB, every
 * channel together: pure_link_set_queue_limit). Every 50 ms the broker reads each
 * subscriber's queue statistics (pure_link_queue_stats): one whose oldest unacknowledged
 * message is older than --max-age (default 1000 ms) is not keeping up and is dropped
 * (pure_link_abort with code PURE_CLOSE_APP + 1, "too slow"), which releases its references to
 * the shared buffers at once; so is one whose send meets its limit (PURE_EFULL) with messages
 * that old. Until then a message it has no room for is skipped for it alone. A healthy
 * subscriber's oldest message is a round trip old, whatever the others do; PURE_EAGAIN, a burst
 * filling the link's own buffers, says nothing about the peer. On SIGTERM the broker prints one
 * JSON line: {"published": N, "subscribers": S, "dropped": D, "skipped": K} (K: messages some
 * subscriber missed because its queue was full).
 *
 * A subscriber prints "subscribed" when its link is up, counts the messages (checking each
 * publisher's sequence numbers), and exits 0 once it has COUNT; with --slow it stops reading
 * (pure_link_pause_recv) and exits 0 when the broker drops it. It prints one JSON line:
 * {"received": N, "dropped": 0|1}. A publisher sends COUNT messages of SIZE bytes (at least 12:
 * its ID and a sequence number first), RATE a second (default 20000; 0: as fast as the link
 * takes them), closes its link gracefully and exits 0 once the broker has them all. */
#include <pure.h>
#include <pure_loop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define MAX_PUBLISHERS 64

static pure_loop *loop;
static pure_ctx *bctx; /* the broker's */

static void stop(int sig)
{
    (void)sig;
    pure_loop_stop(loop);
}

/* ---- the broker ---- */

typedef struct peer { /* a link's user pointer */
    int sub;          /* 1: a subscriber, 0: a publisher */
    pure_link *link;
    struct peer *prev, *next; /* the broker's list of subscribers */
    int dropped;
} peer;

static struct {
    peer *subs;
    uint64_t limit, max_age, published, subscribers, dropped, skipped;
    int verbose;
} B = {.limit = 4u << 20, .max_age = 1000 * MS};

/* The oldest unacknowledged message of a subscriber's link, ns (0: none). */
static uint64_t oldest_age(const peer *p, pure_queue_stats *q)
{
    if (pure_link_queue_stats(p->link, PURE_CHANNEL_ALL, pure_now(), q, sizeof *q) != 0)
        return 0;
    if (B.verbose)
        fprintf(stderr,
                "fanout_broker: subscriber %p: %llu messages, %llu bytes queued (%llu shared, "
                "%llu unsent), oldest %.1f ms\n",
                (void *)p, (unsigned long long)q->messages, (unsigned long long)q->bytes,
                (unsigned long long)q->bytes_shared, (unsigned long long)q->bytes_unsent,
                (double)q->oldest_age / MS);
    return q->oldest_age;
}

/* Drops a subscriber that does not keep up: its references to the shared buffers go at once. */
static void drop(peer *p, const pure_queue_stats *q)
{
    fprintf(stderr,
            "fanout_broker: dropping a slow subscriber: %llu messages (%llu bytes) queued, the "
            "oldest for %.0f ms; %llu sends met its limit\n",
            (unsigned long long)q->messages, (unsigned long long)q->bytes,
            (double)q->oldest_age / MS, (unsigned long long)q->full);
    p->dropped = 1;
    B.dropped++;
    pure_link_abort(p->link, PURE_CLOSE_APP + 1, "too slow"); /* on_closed unlinks it */
}

/* Every 50 ms: a subscriber whose oldest message is older than max_age is slow. Unless the
 * broker itself was late: a pass long after the last (its process stalled) finds every
 * subscriber's messages as old as the stall, and blames none of them. */
static void judge_all(void)
{
    static uint64_t last;
    uint64_t now = pure_now();
    int late = last && now - last > B.max_age / 2;
    last = now;
    if (late)
        return;
    for (peer *p = B.subs, *next; p; p = next) {
        next = p->next;
        pure_queue_stats q;
        if (oldest_age(p, &q) > B.max_age)
            drop(p, &q);
    }
}

static int b_accept(pure_link *link, const char *service, const uint8_t key[PURE_KEY_LEN],
                    void *ctx_user)
{
    (void)key, (void)ctx_user;
    peer *p = calloc(1, sizeof *p);
    if (!p)
        return PURE_ENOMEM;
    p->link = link;
    p->sub = strcmp(service, "sub") == 0;
    if (p->sub) {
        /* watch it from the start, so its messages are dated (pure_link_queue_stats) */
        if (pure_link_set_queue_limit(link, B.limit) != 0) {
            free(p);
            return PURE_ENOMEM;
        }
        p->next = B.subs;
        if (B.subs)
            B.subs->prev = p;
        B.subs = p;
        B.subscribers++;
    }
    pure_link_set_user(link, p);
    return 0;
}

/* A publisher's message: one copy, sent to every subscriber. */
static void b_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    (void)link, (void)user;
    pure_shared *sh;
    if (pure_shared_copy(bctx, data, len, &sh) != 0)
        return;
    for (peer *p = B.subs, *next; p; p = next) {
        next = p->next; /* judge may drop p */
        int64_t rc = pure_link_send_shared(p->link, 1, sh);
        pure_queue_stats q;
        if (rc == PURE_EFULL && oldest_age(p, &q) > B.max_age) {
            drop(p, &q); /* its limit full of old messages: slow, whatever the others do */
            continue;
        }
        if (rc < 0)
            B.skipped++; /* full but young (a burst), or the link closing */
    }
    pure_shared_unref(sh); /* the subscribers' links hold theirs */
    B.published++;
}

static void b_peer_finished(pure_link *link, void *user)
{
    (void)user;
    pure_link_close(link, 0, "done"); /* a publisher has sent everything */
}

static void b_closed(pure_link *link, void *user, const pure_close_info *info)
{
    (void)link, (void)info;
    peer *p = user;
    if (p && p->sub) {
        if (p->prev)
            p->prev->next = p->next;
        else
            B.subs = p->next;
        if (p->next)
            p->next->prev = p->prev;
    }
    free(p);
}

static int run_broker(int argc, char **argv)
{
    const char *bind = "127.0.0.1:0";
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--limit") && i + 1 < argc)
            B.limit = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--max-age") && i + 1 < argc)
            B.max_age = strtoull(argv[++i], NULL, 10) * MS;
        else if (!strcmp(argv[i], "--verbose"))
            B.verbose = 1;
        else
            bind = argv[i];
    }
    static const pure_callbacks cb = {.on_accept = b_accept,
                                      .on_message = b_message,
                                      .on_peer_finished = b_peer_finished,
                                      .on_closed = b_closed};
    pure_settings s;
    pure_settings_default(&s);
    if (pure_keygen(s.private_key) != 0)
        return 1;
    s.allow_any = 1;
    s.callbacks = &cb;
    pure_ctx *ctx;
    if (pure_ctx_new(&s, &bctx) != 0)
        return 1;
    ctx = bctx;
    if (pure_ctx_add_service(ctx, "pub") != 0 || pure_ctx_add_service(ctx, "sub") != 0)
        return 1;
    if (pure_loop_new(ctx, bind, &loop) != 0) {
        perror("fanout_broker: cannot listen");
        return 1;
    }
    char key[45];
    pure_key_to_base64(key, pure_ctx_public_key(ctx));
    printf("%u %s\n", pure_loop_port(loop), key);
    fflush(stdout);
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    for (;;) {
        /* 50 ms slices: between them, every subscriber's queue is looked at */
        uint64_t until = pure_now() + 50 * MS;
        pure_loop_run(loop, 50 * MS);
        if (pure_now() < until)
            break; /* stopped by a signal */
        judge_all();
    }
    printf("{\"published\": %llu, \"subscribers\": %llu, \"dropped\": %llu, \"skipped\": %llu}\n",
           (unsigned long long)B.published, (unsigned long long)B.subscribers,
           (unsigned long long)B.dropped, (unsigned long long)B.skipped);
    pure_ctx_shutdown(ctx, PURE_SHUTDOWN_ALL, pure_now());
    pure_loop_free(loop);
    pure_ctx_free(ctx); /* every shared buffer still held is released here */
    return 0;
}

/* ---- a subscriber ---- */

static struct {
    uint64_t want, received, bad;
    uint64_t next[MAX_PUBLISHERS];
    int slow, dropped, done;
} S;

static void s_established(pure_link *link, void *user)
{
    (void)user;
    if (S.slow)
        pure_link_pause_recv(link); /* reads what is in flight, then nothing more */
    printf("subscribed\n");
    fflush(stdout);
}

static void s_channel_message(pure_link *link, void *user, uint32_t ch, const uint8_t *data,
                              size_t len)
{
    (void)user;
    uint32_t id;
    uint64_t seq;
    if (ch != 1 || len < 12) {
        S.bad++;
        return;
    }
    memcpy(&id, data, 4);
    memcpy(&seq, data + 4, 8);
    if (id >= MAX_PUBLISHERS || seq != S.next[id])
        S.bad++; /* each publisher's messages arrive in order, once */
    else
        S.next[id]++;
    if (++S.received == S.want && !S.slow)
        pure_link_close(link, 0, "have them all");
}

static void s_closed(pure_link *link, void *user, const pure_close_info *info)
{
    (void)link, (void)user;
    S.dropped = info->error == PURE_ERESET && info->peer_code == PURE_CLOSE_APP + 1;
    S.done = 1;
    if (loop)
        pure_loop_stop(loop);
}

/* ---- a publisher ---- */

static struct {
    uint32_t id;
    uint64_t count, sent, size, rate, start;
    uint8_t *buf;
    int done, failed;
} P;

static void p_send_more(pure_link *link)
{
    /* at RATE a second since the start: as many as are due */
    uint64_t due = P.count;
    if (P.rate) {
        due = (pure_now() - P.start) / (1000000000ull / P.rate) + 1;
        if (due > P.count)
            due = P.count;
    }
    while (P.sent < due) {
        memcpy(P.buf, &P.id, 4);
        memcpy(P.buf + 4, &P.sent, 8);
        if (pure_link_send(link, P.buf, P.size) < 0)
            return; /* PURE_EAGAIN: on_writable comes */
        P.sent++;
    }
    if (P.sent == P.count)
        pure_link_finish(link); /* the broker closes once it has them all */
}

static void p_writable(pure_link *link, void *user)
{
    (void)user;
    p_send_more(link);
}

static void p_closed(pure_link *link, void *user, const pure_close_info *info)
{
    (void)link, (void)user;
    P.failed = info->error != 0 || info->first_unacked != info->next_id;
    P.done = 1;
    if (loop)
        pure_loop_stop(loop);
}

/* Connects to the broker's `service`; runs the loop until done or `seconds` passed. */
static int client(const char *addr, const char *keytext, const char *service,
                  const pure_callbacks *cb, int *done, int publisher, uint64_t seconds)
{
    pure_addr to;
    uint8_t key[PURE_KEY_LEN];
    if (pure_addr_from_string(&to, addr) != 0 || pure_key_from_base64(key, keytext) != 0) {
        fprintf(stderr, "fanout_broker: bad address or key\n");
        return 2;
    }
    pure_settings s;
    pure_settings_default(&s);
    pure_keygen(s.private_key);
    s.callbacks = cb;
    pure_ctx *ctx;
    pure_link *link;
    if (pure_ctx_new(&s, &ctx) != 0 || pure_loop_new(ctx, "0.0.0.0:0", &loop) != 0 ||
        pure_connect(ctx, &to, key, service, NULL, &link, pure_now()) != 0)
        return 1;
    uint64_t end = pure_now() + seconds * 1000000000ull;
    P.start = pure_now();
    while (!*done && pure_now() < end) {
        pure_loop_run(loop, MS); /* a publisher's pace: a millisecond at a time */
        if (publisher && !*done && P.sent < P.count)
            p_send_more(link);
    }
    pure_loop_free(loop);
    loop = NULL;
    pure_ctx_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "broker"))
        return run_broker(argc, argv);
    if (argc >= 5 && !strcmp(argv[1], "subscribe")) {
        static const pure_callbacks cb = {.on_established = s_established,
                                          .on_channel_message = s_channel_message,
                                          .on_closed = s_closed};
        S.want = strtoull(argv[4], NULL, 10);
        S.slow = argc > 5 && !strcmp(argv[5], "--slow");
        int rc = client(argv[2], argv[3], "sub", &cb, &S.done, 0, 60);
        printf("{\"received\": %llu, \"bad\": %llu, \"dropped\": %d}\n",
               (unsigned long long)S.received, (unsigned long long)S.bad, S.dropped);
        if (rc)
            return rc;
        if (S.bad)
            return 1;
        return S.slow ? !S.dropped : S.received != S.want;
    }
    if (argc >= 7 && !strcmp(argv[1], "publish")) {
        static const pure_callbacks cb = {.on_writable = p_writable, .on_closed = p_closed};
        P.id = (uint32_t)strtoul(argv[4], NULL, 10);
        P.count = strtoull(argv[5], NULL, 10);
        P.size = strtoull(argv[6], NULL, 10);
        P.rate = argc > 7 ? strtoull(argv[7], NULL, 10) : 20000;
        if (P.size < 12 || P.id >= MAX_PUBLISHERS || !(P.buf = calloc(1, P.size)))
            return 2;
        int rc = client(argv[2], argv[3], "pub", &cb, &P.done, 1, 60);
        free(P.buf);
        printf("{\"published\": %llu}\n", (unsigned long long)P.sent);
        return rc ? rc : (P.failed || P.sent != P.count);
    }
    fprintf(stderr, "usage: fanout_broker broker [ADDR:PORT] [--limit BYTES] [--max-age MS] "
                    "[--verbose]\n"
                    "       fanout_broker subscribe ADDR:PORT KEY COUNT [--slow]\n"
                    "       fanout_broker publish ADDR:PORT KEY ID COUNT SIZE [RATE]\n");
    return 2;
}
