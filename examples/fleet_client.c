/* SPDX-License-Identifier: MIT */
/* fleet_client.c: a client of a fleet of servers behind one address (docs/fleet.md) that loses
 * nothing when a server is drained or dies: it reconnects through the shared address and resends
 * exactly the messages the old link did not deliver.
 *
 *   fleet_client ADDR:PORT SERVER_PUBLIC_KEY [--sockets S] [--links L] [--messages M]
 *                [--size B] [--rate R] [--idle-timeout SECONDS] [--deadline SECONDS]
 *
 * Runs S sockets (one context, one I/O loop and one thread each) of L streams each. A stream is
 * M numbered messages of B bytes to the `drain` service of `pure serve`, at R messages a second
 * (0: as fast as the link takes them), carried by one link at a time. When the stream's last
 * message is sent it ends the link's stream (pure_link_finish) and the service answers with the
 * number of messages that link delivered.
 *
 * The pattern (on_closed below): a link's report names the ids first_unacked .. next_id - 1 that
 * it accepted but its peer did not acknowledge. The stream keeps the message number of the link's
 * id 0 (`base`), so those are messages base + first_unacked onward: the stream rewinds to there
 * and a new link, through the same shared address, carries on.
 *   - PURE_EMOVED (the server was drained, pure_ctx_drain or `pure serve` on SIGUSR2): the ids
 *     below first_unacked were read by the old server's application, and none from it on, so
 *     resending from it delivers every message exactly once. A new link refused with PURE_EMOVED
 *     (an INIT that reached the draining server before the director's ruleset left it out) is
 *     tried again after a short pause.
 *   - PURE_ETIMEDOUT (the server died; the link heard nothing for --idle-timeout): the ids below
 *     first_unacked were acknowledged by a server that is gone, with its application's state;
 *     the rest are sent again to the survivors. The director must stop sending new links to the
 *     dead server (a health check regenerates its ruleset: scripts/fleet_nft.sh --drain ID).
 *
 * Says "all N links established" on stderr once every stream's first handshake is done.
 * Prints one JSON line: streams complete, messages confirmed by the servers' counts on the
 * links that finished, read by drained servers (PURE_EMOVED's first_unacked), acknowledged by
 * servers that died, resent, links moved / refused / timed out, the first and last timeout
 * (CLOCK_REALTIME, ns), and "exact": the streams whose counts add up to M exactly. Exits 0 when
 * every stream completed and added up. */
#include <pthread.h>
#include <pure.h>
#include <pure_loop.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS 1000000ull
#define MAX_SIZE 65536

typedef struct stream {
    struct sock *sock;
    pure_link *link;    /* NULL between links */
    uint64_t id;        /* stream number, in every message */
    uint64_t next;      /* the next message number to send */
    uint64_t base;      /* the message number of the current link's id 0 */
    uint64_t delivered; /* messages read on earlier links (first_unacked of each) */
    uint64_t confirmed; /* the final link's count from the service */
    uint64_t retry_at;  /* when to connect again (0: now) */
    unsigned refusals;  /* consecutive refused handshakes, for the pause */
    int open, finished, done, failed;
    int ever_open; /* counted in `established` */
} stream;

typedef struct totals {
    uint64_t complete, exact, confirmed, moved_read, dead_acked, resent;
    uint64_t moved, refused, timeouts, other, t_first_timeout, t_last_timeout;
} totals;

typedef struct sock {
    pthread_t tid;
    pure_ctx *ctx;
    pure_loop *loop;
    stream *streams;
    uint8_t *msg; /* one message's bytes, filled in per send */
    totals t;
} sock;

static struct {
    pure_addr to;
    uint8_t key[PURE_KEY_LEN];
    unsigned sockets, links;
    uint64_t messages, size, rate, idle, deadline, t0;
} cfg = {.sockets = 1,
         .links = 1,
         .messages = 1000,
         .size = 64,
         .idle = 2000 * MS,
         .deadline = 60000 * MS};

/* Streams whose first link completed its handshake, over every socket's thread: when it reaches
 * sockets x links the client says so on stderr, so a test can wait for every handshake to finish
 * before it changes the path (a rebinding mid-handshake sends the INIT's retry to another server).
 */
static unsigned established;

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sends what the rate allows now, then ends the link's stream after the last message. */
static void pump(stream *st, uint64_t now)
{
    if (!st->link || st->finished)
        return;
    uint64_t allowed = cfg.messages;
    if (cfg.rate) {
        uint64_t due = (now - cfg.t0) / (1000000000ull / cfg.rate) + 1;
        allowed = due < allowed ? due : allowed;
    }
    uint8_t *msg = st->sock->msg;
    memcpy(msg, &st->id, 8);
    while (st->next < allowed) {
        memcpy(msg + 8, &st->next, 8); /* the message number: what the receiver would dedupe by */
        if (pure_link_send(st->link, msg, cfg.size) < 0)
            return; /* PURE_EAGAIN: the loop comes back */
        st->next++;
    }
    if (st->next == cfg.messages && pure_link_finish(st->link) == 0)
        st->finished = 1;
}

