#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"
#include "test.h"
#include "crypto.h"
static pure_link *cl; static uint8_t msg[16384];
static void pump(void) { while (cl && pure_link_send(cl, msg, sizeof msg) >= 0) ; }
static int acc(pure_link *l, const char *s, const uint8_t *k, void *u) { return 0; }
static void wr(pure_link *l, void *u) { if (l == cl) pump(); }
static const pure_callbacks cbs = {.on_accept = acc, .on_writable = wr};
int main(int argc, char **argv)
{
    double loss = argc > 1 ? atof(argv[1]) : 0.005;
    sim *s = sim_new(1);
    pure_settings st; pure_settings_default(&st); st.callbacks = &cbs; st.allow_any = 1; st.crypto = &pure_crypto_null;
    int c = sim_add(s, &st), sv = sim_add(s, &st);
    pure_ctx_add_service(sim_ctx(s, sv), "d");
    sim_bottleneck b = {.rate = 50000000, .limit_packets = 170};
    int f = sim_bottleneck_add(s, &b), r = sim_bottleneck_add(s, &b);
    sim_path fw = {.delay = 20 * SIM_MS, .loss = loss}, rv = {.delay = 20 * SIM_MS};
    sim_set_path(s, c, sv, &fw); sim_set_path(s, sv, c, &rv);
    sim_path_bottleneck(s, c, sv, f); sim_path_bottleneck(s, sv, c, r);
    pure_addr to = sim_addr(s, sv);
    pure_connect(sim_ctx(s, c), &to, pure_ctx_public_key(sim_ctx(s, sv)), "d", NULL, &cl, 0);
    pump();
    pure_link_stats a, z; memset(&a, 0, sizeof a);
    for (int t = 1; t <= 12; t++) {
        sim_run(s, NULL, NULL, (uint64_t)t * SIM_S);
        pure_link_stats_get(cl, &z);
        printf("t=%2d %5.1f Mbit cwnd %6llu inflight %6llu rtt %5.1f min %5.1f lost %llu rand %llu pto %llu paced %llu\n", t,
          (double)(z.bytes_sent - a.bytes_sent) * 8 / 1e6, (unsigned long long)z.cwnd, (unsigned long long)z.bytes_in_flight,
          z.rtt_ns / 1e6, z.rtt_min_ns / 1e6, (unsigned long long)(z.packets_lost - a.packets_lost), (unsigned long long)(z.random_losses - a.random_losses),
          (unsigned long long)(z.ptos - a.ptos), (unsigned long long)(z.paced_bursts - a.paced_bursts));
        a = z;
    }
    return 0;
}
