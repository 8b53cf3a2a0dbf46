/* SPDX-License-Identifier: MIT */
/* frame_fuzz.c: libFuzzer target for the frame parser (frame.c).
 *
 * The input is a decrypted packet payload. It is parsed frame by frame until its end or the
 * first error, checking on the way that:
 *   - a failed parse leaves the cursor where it was, a successful one moves it forward and never
 *     past the end;
 *   - a PADDING run covers only zero bytes and stops at the first non-zero one;
 *   - every ACK holds 1..PURE_ACK_MAX_RANGES ranges, largest first, each lo <= hi, descending with
 *     at least one missing packet between neighbours; re-encoding it with pure_frame_put_ack gives
 *     back the same ranges when room allows, and the newest of them when room is short;
 *   - DATA, CREDIT, CLOSE and DELIVERED re-encode to a frame that parses back to the same
 *     fields, no longer than the original, and byte-identical when the original used minimal
 *     varints; PATH_CHALLENGE/PATH_RESPONSE take exactly the 8 bytes after their type;
 *   - CHAN_DATA, CHAN_CREDIT and CHAN_DELIVERED name a channel in 1..PURE_CHANNEL_MAX
 *     (DELIVERED_COUNT in 0..PURE_CHANNEL_MAX) and re-encode (pure_pkt_chan_*) to a frame that
 *     parses back to the same fields; a DATAGRAM's
 *     bytes lie inside the packet and re-encode (pure_pkt_datagram) to the same frame;
 *   - CHAN_CANCEL names a channel in range and a range of 4 .. 2^32 + 3 bytes ending below 2^62,
 *     CHAN_CANCELLED an outcome 0 or 1; both re-encode (pure_pkt_chan_cancel/_cancelled) to a
 *     frame that parses back to the same fields.
 * Any broken property aborts, which libFuzzer reports as a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "pure.h"
#include "varint.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "frame_fuzz: %s (line %d)\n", what, __LINE__);                             \
        abort();                                                                                   \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ack_shape(const pure_ack_frame *a)
{
    if (a->n < 1 || a->n > PURE_ACK_MAX_RANGES)
        FAIL("ACK range count out of bounds");
    if (a->r[0].hi != a->largest)
        FAIL("ACK first range does not end at largest");
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->r[i].lo > a->r[i].hi)
            FAIL("ACK range with lo > hi");
        if (i > 0 && !(a->r[i].hi + 1 < a->r[i - 1].lo))
            FAIL("ACK ranges not descending with a gap");
    }
}

/* Re-encodes a parsed ACK into `room` bytes and parses it back. full: all ranges must survive. */
static void reencode_ack(const pure_ack_frame *a, size_t room, int full)
{
    pure_range asc[PURE_ACK_MAX_RANGES];
    for (uint32_t i = 0; i < a->n; i++) {
        asc[a->n - 1 - i].start = a->r[i].lo;
        asc[a->n - 1 - i].end = a->r[i].hi + 1;
    }
    uint8_t buf[1 + 8 * 4 + PURE_ACK_MAX_RANGES * 16 + 16];
    if (room > sizeof buf)
        room = sizeof buf;
    uint8_t *e = pure_frame_put_ack(buf, room, asc, a->n, a->delay_us);
    if (!e) {
        if (full)
            FAIL("ACK did not re-encode into the room of the original");
        return;
    }
    if ((size_t)(e - buf) > room)
        FAIL("ACK encoder wrote past its room");
    const uint8_t *p = buf;
    pure_frame f;
    pure_ack_frame b;
    if (pure_frame_parse(&p, e, &f, &b) != 0 || p != e || f.type != PURE_FRAME_ACK)
        FAIL("re-encoded ACK does not parse");
    if (b.largest != a->largest || b.delay_us != a->delay_us || b.n > a->n || b.n == 0)
        FAIL("re-encoded ACK header differs");
    if (full && b.n != a->n)
        FAIL("re-encoded ACK lost ranges despite room");
    for (uint32_t i = 0; i < b.n; i++)
        if (b.r[i].lo != a->r[i].lo || b.r[i].hi != a->r[i].hi)
            FAIL("re-encoded ACK range differs");
}

/* The re-encoding [re, re_end) of the frame [orig, orig_end) must be no longer, and identical
 * when of equal length (equal length means every varint of the original was minimal). */