static void on_established(pure_link *link, void *user)
{
    stream *st = user;
    st->open = 1;
    st->refusals = 0;
    if (!st->ever_open) {
        st->ever_open = 1;
        if (__atomic_add_fetch(&established, 1, __ATOMIC_RELAXED) == cfg.sockets * cfg.links)
            fprintf(stderr, "fleet_client: %.3f s: all %u links established\n",
                    (double)(pure_now() - cfg.t0) / 1e9, cfg.sockets * cfg.links);
    }
}

/* The drain service's answer to the end of the stream: how many messages this link delivered. */
static void on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    stream *st = user;
    if (n != 16)
        return;
    uint64_t count = 0;
    for (int i = 0; i < 8; i++)
        count = count << 8 | d[i];
    st->confirmed = count;
    st->done = 1;
    pure_link_close(link, 0, "done");
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    stream *st = user;
    if (!st)
        return;
    totals *t = &st->sock->t;
    st->link = NULL;
    if (st->done)
        return; /* the service confirmed its count: finished */
    if (info->error == PURE_EMOVED && st->open) {
        t->moved++;
        t->moved_read += info->first_unacked;
    } else if (info->error == PURE_EMOVED) {
        t->refused++; /* the INIT met the drained server: pause, then the director's new choice */
        st->retry_at = pure_now() + (MS << (st->refusals < 6 ? st->refusals : 6));
        st->refusals++;
    } else if (info->error == PURE_ETIMEDOUT) {
        t->timeouts++;
        t->dead_acked += info->first_unacked;
        fprintf(stderr, "fleet_client: %.3f s: stream %llu: %s %s after %llu acknowledged\n",
                (double)(pure_now() - cfg.t0) / 1e9, (unsigned long long)st->id,
                st->open ? "link" : "handshake", pure_strerror(info->error),
                (unsigned long long)info->first_unacked);
        uint64_t w = wall_ns();
        if (!t->t_first_timeout)
            t->t_first_timeout = w;
        t->t_last_timeout = w;
    } else {
        t->other++;
        fprintf(stderr, "fleet_client: stream %llu: %s\n", (unsigned long long)st->id,
                pure_strerror(info->error));
        st->retry_at = pure_now() + 100 * MS;
    }
    /* Every message below base + first_unacked reached a server's application (or one that
     * died); the rest go again on the next link. */
    st->delivered += info->first_unacked;
    t->resent += st->next - (st->base + info->first_unacked);
    st->next = st->base + info->first_unacked;
    st->open = st->finished = 0;
}

static void connect_stream(sock *s, stream *st, uint64_t now)
{
    st->base = st->next;
    if (pure_connect(s->ctx, &cfg.to, cfg.key, "drain", st, &st->link, now) != 0) {
        st->link = NULL;
        st->failed = 1;
    }
}

static void *sock_run(void *arg)
{
    sock *s = arg;
    uint64_t end = cfg.t0 + cfg.deadline;
    for (;;) {
        uint64_t now = pure_now(), left = 0;
        for (unsigned i = 0; i < cfg.links; i++) {
            stream *st = &s->streams[i];
            if (st->done || st->failed)
                continue;
            left++;
            if (!st->link && now >= st->retry_at)
                connect_stream(s, st, now);
            pump(st, now);
        }
        if (!left || now >= end)
            break;
        if (pure_loop_run(s->loop, 2 * MS) != 0)
            break;
    }
    for (unsigned i = 0; i < cfg.links; i++) {
        stream *st = &s->streams[i];
        if (!st->done)
            continue;
        s->t.complete++;
        s->t.confirmed += st->confirmed;
        s->t.exact += st->delivered + st->confirmed == cfg.messages;
    }
    return NULL;
}

