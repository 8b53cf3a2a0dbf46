/* SPDX-License-Identifier: MIT */
/* service_api_test: the calls a service needs besides send and receive, in the simulator:
 * receive backpressure (pure_link_pause_recv/resume_recv holds the peer to the credit it has,
 * and the paused link is not closed for the silence that follows), on_acked (ids acknowledged,
 * in order, never after on_closed, not called for a version 1 settings struct) and
 * pure_ctx_links (visits the links the application knows of; a visitor may abort them). */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "test.h"

#define MSG 1000

typedef struct app {
    sim *s;
    int cli, srv;
    pure_link *cl, *sl;
    uint64_t n, sent, eagain; /* client: messages to send, sent, PURE_EAGAIN seen */
    uint64_t received, bytes; /* server */
    uint64_t bad;             /* out-of-order or wrong messages, callbacks after on_closed */
    int pause_at_first;       /* server pauses on the first message */
    int cli_closed, srv_closed, accepted;
    uint64_t acks, last_acked; /* on_acked calls, the last id */
    int acked_after_close;
    uint8_t buf[MSG];
} app;

static void fill(app *a)
{
    while (a->cl && a->sent < a->n) {
        memcpy(a->buf, &a->sent, sizeof a->sent);
        int64_t rc = pure_link_send(a->cl, a->buf, MSG);
        if (rc == PURE_EAGAIN) {
            a->eagain++;
            return;
        }
        if (rc < 0 || (uint64_t)rc != a->sent) {
            a->bad++;
            return;
        }
        a->sent++;
    }
}

static int on_accept(pure_link *l, const char *svc, const uint8_t k[PURE_KEY_LEN], void *u)
{
    app *a = u;
    a->sl = l;
    a->accepted++;
    pure_link_set_user(l, a);
    return 0;
}
static void on_established(pure_link *l, void *u)
{
    fill(u);
}
static void on_writable(pure_link *l, void *u)
{
    fill(u);
}
static void on_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    app *a = u;
    uint64_t id;
    memcpy(&id, d, sizeof id);
    if (n != MSG || id != a->received || a->srv_closed)
        a->bad++;
    a->received++;
    a->bytes += n;
    if (a->pause_at_first && a->received == 1)
        CHECK_EQ(pure_link_pause_recv(l), 0);
}
static void on_closed(pure_link *l, void *u, const pure_close_info *info)
{
    app *a = u;
    /* a client's link is the one whose peer is the server */
    if (memcmp(pure_link_peer_key(l), pure_ctx_public_key(sim_ctx(a->s, a->srv)), PURE_KEY_LEN) ==
        0) {
        a->cli_closed++;
        if (l == a->cl)
            a->cl = NULL;
    } else {
        a->srv_closed++;
        if (l == a->sl)
            a->sl = NULL;
    }
}
static void on_acked(pure_link *l, void *u, uint64_t through)
{
    app *a = u;
    if (l != a->cl || a->cli_closed)
        a->acked_after_close++;
    if (a->acks && through <= a->last_acked)
        a->bad++; /* must grow */
    if (through >= a->sent)
        a->bad++; /* acknowledges a message never sent */
    a->acks++;
    a->last_acked = through;
}

static const pure_callbacks cbs = {
    .on_accept = on_accept,
    .on_established = on_established,
    .on_message = on_message,
    .on_writable = on_writable,
    .on_closed = on_closed,
    .on_acked = on_acked,
};

static app *app_new(uint64_t seed, uint64_t n, uint32_t settings_version)
{
    app *a = calloc(1, sizeof *a);
    a->s = sim_new(seed);
    a->n = n;
    pure_settings st;
    pure_settings_default(&st);
    st.version = settings_version;
    st.callbacks = &cbs;
    st.user = a;
    st.allow_any = 1;
    st.idle_timeout = 2 * SIM_S;
    a->cli = sim_add(a->s, &st);
    a->srv = sim_add(a->s, &st);
    CHECK_EQ(pure_ctx_add_service(sim_ctx(a->s, a->srv), "svc"), 0);
    pure_addr to = sim_addr(a->s, a->srv);
    CHECK_EQ(pure_connect(sim_ctx(a->s, a->cli), &to, pure_ctx_public_key(sim_ctx(a->s, a->srv)),
                          "svc", a, &a->cl, sim_now(a->s)),
             0);
    fill(a);
    return a;
}

