/* SPDX-License-Identifier: MIT */
/* fastfail_test: a handshake that cannot succeed fails fast, with its own error, where the network
 * or the peer says so (docs/protocol.md, "Failing fast"): a REJECT (wrong key, PURE_EKEY) or junk
 * from the dialled address (PURE_ENOTPURE) after the hint's grace, which grows with the path; an
 * ICMP error (PURE_EUNREACH: at once when it quotes the INIT, after the grace when it quotes too
 * little, never when it quotes something else); a send this host refused, at once. And what must
 * not end a handshake or a link: a forged REJECT or junk datagram while the real responder
 * answers, REJECTs, junk or ICMP about another address, ICMP for an open link. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "test.h"
#include "wire.h"

typedef struct app {
    pure_link *link;
    int established, closes, messages;
    pure_close_info info;
    char reason[64];
    uint64_t closed_at;
} app;

typedef struct world {
    sim *s;
    int cli, srv;
    app c, sv;
    uint8_t init[512]; /* the client's last INIT, as the tap saw it */
    size_t init_len;
    int inits;
} world;

static world *W;
static uint64_t hs_timeout; /* the client's handshake_timeout if set */

static int on_accept(pure_link *l, const char *svc, const uint8_t *k, void *u)
{
    world *w = u;
    w->sv.link = l;
    pure_link_set_user(l, &w->sv);
    return 0;
}

static void on_established(pure_link *l, void *u)
{
    ((app *)u)->established = 1;
}

static void on_message(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    ((app *)u)->messages++;
}

static void on_closed(pure_link *l, void *u, const pure_close_info *info)
{
    app *a = u;
    a->closes++;
    a->info = *info;
    snprintf(a->reason, sizeof a->reason, "%s", info->reason ? info->reason : "");
    a->info.reason = NULL;
    a->closed_at = sim_now(W->s);
    a->link = NULL;
}

static const pure_callbacks cbs = {.on_accept = on_accept,
                                   .on_established = on_established,
                                   .on_message = on_message,
                                   .on_closed = on_closed};

static void tap(void *arg, int from, int to, const uint8_t *d, size_t n)
{
    world *w = arg;
    if (from == w->cli && n && d[0] == PURE_PKT_INIT && n <= sizeof w->init) {
        memcpy(w->init, d, n);
        w->init_len = n;
        w->inits++;
    }
}

static world *world_new(uint64_t seed)
{
    world *w = calloc(1, sizeof *w);
    W = w;
    w->s = sim_new(seed);
    pure_settings st;
    pure_settings_default(&st);
    st.callbacks = &cbs;
    st.user = w;
    st.allow_any = 1;
    if (hs_timeout)
        st.handshake_timeout = hs_timeout;
    w->cli = sim_add(w->s, &st);
    w->srv = sim_add(w->s, &st);
    CHECK_EQ(pure_ctx_add_service(sim_ctx(w->s, w->srv), "svc"), 0);
    sim_set_tap(w->s, tap, w);
    return w;
}

static void world_free(world *w)
{
    sim_free(w->s);
    free(w);
}

/* Connects the client to `to` (NULL: the server) with `key` (NULL: the server's). */
static void connect_to(world *w, const pure_addr *to, const uint8_t *key)
{
    pure_addr srv = sim_addr(w->s, w->srv);
    CHECK_EQ(pure_connect(sim_ctx(w->s, w->cli), to ? to : &srv,
                          key ? key : pure_ctx_public_key(sim_ctx(w->s, w->srv)), "svc", &w->c,
                          &w->c.link, sim_now(w->s)),
             0);
}

/* Nothing the client sends reaches the server (the tap still sees it): the tests answer. */
static void blackhole(world *w)
{
    sim_path p = {.delay = 10 * SIM_MS, .blackhole_end = 1000 * SIM_S};
    sim_set_path(w->s, w->cli, w->srv, &p);
}

static void run_for(world *w, uint64_t ns)
{
    sim_run(w->s, NULL, NULL, sim_now(w->s) + ns);
}

/* A REJECT for the client's INIT (it echoes the INIT's mac1), as the responder makes it. */
static int read_reject(world *w, const pure_addr *from)
{
    uint8_t r[PURE_REJECT_PKT];
    r[0] = PURE_PKT_REJECT;
    memcpy(r + 1, w->init + 1, 4); /* the INIT's sender index is our link's */
    memcpy(r + 5, w->init + w->init_len - 2 * PURE_MAC_LEN, PURE_MAC_LEN);
    return pure_ctx_read(sim_ctx(w->s, w->cli), from, r, sizeof r, sim_now(w->s));
}

