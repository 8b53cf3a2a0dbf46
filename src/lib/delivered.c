/* SPDX-License-Identifier: MIT */
/* delivered.c: what the closer read (delivered.h). */
#include "delivered.h"
#include "link_chan.h"
#include "recovery.h"
#include "tparams.h"

/* The peer's messages on the link's own stream this side's application had: every message it
 * was given, less those of the channels. */
static uint64_t stream_messages(const pure_link *link)
{
    uint64_t n = link->st.messages_received;
    const pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++)
        if (t->c[i])
            n -= t->c[i]->msgs_delivered;
    return n;
}

int pure_delivered_put(pure_link *link, pure_pkt *k)
{
    if (pure_pkt_delivered(k, link->recv_next) != 0)
        return -1;
    int counts = pure_tp_peer_reads_counts(link);
    if (counts && pure_pkt_delivered_count(k, 0, stream_messages(link)) != 0)
        return 0;
    pure_chans *t = link->chans;
    for (uint32_t i = 1; t && i <= t->top; i++) {
        pure_chan *c = t->c[i];
        if (c && c->recv_next &&
            (pure_link_cancel_put_answers(link, i, k) != 0 ||
             pure_pkt_chan_offset(k, PURE_FRAME_CHAN_DELIVERED, i, c->recv_next) != 0 ||
             (counts && pure_pkt_delivered_count(k, i, c->msgs_received) != 0)))
            break; /* the rest does not fit: those channels are reported from ACKs alone */
    }
    return 0;
}

/* A count below what ACKs made acknowledged: the messages from there on were acknowledged but
 * never reached the peer's application (it dropped them), and the report says so. A count
 * above changes nothing (the offset, or ACKs, say as much). */
static void take_count(pure_link *link, uint64_t ch, uint64_t count)
{
    if (ch == 0) {
        if (count < link->msgs_acked)
            link->msgs_acked = count;
        return;
    }
    pure_chan *c = pure_chans_find(link->chans, ch);
    if (c && count < c->msgs_acked)
        c->msgs_acked = count;
}

void pure_delivered_take(pure_link *link, const uint8_t *p, const uint8_t *end, uint64_t now)
{
    pure_frame f;
    pure_ack_frame ack;
    if (p < end && pure_frame_parse(&p, end, &f, &ack) == 0 && f.type == PURE_FRAME_DELIVERED)
        pure_recovery_on_delivered(link, f.u.delivered);
    else
        return;
    /* with the answers to our cancels it owed first (link_cancel.c), so the account is exact */
    while (p < end && pure_frame_parse(&p, end, &f, &ack) == 0) {
        if (f.type == PURE_FRAME_DELIVERED_COUNT)
            take_count(link, f.u.chan.channel, f.u.chan.offset);
        else if (f.type == PURE_FRAME_CHAN_DELIVERED || f.type == PURE_FRAME_CHAN_CANCELLED)
            pure_link_chan_on_frame(link, &f, now);
        else
            break;
    }
}
