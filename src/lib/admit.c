/* SPDX-License-Identifier: MIT */
/* admit.c: handshake admission (admit.h). */
#include "admit.h"

#include <string.h>

#include "siphash.h"

static const char MAC1_LABEL[] = "pure/1 mac1";
static const char COOKIE_LABEL[] = "pure/1 cookie";

int pure_admit_init(pure_admit *a, const pure_crypto *c, const uint8_t public_key[PURE_KEY_LEN],
                    int (*random)(void *user, uint8_t *buf, size_t len), void *random_user)
{
    memset(a, 0, sizeof *a);
    pure_admit_mac1_key(c, public_key, a->mac1_key);
    pure_admit_cookie_key(c, public_key, a->cookie_key);
    return random ? random(random_user, a->hash_key, sizeof a->hash_key)
                  : c->random(a->hash_key, sizeof a->hash_key);
}

void pure_admit_free(pure_admit *a, const pure_alloc *al)
{
    pure_mem_free(al, a->seen, PURE_ADMIT_SEEN_SETS * 4 * sizeof *a->seen);
    pure_mem_free(al, a->seen_next, PURE_ADMIT_SEEN_SETS);
    pure_mem_free(al, a->src, a->src_n * sizeof *a->src);
    pure_mem_free(al, a->ts, PURE_ADMIT_TS_SETS * 4 * sizeof *a->ts);
    pure_mem_free(al, a->ts_next, PURE_ADMIT_TS_SETS);
    pure_mem_free(al, a->allow_ts, a->allow_ts_cap * sizeof *a->allow_ts);
    pure_wipe(a, sizeof *a);
}

void pure_admit_mac1_key(const pure_crypto *c, const uint8_t peer_key[PURE_KEY_LEN],
                         uint8_t key[PURE_HASH_LEN])
{
    c->hash(key, (const uint8_t *)MAC1_LABEL, sizeof MAC1_LABEL - 1, peer_key, PURE_KEY_LEN, NULL,
            0);
}

void pure_admit_cookie_key(const pure_crypto *c, const uint8_t peer_key[PURE_KEY_LEN],
                           uint8_t key[PURE_HASH_LEN])
{
    c->hash(key, (const uint8_t *)COOKIE_LABEL, sizeof COOKIE_LABEL - 1, peer_key, PURE_KEY_LEN,
            NULL, 0);
}

void pure_admit_mac(const pure_crypto *c, const uint8_t *key, size_t keylen, const uint8_t *msg,
                    size_t len, uint8_t mac[PURE_MAC_LEN])
{
    uint8_t full[PURE_HASH_LEN];
    c->hmac(full, key, keylen, msg, len, NULL, 0);
    memcpy(mac, full, PURE_MAC_LEN);
    pure_wipe(full, sizeof full);
}

