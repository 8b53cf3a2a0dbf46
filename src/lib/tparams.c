/* SPDX-License-Identifier: MIT */
/* tparams.c: the transport parameter codec (RFC 9000 section 18's shape: id, length, value), what
 * a context announces, and the peer's announcement kept in its link. */
#include <string.h>

#include "alloc.h"
#include "tparams.h"
#include "varint.h"
#include "wire.h"

static uint8_t *put_param(uint8_t *p, uint64_t id, uint64_t v)
{
    if (v > PURE_VARINT_MAX)
        v = PURE_VARINT_MAX;
    p = pure_varint_put(p, id);
    p = pure_varint_put(p, pure_varint_len(v));
    return pure_varint_put(p, v);
}

size_t pure_tparams_encode(const pure_tparams *tp, uint8_t out[PURE_TPARAMS_MAX])
{
    uint8_t *p = out;
    p = put_param(p, PURE_TP_MAX_CHANNELS, tp->max_channels);
    p = put_param(p, PURE_TP_MAX_DATAGRAM_SIZE, tp->max_datagram_size);
    p = put_param(p, PURE_TP_FEATURES, tp->features);
    if (tp->recv_window) /* the only optional one: absent means "as before parameters" */
        p = put_param(p, PURE_TP_RECV_WINDOW, tp->recv_window);
    return (size_t)(p - out);
}

/* Whether the id of the entry at [p, end) already appeared in [start, p): a set is a few dozen
 * bytes at most (PURE_TPARAMS_ROOM), so a rescan costs less than a table would. */
static int seen_before(const uint8_t *start, const uint8_t *p, uint64_t id)
{
    while (start < p) {
        uint64_t id2, len;
        if (pure_varint_get(&start, p, &id2) || pure_varint_get(&start, p, &len))
            return 0; /* cannot happen: [start, p) was read already */
        if (id2 == id)
            return 1;
        start += len;
    }
    return 0;
}

int pure_tparams_decode(const uint8_t *p, size_t n, pure_tparams *tp)
{
    memset(tp, 0, sizeof *tp);
    const uint8_t *start = p, *end = p + n;
    while (p < end) {
        const uint8_t *entry = p;
        uint64_t id, len;
        if (pure_varint_get(&p, end, &id) || pure_varint_get(&p, end, &len) ||
            len > (uint64_t)(end - p) || seen_before(start, entry, id))
            goto bad;
        const uint8_t *v = p, *vend = p + len;
        p = vend;
        uint64_t *field = id == PURE_TP_MAX_CHANNELS        ? &tp->max_channels
                          : id == PURE_TP_MAX_DATAGRAM_SIZE ? &tp->max_datagram_size
                          : id == PURE_TP_FEATURES          ? &tp->features
                          : id == PURE_TP_RECV_WINDOW       ? &tp->recv_window
                                                            : NULL;
        if (!field)
            continue; /* a parameter of a later version: ignored */
        if (pure_varint_get(&v, vend, field) || v != vend)
            goto bad;
    }
    return 0;
bad:
    memset(tp, 0, sizeof *tp);
    return PURE_EPROTO;
}

/* Where each feature's setting becomes an announcement: this build reads ECN frames (link_recv.c)
 * whatever its settings; channels and datagrams (their settings' maxima) go here as they land. */
void pure_tparams_local(const pure_ctx *ctx, pure_tparams *tp)
{
    memset(tp, 0, sizeof *tp);
    /* cancels come with channels: a side that takes channels reads CHAN_CANCEL (link_cancel.c) */
    tp->features = PURE_TP_F_ECN | PURE_TP_F_CLOSE_ANSWER | PURE_TP_F_DELIVERED_COUNT |
                   (ctx->s.max_channels ? PURE_TP_F_CANCEL : 0);
    tp->max_channels = ctx->s.max_channels;           /* channels 1..this we take */
    tp->max_datagram_size = ctx->s.max_datagram_size; /* the largest datagram we take */
    tp->recv_window = ctx->s.recv_window;             /* the credit every stream starts with */
    if (ctx->test_wire && ctx->test_wire->set_announce)
        *tp = ctx->test_wire->announce;
}

