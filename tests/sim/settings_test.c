/* SPDX-License-Identifier: MIT */
/* settings_test: every setting at the edges pure_ctx_new accepts, on both sides, carries a
 * transfer over a lossy, reordering path exactly (sim_app: every message once, in order, intact)
 * with no error on either side. A value the library takes must work, however odd: the smallest
 * rekey limit let a link close itself under load (aead_limits_test); this looks for the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_app.h"
#include "sim_wl.h"
#include "wire.h"
#include "test.h"

typedef struct edge {
    const char *name;
    void (*tweak)(pure_settings *s, int server);
    int service; /* also under the service workload (not: settings it cannot run under, as one
                    link only, no channels, or a year's idle timeout, which aborts need) */
} edge;

static void payload_min(pure_settings *s, int server)
{
    (void)server;
    s->max_udp_payload = PURE_MIN_UDP_PAYLOAD;
}
static void windows_min(pure_settings *s, int server)
{
    (void)server;
    s->recv_window = s->recv_window_max = 4096;
    s->send_backlog = 4096;
}
static void send_queue_zero(pure_settings *s, int server)
{
    (void)server;
    s->send_queue = 0;
}
static void ack_every_one(pure_settings *s, int server)
{
    (void)server;
    s->ack_every = 1;
}
static void ack_every_max(pure_settings *s, int server)
{
    (void)server;
    s->ack_every = UINT32_MAX;
}
static void ack_delay_zero(pure_settings *s, int server)
{
    (void)server;
    s->max_ack_delay = 0;
}
static void ack_delay_max(pure_settings *s, int server)
{
    (void)server;
    s->max_ack_delay = PURE_MAX_ACK_DELAY_MAX;
}
static void newreno(pure_settings *s, int server)
{
    (void)server;
    s->congestion = PURE_CC_NEWRENO;
}
static void rekey_min(pure_settings *s, int server)
{
    (void)server;
    s->rekey_after_packets = PURE_REKEY_MIN_PACKETS;
}
static void rekey_time_min(pure_settings *s, int server)
{
    (void)server;
    s->rekey_after_time = 1; /* a new key as soon as there is data to send */
}
static void timeouts_max(pure_settings *s, int server)
{
    (void)server;
    s->idle_timeout = s->keepalive = s->handshake_timeout = PURE_TIMEOUT_MAX;
    s->rekey_after_time = PURE_TIMEOUT_MAX;
}
static void keepalive_min(pure_settings *s, int server)
{
    (void)server;
    s->keepalive = 1;
}
static void receive_memory_min(pure_settings *s, int server)
{
    (void)server;
    s->max_message_size = 65536;
    s->max_receive_memory = 65536;
}
static void one_link(pure_settings *s, int server)
{
    if (server)
        s->max_links = 1;
}
static void index_bits_max(pure_settings *s, int server)
{
    if (!server)
        return;
    s->index_top_bits = PURE_INDEX_TOP_BITS_MAX;
    s->index_top = (1u << PURE_INDEX_TOP_BITS_MAX) - 1;
    s->server_id_bits = 16 - PURE_INDEX_TOP_BITS_MAX;
    s->server_id = (1u << s->server_id_bits) - 1;
}
static void handshake_load_zero(pure_settings *s, int server)
{
    if (server)
        s->handshake_load = 0; /* a cookie for every handshake */
}
static void failed_opens_one(pure_settings *s, int server)
{
    (void)server;
    s->max_failed_opens = 1;
}