static int read_junk(world *w, const pure_addr *from)
{
    uint8_t j[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
    return pure_ctx_read(sim_ctx(w->s, w->cli), from, j, sizeof j - 1, sim_now(w->s));
}

/* The wrong key: the responder REJECTs the INIT; the client sends it again every quarter of the
 * grace (not at once: a forged hint must not make it send), each REJECTed, and fails with PURE_EKEY
 * when the grace runs out (20 ms paths: the REJECT at 20 ms, the end at 220 ms), not at the 10 s
 * handshake timeout. */
static void test_wrong_key_fails_after_grace(void)
{
    world *w = world_new(1);
    uint8_t wrong[32];
    memset(wrong, 9, sizeof wrong);
    connect_to(w, NULL, wrong);
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EKEY);
    CHECK_EQ(w->inits, 4); /* 0, then 70, 120, 170 ms (the REJECT came at 20 ms) */
    CHECK_EQ(w->c.closed_at, 20 * SIM_MS + PURE_HS_HINT_GRACE_MIN);
    printf("wrong key: %s after %.1f ms\n", pure_strerror(w->c.info.error),
           (double)w->c.closed_at / 1e6);
    world_free(w);
}

/* One REJECT and then nothing: PURE_EKEY after the grace; the INIT goes again a quarter of the
 * grace later, not at once (attack_netns: forged hints must not make the client send). */
static void test_reject_then_grace(void)
{
    world *w = world_new(2);
    pure_addr srv = sim_addr(w->s, w->srv);
    blackhole(w);
    connect_to(w, NULL, NULL);
    run_for(w, 5 * SIM_MS); /* the INIT went (into the void) */
    CHECK_EQ(w->inits, 1);
    CHECK_EQ(read_reject(w, &srv), 0);
    uint64_t t = sim_now(w->s);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(w->inits, 1);             /* not at once */
    CHECK_EQ(read_reject(w, &srv), 0); /* more REJECTs change nothing */
    run_for(w, PURE_HS_HINT_GRACE_MIN / 4);
    CHECK_EQ(w->inits, 2); /* the timer's */
    CHECK_EQ(w->c.closes, 0);
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EKEY);
    CHECK_EQ(w->c.closed_at, t + PURE_HS_HINT_GRACE_MIN);
    world_free(w);
}

/* A handshake_timeout shorter than the grace still ends the handshake on time, with the hint's
 * error. */
static void test_hint_within_short_timeout(void)
{
    hs_timeout = 100 * SIM_MS;
    world *w = world_new(11);
    hs_timeout = 0;
    pure_addr srv = sim_addr(w->s, w->srv);
    blackhole(w);
    connect_to(w, NULL, NULL);
    run_for(w, 5 * SIM_MS);
    CHECK_EQ(read_reject(w, &srv), 0);
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EKEY);
    CHECK_EQ(w->c.closed_at, 100 * SIM_MS);
    world_free(w);
}

/* A far responder (a 300 ms one-way path) with the wrong key: the grace is twice the time from
 * the INIT to the REJECT, so the answer to a resend could still have come. */
static void test_grace_scales_with_path(void)
{
    world *w = world_new(10);
    sim_path p = {.delay = 300 * SIM_MS};
    sim_set_path(w->s, w->cli, w->srv, &p);
    sim_set_path(w->s, w->srv, w->cli, &p);
    uint8_t wrong[32];
    memset(wrong, 5, sizeof wrong);
    connect_to(w, NULL, wrong);
    run_for(w, 5 * SIM_S);
    CHECK_EQ(w->c.info.error, PURE_EKEY);
    CHECK_EQ(w->c.closed_at, 600 * SIM_MS + 1200 * SIM_MS);
    world_free(w);
}

/* A forged REJECT (someone who saw the INIT), sent twice at once, before the real RESP: the
 * resend goes, the copy does not count as a second REJECT, the RESP arrives and the link opens. */
static void test_forged_reject_loses_to_resp(void)
{
    world *w = world_new(3);
    pure_addr srv = sim_addr(w->s, w->srv);
    connect_to(w, NULL, NULL);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(read_reject(w, &srv), 0);
    CHECK_EQ(read_reject(w, &srv), 0); /* the same hint again: not a second one */
    run_for(w, 5 * SIM_S);
    CHECK(w->c.established);
    CHECK_EQ(w->c.closes, 0);
    CHECK(w->c.link != NULL);
    if (w->c.link)
        CHECK(pure_link_send(w->c.link, "x", 1) >= 0);
    run_for(w, 1 * SIM_S);
    CHECK_EQ(w->sv.messages, 1);
    world_free(w);
}

