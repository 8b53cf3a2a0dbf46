/* SPDX-License-Identifier: MIT */
/* link_recv.c: processing a link's incoming packets: replay check, decryption in place, frame
 * dispatch, in-order delivery straight from the packet; it composes the reorder buffer (rob.h:
 * out-of-order bytes held until the gap fills, within rxmem.c's budget), flow credit (credit.h:
 * a window that doubles while the reader keeps up) and the ACK tracker (acktr.h: when an ACK is
 * owed). */
#include <string.h>

#include "delivered.h"
#include "frame.h"
#include "link_recv.h"
#include "handshake.h"
#include "keys.h"
#include "lifecycle.h"
#include "link_chan.h"
#include "link_send.h"
#include "nomem.h"
#include "path.h"
#include "recovery.h"
#include "registry.h"
#include "rekey.h"
#include "rxmem.h"
#include "timers.h"

#define DATA_DROPPED 1 /* the packet's data could not be held: do not acknowledge it */

#define OPENED_IDLE 2 /* open_packet: authenticated, but no busy state to read it with */

static int deliver(void *arg, const uint8_t *data, size_t len)
{
    pure_link *link = arg;
    link->st.messages_received++;
    if (link->ctx->cb.on_message)
        link->ctx->cb.on_message(link, link->user, data, len);
    return link->state != PURE_LS_OPEN; /* stop if the application closed the link */
}

/* Feeds in-order bytes to the framer within the receive-memory budget (rxmem.c). Returns 0, a
 * code that closes the link, PURE_EAGAIN (the budget let in all but the last
 * link->b->parse.unfed bytes and the link is held back) or PURE_ENOMEM (as EAGAIN, but memory
 * itself ran out: nothing closes, the bytes come again). */
static int feed(pure_link *link, const uint8_t *p, size_t n, uint64_t now)
{
    pure_msgparse *m = &link->b->parse;
    pure_alloc a = pure_rxmem_alloc(link->ctx);
    /* without realloc the old buffer lives on while the new one fills: it must fit beside it */
    uint64_t lim = pure_rxmem_limit(link, a.realloc ? m->body_cap : 0, PURE_MSGPARSE_MIN);
    m->cap_limit = lim > UINT32_MAX ? UINT32_MAX : (uint32_t)lim;
    int rc = pure_msgparse_feed_inline(m, &a, p, n, deliver, link);
    size_t done = rc == PURE_EAGAIN || rc == PURE_ENOMEM ? n - m->unfed : n;
    if (rc == PURE_EAGAIN && link->state == PURE_LS_OPEN && pure_rxmem_claim(link, now)) {
        /* the link is now the one exempt from the budget: it goes on */
        m->cap_limit = UINT32_MAX;
        rc = pure_msgparse_feed(m, &a, p + done, n - done, deliver, link);
        done = n;
    }
    pure_rxmem_consumed(link, done, now);
    return rc == 1 ? 0 : rc; /* 1: stopped because the link closed */
}

/* Makes the reorder buffer hold at least `want` bytes past recv_next (the credit outstanding, so
 * it grows once), or if memory is short at least `need` (the bytes at hand), keeping what it holds.
 * Both rings live during the copy, so the new one must fit in what the budget leaves beside the
 * old (pure_rxmem_ring_limit). If not even the bytes at hand fit, the link is held back (or
 * becomes the owner and tries again); out-of-order bytes dropped here are simply sent again.
 * Returns 0, PURE_EAGAIN (max_receive_memory leaves no room even for `need`) or PURE_ENOMEM. */
static int ring_reserve(pure_link *link, uint64_t want, uint64_t need, uint64_t now)
{
    pure_rob *r = &link->b->rob;
    pure_alloc a = pure_rxmem_alloc(link->ctx);
    int rc = pure_rob_reserve(r, &a, want, pure_rxmem_ring_limit(link));
    if (rc == PURE_EAGAIN)
        rc = pure_rob_reserve(r, &a, need, pure_rxmem_ring_limit(link));
    if (rc == PURE_EAGAIN && pure_rxmem_claim(link, now))
        rc = pure_rob_reserve(r, &a, need, pure_rxmem_ring_limit(link));
    return rc;
}

