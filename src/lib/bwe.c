/* SPDX-License-Identifier: MIT */
/* bwe.c: the delivery-rate estimate (bwe.h). */
#include "bwe.h"

#define NS 1000000000ull

/* bytes over span ns, per second; span > 0 */
static uint64_t rate(uint64_t bytes, uint64_t span)
{
    /* bytes < 2^40 in any real interval; saturate rather than wrap beyond */
    return bytes < (1ull << 33) ? bytes * NS / span : bytes / span * NS;
}

void pure_bwe_on_ack(pure_bwe *e, uint64_t bytes, uint64_t now, uint64_t srtt, int app_limited)
{
    if (!e->started || now < e->start) {
        e->started = 1;
        e->start = now;
        e->acked = 0;
        e->limited = 0;
        e->q_start = now;
        e->q_acked = 0;
        e->q_limited = 0;
        return; /* the bytes of this ACK were sent before the interval began */
    }
    /* the quarter-RTT intervals of peak_bps */
    e->q_acked += bytes;
    e->q_limited |= (uint8_t)(app_limited != 0);
    uint64_t qspan = now - e->q_start;
    if (qspan >= (srtt / 4 > PURE_BWE_MIN_INTERVAL ? srtt / 4 : PURE_BWE_MIN_INTERVAL)) {
        uint64_t qbps = rate(e->q_acked, qspan);
        if (!e->q_limited && qbps > e->peak_bps)
            e->peak_bps = qbps;
        e->q_start = now;
        e->q_acked = 0;
        e->q_limited = 0;
    }
    e->acked += bytes;
    e->limited |= (uint8_t)(app_limited != 0);
    uint64_t span = now - e->start,
             min = srtt > PURE_BWE_MIN_INTERVAL ? srtt : PURE_BWE_MIN_INTERVAL;
    if (span < min)
        return;
    uint64_t bps = rate(e->acked, span);
    int expired = srtt && now - e->max_at > PURE_BWE_WINDOW_RTTS * srtt;
    if (bps >= e->max_bps || (expired && !e->limited))
        e->max_bps = bps, e->max_at = now;
    else if (expired) /* an app-limited sample says nothing of the path: keep, but renew less */
        e->max_at = now - PURE_BWE_WINDOW_RTTS * srtt / 2;
    e->start = now;
    e->acked = 0;
    e->limited = 0;
}

uint64_t pure_bwe_bytes(uint64_t bps, uint64_t ns)
{
    /* bps < 2^40 (a terabyte a second) and ns < 2^36 in practice: split to stay in 64 bits
     * whatever they are */
    return bps / 1000 * (ns / 1000) / 1000 + bps % 1000 * (ns / 1000) / 1000000;
}

uint64_t pure_bwe_floor(const pure_bwe *e, uint64_t min_rtt)
{
    return pure_bwe_bytes(e->max_bps, min_rtt) / PURE_BWE_FLOOR_DEN * PURE_BWE_FLOOR_NUM;
}