/* A REJECT from another address than the one dialled is dropped (counted), whatever it echoes. */
static void test_reject_from_elsewhere_ignored(void)
{
    world *w = world_new(4);
    pure_addr other = sim_addr(w->s, w->srv);
    other.bytes[3] = 77;
    blackhole(w);
    connect_to(w, NULL, NULL);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(read_reject(w, &other), PURE_ECRYPTO);
    CHECK_EQ(read_reject(w, &other), PURE_ECRYPTO);
    run_for(w, 5 * SIM_S);
    CHECK_EQ(w->c.closes, 0); /* still trying: the 10 s timeout is not spent */
    CHECK(w->inits >= 2);
    run_for(w, 10 * SIM_S);
    CHECK_EQ(w->c.info.error, PURE_ETIMEDOUT);
    world_free(w);
}

/* Something not Pure answers at the address: the handshake ends with PURE_ENOTPURE after the
 * grace; junk from elsewhere changes nothing. */
static void test_junk_from_dialled_address(void)
{
    world *w = world_new(5);
    pure_addr nowhere = sim_addr(w->s, w->srv), other = nowhere;
    blackhole(w); /* the "UDP service" at the server's address is this test */
    other.bytes[3] = 98;
    connect_to(w, &nowhere, NULL);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(read_junk(w, &other), PURE_EPROTO);
    CHECK_EQ(read_junk(w, &other), PURE_EPROTO);
    CHECK_EQ(w->inits, 1);
    uint64_t t = sim_now(w->s);
    CHECK_EQ(read_junk(w, &nowhere), PURE_EPROTO); /* a hint: the INIT goes again, by the timer */
    run_for(w, PURE_HS_HINT_GRACE_MIN / 4 + 1 * SIM_MS);
    CHECK_EQ(w->inits, 2);
    CHECK_EQ(read_junk(w, &nowhere), PURE_EPROTO); /* its answer to the resend */
    CHECK_EQ(w->c.closes, 0);
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_ENOTPURE);
    CHECK_EQ(w->c.closed_at, t + PURE_HS_HINT_GRACE_MIN);
    /* every sort of junk counts: a wrong length for a known type, an empty datagram */
    static const uint8_t shapes[][3] = {{PURE_PKT_RESP, 1, 2},
                                        {PURE_PKT_REJECT, 0, 0},
                                        {PURE_PKT_COOKIE, 0, 0},
                                        {PURE_PKT_DATA0, 0, 0}};
    for (size_t i = 0; i <= sizeof shapes / sizeof shapes[0]; i++) {
        connect_to(w, &nowhere, NULL);
        run_for(w, 1 * SIM_MS);
        uint8_t d[3];
        size_t n = i < 4 ? sizeof d : 0;
        if (n)
            memcpy(d, shapes[i], n);
        CHECK_EQ(pure_ctx_read(sim_ctx(w->s, w->cli), &nowhere, d, n, sim_now(w->s)), PURE_EPROTO);
        run_for(w, 2 * SIM_S);
        CHECK_EQ(w->c.closes, (int)i + 2);
        CHECK_EQ(w->c.info.error, PURE_ENOTPURE);
    }
    world_free(w);
}

/* One junk datagram from the server's address (spoofed) while the real server answers: the link
 * opens. Junk for an open link's address does nothing to it. */
static void test_single_junk_loses_to_resp(void)
{
    world *w = world_new(6);
    pure_addr srv = sim_addr(w->s, w->srv);
    connect_to(w, NULL, NULL);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(read_junk(w, &srv), PURE_EPROTO);
    run_for(w, 1 * SIM_S);
    CHECK(w->c.established);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(read_junk(w, &srv), PURE_EPROTO);
    run_for(w, 1 * SIM_S);
    CHECK_EQ(w->c.closes, 0);
    world_free(w);
}

/* Nothing listens at the address: the sim answers the INIT with an ICMP port unreachable quoting
 * it, and the handshake ends at once with PURE_EUNREACH, the kind and a text. */
static void test_icmp_port_unreachable(void)
{
    world *w = world_new(7);
    sim_set_icmp(w->s, 1);
    pure_addr nowhere = sim_addr(w->s, w->srv);
    nowhere.bytes[3] = 99;
    connect_to(w, &nowhere, NULL);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EUNREACH);
    CHECK_EQ(w->c.info.peer_code, PURE_UNREACH_PORT);
    CHECK(strcmp(w->c.reason, "port unreachable") == 0);
    CHECK_EQ(w->c.closed_at, 0);
    CHECK_EQ(w->inits, 0); /* the sim reports before it would transmit */
    world_free(w);
}

/* What an ICMP report's quote decides: another datagram's quote is ignored, the INIT's ends the
 * handshake at once, no quote (a router quoting only the UDP header) is a hint; a report for
 * another address concerns nothing; the local kinds end it at once. */