/* Consumes held out-of-order bytes that the in-order point has reached. Returns 0, a code that
 * closes the link, or PURE_EAGAIN: the budget stopped it (the rest stays in the ring). */
static int drain_ring(pure_link *link, uint64_t now)
{
    pure_busy *b = link->b;
    const uint8_t *p;
    size_t chunk;
    while ((chunk = pure_rob_next(&b->rob, link->recv_next, &p)) != 0) {
        int rc = feed(link, p, chunk, now);
        link->recv_next += chunk - b->parse.unfed; /* held back, or the application closed */
        if (rc || link->state != PURE_LS_OPEN) {
            pure_rob_trim(&b->rob, link->recv_next);
            return rc;
        }
    }
    pure_rxmem_settle(link); /* an empty ring goes back if memory is short */
    return 0;
}

/* The reader consumed half the window: grant more, unless the application or the receive-memory
 * budget holds the peer back (credit.h doubles the window when the reader keeps up). */
static void update_credit(pure_link *link, uint64_t now)
{
    if (!pure_credit_due(&link->credit, link->recv_next))
        return;
    if (link->recv_paused) /* the application holds the peer back: grant nothing new */
        return;
    if (!pure_rxmem_may_credit(link, now)) /* over max_receive_memory: held back (rxmem.c) */
        return;
    uint64_t rtt = link->rtt.has_sample ? link->rtt.smoothed : 0;
    pure_credit_grant(&link->credit, link->recv_next, rtt, link->ctx->s.recv_window_max, now);
    link->credit_pending = 1;
}

void pure_link_recv_resumed(pure_link *link, uint64_t now)
{
    update_credit(link, now);
    pure_link_chan_recv_resumed(link, now);
    if (link->credit_pending)
        pure_ctx_mark_pending(link->ctx, link);
}

/* The peer's stream ended here: tell the application (PURE_EPROTO if it ended inside a message). */
static int check_fin(pure_link *link)
{
    if (link->peer_fin_known && link->recv_next == link->peer_fin && !link->peer_finished) {
        link->peer_finished = 1;
        if (!pure_msgparse_at_boundary(&link->b->parse))
            return PURE_EPROTO; /* the stream ended inside a message */
        if (link->ctx->cb.on_peer_finished)
            link->ctx->cb.on_peer_finished(link, link->user);
    }
    return 0;
}

/* Consumes what the ring holds from recv_next on, then grants credit. Returns 0 or a code that
 * closes the link. */
static int drain_and_credit(pure_link *link, uint64_t now)
{
    int rc = drain_ring(link, now);
    if (rc == PURE_EAGAIN)
        return 0; /* the ring waits for memory: held back, woken when it comes (rxmem.c) */
    if (rc == PURE_ENOMEM) {
        pure_link_rx_nomem(link, now); /* acknowledged: the ring's bytes come no more */
        return 0;
    }
    if (rc || link->state != PURE_LS_OPEN)
        return rc;
    update_credit(link, now);
    return 0;
}

