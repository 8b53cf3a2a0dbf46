/* SPDX-License-Identifier: MIT */
/* admit_test: the handshake admission module (src/lib/admit.c): the ephemeral-key cache and its
 * eviction, the token bucket's refill and cap, the timestamp rule, the source key of an address
 * (IPv4, IPv6 /64, other encodings), the bucket table's size and its index (SipHash under a
 * secret of each context's own), and the COOKIE reply's binding to the INIT's mac1. */
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "siphash.h"
#include "test.h"

static pure_alloc al;

static void *my_alloc(void *u, size_t n)
{
    (void)u;
    return malloc(n);
}
static void my_free(void *u, void *p, size_t n)
{
    (void)u;
    (void)n;
    free(p);
}

static uint64_t rng = 1;
static int my_random(void *u, uint8_t *b, size_t n)
{
    (void)u;
    for (size_t i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (uint8_t)(rng >> 56);
    }
    return 0;
}

static void setup(pure_admit *a)
{
    al = (pure_alloc){my_alloc, my_free, NULL, NULL};
    uint8_t pub[PURE_KEY_LEN] = {9};
    CHECK_EQ(pure_admit_init(a, &pure_crypto_default, pub, my_random, NULL), 0);
}

static void key_of(uint32_t i, uint8_t e[PURE_DH_LEN])
{
    memset(e, 0, PURE_DH_LEN);
    memcpy(e, &i, sizeof i);
    e[31] = 0x77;
}

static void test_seen_cache(void)
{
    pure_admit a;
    setup(&a);
    uint8_t e[PURE_DH_LEN];
    key_of(1, e);
    CHECK_EQ(pure_admit_seen(&a, e), 0); /* nothing allocated yet: nothing seen */
    CHECK_EQ(pure_admit_remember(&a, &al, e), 0);
    CHECK_EQ(pure_admit_seen(&a, e), 1);
    key_of(2, e);
    CHECK_EQ(pure_admit_seen(&a, e), 0);
    /* it holds most of the last 1,024: after 200 more, key 1 is still there
     * unless its set filled; after 100,000 more it is gone (the cache is bounded) */
    for (uint32_t i = 100; i < 300; i++) {
        key_of(i, e);
        pure_admit_remember(&a, &al, e);
    }
    int held = 0;
    for (uint32_t i = 100; i < 300; i++) {
        key_of(i, e);
        held += pure_admit_seen(&a, e);
    }
    CHECK(held >= 196); /* a set of 4 overflows only rarely at 200 in 1,024 slots */
    for (uint32_t i = 2000; i < 102000; i++) {
        key_of(i, e);
        pure_admit_remember(&a, &al, e);
    }
    key_of(1, e);
    CHECK_EQ(pure_admit_seen(&a, e), 0);
    key_of(101999, e);
    CHECK_EQ(pure_admit_seen(&a, e), 1); /* the newest is always there */
    pure_admit_free(&a, &al);
}

static void test_token_bucket(void)
{
    pure_src_bucket b = {0, UINT32_MAX, 0};
    uint64_t t = 5000000000ull;
    int got = 0;
    for (int i = 0; i < 100; i++)
        got += pure_admit_take_token(&b, 32, t);
    CHECK_EQ(got, 32);                                        /* the burst */
    CHECK_EQ(pure_admit_take_token(&b, 32, t + 10000000), 0); /* 10 ms: 0.32 of a token */
    got = 0;
    for (int i = 0; i < 100; i++)
        got += pure_admit_take_token(&b, 32, t + 500000000); /* half a second: 16 more */
    CHECK(got >= 15 && got <= 17);
    got = 0;
    for (int i = 0; i < 100; i++)
        got += pure_admit_take_token(&b, 32, t + 3600000000000ull); /* an hour: full, no more */
    CHECK_EQ(got, 32);
    /* many small steps refill as one big one */
    pure_src_bucket c = {0, UINT32_MAX, 0};
    for (int i = 0; i < 32; i++)
        pure_admit_take_token(&c, 32, t);
    got = 0;
    for (int ms = 1; ms <= 1000; ms++)
        got += pure_admit_take_token(&c, 32, t + (uint64_t)ms * 1000000);
    CHECK(got >= 31 && got <= 33);
}