static void payload_max(pure_settings *s, int server)
{
    (void)server;
    s->max_udp_payload = PURE_MAX_UDP_PAYLOAD; /* the path search finds what the path takes */
}
static void sizes_max(pure_settings *s, int server)
{
    (void)server;
    s->send_backlog = s->send_queue = UINT64_MAX;
    s->recv_window = s->recv_window_max = 1ull << 32;
    s->max_receive_memory = UINT64_MAX;
}
static void message_size_max(pure_settings *s, int server)
{
    (void)server;
    s->max_message_size = 1u << 30;
    s->max_receive_memory = 1u << 30; /* at least max_message_size */
}
static void counts_max(pure_settings *s, int server)
{
    (void)server;
    s->max_links = s->max_half_open = s->half_open_per_addr = s->inits_per_addr = UINT32_MAX;
    s->handshake_load = UINT32_MAX;
    s->max_failed_opens = UINT64_MAX;
    s->max_channels = PURE_MAX_CHANNELS;
    s->max_datagram_size = UINT32_MAX;
}
static void counts_min(pure_settings *s, int server)
{
    (void)server;
    s->max_half_open = s->half_open_per_addr = s->inits_per_addr = 1;
    s->max_channels = 0;
    s->max_datagram_size = 0;
}

static void ack_every_one_rekey_min(pure_settings *s, int server)
{
    (void)server;
    s->ack_every = 1;
    s->rekey_after_packets = PURE_REKEY_MIN_PACKETS;
}

static void datagrams_tiny(pure_settings *s, int server)
{
    (void)server;
    s->max_datagram_size = 1;
    s->max_channels = 4; /* the least the workload's links use */
}

static const edge edges[] = {
    {"max_datagram_size 1, max_channels 4", datagrams_tiny, 1},
    {"ack_every 1 and rekey_after_packets at its least", ack_every_one_rekey_min, 1},
    {"max_udp_payload at its most", payload_max, 1},
    {"sizes and windows at their most", sizes_max, 1},
    {"max_message_size at its most", message_size_max, 0}, /* the workload checks its own */
    {"counts at their most", counts_max, 1},
    {"half-open and INIT limits 1, no channels or datagrams", counts_min, 0},
    {"max_udp_payload at its least", payload_min, 1},
    {"windows and backlog at their least", windows_min, 1},
    {"send_queue 0", send_queue_zero, 1},
    {"ack_every 1", ack_every_one, 1},
    {"ack_every UINT32_MAX", ack_every_max, 1},
    {"max_ack_delay 0", ack_delay_zero, 1},
    {"max_ack_delay at its most", ack_delay_max, 1},
    {"NewReno", newreno, 1},
    {"rekey_after_packets at its least", rekey_min, 1},
    {"rekey_after_time 1 ns", rekey_time_min, 1},
    {"timeouts and rekey_after_time at their most", timeouts_max, 0},
    {"keepalive 1 ns", keepalive_min, 1},
    {"max_receive_memory at its least", receive_memory_min, 1},
    {"max_links 1", one_link, 0},
    {"index and server id bits at their most", index_bits_max, 1},
    {"handshake_load 0", handshake_load_zero, 1},
    {"max_failed_opens 1", failed_opens_one, 1},
};

static void test_edges(void)
{
    sim_path p = {.delay = 10 * SIM_MS,
                  .bandwidth = 100000000ull,
                  .queue = 1 << 20,
                  .loss = 0.02,
                  .reorder = 0.03,
                  .reorder_delay = 5 * SIM_MS,
                  .duplicate = 0.01};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        int ok = 0;
        for (uint64_t seed = 1; seed <= 3; seed++) {
            sim_app *a = sim_app_new(seed, 400, 0, 60000, edges[e].tweak);
            sim_set_path(a->s, a->cli, a->srv, &p);
            sim_set_path(a->s, a->srv, a->cli, &p);
            CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
            sim_app_run(a, 300 * SIM_S);
            int good = sim_app_ok(a) && !a->client_error && !a->server_error;
            if (!good)
                fprintf(stderr,
                        "%s, seed %llu: received %llu of %llu, bad %llu, closed %d/%d (%s / %s)\n",
                        edges[e].name, (unsigned long long)seed, (unsigned long long)a->received,
                        (unsigned long long)a->n, (unsigned long long)a->bad, a->client_closed,
                        a->server_closed, pure_strerror(a->client_error),
                        pure_strerror(a->server_error));
            ok += good;
            if (good && seed == 1)
                printf("%s: %.2f s\n", edges[e].name,
                       (double)(a->finish_time - a->start_time) / 1e9);
            sim_app_free(a);
        }
        CHECK_EQ(ok, 3);
    }
}

