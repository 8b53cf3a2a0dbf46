/* SPDX-License-Identifier: MIT */
/* cc.c: the bookkeeping shared by every congestion controller (bytes in flight, the recovery
 * period) and NewReno (RFC 9002 7.3); CUBIC lives in cc_cubic.c. See cc.h. */
#include <stddef.h>

#include "cc.h"

static uint64_t min_window(const pure_cc *cc)
{
    return (uint64_t)PURE_CC_MIN_PACKETS * cc->mss;
}

static void flight_remove(pure_cc *cc, uint64_t bytes)
{
    /* Saturate rather than wrap: an accounting slip elsewhere must not turn into a window of
     * 2^64 bytes. */
    cc->bytes_in_flight = bytes > cc->bytes_in_flight ? 0 : cc->bytes_in_flight - bytes;
}

void pure_cc_init(pure_cc *cc, enum pure_cc_algo algo, uint32_t mss, uint64_t now)
{
    *cc = (pure_cc){0};
    cc->ops = algo == PURE_CC_NEWRENO ? &pure_cc_newreno_ops : &pure_cc_cubic_ops;
    /* A UDP payload is below 64 KiB; holding mss to that keeps the growth products in 64 bits. */
    if (mss == 0)
        mss = 1;
    if (mss > PURE_CC_MAX_MSS)
        mss = PURE_CC_MAX_MSS;
    cc->mss = mss;
    cc->cwnd = (uint64_t)PURE_CC_INITIAL_PACKETS * cc->mss;
    cc->ssthresh = UINT64_MAX;
}

void pure_cc_reset(pure_cc *cc, uint64_t now)
{
    uint64_t in_flight = cc->bytes_in_flight;
    pure_cc_init(cc, cc->ops == &pure_cc_newreno_ops ? PURE_CC_NEWRENO : PURE_CC_CUBIC, cc->mss,
                 now);
    cc->bytes_in_flight = in_flight;
}

void pure_cc_on_sent(pure_cc *cc, uint64_t bytes)
{
    cc->bytes_in_flight += bytes;
}

static int sent_in_recovery(const pure_cc *cc, uint64_t sent_time)
{
    return cc->has_recovery && sent_time <= cc->recovery_start;
}

void pure_cc_on_acked(pure_cc *cc, uint64_t bytes, uint64_t sent_time, uint64_t now,
                      const pure_rtt *rtt, int app_limited)
{
    flight_remove(cc, bytes);
    /* Every acknowledgement measures delivery, whatever the window does with it. */
    if (rtt->has_sample)
        cc->min_rtt = rtt->min;
    pure_bwe_on_ack(&cc->bwe, bytes, now, rtt->has_sample ? rtt->smoothed : 0, app_limited);
    /* Acknowledgements of packets sent before the reduction describe the old window: growing on
     * them would undo the reduction within the same round trip. */
    if (sent_in_recovery(cc, sent_time))
        return;
    if (app_limited) {
        if (cc->ops->on_app_limited)
            cc->ops->on_app_limited(cc, now);
        return;
    }
    if (bytes > PURE_CC_MAX_WINDOW)
        bytes = PURE_CC_MAX_WINDOW;
    cc->ops->on_ack(cc, bytes, sent_time, now, rtt);
    if (cc->cwnd > PURE_CC_MAX_WINDOW)
        cc->cwnd = PURE_CC_MAX_WINDOW;
}

int pure_cc_on_lost(pure_cc *cc, uint64_t bytes, uint64_t sent_time, uint64_t now)
{
    flight_remove(cc, bytes);
    return pure_cc_on_congestion(cc, sent_time, now);
}