static int on_data(pure_link *link, const pure_frame *f, uint64_t now)
{
    uint64_t off = f->u.data.offset, len = f->u.data.len, end = off + len;
    if (end > pure_credit_granted(&link->credit))
        return PURE_EFLOW;
    if (link->peer_fin_known ? (end > link->peer_fin || (f->u.data.fin && end != link->peer_fin))
                             : 0)
        return PURE_EPROTO;
    if (f->u.data.fin && !link->peer_fin_known) {
        if (end < link->recv_next || pure_rob_top(&link->b->rob) > end)
            return PURE_EPROTO;
        link->peer_fin_known = 1;
        link->peer_fin = end;
    }
    if (end > link->recv_next) {
        if (off <= link->recv_next) {
            uint64_t skip = link->recv_next - off;
            int rc = feed(link, f->u.data.bytes + skip, (size_t)(len - skip), now);
            /* all of it, or up to where the application closed the link, or held back */
            link->recv_next = end - link->b->parse.unfed;
            if (rc == PURE_ENOMEM)
                pure_link_rx_nomem(link, now); /* what the ring holds past it: fed by the retry */
            if (rc == PURE_EAGAIN || rc == PURE_ENOMEM) /* held back, or no memory: the rest */
                return DATA_DROPPED;                    /* comes again (not acknowledged) */
            if (rc)
                return rc;
            if (link->state != PURE_LS_OPEN)
                return 0;
            rc = drain_and_credit(link, now); /* this packet was consumed whole */
            if (rc || link->state != PURE_LS_OPEN)
                return rc;
        } else {
            if (ring_reserve(link, pure_credit_granted(&link->credit) - link->recv_next,
                             end - link->recv_next, now) != 0)
                return DATA_DROPPED;
            if (pure_rob_put(&link->b->rob, &link->ctx->alloc, link->recv_next, off,
                             f->u.data.bytes, (size_t)len) != 0)
                return DATA_DROPPED;
            /* ring_reserve may have made this link the owner (rxmem.c): what its ring held back
             * at the in-order point goes on now (nothing else would wake it: not held back) */
            if (link->ctx->rx_owner == link && pure_rob_holds(&link->b->rob, link->recv_next)) {
                int rc = drain_and_credit(link, now);
                if (rc || link->state != PURE_LS_OPEN)
                    return rc;
            }
        }
    }
    return check_fin(link);
}

static int close_code_for(int err)
{
    switch (err) {
    case PURE_EFLOW: return PURE_CLOSE_FLOW;
    case PURE_EMSGSIZE: return PURE_CLOSE_MSGSIZE;
    default: return PURE_CLOSE_PROTOCOL;
    }
}

/* Ends the link for what its data did (err: a protocol, flow or size error), telling the peer. */
static void close_for(pure_link *link, int err, uint64_t now)
{
    pure_link_terminate(link, err, (uint64_t)close_code_for(err), pure_strerror(err), 1, now);
}

/* A packet for a link that is closing: the application heard on_closed already, so nothing in
 * it is delivered. The peer's CLOSE ends the link; anything else means our CLOSE was lost, so
 * it goes again. The CLOSE is
 * answered on the 1st, 2nd, 4th, 8th ... such packet only (RFC 9000 section 10.2.1), besides
 * its timer: a peer's flight arriving at a closed link costs a few packets, not one each. */
static int closing_recv(pure_link *link, const uint8_t *p, size_t plen, uint64_t now)
{
    const uint8_t *end = p + plen;
    pure_ack_frame ack;
    if (link->peer_closed)
        return 0; /* this link answers (or answered) the peer's CLOSE: nothing more to say */
    while (p < end) {
        pure_frame f;
        if (pure_frame_parse(&p, end, &f, &ack) != 0)
            break;
        if (f.type == PURE_FRAME_CLOSE) {
            link->peer_closed = 1;
            pure_link_terminate(link, link->close_error, 0, NULL, 0, now);
            return 0;
        }
    }
    uint32_t heard = link->b ? ++link->b->closing_heard : 1;
    if ((heard & (heard - 1)) == 0) {
        link->close_pending = 1;
        pure_ctx_mark_pending(link->ctx, link);
    }
    return 0;
}

/* What a peer's CLOSE code means here: 0 a normal close, an application's code (PURE_CLOSE_APP
 * and up) PURE_ERESET, Pure's own codes the error the peer found. */
static int error_for_close_code(uint64_t code)
{
    switch (code) {
    case PURE_CLOSE_OK: return 0;
    case PURE_CLOSE_FLOW: return PURE_EFLOW;
    case PURE_CLOSE_REFUSED: return PURE_EREFUSED;
    case PURE_CLOSE_MSGSIZE: return PURE_EMSGSIZE;
    case PURE_CLOSE_MOVED: return PURE_EMOVED;
    default: return code >= PURE_CLOSE_APP ? PURE_ERESET : PURE_EPROTO;
    }
}

