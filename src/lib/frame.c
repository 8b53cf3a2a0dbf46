/* SPDX-License-Identifier: MIT */
/* frame.c: the frames inside a sealed packet: parsing each (bounds-checked, never reading past
 * the payload) and writing them through the checked packet cursor pure_pkt. */
#include "frame.h"

#include <string.h>

#include "pure.h"
#include "varint.h"

/* An ACK frame's body: largest, delay, count, first range, then (gap, length) pairs. */
static int parse_ack(const uint8_t **pp, const uint8_t *end, pure_ack_frame *ack)
{
    const uint8_t *p = *pp;
    uint64_t count, first;
    if (pure_varint_get(&p, end, &ack->largest) || pure_varint_get(&p, end, &ack->delay_us) ||
        pure_varint_get(&p, end, &count) || pure_varint_get(&p, end, &first))
        return PURE_EPROTO;
    if (first > ack->largest || count >= PURE_ACK_MAX_RANGES)
        return PURE_EPROTO;
    ack->r[0].hi = ack->largest;
    ack->r[0].lo = ack->largest - first;
    ack->n = 1;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t gap, len;
        if (pure_varint_get(&p, end, &gap) || pure_varint_get(&p, end, &len))
            return PURE_EPROTO;
        uint64_t prev_lo = ack->r[ack->n - 1].lo;
        /* next hi = prev_lo - gap - 2 (gap 0 means exactly one missing packet) */
        if (prev_lo < gap + 2)
            return PURE_EPROTO;
        uint64_t hi = prev_lo - gap - 2;
        if (len > hi)
            return PURE_EPROTO;
        ack->r[ack->n].hi = hi;
        ack->r[ack->n].lo = hi - len;
        ack->n++;
    }
    *pp = p;
    return 0;
}

/* CHAN_CANCEL: channel, id, offset, length; CHAN_CANCELLED: channel, id, outcome byte. */
static int parse_cancel(const uint8_t **pp, const uint8_t *end, uint8_t type, pure_frame *f)
{
    const uint8_t *p = *pp;
    uint64_t ch, id, off = 0, len = 0;
    if (pure_varint_get(&p, end, &ch) || pure_varint_get(&p, end, &id) || ch == 0 ||
        ch > PURE_CHANNEL_MAX)
        return PURE_EPROTO;
    if (type == PURE_FRAME_CHAN_CANCEL) {
        if (pure_varint_get(&p, end, &off) || pure_varint_get(&p, end, &len) || len < 4 ||
            len > (1ull << 32) + 3 || off + len > PURE_VARINT_MAX)
            return PURE_EPROTO;
        f->u.cancel.delivered = 0;
    } else {
        if (p >= end || *p > 1)
            return PURE_EPROTO;
        f->u.cancel.delivered = *p++;
    }
    f->u.cancel.channel = ch;
    f->u.cancel.id = id;
    f->u.cancel.offset = off;
    f->u.cancel.len = len;
    *pp = p;
    return 0;
}

/* A channel frame's body: channel (1..PURE_CHANNEL_MAX), offset, and for CHAN_DATA length and
 * bytes; a DATAGRAM's length and bytes (channel and offset 0); the cancel frames'. */
static int parse_chan(const uint8_t **pp, const uint8_t *end, uint8_t type, pure_frame *f)
{
    if (type == PURE_FRAME_CHAN_CANCEL || type == PURE_FRAME_CHAN_CANCELLED)
        return parse_cancel(pp, end, type, f);
    const uint8_t *p = *pp;
    uint64_t ch = 0, off = 0, len = 0;
    if (type == PURE_FRAME_DATAGRAM) {
        if (pure_varint_get(&p, end, &len) || len > (uint64_t)(end - p))
            return PURE_EPROTO;
    } else if (pure_varint_get(&p, end, &ch) || pure_varint_get(&p, end, &off) ||
               (type == PURE_FRAME_CHAN_DATA && pure_varint_get(&p, end, &len)) ||
               (ch == 0 && type != PURE_FRAME_DELIVERED_COUNT) /* it names channel 0 too */ ||
               ch > PURE_CHANNEL_MAX || len > (uint64_t)(end - p) || off + len > PURE_VARINT_MAX) {
        return PURE_EPROTO;
    }
    f->u.chan.channel = ch;
    f->u.chan.offset = off;
    f->u.chan.len = len;
    f->u.chan.bytes = p;
    *pp = p + len;
    return 0;
}

