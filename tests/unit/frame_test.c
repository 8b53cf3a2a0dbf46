/* SPDX-License-Identifier: MIT */
/* frame_test.c: frame encoding and parsing (frame.c): round trips of every frame, ACKs with many
 * ranges and a limited room, and every malformed case the parser must refuse with PURE_EPROTO
 * without moving its cursor: truncation at every byte, ACK ranges underflowing zero, too many
 * ranges, DATA past 2^62, CLOSE reasons too long, bad REKEY flags, unknown types. */
#include <string.h>

#include "frame.h"
#include "pure.h"
#include "test.h"
#include "varint.h"

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    return pure_varint_put(p, v);
}

/* Parses exactly one frame covering [b, e). Returns the parser's code; on success the cursor
 * must land on e. */
static int parse_one(const uint8_t *b, const uint8_t *e, pure_frame *f, pure_ack_frame *a)
{
    const uint8_t *p = b;
    int rc = pure_frame_parse(&p, e, f, a);
    if (rc == 0)
        CHECK(p == e);
    else
        CHECK(p == b); /* a refused frame does not move the cursor */
    return rc;
}

/* Every strict prefix of a frame (including the empty one) must be refused. */
static int all_truncations_refused(const uint8_t *b, size_t n)
{
    for (size_t cut = 0; cut < n; cut++) {
        const uint8_t *p = b;
        pure_frame f;
        pure_ack_frame a;
        if (pure_frame_parse(&p, b + cut, &f, &a) != PURE_EPROTO || p != b)
            return 0;
    }
    return 1;
}

static void test_data_round_trip(void)
{
    static const uint64_t offs[] = {
        0, 63, 64, 16383, 16384, (1ull << 30) - 1, 1ull << 30, PURE_VARINT_MAX - 5};
    static const uint8_t body[70] =
        "the quick brown fox jumps over the lazy dog, and again and again";
    static const size_t lens[] = {0, 1, 63, 64, 70};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
        for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++)
            for (int fin = 0; fin < 2; fin++) {
                uint64_t off = offs[i], len = lens[j];
                if (off + len > PURE_VARINT_MAX)
                    continue;
                uint8_t buf[128];
                uint8_t *e = pure_frame_put_data_header(buf, off, len, fin);
                CHECK_EQ(e - buf, pure_frame_data_header_len(off, len));
                memcpy(e, body, len);
                e += len;
                pure_frame f;
                pure_ack_frame a;
                CHECK_EQ(parse_one(buf, e, &f, &a), 0);
                CHECK_EQ(f.type, PURE_FRAME_DATA);
                CHECK(f.u.data.offset == off);
                CHECK_EQ(f.u.data.len, len);
                CHECK_EQ(f.u.data.fin, fin);
                CHECK(f.u.data.bytes == e - len);
                CHECK(memcmp(f.u.data.bytes, body, len) == 0);
                CHECK(all_truncations_refused(buf, (size_t)(e - buf)));
            }
}

