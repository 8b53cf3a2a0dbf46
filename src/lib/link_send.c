/* SPDX-License-Identifier: MIT */
/* link_send.c: building a link's packets: a burst of equal-sized packets (one GSO send) each
 * holding an ACK when one is owed, control frames, and as much stream data as fits, sealed from
 * the send buffer straight into the packet (or copied there first, where the AEAD cannot). */
#include <string.h>

#include "delivered.h"
#include "flight.h"
#include "frame.h"
#include "link_cancel.h"
#include "link_chan.h"
#include "link_send.h"
#include "keys.h"
#include "lifecycle.h"
#include "nomem.h"
#include "path.h"
#include "recovery.h"
#include "rekey.h"
#include "varint.h"

/* Bytes of the stream that may go out as new data now. */
static uint64_t new_data_limit(const pure_link *link)
{
    uint64_t peer = pure_credit_peer(&link->credit);
    return link->sb.end < peer ? link->sb.end : peer;
}

/* Channel 0 (the link's stream) has bytes, or its FIN, to send. */
static int has_data0(const pure_link *link)
{
    return (link->b && !pure_ranges_empty(&link->b->lost)) ||
           link->send_next < new_data_limit(link) ||
           (link->fin_sent_pending && link->send_next == link->fin_offset);
}

static int has_data(const pure_link *link)
{
    return has_data0(link) || pure_link_chan_has_data(link);
}

static int ack_due(const pure_link *link)
{
    return pure_acktr_due(&link->acktr, link->ctx->s.ack_every);
}

static int control_due(const pure_link *link)
{
    return link->credit_pending || link->ping_pending || link->probe_pending ||
           pure_link_chan_credit_due(link) || pure_link_cancel_due(link) || pure_path_due(link) ||
           (link->rk && pure_rekey_send_pending(link));
}

/* A path MTU probe waits (pmtud.c), and the window has room for it. */
static int pmtu_probe_due(const pure_link *link)
{
    return link->b && pure_pmtud_due(&link->b->pmtud) && !link->path_unvalidated &&
           pure_cc_available(&link->b->cc) > 0;
}

int pure_link_wants_send(const pure_link *link, uint64_t now)
{
    (void)now;
    switch (link->state) {
    case PURE_LS_HANDSHAKE: return link->hs && link->hs->send_pending;
    case PURE_LS_UNVALIDATED: return link->resp_pending;
    case PURE_LS_OPEN:
        return ack_due(link) || control_due(link) || pmtu_probe_due(link) ||
               (has_data(link) && (!link->b || pure_cc_available(&link->b->cc) > 0) &&
                link->pace_at == UINT64_MAX);
    case PURE_LS_CLOSING: return link->close_pending;
    default: return 0;
    }
}

/* Picks the next run of stream bytes to send: lost bytes first (skipping any that were
 * acknowledged meanwhile), then new bytes. Returns the length (0 if none) and *off. */
static uint64_t next_run(pure_link *link, uint64_t *off, int *is_retx)
{
    while (!pure_ranges_empty(&link->b->lost)) {
        pure_range r = link->b->lost.r[0];
        uint64_t start = r.start < link->sb.base ? link->sb.base : r.start;
        if (start >= r.end) {
            pure_ranges_drop_first(&link->b->lost);
            continue;
        }
        uint64_t acked_to = pure_ranges_contiguous_end(&link->b->acked, start);
        if (acked_to > start) { /* this part arrived after all */
            pure_ranges_remove(&link->b->lost, &link->ctx->alloc, r.start, acked_to);
            continue;
        }
        uint64_t end = r.end;
        uint64_t next_acked = pure_ranges_next_start(&link->b->acked, start);
        if (next_acked < end)
            end = next_acked;
        *off = start;
        *is_retx = 1;
        return end - start;
    }
    *is_retx = 0;
    *off = link->send_next;
    uint64_t lim = new_data_limit(link);
    return lim > link->send_next ? lim - link->send_next : 0;
}

/* Stream bytes a packet takes from the send ring, as the seal's runs (crypto.h): each piece's
 * place in the plaintext that starts at data, and its bytes in the ring. Nothing is copied while
 * the packet is built; the seal reads them. */
typedef struct ring_runs {
    const uint8_t *data;
    pure_aead_src r[2];
    size_t n;
} ring_runs;

/* Seals the packet whose plaintext runs from out + PURE_DATA_HEADER to end under the link's
 * transmit keys and the next packet number, its ring runs (NULL: none) read from the ring.
 * Returns the sealed length, or 0 if it could not be sealed (no keys). */
