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

int main(void)
{
    RUN(test_small_lossless);
    RUN(test_queue_before_handshake);
    return pure_test_finish();
}
