/* SPDX-License-Identifier: MIT */
/* crypto_null.c: the deterministic, insecure backend of the crypto seam, for tests and fuzzing.
 *
 * It has no secrets worth the name: random is a seeded PRNG, DH is XOR, and the AEAD does not
 * encrypt. What it keeps is everything protocol tests depend on: DH is commutative (both sides
 * of a handshake agree), hash and HMAC are real SHA-256 (portable, so results do not depend on a
 * library), and the AEAD tag covers key, nonce, ad and data, so any change anywhere fails open.
 * Nothing here touches OpenSSL, so a fuzzer spends its time in Pure's parsers. */
#include "crypto.h"

#include <stdlib.h>
#include <string.h>

#include "pure.h"

/* ---- SHA-256 (FIPS 180-4), straightforward portable implementation ---- */

typedef struct {
    uint32_t st[8];
    uint64_t bytes;
    uint8_t buf[64];
    size_t used;
} null_sha256;

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void sha_block(null_sha256 *s, const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h;
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->st[0], b = s->st[1], c = s->st[2], d = s->st[3];
    e = s->st[4], f = s->st[5], g = s->st[6], h = s->st[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 =
            h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    s->st[0] += a, s->st[1] += b, s->st[2] += c, s->st[3] += d;
    s->st[4] += e, s->st[5] += f, s->st[6] += g, s->st[7] += h;
    pure_wipe(w, sizeof w); /* the schedule of a block that may be HMAC's key ^ pad */
}

static void sha_init(null_sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->st, iv, sizeof(iv));
    s->bytes = 0;
    s->used = 0;
}

static void sha_update(null_sha256 *s, const uint8_t *p, size_t n)
{
    if (p == NULL)
        return;
    s->bytes += n;
    while (n > 0) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->buf + s->used, p, take);
        s->used += take, p += take, n -= take;
        if (s->used == 64) {
            sha_block(s, s->buf);
            s->used = 0;
        }
    }
}