static void test_credit_close_ping_padding(void)
{
    static const uint64_t vals[] = {0, 1, 63, 64, 1u << 20, PURE_VARINT_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t buf[16];
        uint8_t *e = pure_frame_put_credit(buf, vals[i]);
        CHECK_EQ(e - buf, 1 + pure_varint_len(vals[i]));
        pure_frame f;
        pure_ack_frame a;
        CHECK_EQ(parse_one(buf, e, &f, &a), 0);
        CHECK_EQ(f.type, PURE_FRAME_CREDIT);
        CHECK(f.u.credit == vals[i]);
        CHECK(all_truncations_refused(buf, (size_t)(e - buf)));
    }

    uint8_t buf[400];
    char reason[300];
    memset(reason, 'r', sizeof reason);
    static const size_t rlens[] = {0, 1, 63, 64, 255};
    for (size_t i = 0; i < sizeof rlens / sizeof rlens[0]; i++) {
        uint8_t *e = pure_frame_put_close(buf, 0x1234, reason, rlens[i]);
        pure_frame f;
        pure_ack_frame a;
        CHECK_EQ(parse_one(buf, e, &f, &a), 0);
        CHECK_EQ(f.type, PURE_FRAME_CLOSE);
        CHECK_EQ(f.u.close.code, 0x1234);
        CHECK_EQ(f.u.close.reason_len, rlens[i]);
        CHECK(all_truncations_refused(buf, (size_t)(e - buf)));
    }
    /* the encoder cuts a reason to 255 bytes, so its frames always parse */
    uint8_t *e = pure_frame_put_close(buf, 7, reason, 300);
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(parse_one(buf, e, &f, &a), 0);
    CHECK_EQ(f.u.close.reason_len, 255);

    /* PING is one byte; a PADDING run comes back as one frame and stops at the next frame */
    const uint8_t pp[] = {PURE_FRAME_PADDING, 0, 0, 0, PURE_FRAME_PING, PURE_FRAME_PADDING};
    const uint8_t *p = pp;
    CHECK_EQ(pure_frame_parse(&p, pp + sizeof pp, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_PADDING);
    CHECK(p == pp + 4);
    CHECK_EQ(pure_frame_parse(&p, pp + sizeof pp, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_PING);
    CHECK(p == pp + 5);
    CHECK_EQ(pure_frame_parse(&p, pp + sizeof pp, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_PADDING);
    CHECK(p == pp + sizeof pp);
    CHECK_EQ(pure_frame_parse(&p, pp + sizeof pp, &f, &a), PURE_EPROTO); /* nothing left */
}

static void test_rekey(void)
{
    uint8_t buf[40];
    buf[0] = PURE_FRAME_REKEY;
    for (int flag = 0; flag < 3; flag++) {
        buf[1] = (uint8_t)flag;
        pure_put_u32be(buf + 2, 7);
        for (int i = 0; i < 32; i++)
            buf[6 + i] = (uint8_t)i;
        pure_frame f;
        pure_ack_frame a;
        if (flag < 2) {
            CHECK_EQ(parse_one(buf, buf + 38, &f, &a), 0);
            CHECK_EQ(f.type, PURE_FRAME_REKEY);
            CHECK(f.u.rekey == buf + 1);
            CHECK(all_truncations_refused(buf, 38));
        } else {
            CHECK_EQ(parse_one(buf, buf + 38, &f, &a), PURE_EPROTO); /* flag must be 0 or 1 */
        }
    }
}

/* ---- ACK ---- */

static void test_ack_round_trip(void)
{
    /* received: [0,3) [5,6) [10,20) [100,101): the frame lists them newest first, inclusive */
    const pure_range r[] = {{0, 3}, {5, 6}, {10, 20}, {100, 101}};
    uint8_t buf[128];
    uint8_t *e = pure_frame_put_ack(buf, sizeof buf, r, 4, 250);
    CHECK(e != NULL);
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(parse_one(buf, e, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_ACK);
    CHECK_EQ(a.largest, 100);
    CHECK_EQ(a.delay_us, 250);
    CHECK_EQ(a.n, 4);
    CHECK(a.r[0].lo == 100 && a.r[0].hi == 100);
    CHECK(a.r[1].lo == 10 && a.r[1].hi == 19);
    CHECK(a.r[2].lo == 5 && a.r[2].hi == 5);
    CHECK(a.r[3].lo == 0 && a.r[3].hi == 2);
    CHECK(all_truncations_refused(buf, (size_t)(e - buf)));
    /* no ranges: nothing to encode */
    CHECK(pure_frame_put_ack(buf, sizeof buf, r, 0, 0) == NULL);
    /* huge packet numbers */
    const pure_range big[] = {{PURE_VARINT_MAX - 100, PURE_VARINT_MAX - 50},
                              {PURE_VARINT_MAX - 10, PURE_VARINT_MAX + 1}};
    e = pure_frame_put_ack(buf, sizeof buf, big, 2, PURE_VARINT_MAX);
    CHECK(e != NULL);
    CHECK_EQ(parse_one(buf, e, &f, &a), 0);
    CHECK(a.largest == PURE_VARINT_MAX && a.delay_us == PURE_VARINT_MAX && a.n == 2);
    CHECK(a.r[1].lo == PURE_VARINT_MAX - 100 && a.r[1].hi == PURE_VARINT_MAX - 51);
}

static void test_ack_many_ranges_and_room(void)
{
    /* 40 ranges of 3 packets with gaps of 2: the encoder keeps the newest PURE_ACK_MAX_RANGES */
    pure_range r[40];
    for (int i = 0; i < 40; i++) {
        r[i].start = (uint64_t)i * 5 + 1000;
        r[i].end = r[i].start + 3;
    }
    uint8_t buf[1024];
    uint8_t *e = pure_frame_put_ack(buf, sizeof buf, r, 40, 9);
    CHECK(e != NULL);
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(parse_one(buf, e, &f, &a), 0);
    CHECK_EQ(a.n, PURE_ACK_MAX_RANGES);
    for (uint32_t i = 0; i < a.n; i++) {
        const pure_range *want = &r[39 - i];
        CHECK(a.r[i].lo == want->start && a.r[i].hi == want->end - 1);
    }
    size_t full = (size_t)(e - buf);

    /* every room: NULL below the header plus the newest range, else a prefix of the newest
     * ranges that fits, as many as fit */
    uint32_t prev_n = 0;
    for (size_t room = 0; room <= full + 2; room++) {
        uint8_t out[1024];
        memset(out, 0xcc, sizeof out);
        uint8_t *q = pure_frame_put_ack(out, room, r, 40, 9);
        if (!q) {
            CHECK(room < 1 + 2 + 1 + 1 + 1); /* type, largest (2), delay, count, first */
            CHECK_EQ(out[0], 0xcc);          /* nothing written */
            continue;
        }
        size_t used = (size_t)(q - out);
        CHECK(used <= room);
        CHECK_EQ(out[used], 0xcc);
        pure_ack_frame b;
        CHECK_EQ(parse_one(out, q, &f, &b), 0);
        CHECK(b.n >= prev_n && b.n >= 1);
        prev_n = b.n;
        for (uint32_t i = 0; i < b.n; i++)
            CHECK(b.r[i].lo == a.r[i].lo && b.r[i].hi == a.r[i].hi);
        if (b.n < PURE_ACK_MAX_RANGES)
            CHECK(used + 2 > room); /* each further range takes 2 bytes here: it did not fit */
    }
    CHECK_EQ(prev_n, PURE_ACK_MAX_RANGES);
}

/* Builds an ACK frame from raw fields. */
static size_t raw_ack(uint8_t *buf, uint64_t largest, uint64_t delay, uint64_t count,
                      uint64_t first, const uint64_t *pairs, size_t npairs)
{
    uint8_t *p = buf;
    *p++ = PURE_FRAME_ACK;
    p = put_varint(p, largest);
    p = put_varint(p, delay);
    p = put_varint(p, count);
    p = put_varint(p, first);
    for (size_t i = 0; i < npairs; i++) {
        p = put_varint(p, pairs[2 * i]);
        p = put_varint(p, pairs[2 * i + 1]);
    }
    return (size_t)(p - buf);
}

static void test_ack_malformed(void)
{
    uint8_t buf[1024];
    pure_frame f;
    pure_ack_frame a;
    size_t n;
    /* first range reaching exactly 0 is fine; one more underflows */
    n = raw_ack(buf, 5, 0, 0, 5, NULL, 0);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), 0);
    CHECK(a.r[0].lo == 0);
    n = raw_ack(buf, 5, 0, 0, 6, NULL, 0);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);
    /* [10,10] then gap 0 -> next hi = 10 - 0 - 2 = 8; len 8 reaches 0 exactly */
    uint64_t ok[] = {0, 8};
    n = raw_ack(buf, 10, 0, 1, 0, ok, 1);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), 0);
    CHECK(a.n == 2 && a.r[1].hi == 8 && a.r[1].lo == 0);
    uint64_t len_under[] = {0, 9};
    n = raw_ack(buf, 10, 0, 1, 0, len_under, 1);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);
    /* the gap itself underflowing: prev lo 10 needs gap <= 8 */
    uint64_t gap_edge[] = {8, 0};
    n = raw_ack(buf, 10, 0, 1, 0, gap_edge, 1);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), 0);
    CHECK(a.r[1].hi == 0 && a.r[1].lo == 0);
    uint64_t gap_under[] = {9, 0};
    n = raw_ack(buf, 10, 0, 1, 0, gap_under, 1);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);
    uint64_t gap_huge[] = {PURE_VARINT_MAX, 0};
    n = raw_ack(buf, 10, 0, 1, 0, gap_huge, 1);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);
    /* a later range underflowing after good ones */
    uint64_t later[] = {0, 0, 0, 0, 0, 5};
    n = raw_ack(buf, 10, 0, 3, 0, later, 3); /* 10, 8, 6, then hi 4 len 5 */
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);

    /* range count: PURE_ACK_MAX_RANGES ranges (count = MAX - 1) is the most accepted */
    uint64_t pairs[2 * PURE_ACK_MAX_RANGES];
    for (int i = 0; i < PURE_ACK_MAX_RANGES; i++) {
        pairs[2 * i] = 0;
        pairs[2 * i + 1] = 0;
    }
    n = raw_ack(buf, 1000, 0, PURE_ACK_MAX_RANGES - 1, 0, pairs, PURE_ACK_MAX_RANGES - 1);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), 0);
    CHECK_EQ(a.n, PURE_ACK_MAX_RANGES);
    n = raw_ack(buf, 1000, 0, PURE_ACK_MAX_RANGES, 0, pairs, PURE_ACK_MAX_RANGES);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);
    n = raw_ack(buf, 1000, 0, PURE_VARINT_MAX, 0, pairs, 1);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);
    /* count promising more pairs than present */
    n = raw_ack(buf, 1000, 0, 3, 0, pairs, 2);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), PURE_EPROTO);
    /* every truncation of a long ACK */
    n = raw_ack(buf, 1u << 20, 77, 5, 3, (const uint64_t[]){1, 2, 100, 3, 16384, 1, 0, 0, 2, 2}, 5);
    CHECK_EQ(parse_one(buf, buf + n, &f, &a), 0);
    CHECK(all_truncations_refused(buf, n));
}

