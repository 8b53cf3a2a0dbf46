/* SPDX-License-Identifier: MIT */
/* idle_test: many links open and idle in the simulator. Without keepalive an idle link sends
 * nothing and fires no timer for a virtual hour; with keepalive it sends exactly one PING per
 * interval; after the idle hour every link still delivers a message at once (no new handshake);
 * and an idle link's memory, counted by the allocator, stays small. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "sim.h"
#include "test.h"

/* 10,000 links by default; PURE_IDLE_LINKS makes the sanitizer pass lighter */
static int LINKS = 10000;

typedef struct counter {
    int64_t bytes;
} counter;

static void *count_alloc(void *user, size_t n)
{
    counter *c = user;
    c->bytes += (int64_t)n;
    return malloc(n);
}

static void count_free(void *user, void *p, size_t n)
{
    counter *c = user;
    c->bytes -= (int64_t)n;
    free(p);
}

typedef struct world {
    pure_link **cl;
    pure_link **sl;
    int accepted, established, delivered, bulk;
} world;

static int on_accept(pure_link *l, const char *svc, const uint8_t *k, void *user)
{
    world *w = user;
    pure_link_set_user(l, (void *)(intptr_t)w->accepted);
    w->sl[w->accepted++] = l;
    return 0;
}

static void on_established(pure_link *l, void *user)
{
    ((world *)user)->established++;
}

static world *the_world;
#define BULK 1000 /* the second wake-up's messages: BULK to BULK + 7 bytes */
static void on_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    if (n >= 5 && n <= 12 && memcmp(d, "wake!", 5) == 0)
        the_world->delivered++;
    if (n >= BULK && n < BULK + 8 && memcmp(d, "bulk!", 5) == 0 && d[n - 1] == (uint8_t)n)
        the_world->bulk++;
}

static int closed;
static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    if (info->error == PURE_ECLOSED)
        return; /* sim_free freed the context: every link is reported closed then */
    closed++;
    fprintf(stderr, "idle_test: a link closed: %s\n", pure_strerror(info->error));
}

static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_closed = on_closed};

static int all_established(void *arg)
{
    world *w = arg;
    return w->established == LINKS && w->accepted == LINKS;
}

static int one_established(void *arg)
{
    world *w = arg;
    return w->established == 1 && w->accepted == 1;
}

static int all_delivered(void *arg)
{
    return ((world *)arg)->delivered == LINKS;
}

static int all_bulk(void *arg)
{
    return ((world *)arg)->bulk == LINKS;
}