int pure_admit_mac_equal(const uint8_t a[PURE_MAC_LEN], const uint8_t b[PURE_MAC_LEN])
{
    uint8_t d = 0;
    for (int i = 0; i < PURE_MAC_LEN; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

int pure_admit_cookie_seal(const pure_crypto *c, const uint8_t key[PURE_HASH_LEN],
                           const uint8_t nonce[PURE_NONCE_LEN], const uint8_t mac1[PURE_MAC_LEN],
                           const uint8_t cookie[16], uint8_t out[PURE_COOKIE_BODY])
{
    pure_aead aead;
    int rc = c->aead_init(&aead, PURE_AEAD_AES256_GCM, key);
    if (rc)
        return rc;
    memcpy(out, nonce, PURE_NONCE_LEN);
    memcpy(out + PURE_NONCE_LEN, cookie, 16);
    rc = c->aead_seal(&aead, nonce, mac1, PURE_MAC_LEN, out + PURE_NONCE_LEN, 16,
                      out + PURE_NONCE_LEN + 16);
    c->aead_free(&aead);
    return rc;
}

int pure_admit_cookie_open(const pure_crypto *c, const uint8_t key[PURE_HASH_LEN],
                           const uint8_t mac1[PURE_MAC_LEN], const uint8_t in[PURE_COOKIE_BODY],
                           uint8_t cookie[16])
{
    pure_aead aead;
    if (c->aead_init(&aead, PURE_AEAD_AES256_GCM, key) != 0)
        return PURE_ECRYPTO;
    memcpy(cookie, in + PURE_NONCE_LEN, 16);
    int rc = c->aead_open(&aead, in, mac1, PURE_MAC_LEN, cookie, 16, in + PURE_NONCE_LEN + 16);
    c->aead_free(&aead);
    if (rc) {
        pure_wipe(cookie, 16);
        return PURE_ECRYPTO;
    }
    return 0;
}

/* The tables' index of attacker-chosen bytes: SipHash-2-4 under the context's secret, so nobody
 * without it can aim at a slot. Never 0 (0 marks an empty entry). */
static uint64_t keyed_hash(const uint8_t key[16], const uint8_t *p, size_t n)
{
    uint64_t h = pure_siphash24(key, p, n);
    return h ? h : 1;
}

int pure_admit_seen(const pure_admit *a, const uint8_t e[PURE_DH_LEN])
{
    if (!a->seen)
        return 0;
    uint64_t h = keyed_hash(a->hash_key, e, PURE_DH_LEN);
    const uint64_t *set = a->seen + (h % PURE_ADMIT_SEEN_SETS) * 4;
    return set[0] == h || set[1] == h || set[2] == h || set[3] == h;
}

/* Allocates a zeroed set-associative table of `sets` x 4 entries of `entry` bytes and its
 * per-set next-way bytes, on first use. Returns 0 or PURE_ENOMEM (both left NULL). */
static int sets_alloc(const pure_alloc *al, void **table, uint8_t **next, size_t sets, size_t entry)
{
    if (*table)
        return 0;
    *table = pure_mem_alloc(al, sets * 4 * entry);
    *next = pure_mem_alloc(al, sets);
    if (!*table || !*next) {
        pure_mem_free(al, *table, sets * 4 * entry);
        pure_mem_free(al, *next, sets);
        *table = NULL;
        *next = NULL;
        return PURE_ENOMEM;
    }
    memset(*table, 0, sets * 4 * entry);
    memset(*next, 0, sets);
    return 0;
}

int pure_admit_remember(pure_admit *a, const pure_alloc *al, const uint8_t e[PURE_DH_LEN])
{
    void *t = a->seen;
    int rc = sets_alloc(al, &t, &a->seen_next, PURE_ADMIT_SEEN_SETS, sizeof *a->seen);
    a->seen = t;
    if (rc)
        return rc;
    uint64_t h = keyed_hash(a->hash_key, e, PURE_DH_LEN);
    uint32_t s = (uint32_t)(h % PURE_ADMIT_SEEN_SETS);
    a->seen[s * 4 + a->seen_next[s]] = h;
    a->seen_next[s] = (uint8_t)((a->seen_next[s] + 1) & 3);
    return 0;
}

/* The bytes that name a source host: see pure_admit_bucket. */
static size_t host_bytes(const pure_addr *from, const uint8_t **p)
{
    uint16_t family;
    memcpy(&family, from->bytes, 2);
    if (from->len == 16 && family == 2) { /* sockaddr_in: AF_INET, port, address */
        *p = from->bytes + 4;
        return 4;
    }
    if (from->len == 28 && family == 10) { /* sockaddr_in6: the address's first 64 bits */
        *p = from->bytes + 8;
        return 8;
    }
    *p = from->bytes;
    size_t n = from->len <= sizeof from->bytes ? from->len : sizeof from->bytes;
    return n > 2 ? n - 2 : n;
}

uint32_t pure_admit_src_buckets(uint32_t cap)
{
    uint32_t n = PURE_ADMIT_SRC_MIN;
    while (n < cap && n < PURE_ADMIT_SRC_MAX)
        n <<= 1;
    return n;
}

pure_src_bucket *pure_admit_bucket(pure_admit *a, const pure_alloc *al, const pure_addr *from,
                                   uint32_t cap)
{
    if (!a->src) {
        uint32_t n = pure_admit_src_buckets(cap);
        a->src = pure_mem_alloc(al, n * sizeof *a->src);
        if (!a->src)
            return NULL;
        a->src_n = n;
        for (uint32_t i = 0; i < n; i++)
            a->src[i] = (pure_src_bucket){.refilled = 0, .tokens = UINT32_MAX, .half_open = 0};
    }
    const uint8_t *p;
    size_t n = host_bytes(from, &p);
    return &a->src[keyed_hash(a->hash_key, p, n) & (a->src_n - 1)];
}

int pure_admit_take_token(pure_src_bucket *b, uint32_t rate, uint64_t now)
{
    uint64_t burst = (uint64_t)rate * 1000;
    if (b->tokens == UINT32_MAX || b->tokens > burst) { /* fresh bucket, or the rate shrank */
        b->tokens = (uint32_t)(burst < UINT32_MAX - 1 ? burst : UINT32_MAX - 1);
        b->refilled = now;
    }
    if (now > b->refilled) {
        /* rate tokens per second, 1000 units each: rate units per ms */
        uint64_t add = (now - b->refilled) / 1000000 * rate;
        if (add) {
            uint64_t t = b->tokens + add;
            b->tokens = (uint32_t)(t < burst ? t : burst);
            b->refilled += add / rate * 1000000;
        }
    }
    if (b->tokens < 1000)
        return 0;
    b->tokens -= 1000;
    return 1;
}

/* Fresh: see pure_admit_fresh. */
static int newer(pure_ts_seen *g, uint64_t ts, uint64_t now)
{
    if (ts > g->ts) {
        g->ts = ts;
        g->at = now;
        return 1;
    }
    return ts + PURE_INIT_TS_WINDOW > g->ts && now - g->at < PURE_INIT_TS_WINDOW;
}

int pure_admit_fresh(pure_admit *a, const pure_alloc *al, const uint8_t key[PURE_KEY_LEN],
                     int64_t allow_index, uint32_t allow_cap, uint64_t ts, uint64_t now)
{
    if (allow_index >= 0) {
        if ((uint64_t)allow_index >= a->allow_ts_cap) {
            uint32_t cap =
                allow_cap > (uint64_t)allow_index ? allow_cap : (uint32_t)allow_index + 1;
            pure_ts_seen *t = pure_mem_alloc(al, cap * sizeof *t);
            if (!t)
                return PURE_ENOMEM;
            memset(t, 0, cap * sizeof *t);
            if (a->allow_ts)
                memcpy(t, a->allow_ts, a->allow_ts_cap * sizeof *t);
            pure_mem_free(al, a->allow_ts, a->allow_ts_cap * sizeof *t);
            a->allow_ts = t;
            a->allow_ts_cap = cap;
        }
        return newer(&a->allow_ts[allow_index], ts, now);
    }
    void *t = a->ts;
    int rc = sets_alloc(al, &t, &a->ts_next, PURE_ADMIT_TS_SETS, sizeof *a->ts);
    a->ts = t;
    if (rc)
        return rc;
    uint64_t h = keyed_hash(a->hash_key, key, PURE_KEY_LEN);
    uint32_t s = (uint32_t)(h % PURE_ADMIT_TS_SETS);
    pure_ts_entry *set = a->ts + s * 4;
    for (int i = 0; i < 4; i++)
        if (set[i].key_hash == h)
            return newer(&set[i].seen, ts, now);
    set[a->ts_next[s]] = (pure_ts_entry){h, {ts, now}};
    a->ts_next[s] = (uint8_t)((a->ts_next[s] + 1) & 3);
    return 1;
}
