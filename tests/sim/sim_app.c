/* SPDX-License-Identifier: MIT */
#include "sim_app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t gen(const sim_app *a, uint64_t i, uint8_t *out)
{
    uint64_t h = sim_mix(a->seed * 1000003 + i);
    size_t len = a->min_size + (size_t)(h % (a->max_size - a->min_size + 1));
    for (size_t j = 0; j < len; j++)
        out[j] = (uint8_t)(h + j * 131 + (j >> 8));
    return len;
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h ^ n;
}

static void pump(sim_app *a)
{
    while (a->cl && a->sent < a->n) {
        size_t len = gen(a, a->sent, a->buf);
        int64_t rc = pure_link_send(a->cl, a->buf, len);
        if (rc == PURE_EAGAIN)
            return;
        if (rc == PURE_ENOMEM) { /* nothing was sent: the test may call sim_app_pump again */
            a->send_nomem++;
            return;
        }
        if (rc < 0) {
            fprintf(stderr, "send failed: %s\n", pure_strerror((int)rc));
            return;
        }
        if ((uint64_t)rc != a->sent)
            a->bad++;
        a->send_hash = fnv(a->send_hash, a->buf, len);
        a->sent++;
    }
    if (a->cl && a->sent == a->n) {
        pure_link_finish(a->cl);
        a->cl = a->cl; /* finished: nothing more to pump */
        a->n = a->sent;
    }
}

static int on_accept(pure_link *link, const char *service, const uint8_t *key, void *user)
{
    sim_app *a = user;
    a->sl = link;
    a->accepted = 1;
    pure_link_set_user(link, a);
    return 0;
}

static void on_established(pure_link *link, void *user)
{
    sim_app *a = user;
    a->established = 1;
}

static void on_message(pure_link *link, void *user, const uint8_t *data, size_t len)
{
    sim_app *a = user;
    if (link != a->sl)
        return;
    uint8_t *want = a->buf + (1u << 24) + 64;
    size_t wl = gen(a, a->received, want);
    if (wl != len || memcmp(want, data, len) != 0)
        a->bad++;
    a->recv_hash = fnv(a->recv_hash, data, len);
    a->received++;
}

static void on_writable(pure_link *link, void *user)
{
    sim_app *a = user;
    if (link == a->cl)
        pump(a);
}

static void on_peer_finished(pure_link *link, void *user)
{
    sim_app *a = user;
    if (link == a->sl) {
        a->finished = 1;
        a->finish_time = sim_now(a->s);
    }
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    sim_app *a = user;
    if (link == a->cl) {
        a->client_closed = 1;
        a->client_error = info->error;
        a->client_close = *info;
        a->cl = NULL;
    } else if (link == a->sl) {
        a->server_closed = 1;
        a->server_error = info->error;
        a->sl = NULL;
    }
}

static const pure_callbacks callbacks = {
    .on_accept = on_accept,
    .on_established = on_established,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_peer_finished = on_peer_finished,
    .on_closed = on_closed,
};

sim_app *sim_app_new(uint64_t seed, uint64_t n, uint32_t min_size, uint32_t max_size,
                     void (*tweak)(pure_settings *s, int server))
{
    sim_app *a = calloc(1, sizeof *a);
    a->s = sim_new(seed);
    a->seed = seed;
    a->n = n;
    a->min_size = min_size;
    a->max_size = max_size;
    a->send_hash = a->recv_hash = 0xcbf29ce484222325ull;
    a->buf = malloc(2 * (1u << 24) + 128);
    for (int server = 0; server < 2; server++) {
        pure_settings st;
        pure_settings_default(&st);
        st.callbacks = &callbacks;
        st.user = a;
        st.allow_any = 1;
        if (tweak)
            tweak(&st, server);
        int ep = sim_add(a->s, &st);
        if (server) {
            a->srv = ep;
            pure_ctx_add_service(sim_ctx(a->s, ep), "drain");
        } else {
            a->cli = ep;
        }
    }
    return a;
}

void sim_app_free(sim_app *a)
{
    sim_free(a->s);
    free(a->buf);
    free(a);
}

int sim_app_connect(sim_app *a, const uint8_t *key, const char *service)
{
    pure_addr to = sim_addr(a->s, a->srv);
    const uint8_t *k = key ? key : pure_ctx_public_key(sim_ctx(a->s, a->srv));
    a->start_time = sim_now(a->s);
    int rc = pure_connect(sim_ctx(a->s, a->cli), &to, k, service ? service : "drain", a, &a->cl,
                          sim_now(a->s));
    if (rc == 0)
        pump(a);
    return rc;
}

static int done(void *arg)
{
    sim_app *a = arg;
    return a->finished || a->client_closed || a->server_closed;
}

void sim_app_pump(sim_app *a)
{
    pump(a);
}

int sim_app_run(sim_app *a, uint64_t until)
{
    return sim_run(a->s, done, a, until);
}

int sim_app_ok(const sim_app *a)
{
    return a->bad == 0 && a->received == a->n && a->sent == a->n && a->send_hash == a->recv_hash &&
           a->finished;
}
