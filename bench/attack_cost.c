/* SPDX-License-Identifier: MIT */
/* attack_cost: what each handshake attack costs the responder, in the simulator, with numbers
 * that mean the same in any version of Pure: X25519 operations (counted by wrapping the crypto
 * backend), links made, datagrams sent back, the responder's CPU time and its heap growth.
 * It uses only the public API, sim.c and sim_app.c, so the same file builds against an older
 * tree to give the "before" figures (bench/README.md says how). Not a test: it prints figures
 * and asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "sim_app.h"
#include "wire.h"
#if PURE_SETTINGS_VERSION >= 3
#include "admit.h" /* to follow a COOKIE reply as a real initiator does */
#endif

static pure_crypto counting;
static uint64_t dh_ops;
static int count_dh_public(uint8_t pub[32], const uint8_t priv[32])
{
    dh_ops++;
    return pure_crypto_default.dh_public(pub, priv);
}
static int count_dh(uint8_t out[32], const uint8_t priv[32], const uint8_t pub[32])
{
    dh_ops++;
    return pure_crypto_default.dh(out, priv, pub);
}

/* heap bytes of the responder (a counting allocator) */
static int64_t heap_now, heap_peak;
static void *c_alloc(void *u, size_t n)
{
    (void)u;
    heap_now += (int64_t)n;
    if (heap_now > heap_peak)
        heap_peak = heap_now;
    return malloc(n);
}
static void c_free(void *u, void *p, size_t n)
{
    (void)u;
    if (p)
        heap_now -= (int64_t)n;
    free(p);
}

static void tweak(pure_settings *s, int server)
{
    s->crypto = &counting;
    if (server) {
        s->alloc = c_alloc;
        s->free = c_free;
        s->realloc = NULL;
    }
}

static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

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

static uint8_t captured[512], cookie_reply[128];
static size_t captured_n, cookie_n;
static void tap(void *arg, int from, int to, const uint8_t *d, size_t n)
{
    sim_app *a = arg;
    if (from == a->cli && to == a->srv && n && d[0] == PURE_PKT_INIT && !captured_n &&
        n <= sizeof captured) {
        memcpy(captured, d, n);
        captured_n = n;
    }
    if (from == a->srv && to == a->cli && n && d[0] == PURE_PKT_COOKIE &&
        n <= sizeof cookie_reply) {
        memcpy(cookie_reply, d, n);
        cookie_n = n;
    }
}

/* Puts the cookie of the last COOKIE reply into an INIT, as its initiator would: the bare
 * cookie in the last 16 bytes (0.1), or mac2 from the cookie sealed to the INIT's mac1 (0.2). */
static int use_cookie(const uint8_t *victim_key, uint8_t *init, size_t n)
{
    if (!cookie_n)
        return -1;
#if PURE_SETTINGS_VERSION >= 3
    uint8_t key[PURE_HASH_LEN], ck[16];
    pure_admit_cookie_key(&pure_crypto_default, victim_key, key);
    if (pure_admit_cookie_open(&pure_crypto_default, key, init + n - 2 * PURE_MAC_LEN,
                               cookie_reply + 5, ck) != 0)
        return -1; /* sealed to another INIT */
    pure_admit_mac(&pure_crypto_default, ck, sizeof ck, init, n - PURE_MAC_LEN,
                   init + n - PURE_MAC_LEN);
#else
    (void)victim_key;
    memcpy(init + n - 16, cookie_reply + 5, 16);
#endif
    return 0;
}

typedef struct cost {
    uint64_t dh, links, out;
    double cpu_s;
    int64_t heap;
} cost;

static cost start(sim_app *a)
{
    pure_ctx_stats st;
    pure_ctx_stats_get(sim_ctx(a->s, a->srv), &st);
    heap_peak = heap_now;
    return (cost){dh_ops, st.links, st.datagrams_out, cpu(), heap_now};
}

static void report(const char *what, sim_app *a, cost c0, uint64_t n)
{
    pure_ctx_stats st;
    pure_ctx_stats_get(sim_ctx(a->s, a->srv), &st);
    printf("%-44s %8llu %10llu %9llu %9llu %10.1f %10.1f\n", what, (unsigned long long)n,
           (unsigned long long)(dh_ops - c0.dh), (unsigned long long)(st.links - c0.links),
           (unsigned long long)(st.datagrams_out - c0.out), (cpu() - c0.cpu_s) * 1e3,
           (double)(heap_peak - c0.heap) / 1024.0);
}

