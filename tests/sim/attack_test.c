/* SPDX-License-Identifier: MIT */
/* attack_test: hostile peers against the handshake, in the simulator, each test asserting what
 * the victim spends (DH operations, half-open links, replies) and printing it:
 *   - an authenticated INIT replayed from 10,000 spoofed addresses (no DH at all), and once
 *     more after the ephemeral-key cache forgot it (dropped by its timestamp, no link);
 *   - copies of one INIT from other addresses while its sender resends it;
 *   - one cookie used for many INITs from its address (each needs its own);
 *   - a flood of valid INITs from 5,000 spoofed addresses at 50,000 a second while an honest
 *     client connects (it connects within 2 s; half-open links and DH stay bounded, and all of
 *     them are uncounted again at the end), and one of 10,000 while 100 honest links from one
 *     host connect (all within 2 s, the responder under load throughout);
 *   - a source with real cookies that never completes: held to its token bucket and its
 *     half-open cap;
 *   - valid INITs spoofed from a victim's own address, past handshake_load and kept up: the
 *     victim, proving its address with a cookie, still connects in two round trips (N1);
 *   - one cookie on 1,000 junk INITs from an address sharing the victim's bucket: one DH and
 *     one token, the victim not throttled (N3);
 *   - max_half_open below handshake_load: spoofed links fill half of it at most;
 *   - forged COOKIE and REJECT packets aimed at a connecting client;
 *   - an older genuine packet from a third address while a new address is validated;
 *   - a RESP whose unauthenticated header was changed on the way;
 *   - silent mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "state.h"
#include "sim_app.h"
#include "test.h"
#include "wire.h"

static const sim_path base = {.delay = 10 * SIM_MS};

static void both(sim_app *a)
{
    sim_set_path(a->s, a->cli, a->srv, &base);
    sim_set_path(a->s, a->srv, a->cli, &base);
}

/* A source address no simulated endpoint has (host byte >= 100): replies to it are lost. */
static pure_addr spoof(uint32_t i)
{
    pure_addr a;
    memset(&a, 0, sizeof a);
    a.len = 6;
    a.bytes[0] = 10;
    a.bytes[1] = (uint8_t)(i >> 16);
    a.bytes[2] = (uint8_t)(i >> 8);
    a.bytes[3] = (uint8_t)(100 + i % 100);
    a.bytes[4] = (uint8_t)(i >> 8);
    a.bytes[5] = (uint8_t)i;
    return a;
}

static pure_guard_stats guard(sim_app *a, int ep)
{
    pure_guard_stats g;
    pure_ctx_guard_stats_get(sim_ctx(a->s, ep), &g, sizeof g);
    return g;
}

static pure_ctx_stats stats(sim_app *a, int ep)
{
    pure_ctx_stats st;
    pure_ctx_stats_get(sim_ctx(a->s, ep), &st);
    return st;
}

/* The first datagram of a type from one endpoint to another, captured by the tap. */
typedef struct capture {
    int from, to;
    uint8_t type;
    uint8_t d[512];
    size_t n;
    int count;
} capture;

static capture caps[4];
static int n_caps;

static void tap(void *arg, int from, int to, const uint8_t *d, size_t n)
{
    (void)arg;
    for (int i = 0; i < n_caps; i++) {
        capture *c = &caps[i];
        if (c->from == from && c->to == to && n && d[0] == c->type && n <= sizeof c->d) {
            if (!c->count++) {
                memcpy(c->d, d, n);
                c->n = n;
            }
        }
    }
}

static capture *want(sim_app *a, int from, int to, uint8_t type)
{
    capture *c = &caps[n_caps++];
    memset(c, 0, sizeof *c);
    c->from = from;
    c->to = to;
    c->type = type;
    sim_set_tap(a->s, tap, NULL);
    return c;
}

static int established(void *arg)
{
    return ((sim_app *)arg)->established;
}

/* Valid INITs for the responder whose public key is `key`, made by throwaway initiators (each
 * context runs PURE_HS_IN_FLIGHT handshakes at once, so it takes several). */
static size_t make_inits(const pure_ctx *victim, uint8_t (*out)[512], size_t *lens, size_t count,
                         uint64_t seed)
{
    size_t made = 0;
    while (made < count) {
        pure_settings st;
        pure_settings_default(&st);
        for (int i = 0; i < 32; i++)
            st.private_key[i] = (uint8_t)(seed * 131 + made * 7 + (size_t)i + 1);
        st.crypto = victim->crypto;
        pure_ctx *c = NULL;
        if (pure_ctx_new(&st, &c) != 0)
            return made;
        pure_addr to = spoof(0);
        for (int i = 0; i < PURE_HS_IN_FLIGHT; i++) {
            pure_link *l;
            pure_connect(c, &to, pure_ctx_public_key(victim), "drain", NULL, &l, 0);
        }
        uint8_t buf[65536];
        size_t seg;
        pure_addr dst;
        int64_t n;
        while (made < count && (n = pure_ctx_write(c, buf, sizeof buf, &seg, &dst, 0)) > 0)
            for (int64_t off = 0; off < n && made < count; off += (int64_t)seg) {
                size_t len = (size_t)(n - off) < seg ? (size_t)(n - off) : seg;
                if (buf[off] == PURE_PKT_INIT && len <= 512) {
                    memcpy(out[made], buf + off, len);
                    lens[made++] = len;
                }
            }
        pure_ctx_free(c);
    }
    return made;
}