int pure_frame_parse(const uint8_t **pp, const uint8_t *end, pure_frame *f, pure_ack_frame *ack)
{
    const uint8_t *p = *pp;
    if (p >= end)
        return PURE_EPROTO;
    uint8_t type = *p++;
    f->type = type;
    switch (type) {
    case PURE_FRAME_PADDING:
        while (p < end && *p == PURE_FRAME_PADDING)
            p++;
        break;
    case PURE_FRAME_PING: break;
    case PURE_FRAME_ACK:
        if (parse_ack(&p, end, ack) != 0)
            return PURE_EPROTO;
        break;
    case PURE_FRAME_CREDIT:
    case PURE_FRAME_DELIVERED: /* a stream offset each */
        if (pure_varint_get(&p, end, type == PURE_FRAME_CREDIT ? &f->u.credit : &f->u.delivered))
            return PURE_EPROTO;
        break;
    case PURE_FRAME_ECN:
        if (pure_varint_get(&p, end, &f->u.ce) || f->u.ce > 0xffff)
            return PURE_EPROTO;
        break;
    case PURE_FRAME_PATH_CHALLENGE:
    case PURE_FRAME_PATH_RESPONSE:
        if (end - p < PURE_PATH_DATA_LEN)
            return PURE_EPROTO;
        f->u.path = p;
        p += PURE_PATH_DATA_LEN;
        break;
    case PURE_FRAME_CLOSE: {
        uint64_t len;
        if (pure_varint_get(&p, end, &f->u.close.code) || pure_varint_get(&p, end, &len))
            return PURE_EPROTO;
        if (len > (uint64_t)(end - p) || len > 255)
            return PURE_EPROTO;
        f->u.close.reason = p;
        f->u.close.reason_len = (size_t)len;
        p += len;
        break;
    }
    case PURE_FRAME_REKEY:
        if (end - p < 37 || p[0] > 1)
            return PURE_EPROTO;
        f->u.rekey = p; /* flag (0 request, 1 reply), generation u32, ephemeral public key */
        p += 37;
        break;
    case PURE_FRAME_DATA:
    case PURE_FRAME_DATA | PURE_FRAME_DATA_FIN: {
        uint64_t off, len;
        if (pure_varint_get(&p, end, &off) || pure_varint_get(&p, end, &len))
            return PURE_EPROTO;
        if (len > (uint64_t)(end - p) || off + len > PURE_VARINT_MAX)
            return PURE_EPROTO;
        f->type = PURE_FRAME_DATA;
        f->u.data.offset = off;
        f->u.data.len = len;
        f->u.data.bytes = p;
        f->u.data.fin = type & PURE_FRAME_DATA_FIN;
        p += len;
        break;
    }
    case PURE_FRAME_CHAN_CREDIT:
    case PURE_FRAME_CHAN_DELIVERED:
    case PURE_FRAME_CHAN_DATA:
    case PURE_FRAME_DATAGRAM:
    case PURE_FRAME_CHAN_CANCEL:
    case PURE_FRAME_CHAN_CANCELLED:
    case PURE_FRAME_DELIVERED_COUNT:
        if (parse_chan(&p, end, type, f) != 0)
            return PURE_EPROTO;
        break;
    default: return PURE_EPROTO;
    }
    *pp = p;
    return 0;
}

size_t pure_frame_data_header_len(uint64_t offset, uint64_t len)
{
    return 1 + pure_varint_len(offset) + pure_varint_len(len);
}

uint8_t *pure_frame_put_data_header(uint8_t *p, uint64_t offset, uint64_t len, int fin)
{
    *p++ = PURE_FRAME_DATA | (fin ? PURE_FRAME_DATA_FIN : 0);
    p = pure_varint_put(p, offset);
    return pure_varint_put(p, len);
}

uint8_t *pure_frame_put_credit(uint8_t *p, uint64_t max_offset)
{
    *p++ = PURE_FRAME_CREDIT;
    return pure_varint_put(p, max_offset);
}

uint8_t *pure_frame_put_close(uint8_t *p, uint64_t code, const char *reason, size_t reason_len)
{
    if (reason_len > 255)
        reason_len = 255;
    *p++ = PURE_FRAME_CLOSE;
    p = pure_varint_put(p, code);
    p = pure_varint_put(p, reason_len);
    if (reason_len)
        memcpy(p, reason, reason_len);
    return p + reason_len;
}