static uint16_t clamp16(uint64_t v)
{
    return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

/* The peer's starting credit as kept: the largest 4096 << (k - 1) not above it, as k (0: none
 * announced, or below the smallest window a peer may have). Rounding down keeps what this side
 * sends at first within the credit, and above half of it, where the peer grants more
 * (credit.h): so neither side can wait for the other. */
static uint8_t window_code(uint64_t w)
{
    if (w < PURE_TP_WINDOW_MIN)
        return 0;
    uint8_t k = 1;
    while (k < PURE_TP_WINDOW_CODES && (w >> 1) >= ((uint64_t)PURE_TP_WINDOW_MIN << (k - 1)))
        k++;
    return k;
}

uint64_t pure_tp_peer_window(const pure_link *link)
{
    uint8_t k = link->peer_tp_window;
    return k ? (uint64_t)PURE_TP_WINDOW_MIN << (k - 1) : link->ctx->s.recv_window;
}

void pure_tparams_store(pure_link *link, const pure_tparams *tp, int known)
{
    link->peer_tp_known = known ? 1 : 0;
    link->peer_tp_window = window_code(tp->recv_window);
    /* Channel 0's first limit is what the peer grants, exactly; a peer that announces none (built
     * before this parameter) grants its recv_window, which this side can only assume is its own,
     * as before. Nothing has been sent yet: the handshake is not done. */
    if (tp->recv_window >= PURE_TP_WINDOW_MIN)
        link->credit.peer = tp->recv_window > PURE_VARINT_MAX ? PURE_VARINT_MAX : tp->recv_window;
    link->peer_tp_channels = tp->max_channels > UINT8_MAX ? UINT8_MAX : (uint8_t)tp->max_channels;
    link->peer_tp_datagram = clamp16(tp->max_datagram_size);
    link->peer_tp_features = (uint8_t)tp->features; /* the bits this build knows are the low 8 */
}

int pure_test_set_wire(pure_ctx *ctx, const pure_test_wire *w)
{
    if (!ctx || !w || w->raw_len > PURE_TPARAMS_ROOM || (w->raw_len && !w->raw))
        return PURE_EINVAL;
    if (!ctx->test_wire) {
        ctx->test_wire = pure_mem_alloc(&ctx->alloc, sizeof *ctx->test_wire);
        if (!ctx->test_wire)
            return PURE_ENOMEM;
    }
    pure_wire_test *t = ctx->test_wire;
    memset(t, 0, sizeof *t);
    t->version = w->version;
    t->no_params = w->no_params ? 1 : 0;
    t->set_announce = w->set_announce ? 1 : 0;
    t->announce = w->announce;
    t->raw_len = (uint8_t)w->raw_len;
    t->use_raw = w->raw != NULL;
    if (w->raw_len)
        memcpy(t->raw, w->raw, w->raw_len);
    return 0;
}

void pure_tparams_free(pure_ctx *ctx)
{
    if (ctx->test_wire) {
        pure_mem_free(&ctx->alloc, ctx->test_wire, sizeof *ctx->test_wire);
        ctx->test_wire = NULL;
    }
}

uint32_t pure_ctx_wire_version(const pure_ctx *ctx)
{
    return ctx->test_wire && ctx->test_wire->version ? ctx->test_wire->version
                                                     : PURE_PROTOCOL_VERSION;
}

size_t pure_tparams_write_local(const pure_ctx *ctx, uint8_t out[PURE_TPARAMS_ROOM])
{
    const pure_wire_test *t = ctx->test_wire;
    if (t && t->no_params)
        return 0;
    if (t && t->use_raw) {
        memcpy(out, t->raw, t->raw_len);
        return t->raw_len;
    }
    pure_tparams tp;
    pure_tparams_local(ctx, &tp);
    return pure_tparams_encode(&tp, out);
}
