/* SPDX-License-Identifier: MIT */
/* sim.h: a deterministic network simulator for Pure's sans-I/O core: virtual time, a seeded
 * PRNG, any number of endpoints (each a pure_ctx), and per-direction paths with delay, jitter,
 * bandwidth, a queue limit, random and burst loss, reordering, duplication, corruption and
 * blackhole periods. Everything that happens depends only on the seed. */
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
/* A hook that sees (and may record) every datagram a path accepts; may be NULL. */
void sim_set_tap(sim *s, void (*tap)(void *arg, int from, int to, const uint8_t *d, size_t n),
                 void *arg);

#endif