/* Valid INITs made by throwaway initiators (several contexts: a context may queue handshakes). */
static size_t make_inits(const uint8_t *victim_key, uint8_t (*out)[512], size_t *lens, size_t count,
                         uint64_t seed)
{
    size_t made = 0;
    while (made < count) {
        pure_settings st;
        pure_settings_default(&st);
        for (int i = 0; i < 32; i++)
            st.private_key[i] = (uint8_t)(seed * 131 + made * 7 + (size_t)i + 1);
        st.crypto = &pure_crypto_default;
        pure_ctx *c = NULL;
        if (pure_ctx_new(&st, &c) != 0)
            return made;
        pure_addr to = spoof(0);
        for (int i = 0; i < 64; i++) {
            pure_link *l;
            pure_connect(c, &to, victim_key, "drain", NULL, &l, 0);
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

static sim_app *victim(uint64_t seed)
{
    sim_app *a = sim_app_new(seed, 20, 1, 100, tweak);
    sim_path p = {.delay = 10 * SIM_MS};
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    return a;
}

int main(void)
{
    counting = pure_crypto_default;
    counting.dh = count_dh;
    counting.dh_public = count_dh_public;
    printf("%-44s %8s %10s %9s %9s %10s %10s\n", "attack on the responder", "sent", "DH ops",
           "links", "replies", "CPU ms", "heap KiB");

    /* 1. an authenticated INIT replayed from 10,000 spoofed addresses */
    sim_app *a = victim(1);
    captured_n = 0;
    sim_set_tap(a->s, tap, a);
    sim_app_connect(a, NULL, NULL);
    sim_app_run(a, 60 * SIM_S);
    cost c0 = start(a);
    for (uint32_t i = 0; i < 10000; i++) {
        pure_addr from = spoof(i);
        uint8_t copy[512];
        memcpy(copy, captured, captured_n);
        pure_ctx_read(sim_ctx(a->s, a->srv), &from, copy, captured_n, sim_now(a->s));
        if (i % 50 == 49)
            sim_run(a->s, NULL, NULL, sim_now(a->s) + 1000);
    }
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 100 * SIM_MS);
    report("INIT replay, 10,000 spoofed sources", a, c0, 10000);
    sim_app_free(a);

    /* 2. fresh valid INITs from 5,000 spoofed sources at 50,000/s */
    enum {
        N = 5000
    };
    static uint8_t inits[N][512];
    static size_t lens[N];
    a = victim(2);
    make_inits(pure_ctx_public_key(sim_ctx(a->s, a->srv)), inits, lens, N, 2);
    c0 = start(a);
    uint64_t t = sim_now(a->s);
    for (uint32_t i = 0; i < N; i++) {
        pure_addr from = spoof(i);
        pure_ctx_read(sim_ctx(a->s, a->srv), &from, inits[i], lens[i], t + i * 20000ull);
        sim_run(a->s, NULL, NULL, t + i * 20000ull);
    }
    report("valid INITs, 5,000 spoofed sources, 50k/s", a, c0, N);
    sim_app_free(a);

    /* 3. 3,000 junk INITs of a valid length, random bytes */
    a = victim(3);
    c0 = start(a);
    for (uint32_t i = 0; i < 3000; i++) {
        uint8_t junk[160];
        for (size_t j = 0; j < sizeof junk; j++)
            junk[j] = (uint8_t)sim_rand(a->s);
        junk[0] = PURE_PKT_INIT;
        pure_addr from = spoof(i);
        pure_ctx_read(sim_ctx(a->s, a->srv), &from, junk, 150, sim_now(a->s) + i * 20000ull);
        sim_run(a->s, NULL, NULL, sim_now(a->s) + 20000);
    }
    report("junk INITs, 3,000 spoofed sources", a, c0, 3000);
    sim_app_free(a);

    /* 4. one real source (it receives: a simulated endpoint's address) sending 500 distinct
     *    valid INITs that it never completes; under load it answers each COOKIE reply as a real
     *    initiator does, and reuses the first cookie it got wherever the protocol lets it */
    a = victim(4);
    static uint8_t many[500][512];
    static size_t many_n[500];
    make_inits(pure_ctx_public_key(sim_ctx(a->s, a->srv)), many, many_n, 500, 4);
    pure_addr cli = sim_addr(a->s, a->cli);
    /* the responder under load: 1,100 half-open links from spoofed sources first */
    static uint8_t load[1100][512];
    static size_t load_n[1100];
    make_inits(pure_ctx_public_key(sim_ctx(a->s, a->srv)), load, load_n, 1100, 5);
    for (uint32_t i = 0; i < 1100; i++) {
        pure_addr from = spoof(i + 20000);
        pure_ctx_read(sim_ctx(a->s, a->srv), &from, load[i], load_n[i], sim_now(a->s));
        sim_run(a->s, NULL, NULL, sim_now(a->s) + 1000);
    }
    c0 = start(a);
    captured_n = 1; /* capture only cookies */
    sim_set_tap(a->s, tap, a);
    const uint8_t *vk = pure_ctx_public_key(sim_ctx(a->s, a->srv));
    uint64_t sent = 0;
    for (int i = 0; i < 500; i++) {
        if (use_cookie(vk, many[i], many_n[i]) != 0) { /* no cookie for this INIT yet */
            cookie_n = 0;
            pure_ctx_read(sim_ctx(a->s, a->srv), &cli, many[i], many_n[i], sim_now(a->s));
            sent++;
            sim_run(a->s, NULL, NULL, sim_now(a->s) + 100000);
            if (use_cookie(vk, many[i], many_n[i]) != 0)
                continue;
        }
        pure_ctx_read(sim_ctx(a->s, a->srv), &cli, many[i], many_n[i], sim_now(a->s));
        sent++;
        sim_run(a->s, NULL, NULL, sim_now(a->s) + 100000);
    }
    report("500 INITs from one source with cookies", a, c0, sent);
    sim_app_free(a);
    return 0;
}