static void test_data_close_malformed(void)
{
    uint8_t buf[600] = {0};
    pure_frame f;
    pure_ack_frame a;
    uint8_t *p;
    /* offset + length must stay within 2^62 - 1 */
    p = buf;
    *p++ = PURE_FRAME_DATA;
    p = put_varint(p, PURE_VARINT_MAX - 1);
    p = put_varint(p, 1);
    *p++ = 'x';
    CHECK_EQ(parse_one(buf, p, &f, &a), 0);
    p = buf;
    *p++ = PURE_FRAME_DATA | PURE_FRAME_DATA_FIN;
    p = put_varint(p, PURE_VARINT_MAX);
    p = put_varint(p, 1);
    *p++ = 'x';
    CHECK_EQ(parse_one(buf, p, &f, &a), PURE_EPROTO);
    /* a length beyond the packet */
    p = buf;
    *p++ = PURE_FRAME_DATA;
    p = put_varint(p, 0);
    p = put_varint(p, 10);
    memset(p, 'y', 9);
    CHECK_EQ(parse_one(buf, p + 9, &f, &a), PURE_EPROTO);
    CHECK_EQ(parse_one(buf, p + 10, &f, &a), 0);
    /* a CLOSE reason longer than 255, even if present */
    p = buf;
    *p++ = PURE_FRAME_CLOSE;
    p = put_varint(p, 1);
    p = put_varint(p, 256);
    memset(p, 'z', 256);
    CHECK_EQ(parse_one(buf, p + 256, &f, &a), PURE_EPROTO);
    /* REKEY one byte short */
    memset(buf, 0, sizeof buf);
    buf[0] = PURE_FRAME_REKEY;
    CHECK_EQ(parse_one(buf, buf + 37, &f, &a), PURE_EPROTO);
    /* PING then garbage: the PING parses, the garbage does not */
    buf[0] = PURE_FRAME_PING;
    buf[1] = 0x07;
    const uint8_t *q = buf;
    CHECK_EQ(pure_frame_parse(&q, buf + 2, &f, &a), 0);
    CHECK_EQ(pure_frame_parse(&q, buf + 2, &f, &a), PURE_EPROTO);
    CHECK(q == buf + 1);
}