static size_t seal_packet(pure_link *link, uint8_t *out, const uint8_t *end, const ring_runs *rr)
{
    pure_ctx *ctx = link->ctx;
    uint64_t pn = pure_rtb_next_pn(&link->rtb);
    pure_wire_put_data_header(out, link->key_phase, link->remote_index, pn);
    uint8_t nonce[PURE_NONCE_LEN];
    pure_keys_nonce(nonce, link->tx.iv, pn);
    size_t plen = (size_t)(end - (out + PURE_DATA_HEADER));
    /* No key seals more than rekey_after_packets packets (the AEAD's confidentiality limit),
     * whatever the state of the link. */
    if (link->keys_packets >= ctx->s.rekey_after_packets)
        return 0;
    pure_aead *aead = pure_keys_aead(ctx, &link->tx);
    uint8_t *data = out + PURE_DATA_HEADER;
    if (!aead || pure_aead_seal_from(ctx->crypto, aead, nonce, out, PURE_DATA_HEADER, data, plen,
                                     rr ? rr->r : NULL, rr ? rr->n : 0, data + plen) != 0)
        return 0;
    link->keys_packets++;
    return PURE_DATA_HEADER + plen + PURE_TAG_LEN;
}

/* Adds as much stream data as fits (lost bytes first, then new ones): its frame header now, its
 * bytes as ring runs for the seal. Returns 1 if a DATA frame went in, filling *rec. */
static int put_data(pure_link *link, pure_pkt *k, pure_sent *rec, ring_runs *rr)
{
    uint64_t off;
    int retx, fits;
    uint64_t want = next_run(link, &off, &retx);
    int fin_here = link->fin_sent_pending && off + want == link->fin_offset && !retx;
    uint64_t len = pure_pkt_data_fit(k, off, want, &fits);
    if (len == 0 && !(want == 0 && fin_here && fits))
        return 0;
    int full = len < want;
    if (full)
        fin_here = 0;
    uint8_t *body = pure_pkt_data(k, off, len, fin_here);
    if (!body)
        return 0;
    const uint8_t *piece[2];
    size_t piece_len[2], at = (size_t)(body - rr->data);
    rr->n = (size_t)pure_sendbuf_pieces(&link->sb, off, (size_t)len, piece, piece_len);
    for (size_t i = 0; i < rr->n; at += piece_len[i], i++)
        rr->r[i] = (pure_aead_src){piece[i], at, piece_len[i]};
    /* A shorter length may have needed a shorter varint: pad so a full packet is exactly full
     * and the GSO burst goes on. */
    if (full)
        pure_pkt_pad(k);
    rec->data_off = off;
    rec->data_len = (uint32_t)len;
    if (fin_here) {
        rec->flags |= PURE_SENT_FIN;
        link->fin_sent_pending = 0;
    }
    if (retx) {
        pure_ranges_remove(&link->b->lost, &link->ctx->alloc, off, off + len);
        link->st.bytes_retransmitted += len;
    } else {
        link->send_next = off + len;
    }
    return 1;
}

/* The packet's stream data: channel 0's alone unless other channels are in use; then the
 * scheduler (chan.c) picks the channel by priority. One channel's data per packet. With `whole`
 * (a padded packet joining a burst of small ones) only a run that fits wholly goes: a link whose
 * channel sent a small message first would otherwise cut its own bulk on another channel into
 * packets of that small size, for the rest of the burst. */
static int put_stream_data(pure_link *link, pure_pkt *k, pure_sent *rec, int whole, ring_runs *rr)
{
    if (!link->chans)
        return put_data(link, k, rec, rr);
    int ch = pure_chans_pick(link->chans, has_data0(link));
    if (ch == 0) {
        uint64_t off;
        int retx, fits;
        if (whole) {
            uint64_t want = next_run(link, &off, &retx);
            if (pure_pkt_data_fit(k, off, want, &fits) < want)
                return 0;
        }
        return put_data(link, k, rec, rr);
    }
    return ch > 0 && pure_link_chan_put_data(link, ch, k, rec, whole);
}

/* What build_packet makes: a packet padded to the size asked (to join a burst of that segment
 * size), a path MTU probe (a PING padded to the size: nothing else, so its likely loss costs
 * nothing to send again), a packet padded to the size only if it falls short by at most
 * JOIN_SLACK of it (joining a burst of large segments: a few bytes keep the burst going, more
 * would be waste, and the short packet ends the burst instead), a packet that, if short, is
 * padded by JOIN_HEADROOM of its length (the first of a burst others may join: their packets,
 * a few bytes longer than this one, then fit). */
