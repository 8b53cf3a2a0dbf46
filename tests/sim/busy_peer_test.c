/* SPDX-License-Identifier: MIT */
/* busy_peer_test: a peer whose loop is saturated (every datagram waits 20 ms in its socket queue,
 * as behind a server's thousand busy links) must not make the link take that wait for the path's
 * round trip. The pacer sizes its bursts by the network's part of the RTT (pacer.h,
 * pure_pacer_path_sample): RTT samples measured from the ACK's arrival, less the delay the peer
 * reports, which counts from each packet's arrival (pure_ctx_read_at), smoothed; on a network
 * path that is srtt, queue included. Without arrival times a 10 ms path looked like 30 ms, and on
 * loopback a thousand-link rpc server fell to two packets per burst (docs/performance.md). Also:
 * the RTT estimate that probe timeouts use keeps both hosts' waits, and a busy receiver does not
 * answer every packet with an ACK of its own. */
#include <stdio.h>
#include <string.h>

#include "sim_app.h"
#include "state.h"
#include "test.h"

#define RTT (10 * SIM_MS)
#define BUSY (20 * SIM_MS)

struct run {
    uint64_t path_rtt, srtt, acks_per_packet_x100, took;
    int ok;
};

/* 8 MB from client to server over a 10 ms, 200 Mbit/s path, with endpoint `busy` (or -1: none)
 * reading each datagram 20 ms after it arrived, with or without arrival stamps. path_rtt is read
 * halfway through. */
static struct run transfer(int busy, int stamps)
{
    struct run r = {0};
    sim_app *a = sim_app_new(11, 8000, 1000, 1000, NULL);
    sim_path p = {.delay = RTT / 2, .bandwidth = 200000000ull, .queue = 1 << 20};
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    if (busy >= 0)
        sim_set_busy(a->s, busy == 0 ? a->cli : a->srv, BUSY, stamps);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    sim_app_run(a, 200 * SIM_MS);
    if (a->cl && a->cl->b) {
        r.path_rtt = a->cl->b->pacer.path_rtt;
        r.srtt = a->cl->rtt.smoothed;
    }
    r.ok = sim_app_run(a, 60 * SIM_S) && sim_app_ok(a) && a->client_error == 0;
    r.took = a->finish_time - a->start_time;
    const sim_stats *back = sim_path_stats(a->s, a->srv, a->cli);
    const sim_stats *fwd = sim_path_stats(a->s, a->cli, a->srv);
    r.acks_per_packet_x100 = fwd->sent ? back->sent * 100 / fwd->sent : 0;
    sim_app_free(a);
    return r;
}

static void report(const char *what, struct run r)
{
    printf("  %-28s path RTT %6.2f ms, srtt %6.2f ms, server packets per client packet %.2f, "
           "%.0f ms\n",
           what, r.path_rtt / 1e6, r.srtt / 1e6, r.acks_per_packet_x100 / 100.0, r.took / 1e6);
}

/* The receiver is busy: its ACK delays count from each packet's arrival, so the sender still
 * sees a 10 ms path; told only the read time, it sees the wait as path. */
static void test_busy_receiver(void)
{
    struct run idle = transfer(-1, 0), stamped = transfer(1, 1), blind = transfer(1, 0);
    report("no busy side", idle);
    report("busy receiver, stamps", stamped);
    report("busy receiver, no stamps", blind);
    CHECK(idle.ok && stamped.ok && blind.ok);
    /* with no busy host the network's RTT is srtt (here with the path's queue in it) */
    CHECK(idle.path_rtt * 10 >= idle.srtt * 9 && idle.path_rtt * 10 <= idle.srtt * 11);
    CHECK(stamped.path_rtt >= RTT && stamped.path_rtt < RTT + 2 * SIM_MS);
    CHECK(blind.path_rtt > RTT + 5 * SIM_MS); /* what the stamps remove */
    /* the RTT estimate (probe timeouts) still holds the receiver's wait */
    CHECK(stamped.srtt > RTT + 5 * SIM_MS);
    /* an ACK deadline counted from the read, not the arrival: packets that waited longer than
     * max_ack_delay are not each answered at once */
    CHECK(stamped.acks_per_packet_x100 <= blind.acks_per_packet_x100 + 5);
}

/* The sender is busy: ACKs wait in its own socket; measured from their arrival they show the
 * path. */
static void test_busy_sender(void)
{
    struct run stamped = transfer(0, 1), blind = transfer(0, 0);
    report("busy sender, stamps", stamped);
    report("busy sender, no stamps", blind);
    CHECK(stamped.ok && blind.ok);
    CHECK(stamped.path_rtt >= RTT && stamped.path_rtt < RTT + 2 * SIM_MS);
    CHECK(blind.path_rtt > RTT + 5 * SIM_MS);
}

/* The sender's loop stalls in the middle of a transfer: from then on every datagram waits 100 ms
 * in its socket, longer than a probe timeout of the 10 ms path. The ACKs are there, unread, and
 * the loop says so (pure_ctx_read_backlog): no probe timeout fires for them. Without, every
 * link of a busy loop probed at once (10,000 links of the RPC benchmark after a 30 ms stall),
 * and the probes deepened the queue. */
static void test_stall_defers_probes(void)
{
    sim_app *a = sim_app_new(12, 8000, 1000, 1000, NULL);
    sim_path p = {.delay = RTT / 2, .bandwidth = 200000000ull, .queue = 1 << 20};
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    sim_app_run(a, 200 * SIM_MS);
    CHECK(a->cl != NULL);
    uint64_t ptos0 = a->cl->st.ptos;
    sim_set_busy(a->s, a->cli, 100 * SIM_MS, 1);
    int ok = sim_app_run(a, 60 * SIM_S) && sim_app_ok(a) && a->client_error == 0;
    pure_guard_stats g;
    memset(&g, 0, sizeof g);
    pure_ctx_guard_stats_get(sim_ctx(a->s, a->cli), &g, sizeof g);
    uint64_t ptos = a->cl->st.ptos - ptos0;
    printf("  stalled sender: %llu probe timeouts, %llu deferred\n", (unsigned long long)ptos,
           (unsigned long long)g.ptos_deferred);
    CHECK(ok);
    CHECK_EQ(ptos, 0);
    CHECK(g.ptos_deferred > 0);
    sim_app_free(a);
}

int main(void)
{
    RUN(test_busy_receiver);
    RUN(test_busy_sender);
    RUN(test_stall_defers_probes);
    return pure_test_finish();
}