/* Held bytes were fed: the peer's CLOSE, or a graceful close of ours, that waited for them ends
 * the link once none wait (everything the peer counts delivered now is). */
static void after_held(pure_link *link, uint64_t now)
{
    if (link->state != PURE_LS_OPEN)
        return;
    if (link->b && link->b->peer_close_waits) {
        if (!pure_link_owes_delivery(link))
            pure_link_end_by_peer(link, error_for_close_code(link->close_code),
                                  link->b->peer_reason, now);
    } else {
        pure_link_close_if_done(link, now); /* asks what is owed only if a close waits */
    }
}

void pure_link_recv_unheld(pure_link *link, uint64_t now)
{
    if (link->state != PURE_LS_OPEN || !link->b)
        return;
    int rc = drain_ring(link, now);
    if (rc == 0 && link->state == PURE_LS_OPEN)
        rc = check_fin(link);
    if (rc == PURE_ENOMEM) {
        pure_link_rx_nomem(link, now);
        return;
    }
    if (rc && rc != PURE_EAGAIN) {
        close_for(link, rc, now);
        return;
    }
    if (link->state != PURE_LS_OPEN)
        return;
    if (rc == 0)
        update_credit(link, now);
    /* A CREDIT frame goes even if the limit did not move: it tells a peer whose packets were
     * dropped that there is room again (it resends at once, pure_recovery_probe_now). */
    if (rc == 0 && pure_rxmem_may_credit(link, now))
        link->credit_pending = 1;
    if (link->credit_pending)
        pure_ctx_mark_pending(link->ctx, link);
    pure_timers_update(link, now);
    after_held(link, now);
}

int pure_link_recv_owed_now(pure_link *link, uint64_t now)
{
    if (link->state == PURE_LS_OPEN && link->b && !link->b->rx_nomem &&
        pure_rob_holds(&link->b->rob, link->recv_next) && pure_rxmem_claim_at_once(link, now))
        pure_link_recv_unheld(link, now); /* held back by the budget: its turn now */
    return link->state == PURE_LS_OPEN && pure_link_owes_delivery(link);
}

void pure_link_recv_retry(pure_link *link, uint64_t now)
{
    if (!link->b || !link->b->rx_nomem)
        return;
    link->b->rx_nomem = 0;
    pure_link_recv_unheld(link, now);
    if (link->state == PURE_LS_OPEN && pure_link_chan_stalled(link)) {
        int rc = pure_link_chan_retry(link, now);
        if (rc)
            close_for(link, rc, now);
    }
    after_held(link, now);
}

/* An ACK frame was processed (pure_recovery_on_ack returned `acked`): act on what moved. The
 * order matters: on_writable may queue more or end the link, and pure_link_on_acked may end it. */
static void after_ack(pure_link *link, int acked, uint64_t now)
{
    if (!(acked & PURE_RECOVERY_ACKED))
        return;
    if (pure_link_wants_send(link, now))
        pure_ctx_mark_pending(link->ctx, link);
    pure_link_check_writable(link);
    if (pure_link_sends_empty(link) && pure_rtb_in_flight(&link->rtb) == 0)
        pure_timers_went_idle(link, now);
    /* on_writable may have ended the link: no callback after on_closed */
    if ((acked & PURE_RECOVERY_MSGS_ACKED) && link->ctx->cb.on_acked && !link->closed_notified)
        link->ctx->cb.on_acked(link, link->user, link->msgs_acked - 1);
    if (acked & PURE_RECOVERY_CHAN_MSGS_ACKED)
        pure_link_chan_report_acked(link);
    if ((acked & PURE_RECOVERY_STREAM_ACKED) && link->state == PURE_LS_OPEN)
        pure_link_on_acked(link, now); /* last: it may end the link */
}