enum {
    BUILD_PAD = 1,
    BUILD_PMTU_PROBE = 2,
    BUILD_PAD_NEAR = 4,
    BUILD_HEADROOM = 8
};
#define JOIN_SLACK(size) ((size) / 8)
#define JOIN_HEADROOM(len) ((len) / 16)

/* The padding build_packet's mode asks for, once the frames are in. */
static void pad_packet(pure_pkt *k, const uint8_t *out, size_t size, int mode)
{
    if ((mode & BUILD_HEADROOM) && k->p < k->end) {
        size_t more = JOIN_HEADROOM((size_t)(k->p - out) + PURE_TAG_LEN);
        if (more < (size_t)(k->end - k->p))
            k->end = k->p + more;
        pure_pkt_pad(k);
    }
    if ((mode & (BUILD_PAD | BUILD_PMTU_PROBE)) ||
        ((mode & BUILD_PAD_NEAR) && (size_t)(k->end - k->p) <= JOIN_SLACK(size)))
        pure_pkt_pad(k); /* to join a burst of this segment size */
}

/* What needs memory is had before a frame goes in: once one takes the stream's bytes (or a
 * datagram, an ACK's duty) the packet must be sealed and recorded, or they would be lost. So:
 * the key's AEAD context, and room to record this packet and the packet number before it may
 * skip (an ACK alone with nothing in flight is recorded in no slot: an idle link answering a
 * keepalive allocates nothing). Returns 1, or 0 with the link's retry armed. */
static int packet_memory(pure_link *link, int allow_data, int mode, uint64_t now)
{
    int recorded = pure_rtb_in_flight(&link->rtb) || allow_data || control_due(link) ||
                   (mode & BUILD_PMTU_PROBE);
    if (!pure_keys_aead(link->ctx, &link->tx) ||
        (recorded && pure_rtb_reserve(&link->rtb, &link->ctx->alloc, 2) != 0)) {
        pure_link_retry_later(link, now);
        return 0;
    }
    return 1;
}

/* The ACK frame the link owes, and after it the running count of CE marks once one arrived: a
 * lost report is made good by the next, and the frame is 2 or 3 bytes. */
static void put_ack(pure_link *link, pure_pkt *k, uint64_t now)
{
    uint32_t n;
    const pure_range *r = pure_acktr_ranges(&link->acktr, &n);
    if (pure_pkt_ack(k, r, n, pure_acktr_delay(&link->acktr, now)) == 0) {
        pure_acktr_on_sent(&link->acktr);
        if (link->b && link->b->ce_received && pure_link_peer_ecn(link))
            (void)pure_pkt_ecn(k, link->b->ce_received);
    }
}

/* Builds and seals one packet of at most `size` bytes at out. Every frame goes through the
 * checked writer (pure_pkt), so a packet that an ACK already filled takes nothing more. Returns
 * its length, or 0 if there was nothing to put in it. */
