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

int main(void)
{
    RUN(test_small_lossless);
    return pure_test_finish();
}
