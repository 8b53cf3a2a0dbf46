/* SPDX-License-Identifier: MIT */
/* cc.h: congestion control — the bookkeeping every controller shares (bytes in flight, the
 * recovery period of RFC 9002 7.3.2) and a small table of hooks behind which NewReno (RFC 9002
 * 7.3) and CUBIC (RFC 9438) implement their window growth and reduction.
 *
 * Sans-I/O: times are uint64_t nanoseconds supplied by the caller (0 is a legal time), sizes are
 * bytes. Nothing here allocates or reads a clock. The link calls pure_cc_on_sent for every packet
 * that counts towards the congestion window, then exactly one of pure_cc_on_acked, pure_cc_on_lost
 * or pure_cc_on_discarded for it (acknowledgements and losses may be summed per ACK frame), and
 * sends only while pure_cc_available() is non-zero. */
#ifndef PURE_CC_H
#define PURE_CC_H

#include <stdint.h>

#include "bwe.h"
#include "pure.h" /* enum pure_cc_algo: PURE_CC_NEWRENO, PURE_CC_CUBIC (the settings field) */
#include "rtt.h"

/* Window constants (RFC 9002 7.2): the initial window, the floor after any reduction, and a
 * ceiling (1 GiB: 10 Gbit/s over an 800 ms path) that keeps every product in the growth arithmetic
 * inside 64 bits. */
#define PURE_CC_INITIAL_PACKETS 10
#define PURE_CC_MIN_PACKETS 2
#define PURE_CC_MAX_WINDOW (1ull << 30)
#define PURE_CC_MAX_MSS 65535u

/* CUBIC constants (RFC 9438 4.1, 4.3): C = 0.4 segments/s^3, beta = 0.7, and the Reno-friendly
 * additive increase alpha = 3 * (1 - beta) / (1 + beta) = 9/17 segment per RTT, as fractions. */
#define PURE_CUBIC_BETA_NUM 7
#define PURE_CUBIC_BETA_DEN 10
#define PURE_CUBIC_ALPHA_NUM 9
#define PURE_CUBIC_ALPHA_DEN 17

/* NewReno state: bytes acknowledged in congestion avoidance not yet turned into window (one mss is
 * added per cwnd bytes acknowledged, so batched acknowledgements grow the window exactly as much
 * as per-packet ones). */
struct pure_cc_newreno {
    uint64_t acked_bytes;
};

/* CUBIC state (RFC 9438 names in brackets). The curve of the current congestion-avoidance epoch
 * is W(t) = origin + C * (t - K)^3, t counted from epoch_start. */
struct pure_cc_cubic {
    uint64_t w_max;       /* [W_max] window before the last reduction, after fast convergence */
    uint64_t cwnd_prior;  /* [cwnd_prior] window when ssthresh was last set */
    uint64_t origin;      /* the plateau of this epoch's curve: w_max, or cwnd if already above */
    uint64_t k_ms;        /* [K] in milliseconds: time from epoch start to the plateau */
    uint64_t epoch_start; /* [t_epoch] valid only while in_epoch */
    uint64_t w_est;       /* [W_est] the window Reno would have, in bytes */
    uint64_t est_rem;     /* fractional W_est growth carried between acknowledgements */
    uint64_t cwnd_rem;    /* fractional cwnd growth carried between acknowledgements */
    uint8_t in_epoch;     /* a congestion-avoidance epoch is running (cleared by reductions) */
    uint8_t w_max_est;    /* w_max is pure_cc_cap's estimate of what the path holds, not yet a
                             window the path was seen to lose at from below it (cc_cubic.c) */
};

typedef struct pure_cc {
    const struct pure_cc_ops *ops;
    uint64_t cwnd, ssthresh, bytes_in_flight; /* ssthresh is UINT64_MAX until the first loss */
    uint64_t recovery_start; /* time the current recovery period began; valid if has_recovery */
    uint32_t mss;            /* max datagram payload */
    /* recovery_start holds a real time (0 is a legal one): this flag, not a zero, says whether
     * a recovery period has begun since init or the last persistent congestion. */
    uint8_t has_recovery;
    pure_bwe bwe;     /* the delivery rate: a loss leaves at least its BDP floor (bwe.h) */
    uint64_t min_rtt; /* the path's minimum RTT, from the last acknowledgement */
    union {
        struct pure_cc_newreno newreno;
        struct pure_cc_cubic cubic;
    } u;
} pure_cc;

/* A controller's hooks. The shared functions below maintain bytes_in_flight and the recovery
 * period and call these only when the window should actually change; the hooks own cwnd,
 * ssthresh and their algorithm's state. */
