/* SPDX-License-Identifier: MIT */
/* siphash.c: SipHash-2-4 (siphash.h), written from the paper's specification: 2 compression
 * rounds per 8-byte word, 4 finalisation rounds, the message's length in the last word's top
 * byte. Words are read little-endian byte by byte, so the result is the same on any host. */
#include "siphash.h"

static uint64_t load_le(const uint8_t *p, size_t n)
{
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++)
        w |= (uint64_t)p[i] << (8 * i);
    return w;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = ROTL(v[1], 13);
    v[1] ^= v[0];
    v[0] = ROTL(v[0], 32);
    v[2] += v[3];
    v[3] = ROTL(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = ROTL(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = ROTL(v[1], 17);
    v[1] ^= v[2];
    v[2] = ROTL(v[2], 32);
}

uint64_t pure_siphash24(const uint8_t key[PURE_SIPHASH_KEY_LEN], const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t k0 = load_le(key, 8), k1 = load_le(key + 8, 8);
    /* "somepseudorandomlygeneratedbytes" */
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                     k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    size_t whole = n - n % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load_le(p + i, 8);
        v[3] ^= m;
        sip_round(v);
        sip_round(v);
        v[0] ^= m;
    }
    uint64_t last = (uint64_t)(n & 0xff) << 56 | (n % 8 ? load_le(p + whole, n % 8) : 0);
    v[3] ^= last;
    sip_round(v);
    sip_round(v);
    v[0] ^= last;
    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++)
        sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}
