/* SPDX-License-Identifier: MIT */
/* basic_test: a link comes up in the simulator and carries messages intact and in order. */
#include "sim_app.h"
#include "test.h"

static void test_small_lossless(void)
{
    sim_app *a = sim_app_new(1, 1000, 1, 200, NULL);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    CHECK(sim_app_run(a, 60 * SIM_S));
    CHECK(a->established);
    CHECK(a->accepted);
    CHECK_EQ(a->received, 1000);
    CHECK_EQ(a->bad, 0);
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

/* A sender that writes before the handshake completes is held to send_queue bytes, as on an open
 * link (an 8 MiB backlog filled during the handshake made the ring grow through every size and
 * fault in 16 MiB before the first packet left), and everything still arrives. */
static void test_queue_before_handshake(void)
{
    sim_app *a = sim_app_new(2, 20000, 900, 1100, NULL);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    CHECK(!a->established);
    CHECK(a->sent > 0);
    pure_settings d;
    pure_settings_default(&d);
    CHECK(pure_link_backlog(a->cl) >= d.send_queue);
    CHECK(pure_link_backlog(a->cl) <= d.send_queue + 4 + 1100);
    CHECK(sim_app_run(a, 60 * SIM_S));
    CHECK_EQ(a->received, 20000);
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

/* On a 100 Mbit/s path at 20 ms RTT the pacer spreads the window: bursts it cut short are
 * counted (pure_link_stats.paced_bursts). */
static void test_paced_bursts_counted(void)
{
    sim_app *a = sim_app_new(3, 20000, 1000, 1000, NULL);
    sim_path p = {.delay = 10 * SIM_MS, .bandwidth = 100000000ull, .queue = 1 << 20};
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &p);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    sim_app_run(a, 1 * SIM_S); /* mid-transfer */
    CHECK(a->cl != NULL);
    if (a->cl) {
        pure_link_stats st;
        pure_link_stats_get(a->cl, &st);
        CHECK(st.paced_bursts > 0);
        CHECK(st.paced_bursts < st.packets_sent);
    }
    CHECK(sim_app_run(a, 60 * SIM_S));
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

int main(void)
{
    RUN(test_small_lossless);
    RUN(test_queue_before_handshake);
    RUN(test_paced_bursts_counted);
    return pure_test_finish();
}