static void app_free(app *a)
{
    sim_free(a->s);
    free(a);
}

static int all_received(void *arg)
{
    app *a = arg;
    return a->received == a->n;
}

/* The server pauses at the first message: it gets at most its receive window, the client sees
 * PURE_EAGAIN, nobody closes through 5 idle timeouts of silence; after resume everything
 * arrives, in order. */
static void test_pause_resume(void)
{
    app *a = app_new(11, 8000, PURE_SETTINGS_VERSION);
    a->pause_at_first = 1;
    sim_run(a->s, NULL, NULL, 10 * SIM_S);
    CHECK(a->sl != NULL);
    CHECK(a->sl && pure_link_recv_is_paused(a->sl));
    pure_link_stats ls;
    if (a->sl)
        pure_link_stats_get(a->sl, &ls);
    /* stream bytes are 4 + MSG per message, after a 4-byte preamble */
    CHECK(a->bytes > 0);
    CHECK(a->sl && (a->received * (MSG + 4)) <= ls.recv_window + MSG + 4);
    CHECK(a->received < a->n);
    CHECK(a->eagain > 0);
    CHECK_EQ(a->cli_closed + a->srv_closed, 0);
    uint64_t held = a->received;
    sim_run(a->s, NULL, NULL, 20 * SIM_S); /* still paused: nothing more, and no close */
    CHECK_EQ(a->received, held);
    CHECK_EQ(a->cli_closed + a->srv_closed, 0);
    if (a->sl) {
        CHECK_EQ(pure_link_resume_recv(a->sl), 0);
        CHECK(!pure_link_recv_is_paused(a->sl));
    }
    a->pause_at_first = 0;
    CHECK(sim_run(a->s, all_received, a, 200 * SIM_S));
    CHECK_EQ(a->received, a->n);
    CHECK_EQ(a->bad, 0);
    CHECK_EQ(a->cli_closed + a->srv_closed, 0);
    CHECK_EQ(pure_link_pause_recv(NULL), PURE_EINVAL);
    app_free(a);
}

static int all_acked(void *arg)
{
    app *a = arg;
    return a->sent == a->n && a->acks && a->last_acked + 1 == a->n;
}

/* on_acked reports growing ids up to the last one sent, then the link closes gracefully and
 * no on_acked follows on_closed. */
static void test_on_acked(void)
{
    app *a = app_new(12, 3000, PURE_SETTINGS_VERSION);
    CHECK(sim_run(a->s, all_acked, a, 100 * SIM_S));
    CHECK_EQ(a->last_acked + 1, a->n);
    CHECK(a->acks > 1);
    CHECK(a->acks <= a->n);
    CHECK(a->cl && pure_link_backlog(a->cl) == 0);
    CHECK_EQ(a->bad, 0);
    if (a->cl)
        CHECK_EQ(pure_link_close(a->cl, 0, "done"), 0);
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 10 * SIM_S);
    CHECK_EQ(a->cli_closed, 1);
    CHECK_EQ(a->acked_after_close, 0);
    app_free(a);

    /* a program built against 0.1's pure.h (settings version 1, no on_acked in its callbacks
     * struct) never has on_acked called */
    a = app_new(13, 200, 1);
    CHECK(sim_run(a->s, all_received, a, 100 * SIM_S));
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 2 * SIM_S);
    CHECK_EQ(a->acks, 0);
    CHECK_EQ(a->received, 200);
    app_free(a);
}

typedef struct walk {
    uint64_t seen, aborted;
    pure_ctx *ctx;
    int connect_rc;
    int abort;
} walk;

static int visit(pure_link *l, void *user, void *arg)
{
    walk *w = arg;
    w->seen++;
    if (w->ctx) {
        pure_addr to = *pure_link_peer_addr(l);
        pure_link *nl;
        w->connect_rc = pure_connect(w->ctx, &to, pure_link_peer_key(l), "svc", NULL, &nl, 0);
        w->ctx = NULL;
    }
    if (w->abort && pure_link_abort(l, PURE_CLOSE_APP, "walk") == 0)
        w->aborted++;
    return 0;
}

