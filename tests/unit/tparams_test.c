/* SPDX-License-Identifier: MIT */
/* tparams_test.c: the transport parameter codec (tparams.c): the exact encoding, round trips at
 * every varint boundary, unknown ids (and unknown feature bits) skipped wherever they stand, and
 * every malformed form refused with PURE_EPROTO and a zeroed result: each cut of a valid set, a
 * length past the end, an id twice (known or unknown), a known value that does not fill its
 * length or is cut short. */
#include <string.h>

#include "test.h"
#include "tparams.h"

static int same(const pure_tparams *a, const pure_tparams *b)
{
    return a->max_channels == b->max_channels && a->max_datagram_size == b->max_datagram_size &&
           a->features == b->features && a->recv_window == b->recv_window;
}

static int zero(const pure_tparams *t)
{
    return t->max_channels == 0 && t->max_datagram_size == 0 && t->features == 0 &&
           t->recv_window == 0;
}

/* The bytes on the wire: id, length, varint value, for all three, even zero ones. */
static void test_encoding(void)
{
    uint8_t b[PURE_TPARAMS_MAX];
    pure_tparams tp = {.max_channels = 8, .max_datagram_size = 1200, .features = PURE_TP_F_ECN};
    size_t n = pure_tparams_encode(&tp, b);
    CHECK(n == 10 && pure_test_eq_hex(b, n,
                                      "010108"
                                      "020244b0"
                                      "030101"));
    pure_tparams z = {0};
    n = pure_tparams_encode(&z, b);
    CHECK(n == 9 && pure_test_eq_hex(b, n,
                                     "010100"
                                     "020100"
                                     "030100"));
    /* above a varint's range: written as the largest, 8 bytes each */
    pure_tparams big = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    CHECK_EQ(pure_tparams_encode(&big, b), PURE_TPARAMS_MAX);
    pure_tparams out;
    CHECK_EQ(pure_tparams_decode(b, PURE_TPARAMS_MAX, &out), 0);
    CHECK(out.max_channels == PURE_VARINT_MAX && out.features == PURE_VARINT_MAX &&
          out.recv_window == PURE_VARINT_MAX);
    /* the starting credit, written only when announced (4 bytes for 1 MiB) */
    pure_tparams w = {.recv_window = 1u << 20};
    n = pure_tparams_encode(&w, b);
    CHECK(n == 15 && pure_test_eq_hex(b, n,
                                      "010100"
                                      "020100"
                                      "030100"
                                      "040480100000"));
    CHECK_EQ(pure_tparams_decode(b, n, &out), 0);
    CHECK(same(&w, &out));
}

static void test_round_trip(void)
{
    static const uint64_t vals[] = {0,          1,          63,         64,
                                    16383,      16384,      65535,      65536,
                                    1073741823, 1073741824, 1ull << 40, PURE_VARINT_MAX};
    const size_t k = sizeof vals / sizeof vals[0];
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++) {
            pure_tparams tp = {vals[i], vals[j], vals[(i + j) % k], vals[(i * j + 1) % k]}, out;
            uint8_t b[PURE_TPARAMS_MAX];
            size_t n = pure_tparams_encode(&tp, b);
            CHECK(n <= PURE_TPARAMS_MAX);
            CHECK_EQ(pure_tparams_decode(b, n, &out), 0);
            CHECK(same(&tp, &out));
        }
    /* the empty set (an initiator built before parameters): all zero */
    pure_tparams out = {1, 1, 1, 1};
    CHECK_EQ(pure_tparams_decode(NULL, 0, &out), 0);
    CHECK(zero(&out));
}

/* Unknown ids before, between and after the known ones, of every length class (a later
 * version's parameters), are skipped; so are unknown feature bits; a known id may be absent;
 * non-minimal varints are values like any other. */
