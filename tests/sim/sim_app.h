/* SPDX-License-Identifier: MIT */
/* sim_app.h: a message sender and a checking receiver on top of the simulator: the client sends
 * n messages whose sizes and bytes derive from a seed, the service checks each one in order
 * against what it must be, and both sides hash every body so a test can compare them. */
#ifndef PURE_SIM_APP_H
#define PURE_SIM_APP_H

#include "sim.h"

typedef struct sim_app {
    sim *s;
    int cli, srv;
    pure_link *cl, *sl;
    uint64_t n; /* messages to send */
    uint32_t min_size, max_size;
    uint64_t seed;
    uint64_t sent, received;
    uint64_t send_hash, recv_hash;
    uint64_t bad;        /* messages that arrived wrong or out of order */
    uint64_t send_nomem; /* sends refused with PURE_ENOMEM (tried again by sim_app_pump) */
    int established, accepted, finished, client_closed, server_closed;
    int client_error, server_error;
    pure_close_info client_close;
    uint64_t finish_time, start_time;
    uint8_t *buf;
} sim_app;

/* Creates a simulator with two endpoints (client 0, server 1, service "drain") and the app.
 * tweak (may be NULL) adjusts both settings before the contexts are made. */
sim_app *sim_app_new(uint64_t seed, uint64_t n, uint32_t min_size, uint32_t max_size,
                     void (*tweak)(pure_settings *s, int server));
void sim_app_free(sim_app *a);
/* Starts the link (to the server's real key, or `key` if non-NULL) for `service`. */
int sim_app_connect(sim_app *a, const uint8_t *key, const char *service);
/* Sends what the app has left to send now (as it does on on_writable): after a send refused
 * with PURE_ENOMEM, which no callback follows. */
void sim_app_pump(sim_app *a);
/* Runs until the receiver saw the end of the stream, either side closed, or `until`. */
int sim_app_run(sim_app *a, uint64_t until);
/* 1 if every message arrived exactly once, in order, intact, and the hashes agree. */
int sim_app_ok(const sim_app *a);

#endif