static size_t build_packet(pure_link *link, uint8_t *out, size_t size, int allow_data, int mode,
                           uint64_t now)
{
    if (size < PURE_DATA_HEADER + PURE_TAG_LEN + 1)
        return 0;
    if (!packet_memory(link, allow_data, mode, now))
        return 0;
    pure_pkt k = {out + PURE_DATA_HEADER, out + size - PURE_TAG_LEN};
    pure_sent rec = {.time = now};
    ring_runs rr = {.data = out + PURE_DATA_HEADER, .n = 0};
    uint8_t eliciting = 0;

    if (mode & BUILD_PMTU_PROBE) {
        if (pure_pkt_ping(&k) != 0)
            return 0;
        rec.flags |= PURE_SENT_PMTU_PROBE;
        eliciting = 1;
        allow_data = 0;
    } else if (pure_acktr_wanted(&link->acktr)) {
        put_ack(link, &k, now);
    }
    if (!(mode & BUILD_PMTU_PROBE) && link->credit_pending &&
        pure_pkt_credit(&k, pure_credit_granted(&link->credit)) == 0) {
        link->credit_pending = 0;
        rec.flags |= PURE_SENT_CREDIT;
        eliciting = 1;
    }
    if (!(mode & BUILD_PMTU_PROBE) && pure_link_chan_credit_due(link) &&
        pure_link_chan_put_credits(link, &k)) {
        rec.flags |= PURE_SENT_CHAN_CREDIT;
        eliciting = 1;
    }
    if (!(mode & BUILD_PMTU_PROBE) && pure_link_cancel_due(link) &&
        pure_link_cancel_put(link, &k, pure_rtb_next_pn(&link->rtb))) {
        rec.flags |= PURE_SENT_CHAN_CREDIT; /* its fate comes back as CHAN_CREDIT's does */
        eliciting = 1;
    }
    if (!(mode & BUILD_PMTU_PROBE) && link->rk && pure_rekey_put_frame(link, &k)) {
        rec.flags |= PURE_SENT_REKEY;
        eliciting = 1;
    }
    if (!(mode & BUILD_PMTU_PROBE) && pure_path_due(link) && pure_path_put_frames(link, &k))
        eliciting = 1;
    if (!(mode & BUILD_PMTU_PROBE) && (link->ping_pending || link->probe_pending) &&
        pure_pkt_ping(&k) == 0) {
        link->ping_pending = 0;
        eliciting = 1;
    }
    if (allow_data && pure_link_chan_datagram_due(link) && pure_link_chan_put_datagram(link, &k)) {
        rec.flags |= PURE_SENT_DATAGRAM;
        eliciting = 1;
    }
    if (allow_data && put_stream_data(link, &k, &rec, (mode & BUILD_PAD) != 0, &rr))
        eliciting = 1;
    if (k.p == out + PURE_DATA_HEADER)
        return 0;
    pad_packet(&k, out, size, mode);
    pure_recovery_before_seal(link);
    size_t total = seal_packet(link, out, k.p, &rr);
    if (total == 0)
        return 0;
    if (eliciting)
        rec.flags |= PURE_SENT_ELICITING | PURE_SENT_LIVE;
    else
        rec = (pure_sent){.time = now}; /* an ACK-only packet: nothing to retransmit */
    rec.size = (uint16_t)total;
    if (pure_recovery_on_sent(link, &rec) != 0)
        return 0; /* not reached: packet_memory made room to record it */
    link->last_sent = now;
    /* a message's bytes leaving is what the liveness watch counts from: the time pure_link_send
     * kept may be long stale (it does not read the clock) */
    if (rec.data_len && now > link->last_msg_sent)
        link->last_msg_sent = now;
    link->st.packets_sent++;
    link->st.bytes_sent += total;
    return total;
}

/* The answer to the peer's CLOSE (pure_link_end_by_peer): a CLOSE, code 0 and no reason (the
 * peer's closing period ends on it, whatever it says); once it is written the link ends. */
static int64_t write_answer(pure_link *link, uint8_t *buf, pure_pkt *k, size_t *segment,
                            uint64_t now)
{
    if (pure_pkt_close(k, PURE_CLOSE_OK, "", 0) != 0)
        return 0;
    size_t total = seal_packet(link, buf, k->p, NULL);
    if (total == 0)
        return 0; /* no key for it: the link ends at its deadline, unanswered */
    link->close_pending = 0;
    link->close_deadline = now; /* ends at the next look at its timers */
    *segment = total;
    return (int64_t)total;
}

/* A link before or after its data phase: the INIT (resent as it was), the RESP (within the
 * amplification limit), or the CLOSE. Returns the datagram's length (0: nothing to send). */
