/* SPDX-License-Identifier: MIT */
/* rxmem_test: receive memory under attack (issue #11, item 1; docs/protocol.md "Receive
 * memory"). In the simulator, with a counting allocator on the responder:
 *  - 1,000 links each announce a 16 MiB message and send only its first 128 KiB: the responder's
 *    rx_memory stays within max_receive_memory plus the documented slack, and its allocator's
 *    peak with it (the old framer allocated every announced length: 1,000 x 16 MiB); meanwhile
 *    honest links with small messages flow, an honest 2 MiB message gets through, and when the
 *    attackers go every byte is given back;
 *  - 20 honest links each send a 2 MiB message to a responder allowed 4 MiB, over a path with 1%
 *    loss and reordering: all complete (the owner rule: no deadlock with every link holding part
 *    of a message; dropped data is resent), and the same with 256 MiB for comparison;
 *  - a length over max_message_size closes the link with PURE_EMSGSIZE on both sides.
 * The figures go to stdout. RXMEM_LINKS sets the number of attackers (the sanitizer pass may
 * lighten it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "sim.h"
#include "sim_raw.h"
#include "test.h"

static int LINKS = 1000;
#define PART (128u << 10) /* what each attacker sends of its announced 16 MiB */
#define SMALL_LINKS 20
#define SMALL_MSGS 100
#define BIG (2u << 20)

/* ---- a counting allocator with realloc (as the default one has) ---- */

typedef struct heap {
    int64_t live, peak;
} heap;

static void *h_alloc(void *user, size_t n)
{
    heap *h = user;
    void *p = malloc(n);
    if (p && (h->live += (int64_t)n) > h->peak)
        h->peak = h->live;
    return p;
}

static void h_free(void *user, void *p, size_t n)
{
    ((heap *)user)->live -= (int64_t)n;
    free(p);
}

static void *h_realloc(void *user, void *p, size_t old, size_t n)
{
    heap *h = user;
    void *q = realloc(p, n);
    if (q && (h->live += (int64_t)n - (int64_t)old) > h->peak)
        h->peak = h->live;
    return q;
}

/* ---- one end of a link, as the application sees it ---- */

enum kind {
    K_ATTACK,
    K_SMALL,
    K_BIG
};

typedef struct end {
    int kind, server, closed, error;
    uint64_t got, bad;
} end;

typedef struct world {
    end ends[4096];
    int n_ends;
    int established, accepted;
} world;

static world *W;

static end *new_end(int kind, int server)
{
    end *e = &W->ends[W->n_ends++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->server = server;
    return e;
}

static size_t small_size(uint64_t k)
{
    return 1 + (size_t)(sim_mix(k + 1) % 1200);
}

static int on_accept(pure_link *l, const char *svc, const uint8_t *key, void *user)
{
    int kind = strcmp(svc, "attack") == 0 ? K_ATTACK : strcmp(svc, "small") == 0 ? K_SMALL : K_BIG;
    pure_link_set_user(l, new_end(kind, 1));
    W->accepted++;
    return 0;
}

static void on_established(pure_link *l, void *user)
{
    W->established++;
}

static void on_message(pure_link *l, void *user, const uint8_t *d, size_t n)
{
    end *e = user;
    if (!e || !e->server)
        return;
    if (e->kind == K_SMALL) {
        int ok = n == small_size(e->got);
        for (size_t i = 0; ok && i < n; i++)
            ok = d[i] == (uint8_t)(i + e->got);
        e->bad += !ok;
    } else if (e->kind == K_BIG) {
        int ok = n == BIG;
        for (size_t i = 0; ok && i < n; i++)
            ok = d[i] == (uint8_t)(i * 7);
        e->bad += !ok;
    } else {
        e->bad++; /* an attacker's message never completes */
    }
    e->got++;
}

static void on_closed(pure_link *l, void *user, const pure_close_info *info)
{
    end *e = user;
    if (!e)
        return;
    e->closed = 1;
    e->error = info->error;
}

static const pure_callbacks CBS = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_closed = on_closed};

static void base_settings(pure_settings *st, heap *h)
{
    pure_settings_default(st);
    st->callbacks = &CBS;
    st->allow_any = 1;
    st->crypto = &pure_crypto_null;
    st->alloc = h_alloc;
    st->free = h_free;
    st->realloc = h_realloc;
    st->alloc_user = h;
}

static pure_guard_stats guard(sim *s, int ep)
{
    pure_guard_stats g;
    memset(&g, 0, sizeof g);
    pure_ctx_guard_stats_get(sim_ctx(s, ep), &g, sizeof g);
    return g;
}

