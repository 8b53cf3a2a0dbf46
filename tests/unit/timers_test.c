/* SPDX-License-Identifier: MIT */
/* timers_test.c: timers.c, the one place a link's timers are set. A random run puts a real link
 * into random states (each state, random deadlines, packets in flight or not, busy or idle, a
 * graceful close, an incomplete message, keepalive on or off) and checks the deadline filed in
 * the context's heap against a model: the earliest of pure_timer_deadline over every timer
 * (the list pure_timers_update must agree with), each timer's deadline against what the list at
 * the top of timers.c says it is, and pure_timer_due exactly at and after its deadline. Then the
 * event hooks: CLOSING's resends each probe timeout and none past its end, the release timer
 * that waits out a link still receiving, and the close give-up moved by progress. */
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "lifecycle.h"
#include "pure.h"
#include "registry.h"
#include "test.h"
#include "timers.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
/* A random time: often unarmed, else within a few seconds of base. */
static uint64_t rtime(uint64_t base)
{
    return rnd() % 4 == 0 ? UINT64_MAX : base + rnd() % 4000000000ull;
}

static pure_ctx *new_ctx(uint64_t keepalive)
{
    pure_settings s;
    pure_settings_default(&s);
    memset(s.private_key, 0x42, PURE_KEY_LEN);
    s.crypto = &pure_crypto_null;
    s.keepalive = keepalive;
    pure_ctx *ctx = NULL;
    CHECK_EQ(pure_ctx_new(&s, &ctx), 0);
    return ctx;
}

/* An initiator's link to loopback, as pure_connect makes before its handshake starts. */
static pure_link *new_link(pure_ctx *ctx, uint64_t now)
{
    pure_addr peer = {.len = 4, .bytes = {127, 0, 0, 1}};
    pure_link *l = pure_link_alloc(ctx, &peer, 1, now, NULL);
    CHECK(l != NULL);
    return l;
}

static const enum pure_timer all[] = {
    PURE_TIMER_HS_RETRY,  PURE_TIMER_HS_EXPIRE, PURE_TIMER_IDLE,    PURE_TIMER_CLOSE_GIVE_UP,
    PURE_TIMER_RECOVERY,  PURE_TIMER_WATCH,     PURE_TIMER_ACK,     PURE_TIMER_KEEPALIVE,
    PURE_TIMER_PACE,      PURE_TIMER_RX_RETIRE, PURE_TIMER_RELEASE, PURE_TIMER_CLOSE_RESEND,
    PURE_TIMER_CLOSE_END,
};
#define N_TIMERS (sizeof all / sizeof all[0])

/* Puts the link in a random state with random timer fields. */
static void randomize(pure_link *l, pure_hs *hs, uint64_t now)
{
    static const uint8_t states[] = {PURE_LS_HANDSHAKE, PURE_LS_UNVALIDATED, PURE_LS_OPEN,
                                     PURE_LS_OPEN,      PURE_LS_OPEN,        PURE_LS_CLOSING};
    l->state = states[rnd() % sizeof states];
    l->hs = rnd() % 4 ? hs : NULL;
    hs->retry_at = rtime(now);
    l->created = now - rnd() % 20000000000ull;
    l->acktr.deadline = rtime(now);
    l->pace_at = rtime(now);
    l->release_at = rtime(now);
    l->close_requested = (uint8_t)(rnd() % 3 == 0);
    l->close_deadline = rtime(now);
    l->close_resend_at = rtime(now);
    l->ping_pending = (uint8_t)(rnd() % 4 == 0);
    l->last_recv = now - rnd() % 40000000000ull;
    l->last_sent = now - rnd() % 40000000000ull;
    l->last_msg_sent = now - rnd() % 40000000000ull;
    l->next_msg_id = rnd() % 3;
    l->rx_retire = (uint8_t)(rnd() % 3);
    if (l->b)
        l->b->rx_retire_at = rtime(now);
    l->rtb.loss_time = rnd() % 3 == 0 ? rtime(now) : UINT64_MAX;
    l->rtb.in_flight = (uint32_t)(rnd() % 3);
    l->rtb.last_eliciting_sent = now - rnd() % 2000000000ull;
    l->wait_start = now - rnd() % 40000000000ull;
    l->pto_count = (uint32_t)(rnd() % 5);
}

