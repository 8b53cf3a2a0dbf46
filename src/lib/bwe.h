/* SPDX-License-Identifier: MIT */
/* bwe.h: the bandwidth estimate the congestion response is floored at: the delivery rate (bytes
 * acknowledged per round trip) as a windowed maximum, so a loss never takes the window below
 * what the path demonstrably delivers (times its minimum RTT). Random loss on a path with spare
 * capacity then costs a retransmission, not the window; a queue that overflows still cuts the
 * window to the path's BDP (times PURE_BWE_FLOOR), which drains it. In the spirit of TCP
 * Westwood+ (ssthresh from the bandwidth estimate) and BBR's windowed-max bandwidth filter.
 *
 * Sans-I/O: times in nanoseconds from the caller. */
#ifndef PURE_BWE_H
#define PURE_BWE_H

#include <stdint.h>

/* The window a loss leaves is at least this fraction of the estimated BDP: below 1, so that flows
 * sharing a bottleneck still decrease multiplicatively on a common loss and converge to fair
 * shares (with equal growth, AIMD converges; a floor at the whole BDP would freeze each flow's
 * share), and above CUBIC's beta (0.7) only slightly: against a CUBIC flow the expected ratio of
 * shares is sqrt((1 + 0.8) (1 - 0.7) / ((1 - 0.8) (1 + 0.7))) ~ 1.26. */
#define PURE_BWE_FLOOR_NUM 8
#define PURE_BWE_FLOOR_DEN 10
/* A maximum older than this many smoothed RTTs gives way to the newest sample. */
#define PURE_BWE_WINDOW_RTTS 10
/* No delivery-rate sample spans less than this (ACKs bunched by GRO or delayed ACKs would
 * otherwise read as bursts of bandwidth). */
#define PURE_BWE_MIN_INTERVAL 1000000ull /* 1 ms */

typedef struct pure_bwe {
    uint64_t max_bps; /* the windowed maximum, bytes per second (0: no sample yet) */
    uint64_t max_at;  /* when it was taken */
    uint64_t acked;   /* bytes acknowledged since `start` */
    uint64_t start;   /* the current interval's start; valid if started */
    /* The highest delivery rate over any interval of max(srtt / 4, PURE_BWE_MIN_INTERVAL) not
     * app-limited, since the estimate began: what the path carried when slow start ended
     * (recovery.c). A whole-RTT interval lags it: the last one slow start completes before its
     * first loss is seen spans the round trip in which the window still grew, half the rate. */
    uint64_t peak_bps;
    uint64_t q_acked; /* bytes acknowledged since q_start, the current short interval's start */
    uint64_t q_start;
    uint8_t started;
    uint8_t limited;   /* the sender was app-limited during the interval */
    uint8_t q_limited; /* the sender was app-limited during the short interval */
} pure_bwe;

/* bytes were newly acknowledged at `now`; srtt is the smoothed RTT (0: none yet). An interval of
 * at least max(srtt, PURE_BWE_MIN_INTERVAL) ends in a sample; a sample taken while app-limited
 * (the sender had less to send than the window allowed) can only raise the maximum. */
void pure_bwe_on_ack(pure_bwe *e, uint64_t bytes, uint64_t now, uint64_t srtt, int app_limited);

/* bps bytes per second for ns nanoseconds, in bytes. */
uint64_t pure_bwe_bytes(uint64_t bps, uint64_t ns);

/* The window a congestion response must leave at least: PURE_BWE_FLOOR of max_bps * min_rtt,
 * in bytes (0 without a sample or an RTT). */
uint64_t pure_bwe_floor(const pure_bwe *e, uint64_t min_rtt);

#endif