static void test_timestamps(void)
{
    pure_admit a;
    setup(&a);
    uint8_t k[PURE_KEY_LEN] = {1}, k2[PURE_KEY_LEN] = {2};
    const uint64_t S = 1000000000ull, T = 1800000000ull * S;
    uint64_t now = 100 * S;
    for (int idx = -1; idx <= 0; idx++) { /* allow_any table, then an allow-list entry */
        CHECK_EQ(pure_admit_fresh(&a, &al, k, idx, 4, T, now), 1);
        CHECK_EQ(pure_admit_fresh(&a, &al, k, idx, 4, T + 1, now), 1);
        /* a sibling process's INIT a little older, arriving just after: taken */
        CHECK_EQ(pure_admit_fresh(&a, &al, k, idx, 4, T - 2 * S, now + S), 1);
        /* older than the window: a replay */
        CHECK_EQ(pure_admit_fresh(&a, &al, k, idx, 4, T - 11 * S, now + S), 0);
        /* the latest again, long after it arrived: a replay */
        CHECK_EQ(pure_admit_fresh(&a, &al, k, idx, 4, T + 1, now + 20 * S), 0);
        CHECK_EQ(pure_admit_fresh(&a, &al, k, idx, 4, T, now + 20 * S), 0);
        /* newer is always fresh */
        CHECK_EQ(pure_admit_fresh(&a, &al, k, idx, 4, T + 2, now + 20 * S), 1);
        /* another key has its own record */
        if (idx < 0)
            CHECK_EQ(pure_admit_fresh(&a, &al, k2, idx, 4, 5, now), 1);
        now += 1000 * S;
        k[0]++;
    }
    /* an allow list that grew: the index beyond the first table is kept */
    CHECK_EQ(pure_admit_fresh(&a, &al, k, 40, 64, T, now), 1);
    CHECK_EQ(pure_admit_fresh(&a, &al, k, 40, 64, T, now + 20 * S), 0);
    CHECK_EQ(pure_admit_fresh(&a, &al, k, 0, 64, T + 5, now), 1);
    pure_admit_free(&a, &al);
}

static pure_addr addr(const uint8_t *bytes, uint32_t len)
{
    pure_addr x;
    memset(&x, 0, sizeof x);
    x.len = len;
    memcpy(x.bytes, bytes, len);
    return x;
}

static void test_source_keys(void)
{
    pure_admit a;
    setup(&a);
    /* sockaddr_in (little-endian family 2): the port does not matter, the IP does */
    uint8_t v4a[16] = {2, 0, 0x11, 0x5c, 10, 0, 0, 1}, v4b[16] = {2, 0, 0x22, 0x00, 10, 0, 0, 1};
    pure_addr A = addr(v4a, 16), B = addr(v4b, 16);
    CHECK(pure_admit_bucket(&a, &al, &A, 0) == pure_admit_bucket(&a, &al, &B, 0));
    /* sockaddr_in6 (family 10): the /64 is the source */
    uint8_t v6a[28] = {10, 0, 1, 1, 0, 0, 0, 0, 0xfd, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1};
    uint8_t v6b[28] = {10, 0, 2, 2, 0, 0, 0, 0, 0xfd, 0, 0, 1, 0, 0, 0, 1, 9, 9, 9, 9, 0, 0, 0, 2};
    pure_addr D = addr(v6a, 28), E = addr(v6b, 28);
    CHECK(pure_admit_bucket(&a, &al, &D, 0) == pure_admit_bucket(&a, &al, &E, 0));
    /* different sources land in different buckets, except by a rare collision: count over many */
    int same = 0;
    for (uint32_t i = 0; i < 200; i++) {
        uint8_t x[16] = {2, 0, 0, 80, 10, (uint8_t)(i >> 8), (uint8_t)i, 3};
        uint8_t y[16] = {2, 0, 0, 80, 10, (uint8_t)(i >> 8), (uint8_t)i, 4};
        pure_addr X = addr(x, 16), Y = addr(y, 16);
        same += pure_admit_bucket(&a, &al, &X, 0) == pure_admit_bucket(&a, &al, &Y, 0);
    }
    CHECK(same <= 3);
    /* any other encoding: all but the last two bytes */
    uint8_t o1[6] = {10, 0, 0, 1, 0x12, 0x34}, o2[6] = {10, 0, 0, 1, 0x56, 0x78};
    pure_addr O1 = addr(o1, 6), O2 = addr(o2, 6);
    CHECK(pure_admit_bucket(&a, &al, &O1, 0) == pure_admit_bucket(&a, &al, &O2, 0));
    pure_admit_free(&a, &al);
}