int pure_cc_on_congestion(pure_cc *cc, uint64_t sent_time, uint64_t now)
{
    if (sent_in_recovery(cc, sent_time))
        return 0;
    cc->has_recovery = 1;
    cc->recovery_start = now;
    cc->ops->on_congestion(cc, sent_time, now);
    if (cc->cwnd < min_window(cc))
        cc->cwnd = min_window(cc);
    uint64_t floor = pure_bwe_floor(&cc->bwe, cc->min_rtt);
    if (floor > PURE_CC_MAX_WINDOW)
        floor = PURE_CC_MAX_WINDOW;
    if (cc->cwnd >= floor)
        return 0;
    cc->cwnd = floor;
    if (cc->ssthresh < floor)
        cc->ssthresh = floor;
    return 1;
}

void pure_cc_on_persistent_congestion(pure_cc *cc, uint64_t now)
{
    cc->bwe = (pure_bwe){0}; /* nothing got through for a while: what the path delivered is moot */
    cc->has_recovery = 0;
    cc->recovery_start = 0;
    cc->ops->on_persistent_congestion(cc, now);
}

void pure_cc_cap(pure_cc *cc, uint64_t window)
{
    if (window < min_window(cc))
        window = min_window(cc);
    if (window >= cc->cwnd)
        return;
    cc->cwnd = cc->ssthresh = window;
    if (cc->ops->on_cap)
        cc->ops->on_cap(cc);
}

void pure_cc_on_discarded(pure_cc *cc, uint64_t bytes)
{
    flight_remove(cc, bytes);
}

uint64_t pure_cc_available(const pure_cc *cc)
{
    return cc->cwnd > cc->bytes_in_flight ? cc->cwnd - cc->bytes_in_flight : 0;
}

/* Slow start shared by both controllers: grows cwnd by the acknowledged bytes up to ssthresh and
 * returns the bytes left over for congestion avoidance, so one summed acknowledgement that
 * crosses ssthresh is split exactly as per-packet ones would be. */
uint64_t pure_cc_slow_start(pure_cc *cc, uint64_t acked)
{
    if (cc->cwnd >= cc->ssthresh)
        return acked;
    uint64_t room = cc->ssthresh - cc->cwnd;
    if (acked < room) {
        cc->cwnd += acked;
        return 0;
    }
    cc->cwnd = cc->ssthresh;
    return acked - room;
}

/* NewReno (RFC 9002 7.3): slow start, then one mss per window acknowledged; halve on loss. */

static void newreno_on_ack(pure_cc *cc, uint64_t acked, uint64_t sent_time, uint64_t now,
                           const pure_rtt *rtt)
{
    acked = pure_cc_slow_start(cc, acked);
    if (acked == 0)
        return;
    /* Byte counting instead of cwnd += mss * acked / cwnd: the division would drop the remainder
     * of every call, and with summed ACK frames that remainder is most of the growth. */
    struct pure_cc_newreno *nr = &cc->u.newreno;
    nr->acked_bytes += acked;
    while (nr->acked_bytes >= cc->cwnd && cc->cwnd < PURE_CC_MAX_WINDOW) {
        nr->acked_bytes -= cc->cwnd;
        cc->cwnd += cc->mss;
    }
    if (cc->cwnd >= PURE_CC_MAX_WINDOW)
        nr->acked_bytes = 0;
}

static void newreno_on_congestion(pure_cc *cc, uint64_t sent_time, uint64_t now)
{
    uint64_t floor = (uint64_t)PURE_CC_MIN_PACKETS * cc->mss;
    cc->ssthresh = cc->cwnd / 2;
    if (cc->ssthresh < floor)
        cc->ssthresh = floor;
    cc->cwnd = cc->ssthresh;
    cc->u.newreno.acked_bytes = 0;
}

static void newreno_on_persistent_congestion(pure_cc *cc, uint64_t now)
{
    cc->cwnd = (uint64_t)PURE_CC_MIN_PACKETS * cc->mss;
    cc->u.newreno.acked_bytes = 0;
}

const struct pure_cc_ops pure_cc_newreno_ops = {
    .name = "newreno",
    .on_ack = newreno_on_ack,
    .on_congestion = newreno_on_congestion,
    .on_persistent_congestion = newreno_on_persistent_congestion,
    .on_app_limited = NULL,
    .on_cap = NULL,
};