static void allow_list(pure_settings *s, int server)
{
    s->allow_any = !server;
}

static void test_replay_costs_no_dh(void)
{
    sim_app *a = sim_app_new(1, 20, 1, 100, allow_list);
    both(a);
    /* the server allows exactly the client's key */
    pure_ctx_allow(sim_ctx(a->s, a->srv), pure_ctx_public_key(sim_ctx(a->s, a->cli)));
    n_caps = 0;
    capture *init = want(a, a->cli, a->srv, PURE_PKT_INIT);
    sim_app_connect(a, NULL, NULL);
    sim_app_run(a, 60 * SIM_S);
    CHECK(sim_app_ok(a));
    CHECK(init->n > 0);
    pure_ctx *srv = sim_ctx(a->s, a->srv);
    pure_guard_stats g0 = guard(a, a->srv);
    pure_ctx_stats s0 = stats(a, a->srv);
    for (uint32_t i = 0; i < 10000; i++) {
        pure_addr from = spoof(i);
        uint8_t copy[512];
        memcpy(copy, init->d, init->n);
        pure_ctx_read(srv, &from, copy, init->n, sim_now(a->s));
    }
    sim_run(a->s, NULL, NULL, sim_now(a->s) + SIM_S);
    pure_guard_stats g1 = guard(a, a->srv);
    pure_ctx_stats s1 = stats(a, a->srv);
    printf("replay x10,000 from spoofed addresses: %llu DH, %llu dropped as replays, %llu links "
           "made, %llu datagrams sent\n",
           (unsigned long long)(g1.dh_ops - g0.dh_ops),
           (unsigned long long)(g1.inits_replayed - g0.inits_replayed),
           (unsigned long long)(s1.links - s0.links),
           (unsigned long long)(s1.datagrams_out - s0.datagrams_out));
    CHECK_EQ(g1.dh_ops - g0.dh_ops, 0);
    CHECK_EQ(g1.inits_replayed - g0.inits_replayed, 10000);
    CHECK_EQ(s1.links, s0.links);
    CHECK_EQ(s1.datagrams_out, s0.datagrams_out);

    /* The cache forgets (here: all at once); the timestamp still stops the replay, after the DH
     * that reveal the initiator's key (es, and ss, which the genuine INIT left in the context's
     * cache of ss results: one DH), and before any link, reply or further DH. */
    memset(srv->admit.seen, 0, PURE_ADMIT_SEEN_SETS * 4 * sizeof *srv->admit.seen);
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 11 * SIM_S); /* past the timestamp window */
    pure_addr from = spoof(77);
    pure_ctx_read(srv, &from, init->d, init->n, sim_now(a->s));
    sim_run(a->s, NULL, NULL, sim_now(a->s) + SIM_S);
    pure_guard_stats g2 = guard(a, a->srv);
    pure_ctx_stats s2 = stats(a, a->srv);
    printf("replay after the cache forgot it: %llu DH, dropped by its timestamp: %llu\n",
           (unsigned long long)(g2.dh_ops - g1.dh_ops),
           (unsigned long long)(g2.inits_replayed - g1.inits_replayed));
    CHECK_EQ(g2.dh_ops - g1.dh_ops, 1);
    CHECK_EQ(g2.inits_replayed - g1.inits_replayed, 1);
    CHECK_EQ(s2.links, s1.links);
    CHECK_EQ(s2.datagrams_out, s1.datagrams_out);
    sim_app_free(a);
}

static void test_copies_from_other_addresses(void)
{
    /* Every RESP to the client is lost at first, so the client resends its INIT; copies of the
     * same INIT arrive from 50 other addresses meanwhile. The client's own resends are answered
     * from its link; the copies make no link and no DH, and at most 3 of them get a copy of the
     * RESP (the initiator's NAT may have moved it: soak_test's rebinding needs it). */
    sim_app *a = sim_app_new(2, 20, 1, 100, NULL);
    sim_path to_cli = base;
    to_cli.lose_first = 2;
    sim_set_path(a->s, a->cli, a->srv, &base);
    sim_set_path(a->s, a->srv, a->cli, &to_cli);
    n_caps = 0;
    capture *init = want(a, a->cli, a->srv, PURE_PKT_INIT);
    sim_app_connect(a, NULL, NULL);
    sim_run(a->s, NULL, NULL, 50 * SIM_MS); /* the INIT reached the server: one link */
    CHECK(init->n > 0);
    pure_guard_stats g0 = guard(a, a->srv);
    pure_ctx_stats s0 = stats(a, a->srv);
    for (uint32_t i = 0; i < 50; i++) {
        pure_addr from = spoof(i);
        pure_ctx_read(sim_ctx(a->s, a->srv), &from, init->d, init->n, sim_now(a->s));
    }
    pure_guard_stats g1 = guard(a, a->srv);
    pure_ctx_stats s1 = stats(a, a->srv);
    CHECK_EQ(g1.dh_ops, g0.dh_ops);
    CHECK_EQ(s1.links, s0.links);
    CHECK_EQ(g1.inits_replayed - g0.inits_replayed, 47);
    sim_run(a->s, NULL, NULL, sim_now(a->s)); /* flush the replies */
    s1 = stats(a, a->srv);
    CHECK_EQ(s1.datagrams_out - s0.datagrams_out, 3);
    sim_app_run(a, 60 * SIM_S);
    CHECK(sim_app_ok(a));
    pure_guard_stats g = guard(a, a->srv);
    pure_ctx_stats st = stats(a, a->srv);
    CHECK_EQ(st.links, 1);
    CHECK_EQ(st.handshakes_accepted, 1);
    CHECK(g.inits_duplicate >= 50 + 1); /* 50 copies and the client's resends found the link */
    sim_app_free(a);
}