/* The replay check, then opening in place under the key the phase bit names (failed opens
 * counted per key, old keys retired: keys.c); an authenticated packet makes the link busy and
 * moves it on (replay window, rekey switch, counters). Returns 0, OPENED_IDLE (authenticated,
 * but the idle link's busy state could not be had) or a code: dropped. */
static int open_packet(pure_link *link, uint8_t *d, size_t n, uint64_t pn, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    /* An idle link keeps only the top of its replay window: everything below it counts as seen.
     * Its state is rebuilt only after a packet authenticates, so forgeries cost it nothing. */
    if (link->b ? pure_replay_check(&link->b->replay, pn) != 0 : pn + 1 <= link->replay_top) {
        link->st.dropped_replay++;
        ctx->st.dropped_replay++;
        return PURE_EINVAL;
    }
    uint8_t phase = pure_wire_data_phase(d);
    int orc = pure_keys_open(link, d, n, pn);
    if (orc != 0) {
        if (pure_keys_forged_too_often(link, phase)) {
            /* Forgeries enough to put the key's integrity in doubt: stop trusting it. The peer
             * hears why (a third party may be the forger). */
            ctx->guard.links_integrity_closed++;
            pure_link_terminate(link, PURE_ECRYPTO, PURE_CLOSE_PROTOCOL,
                                "integrity limit: too many forged packets", 1, now);
        }
        return orc;
    }
    if (pure_link_busy(link, now) != 0)
        return OPENED_IDLE;
    if (link->rx_retire == PURE_RX_RETIRE_WAIT && phase == link->key_phase)
        pure_keys_retire_later(link, now); /* the peer has switched: the old key's days are few */
    pure_replay_commit(&link->b->replay, pn);
    if (ctx->rx_ecn == PURE_ECN_CE)
        pure_recovery_on_ce_received(link);
    if (phase != link->key_phase && link->rk)
        pure_rekey_on_phase(link, phase, now); /* the peer holds the new keys: switch too */
    link->st.packets_received++;
    link->st.bytes_received += n;
    link->last_recv = now;
    return 0;
}

/* The peer's CLOSE: the link ends with what it says, after the in-order bytes that wait for
 * memory or the receive budget, if any, are delivered (the peer counted them delivered: they
 * were acknowledged). */
static void on_close_frame(pure_link *link, const pure_frame *f, uint64_t now)
{
    char reason[256];
    memcpy(reason, f->u.close.reason, f->u.close.reason_len);
    reason[f->u.close.reason_len] = 0;
    link->close_code = f->u.close.code;
    link->peer_closed = 1;
    pure_link_recv_retry(link, now); /* what waits for memory, delivered first if it can be */
    if (pure_link_recv_owed_now(link, now)) {
        /* they still wait: after_held ends the link once they are delivered */
        size_t n = f->u.close.reason_len < sizeof link->b->peer_reason - 1
                       ? f->u.close.reason_len
                       : sizeof link->b->peer_reason - 1;
        memcpy(link->b->peer_reason, reason, n);
        link->b->peer_reason[n] = 0;
        link->b->peer_close_waits = 1;
        /* The peer is gone: nothing new goes to it (sends say PURE_ECLOSED), a graceful close
         * of ours gives way to its close, and no timer waits for it to answer (timers.c). */
        link->send_gate |= PURE_GATE_FINISH;
        link->close_requested = 0;
        link->credit.peer = link->send_next;
        return;
    }
    if (link->state == PURE_LS_OPEN)
        pure_link_end_by_peer(link, error_for_close_code(f->u.close.code), reason, now);
}

/* What the frames of one packet did. */
typedef struct frames_seen {
    int eliciting; /* a frame that asks for an ACK */
    int dropped;   /* stream data that could not be held: the packet is not acknowledged */
} frames_seen;

/* One frame of an open link's packet. Returns 0, or 1 if the frame ended the link (or the
 * caller must stop: a code in *rc to return). */