static int stop_at_two(pure_link *l, void *user, void *arg)
{
    return ++*(uint64_t *)arg == 2;
}

#define LINKS 300

static int all_accepted(void *arg)
{
    return ((app *)arg)->accepted == LINKS;
}

/* pure_ctx_links visits every live link of both sides; a visitor may abort them all (each
 * reported once by on_closed, none visited again) but may not connect. */
static void test_ctx_links(void)
{
    app *a = app_new(14, 0, PURE_SETTINGS_VERSION);
    pure_ctx *cctx = sim_ctx(a->s, a->cli), *sctx = sim_ctx(a->s, a->srv);
    pure_addr to = sim_addr(a->s, a->srv);
    /* enough links that the link table has clusters: ending a link inside the walk must not
     * shift an unvisited one behind it */
    for (int i = 0; i < LINKS - 1; i++) {
        pure_link *l;
        CHECK_EQ(pure_connect(cctx, &to, pure_ctx_public_key(sctx), "svc", a, &l, sim_now(a->s)),
                 0);
        pure_link_send(l, "x", 1); /* the handshake completes with data */
    }
    pure_link_send(a->cl, "x", 1);
    walk w = {0};
    CHECK_EQ(pure_ctx_links(cctx, visit, &w), LINKS); /* handshakes still running count too */
    CHECK(sim_run(a->s, all_accepted, a, 20 * SIM_S));
    uint64_t k = 0;
    CHECK_EQ(pure_ctx_links(sctx, stop_at_two, &k), 2);
    memset(&w, 0, sizeof w);
    w.ctx = cctx;
    w.abort = 1;
    CHECK_EQ(pure_ctx_links(cctx, visit, &w), LINKS);
    CHECK_EQ(w.connect_rc, PURE_ESTATE);
    CHECK_EQ(w.aborted, LINKS);
    CHECK_EQ(a->cli_closed, LINKS);
    memset(&w, 0, sizeof w);
    CHECK_EQ(pure_ctx_links(cctx, visit, &w), 0);
    sim_run(a->s, NULL, NULL, sim_now(a->s) + 5 * SIM_S);
    CHECK_EQ(a->srv_closed, LINKS); /* the server heard every abort */
    CHECK_EQ(pure_ctx_links(sctx, visit, &w), 0);
    pure_ctx_stats cs;
    pure_ctx_stats_get(cctx, &cs);
    CHECK_EQ(cs.links, 0);
    CHECK_EQ(pure_ctx_links(NULL, visit, &w), 0);
    app_free(a);
}

/* Links still in their handshake close at once when aborted (no CLOSE to send): the walk
 * must still visit every one of them exactly once. */
static void test_ctx_links_abort_in_handshake(void)
{
    app *a = app_new(15, 0, PURE_SETTINGS_VERSION);
    pure_ctx *cctx = sim_ctx(a->s, a->cli), *sctx = sim_ctx(a->s, a->srv);
    pure_addr to = sim_addr(a->s, a->srv);
    for (int i = 0; i < LINKS - 1; i++) {
        pure_link *l;
        CHECK_EQ(pure_connect(cctx, &to, pure_ctx_public_key(sctx), "svc", a, &l, sim_now(a->s)),
                 0);
    }
    walk w = {.abort = 1};
    CHECK_EQ(pure_ctx_links(cctx, visit, &w), LINKS);
    CHECK_EQ(w.aborted, LINKS);
    CHECK_EQ(a->cli_closed, LINKS);
    pure_ctx_stats cs;
    pure_ctx_stats_get(cctx, &cs);
    CHECK_EQ(cs.links, 0);
    app_free(a);
}

int main(void)
{
    RUN(test_pause_resume);
    RUN(test_on_acked);
    RUN(test_ctx_links);
    RUN(test_ctx_links_abort_in_handshake);
    return pure_test_finish();
}