typedef struct until_arg {
    int kind;
    uint64_t want;
} until_arg;

static uint64_t got_of(int kind)
{
    uint64_t n = 0;
    for (int i = 0; i < W->n_ends; i++)
        if (W->ends[i].server && W->ends[i].kind == kind)
            n += W->ends[i].got;
    return n;
}

static int got_enough(void *arg)
{
    until_arg *u = arg;
    return got_of(u->kind) >= u->want;
}

static int all_up(void *arg)
{
    return W->established >= *(int *)arg && W->accepted >= *(int *)arg;
}

static pure_link *connect_one(sim *s, int from, int to, const char *svc, int kind)
{
    pure_link *l = NULL;
    pure_addr a = sim_addr(s, to);
    CHECK_EQ(pure_connect(sim_ctx(s, from), &a, pure_ctx_public_key(sim_ctx(s, to)), svc,
                          new_end(kind, 0), &l, sim_now(s)),
             0);
    return l;
}

static double mib(int64_t b)
{
    return (double)b / (1 << 20);
}

static void test_announced_flood(void)
{
    static world w;
    memset(&w, 0, sizeof w);
    W = &w;
    heap sh = {0}, ah = {0}, hh = {0};
    sim *s = sim_new(11);
    pure_settings st;
    base_settings(&st, &ah);
    int att = sim_add(s, &st);
    base_settings(&st, &hh);
    int hon = sim_add(s, &st);
    base_settings(&st, &sh);
    st.max_receive_memory = 16u << 20; /* the least allowed: max_message_size */
    int srv = sim_add(s, &st);
    const uint64_t budget = st.max_receive_memory, max_msg = st.max_message_size;
    pure_ctx_add_service(sim_ctx(s, srv), "attack");
    pure_ctx_add_service(sim_ctx(s, srv), "small");
    pure_ctx_add_service(sim_ctx(s, srv), "big");

    pure_link **al = calloc((size_t)LINKS, sizeof *al);
    for (int i = 0; i < LINKS; i++)
        al[i] = connect_one(s, att, srv, "attack", K_ATTACK);
    CHECK(sim_run(s, all_up, &LINKS, sim_now(s) + 60 * SIM_S));
    sim_run(s, NULL, NULL, sim_now(s) + 1 * SIM_S);
    int64_t base = sh.live;
    sh.peak = sh.live;

    /* the attack: every link announces 16 MiB and sends 128 KiB of it */
    for (int i = 0; i < LINKS; i++)
        CHECK_EQ(sim_raw_announce(al[i], 16u << 20, PART), 0);
    sim_run(s, NULL, NULL, sim_now(s) + 10 * SIM_S);
    pure_guard_stats g = guard(s, srv);
    int64_t attack_peak = sh.peak - base;
    /* docs/protocol.md, "Receive memory": the budget, plus the owner's message, plus what every
     * link may hold without asking (PURE_MSGPARSE_MIN, 4 KiB) */
    uint64_t bound = budget + max_msg + (uint64_t)LINKS * 4096;
    printf("attack: %d links x (16 MiB announced, %u KiB sent) = %.0f MiB offered; responder "
           "rx_memory %.1f MiB now, peak %.1f MiB (budget %.0f MiB, documented bound %.1f MiB); "
           "%llu stalls; its allocator's peak above the idle links %.1f MiB (the old framer: "
           "%.0f MiB announced)\n",
           LINKS, PART >> 10, mib((int64_t)LINKS * PART), mib((int64_t)g.rx_memory),
           mib((int64_t)g.rx_memory_peak), mib((int64_t)budget), mib((int64_t)bound),
           (unsigned long long)g.rx_memory_stalls, mib(attack_peak),
           mib((int64_t)LINKS * (16 << 20)));
    CHECK(g.rx_memory_peak <= bound);
    CHECK(g.rx_memory >= budget / 2); /* the attackers did reach the budget */
    CHECK(g.rx_memory_stalls > 0);
    /* the allocator: receive memory plus the busy state of 1,000 links sending (at most 24 KiB
     * each: send ring, ACK ranges, replay window), far from 1,000 x 16 MiB */
    CHECK(attack_peak <= (int64_t)bound + (int64_t)LINKS * 24 * 1024);

    /* honest small messages flow while the attackers hold the budget */
    uint64_t t0 = sim_now(s);
    pure_link *sl[SMALL_LINKS];
    for (int i = 0; i < SMALL_LINKS; i++)
        sl[i] = connect_one(s, hon, srv, "small", K_SMALL);
    int want_up = LINKS + SMALL_LINKS;
    CHECK(sim_run(s, all_up, &want_up, sim_now(s) + 10 * SIM_S));
    static uint8_t msg[1300];
    for (int i = 0; i < SMALL_LINKS; i++)
        for (uint64_t k = 0; k < SMALL_MSGS; k++) {
            size_t n = small_size(k);
            for (size_t j = 0; j < n; j++)
                msg[j] = (uint8_t)(j + k);
            CHECK(pure_link_send(sl[i], msg, n) >= 0);
        }
    until_arg u = {K_SMALL, (uint64_t)SMALL_LINKS * SMALL_MSGS};
    CHECK(sim_run(s, got_enough, &u, sim_now(s) + 20 * SIM_S));
    g = guard(s, srv);
    printf("during the attack: %d honest links delivered %llu small messages (1..1200 B) in "
           "%.0f ms virtual (connect included); rx_memory %.1f MiB\n",
           SMALL_LINKS, (unsigned long long)got_of(K_SMALL), (double)(sim_now(s) - t0) / 1e6,
           mib((int64_t)g.rx_memory));

    /* an honest big message gets through too: the stalled owner loses its exemption */
    t0 = sim_now(s);
    pure_link *bl = connect_one(s, hon, srv, "big", K_BIG);
    uint8_t *big = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        big[i] = (uint8_t)(i * 7);
    CHECK(pure_link_send(bl, big, BIG) >= 0);
    free(big);
    u = (until_arg){K_BIG, 1};
    CHECK(sim_run(s, got_enough, &u, sim_now(s) + 120 * SIM_S));
    g = guard(s, srv);
    printf("during the attack: an honest 2 MiB message arrived after %.0f ms virtual; rx_memory "
           "peak %.1f MiB, %llu stalls\n",
           (double)(sim_now(s) - t0) / 1e6, mib((int64_t)g.rx_memory_peak),
           (unsigned long long)g.rx_memory_stalls);
    CHECK(g.rx_memory_peak <= bound);

    /* the attackers go: every byte they held is given back */
    for (int i = 0; i < LINKS; i++)
        pure_link_abort(al[i], 0, "done");
    sim_run(s, NULL, NULL, sim_now(s) + 5 * SIM_S);
    g = guard(s, srv);
    printf("after the attackers left: rx_memory %llu bytes, allocator %.1f MiB above the "
           "start\n",
           (unsigned long long)g.rx_memory, mib(sh.live - base));
    CHECK_EQ(g.rx_memory, 0);
    uint64_t bad = 0;
    int srv_closed_wrong = 0;
    for (int i = 0; i < w.n_ends; i++) {
        bad += w.ends[i].bad;
        if (w.ends[i].server && w.ends[i].kind != K_ATTACK && w.ends[i].closed)
            srv_closed_wrong++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(srv_closed_wrong, 0);
    sim_free(s);
    CHECK_EQ(sh.live, 0);
    free(al);
}

/* 20 honest links, a 2 MiB message each, against `budget`: with 4 MiB every link holds part of
 * a message long before any completes; the owner rule lets them all finish. 1% loss and
 * reordering, so rings come and go under pressure too. */
static void run_big(uint64_t budget, double *ms, pure_guard_stats *out)
{
    static world w;
    memset(&w, 0, sizeof w);
    W = &w;
    heap sh = {0}, ch = {0};
    sim *s = sim_new(12);
    pure_settings st;
    base_settings(&st, &ch);
    st.max_message_size = 4u << 20;
    int cli = sim_add(s, &st);
    base_settings(&st, &sh);
    st.max_message_size = 4u << 20;
    st.max_receive_memory = budget;
    int srv = sim_add(s, &st);
    pure_ctx_add_service(sim_ctx(s, srv), "big");
    sim_path p = {.delay = 5 * SIM_MS,
                  .bandwidth = 1000000000ull,
                  .queue = 4 << 20,
                  .loss = 0.01,
                  .reorder = 0.01,
                  .reorder_delay = 3 * SIM_MS};
    sim_set_path(s, cli, srv, &p);
    sim_set_path(s, srv, cli, &p);
    const int n = 20;
    pure_link *l[20];
    for (int i = 0; i < n; i++)
        l[i] = connect_one(s, cli, srv, "big", K_BIG);
    CHECK(sim_run(s, all_up, (void *)&n, sim_now(s) + 10 * SIM_S));
    uint8_t *big = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        big[i] = (uint8_t)(i * 7);
    uint64_t t0 = sim_now(s);
    for (int i = 0; i < n; i++)
        CHECK(pure_link_send(l[i], big, BIG) >= 0);
    free(big);
    until_arg u = {K_BIG, (uint64_t)n};
    CHECK(sim_run(s, got_enough, &u, sim_now(s) + 300 * SIM_S));
    *ms = (double)(sim_now(s) - t0) / 1e6;
    *out = guard(s, srv);
    CHECK_EQ(got_of(K_BIG), n);
    int closed = 0;
    uint64_t bad = 0;
    for (int i = 0; i < w.n_ends; i++) {
        closed += w.ends[i].closed;
        bad += w.ends[i].bad;
    }
    CHECK_EQ(closed, 0);
    CHECK_EQ(bad, 0);
    sim_run(s, NULL, NULL, sim_now(s) + 2 * SIM_S);
    CHECK_EQ(guard(s, srv).rx_memory, 0);
    sim_free(s);
    CHECK_EQ(sh.live, 0);
}

static void test_big_messages_no_deadlock(void)
{
    double tight_ms, wide_ms;
    pure_guard_stats tight, wide;
    run_big(4u << 20, &tight_ms, &tight);
    run_big(256u << 20, &wide_ms, &wide);
    printf("20 links x 2 MiB: budget 4 MiB: all in %.0f ms virtual, rx_memory peak %.1f MiB, "
           "%llu stalls; budget 256 MiB: %.0f ms, peak %.1f MiB, %llu stalls\n",
           tight_ms, mib((int64_t)tight.rx_memory_peak), (unsigned long long)tight.rx_memory_stalls,
           wide_ms, mib((int64_t)wide.rx_memory_peak), (unsigned long long)wide.rx_memory_stalls);
    /* the documented bound: budget + the owner's message + 4 KiB per link */
    CHECK(tight.rx_memory_peak <= (4u << 20) + (4u << 20) + 20 * 4096);
    CHECK(tight.rx_memory_stalls > 0);
}

/* A message that can never fit: PURE_EMSGSIZE to the application on both sides. */
static void test_too_big(void)
{
    for (int hostile = 0; hostile < 2; hostile++) {
        static world w;
        memset(&w, 0, sizeof w);
        W = &w;
        heap sh = {0}, ch = {0};
        sim *s = sim_new(13);
        pure_settings st;
        base_settings(&st, &ch);
        int cli = sim_add(s, &st);
        base_settings(&st, &sh);
        st.max_message_size = 1u << 20;
        int srv = sim_add(s, &st);
        pure_ctx_add_service(sim_ctx(s, srv), "attack");
        pure_ctx_add_service(sim_ctx(s, srv), "big");
        pure_link *l =
            connect_one(s, cli, srv, hostile ? "attack" : "big", hostile ? K_ATTACK : K_BIG);
        int one = 1;
        CHECK(sim_run(s, all_up, &one, sim_now(s) + 10 * SIM_S));
        if (hostile) {
            /* a raw length just over the limit, then a few bytes */
            CHECK_EQ(sim_raw_announce(l, (1u << 20) + 1, 100), 0);
        } else {
            /* an honest peer whose own limit is larger (16 MiB) */
            size_t n = (1u << 20) + 1;
            uint8_t *m = calloc(1, n);
            CHECK(pure_link_send(l, m, n) >= 0);
            free(m);
        }
        sim_run(s, NULL, NULL, sim_now(s) + 5 * SIM_S);
        CHECK_EQ(w.n_ends, 2);
        for (int i = 0; i < w.n_ends; i++) {
            CHECK(w.ends[i].closed);
            CHECK_EQ(w.ends[i].error, PURE_EMSGSIZE);
        }
        printf("%s length of 1 MiB + 1 against max_message_size 1 MiB: responder closed with "
               "%s, the sender heard %s; rx_memory peak %llu bytes\n",
               hostile ? "a raw" : "an honest", pure_strerror(w.ends[1].error),
               pure_strerror(w.ends[0].error), (unsigned long long)guard(s, srv).rx_memory_peak);
        CHECK(guard(s, srv).rx_memory_peak <= 1u << 20);
        sim_free(s);
        CHECK_EQ(sh.live, 0);
    }
}

int main(void)
{
    const char *e = getenv("RXMEM_LINKS");
    if (e && atoi(e) >= 100)
        LINKS = atoi(e);
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(test_announced_flood);
    RUN(test_big_messages_no_deadlock);
    RUN(test_too_big);
    return pure_test_finish();
}
