/* SPDX-License-Identifier: MIT */
/* varint_test.c: QUIC-style varints (varint.h): lengths at every boundary, exact encodings (the
 * RFC 9000 appendix A.1 examples), round trips, truncation at every byte, and the u32 helpers. */
#include <string.h>

#include "test.h"
#include "varint.h"

static void test_lengths(void)
{
    CHECK_EQ(pure_varint_len(0), 1);
    CHECK_EQ(pure_varint_len(63), 1);
    CHECK_EQ(pure_varint_len(64), 2);
    CHECK_EQ(pure_varint_len(16383), 2);
    CHECK_EQ(pure_varint_len(16384), 4);
    CHECK_EQ(pure_varint_len((1ull << 30) - 1), 4);
    CHECK_EQ(pure_varint_len(1ull << 30), 8);
    CHECK_EQ(pure_varint_len(PURE_VARINT_MAX), 8);
}

/* RFC 9000 A.1: 0xc2197c5eff14e88c = 151288809941952652, 0x9d7f3e7d = 494878333,
 * 0x7bbd = 15293, 0x25 = 37 (and 0x4025 = 37 too, not minimal but valid). */
static void test_rfc_examples(void)
{
    static const struct {
        uint8_t b[8];
        size_t n;
        uint64_t v;
    } ex[] = {
        {{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, 8, 151288809941952652ull},
        {{0x9d, 0x7f, 0x3e, 0x7d}, 4, 494878333},
        {{0x7b, 0xbd}, 2, 15293},
        {{0x25}, 1, 37},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        uint8_t out[8];
        uint8_t *e = pure_varint_put(out, ex[i].v);
        CHECK_EQ(e - out, ex[i].n);
        CHECK(memcmp(out, ex[i].b, ex[i].n) == 0);
        const uint8_t *p = ex[i].b;
        uint64_t v = 0;
        CHECK_EQ(pure_varint_get(&p, ex[i].b + ex[i].n, &v), 0);
        CHECK(v == ex[i].v);
        CHECK(p == ex[i].b + ex[i].n);
    }
    const uint8_t nonminimal[] = {0x40, 0x25};
    const uint8_t *p = nonminimal;
    uint64_t v = 0;
    CHECK_EQ(pure_varint_get(&p, nonminimal + 2, &v), 0);
    CHECK_EQ(v, 37);
    CHECK(p == nonminimal + 2);
}

static void test_round_trip_boundaries(void)
{
    static const uint64_t vals[] = {0,
                                    1,
                                    62,
                                    63,
                                    64,
                                    65,
                                    16382,
                                    16383,
                                    16384,
                                    16385,
                                    (1ull << 30) - 2,
                                    (1ull << 30) - 1,
                                    1ull << 30,
                                    (1ull << 30) + 1,
                                    1ull << 32,
                                    0x0123456789abcdefull & PURE_VARINT_MAX,
                                    PURE_VARINT_MAX - 1,
                                    PURE_VARINT_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t buf[9];
        memset(buf, 0xee, sizeof buf);
        uint8_t *e = pure_varint_put(buf, vals[i]);
        size_t n = (size_t)(e - buf);
        CHECK_EQ(n, pure_varint_len(vals[i]));
        CHECK_EQ(buf[n], 0xee); /* wrote exactly n bytes */
        CHECK_EQ(buf[0] >> 6, n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3);
        const uint8_t *p = buf;
        uint64_t v = ~0ull;
        CHECK_EQ(pure_varint_get(&p, buf + n, &v), 0);
        CHECK(v == vals[i]);
        CHECK(p == buf + n);
        /* every truncation fails and leaves cursor and value alone */
        for (size_t cut = 0; cut < n; cut++) {
            const uint8_t *q = buf;
            uint64_t w = 12345;
            CHECK_EQ(pure_varint_get(&q, buf + cut, &w), -1);
            CHECK(q == buf);
            CHECK_EQ(w, 12345);
        }
        /* extra bytes after it are not consumed */
        buf[n] = 0x3f;
        p = buf;
        CHECK_EQ(pure_varint_get(&p, buf + n + 1, &v), 0);
        CHECK(p == buf + n);
    }
}

static void test_sequence(void)
{
    uint8_t buf[256]; /* 22 values: 3 + 2 * 2 + 6 * 4 + 11 * 8 = 119 bytes */
    uint8_t *e = buf;
    for (uint64_t v = 1; v <= PURE_VARINT_MAX / 7; v *= 7)
        e = pure_varint_put(e, v);
    const uint8_t *p = buf;
    for (uint64_t v = 1; v <= PURE_VARINT_MAX / 7; v *= 7) {
        uint64_t got = 0;
        CHECK_EQ(pure_varint_get(&p, e, &got), 0);
        CHECK(got == v);
    }
    CHECK(p == e);
    uint64_t got = 0;
    CHECK_EQ(pure_varint_get(&p, e, &got), -1); /* at the end */
}

static void test_u32(void)
{
    uint8_t b[4];
    pure_put_u32be(b, 0x01020304u);
    CHECK(b[0] == 1 && b[1] == 2 && b[2] == 3 && b[3] == 4);
    CHECK_EQ(pure_get_u32be(b), 0x01020304u);
    pure_put_u32be(b, 0xffffffffu);
    CHECK_EQ(pure_get_u32be(b), 0xffffffffu);
    pure_put_u32be(b, 0x80000000u);
    CHECK(b[0] == 0x80 && b[3] == 0);
    CHECK_EQ(pure_get_u32be(b), 0x80000000u);
}

int main(void)
{
    RUN(test_lengths);
    RUN(test_rfc_examples);
    RUN(test_round_trip_boundaries);
    RUN(test_sequence);
    RUN(test_u32);
    return pure_test_finish();
}