static void test_icmp_quotes(void)
{
    world *w = world_new(8);
    pure_ctx *cli = sim_ctx(w->s, w->cli);
    pure_addr srv = sim_addr(w->s, w->srv), other = srv;
    other.bytes[3] = 77;
    blackhole(w); /* nobody answers: only the reports below decide */
    connect_to(w, NULL, NULL);
    run_for(w, 1 * SIM_MS);
    uint8_t bad[64];
    memcpy(bad, w->init, sizeof bad);
    bad[20] ^= 1; /* within the ephemeral key */
    CHECK_EQ(pure_ctx_unreachable(cli, &srv, PURE_UNREACH_PORT, bad, sizeof bad, 1 * SIM_MS), 0);
    CHECK_EQ(pure_ctx_unreachable(cli, &other, PURE_UNREACH_PORT, w->init, w->init_len, SIM_MS), 0);
    CHECK_EQ(w->c.closes, 0);
    /* 36 bytes of it: not enough to prove it, a hint */
    CHECK_EQ(pure_ctx_unreachable(cli, &srv, PURE_UNREACH_HOST, w->init, 36, 1 * SIM_MS), 1);
    CHECK_EQ(w->c.closes, 0);
    run_for(w, 2 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_EUNREACH);
    CHECK_EQ(w->c.info.peer_code, PURE_UNREACH_HOST);
    CHECK_EQ(w->c.closed_at, 1 * SIM_MS + PURE_HS_HINT_GRACE_MIN);
    /* 37 bytes: proven */
    connect_to(w, NULL, NULL);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(pure_ctx_unreachable(cli, &srv, PURE_UNREACH_ADMIN, w->init, 37, sim_now(w->s)), 1);
    CHECK_EQ(w->c.closes, 2);
    CHECK_EQ(w->c.info.peer_code, PURE_UNREACH_ADMIN);
    /* this host refused the send: at once, no quote needed */
    connect_to(w, NULL, NULL);
    run_for(w, 1 * SIM_MS);
    CHECK_EQ(pure_ctx_unreachable(cli, &srv, PURE_UNREACH_FAMILY, NULL, 0, sim_now(w->s)), 1);
    CHECK_EQ(w->c.closes, 3);
    CHECK_EQ(w->c.info.error, PURE_EUNREACH);
    CHECK_EQ(w->c.info.peer_code, PURE_UNREACH_FAMILY);
    CHECK(strstr(w->c.reason, "address family") != NULL);
    world_free(w);
}

/* An open link is never ended by an ICMP report, even one quoting its packets, nor by junk: the
 * server dies with ICMP on, the link goes on and fails only at its idle timeout. */
static void test_icmp_spares_open_link(void)
{
    world *w = world_new(9);
    pure_ctx *cli = sim_ctx(w->s, w->cli);
    pure_addr srv = sim_addr(w->s, w->srv);
    connect_to(w, NULL, NULL);
    run_for(w, 1 * SIM_S);
    CHECK(w->c.established);
    CHECK_EQ(pure_ctx_unreachable(cli, &srv, PURE_UNREACH_PORT, NULL, 0, sim_now(w->s)), 0);
    CHECK_EQ(pure_ctx_unreachable(cli, &srv, PURE_UNREACH_LOCAL, NULL, 0, sim_now(w->s)), 0);
    CHECK(pure_link_send(w->c.link, "x", 1) >= 0);
    run_for(w, 1 * SIM_S);
    CHECK_EQ(w->sv.messages, 1);
    CHECK_EQ(w->c.closes, 0);
    sim_set_icmp(w->s, 1);
    sim_kill(w->s, w->srv);
    uint64_t t = sim_now(w->s);
    CHECK(pure_link_send(w->c.link, "y", 1) >= 0);
    run_for(w, 60 * SIM_S);
    CHECK_EQ(w->c.closes, 1);
    CHECK_EQ(w->c.info.error, PURE_ETIMEDOUT);
    CHECK(w->c.closed_at > t + 20 * SIM_S); /* the 30 s idle timeout, not an ICMP error */
    world_free(w);
}

int main(void)
{
    RUN(test_wrong_key_fails_after_grace);
    RUN(test_reject_then_grace);
    RUN(test_grace_scales_with_path);
    RUN(test_hint_within_short_timeout);
    RUN(test_forged_reject_loses_to_resp);
    RUN(test_reject_from_elsewhere_ignored);
    RUN(test_junk_from_dialled_address);
    RUN(test_single_junk_loses_to_resp);
    RUN(test_icmp_port_unreachable);
    RUN(test_icmp_quotes);
    RUN(test_icmp_spares_open_link);
    return pure_test_finish();
}