static void test_unknown_skipped(void)
{
    uint8_t b[128];
    size_t n = pure_test_unhex(b, sizeof b,
                               "0a00"         /* id 10, empty */
                               "010105"       /* max_channels 5 */
                               "4abc03ffffff" /* id 0xabc (2-byte id), 3 bytes */
                               "80012345"
                               "40"
                               "40" /* id 0x12345, length 64 (2-byte) ... */);
    /* ... followed by its 64 bytes */
    memset(b + n, 0xee, 64);
    n += 64;
    n += pure_test_unhex(b + n, sizeof b - n,
                         "0302"
                         "4003");                      /* features 3, a 2-byte varint */
    n += pure_test_unhex(b + n, sizeof b - n, "3f00"); /* id 63, empty */
    pure_tparams out;
    CHECK_EQ(pure_tparams_decode(b, n, &out), 0);
    CHECK_EQ(out.max_channels, 5);
    CHECK_EQ(out.max_datagram_size, 0); /* absent */
    CHECK_EQ(out.features, 3);          /* bit 1 unknown here: kept, the link keeps what it knows */

    /* only unknown ids */
    n = pure_test_unhex(b, sizeof b,
                        "2001ff"
                        "2100");
    CHECK_EQ(pure_tparams_decode(b, n, &out), 0);
    CHECK(zero(&out));
}

/* Each of these is refused, with the result zeroed. */
static void test_malformed(void)
{
    static const char *const bad[] = {
        "01",       /* id, no length */
        "0102",     /* length 2, nothing */
        "010201",   /* length 2, 1 byte */
        "0a05aabb", /* unknown id, length past the end */
        "0a80",     /* unknown id, length varint cut short */
        "40",       /* id varint cut short */
        "010101"
        "010102", /* a known id twice */
        "0a00"
        "0a00", /* an unknown id twice */
        "0a01ff"
        "010101"
        "0a00", /* ... not next to each other */
        "4001"
        "0105"
        "010101",   /* id 1 in a 2-byte varint, then id 1 again */
        "0100",     /* a known value of length 0 */
        "01020101", /* a known value shorter than its length */
        "010140"
        "0a00",   /* a 2-byte varint cut by its length (1 of 2 bytes) */
        "010240", /* ... and by the end of the set */
        "0301"
        "40", /* the same for features */
        "0201"
        "c0", /* an 8-byte varint in 1 byte */
        "c000000000000001"
        "ffffffffffffffff", /* a length of 2^62 - 1 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t b[64];
        char hex[128];
        size_t h = 0;
        for (const char *c = bad[i]; *c && h + 1 < sizeof hex; c++)
            if (*c != ' ')
                hex[h++] = *c;
        hex[h] = 0;
        size_t n = pure_test_unhex(b, sizeof b, hex);
        pure_tparams out = {7, 7, 7, 7};
        int rc = pure_tparams_decode(b, n, &out);
        if (rc != PURE_EPROTO)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CHECK_EQ(rc, PURE_EPROTO);
        CHECK(zero(&out));
    }
}

/* Every cut of a valid set that ends inside an entry is refused; every cut at an entry's end is a
 * valid, shorter set. */
static void test_every_cut(void)
{
    uint8_t b[PURE_TPARAMS_MAX];
    pure_tparams tp = {.max_channels = 300, .max_datagram_size = 70000, .features = 1};
    size_t n = pure_tparams_encode(&tp, b);
    /* entries end at 4 (01 02 412c), 10 (02 04 80011170), 13 (03 01 01) */
    for (size_t cut = 0; cut <= n; cut++) {
        pure_tparams out;
        int rc = pure_tparams_decode(b, cut, &out);
        int boundary = cut == 0 || cut == 4 || cut == 10 || cut == n;
        CHECK_EQ(rc, boundary ? 0 : PURE_EPROTO);
        if (cut == 4)
            CHECK(out.max_channels == 300 && out.max_datagram_size == 0);
    }
    CHECK_EQ(n, 13);
}

int main(void)
{
    RUN(test_encoding);
    RUN(test_round_trip);
    RUN(test_unknown_skipped);
    RUN(test_malformed);
    RUN(test_every_cut);
    return pure_test_finish();
}