static int on_frame(pure_link *link, const pure_frame *f, const pure_ack_frame *ack,
                    frames_seen *seen, int *rc, uint64_t now)
{
    switch (f->type) {
    case PURE_FRAME_PADDING: break;
    case PURE_FRAME_PING:
        seen->eliciting = 1;
        pure_acktr_ack_now(&link->acktr);
        break;
    case PURE_FRAME_ACK: {
        int acked = pure_recovery_on_ack(link, ack, now);
        if (acked & PURE_RECOVERY_FORGED) {
            pure_link_terminate(link, PURE_EPROTO, PURE_CLOSE_PROTOCOL,
                                "ACK of a packet never sent", 1, now);
            *rc = PURE_EPROTO;
            return 1;
        }
        after_ack(link, acked, now);
        break;
    }
    case PURE_FRAME_ECN: pure_recovery_on_ecn(link, f->u.ce, now); break;
    case PURE_FRAME_PATH_CHALLENGE:
        seen->eliciting = 1;
        pure_path_on_challenge(link, f->u.path);
        break;
    case PURE_FRAME_PATH_RESPONSE:
        seen->eliciting = 1;
        pure_path_on_response(link, f->u.path, now);
        break;
    case PURE_FRAME_CREDIT:
        if (pure_credit_on_frame(&link->credit, f->u.credit))
            pure_ctx_mark_pending(link->ctx, link);
        /* the peer has room: if our packets went unanswered (it may have dropped them, short of
         * memory), the oldest bytes go again now rather than after the backed-off PTO */
        pure_recovery_probe_now(link);
        seen->eliciting = 1;
        break;
    case PURE_FRAME_CLOSE: on_close_frame(link, f, now); return 1;
    case PURE_FRAME_REKEY:
        seen->eliciting = 1;
        pure_rekey_on_frame(link, f->u.rekey, now);
        break;
    case PURE_FRAME_CHAN_DELIVERED:
    case PURE_FRAME_DELIVERED_COUNT: break; /* taken with the CLOSE they follow */
    case PURE_FRAME_DATAGRAM:
    case PURE_FRAME_CHAN_CANCEL:
    case PURE_FRAME_CHAN_CANCELLED:
    case PURE_FRAME_CHAN_DATA:
    case PURE_FRAME_CHAN_CREDIT:
    case PURE_FRAME_DATA: {
        seen->eliciting = 1;
        int drc = f->type == PURE_FRAME_DATA ? on_data(link, f, now)
                                             : pure_link_chan_on_frame(link, f, now);
        if (drc == DATA_DROPPED) {
            seen->dropped = 1;
        } else if (drc < 0) {
            close_for(link, drc, now);
            *rc = drc;
            return 1;
        }
        /* an answer to our cancel releases bytes as an ACK does (a graceful close may wait) */
        if (f->type == PURE_FRAME_CHAN_CANCELLED)
            after_ack(
                link,
                PURE_RECOVERY_ACKED | PURE_RECOVERY_STREAM_ACKED |
                    ((pure_link_chan_after_ack(link) & 1) ? PURE_RECOVERY_CHAN_MSGS_ACKED : 0),
                now);
        break;
    }
    }
    return link->state != PURE_LS_OPEN;
}

/* After the frames: what the packet owes the peer (an ACK, or with dropped data a PING), the
 * credit granted, and the release timer of a link left with nothing to do. */