static void always_load(pure_settings *s, int server)
{
    if (server)
        s->handshake_load = 0; /* a cookie is always demanded */
}

static void test_one_cookie_one_init(void)
{
    sim_app *a = sim_app_new(3, 20, 1, 100, always_load);
    both(a);
    n_caps = 0;
    capture *init = want(a, a->cli, a->srv, PURE_PKT_INIT);
    capture *cookie = want(a, a->srv, a->cli, PURE_PKT_COOKIE);
    sim_app_connect(a, NULL, NULL);
    sim_app_run(a, 60 * SIM_S);
    CHECK(sim_app_ok(a)); /* INIT, COOKIE, INIT with mac2, RESP */
    CHECK(cookie->n == PURE_COOKIE_PKT);
    CHECK(init->count >= 2);
    pure_ctx *srv = sim_ctx(a->s, a->srv);
    /* the client's cookie, as the client decrypted it */
    uint8_t key[PURE_HASH_LEN], ck[16];
    pure_admit_cookie_key(srv->crypto, pure_ctx_public_key(srv), key);
    CHECK_EQ(pure_admit_cookie_open(srv->crypto, key, init->d + init->n - 2 * PURE_MAC_LEN,
                                    cookie->d + 5, ck),
             0);
    /* 100 other valid INITs from the client's address, each with a mac2 made from that cookie */
    static uint8_t inits[100][512];
    size_t lens[100];
    CHECK_EQ(make_inits(srv, inits, lens, 100, 3), 100);
    pure_guard_stats g0 = guard(a, a->srv);
    pure_ctx_stats s0 = stats(a, a->srv);
    pure_addr cli = sim_addr(a->s, a->cli);
    for (int i = 0; i < 100; i++) {
        pure_admit_mac(srv->crypto, ck, sizeof ck, inits[i], lens[i] - PURE_MAC_LEN,
                       inits[i] + lens[i] - PURE_MAC_LEN);
        pure_ctx_read(srv, &cli, inits[i], lens[i], sim_now(a->s));
        sim_run(a->s, NULL, NULL, sim_now(a->s)); /* sends the reply (the queue holds 64) */
    }
    pure_guard_stats g1 = guard(a, a->srv);
    pure_ctx_stats s1 = stats(a, a->srv);
    printf("one cookie, 100 other INITs from its address: %llu DH, %llu links, %llu cookie "
           "replies\n",
           (unsigned long long)(g1.dh_ops - g0.dh_ops), (unsigned long long)(s1.links - s0.links),
           (unsigned long long)(s1.cookies_sent - s0.cookies_sent));
    CHECK_EQ(g1.dh_ops - g0.dh_ops, 0);
    CHECK_EQ(s1.links, s0.links);
    CHECK_EQ(s1.cookies_sent - s0.cookies_sent, 100);
    sim_app_free(a);
}

