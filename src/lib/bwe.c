/* SPDX-License-Identifier: MIT */
/* bwe.c: the delivery-rate estimate (bwe.h). */
#include "bwe.h"

#define NS 1000000000ull

void pure_bwe_on_ack(pure_bwe *e, uint64_t bytes, uint64_t now, uint64_t srtt, int app_limited)
{
    if (!e->started || now < e->start) {
        e->started = 1;
        e->start = now;
        e->acked = 0;
        e->limited = 0;
        return; /* the bytes of this ACK were sent before the interval began */
    }
    e->acked += bytes;
    e->limited |= (uint8_t)(app_limited != 0);
    uint64_t span = now - e->start,
             min = srtt > PURE_BWE_MIN_INTERVAL ? srtt : PURE_BWE_MIN_INTERVAL;
    if (span < min)
        return;
    /* acked < 2^40 in any real interval; saturate rather than wrap beyond */
    uint64_t bps = e->acked < (1ull << 33) ? e->acked * NS / span : e->acked / span * NS;
    int expired = srtt && now - e->max_at > PURE_BWE_WINDOW_RTTS * srtt;
    if (bps >= e->max_bps || (expired && !e->limited))
        e->max_bps = bps, e->max_at = now;
    else if (expired) /* an app-limited sample says nothing of the path: keep, but renew less */
        e->max_at = now - PURE_BWE_WINDOW_RTTS * srtt / 2;
    e->start = now;
    e->acked = 0;
    e->limited = 0;
}

uint64_t pure_bwe_floor(const pure_bwe *e, uint64_t min_rtt)
{
    if (!e->max_bps || !min_rtt)
        return 0;
    /* max_bps < 2^40 (a terabyte a second) and min_rtt < 2^36 ns in practice: split to stay in
     * 64 bits whatever they are */
    uint64_t bdp = e->max_bps / 1000 * (min_rtt / 1000) / 1000 +
                   e->max_bps % 1000 * (min_rtt / 1000) / 1000000;
    return bdp / PURE_BWE_FLOOR_DEN * PURE_BWE_FLOOR_NUM;
}