static void compare_encoding(const uint8_t *orig, const uint8_t *orig_end, const uint8_t *re,
                             const uint8_t *re_end)
{
    size_t olen = (size_t)(orig_end - orig), rlen = (size_t)(re_end - re);
    if (rlen > olen)
        FAIL("re-encoding longer than the original");
    if (rlen == olen && memcmp(orig, re, olen) != 0)
        FAIL("minimal re-encoding differs from the original");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    static uint8_t re[70000];
    while (p < end) {
        const uint8_t *start = p;
        pure_frame f;
        pure_ack_frame ack;
        memset(&f, 0xa5, sizeof f); /* stale fields must not leak into checks */
        if (pure_frame_parse(&p, end, &f, &ack) != 0) {
            if (p != start)
                FAIL("failed parse moved the cursor");
            break;
        }
        if (p <= start || p > end)
            FAIL("cursor did not advance within bounds");
        const uint8_t *q;
        pure_frame g;
        pure_ack_frame gack;
        switch (f.type) {
        case PURE_FRAME_PADDING:
            for (const uint8_t *x = start; x < p; x++)
                if (*x != 0)
                    FAIL("padding run covers a non-zero byte");
            if (p < end && *p == 0)
                FAIL("padding run stopped early");
            break;
        case PURE_FRAME_PING:
            if (p != start + 1)
                FAIL("PING is not one byte");
            break;
        case PURE_FRAME_ACK:
            check_ack_shape(&ack);
            reencode_ack(&ack, (size_t)(p - start), 1);
            reencode_ack(&ack, (size_t)(p - start) / 2, 0);
            break;
        case PURE_FRAME_CREDIT: {
            uint8_t *e = pure_frame_put_credit(re, f.u.credit);
            q = re;
            if (pure_frame_parse(&q, e, &g, &gack) != 0 || q != e || g.type != PURE_FRAME_CREDIT ||
                g.u.credit != f.u.credit)
                FAIL("CREDIT round trip");
            compare_encoding(start, p, re, e);
            break;
        }
        case PURE_FRAME_CLOSE: {
            if (f.u.close.reason_len > 255 || f.u.close.reason < start ||
                f.u.close.reason + f.u.close.reason_len != p)
                FAIL("CLOSE reason outside the frame");
            uint8_t *e = pure_frame_put_close(re, f.u.close.code, (const char *)f.u.close.reason,
                                              f.u.close.reason_len);
            q = re;
            if (pure_frame_parse(&q, e, &g, &gack) != 0 || q != e || g.type != PURE_FRAME_CLOSE ||
                g.u.close.code != f.u.close.code || g.u.close.reason_len != f.u.close.reason_len ||
                memcmp(g.u.close.reason, f.u.close.reason, f.u.close.reason_len) != 0)
                FAIL("CLOSE round trip");
            compare_encoding(start, p, re, e);
            break;
        }
        case PURE_FRAME_DELIVERED: {
            uint8_t *e = re;
            pure_pkt k = {re, re + sizeof re};
            if (pure_pkt_delivered(&k, f.u.delivered) != 0)
                FAIL("DELIVERED did not re-encode");
            e = k.p;
            q = re;
            if (pure_frame_parse(&q, e, &g, &gack) != 0 || q != e ||
                g.type != PURE_FRAME_DELIVERED || g.u.delivered != f.u.delivered)
                FAIL("DELIVERED round trip");
            compare_encoding(start, p, re, e);
            break;
        }
        case PURE_FRAME_ECN: {
            pure_pkt k = {re, re + sizeof re};
            if (f.u.ce > 0xffff || pure_pkt_ecn(&k, (uint16_t)f.u.ce) != 0)
                FAIL("ECN count out of range or did not re-encode");
            q = re;
            if (pure_frame_parse(&q, k.p, &g, &gack) != 0 || q != k.p || g.type != PURE_FRAME_ECN ||
                g.u.ce != f.u.ce)
                FAIL("ECN round trip");
            compare_encoding(start, p, re, k.p);
            break;
        }
        case PURE_FRAME_PATH_CHALLENGE:
        case PURE_FRAME_PATH_RESPONSE:
            if (f.u.path != start + 1 || p != start + 1 + PURE_PATH_DATA_LEN)
                FAIL("PATH frame body not the 8 bytes after the type");
            break;
        case PURE_FRAME_REKEY:
            /* flag (0 request, 1 reply), generation u32, X25519 public key */
            if (f.u.rekey != start + 1 || p != start + 38 || start[1] > 1)
                FAIL("REKEY body not the 37 bytes after the type, or a bad flag");
            break;
        case PURE_FRAME_DATA: {
            uint64_t off = f.u.data.offset, len = f.u.data.len;
            if (off + len > PURE_VARINT_MAX || f.u.data.bytes < start ||
                f.u.data.bytes + len != p || (f.u.data.fin != 0 && f.u.data.fin != 1) ||
                (f.u.data.fin != (start[0] & PURE_FRAME_DATA_FIN)))
                FAIL("DATA fields inconsistent");
            size_t hl = pure_frame_data_header_len(off, len);
            uint8_t *e = pure_frame_put_data_header(re, off, len, f.u.data.fin);
            if ((size_t)(e - re) != hl)
                FAIL("DATA header length disagrees with pure_frame_data_header_len");
            if (len > sizeof re - hl)
                FAIL("DATA longer than the input");
            memcpy(e, f.u.data.bytes, (size_t)len);
            e += len;
            q = re;
            if (pure_frame_parse(&q, e, &g, &gack) != 0 || q != e || g.type != PURE_FRAME_DATA ||
                g.u.data.offset != off || g.u.data.len != len || g.u.data.fin != f.u.data.fin ||
                memcmp(g.u.data.bytes, f.u.data.bytes, (size_t)len) != 0)
                FAIL("DATA round trip");
            compare_encoding(start, p, re, e);
            break;
        }
        case PURE_FRAME_CHAN_CREDIT:
        case PURE_FRAME_CHAN_DELIVERED:
        case PURE_FRAME_DELIVERED_COUNT: {
            if ((f.u.chan.channel == 0 && f.type != PURE_FRAME_DELIVERED_COUNT) ||
                f.u.chan.channel > PURE_CHANNEL_MAX)
                FAIL("channel frame with a channel out of range");
            pure_pkt k = {re, re + sizeof re};
            if (pure_pkt_chan_offset(&k, f.type, f.u.chan.channel, f.u.chan.offset) != 0)
                FAIL("channel frame did not re-encode");
            q = re;
            if (pure_frame_parse(&q, k.p, &g, &gack) != 0 || q != k.p || g.type != f.type ||
                g.u.chan.channel != f.u.chan.channel || g.u.chan.offset != f.u.chan.offset)
                FAIL("channel frame round trip");
            compare_encoding(start, p, re, k.p);
            break;
        }
        case PURE_FRAME_CHAN_DATA: {
            uint64_t ch = f.u.chan.channel, off = f.u.chan.offset, len = f.u.chan.len;
            if (ch == 0 || ch > PURE_CHANNEL_MAX || off + len > PURE_VARINT_MAX ||
                f.u.chan.bytes < start || f.u.chan.bytes + len != p)
                FAIL("CHAN_DATA fields inconsistent");
            pure_pkt k = {re, re + sizeof re};
            if (pure_pkt_chan_data_fit(&k, ch, off, len) != len)
                FAIL("CHAN_DATA does not fit where it came from");
            uint8_t *body = pure_pkt_chan_data(&k, ch, off, len);
            if (!body)
                FAIL("CHAN_DATA did not re-encode");
            memcpy(body, f.u.chan.bytes, (size_t)len);
            q = re;
            if (pure_frame_parse(&q, k.p, &g, &gack) != 0 || q != k.p ||
                g.type != PURE_FRAME_CHAN_DATA || g.u.chan.channel != ch ||
                g.u.chan.offset != off || g.u.chan.len != len ||
                memcmp(g.u.chan.bytes, f.u.chan.bytes, (size_t)len) != 0)
                FAIL("CHAN_DATA round trip");
            compare_encoding(start, p, re, k.p);
            break;
        }
        case PURE_FRAME_DATAGRAM: {
            uint64_t len = f.u.chan.len;
            if (f.u.chan.bytes < start || f.u.chan.bytes + len != p)
                FAIL("DATAGRAM bytes outside the frame");
            if (len >= 16384)
                break; /* parses, but this side never writes one that long */
            pure_pkt k = {re, re + sizeof re};
            if (pure_pkt_datagram(&k, f.u.chan.bytes, (size_t)len) != 0)
                FAIL("DATAGRAM did not re-encode");
            q = re;
            if (pure_frame_parse(&q, k.p, &g, &gack) != 0 || q != k.p ||
                g.type != PURE_FRAME_DATAGRAM || g.u.chan.len != len ||
                memcmp(g.u.chan.bytes, f.u.chan.bytes, (size_t)len) != 0)
                FAIL("DATAGRAM round trip");
            compare_encoding(start, p, re, k.p);
            break;
        }
        case PURE_FRAME_CHAN_CANCEL:
        case PURE_FRAME_CHAN_CANCELLED: {
            uint64_t ch = f.u.cancel.channel, off = f.u.cancel.offset, len = f.u.cancel.len;
            int cancel = f.type == PURE_FRAME_CHAN_CANCEL;
            if (ch == 0 || ch > PURE_CHANNEL_MAX || f.u.cancel.delivered > 1 ||
                (cancel && (len < 4 || len > (1ull << 32) + 3 || off + len > PURE_VARINT_MAX)))
                FAIL("cancel frame fields out of range");
            pure_pkt k = {re, re + sizeof re};
            if ((cancel
                     ? pure_pkt_chan_cancel(&k, ch, f.u.cancel.id, off, len)
                     : pure_pkt_chan_cancelled(&k, ch, f.u.cancel.id, f.u.cancel.delivered)) != 0)
                FAIL("cancel frame did not re-encode");
            q = re;
            if (pure_frame_parse(&q, k.p, &g, &gack) != 0 || q != k.p || g.type != f.type ||
                g.u.cancel.channel != ch || g.u.cancel.id != f.u.cancel.id ||
                g.u.cancel.offset != off || g.u.cancel.len != len ||
                g.u.cancel.delivered != f.u.cancel.delivered)
                FAIL("cancel frame round trip");
            compare_encoding(start, p, re, k.p);
            break;
        }
        default: FAIL("parser returned an unknown frame type");
        }
    }
    return 0;
}