static void test_flood_of_valid_inits(void)
{
    /* 5,000 valid INITs (allow_any: any key is welcome) from 5,000 spoofed addresses, one every
     * 20 us (50,000 a second), and an honest client connecting in the middle of it. */
    enum {
        N = 5000
    };
    static uint8_t inits[N][512];
    static size_t lens[N];
    sim_app *a = sim_app_new(4, 20, 1, 100, NULL);
    both(a);
    pure_ctx *srv = sim_ctx(a->s, a->srv);
    CHECK_EQ(make_inits(srv, inits, lens, N, 4), N);
    uint64_t t = sim_now(a->s), connect_at = 0, est_at = 0;
    uint32_t peak_half_open = 0;
    for (uint32_t i = 0; i < N; i++) {
        pure_addr from = spoof(i);
        pure_ctx_read(srv, &from, inits[i], lens[i], t + i * 20000ull);
        sim_run(a->s, NULL, NULL, t + i * 20000ull);
        if (srv->half_open > peak_half_open)
            peak_half_open = srv->half_open;
        if (i == N / 2) {
            connect_at = sim_now(a->s);
            sim_app_connect(a, NULL, NULL);
        }
        if (!est_at && a->established)
            est_at = sim_now(a->s);
    }
    if (!est_at) {
        sim_run(a->s, established, a, sim_now(a->s) + 10 * SIM_S);
        est_at = a->established ? sim_now(a->s) : UINT64_MAX;
    }
    sim_app_run(a, sim_now(a->s) + 60 * SIM_S);
    CHECK(sim_app_ok(a));
    pure_guard_stats g = guard(a, a->srv);
    pure_ctx_stats st = stats(a, a->srv);
    printf("valid-INIT flood x%d at 50,000/s: %llu DH (%.2f per INIT), peak %u half-open, %llu "
           "cookies sent; the honest client connected in %.1f ms\n",
           N, (unsigned long long)g.dh_ops, (double)g.dh_ops / N, peak_half_open,
           (unsigned long long)st.cookies_sent,
           est_at == UINT64_MAX ? -1.0 : (double)(est_at - connect_at) / 1e6);
    CHECK(est_at != UINT64_MAX && est_at - connect_at <= 2 * SIM_S);
    CHECK(peak_half_open <= 1024 + 64);      /* handshake_load, then cookies */
    CHECK(g.dh_ops <= 5 * (1024 + 64) + 16); /* 5 DH per admitted INIT, none after */
    CHECK(st.cookies_sent > 0);
    /* every half-open link times out and is uncounted, in the context and in its bucket */
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 120 * SIM_S);
    CHECK_EQ(srv->half_open, 0);
    uint64_t held = 0;
    for (uint32_t i = 0; i < srv->admit.src_n; i++)
        held += srv->admit.src[i].half_open;
    CHECK_EQ(held, 0);
    sim_app_free(a);
}

/* 100 honest links from one client host during the flood, each timed from its pure_connect. */
typedef struct honest {
    uint64_t connected_at, established[100], worst;
    int n_established, n_accepted, n_closed;
    sim *s;
} honest;

static int h_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    (void)l;
    (void)svc;
    (void)k;
    ((honest *)u)->n_accepted++;
    return 0;
}

static void h_established(pure_link *l, void *u)
{
    (void)l;
    honest *h = *(honest **)u;
    uint64_t took = sim_now(h->s) - h->connected_at;
    h->established[h->n_established++] = took;
    if (took > h->worst)
        h->worst = took;
}

static void h_closed(pure_link *l, void *u, const pure_close_info *info)
{
    (void)l;
    (void)info;
    if (u)
        (*(honest **)u)->n_closed++;
}

static const pure_callbacks h_srv_cb = {.on_accept = h_accept};
static const pure_callbacks h_cli_cb = {.on_established = h_established, .on_closed = h_closed};

static int all_honest(void *arg)
{
    return ((honest *)arg)->n_established == 100;
}

static void test_flood_with_100_honest_clients(void)
{
    enum {
        N = 10000
    };
    static uint8_t inits[N][512];
    static size_t lens[N];
    static honest h;
    memset(&h, 0, sizeof h);
    honest *hp = &h;
    sim *s = sim_new(10);
    h.s = s;
    pure_settings st;
    pure_settings_default(&st);
    st.allow_any = 1;
    st.callbacks = &h_srv_cb;
    st.user = &h;
    int srv = sim_add(s, &st);
    pure_ctx_add_service(sim_ctx(s, srv), "drain");
    pure_settings_default(&st);
    st.callbacks = &h_cli_cb;
    int cli = sim_add(s, &st);
    sim_set_path(s, cli, srv, &base);
    sim_set_path(s, srv, cli, &base);
    pure_ctx *victim = sim_ctx(s, srv);
    CHECK_EQ(make_inits(victim, inits, lens, N, 10), N);
    /* 10,000 valid INITs from 10,000 spoofed sources over 200 ms (50,000 a second); the honest
     * host opens its 100 links 50 ms in, while the responder is under load */
    pure_addr to = sim_addr(s, srv);
    uint64_t t = sim_now(s);
    for (uint32_t i = 0; i < N; i++) {
        pure_addr from = spoof(i);
        pure_ctx_read(victim, &from, inits[i], lens[i], t + i * 20000ull);
        sim_run(s, NULL, NULL, t + i * 20000ull);
        if (i == N / 4) {
            h.connected_at = sim_now(s);
            for (int k = 0; k < 100; k++) {
                pure_link *l;
                CHECK_EQ(pure_connect(sim_ctx(s, cli), &to, pure_ctx_public_key(victim), "drain",
                                      &hp, &l, sim_now(s)),
                         0);
            }
        }
    }
    sim_run(s, all_honest, &h, sim_now(s) + 10 * SIM_S);
    sim_run(s, NULL, NULL, sim_now(s) + SIM_S); /* their first packets reach the responder */
    pure_guard_stats g;
    pure_ctx_guard_stats_get(victim, &g, sizeof g);
    printf("flood of %d valid INITs at 50,000/s: 100 honest links from one host all connected "
           "within %.1f ms (%d of 100); responder: %llu DH, %u half-open at the end, %llu "
           "throttled\n",
           N, (double)h.worst / 1e6, h.n_established, (unsigned long long)g.dh_ops,
           victim->half_open, (unsigned long long)g.inits_throttled);
    CHECK_EQ(h.n_established, 100);
    CHECK(h.worst <= 2 * SIM_S);
    CHECK_EQ(h.n_accepted, 100);
    CHECK(g.dh_ops <= 5 * (1024 + 100 + 64) + 64);
    sim_free(s);
}