/* The service workload these tests run (sim_wl, as the soak runs it): 40 links, every message
 * echoed, on channels 0..4 with datagrams beside, closes and aborts on both sides, over a LAN with
 * 3% loss, reordering and duplication, keys changing every 1,024 packets unless tweak says
 * otherwise. */
static wl_cfg service_load(uint64_t seed, void (*tweak)(pure_settings *, int))
{
    wl_cfg c = {.seed = seed,
                .links = 40,
                .messages = 8,
                .max_size = 60000,
                .max_message_size = 65536,
                .echo = 1,
                .path = {.delay = 2 * SIM_MS,
                         .bandwidth = 1000000000ull,
                         .queue = 4 << 20,
                         .loss = 0.03,
                         .reorder = 0.05,
                         .reorder_delay = 3 * SIM_MS,
                         .duplicate = 0.02},
                .channels = 4,
                .datagrams = 1,
                .rekey_packets = 1024,
                .client_close = 0.1,
                .client_abort = 0.1,
                .server_close = 0.1,
                .server_abort = 0.1,
                .tweak = tweak};
    return c;
}

/* The same edges under the service workload (service_load): every invariant wl_check knows
 * holds, and both allocators are back to zero. */
static void test_edges_under_service_load(void)
{
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        if (!edges[e].service)
            continue;
        for (uint64_t seed = 1; seed <= 2; seed++) {
            wl_cfg c = service_load(seed, edges[e].tweak);
            wl *w = wl_new(&c);
            wl_start(w);
            int done = wl_run(w, 600 * SIM_S);
            if (!done)
                fprintf(stderr, "%s, seed %llu: links still open after 600 s\n", edges[e].name,
                        (unsigned long long)seed);
            CHECK(done);
            CHECK_EQ(wl_check(w, edges[e].name), 0);
            if (seed == 1)
                printf("%s: %llu messages delivered, done at %.1f s\n", edges[e].name,
                       (unsigned long long)wl_delivered(w), (double)wl_last_client_close(w) / 1e9);
            CHECK_EQ(wl_free(w), 0);
        }
    }
}

/* pure_ctx_set_max_in_flight at its edges (1 byte: every link is over its share; UINT64_MAX),
 * on both contexts, under the transfer and under the service workload. */
static void test_max_in_flight_edges(void)
{
    static const uint64_t limits[] = {1, 1500, UINT64_MAX};
    sim_path p = service_load(1, NULL).path;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        sim_app *a = sim_app_new(1, 400, 0, 60000, NULL);
        sim_set_path(a->s, a->cli, a->srv, &p);
        sim_set_path(a->s, a->srv, a->cli, &p);
        pure_ctx_set_max_in_flight(sim_ctx(a->s, a->cli), limits[i]);
        pure_ctx_set_max_in_flight(sim_ctx(a->s, a->srv), limits[i]);
        CHECK_EQ(sim_app_connect(a, NULL, NULL), 0);
        sim_app_run(a, 300 * SIM_S);
        CHECK(sim_app_ok(a) && !a->client_error && !a->server_error);
        printf("max_in_flight %llu: transfer %.2f s", (unsigned long long)limits[i],
               (double)(a->finish_time - a->start_time) / 1e9);
        sim_app_free(a);
        wl_cfg c = service_load(1, NULL);
        wl *w = wl_new(&c);
        pure_ctx_set_max_in_flight(sim_ctx(wl_sim(w), wl_client(w)), limits[i]);
        pure_ctx_set_max_in_flight(sim_ctx(wl_sim(w), wl_server(w)), limits[i]);
        wl_start(w);
        CHECK(wl_run(w, 600 * SIM_S));
        CHECK_EQ(wl_check(w, "max_in_flight"), 0);
        printf(", service workload done at %.1f s\n", (double)wl_last_client_close(w) / 1e9);
        CHECK_EQ(wl_free(w), 0);
    }
}

int main(void)
{
    RUN(test_edges);
    RUN(test_edges_under_service_load);
    RUN(test_max_in_flight_edges);
    return pure_test_finish();
}