static void test_unknown_types(void)
{
    int refused = 0, accepted = 0;
    for (int t = 0; t < 256; t++) {
        uint8_t buf[64];
        memset(buf, 0, sizeof buf);
        buf[0] = (uint8_t)t;
        const uint8_t *p = buf;
        pure_frame f;
        pure_ack_frame a;
        int rc = pure_frame_parse(&p, buf + sizeof buf, &f, &a);
        int known = t == PURE_FRAME_PADDING || t == PURE_FRAME_PING || t == PURE_FRAME_ACK ||
                    t == PURE_FRAME_CREDIT || t == PURE_FRAME_CLOSE || t == PURE_FRAME_REKEY ||
                    t == PURE_FRAME_DELIVERED || t == PURE_FRAME_PATH_CHALLENGE ||
                    t == PURE_FRAME_PATH_RESPONSE || t == PURE_FRAME_DATA || t == PURE_FRAME_ECN ||
                    t == (PURE_FRAME_DATA | PURE_FRAME_DATA_FIN) || t == PURE_FRAME_DATAGRAM ||
                    t == PURE_FRAME_DELIVERED_COUNT;
        /* CHAN_DATA, CHAN_CREDIT, CHAN_DELIVERED, CHAN_CANCEL, CHAN_CANCELLED are known but a
         * zero body names channel 0, which is refused (test_channel_frames, test_cancel_frames) */
        if (known) {
            CHECK_EQ(rc, 0); /* zero bodies are valid for every known type */
            accepted++;
        } else {
            CHECK_EQ(rc, PURE_EPROTO);
            CHECK(p == buf);
            refused++;
        }
    }
    CHECK_EQ(accepted, 14);
    CHECK_EQ(refused, 242);
}