static void test_source_with_cookies_is_held_back(void)
{
    /* A source that receives (it has real cookies: made here from the server's own jar) sends
     * 500 distinct valid INITs and never completes one: under load it gets its token bucket's
     * burst and its half-open cap, no more. */
    sim_app *a = sim_app_new(5, 20, 1, 100, always_load);
    both(a);
    pure_ctx *srv = sim_ctx(a->s, a->srv);
    enum {
        N = 500
    };
    static uint8_t inits[N][512];
    static size_t lens[N];
    CHECK_EQ(make_inits(srv, inits, lens, N, 5), N);
    pure_addr from = spoof(4242);
    for (int i = 0; i < N; i++) {
        uint8_t what[sizeof from.bytes + PURE_DH_LEN], ck[PURE_COOKIE_LEN];
        memcpy(what, from.bytes, from.len);
        memcpy(what + from.len, inits[i] + PURE_INIT_FIXED, PURE_DH_LEN);
        pure_cookie_make(&srv->cookies, srv->crypto, sim_now(a->s), what, from.len + PURE_DH_LEN,
                         ck);
        pure_admit_mac(srv->crypto, ck, sizeof ck, inits[i], lens[i] - PURE_MAC_LEN,
                       inits[i] + lens[i] - PURE_MAC_LEN);
        pure_ctx_read(srv, &from, inits[i], lens[i], sim_now(a->s) + (uint64_t)i * 100000);
    }
    pure_guard_stats g = guard(a, a->srv);
    printf("one source with real cookies, 500 INITs in 50 ms: %u half-open, %llu throttled, "
           "%llu over the half-open cap, %llu DH\n",
           srv->half_open, (unsigned long long)g.inits_throttled,
           (unsigned long long)g.inits_half_open_cap, (unsigned long long)g.dh_ops);
    CHECK(srv->half_open <= 32 + 2); /* inits_per_addr's burst, and a refill over 50 ms */
    CHECK(g.inits_throttled >= N - 40);
    CHECK(g.dh_ops <= 5 * 34);
    /* an honest client elsewhere still connects */
    sim_app_connect(a, NULL, NULL);
    sim_app_run(a, sim_now(a->s) + 60 * SIM_S);
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

static void test_forged_cookie_and_reject(void)
{
    /* While the client's handshake runs (its first two INITs are lost), forged COOKIE and
     * REJECT packets arrive for its link: from spoofed addresses, and from the server's own
     * address with a wrong mac1. All are dropped and counted; the client connects. */
    sim_app *a = sim_app_new(6, 20, 1, 100, NULL);
    sim_path to_srv = base;
    to_srv.lose_first = 2;
    sim_set_path(a->s, a->cli, a->srv, &to_srv);
    sim_set_path(a->s, a->srv, a->cli, &base);
    sim_app_connect(a, NULL, NULL);
    pure_ctx *cli = sim_ctx(a->s, a->cli);
    uint32_t idx = a->cl->local_index;
    pure_addr srv_addr = sim_addr(a->s, a->srv);
    for (uint32_t i = 0; i < 200; i++) {
        uint8_t c[PURE_COOKIE_PKT], r[PURE_REJECT_PKT];
        for (size_t j = 0; j < sizeof c; j++)
            c[j] = (uint8_t)sim_rand(a->s);
        for (size_t j = 0; j < sizeof r; j++)
            r[j] = (uint8_t)sim_rand(a->s);
        c[0] = PURE_PKT_COOKIE;
        r[0] = PURE_PKT_REJECT;
        memcpy(c + 1, &idx, 4); /* little-endian hosts: the index as the wire has it */
        memcpy(r + 1, &idx, 4);
        pure_addr from = i % 2 ? spoof(i) : srv_addr;
        pure_ctx_read(cli, &from, c, sizeof c, sim_now(a->s));
        pure_ctx_read(cli, &from, r, sizeof r, sim_now(a->s));
    }
    sim_app_run(a, 60 * SIM_S);
    CHECK(sim_app_ok(a));
    pure_guard_stats g = guard(a, a->cli);
    CHECK_EQ(g.cookie_replies_bad, 200);
    CHECK_EQ(g.rejects_bad, 200);
    sim_app_free(a);
}

static void test_resp_header_changed(void)
{
    /* The RESP's header (the responder's index) is not covered by Noise. The first RESP is lost
     * and a copy with that index changed is delivered instead: the client takes the index from
     * the authenticated payload, and the link works (it once died at its idle timeout). */
    sim_app *a = sim_app_new(7, 20, 1, 100, NULL);
    sim_path to_cli = base;
    to_cli.lose_first = 1;
    sim_set_path(a->s, a->cli, a->srv, &base);
    sim_set_path(a->s, a->srv, a->cli, &to_cli);
    n_caps = 0;
    capture *resp = want(a, a->srv, a->cli, PURE_PKT_RESP);
    sim_app_connect(a, NULL, NULL);
    sim_run(a->s, NULL, NULL, 25 * SIM_MS); /* INIT there, RESP back (lost) */
    CHECK(resp->n > 0);
    resp->d[1] ^= 0x5a;
    pure_addr srv_addr = sim_addr(a->s, a->srv);
    pure_ctx_read(sim_ctx(a->s, a->cli), &srv_addr, resp->d, resp->n, sim_now(a->s));
    CHECK(a->established);
    sim_app_run(a, 60 * SIM_S);
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

/* DATA packets from the client, held back from the server */
static uint8_t held[8][1500];
static size_t held_n[8];
static int n_held;
static void hold_data(void *arg, int from, int to, const uint8_t *d, size_t n)
{
    sim_app *a = arg;
    if (from == a->cli && to == a->srv && n && (d[0] & 0xfe) == PURE_PKT_DATA0 && n_held < 8 &&
        n <= sizeof held[0]) {
        memcpy(held[n_held], d, n);
        held_n[n_held++] = n;
    }
}

static void client_keepalive(pure_settings *s, int server)
{
    if (!server)
        s->keepalive = SIM_S;
}

static void test_amplification_counted_per_address(void)
{
    /* After the client's address changes, the server may send 3x what came from the new
     * address until it is validated. A genuine but older packet of the link arriving from a
     * third address must not raise that budget (it once did: any address counted). */
    sim_app *a = sim_app_new(9, 20, 1, 100, client_keepalive);
    both(a);
    sim_app_connect(a, NULL, NULL);
    sim_app_run(a, 60 * SIM_S);
    CHECK(sim_app_ok(a));
    CHECK(a->sl != NULL);
    sim_path dark = base;
    dark.loss = 1.0;
    sim_set_path(a->s, a->cli, a->srv, &dark);
    n_held = 0;
    sim_set_tap(a->s, hold_data, a);
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 5 * SIM_S); /* keepalive PINGs, held */
    CHECK(n_held >= 2);
    if (n_held >= 2 && a->sl) {
        pure_addr x = spoof(1), y = spoof(2);
        pure_ctx *srv = sim_ctx(a->s, a->srv);
        size_t n1 = held_n[n_held - 1];
        pure_ctx_read(srv, &x, held[n_held - 1], n1, sim_now(a->s)); /* the newest: a move */
        CHECK(a->sl->path_unvalidated);
        CHECK_EQ(a->sl->amp_received, n1);
        pure_ctx_read(srv, &y, held[0], held_n[0], sim_now(a->s)); /* older, elsewhere */
        CHECK_EQ(a->sl->amp_received, n1);
    }
    sim_app_free(a);
}

static void silent(pure_settings *s, int server)
{
    if (server) {
        s->respond_to_unknown = 0;
        s->allow_any = 0;
        s->handshake_timeout = 2 * SIM_S;
    } else {
        s->handshake_timeout = 2 * SIM_S;
    }
}

static void test_silent_mode(void)
{
    /* A key not allowed, and a wrong server key: no datagram ever comes back; both fail by
     * timeout. Without silence the wrong key is told (REJECT: PURE_EKEY). */
    for (int mode = 0; mode < 3; mode++) {
        sim_app *a = sim_app_new(8, 20, 1, 100, mode < 2 ? silent : NULL);
        both(a);
        uint8_t wrong[PURE_KEY_LEN];
        memset(wrong, 0x42, sizeof wrong);
        sim_app_connect(a, mode == 0 ? NULL : wrong, NULL);
        sim_app_run(a, 60 * SIM_S);
        pure_ctx_stats st = stats(a, a->srv);
        pure_guard_stats g = guard(a, a->srv);
        CHECK(a->client_closed);
        if (mode < 2) {
            CHECK_EQ(st.datagrams_out, 0);
            CHECK_EQ(a->client_error, PURE_ETIMEDOUT);
            CHECK(g.inits_silent >= 1);
        } else {
            CHECK(st.datagrams_out >= 1);
            CHECK_EQ(a->client_error, PURE_EKEY);
        }
        CHECK(mode == 0 ? g.inits_bad_mac == 0 : g.inits_bad_mac >= 1);
        sim_app_free(a);
    }
}

static void test_spoofed_lockout(void)
{
    /* Review finding N1: valid INITs (allow_any) spoofed from the victim's own address, whose
     * replies the spoofer never sees: 1,100 in the first second (past handshake_load: the
     * listener is under load), then kept up at 200 a second. The victim at that address
     * connects 3 s in: under load it proves its address with a cookie, and what was sent in its
     * name must not stand in its way (it once did: the spoofed half-open links filled the
     * address's half_open_per_addr, and every proven INIT of the victim was dropped). */
    enum {
        BURST = 1100,
        RATE = 200,
        SECONDS = 14,
        N = BURST + RATE * SECONDS
    };
    static uint8_t inits[N][512];
    static size_t lens[N];
    sim_app *a = sim_app_new(12, 20, 1, 100, NULL);
    both(a);
    pure_ctx *srv = sim_ctx(a->s, a->srv);
    CHECK_EQ(make_inits(srv, inits, lens, N, 12), N);
    pure_addr victim = sim_addr(a->s, a->cli);
    uint64_t t0 = sim_now(a->s), connect_at = 0, est_at = 0;
    uint32_t peak_half_open = 0, half_open_at_connect = 0;
    for (uint32_t i = 0; i < N; i++) {
        uint64_t at = t0 + (i < BURST ? (uint64_t)i * (SIM_S / BURST)
                                      : SIM_S + (uint64_t)(i - BURST) * (SIM_S / RATE));
        sim_run(a->s, NULL, NULL, at);
        if (!connect_at && at >= t0 + 3 * SIM_S) {
            connect_at = sim_now(a->s);
            half_open_at_connect = srv->half_open;
            sim_app_connect(a, NULL, NULL);
        }
        pure_ctx_read(srv, &victim, inits[i], lens[i], at);
        if (srv->half_open > peak_half_open)
            peak_half_open = srv->half_open;
        if (connect_at && !est_at && a->established)
            est_at = sim_now(a->s);
    }
    pure_guard_stats g = guard(a, a->srv);
    pure_ctx_stats st = stats(a, a->srv);
    printf("spoofed lockout: %d valid INITs from the victim's address (%d in 1 s, then %d/s): "
           "peak %u half-open, %llu DH, %llu cookies sent, %llu over the half-open cap; the "
           "victim %s %.1f ms after its connect (client error %d)\n",
           N, BURST, RATE, peak_half_open, (unsigned long long)g.dh_ops,
           (unsigned long long)st.cookies_sent, (unsigned long long)g.inits_half_open_cap,
           est_at ? "connected" : "had not connected",
           (double)((est_at ? est_at : sim_now(a->s)) - connect_at) / 1e6, a->client_error);
    CHECK(half_open_at_connect >= 1024); /* under load: the victim had to prove its address */
    CHECK(est_at != 0);
    CHECK(est_at - connect_at <= 5 * 2 * base.delay); /* a few round trips */
    /* the spoofed INITs cost bounded state: handshake_load half-open links, then cookies */
    CHECK(peak_half_open <= 1024 + 1);
    /* 5 DH per link made: handshake_load of them, again as they expired, and the victim's */
    CHECK(g.dh_ops <= 5 * (2 * 1024 + 1));
    /* every half-open link is uncounted once, as it was counted: the context's count and the
     * buckets (which only the victim's proven link entered) go back to 0 */
    sim_app_run(a, sim_now(a->s) + 60 * SIM_S);
    CHECK(sim_app_ok(a));
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 30 * SIM_S);
    CHECK_EQ(srv->half_open, 0);
    uint64_t charged = 0;
    for (uint32_t i = 0; i < srv->admit.src_n; i++)
        charged += srv->admit.src[i].half_open;
    CHECK_EQ(charged, 0);
    sim_app_free(a);
}

