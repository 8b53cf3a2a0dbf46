/* SPDX-License-Identifier: MIT */
/* keys_test.c: the per-packet AEAD nonce (keys.c), pinned to docs/protocol.md's rule: the
 * direction's 12-byte IV XOR the packet number, right-aligned and big-endian. A change here would
 * pass every simulation (both ends share the code) and break interop with every deployed peer. */
#include <string.h>

#include "keys.h"
#include "test.h"

/* The rule, byte by byte. */
static void reference(uint8_t out[PURE_NONCE_LEN], const uint8_t iv[PURE_NONCE_LEN], uint64_t pn)
{
    memcpy(out, iv, PURE_NONCE_LEN);
    for (int i = 0; i < 8; i++)
        out[PURE_NONCE_LEN - 1 - i] ^= (uint8_t)(pn >> (8 * i));
}

static void test_known_nonce(void)
{
    uint8_t iv[PURE_NONCE_LEN], n[PURE_NONCE_LEN];
    for (int i = 0; i < PURE_NONCE_LEN; i++)
        iv[i] = (uint8_t)(0x10 * i + 1);
    pure_keys_nonce(n, iv, 0x0102030405060708ull);
    static const uint8_t want[PURE_NONCE_LEN] = {
        0x01,        0x11,        0x21,        0x31,        0x41 ^ 0x01, 0x51 ^ 0x02,
        0x61 ^ 0x03, 0x71 ^ 0x04, 0x81 ^ 0x05, 0x91 ^ 0x06, 0xa1 ^ 0x07, 0xb1 ^ 0x08};
    CHECK(memcmp(n, want, sizeof want) == 0);
    pure_keys_nonce(n, iv, 0);
    CHECK(memcmp(n, iv, sizeof iv) == 0);
}

static void test_against_rule(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 10000; k++) {
        uint8_t iv[PURE_NONCE_LEN], a[PURE_NONCE_LEN], b[PURE_NONCE_LEN];
        for (int i = 0; i < PURE_NONCE_LEN; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            iv[i] = (uint8_t)x;
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t pn = k < 100 ? (uint64_t)k : x >> (k % 64);
        pure_keys_nonce(a, iv, pn);
        reference(b, iv, pn);
        CHECK(memcmp(a, b, sizeof a) == 0);
    }
}

int main(void)
{
    RUN(test_known_nonce);
    RUN(test_against_rule);
    return pure_test_finish();
}
