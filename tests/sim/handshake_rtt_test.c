/* SPDX-License-Identifier: MIT */
/* handshake_rtt_test: both sides take the handshake's round trip as their first RTT sample
 * (rtt.h, pure_rtt_handshake_sample), so a side that mostly receives does not keep RFC 9002's
 * 333 ms guess, and a probe timeout of about a second, for the few control frames it sends. A
 * handshake whose INIT was lost and sent again gives a sample that runs from the first INIT: too
 * long, never too short. */
#include <stdio.h>

#include "sim_app.h"
#include "state.h"
#include "test.h"

#define RTT (20 * SIM_MS)

static int opened(void *arg)
{
    sim_app *a = arg;
    return a->cl && a->sl && a->cl->state == PURE_LS_OPEN && a->sl->state == PURE_LS_OPEN;
}

/* Connects over a 20 ms path (losing the first `lose` client datagrams) and returns the two
 * links' RTT estimates the moment both are open, before any ACK could give a sample. */
static void handshake(uint32_t lose, pure_rtt *cli, pure_rtt *srv)
{
    sim_app *a = sim_app_new(3, 1, 100, 100, NULL);
    sim_path p = {.delay = RTT / 2, .lose_first = lose};
    sim_path back = {.delay = RTT / 2};
    sim_set_path(a->s, a->cli, a->srv, &p);
    sim_set_path(a->s, a->srv, a->cli, &back);
    CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
    CHECK(sim_run(a->s, opened, a, 10 * SIM_S));
    if (a->cl && a->sl) {
        *cli = a->cl->rtt;
        *srv = a->sl->rtt;
    }
    printf("  INIT lost %u: client srtt %.1f ms (sample %d), server srtt %.1f ms (sample %d)\n",
           lose, cli->smoothed / 1e6, cli->has_sample, srv->smoothed / 1e6, srv->has_sample);
    CHECK(sim_app_run(a, 60 * SIM_S));
    CHECK(sim_app_ok(a));
    sim_app_free(a);
}

static void test_first_sample_from_handshake(void)
{
    pure_rtt c = {0}, s = {0};
    handshake(0, &c, &s);
    CHECK(c.has_sample && s.has_sample);
    CHECK(c.smoothed >= RTT && c.smoothed < RTT + 5 * SIM_MS);
    CHECK(s.smoothed >= RTT && s.smoothed < RTT + 5 * SIM_MS);
    CHECK(c.min >= RTT && s.min >= RTT); /* never below the path: a repeat only lengthens it */
}

static void test_retried_init_gives_no_short_sample(void)
{
    pure_rtt c = {0}, s = {0};
    handshake(1, &c, &s);
    /* the client's round trip runs from its first INIT: it includes the retry's wait, so it
     * overstates the path (safe: a probe timeout too long, never too short) and is never above
     * the 333 ms guess it replaces */
    CHECK(c.smoothed >= 15 * RTT && c.smoothed <= PURE_RTT_INITIAL);
    /* the server saw only the second INIT: its round trip is exact */
    CHECK(s.has_sample && s.smoothed >= RTT && s.smoothed < RTT + 5 * SIM_MS);
}

int main(void)
{
    RUN(test_first_sample_from_handshake);
    RUN(test_retried_init_gives_no_short_sample);
    return pure_test_finish();
}