/* Channel frames, DELIVERED_COUNT and DATAGRAM round-trip; a channel 0 (DELIVERED_COUNT takes
 * it) or above 255, a CHAN_DATA or DATAGRAM longer than the packet, and a truncated one are
 * refused. */
static void test_channel_frames(void)
{
    uint8_t buf[256];
    pure_pkt k = {buf, buf + sizeof buf};
    CHECK_EQ(pure_pkt_chan_offset(&k, PURE_FRAME_CHAN_CREDIT, 7, 1u << 20), 0);
    /* after the 6-byte CHAN_CREDIT: type, channel (2), offset (8), length (2) */
    CHECK_EQ(pure_pkt_chan_data_fit(&k, 255, 1ull << 40, 1000), sizeof buf - 6 - 1 - 2 - 8 - 2);
    uint8_t *body = pure_pkt_chan_data(&k, 255, 1ull << 40, 5);
    CHECK(body != NULL);
    memcpy(body, "hello", 5);
    CHECK_EQ(pure_pkt_datagram(&k, (const uint8_t *)"dg", 2), 0);
    CHECK_EQ(pure_pkt_chan_offset(&k, PURE_FRAME_CHAN_DELIVERED, 1, 99), 0);
    CHECK_EQ(pure_pkt_delivered_count(&k, 0, 1ull << 33), 0); /* channel 0 too */
    CHECK_EQ(pure_pkt_delivered_count(&k, 255, 0), 0);
    const uint8_t *p = buf, *end = k.p;
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_CHAN_CREDIT && f.u.chan.channel == 7 && f.u.chan.offset == 1u << 20);
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_CHAN_DATA && f.u.chan.channel == 255 &&
          f.u.chan.offset == 1ull << 40 && f.u.chan.len == 5 &&
          !memcmp(f.u.chan.bytes, "hello", 5));
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_DATAGRAM && f.u.chan.len == 2 && !memcmp(f.u.chan.bytes, "dg", 2));
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_CHAN_DELIVERED && f.u.chan.channel == 1 && f.u.chan.offset == 99);
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_DELIVERED_COUNT && f.u.chan.channel == 0 &&
          f.u.chan.offset == 1ull << 33);
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_DELIVERED_COUNT && f.u.chan.channel == 255 && f.u.chan.offset == 0);
    CHECK(p == end);
    static const uint8_t bad[][6] = {
        {PURE_FRAME_CHAN_DATA, 0, 0, 1, 'x'},        /* channel 0 */
        {PURE_FRAME_CHAN_CREDIT, 0x41, 0x00, 5},     /* channel 256 */
        {PURE_FRAME_CHAN_DATA, 1, 0, 9, 'x'},        /* 9 bytes announced, 1 there */
        {PURE_FRAME_DATAGRAM, 5, 'a', 'b'},          /* 5 bytes announced, 2 there */
        {PURE_FRAME_CHAN_DELIVERED, 3},              /* truncated */
        {PURE_FRAME_DELIVERED_COUNT, 0x41, 0x00, 5}, /* channel 256 */
        {PURE_FRAME_DELIVERED_COUNT, 0, 0x41},       /* truncated count */
    };
    static const size_t bad_len[] = {5, 4, 5, 4, 2, 4, 3};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = bad[i];
        CHECK_EQ(pure_frame_parse(&p, bad[i] + bad_len[i], &f, &a), PURE_EPROTO);
        CHECK(p == bad[i]);
    }
    /* a writer never writes past the room */
    pure_pkt small = {buf, buf + 4};
    CHECK_EQ(pure_pkt_datagram(&small, (const uint8_t *)"abcd", 4), -1);
    CHECK(pure_pkt_chan_data(&small, 1, 0, 2) == NULL);
    CHECK(small.p == buf);
}