uint8_t *pure_frame_put_ack(uint8_t *p, size_t room, const pure_range *ranges, uint32_t n,
                            uint64_t delay_us)
{
    if (n == 0)
        return NULL;
    if (n > PURE_ACK_MAX_RANGES) { /* keep the newest */
        ranges += n - PURE_ACK_MAX_RANGES;
        n = PURE_ACK_MAX_RANGES;
    }
    /* ranges[] ascending; the frame lists them largest first. */
    uint8_t tmp[1 + 8 * 4 + PURE_ACK_MAX_RANGES * 16];
    uint8_t *q = tmp;
    const pure_range *top = &ranges[n - 1];
    uint64_t largest = top->end - 1;
    *q++ = PURE_FRAME_ACK;
    q = pure_varint_put(q, largest);
    q = pure_varint_put(q, delay_us);
    uint8_t *count_at = q; /* count is at most 31: always one byte */
    q++;
    q = pure_varint_put(q, top->end - 1 - top->start);
    if ((size_t)(q - tmp) > room)
        return NULL;
    uint32_t count = 0;
    uint64_t prev_lo = top->start;
    for (uint32_t i = n - 1; i-- > 0;) {
        uint64_t hi = ranges[i].end - 1, lo = ranges[i].start;
        uint64_t gap = prev_lo - hi - 2;
        size_t need = pure_varint_len(gap) + pure_varint_len(hi - lo);
        if ((size_t)(q - tmp) + need > room)
            break;
        q = pure_varint_put(q, gap);
        q = pure_varint_put(q, hi - lo);
        prev_lo = lo;
        count++;
    }
    *count_at = (uint8_t)count;
    memcpy(p, tmp, (size_t)(q - tmp));
    return p + (q - tmp);
}

/* ---- the checked packet writer ---- */

int pure_pkt_ping(pure_pkt *k)
{
    if (pure_pkt_room(k) < 1)
        return -1;
    *k->p++ = PURE_FRAME_PING;
    return 0;
}

int pure_pkt_credit(pure_pkt *k, uint64_t max_offset)
{
    if (pure_pkt_room(k) < 1 + pure_varint_len(max_offset))
        return -1;
    k->p = pure_frame_put_credit(k->p, max_offset);
    return 0;
}

int pure_pkt_ecn(pure_pkt *k, uint16_t ce)
{
    if (pure_pkt_room(k) < 1 + pure_varint_len(ce))
        return -1;
    *k->p++ = PURE_FRAME_ECN;
    k->p = pure_varint_put(k->p, ce);
    return 0;
}

int pure_pkt_delivered(pure_pkt *k, uint64_t offset)
{
    if (pure_pkt_room(k) < 1 + pure_varint_len(offset))
        return -1;
    *k->p++ = PURE_FRAME_DELIVERED;
    k->p = pure_varint_put(k->p, offset);
    return 0;
}

int pure_pkt_delivered_count(pure_pkt *k, uint64_t channel, uint64_t count)
{
    return pure_pkt_chan_offset(k, PURE_FRAME_DELIVERED_COUNT, channel, count);
}

int pure_pkt_path(pure_pkt *k, uint8_t type, const uint8_t data[PURE_PATH_DATA_LEN])
{
    if (pure_pkt_room(k) < 1 + PURE_PATH_DATA_LEN)
        return -1;
    *k->p++ = type;
    memcpy(k->p, data, PURE_PATH_DATA_LEN);
    k->p += PURE_PATH_DATA_LEN;
    return 0;
}

int pure_pkt_close(pure_pkt *k, uint64_t code, const char *reason, size_t reason_len)
{
    if (reason_len > 255)
        reason_len = 255;
    if (pure_pkt_room(k) < 1 + pure_varint_len(code) + pure_varint_len(reason_len) + reason_len)
        return -1;
    k->p = pure_frame_put_close(k->p, code, reason, reason_len);
    return 0;
}

int pure_pkt_ack(pure_pkt *k, const pure_range *ranges, uint32_t n, uint64_t delay_us)
{
    uint8_t *q = pure_frame_put_ack(k->p, pure_pkt_room(k), ranges, n, delay_us);
    if (!q)
        return -1;
    k->p = q;
    return 0;
}