static void sha_final(null_sha256 *s, uint8_t out[PURE_HASH_LEN])
{
    uint64_t bits = s->bytes * 8;
    uint8_t len[8];
    static const uint8_t pad[64] = {0x80};
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha_update(s, pad, s->used < 56 ? 56 - s->used : 120 - s->used);
    sha_update(s, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->st[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->st[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->st[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->st[i];
    }
    pure_wipe(s, sizeof(*s));
}

static void null_hash(uint8_t out[PURE_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
                      size_t blen, const uint8_t *c, size_t clen)
{
    null_sha256 s;
    sha_init(&s);
    sha_update(&s, a, alen);
    sha_update(&s, b, blen);
    sha_update(&s, c, clen);
    sha_final(&s, out);
}

/* HMAC-SHA256 (RFC 2104) over key and up to three message pieces. */
static void hmac3(uint8_t out[PURE_HASH_LEN], const uint8_t *key, size_t keylen, const uint8_t *a,
                  size_t alen, const uint8_t *b, size_t blen, const uint8_t *c, size_t clen)
{
    uint8_t k[64] = {0}, pad[64], inner[PURE_HASH_LEN];
    null_sha256 s;
    if (keylen > sizeof(k))
        null_hash(k, key, keylen, NULL, 0, NULL, 0);
    else if (keylen > 0)
        memcpy(k, key, keylen);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    sha_init(&s);
    sha_update(&s, pad, 64);
    sha_update(&s, a, alen);
    sha_update(&s, b, blen);
    sha_update(&s, c, clen);
    sha_final(&s, inner);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    null_hash(out, pad, 64, inner, sizeof(inner), NULL, 0);
    pure_wipe(k, sizeof(k));
    pure_wipe(pad, sizeof(pad));
    pure_wipe(inner, sizeof(inner));
}

static void null_hmac(uint8_t out[PURE_HASH_LEN], const uint8_t *key, size_t keylen,
                      const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    hmac3(out, key, keylen, a, alen, b, blen, NULL, 0);
}

/* ---- random: splitmix64, seeded by pure_crypto_null_seed ---- */

/* Process-wide, like a real entropy source; tests that need reproducibility seed it first. */
static uint64_t g_null_state = 0x5075726521ull;

void pure_crypto_null_seed(uint64_t seed)
{
    g_null_state = seed;
}

static int null_random(uint8_t *buf, size_t len)
{
    while (len > 0) {
        uint64_t z = (g_null_state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        for (int i = 0; i < 8 && len > 0; i++, len--)
            *buf++ = (uint8_t)(z >> (8 * i));
    }
    return 0;
}

/* ---- DH: public = private, shared = a XOR B (so a XOR (b) == b XOR (a)) ---- */

static int null_dh_public(uint8_t pub[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN])
{
    memmove(pub, priv, PURE_DH_LEN);
    return 0;
}

static int null_dh(uint8_t out[PURE_DH_LEN], const uint8_t priv[PURE_DH_LEN],
                   const uint8_t pub[PURE_DH_LEN])
{
    uint8_t acc = 0;
    for (int i = 0; i < PURE_DH_LEN; i++) {
        out[i] = priv[i] ^ pub[i];
        acc |= out[i];
    }
    /* The same rule as X25519's low-order check, so tests of that path work on null crypto. */
    return acc == 0 ? PURE_ECRYPTO : 0;
}

/* ---- AEAD: identity "encryption", tag = HMAC(key, nonce || lengths || ad || data)[0..16) ---- */

typedef struct {
    uint8_t key[PURE_AEAD_MAX_KEY];
    size_t keylen;
} null_aead;

static const pure_aead_impl null_aead_impl;

static int null_aead_init(pure_aead *a, enum pure_aead_alg alg, const uint8_t *key)
{
    null_aead *n;
    size_t keylen;
    if (a == NULL || key == NULL)
        return PURE_EINVAL;
    a->impl = NULL;
    a->ops = &null_aead_impl;
    if (alg == PURE_AEAD_AES128_GCM)
        keylen = 16;
    else if (alg == PURE_AEAD_AES256_GCM)
        keylen = 32;
    else
        return PURE_EINVAL;
    n = malloc(sizeof(*n));
    if (n == NULL)
        return PURE_ENOMEM;
    memcpy(n->key, key, keylen);
    n->keylen = keylen;
    a->impl = n;
    a->alg = (uint8_t)alg;
    return 0;
}

static void null_aead_free(pure_aead *a)
{
    if (a == NULL || a->impl == NULL)
        return;
    pure_wipe(a->impl, sizeof(null_aead));
    free(a->impl);
    a->impl = NULL;
}

static void null_tag(const null_aead *n, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                     size_t adlen, const uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN])
{
    /* The lengths fix the boundary between ad and data, so moving bytes across it changes the
     * tag even when the concatenation is the same. */
    uint8_t head[PURE_NONCE_LEN + 16], mac[PURE_HASH_LEN];
    memcpy(head, nonce, PURE_NONCE_LEN);
    for (int i = 0; i < 8; i++) {
        head[PURE_NONCE_LEN + i] = (uint8_t)((uint64_t)adlen >> (56 - 8 * i));
        head[PURE_NONCE_LEN + 8 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
    }
    hmac3(mac, n->key, n->keylen, head, sizeof(head), ad, adlen, data, len);
    memcpy(tag, mac, PURE_TAG_LEN);
}

static int null_aead_seal(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                          size_t adlen, uint8_t *data, size_t len, uint8_t tag[PURE_TAG_LEN])
{
    if (a == NULL || a->impl == NULL)
        return PURE_EINVAL;
    null_tag(a->impl, nonce, ad, adlen, data, len, tag);
    return 0;
}

static int null_aead_open(pure_aead *a, const uint8_t nonce[PURE_NONCE_LEN], const uint8_t *ad,
                          size_t adlen, uint8_t *data, size_t len, const uint8_t tag[PURE_TAG_LEN])
{
    uint8_t want[PURE_TAG_LEN], diff = 0;
    if (a == NULL || a->impl == NULL)
        return PURE_EINVAL;
    null_tag(a->impl, nonce, ad, adlen, data, len, want);
    for (int i = 0; i < PURE_TAG_LEN; i++)
        diff |= want[i] ^ tag[i];
    if (diff != 0) {
        /* this AEAD does not encrypt: the data is the plaintext. The seam's rule (crypto.h)
         * holds here too, so tests see what real backends do. */
        pure_wipe(data, len);
        return PURE_ECRYPTO;
    }
    return 0;
}

static const pure_aead_impl null_aead_impl = {
    .name = "null",
    .init = null_aead_init,
    .free = null_aead_free,
    .seal = null_aead_seal,
    .open = null_aead_open,
};

const pure_crypto pure_crypto_null = {
    .name = "null",
    .random = null_random,
    .dh_public = null_dh_public,
    .dh = null_dh,
    .hash = null_hash,
    .hmac = null_hmac,
    .aead_init = null_aead_init,
    .aead_free = null_aead_free,
    .aead_seal = null_aead_seal,
    .aead_open = null_aead_open,
};
