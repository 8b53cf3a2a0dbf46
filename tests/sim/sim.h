/* SPDX-License-Identifier: MIT */
/* sim.h: a deterministic network simulator for Pure's sans-I/O core: virtual time, a seeded
 * PRNG, any number of endpoints (each a pure_ctx, or an agent: a small protocol of the test's
 * own, such as the reference flow in sim_ref.h), and per-direction paths with delay, jitter,
 * bandwidth, a queue limit, random and burst loss, reordering, duplication, corruption and
 * blackhole periods. Paths may also pass through a shared bottleneck (sim_bottleneck_add): one
 * FIFO queue served at a fixed rate, drop-tail in packets or bytes, optionally CoDel, that the
 * flows of several endpoint pairs compete for. Everything that happens depends only on the seed.
 *
 * The per-path model (sim_path.bandwidth and .queue) is simpler: each ordered pair of endpoints
 * has its own serialisation (the departure time is fixed when a datagram enters) and a tail drop
 * once the backlog ahead exceeds .queue bytes; only the links between those two endpoints share
 * it. Use a bottleneck to make flows of different endpoints compete, or for CoDel. */
#ifndef PURE_SIM_H
#define PURE_SIM_H

#include <stdint.h>

#include "pure.h"

#define SIM_MS 1000000ull
#define SIM_S 1000000000ull

typedef struct sim_path {
    uint64_t delay;     /* one-way, ns */
    uint64_t jitter;    /* extra uniform 0..jitter ns per datagram */
    uint64_t bandwidth; /* bits per second, 0 = unlimited */
    uint64_t queue;     /* bytes the bottleneck queue holds (0 = unlimited) */
    double loss;        /* random loss probability */
    double burst_start; /* probability that a burst of losses starts at a datagram */
    uint32_t burst_len; /* datagrams lost in a burst (a burst also ends after 50 ms) */
    double reorder;     /* probability of an extra reorder_delay */
    uint64_t reorder_delay;
    double duplicate;                         /* probability a datagram is delivered twice */
    double corrupt;                           /* probability one random byte is flipped */
    uint64_t blackhole_period, blackhole_len; /* drop all during [k*period, k*period+len) */
    uint64_t blackhole_start, blackhole_end;  /* a single blackhole window (if end > start) */
    uint32_t lose_first;                      /* drop the first N datagrams (handshake loss) */
    double handshake_loss; /* loss applied only to handshake datagrams (type 1..4) */
    double handshake_corrupt;
    uint32_t mtu;        /* largest datagram the sender's kernel accepts (0: any); larger
                            bursts are refused as sendmsg would (EMSGSIZE) */
    uint32_t router_mtu; /* a router on the path silently drops datagrams (UDP payloads) larger
                            than this (0: none), as a tunnel with a smaller MTU does */
    int router_ptb;      /* and answers each at once with a Packet Too Big giving router_mtu:
                            pure_ctx_packet_too_big(sender, ..., the datagram's start) */
} sim_path;

/* A shared bottleneck: a FIFO served at `rate`. A datagram that finds the link idle starts
 * serialising at once; otherwise it waits in the queue, which holds at most limit_packets
 * datagrams and limit_bytes bytes (the one being serialised not counted; a datagram that would
 * exceed either is dropped at the tail). With codel set, each datagram is judged by CoDel (RFC
 * 8289, tools/codel.h) as it leaves the queue. After serialisation the path's own delay, jitter
 * and reordering apply; its loss, corruption and duplication apply before the queue. */
typedef struct sim_bottleneck {
    uint64_t rate;          /* bits per second, > 0 */
    uint32_t limit_packets; /* 0: no limit in packets */
    uint64_t limit_bytes;   /* 0: no limit in bytes */
    int codel;
    uint64_t codel_target, codel_interval; /* ns; 0: 5 ms and 100 ms */
    int ecn; /* with codel: mark ECN-capable datagrams CE instead of dropping them (a pure_ctx's
                datagrams are ECT(0); an agent's are not ECN-capable) */
} sim_bottleneck;

typedef struct sim_bottleneck_stats {
    uint64_t enqueued, forwarded, bytes_forwarded;
    uint64_t dropped_queue, dropped_codel;
    uint64_t marked_codel;           /* marked CE instead of dropped (ecn) */
    uint64_t max_packets, max_bytes; /* the deepest the queue was */
    /* queueing delay (time from entering the queue to starting serialisation) of the datagrams
     * forwarded, ns (50 us resolution) */
    uint64_t qdelay_median, qdelay_p95, qdelay_max, qdelay_mean;
} sim_bottleneck_stats;

/* An agent: an endpoint driven by callbacks instead of a pure_ctx. It sends with sim_send from
 * any of them. deadline returns UINT64_MAX when it has nothing to do. */
typedef struct sim_agent_ops {
    void (*read)(void *arg, int from, const uint8_t *d, size_t n, uint64_t now);
    uint64_t (*deadline)(void *arg);
    void (*timeout)(void *arg, uint64_t now);
} sim_agent_ops;