/* What the list at the top of timers.c says each timer is, written out independently. */
static uint64_t model(const pure_link *l, enum pure_timer t, uint64_t now)
{
    const pure_settings *s = &l->ctx->s;
    uint64_t M = UINT64_MAX;
    switch (l->state) {
    case PURE_LS_HANDSHAKE: return t == PURE_TIMER_HS_RETRY && l->hs ? l->hs->retry_at : M;
    case PURE_LS_UNVALIDATED:
        return t == PURE_TIMER_HS_EXPIRE ? l->created + s->handshake_timeout : M;
    case PURE_LS_CLOSING:
        return t == PURE_TIMER_CLOSE_RESEND ? l->close_resend_at
               : t == PURE_TIMER_CLOSE_END  ? l->close_deadline
                                            : M;
    case PURE_LS_OPEN: break;
    default: return M;
    }
    uint64_t last = l->last_recv > l->last_sent ? l->last_recv : l->last_sent;
    int flying = l->rtb.in_flight != 0;
    switch (t) {
    case PURE_TIMER_IDLE:
        return flying
                   ? (l->last_recv > l->wait_start ? l->last_recv : l->wait_start) + s->idle_timeout
                   : M;
    case PURE_TIMER_CLOSE_GIVE_UP: return l->close_requested ? l->close_deadline : M;
    case PURE_TIMER_RECOVERY: {
        if (l->rtb.loss_time != M)
            return l->rtb.loss_time;
        if (!flying)
            return M;
        uint64_t pto = pure_rtt_pto(&l->rtt, s->max_ack_delay);
        return l->rtb.last_eliciting_sent + (pto << l->pto_count);
    }
    case PURE_TIMER_WATCH: {
        int mid_message =
            l->b && (!pure_msgparse_at_boundary(&l->b->parse) || !pure_rob_empty(&l->b->rob));
        int expecting = l->close_requested || mid_message ||
                        (l->next_msg_id && now < l->last_msg_sent + s->idle_timeout);
        if (flying || l->ping_pending || !expecting)
            return M;
        uint64_t at = l->last_recv + s->idle_timeout / 2;
        if (!l->close_requested && l->b && !mid_message && at >= l->last_msg_sent + s->idle_timeout)
            return M;
        return at;
    }
    case PURE_TIMER_ACK: return l->acktr.deadline;
    case PURE_TIMER_KEEPALIVE:
        return s->keepalive && !flying && !l->ping_pending ? last + s->keepalive : M;
    case PURE_TIMER_PACE: return l->pace_at;
    case PURE_TIMER_RX_RETIRE:
        return l->rx_retire == PURE_RX_RETIRE_TIMED && l->b ? l->b->rx_retire_at : M;
    case PURE_TIMER_RELEASE: return l->release_at;
    default: return M;
    }
}

static void test_deadline_is_earliest_timer(void)
{
    for (int ka = 0; ka < 2; ka++) {
        pure_ctx *ctx = new_ctx(ka ? 15000000000ull : 0);
        uint64_t now = 1000000000000ull;
        pure_link *l = new_link(ctx, now);
        pure_hs hs;
        memset(&hs, 0, sizeof hs);
        uint8_t saved_state = l->state;
        for (int round = 0; round < 20000; round++) {
            now += rnd() % 1000000000ull;
            if (rnd() % 8 == 0)
                pure_link_release_buffers(l); /* busy or not */
            else if (!l->b)
                CHECK_EQ(pure_link_busy(l, now), 0);
            randomize(l, &hs, now);
            pure_timers_update(l, now);
            uint64_t earliest = UINT64_MAX;
            for (size_t i = 0; i < N_TIMERS; i++) {
                uint64_t d = pure_timer_deadline(l, all[i], now);
                CHECK_EQ(d, model(l, all[i], now));
                if (d < earliest)
                    earliest = d;
                CHECK_EQ(pure_timer_due(l, all[i], now), now >= d);
                if (d != UINT64_MAX) {
                    CHECK(pure_timer_due(l, all[i], d));
                    CHECK(d == 0 || !pure_timer_due(l, all[i], d - 1) ||
                          all[i] == PURE_TIMER_WATCH);
                }
            }
            CHECK_EQ(l->deadline, earliest);
            CHECK_EQ(l->heap_pos != UINT32_MAX, earliest != UINT64_MAX);
        }
        l->state = saved_state;
        l->hs = NULL;
        l->rtb.in_flight = 0;
        l->rtb.loss_time = UINT64_MAX;
        pure_ctx_free(ctx);
    }
}