static int64_t write_control(pure_link *link, uint8_t *buf, size_t cap, size_t *segment,
                             uint64_t now)
{
    if (link->state == PURE_LS_HANDSHAKE) {
        pure_hs *hs = link->hs;
        if (!hs || !hs->send_pending || cap < hs->init_len)
            return 0;
        hs->send_pending = 0;
        hs->inits_sent++; /* hints (handshake.c) concern only an INIT that went */
        memcpy(buf, hs->init, hs->init_len);
        *segment = hs->init_len;
        link->last_sent = now;
        return hs->init_len;
    }
    if (link->state == PURE_LS_UNVALIDATED) {
        /* Our RESP, once: at most 3x what the INIT brought (it is far smaller). */
        if (!link->resp_pending || cap < link->resp_len ||
            link->amp_sent + link->resp_len > PURE_AMPLIFICATION * link->amp_received)
            return 0;
        memcpy(buf, link->resp, link->resp_len);
        *segment = link->resp_len;
        link->amp_sent += link->resp_len;
        link->resp_pending = 0;
        return (int64_t)*segment;
    }
    if (link->state != PURE_LS_CLOSING || !link->close_pending)
        return 0;
    pure_pkt k = {buf + PURE_DATA_HEADER, buf + cap - PURE_TAG_LEN};
    if (link->close_pending == PURE_CLOSE_ANSWERING)
        return write_answer(link, buf, &k, segment, now);
    const char *reason = link->b ? link->b->close_reason : "";
    /* The CLOSE, then how much of the peer's stream our application had: the peer's on_closed
     * then lists exactly the messages that did not arrive. (ACKs cannot say it: the one this
     * side still owed may never leave, and the peer ignores late ACKs of packets it declared
     * lost.) A peer that stops reading at the CLOSE ignores it. */
    if (pure_pkt_close(&k, link->close_code, reason, strlen(reason)) != 0 ||
        pure_delivered_put(link, &k) != 0)
        return 0;
    size_t total = seal_packet(link, buf, k.p, NULL);
    if (total == 0)
        return 0;
    pure_rtb_skip(&link->rtb); /* nothing is recorded or acknowledged after a CLOSE */
    link->close_pending = 0;
    *segment = total;
    return (int64_t)total;
}

/* The next path MTU probe, if one is due (pmtud.c): one packet of the probe's size, on its own
 * (its size is not the burst's), within the congestion window and the context's flight limit
 * like data (a probe is a few packets per search, but thousands of links may search at once),
 * ahead of the pacer; its loss is not taken as congestion (recovery.c). Returns its length (0:
 * none). */
static int64_t write_pmtu_probe(pure_link *link, uint8_t *buf, size_t cap, size_t *segment,
                                uint64_t now)
{
    pure_pmtud *p = &link->b->pmtud;
    if (!pmtu_probe_due(link) && !(p->state == PURE_PMTUD_COMPLETE && now >= p->raise_at))
        return 0;
    if (link->path_unvalidated || link->keys_packets + 2 >= link->ctx->s.rekey_after_packets ||
        pure_cc_available(&link->b->cc) == 0 || !pure_flight_allowed(link))
        return 0;
    uint16_t size = pure_pmtud_probe_size(p, now);
    if (size == 0)
        return 0;
    size_t built = size <= cap ? build_packet(link, buf, size, 0, BUILD_PMTU_PROBE, now) : 0;
    pure_pmtud_on_probe_sent(p, size);
    if (built == 0) { /* it cannot go (no room, no keys): as good as lost */
        pure_pmtud_on_probe_lost(p, size, now);
        pure_recovery_mss_sync(link);
        return 0;
    }
    *segment = built;
    return (int64_t)built;
}

/* May the next packet (of `size` bytes) carry stream data? Not past the congestion window (then
 * *cwnd_blocked), nor ahead of the pacer (which arms pace_at); a probe always may. */
static int data_allowed(pure_link *link, size_t size, size_t n, int *cwnd_blocked, uint64_t now)
{
    pure_busy *b = link->b;
    if (!has_data(link) && !link->probe_pending) {
        if (b)
            pure_pacer_forget_due(&b->pacer); /* not waiting for the pacer: no late credit */
        return 0;
    }
    if (link->probe_pending)
        return 1;
    uint64_t srtt = link->rtt.has_sample ? link->rtt.smoothed : 0;
    uint64_t hold = pure_rekey_holds_data(link, now); /* the key's last quarter: the exchange's */
    if (hold) {
        /* the timer that asks again or lets data go if the reply never comes; an earlier one
         * stays: a retry for memory (nomem.h), which it put off by up to a probe timeout */
        if (link->pace_at > hold)
            link->pace_at = hold;
        *cwnd_blocked = 1;
        pure_pacer_forget_due(&b->pacer);
        return 0;
    }
    if (pure_cc_available(&b->cc) == 0 || !pure_flight_allowed(link)) {
        *cwnd_blocked = 1;
        pure_pacer_forget_due(&b->pacer);
        return 0;
    }
    if (pure_pacer_allowance(&b->pacer, now, b->cc.cwnd, srtt) < size) {
        link->pace_at = pure_pacer_next(&b->pacer, now, size, b->cc.cwnd, srtt);
        if (n > 0)
            link->st.paced_bursts++; /* a burst under way, cut short by the pacer */
        return 0;
    }
    return 1;
}

/* The size of the link's packets in this write, with cap lowered to what an unvalidated path's
 * amplification limit leaves; 0: none may go. */