typedef struct sim_stats {
    uint64_t sent, delivered, lost, corrupted, duplicated, bytes_sent;
    uint64_t too_big; /* dropped by the router for their size (router_mtu; also in lost) */
} sim_stats;

typedef struct sim sim;

sim *sim_new(uint64_t seed);
void sim_free(sim *s);
/* Deterministic PRNG shared by the simulation (also usable by tests for their own choices). */
uint64_t sim_rand(sim *s);
double sim_rand01(sim *s);
/* A 64-bit finaliser (MurmurHash3's): the harnesses derive sizes and bytes from it by seed. */
uint64_t sim_mix(uint64_t x);
/* An endpoint with the given settings (its private key is derived from the seed and index);
 * its random source is the simulator's PRNG. Returns its index. */
int sim_add(sim *s, pure_settings *settings);
pure_ctx *sim_ctx(sim *s, int ep);
pure_addr sim_addr(sim *s, int ep);
/* Sets the path from endpoint a to endpoint b (default: 10 ms, nothing else). */
void sim_set_path(sim *s, int a, int b, const sim_path *p);
/* The endpoint's process dies: nothing reaches it or leaves it any more and its context is not
 * called again (sim_free still frees it). */
void sim_kill(sim *s, int ep);
/* A new process at the same address: ep gets a new context made from settings (whose
 * private_key is kept as given; its random source becomes the simulator's). Returns the old
 * context, which the caller frees. */
pure_ctx *sim_replace(sim *s, int ep, pure_settings *settings);
/* Changes an endpoint's address (port) as seen by others: a NAT rebinding. */
void sim_rebind(sim *s, int ep);
/* Moves an endpoint to another host (its address's host byte becomes `host`, not used by any
 * other endpoint): a client that changed networks. Datagrams to its old address are lost. */
void sim_move(sim *s, int ep, uint8_t host);
/* Until sim_spoof(s, ep, -1), the datagrams ep sends carry endpoint `as`'s address as their
 * source (replies go to `as`): a peer forging a victim's address. */
void sim_spoof(sim *s, int ep, int as);
uint64_t sim_now(sim *s);
/* Runs until done(arg) returns non-zero or virtual time passes `until`. Returns 1 if done. */
int sim_run(sim *s, int (*done)(void *arg), void *arg, uint64_t until);
const sim_stats *sim_path_stats(sim *s, int a, int b);
/* Bytes the endpoint sent to / received from the address of endpoint b. */
uint64_t sim_bytes(sim *s, int from, int to);
/* Injects a raw datagram from endpoint `from` to `to` (for replay and junk tests). */
void sim_inject(sim *s, int from, int to, const uint8_t *d, size_t n, uint64_t delay);
/* With on, a datagram sent to an address where no endpoint is, or to a dead one (sim_kill), is
 * answered at once by an ICMP port unreachable quoting it, as Linux reports one with IP_RECVERR:
 * pure_ctx_unreachable(sender, address, PURE_UNREACH_PORT, datagram). Off by default. */
void sim_set_icmp(sim *s, int on);
/* The endpoint's loop is saturated: every datagram waits `backlog` ns in its socket queue before
 * it is read, as behind a server's queue of other links' datagrams. With `stamps` the endpoint
 * is told each datagram's arrival time (pure_ctx_read_at, as pure_loop passes the kernel's
 * receive timestamps); without, only the time it read it. backlog 0: reads at once. Before
 * its timers run, a busy endpoint is told whether datagrams wait unread
 * (pure_ctx_read_backlog). */
void sim_set_busy(sim *s, int ep, uint64_t backlog, int stamps);
/* A hook that sees (and may record) every datagram a path accepts; may be NULL. */
void sim_set_tap(sim *s, void (*tap)(void *arg, int from, int to, const uint8_t *d, size_t n),
                 void *arg);

/* Adds an agent endpoint (sim_ctx returns NULL for it). Returns its index. */
int sim_add_agent(sim *s, const sim_agent_ops *ops, void *arg);
/* An agent sends a datagram to endpoint `to` now, through the path from->to. */
void sim_send(sim *s, int from, int to, const uint8_t *d, size_t n);
/* Adds a shared bottleneck; returns its index (at most 8), or -1 if cfg is invalid or too many. */
int sim_bottleneck_add(sim *s, const sim_bottleneck *cfg);
/* Path a->b goes through bottleneck bn (-1: none again). Several paths may share one. The
 * path's own bandwidth and queue are then not used; its other settings still apply. */
void sim_path_bottleneck(sim *s, int a, int b, int bn);
void sim_bottleneck_stats_get(sim *s, int bn, sim_bottleneck_stats *out);
/* Forgets the bottleneck's statistics so far (queue and CoDel state stay): to measure a steady
 * state after a start-up. */
void sim_bottleneck_stats_reset(sim *s, int bn);

#endif