/* CLOSING: the CLOSE goes again each probe timeout, never at or past the end. */
static void test_closing_resends(void)
{
    pure_ctx *ctx = new_ctx(0);
    uint64_t now = 5000000000ull;
    pure_link *l = new_link(ctx, now);
    l->state = PURE_LS_CLOSING;
    pure_timers_closing(l, now);
    uint64_t pto = pure_rtt_pto(&l->rtt, ctx->s.max_ack_delay);
    CHECK_EQ(l->close_deadline, now + 3 * pto);
    CHECK_EQ(l->close_resend_at, now + pto);
    int resends = 0;
    while (l->close_resend_at != UINT64_MAX) {
        uint64_t at = l->close_resend_at;
        CHECK(at < l->close_deadline);
        CHECK(!pure_timer_due(l, PURE_TIMER_CLOSE_RESEND, at - 1));
        CHECK(pure_timer_due(l, PURE_TIMER_CLOSE_RESEND, at));
        pure_timers_close_resent(l, at);
        resends++;
        CHECK(resends < 10);
    }
    CHECK_EQ(resends, 2); /* at +1 and +2 probe timeouts; +3 is the end */
    pure_timers_update(l, now);
    CHECK_EQ(l->deadline, l->close_deadline);
    l->state = PURE_LS_OPEN;
    pure_ctx_free(ctx);
}

/* The release timer waits out a link that is still receiving; a quiet one releases at once. */
static void test_release_waits_for_quiet(void)
{
    pure_ctx *ctx = new_ctx(0);
    uint64_t now = 5000000000ull;
    pure_link *l = new_link(ctx, now);
    l->release_at = UINT64_MAX;
    pure_timers_went_idle(l, now);
    CHECK_EQ(l->release_at, now + PURE_IDLE_RELEASE);
    pure_timers_went_idle(l, now + 7); /* armed already: unchanged */
    CHECK_EQ(l->release_at, now + PURE_IDLE_RELEASE);
    uint64_t at = l->release_at;
    l->last_recv = at - 1000; /* a packet came just before */
    l->last_sent = now;
    CHECK_EQ(pure_timers_release_due(l, at), 0);
    CHECK_EQ(l->release_at, at - 1000 + PURE_IDLE_RELEASE);
    CHECK_EQ(pure_timers_release_due(l, l->release_at), 1);
    CHECK_EQ(l->release_at, UINT64_MAX);
    /* a graceful close gives up idle_timeout after its last progress */
    l->state = PURE_LS_OPEN;
    l->close_requested = 1;
    pure_timers_close_progress(l, now);
    CHECK_EQ(pure_timer_deadline(l, PURE_TIMER_CLOSE_GIVE_UP, now), now + ctx->s.idle_timeout);
    pure_timers_close_progress(l, now + 99);
    CHECK_EQ(pure_timer_deadline(l, PURE_TIMER_CLOSE_GIVE_UP, now), now + 99 + ctx->s.idle_timeout);
    l->close_requested = 0;
    pure_ctx_free(ctx);
}

int main(void)
{
    RUN(test_deadline_is_earliest_timer);
    RUN(test_closing_resends);
    RUN(test_release_waits_for_quiet);
    return pure_test_finish();
}
