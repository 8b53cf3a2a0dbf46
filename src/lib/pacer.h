/* SPDX-License-Identifier: MIT */
/* pacer.h: a token bucket that spreads a congestion window over the round trip, so packets leave at
 * about 1.25 * cwnd / srtt (the 1.25 leaves room to grow the window, as RFC 9002 7.7 suggests)
 * instead of in one line-rate burst that overflows a router queue, while still letting the I/O
 * layer hand the kernel whole GSO bursts (~44 packets) at once.
 *
 * Sans-I/O: the caller supplies the time in nanoseconds and the current cwnd and smoothed RTT on
 * every call, so the rate follows the controller without the pacer holding a reference to it. */
#ifndef PURE_PACER_H
#define PURE_PACER_H

#include <stdint.h>

/* Burst cap used when pure_pacer_init is given 0: one 64 KiB GSO burst. */
#define PURE_PACER_DEFAULT_BURST 65536u
/* Largest burst cap accepted (16 MiB); bounds every product in the rate arithmetic. */
#define PURE_PACER_MAX_BURST (1u << 24)

/* A burst is about this long at the pacing rate (Linux TCP's TSO autosizing): at 50 Mbit/s five
 * packets leave together, not a whole GSO train into a switch's 10-packet queue; on loopback or
 * a fat path 1 ms of the rate is more than the largest burst, so whole trains still go. */
#define PURE_PACER_BURST_NS 1000000u

typedef struct pure_pacer {
    int64_t tokens;     /* bytes that may leave at `last`; negative after a packet overran them */
    uint64_t last;      /* time the tokens were valid at; meaningful once has_last is set */
    uint64_t burst;     /* the largest burst (one GSO train); the cap on tokens is
                           PURE_PACER_BURST_NS of the rate, between min_burst and this */
    uint64_t min_burst; /* two packets */
    uint64_t due;       /* when pure_pacer_next last told the caller to come back (UINT64_MAX:
                           none) */
    uint64_t late_at;   /* the time late_cap is for: a late wake-up's burst (cap_late;
                           UINT64_MAX: none) */
    uint64_t late_cap;
    uint64_t path_rtt; /* the network's part of the RTT, smoothed (0: none yet), which sizes
                          bursts: see pure_pacer_path_sample */
    uint8_t has_last;  /* 0 until the first allowance (time 0 is a legal time, not "unset") */
    uint8_t unpaced;   /* the last allowance had no RTT sample: sends are not charged */
} pure_pacer;

/* Starts a pacer with a full bucket of `burst_bytes` (0 means PURE_PACER_DEFAULT_BURST; larger than
 * PURE_PACER_MAX_BURST is clamped): the largest burst, one I/O burst (64 KiB) or more. At a slow
 * rate bursts are smaller: PURE_PACER_BURST_NS of the rate, at least 2 * mss. */
void pure_pacer_init(pure_pacer *p, uint64_t burst_bytes, uint32_t mss);

/* One sample of the network's round trip: an RTT sample measured from the ACK's arrival, less all
 * the delay the peer reported (time a packet waited in the peer's socket queue and loop, counted
 * from its arrival, as pure_ctx_read_at lets the I/O layer say): the path and its queues, without
 * the hosts' waits. The pacer smooths the samples as srtt is (7/8). The rate stays
 * 1.25 * cwnd / srtt, but a burst is PURE_PACER_BURST_NS of 1.25 * cwnd / path_rtt when that is
 * the larger. On a network path the two RTTs agree and nothing changes (a network queue must
 * keep shrinking the bursts: sizing them by the minimum RTT instead cost a 42-packet queue 5-20%
 * of its goodput); where a peer's CPU is the bottleneck (a server with a thousand links) srtt
 * grew to 45 times the network's RTT, 1 ms of cwnd / srtt was two packets per burst, a packet or
 * more per request, and the extra packets and wake-ups fed the very queue that had shrunk the
 * bursts. A sample of 0 is ignored. */
void pure_pacer_path_sample(pure_pacer *p, uint64_t rtt);

/* Forgets the path's RTT (the link moved to another host's path). */
void pure_pacer_path_reset(pure_pacer *p);

/* Bytes that may leave now: the bucket refilled at 1.25 * cwnd / srtt since the last call, capped
 * at the burst for that rate, plus what the rate earned while the caller was late: a wake-up after
 * the time pure_pacer_next gave (a loaded machine, a loop busy with a thousand other links) may
 * send what it would have sent on time, up to one whole burst (the GSO train), or every late
 * wake-up would lose the rate and a busy server would pace itself far below its window. 0 means
 * wait (see pure_pacer_next). With srtt == 0 (no RTT sample
 * yet) pacing does not apply: returns UINT64_MAX, and the bucket stays full for when the first
 * sample arrives. Time that runs backwards credits nothing. */
uint64_t pure_pacer_allowance(pure_pacer *p, uint64_t now, uint64_t cwnd, uint64_t srtt);

/* The caller stopped waiting for the pacer (nothing to send, or the congestion window holds it):
 * the time since pure_pacer_next's answer is not owed as a late wake-up. */
void pure_pacer_forget_due(pure_pacer *p);

/* Charges `bytes` just sent against the bucket. Sending more than the allowance (a whole packet
 * when only part of one was allowed) is a debt repaid before the next send, bounded by one burst.
 */
void pure_pacer_on_sent(pure_pacer *p, uint64_t bytes);

/* The earliest time >= now at which pure_pacer_allowance will return at least `need` bytes (need is
 * capped at the burst, which is always reached eventually): the link arms its timer for this.
 * Returns now when pacing does not apply (srtt == 0) or the bytes are already there. */
uint64_t pure_pacer_next(pure_pacer *p, uint64_t now, uint64_t need, uint64_t cwnd, uint64_t srtt);

#endif
