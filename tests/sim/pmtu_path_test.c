/* SPDX-License-Identifier: MIT */
/* pmtu_path_test: the path MTU search in the simulator, behind a router whose next link is
 * smaller (a tunnel) and which drops larger datagrams silently or answers with a Packet Too Big:
 * the link finds the size within a few round trips, no stream data is lost to the router, the
 * transfer takes about as long as on a 1500-byte path; a router that appears mid-transfer (a
 * black hole) costs a few round trips; a path that grows is found by the search 10 minutes on. */
#include <stdio.h>

#include "sim_app.h"
#include "test.h"

#define RTT (20 * SIM_MS)

static sim_path fat_path(void)
{
    return (sim_path){.delay = RTT / 2, .bandwidth = 100000000ull, .queue = 256 << 10};
}

static uint64_t datagram_size(const sim_app *a)
{
    pure_link_stats st;
    if (!a->cl)
        return 0;
    pure_link_stats_get(a->cl, &st);
    return st.datagram_size;
}

/* 4 MB through the router (both ways, as a tunnel is), router_mtu 0: none. Returns the time the
 * transfer took (ns) and fills *found with the size in use RTT * 4 after the first data. */
static uint64_t transfer(uint32_t router_mtu, int ptb, uint64_t *found, uint64_t *dropped)
{
    sim_app *a = sim_app_new(7, 4000, 1000, 1000, NULL);
    sim_path p = fat_path();
    p.router_mtu = router_mtu;
    p.router_ptb = ptb;
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    /* the handshake takes a round trip; data starts then */
    sim_app_run(a, RTT + 4 * RTT);
    *found = datagram_size(a);
    CHECK(sim_app_run(a, 60 * SIM_S));
    CHECK(sim_app_ok(a));
    CHECK_EQ(a->client_error, 0);
    uint64_t took = a->finish_time - a->start_time;
    *dropped = sim_path_stats(a->s, a->cli, a->srv)->too_big;
    sim_app_free(a);
    return took;
}

/* 1400 and 1280-byte tunnels over IPv4 and IPv6 (payloads 1372, 1352, 1252, 1232), with and
 * without Packet Too Big: the size found within 4 round trips of the first data, only probes
 * dropped by the router (no stream data: at most the two rounds' worth of probes), and the
 * transfer within 1.2x of the time on a 1500-byte path. */
static void test_finds_size_behind_router(void)
{
    uint64_t found, dropped;
    uint64_t base = transfer(0, 0, &found, &dropped);
    CHECK_EQ(found, 1472);
    CHECK_EQ(dropped, 0);
    static const uint32_t mtus[] = {1372, 1352, 1252, 1232};
    for (unsigned i = 0; i < sizeof mtus / sizeof mtus[0]; i++)
        for (int ptb = 0; ptb < 2; ptb++) {
            uint64_t took = transfer(mtus[i], ptb, &found, &dropped);
            printf("router %u%s: %.3f s (1500 path: %.3f s), size %llu after 4 RTT, %llu dropped\n",
                   mtus[i], ptb ? " +PTB" : "", (double)took / SIM_S, (double)base / SIM_S,
                   (unsigned long long)found, (unsigned long long)dropped);
            CHECK_EQ(found, mtus[i]);
            CHECK(dropped <= 16); /* probes only: the first, a ladder, a step or two */
            CHECK(took * 10 <= base * 12);
        }
}

/* The router appears mid-transfer (a route change into a 1280 tunnel). Without a Packet Too Big
 * (a black hole) the link falls back to 1200 within a few round trips and finds 1252; with one it
 * does so at once. Every message arrives. */
static void black_hole(int ptb)
{
    sim_app *a = sim_app_new(9, 20000, 1000, 1000, NULL);
    sim_path p = fat_path();
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    sim_app_run(a, 500 * SIM_MS);
    CHECK_EQ(datagram_size(a), 1472);
    p.router_mtu = 1252;
    p.router_ptb = ptb;
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    uint64_t t0 = sim_now(a->s), down = 0, up = 0;
    pure_link_stats st;
    pure_link_stats_get(a->cl, &st);
    while (!up && sim_now(a->s) < t0 + 5 * SIM_S && !a->finished) {
        sim_app_run(a, sim_now(a->s) + SIM_MS);
        uint64_t sz = datagram_size(a);
        if (!down && sz < 1252)
            down = sim_now(a->s) - t0;
        if (sz == 1252)
            up = sim_now(a->s) - t0;
    }
    printf("black hole%s: at 1200 after %.1f ms, 1252 after %.1f ms (srtt %.1f ms)\n",
           ptb ? " +PTB" : "", (double)down / SIM_MS, (double)up / SIM_MS,
           (double)st.rtt_ns / SIM_MS);
    CHECK(up > 0);
    CHECK(up <= (ptb ? 2 : 8) * RTT);
    CHECK(sim_app_run(a, 120 * SIM_S));
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

static void test_black_hole_mid_transfer(void)
{
    black_hole(0);
    black_hole(1);
}

/* A path that grows (the tunnel goes away): the size found stays until the search runs again,
 * 10 minutes on, which finds the larger size. A slow path, so the transfer lasts that long. */
static void test_search_again_later(void)
{
    sim_app *a = sim_app_new(11, 100000, 1000, 1000, NULL);
    sim_path p = {.delay = RTT / 2, .bandwidth = 1000000ull, .queue = 64 << 10, .router_mtu = 1252};
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    sim_app_run(a, 10 * SIM_S);
    CHECK_EQ(datagram_size(a), 1252);
    p.router_mtu = 0;
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    sim_app_run(a, 500 * SIM_S);
    CHECK_EQ(datagram_size(a), 1252);
    sim_app_run(a, 640 * SIM_S);
    CHECK_EQ(datagram_size(a), 1472);
    CHECK(!a->client_closed);
    sim_app_free(a);
}

int main(void)
{
    RUN(test_finds_size_behind_router);
    RUN(test_black_hole_mid_transfer);
    RUN(test_search_again_later);
    return pure_test_finish();
}