/* An INIT's MACs made again after its bytes were changed: mac1 under the responder's public key
 * (anyone can), mac2 under `cookie`. */
static void remac(const pure_ctx *srv, uint8_t *d, size_t n, const uint8_t cookie[16])
{
    uint8_t k1[PURE_HASH_LEN];
    pure_admit_mac1_key(srv->crypto, pure_ctx_public_key(srv), k1);
    pure_admit_mac(srv->crypto, k1, sizeof k1, d, n - 2 * PURE_MAC_LEN, d + n - 2 * PURE_MAC_LEN);
    pure_admit_mac(srv->crypto, cookie, 16, d, n - PURE_MAC_LEN, d + n - PURE_MAC_LEN);
}

static void test_one_cookie_cannot_drain_a_bucket(void)
{
    /* Review finding N3. An attacker at its own address A gets one real cookie (for its INIT's
     * ephemeral key) and puts it on 1,000 junk INITs: that ephemeral key, the rest changed, mac1
     * and mac2 made again, 500 a second. Each has a valid mac2, so each once took a token from
     * A's bucket (and cost 2 DH); a victim whose address shares A's bucket was throttled. Here
     * A is chosen to share the victim's bucket, which takes the context's secret (the test holds
     * it; an attacker does not): the victim still connects at once, since a cookie buys one DH
     * and one token, and the junk after it is dropped as a replay of its ephemeral key. */
    sim_app *a = sim_app_new(13, 20, 1, 100, always_load);
    both(a);
    pure_ctx *srv = sim_ctx(a->s, a->srv);
    pure_addr victim = sim_addr(a->s, a->cli), att = victim;
    pure_src_bucket *vb =
        pure_admit_bucket(&srv->admit, &srv->alloc, &victim, srv->s.max_half_open);
    CHECK(vb != NULL);
    int found = 0;
    for (uint32_t i = 1; i < 1u << 22 && !found; i++) {
        att.bytes[0] = 172;
        att.bytes[1] = (uint8_t)(i >> 16);
        att.bytes[2] = (uint8_t)(i >> 8);
        att.bytes[3] = (uint8_t)i;
        found = pure_admit_bucket(&srv->admit, &srv->alloc, &att, 0) == vb;
    }
    CHECK(found);
    static uint8_t init[1][512];
    size_t len;
    CHECK_EQ(make_inits(srv, init, &len, 1, 13), 1);
    uint8_t what[sizeof att.bytes + PURE_DH_LEN], ck[PURE_COOKIE_LEN];
    memcpy(what, att.bytes, att.len);
    memcpy(what + att.len, init[0] + PURE_INIT_FIXED, PURE_DH_LEN);
    CHECK_EQ(pure_cookie_make(&srv->cookies, srv->crypto, sim_now(a->s), what,
                              att.len + PURE_DH_LEN, ck),
             0);
    enum {
        JUNK = 1000
    };
    uint64_t t0 = sim_now(a->s), connect_at = 0, est_at = 0;
    pure_guard_stats g0 = guard(a, a->srv);
    for (uint32_t i = 0; i < JUNK; i++) {
        uint64_t at = t0 + (uint64_t)i * (SIM_S / 500);
        sim_run(a->s, NULL, NULL, at);
        if (i == JUNK / 4) {
            connect_at = sim_now(a->s);
            sim_app_connect(a, NULL, NULL);
        }
        uint8_t junk[512];
        memcpy(junk, init[0], len);
        junk[PURE_INIT_FIXED + PURE_DH_LEN + i % 32] ^= (uint8_t)(1 + i / 32); /* its static key */
        remac(srv, junk, len, ck);
        pure_ctx_read(srv, &att, junk, len, at);
        if (connect_at && !est_at && a->established)
            est_at = sim_now(a->s);
    }
    pure_guard_stats g = guard(a, a->srv);
    printf("one cookie on %d junk INITs at 500/s from an address sharing the victim's bucket: "
           "%llu DH, %llu throttled, %llu dropped as replays; the victim %s %.1f ms after its "
           "connect\n",
           JUNK, (unsigned long long)(g.dh_ops - g0.dh_ops),
           (unsigned long long)(g.inits_throttled - g0.inits_throttled),
           (unsigned long long)(g.inits_replayed - g0.inits_replayed),
           est_at ? "connected" : "had not connected",
           (double)((est_at ? est_at : sim_now(a->s)) - connect_at) / 1e6);
    CHECK(est_at != 0 && est_at - connect_at <= 5 * 2 * base.delay);
    CHECK_EQ(g.inits_throttled - g0.inits_throttled, 0);
    CHECK(g.inits_replayed - g0.inits_replayed >= JUNK - 1);
    CHECK(g.dh_ops - g0.dh_ops <= 2 + 5); /* one junk INIT's 2, the victim's handshake's 5 */
    sim_app_run(a, sim_now(a->s) + 60 * SIM_S);
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

static void small_half_open(pure_settings *s, int server)
{
    if (server)
        s->max_half_open = 200; /* below handshake_load (1,024) */
}

static void test_unproven_links_leave_room(void)
{
    /* With max_half_open below handshake_load, INITs from spoofed sources once filled the whole
     * context cap without ever putting it under load: no cookies, every INIT dropped at the cap,
     * an honest client locked out until the spoofed links expired. Load now starts at half of
     * max_half_open, so links from unproven INITs hold at most half and a client that proves its
     * address finds the other half. */
    enum {
        N = 1000
    };
    static uint8_t inits[N][512];
    static size_t lens[N];
    sim_app *a = sim_app_new(14, 20, 1, 100, small_half_open);
    both(a);
    pure_ctx *srv = sim_ctx(a->s, a->srv);
    CHECK_EQ(make_inits(srv, inits, lens, N, 14), N);
    uint64_t t0 = sim_now(a->s), connect_at = 0, est_at = 0;
    uint32_t peak = 0;
    for (uint32_t i = 0; i < N; i++) {
        uint64_t at = t0 + (uint64_t)i * (SIM_S / N);
        sim_run(a->s, NULL, NULL, at);
        if (i == N / 2) {
            connect_at = sim_now(a->s);
            sim_app_connect(a, NULL, NULL);
        }
        pure_addr from = spoof(i);
        pure_ctx_read(srv, &from, inits[i], lens[i], at);
        if (srv->half_open > peak)
            peak = srv->half_open;
        if (connect_at && !est_at && a->established)
            est_at = sim_now(a->s);
    }
    printf("max_half_open 200, %d valid INITs from spoofed sources in 1 s: peak %u half-open; "
           "the client %s %.1f ms after its connect\n",
           N, peak, est_at ? "connected" : "had not connected",
           (double)((est_at ? est_at : sim_now(a->s)) - connect_at) / 1e6);
    CHECK(est_at != 0 && est_at - connect_at <= 5 * 2 * base.delay);
    CHECK(peak <= 100 + 1); /* the unproven half, and the client's */
    sim_app_free(a);
}

int main(void)
{
    RUN(test_replay_costs_no_dh);
    RUN(test_copies_from_other_addresses);
    RUN(test_one_cookie_one_init);
    RUN(test_flood_of_valid_inits);
    RUN(test_flood_with_100_honest_clients);
    RUN(test_source_with_cookies_is_held_back);
    RUN(test_forged_cookie_and_reject);
    RUN(test_resp_header_changed);
    RUN(test_silent_mode);
    RUN(test_amplification_counted_per_address);
    RUN(test_spoofed_lockout);
    RUN(test_one_cookie_cannot_drain_a_bucket);
    RUN(test_unproven_links_leave_room);
    return pure_test_finish();
}
