/* SPDX-License-Identifier: MIT */
/* sim_ref.h: a reference bulk flow of the simulator's own, to compete with Pure (or with another
 * reference flow) through a shared bottleneck in virtual time: a window-based NewReno (RFC 5681
 * / RFC 9002's congestion controller) or CUBIC (RFC 9438) sender and its receiver, two agent
 * endpoints. The sender always has data: it sends fixed-size datagrams carrying a packet number
 * as the window allows (no pacing, as an ACK-clocked TCP), the receiver acknowledges every one
 * with the largest number seen and a 64-packet bitmap below it, and the sender declares a packet
 * lost when one 3 numbers later is acknowledged (RFC 9002's packet threshold) or on a
 * retransmission timeout. Lost data travels again in new packets, so the receiver's count of
 * distinct packets is the goodput. One window reduction per round trip (a loss of a packet sent
 * before the last reduction does not reduce again). */
#ifndef PURE_SIM_REF_H
#define PURE_SIM_REF_H

#include <stdint.h>

#include "sim.h"

enum {
    SIM_REF_NEWRENO = 0,
    SIM_REF_CUBIC = 1,
    /* CUBIC as ngtcp2 0.12 computes its congestion-avoidance target (the stand-in for ngtcp2 in
     * bench/run.py paths): W(t) times (t + srtt) in seconds where RFC 9438 takes W(t + srtt),
     * held to [cwnd, 1.5 cwnd], so from about a second into each epoch the window grows by half
     * per round trip (docs/congestion.md, "Sharing, once converged"). A model of that one
     * formula, to show in virtual time what it does to a flow beside it; all else as CUBIC. */
    SIM_REF_CUBIC_NGTCP2_012 = 2,
    /* CUBIC as quinn 0.9 reduces its window (the stand-in for quinn in bench/run.py paths,
     * quinn-proto 0.9.2 congestion/cubic.rs): the window falls to beta times W_max *after* fast
     * convergence, so a loss below the last maximum takes it to 0.7 * 0.85 = 0.595 of itself
     * where RFC 9438 takes 0.7 and lowers only the plateau. A model of that one rule; all else
     * as CUBIC. */
    SIM_REF_CUBIC_QUINN_09 = 3
};

typedef struct sim_ref_stats {
    uint64_t sent, acked, lost, rtos;
    uint64_t received, bytes_received; /* distinct packets at the receiver */
    double cwnd;                       /* packets */
    uint64_t srtt, min_rtt;            /* ns */
} sim_ref_stats;

typedef struct sim_ref sim_ref;

/* A flow of `size`-byte datagrams (16..1472) with controller cc, starting at virtual time
 * `start`. It adds two agent endpoints to s: sim_ref_sender and sim_ref_receiver; set their paths
 * (and bottlenecks) as for any endpoint. Returns NULL on bad arguments or when s is full. */
sim_ref *sim_ref_new(sim *s, int cc, uint32_t size, uint64_t start);
int sim_ref_sender(const sim_ref *r);
int sim_ref_receiver(const sim_ref *r);
/* The sender stops sending new data (what is in flight still arrives). */
void sim_ref_stop(sim_ref *r);
void sim_ref_stats_get(const sim_ref *r, sim_ref_stats *out);
/* Frees the flow (after sim_free, or while the simulation is not run again). */
void sim_ref_free(sim_ref *r);

#endif