/* CHAN_CANCEL and CHAN_CANCELLED round-trip; a range shorter than a length prefix or longer than
 * the largest message, past 2^62, an outcome other than 0/1, channel 0 and truncation are
 * refused. */
static void test_cancel_frames(void)
{
    uint8_t buf[64];
    pure_pkt k = {buf, buf + sizeof buf};
    CHECK_EQ(pure_pkt_chan_cancel(&k, 9, 1234567, 1ull << 40, (1ull << 32) + 3), 0);
    CHECK_EQ(pure_pkt_chan_cancelled(&k, 255, 7, 1), 0);
    CHECK_EQ(pure_pkt_chan_cancelled(&k, 1, 0, 0), 0);
    const uint8_t *p = buf, *end = k.p;
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_CHAN_CANCEL && f.u.cancel.channel == 9 && f.u.cancel.id == 1234567 &&
          f.u.cancel.offset == 1ull << 40 && f.u.cancel.len == (1ull << 32) + 3);
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_CHAN_CANCELLED && f.u.cancel.channel == 255 && f.u.cancel.id == 7 &&
          f.u.cancel.delivered == 1);
    CHECK_EQ(pure_frame_parse(&p, end, &f, &a), 0);
    CHECK(f.type == PURE_FRAME_CHAN_CANCELLED && f.u.cancel.channel == 1 && f.u.cancel.id == 0 &&
          f.u.cancel.delivered == 0);
    CHECK(p == end);
    static const uint8_t bad[][12] = {
        {PURE_FRAME_CHAN_CANCEL, 1, 0, 0, 3},                         /* 3 bytes */
        {PURE_FRAME_CHAN_CANCEL, 1, 0, 0, 0xc1, 0, 0, 0, 0, 0, 0, 4}, /* 2^32 + 4 */
        {PURE_FRAME_CHAN_CANCEL, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
         8},                                           /* 2^62 */
        {PURE_FRAME_CHAN_CANCEL, 0, 0, 0, 8},          /* channel 0 */
        {PURE_FRAME_CHAN_CANCEL, 1, 0, 0},             /* truncated */
        {PURE_FRAME_CHAN_CANCELLED, 1, 0, 2},          /* outcome 2 */
        {PURE_FRAME_CHAN_CANCELLED, 1, 0},             /* truncated */
        {PURE_FRAME_CHAN_CANCELLED, 0x41, 0x00, 0, 0}, /* channel 256 */
    };
    static const size_t bad_len[] = {5, 12, 12, 5, 4, 4, 3, 5};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = bad[i];
        CHECK_EQ(pure_frame_parse(&p, bad[i] + bad_len[i], &f, &a), PURE_EPROTO);
        CHECK(p == bad[i]);
    }
    pure_pkt small = {buf, buf + 4};
    CHECK_EQ(pure_pkt_chan_cancel(&small, 1, 0, 0, 8), -1);
    CHECK_EQ(pure_pkt_chan_cancelled(&small, 1, 1u << 20, 0), -1);
    CHECK(small.p == buf);
}