static void after_frames(pure_link *link, const frames_seen *seen, uint64_t pn, uint64_t now)
{
    pure_ctx *ctx = link->ctx;
    int sparing = link->rk && pure_rekey_last_quarter(link); /* the exchange's packets */
    if (seen->dropped) {
        /* Not acknowledged, so the peer sends it again. An ACK of what came before still goes
         * (or a PING if there is nothing to acknowledge), so a peer held back by
         * max_receive_memory hears from this side and does not time the link out: at once, or
         * in a key's last packets by max_ack_delay (one per dropped packet spent them). */
        if ((sparing ? pure_acktr_force_by(&link->acktr, now + ctx->s.max_ack_delay)
                     : pure_acktr_force(&link->acktr)) != 0)
            link->ping_pending = 1;
        pure_ctx_mark_pending(ctx, link);
        return;
    }
    /* Record the packet number for our ACKs. */
    /* the ACK delay we report counts from its arrival: the time it waited for this loop too */
    if (pure_acktr_on_packet(&link->acktr, &ctx->alloc, pn, seen->eliciting, pure_rx_time(ctx, now),
                             now, ctx->s.max_ack_delay, ctx->s.ack_every, sparing))
        pure_ctx_mark_pending(ctx, link);
    if (link->credit_pending)
        pure_ctx_mark_pending(ctx, link);
    /* A side that only receives (or only answers keepalives) never processes an ACK of its own:
     * arm the release here too once it has nothing queued or in flight. */
    if (pure_link_sends_empty(link) && pure_rtb_in_flight(&link->rtb) == 0)
        pure_timers_went_idle(link, now);
}

/* An authenticated packet for an idle link whose busy state could not be had: the packet is
 * dropped (the peer sends it again), but a CLOSE in it ends the link now. An idle link has nothing
 * in flight, queued or half assembled, and arms no timer: if each copy of the CLOSE were dropped
 * like the rest, it would stay open for ever. Returns PURE_ENOMEM, or 0 if the link ended. */
static int idle_recv_without_memory(pure_link *link, const uint8_t *p, const uint8_t *end,
                                    uint64_t now)
{
    pure_ack_frame ack;
    pure_frame f;
    while (p < end && pure_frame_parse(&p, end, &f, &ack) == 0)
        if (f.type == PURE_FRAME_CLOSE) {
            on_close_frame(link, &f, now); /* nothing waits for memory: the link ends */
            return 0;
        }
    return PURE_ENOMEM;
}

int pure_link_recv(pure_link *link, const pure_addr *from, uint8_t *d, size_t n, uint64_t now)
{
    uint64_t pn = pure_wire_data_pn(d);
    int rc = open_packet(link, d, n, pn, now);
    if (rc == OPENED_IDLE) /* authenticated: only such a packet is read without its state */
        return link->state == PURE_LS_OPEN
                   ? idle_recv_without_memory(link, d + PURE_DATA_HEADER, d + n - PURE_TAG_LEN, now)
                   : PURE_ENOMEM;
    if (rc != 0)
        return rc;
    const uint8_t *p = d + PURE_DATA_HEADER, *end = p + (n - PURE_DATA_HEADER - PURE_TAG_LEN);
    if (link->state == PURE_LS_CLOSING)
        return closing_recv(link, p, (size_t)(end - p), now);
    if (link->state == PURE_LS_UNVALIDATED && pure_hs_confirmed(link, now) != 0)
        return 0; /* refused, or closed from on_accept: its data goes nowhere */
    pure_path_on_packet(link, from, pn, n, now);
    frames_seen seen = {0, 0};
    pure_ack_frame ack;
    while (p < end) {
        pure_frame f;
        if (pure_frame_parse(&p, end, &f, &ack) != 0) {
            pure_link_terminate(link, PURE_EPROTO, PURE_CLOSE_PROTOCOL, "malformed frame", 1, now);
            return PURE_EPROTO;
        }
        if (f.type == PURE_FRAME_CLOSE)
            pure_delivered_take(link, p, end, now);
        if (on_frame(link, &f, &ack, &seen, &rc, now))
            return rc;
    }
    if (pure_link_chan_stalled(link)) { /* memory may have come back since */
        int crc = pure_link_chan_retry(link, now);
        if (crc) {
            close_for(link, crc, now);
            return crc;
        }
        if (link->state != PURE_LS_OPEN)
            return 0; /* the application closed it from a callback */
    }
    after_frames(link, &seen, pn, now);
    if (link->close_requested) /* it may have waited for bytes this packet let in */
        pure_link_close_if_done(link, now);
    return 0;
}