static int parse(int argc, char **argv)
{
    if (argc < 3)
        return -1;
    const char *key = argv[2];
    if (!strncmp(key, "pure-pub:", 9)) /* as `pure serve` prints it */
        key += 9;
    if (pure_addr_from_string(&cfg.to, argv[1]) != 0 || pure_key_from_base64(cfg.key, key) != 0)
        return -1;
    for (int i = 3; i + 1 < argc; i += 2) {
        double v = strtod(argv[i + 1], NULL);
        if (v < 0)
            return -1;
        if (!strcmp(argv[i], "--sockets"))
            cfg.sockets = (unsigned)v;
        else if (!strcmp(argv[i], "--links"))
            cfg.links = (unsigned)v;
        else if (!strcmp(argv[i], "--messages"))
            cfg.messages = (uint64_t)v;
        else if (!strcmp(argv[i], "--size"))
            cfg.size = (uint64_t)v;
        else if (!strcmp(argv[i], "--rate"))
            cfg.rate = (uint64_t)v;
        else if (!strcmp(argv[i], "--idle-timeout"))
            cfg.idle = (uint64_t)(v * 1e9);
        else if (!strcmp(argv[i], "--deadline"))
            cfg.deadline = (uint64_t)(v * 1e9);
        else
            return -1;
    }
    if ((argc - 3) % 2 || !cfg.sockets || cfg.sockets > 1024 || !cfg.links || !cfg.messages ||
        cfg.size < 16 || cfg.size > MAX_SIZE || cfg.rate > 1000000000ull || cfg.idle < MS)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (parse(argc, argv) != 0) {
        fprintf(stderr,
                "usage: fleet_client ADDR:PORT SERVER_PUBLIC_KEY [--sockets S] [--links L]\n"
                "       [--messages M] [--size B (16..65536)] [--rate R] "
                "[--idle-timeout SECONDS] [--deadline SECONDS]\n");
        return 2;
    }
    static const pure_callbacks cb = {
        .on_established = on_established, .on_message = on_message, .on_closed = on_closed};
    sock *socks = calloc(cfg.sockets, sizeof *socks);
    if (!socks)
        return 1;
    cfg.t0 = pure_now();
    unsigned started = 0;
    for (; started < cfg.sockets; started++) {
        sock *s = &socks[started];
        pure_settings set;
        pure_settings_default(&set);
        pure_keygen(set.private_key); /* the servers allow any key */
        set.callbacks = &cb;
        set.idle_timeout = cfg.idle;
        set.handshake_timeout = cfg.idle;
        s->streams = calloc(cfg.links, sizeof *s->streams);
        s->msg = calloc(1, cfg.size);
        int ok = s->streams && s->msg && pure_ctx_new(&set, &s->ctx) == 0 &&
                 pure_loop_new(s->ctx, "0.0.0.0:0", &s->loop) == 0;
        for (unsigned i = 0; ok && i < cfg.links; i++) {
            s->streams[i].sock = s;
            s->streams[i].id = (uint64_t)started * cfg.links + i;
        }
        if (!ok || pthread_create(&s->tid, NULL, sock_run, s) != 0) {
            fprintf(stderr, "fleet_client: cannot start socket %u\n", started);
            pure_loop_free(s->loop); /* all of these take NULL */
            pure_ctx_free(s->ctx);
            free(s->streams);
            free(s->msg);
            break;
        }
    }
    totals t = {0};
    for (unsigned i = 0; i < started; i++) {
        sock *s = &socks[i];
        pthread_join(s->tid, NULL);
        pure_loop_free(s->loop); /* sends the CLOSEs still queued */
        for (unsigned j = 0; j < cfg.links; j++)
            if (s->streams[j].link) /* so pure_ctx_free's reports count nothing */
                pure_link_set_user(s->streams[j].link, NULL);
        pure_ctx_free(s->ctx);
        free(s->streams);
        free(s->msg);
        uint64_t *a = (uint64_t *)&t, *b = (uint64_t *)&s->t;
        for (size_t k = 0; k < offsetof(totals, t_first_timeout) / sizeof(uint64_t); k++)
            a[k] += b[k];
        if (s->t.t_first_timeout &&
            (!t.t_first_timeout || s->t.t_first_timeout < t.t_first_timeout))
            t.t_first_timeout = s->t.t_first_timeout;
        if (s->t.t_last_timeout > t.t_last_timeout)
            t.t_last_timeout = s->t.t_last_timeout;
    }
    free(socks);
    uint64_t streams = (uint64_t)cfg.sockets * cfg.links;
    printf("{\"streams\": %llu, \"complete\": %llu, \"exact\": %llu, \"messages\": %llu, "
           "\"confirmed\": %llu, \"moved_read\": %llu, \"dead_acked\": %llu, \"resent\": %llu, "
           "\"moved\": %llu, \"refused\": %llu, \"timeouts\": %llu, \"other\": %llu, "
           "\"timeout_first_ns\": %llu, \"timeout_last_ns\": %llu, \"seconds\": %.3f}\n",
           (unsigned long long)streams, (unsigned long long)t.complete, (unsigned long long)t.exact,
           (unsigned long long)(streams * cfg.messages), (unsigned long long)t.confirmed,
           (unsigned long long)t.moved_read, (unsigned long long)t.dead_acked,
           (unsigned long long)t.resent, (unsigned long long)t.moved, (unsigned long long)t.refused,
           (unsigned long long)t.timeouts, (unsigned long long)t.other,
           (unsigned long long)t.t_first_timeout, (unsigned long long)t.t_last_timeout,
           (double)(pure_now() - cfg.t0) / 1e9);
    return started == cfg.sockets && t.complete == streams && t.exact == streams ? 0 : 1;
}
