/* SPDX-License-Identifier: MIT */
/* ctx_mtu.c: what the I/O layer reports of the path's datagram size: a burst this host refused
 * (EMSGSIZE) and a router's Packet Too Big. Both go to the link's path MTU search (pmtud.c). */
#include "lifecycle.h"
#include "link.h"
#include "recovery.h"
#include "registry.h"
#include "timers.h"

int pure_ctx_burst_too_big(pure_ctx *ctx, uint64_t now)
{
    if (!ctx)
        return PURE_EINVAL;
    pure_link *l = ctx->last_burst_link ? pure_ctx_table_find(ctx, ctx->last_burst_link) : NULL;
    if (!l || l->state != PURE_LS_OPEN || ctx->last_burst_pn >= pure_rtb_next_pn(&l->rtb))
        return PURE_EINVAL;
    ctx->last_burst_link = 0;
    static const uint16_t steps[] = {1452, 1400, 1280, PURE_MIN_UDP_PAYLOAD};
    uint16_t next = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] < l->mss) {
            next = steps[i];
            break;
        }
    ctx->depth++;
    ctx->now = now;
    int rc = 0;
    /* A path MTU probe this host refused is a lost probe (pmtud.c), nothing more: the size in
     * use still goes. Any other burst refused: smaller datagrams from now on. */
    if (pure_recovery_discard_from(l, ctx->last_burst_pn, now) == 0) {
        pure_ctx_mark_pending(ctx, l);
        pure_timers_update(l, now);
    } else if (!next) {
        pure_link_terminate(l, PURE_EMSGSIZE, 0, NULL, 0, now);
        rc = PURE_ECLOSED; /* on_closed has run, with PURE_EMSGSIZE */
    } else {
        pure_pmtud_on_refused(&l->b->pmtud, next, now);
        pure_recovery_mss_sync(l);
        pure_ctx_mark_pending(ctx, l);
        pure_timers_update(l, now);
    }
    pure_link_end_call(ctx);
    return rc;
}

/* The link a Packet Too Big is about: open, busy (sending), at that address, and the quoted
 * datagram one of its own (its header: the peer's index and a packet number it used). A scan:
 * no table maps a peer's index to a link, and hints are few (rate-limited by the caller). */
static pure_link *ptb_link(pure_ctx *ctx, const pure_addr *addr, const uint8_t *q, size_t qn)
{
    if (!q || qn < PURE_DATA_HEADER || (q[0] != PURE_PKT_DATA0 && q[0] != PURE_PKT_DATA1))
        return NULL;
    uint32_t index = pure_wire_index(q);
    uint64_t pn = pure_wire_data_pn(q);
    for (uint32_t i = 0; i < ctx->table.cap; i++) {
        pure_link *l = pure_table_at(&ctx->table, i);
        if (l && l->remote_index == index && l->state == PURE_LS_OPEN && l->b &&
            pn < pure_rtb_next_pn(&l->rtb) && pure_addr_equal(&l->peer, addr))
            return l;
    }
    return NULL;
}

int pure_ctx_packet_too_big(pure_ctx *ctx, const pure_addr *addr, uint32_t size,
                            const uint8_t *quoted, size_t quoted_len, uint64_t now)
{
    if (!ctx || !addr)
        return PURE_EINVAL;
    /* At most PURE_PMTUD_PTB_PER_S a second: each may cost a look through the links. */
    if (now - ctx->ptb_window >= 1000000000ull || now < ctx->ptb_window) {
        ctx->ptb_window = now;
        ctx->ptb_count = 0;
    }
    if (ctx->ptb_count >= PURE_PMTUD_PTB_PER_S || size < PURE_MIN_UDP_PAYLOAD)
        return 0;
    ctx->ptb_count++;
    pure_link *l = ptb_link(ctx, addr, quoted, quoted_len);
    if (!l)
        return 0;
    ctx->depth++;
    ctx->now = now;
    int taken = pure_pmtud_on_ptb(&l->b->pmtud, size > 65535 ? 65535 : (uint16_t)size, now);
    if (taken) {
        pure_recovery_mss_sync(l);
        pure_ctx_mark_pending(ctx, l);
        pure_timers_update(l, now);
    }
    pure_link_end_call(ctx);
    return taken;
}