static size_t packet_size(pure_link *link, size_t *cap, int pad, size_t join_seg)
{
    size_t mss = link->mss;
    if (link->path_unvalidated) {
        uint64_t budget = PURE_AMPLIFICATION * link->amp_received;
        budget = budget > link->amp_sent ? budget - link->amp_sent : 0;
        if (budget < PURE_DATA_HEADER + PURE_TAG_LEN + 64)
            return 0;
        if (*cap > budget)
            *cap = (size_t)budget;
        if (mss > *cap)
            mss = *cap;
    }
    if (pad == PURE_WRITE_PAD)
        mss = *cap < mss ? *cap : mss; /* the one packet is exactly cap bytes */
    if (join_seg) {
        if (join_seg > mss)
            return 0; /* the burst's segments are larger than this link's path takes */
        mss = join_seg;
    }
    /* A probe timeout's packets go at the size every path carries: if full-size packets fall into
     * a black hole, these still draw an ACK, which shows it (pmtud.c) a round trip later. */
    if (link->probe_pending && link->pto_count > 0 && mss > PURE_MIN_UDP_PAYLOAD)
        mss = PURE_MIN_UDP_PAYLOAD;
    return mss;
}

int64_t pure_link_write(pure_link *link, uint8_t *buf, size_t cap, size_t *segment, uint64_t now,
                        int pad)
{
    size_t join_seg = pad == PURE_WRITE_JOIN ? *segment : 0;
    if ((pad == PURE_WRITE_PAD || pad == PURE_WRITE_JOIN) && link->state != PURE_LS_OPEN)
        return 0;
    if (link->state != PURE_LS_OPEN)
        return write_control(link, buf, cap, segment, now);
    if (pure_link_busy(link, now) != 0) {
        pure_link_retry_later(link, now);
        return 0;
    }
    if (!link->rk && pure_rekey_due(link, now))
        pure_rekey_start(link, now); /* data keeps flowing under the current keys meanwhile */
    if (pad == PURE_WRITE_OWN || pad == PURE_WRITE_LEAD) {
        int64_t probe = write_pmtu_probe(link, buf, cap, segment, now);
        if (probe > 0)
            return probe;
    }
    size_t mss = packet_size(link, &cap, pad, join_seg);
    if (mss == 0)
        return 0;
    size_t n = 0, seg = 0;
    int cwnd_blocked = 0;
    while (cap - n >= (seg ? seg : mss)) {
        size_t size = seg ? seg : mss;
        if (link->keys_packets + 1 >= link->ctx->s.rekey_after_packets) {
            /* The key may seal one packet more: the rekey that started at half its packets did
             * not complete (the peer does not answer). That packet is the CLOSE. */
            pure_link_terminate(link, PURE_ECRYPTO, PURE_CLOSE_PROTOCOL,
                                "key exhausted: rekey not answered", 1, now);
            break;
        }
        if (!link->rk && pure_rekey_half_spent(link))
            pure_rekey_start(link, now); /* a burst that reached half the key's packets */
        int allow_data = data_allowed(link, size, n, &cwnd_blocked, now);
        if (!allow_data && !ack_due(link) && !control_due(link))
            break;
        int mode = pad == PURE_WRITE_PAD              ? BUILD_PAD
                   : join_seg                         ? BUILD_PAD_NEAR
                   : pad == PURE_WRITE_LEAD && n == 0 ? BUILD_HEADROOM
                                                      : 0;
        size_t built = build_packet(link, buf + n, size, allow_data, mode, now);
        if (built == 0)
            break;
        if (link->probe_pending)
            link->probe_pending--;
        pure_pacer_on_sent(&link->b->pacer, built);
        if (seg == 0) {
            seg = built;
        } else if (built < seg) {
            n += built;
            break; /* a short packet ends the burst */
        }
        n += built;
        if (built < size || pad == PURE_WRITE_PAD)
            break;
    }
    if (link->path_unvalidated)
        link->amp_sent += n;
    /* Two full packets or more: the link has more to say than a small packet holds, and a larger
     * size would help; the first search starts (later ones on their own, pmtud.c). */
    if ((pad == PURE_WRITE_OWN || pad == PURE_WRITE_LEAD) && seg == link->mss && n >= 2 * seg)
        pure_pmtud_on_burst(&link->b->pmtud, now);
    pure_flight_turn_end(link);
    /* App-limited: the window was not what held us back. */
    link->app_limited = !cwnd_blocked && !has_data(link);
    *segment = seg;
    return (int64_t)n;
}