static void test_bucket_table_keyed_and_sized(void)
{
    /* sized for max_half_open: one bucket per half-open link, a power of two, within bounds */
    CHECK_EQ(pure_admit_src_buckets(0), PURE_ADMIT_SRC_MIN);
    CHECK_EQ(pure_admit_src_buckets(1000), 1024);
    CHECK_EQ(pure_admit_src_buckets(16384), 16384);
    CHECK_EQ(pure_admit_src_buckets(16385), 32768);
    CHECK_EQ(pure_admit_src_buckets(UINT32_MAX), PURE_ADMIT_SRC_MAX);
    /* two contexts (two secrets) put the same addresses in unrelated buckets: an index learnt
     * from one, or computed without the secret, says nothing of another's */
    pure_admit a, b;
    setup(&a);
    setup(&b);
    CHECK(memcmp(a.hash_key, b.hash_key, sizeof a.hash_key) != 0);
    int same = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        uint8_t x[16] = {2, 0, 0, 80, 10, 7, (uint8_t)(i >> 8), (uint8_t)i};
        pure_addr X = addr(x, 16);
        pure_src_bucket *pa = pure_admit_bucket(&a, &al, &X, 16384);
        pure_src_bucket *pb = pure_admit_bucket(&b, &al, &X, 16384);
        same += pa - a.src == pb - b.src;
        /* the index is SipHash-2-4 of the IPv4 address under the context's key */
        CHECK_EQ((uint64_t)(pa - a.src), pure_siphash24(a.hash_key, x + 4, 4) & (16384 - 1));
    }
    CHECK_EQ(a.src_n, 16384);
    CHECK(same <= 3); /* 1,000 addresses in 16,384 buckets: ~0.06 by chance */
    pure_admit_free(&a, &al);
    pure_admit_free(&b, &al);
}

static void test_cookie_reply_binding(void)
{
    const pure_crypto *c = &pure_crypto_default;
    uint8_t pub[PURE_KEY_LEN] = {5}, key[PURE_HASH_LEN], nonce[PURE_NONCE_LEN] = {1, 2, 3};
    uint8_t mac1[PURE_MAC_LEN] = {7}, other[PURE_MAC_LEN] = {8};
    uint8_t cookie[16] = "cookie-for-test", body[PURE_COOKIE_BODY], got[16];
    pure_admit_cookie_key(c, pub, key);
    CHECK_EQ(pure_admit_cookie_seal(c, key, nonce, mac1, cookie, body), 0);
    CHECK(memcmp(body + PURE_NONCE_LEN, cookie, 16) != 0); /* sealed, not in clear */
    CHECK_EQ(pure_admit_cookie_open(c, key, mac1, body, got), 0);
    CHECK(memcmp(got, cookie, 16) == 0);
    /* for another INIT (another mac1), or changed in any byte: refused, no cookie left */
    CHECK_EQ(pure_admit_cookie_open(c, key, other, body, got), PURE_ECRYPTO);
    static const uint8_t zero[16];
    CHECK(memcmp(got, zero, 16) == 0);
    for (size_t i = 0; i < sizeof body; i++) {
        body[i] ^= 1;
        CHECK_EQ(pure_admit_cookie_open(c, key, mac1, body, got), PURE_ECRYPTO);
        body[i] ^= 1;
    }
    /* another responder's key */
    uint8_t pub2[PURE_KEY_LEN] = {6}, key2[PURE_HASH_LEN];
    pure_admit_cookie_key(c, pub2, key2);
    CHECK_EQ(pure_admit_cookie_open(c, key2, mac1, body, got), PURE_ECRYPTO);
    /* MACs compare in full */
    uint8_t m1[PURE_MAC_LEN] = {0}, m2[PURE_MAC_LEN] = {0};
    CHECK_EQ(pure_admit_mac_equal(m1, m2), 1);
    m2[15] = 1;
    CHECK_EQ(pure_admit_mac_equal(m1, m2), 0);
}

int main(void)
{
    RUN(test_seen_cache);
    RUN(test_token_bucket);
    RUN(test_timestamps);
    RUN(test_source_keys);
    RUN(test_bucket_table_keyed_and_sized);
    RUN(test_cookie_reply_binding);
    return pure_test_finish();
}