/* keepalive: configured on the initiators only (the responders just answer). */
static void run(uint64_t keepalive, int64_t *bytes_per_link_cli, int64_t *bytes_per_link_srv,
                int64_t *after_cli, int64_t *after_srv)
{
    world *w = calloc(1, sizeof *w);
    w->cl = calloc((size_t)LINKS, sizeof *w->cl);
    w->sl = calloc((size_t)LINKS, sizeof *w->sl);
    the_world = w;
    counter cc = {0}, sc = {0};
    sim *s = sim_new(42);
    pure_settings st;
    pure_settings_default(&st);
    st.callbacks = &cbs;
    st.user = w;
    st.allow_any = 1;
    st.keepalive = keepalive;
    st.crypto = &pure_crypto_null; /* 10,000 handshakes and an hour of keepalives stay quick */
    st.alloc = count_alloc;
    st.free = count_free;
    st.alloc_user = &cc;
    int cli = sim_add(s, &st);
    st.alloc_user = &sc;
    st.keepalive = 0;
    int srv = sim_add(s, &st);
    pure_ctx_add_service(sim_ctx(s, srv), "idle");
    sim_path p = {.delay = 1 * SIM_MS};
    sim_set_path(s, cli, srv, &p);
    sim_set_path(s, srv, cli, &p);
    /* The first link, left to fall idle, makes what a context allocates once, at its first
     * handshake (admission tables, the cache of ss results: sscache.h): the figure below is
     * what every further idle link costs, each side, whatever LINKS is. */
    pure_addr to = sim_addr(s, srv);
    CHECK_EQ(pure_connect(sim_ctx(s, cli), &to, pure_ctx_public_key(sim_ctx(s, srv)), "idle", w,
                          &w->cl[0], sim_now(s)),
             0);
    CHECK(sim_run(s, one_established, w, 10 * SIM_S));
    sim_run(s, NULL, NULL, sim_now(s) + 2 * SIM_S);
    int64_t cli_base = cc.bytes, srv_base = sc.bytes;
    for (int i = 1; i < LINKS; i++)
        CHECK_EQ(pure_connect(sim_ctx(s, cli), &to, pure_ctx_public_key(sim_ctx(s, srv)), "idle", w,
                              &w->cl[i], sim_now(s)),
                 0);
    CHECK(sim_run(s, all_established, w, 120 * SIM_S));
    if (closed || !all_established(w)) { /* the rest would touch closed links */
        CHECK_EQ(closed, 0);
        sim_free(s);
        free(w->cl);
        free(w->sl);
        free(w);
        return;
    }
    /* let every first packet be acknowledged, then measure the idle state */
    sim_run(s, NULL, NULL, sim_now(s) + 2 * SIM_S);
    *bytes_per_link_cli = (cc.bytes - cli_base) / (LINKS - 1);
    *bytes_per_link_srv = (sc.bytes - srv_base) / (LINKS - 1);

    pure_ctx_stats c0, s0, c1, s1;
    pure_ctx_stats_get(sim_ctx(s, cli), &c0);
    pure_ctx_stats_get(sim_ctx(s, srv), &s0);
    uint64_t idle = 3600 * SIM_S;
    sim_run(s, NULL, NULL, sim_now(s) + idle);
    pure_ctx_stats_get(sim_ctx(s, cli), &c1);
    pure_ctx_stats_get(sim_ctx(s, srv), &s1);
    sim_run(s, NULL, NULL, sim_now(s) + 2 * SIM_S); /* past the last keepalive's release */
    *after_cli = (cc.bytes - cli_base) / (LINKS - 1);
    *after_srv = (sc.bytes - srv_base) / (LINKS - 1);
    uint64_t sent = (c1.datagrams_out - c0.datagrams_out) + (s1.datagrams_out - s0.datagrams_out);
    uint64_t fired = (c1.timers_fired - c0.timers_fired) + (s1.timers_fired - s0.timers_fired);
    CHECK_EQ(c1.links, LINKS);
    CHECK_EQ(s1.links, LINKS);
    if (keepalive == 0) {
        CHECK_EQ(sent, 0);
        CHECK_EQ(fired, 0);
    } else {
        /* one PING per link per interval from the initiator (its ACK comes back from the peer) */
        uint64_t intervals = idle / keepalive;
        uint64_t pings = c1.datagrams_out - c0.datagrams_out;
        CHECK(pings >= (intervals - 1) * LINKS && pings <= (intervals + 1) * LINKS);
        uint64_t keepalives = 0;
        for (int i = 0; i < LINKS; i++) {
            pure_link_stats ls;
            pure_link_stats_get(w->cl[i], &ls);
            keepalives += ls.keepalives;
        }
        CHECK(keepalives >= (intervals - 1) * LINKS && keepalives <= (intervals + 1) * LINKS);
        printf("keepalive %llus: %llu packets from the initiators over %llu intervals and %d "
               "links\n",
               (unsigned long long)(keepalive / SIM_S), (unsigned long long)pings,
               (unsigned long long)intervals, LINKS);
    }
    /* wake up: one message on every link, delivered without a new handshake */
    uint64_t hs_before = c1.handshakes_started;
    uint64_t t0 = sim_now(s);
    /* sizes differ from link to link, so packets of several sizes meet in the coalesced bursts */
    for (int i = 0; i < LINKS; i++)
        CHECK(pure_link_send(w->cl[i], "wake!!!!!!!!", 5 + (size_t)(i % 8)) >= 0);
    CHECK(sim_run(s, all_delivered, w, t0 + 10 * SIM_S));
    CHECK_EQ(w->delivered, LINKS);
    pure_ctx_stats c2;
    pure_ctx_stats_get(sim_ctx(s, cli), &c2);
    CHECK_EQ(c2.handshakes_started, hs_before);
    /* the wake-up packets of links to one peer share GSO bursts instead of one send each */
    uint64_t dgrams = c2.datagrams_out - c1.datagrams_out, bursts = c2.bursts_out - c1.bursts_out;
    CHECK(bursts > 0 && dgrams >= 4 * bursts);
    /* and a message a few bytes longer than the burst's first packet still joins it (that packet
     * has a little headroom): before, it sent a padded ACK instead and its message later, 3.4
     * datagrams a link */
    CHECK(dgrams <= 2 * (uint64_t)LINKS);
    printf("wake-up: %llu datagrams in %llu bursts\n", (unsigned long long)dgrams,
           (unsigned long long)bursts);
    /* again with a message larger than the small segments that take padded packets: packets of
     * links to one peer still share bursts (before: one burst per link), and no packet is cut to
     * fit one: each link sends its message in one datagram and, later, the ACK of the responder's
     * credit update (a message cut in two to join a burst made it 2.5 datagrams a link) */
    uint8_t big[BULK + 8];
    memset(big, 'x', sizeof big);
    memcpy(big, "bulk!", 5);
    for (int i = 0; i < LINKS; i++) {
        size_t len = BULK + (size_t)(i % 8);
        big[len - 1] = (uint8_t)len;
        CHECK(pure_link_send(w->cl[i], big, len) >= 0);
    }
    CHECK(sim_run(s, all_bulk, w, sim_now(s) + 10 * SIM_S));
    CHECK_EQ(w->bulk, LINKS);
    pure_ctx_stats c3;
    pure_ctx_stats_get(sim_ctx(s, cli), &c3);
    dgrams = c3.datagrams_out - c2.datagrams_out, bursts = c3.bursts_out - c2.bursts_out;
    CHECK(bursts > 0 && dgrams >= 4 * bursts);
    CHECK(dgrams <= 2 * (uint64_t)LINKS + (uint64_t)LINKS / 8);
    printf("wake-up with %d-byte messages: %llu datagrams in %llu bursts\n", BULK,
           (unsigned long long)dgrams, (unsigned long long)bursts);
    c1 = c2;
    printf("idle links (keepalive %llu s): %lld bytes per idle link (initiator), %lld "
           "(responder), %lld / %lld after the idle hour; %llu packets and %llu timers while "
           "idle; all %d woke in %.1f ms virtual\n",
           (unsigned long long)(keepalive / SIM_S), (long long)*bytes_per_link_cli,
           (long long)*bytes_per_link_srv, (long long)*after_cli, (long long)*after_srv,
           (unsigned long long)sent, (unsigned long long)fired, LINKS,
           (double)(sim_now(s) - t0) / 1e6);
    sim_free(s);
    free(w->cl);
    free(w->sl);
    free(w);
}

static void test_idle_without_keepalive(void)
{
    int64_t c, s, c2, s2;
    run(0, &c, &s, &c2, &s2);
    /* What the core allocates for an idle link, including its share of the link table: at most
     * 1 KiB per side (OpenSSL's AEAD contexts are released while idle, so none hide outside). */
    CHECK(c <= 1024);
    CHECK(s <= 1024);
    CHECK(c2 <= 1024);
    CHECK(s2 <= 1024);
}

static void test_idle_with_keepalive(void)
{
    int64_t c, s, c2, s2;
    run(25 * SIM_S, &c, &s, &c2, &s2);
    CHECK(c2 <= 1024); /* keepalives rebuild state briefly, then give it back */
    CHECK(s2 <= 1024);
}

int main(void)
{
    const char *e = getenv("PURE_IDLE_LINKS");
    if (e && atoi(e) >= 100)
        LINKS = atoi(e);
    RUN(test_idle_without_keepalive);
    RUN(test_idle_with_keepalive);
    return pure_test_finish();
}