int pure_pkt_bytes(pure_pkt *k, const void *src, size_t n)
{
    if (pure_pkt_room(k) < n)
        return -1;
    memcpy(k->p, src, n);
    k->p += n;
    return 0;
}

uint64_t pure_pkt_data_fit(const pure_pkt *k, uint64_t offset, uint64_t len, int *fits)
{
    size_t room = pure_pkt_room(k);
    size_t hdr = pure_frame_data_header_len(offset, len);
    *fits = room >= hdr;
    if (room <= hdr)
        return 0;
    if (len > room - hdr)
        len = room - hdr; /* a shorter length never needs a longer varint */
    return len;
}

uint8_t *pure_pkt_data(pure_pkt *k, uint64_t offset, uint64_t len, int fin)
{
    size_t room = pure_pkt_room(k);
    size_t hdr = pure_frame_data_header_len(offset, len);
    if (room < hdr || len > room - hdr)
        return NULL;
    uint8_t *body = pure_frame_put_data_header(k->p, offset, len, fin);
    k->p = body + len;
    return body;
}

int pure_pkt_chan_offset(pure_pkt *k, uint8_t type, uint64_t channel, uint64_t offset)
{
    if (pure_pkt_room(k) < 1 + pure_varint_len(channel) + pure_varint_len(offset))
        return -1;
    *k->p++ = type;
    k->p = pure_varint_put(k->p, channel);
    k->p = pure_varint_put(k->p, offset);
    return 0;
}

uint64_t pure_pkt_chan_data_fit(const pure_pkt *k, uint64_t channel, uint64_t offset, uint64_t len)
{
    size_t room = pure_pkt_room(k);
    size_t hdr = 1 + pure_varint_len(channel) + pure_varint_len(offset) + pure_varint_len(len);
    if (room <= hdr)
        return 0;
    return len > room - hdr ? room - hdr : len; /* a shorter length never needs a longer varint */
}

uint8_t *pure_pkt_chan_data(pure_pkt *k, uint64_t channel, uint64_t offset, uint64_t len)
{
    size_t room = pure_pkt_room(k);
    size_t hdr = 1 + pure_varint_len(channel) + pure_varint_len(offset) + pure_varint_len(len);
    if (room < hdr || len > room - hdr)
        return NULL;
    *k->p++ = PURE_FRAME_CHAN_DATA;
    k->p = pure_varint_put(k->p, channel);
    k->p = pure_varint_put(k->p, offset);
    k->p = pure_varint_put(k->p, len);
    uint8_t *body = k->p;
    k->p += len;
    return body;
}

int pure_pkt_chan_cancel(pure_pkt *k, uint64_t channel, uint64_t id, uint64_t offset, uint64_t len)
{
    if (pure_pkt_room(k) < 1 + pure_varint_len(channel) + pure_varint_len(id) +
                               pure_varint_len(offset) + pure_varint_len(len))
        return -1;
    *k->p++ = PURE_FRAME_CHAN_CANCEL;
    k->p = pure_varint_put(k->p, channel);
    k->p = pure_varint_put(k->p, id);
    k->p = pure_varint_put(k->p, offset);
    k->p = pure_varint_put(k->p, len);
    return 0;
}

int pure_pkt_chan_cancelled(pure_pkt *k, uint64_t channel, uint64_t id, int delivered)
{
    if (pure_pkt_room(k) < 2 + pure_varint_len(channel) + pure_varint_len(id))
        return -1;
    *k->p++ = PURE_FRAME_CHAN_CANCELLED;
    k->p = pure_varint_put(k->p, channel);
    k->p = pure_varint_put(k->p, id);
    *k->p++ = delivered ? 1 : 0;
    return 0;
}

int pure_pkt_datagram(pure_pkt *k, const uint8_t *data, size_t len)
{
    if (len >= 16384 || pure_pkt_room(k) < 1 + pure_varint_len(len) + len)
        return -1;
    *k->p++ = PURE_FRAME_DATAGRAM;
    k->p = pure_varint_put(k->p, len);
    if (len)
        memcpy(k->p, data, len);
    k->p += len;
    return 0;
}

void pure_pkt_pad(pure_pkt *k)
{
    size_t room = pure_pkt_room(k);
    memset(k->p, PURE_FRAME_PADDING, room);
    k->p += room;
}