/* DELIVERED round-trips behind a CLOSE, and a truncated one is refused. */
static void test_delivered(void)
{
    uint8_t buf[64];
    pure_pkt k = {buf, buf + sizeof buf};
    CHECK_EQ(pure_pkt_close(&k, 0, "bye", 3), 0);
    CHECK_EQ(pure_pkt_delivered(&k, 123456789), 0);
    const uint8_t *p = buf;
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(pure_frame_parse(&p, k.p, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_CLOSE);
    CHECK_EQ(pure_frame_parse(&p, k.p, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_DELIVERED);
    CHECK_EQ(f.u.delivered, 123456789);
    CHECK(p == k.p);
    const uint8_t *q = k.p - 2;
    CHECK_EQ(pure_frame_parse(&q, k.p - 1, &f, &a), PURE_EPROTO);
    pure_pkt tiny = {buf, buf + 3}; /* type + a 4-byte varint does not fit */
    CHECK_EQ(pure_pkt_delivered(&tiny, 123456789), -1);
    CHECK(tiny.p == buf);
}

/* ECN carries a count below 2^16: it round-trips at the edges; a larger one, or a truncated
 * varint, is refused. */
static void test_ecn(void)
{
    static const uint16_t counts[] = {0, 1, 63, 64, 16383, 16384, 65535};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        uint8_t buf[8];
        pure_pkt k = {buf, buf + sizeof buf};
        CHECK_EQ(pure_pkt_ecn(&k, counts[i]), 0);
        const uint8_t *p = buf;
        pure_frame f;
        pure_ack_frame a;
        CHECK_EQ(pure_frame_parse(&p, k.p, &f, &a), 0);
        CHECK_EQ(f.type, PURE_FRAME_ECN);
        CHECK_EQ(f.u.ce, counts[i]);
        CHECK(p == k.p);
        p = buf;
        if (k.p - buf > 2)
            CHECK_EQ(pure_frame_parse(&p, k.p - 1, &f, &a), PURE_EPROTO);
    }
    uint8_t big[] = {PURE_FRAME_ECN, 0x80, 0x01, 0x00, 0x00}; /* 65536 */
    const uint8_t *p = big;
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(pure_frame_parse(&p, big + sizeof big, &f, &a), PURE_EPROTO);
    uint8_t tiny[2];
    pure_pkt k = {tiny, tiny + 2}; /* type + a 4-byte varint does not fit */
    CHECK_EQ(pure_pkt_ecn(&k, 20000), -1);
    CHECK(k.p == tiny);
}

/* PATH_CHALLENGE and PATH_RESPONSE carry 8 bytes; 7 are refused. */
static void test_path_frames(void)
{
    uint8_t buf[32], data[PURE_PATH_DATA_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
    pure_pkt k = {buf, buf + sizeof buf};
    CHECK_EQ(pure_pkt_path(&k, PURE_FRAME_PATH_CHALLENGE, data), 0);
    CHECK_EQ(pure_pkt_path(&k, PURE_FRAME_PATH_RESPONSE, data), 0);
    CHECK_EQ(k.p - buf, 18);
    const uint8_t *p = buf;
    pure_frame f;
    pure_ack_frame a;
    CHECK_EQ(pure_frame_parse(&p, k.p, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_PATH_CHALLENGE);
    CHECK(memcmp(f.u.path, data, sizeof data) == 0);
    CHECK_EQ(pure_frame_parse(&p, k.p, &f, &a), 0);
    CHECK_EQ(f.type, PURE_FRAME_PATH_RESPONSE);
    p = buf;
    CHECK_EQ(pure_frame_parse(&p, buf + 8, &f, &a), PURE_EPROTO);
    pure_pkt tiny = {buf, buf + 8};
    CHECK_EQ(pure_pkt_path(&tiny, PURE_FRAME_PATH_CHALLENGE, data), -1);
}

int main(void)
{
    RUN(test_data_round_trip);
    RUN(test_credit_close_ping_padding);
    RUN(test_rekey);
    RUN(test_ack_round_trip);
    RUN(test_ack_many_ranges_and_room);
    RUN(test_ack_malformed);
    RUN(test_data_close_malformed);
    RUN(test_unknown_types);
    RUN(test_channel_frames);
    RUN(test_cancel_frames);
    RUN(test_delivered);
    RUN(test_ecn);
    RUN(test_path_frames);
    return pure_test_finish();
}