struct pure_cc_ops {
    const char *name;
    /* Grows cwnd for acked_bytes newly acknowledged outside recovery while not app-limited.
     * sent_time is that of the largest newly acknowledged packet; rtt is never NULL. */
    void (*on_ack)(pure_cc *cc, uint64_t acked_bytes, uint64_t sent_time, uint64_t now,
                   const pure_rtt *rtt);
    /* Reduces the window once for a new recovery period (already recorded in recovery_start). */
    void (*on_congestion)(pure_cc *cc, uint64_t sent_time_of_lost, uint64_t now);
    /* Collapses the window to the minimum after persistent congestion (RFC 9002 7.6). */
    void (*on_persistent_congestion)(pure_cc *cc, uint64_t now);
    /* Optional (may be NULL): an acknowledgement arrived while the sender was app-limited, so
     * time is passing without the window being tested; CUBIC restarts its epoch. */
    void (*on_app_limited)(pure_cc *cc, uint64_t now);
    /* Optional (may be NULL): pure_cc_cap just lowered cwnd and ssthresh to what the path holds;
     * CUBIC makes it the plateau of its next epoch. */
    void (*on_cap)(pure_cc *cc);
};

/* Sets up a controller: cwnd = 10 * mss, ssthresh unbounded, nothing in flight, no recovery
 * period. An unknown algo falls back to CUBIC, the default. mss is clamped to
 * [1, PURE_CC_MAX_MSS]. */
void pure_cc_init(pure_cc *cc, enum pure_cc_algo algo, uint32_t mss, uint64_t now);
/* Starts the controller again from its initial window (a new path), keeping the count of bytes
 * in flight. */
void pure_cc_reset(pure_cc *cc, uint64_t now);

/* Counts `bytes` of a just-sent, congestion-controlled packet as in flight. */
void pure_cc_on_sent(pure_cc *cc, uint64_t bytes);

/* `bytes` were newly acknowledged (one packet, or the sum over an ACK frame with sent_time the
 * send time of the largest newly acknowledged packet). Removes them from flight, then grows the
 * window unless app_limited (the sender had less than a window to send, so the acknowledgement
 * says nothing about spare capacity, RFC 9002 7.8) or the packet was sent at or before the start
 * of the current recovery period (RFC 9002 7.3.2). */
void pure_cc_on_acked(pure_cc *cc, uint64_t bytes, uint64_t sent_time, uint64_t now,
                      const pure_rtt *rtt, int app_limited);

/* `bytes` were declared lost (sum allowed; sent_time of the newest lost packet). Removes them from
 * flight and, unless that packet was sent at or before the start of the current recovery period,
 * starts a new period at `now` and reduces the window once: at most one reduction per round trip
 * of losses. The reduction stops at the floor of the delivery-rate estimate (bwe.h): the window
 * never falls below PURE_BWE_FLOOR of what the path demonstrably delivers per minimum RTT.
 * Returns 1 if that floor held the window up (the loss was cheaper than the controller's own
 * reduction: random loss, or a queue that the floor drains), else 0. */
int pure_cc_on_lost(pure_cc *cc, uint64_t bytes, uint64_t sent_time, uint64_t now);

/* A congestion signal that removes nothing from flight: the peer reported packets marked CE
 * (ECN), sent_time the send time of the newest packet acknowledged when the report came. The
 * same once-per-period reduction and floor as pure_cc_on_lost; returns as it does. */
int pure_cc_on_congestion(pure_cc *cc, uint64_t sent_time, uint64_t now);

/* Persistent congestion was detected (RFC 9002 7.6; call after pure_cc_on_lost for the same
 * losses): the window falls to 2 * mss and the recovery period is forgotten, so the next loss
 * reduces again. */
void pure_cc_on_persistent_congestion(pure_cc *cc, uint64_t now);

/* Lowers the window (and ssthresh) to `window` bytes (at least the minimum window) if it is above
 * it: what the path was measured to hold when the first slow start ended (recovery.c). The
 * controller takes it as its last maximum. Nothing changes if cwnd is already at or below it. */
void pure_cc_cap(pure_cc *cc, uint64_t window);

/* Removes `bytes` from flight without a congestion signal (keys discarded, link closed). */
void pure_cc_on_discarded(pure_cc *cc, uint64_t bytes);

/* Bytes that may be sent now: cwnd - bytes_in_flight, or 0 when the window is full. */
uint64_t pure_cc_available(const pure_cc *cc);

/* The controllers, for pure_cc_init and for tests. */
extern const struct pure_cc_ops pure_cc_newreno_ops;
extern const struct pure_cc_ops pure_cc_cubic_ops;

/* Slow start for the controllers' on_ack hooks: grows cwnd by `acked` up to ssthresh and returns
 * the bytes left over for congestion avoidance (an acknowledgement that crosses ssthresh is
 * split, not spent entirely on either side). */
uint64_t pure_cc_slow_start(pure_cc *cc, uint64_t acked);

/* floor(cbrt(x)) in integers: CUBIC's K without libm. Exposed for its tests. */
uint64_t pure_cc_icbrt(uint64_t x);

/* CUBIC's K in milliseconds for a window that must regrow by `deficit` bytes with segments of
 * `mss` bytes: cbrt(deficit / (C * mss)) seconds. Exposed for its tests. */
uint64_t pure_cc_cubic_k_ms(uint64_t deficit, uint32_t mss);

/* CUBIC's W(t) in bytes for the current epoch, t nanoseconds after epoch_start. Exposed for its
 * tests. */
uint64_t pure_cc_cubic_window(const pure_cc *cc, uint64_t t);

#endif
