/* SPDX-License-Identifier: MIT */
/* rtt.h: the round-trip-time estimator of RFC 9002 section 5 (latest, smoothed, variation and
 * minimum RTT), and the two durations loss recovery derives from it: the probe timeout and the
 * time threshold for declaring a packet lost.
 *
 * Sans-I/O: every time is a uint64_t in nanoseconds supplied by the caller. */
#ifndef PURE_RTT_H
#define PURE_RTT_H

#include <stdint.h>

/* Timer granularity (RFC 9002 kGranularity): no timer is shorter than this. */
#define PURE_RTT_GRANULARITY 1000000ull /* 1 ms */

/* Initial RTT before any sample (RFC 9002 kInitialRtt). */
#define PURE_RTT_INITIAL 333000000ull /* 333 ms */

/* The estimator. `min` and `latest` are meaningful only once has_sample is set; before that
 * smoothed and var hold the initial guesses. */
typedef struct pure_rtt {
    uint64_t latest;   /* the most recent sample, before ack-delay adjustment */
    uint64_t smoothed; /* exponentially weighted mean of adjusted samples (RFC 9002 5.3) */
    uint64_t var;      /* mean deviation of adjusted samples */
    uint64_t min;      /* smallest sample seen, never adjusted for ack delay */
    uint8_t has_sample;
} pure_rtt;

/* Starts an estimator with no sample: smoothed = initial_rtt, var = initial_rtt / 2 (RFC 9002
 * 5.3). Pass PURE_RTT_INITIAL unless the caller knows better (e.g. a remembered path RTT). */
void pure_rtt_init(pure_rtt *r, uint64_t initial_rtt);

/* Feeds one RTT sample: `sample` is now minus the send time of the largest newly acknowledged
 * packet, `ack_delay` the delay the peer reported in its ACK, `max_ack_delay` the peer's promised
 * bound. The first sample replaces the initial guesses outright. Later ones update min with the raw
 * sample, then subtract the ack delay (capped at max_ack_delay) only if the result stays at or
 * above min, so a peer's report can never pull the estimate below what the path has shown. */
void pure_rtt_sample(pure_rtt *r, uint64_t sample, uint64_t ack_delay, uint64_t max_ack_delay);

/* The handshake's round trip as a first sample (RFC 9002 5.1 takes the Handshake packets' RTT):
 * `sample` runs from the first datagram of ours that the peer's message answers, so a repeat can
 * only make it longer, never shorter. Taken only while the estimator has no sample and when below
 * PURE_RTT_INITIAL (a handshake queued or retried may have waited longer than the initial guess).
 * Without it a side that mostly receives kept 333 ms, and a probe timeout of about a second, for
 * its few control frames: a rekey reply lost on a 20 ms path waited a second to go again. */
void pure_rtt_handshake_sample(pure_rtt *r, uint64_t sample, uint64_t max_ack_delay);

/* Probe timeout duration (RFC 9002 6.2.1): smoothed + max(4 * var, granularity) + max_ack_delay.
 * The caller doubles it per consecutive PTO (backoff) itself; pass max_ack_delay = 0 while no
 * application data can be acknowledged with delay (e.g. during the handshake). Saturates at
 * UINT64_MAX instead of wrapping. */
uint64_t pure_rtt_pto(const pure_rtt *r, uint64_t max_ack_delay);

/* Time threshold for loss (RFC 9002 6.1.2): a packet sent this long before a later packet that
 * was acknowledged is lost. max(9/8 * max(smoothed, latest), granularity). */
uint64_t pure_rtt_loss_delay(const pure_rtt *r);

#endif
