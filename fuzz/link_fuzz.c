/* SPDX-License-Identifier: MIT */
/* link_fuzz.c: libFuzzer target for whole links between two contexts, driven entirely by the
 * input through an in-harness network (null crypto, deterministic: every input replays exactly).
 *
 * Two contexts, side 0 and side 1, each offer the services "l0".."l31" and allow any key; either
 * may connect to the other. A link's pair number is in its service name, so the responder's
 * on_accept knows which pair it joins (a second accept for a pair already accepted is refused:
 * that is an INIT resent after the first responder link went away, and refusing it keeps one
 * responder end per pair). Every datagram a context writes goes into the in-flight list, where
 * the input decides its fate.
 *
 * Input: byte 0 sets options (bit 0 NewReno instead of CUBIC, bit 1 send_queue 0, bit 2
 * keepalives on side 0, bit 3 small datagrams of 1200 bytes, bit 4 channel messages go as
 * shared buffers of their own (pure_shared_new, pure_link_send_shared), bit 5 every end that
 * sends is watched with a queue limit of 96 KiB (pure_link_set_queue_limit: PURE_EFULL, and
 * pure_link_queue_stats checked after each send)); then opcodes, each one byte (low
 * 4 bits: the operation) followed by its argument bytes (missing ones read as 0):
 *   0 CONNECT a        side a&1 opens a link to the other (at most 8 alive, 32 per input)
 *   1 SEND e s1 s2     end e sends one message, size from s1 s2 (see msg_size), on channel
 *                      (op >> 4) % 3 (channels 1 and 2 through pure_link_send_on); with
 *                      op >> 4 == 15 a datagram instead (size % (pure_link_datagram_max + 2));
 *                      with op >> 4 == 14, pure_link_cancel of one of the 8 newest messages of
 *                      channel 1 + (s1 & 1), (s1 >> 1) & 7 back from the newest; with
 *                      op >> 4 == 13, pure_link_send_on_deadline on channel 1 + (s1 & 1) of
 *                      s2 * 97 bytes, the deadline (s1 >> 1) ms from now
 *   2 REPLY e r        end e answers each of its next r&15 messages from inside on_message
 *                      with one of (r >> 4) * 613 bytes
 *   3 DELIVER i        deliver in-flight datagram i (any order: reordering)
 *   4 DROP i           lose in-flight datagram i
 *   5 DUP i            deliver a copy of datagram i and keep it in flight
 *   6 DELIVER_N n      deliver the n oldest datagrams (n == 0: all)
 *   7 ADVANCE t        advance virtual time (t < 200: (t+1) ms; else (t-199) s) and run timers
 *   8 FINISH e         pure_link_finish
 *   9 CLOSE e          pure_link_close (graceful)
 *  10 ABORT e          pure_link_abort (immediate; on_closed before it returns)
 *  11 ON_MSG e a       end e calls finish (a%4 == 1), close (2) or abort (3) from inside its next
 *                      on_message
 *  12 FREE a           pure_ctx_free side a&1 with its links alive, then start it again with a new
 *                      key (so the peer's old links cannot reach it)
 *  13 SETTLE r         r%32+1 rounds of: deliver everything in flight, or if nothing is, jump to
 *                      the earlier deadline (at most 2 s ahead) and run timers
 *  14 CORRUPT i p      deliver datagram i with byte p flipped (refused by the AEAD or parser)
 *  15 REFUSE a         side a&1's application refuses the next link it is offered
 * An end number e counts the ends (one side of one link) the application knows and that are not
 * closed, modulo their number. After every operation both contexts write what they have.
 * LINK_FUZZ_VERBOSE=1 prints what each pair sent and received. Work is bounded: at most 2000
 * operations, 2 MiB of messages, 20000 datagram deliveries.
 *
 * Invariants (abort() on violation):
 *   - message i of a link direction has a length and bytes derived from (pair, direction, i);
 *     the receiver delivers them whole, in order, exactly once (checked byte by byte, by index,
 *     against the sender's record of what pure_link_send accepted, and by a running hash of the
 *     direction's prefix compared with the sender's), and on channels 1 and 2 the same
 *     separately per channel (whole, in order on that channel, once: on_channel_message);
 *   - cancels: each id of a channel reaches the receiver once, in order, delivered whole or
 *     reported cancelled, and only a message its sender cancelled (or gave a deadline) is
 *     reported cancelled; the sender's on_channel_cancelled names only such messages, once, not
 *     one the receiver delivered, and never one on_channel_acked covered already; an id the
 *     receiver reported cancelled is reported cancelled by the sender by the time
 *     on_channel_acked covers it (the running hash is checked only while a channel has no
 *     cancel; the bytes by index always);
 *     datagrams arrive whole, from what the peer sent, at most once each;
 *   - no callback of a link after its on_closed; on_closed exactly once for every end the
 *     application knows (pure_connect returned 0, or on_accept returned 0), including when its
 *     context is freed (pure_ctx_free reports every live link closed);
 *   - on_closed's next_id counts the messages pure_link_send accepted; a link this side closed
 *     gracefully whose on_closed says error 0 and first_unacked == next_id: the peer end received
 *     every message this side sent, and for each channel whose pure_link_channel_unacked says
 *     all were acknowledged, every message sent on it;
 *   - pure_link_send returns PURE_EMSGSIZE exactly for messages over max_message_size (64 KiB),
 *     and ids 0, 1, 2, ...; pure_link_abort runs on_closed before it returns;
 *   - every pure_ctx_read code is documented (fz_read); each context's counting allocator holds
 *     no block after its pure_ctx_free;
 *   - every shared buffer is released exactly once: never twice (checked in the release
 *     callback), and by the end, when both contexts are freed, once (whatever ended its links:
 *     acknowledgement, close, abort, timeout, a context freed with links alive);
 *   - a watched end's queue statistics add up (bytes_unsent and bytes_shared within bytes,
 *     messages within those sent on the channel, the limit as set). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "fuzz_common.h"
#include "pure.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAIRS 32
#define MAX_ALIVE 8
#define MAX_MSGS 512        /* messages per link direction the harness records */
#define MAX_CH_MSGS 128     /* per channel 1, 2 and direction */
#define MAX_DGRAMS 256      /* datagrams per direction */
#define MAX_MSG (64u << 10) /* max_message_size */
#define MAX_OPS 2000
#define MAX_BYTES (2u << 20)
#define MAX_DELIVERIES 20000
#define MAX_FLIGHT 512
#define DGRAM_MAX 1472

/* One side of one link, as the application knows it. Lives in the harness (not freed by
 * on_closed), so a late callback still finds it and can be caught. */
typedef struct end {
    struct pair *pair;
    int dir;     /* 0: the initiator's end, 1: the responder's */
    int side;    /* the context it belongs to */
    int known;   /* pure_connect returned 0 / on_accept returned 0 */
    int closed;  /* on_closed ran */
    int closes;  /* how many times */
    int closing; /* this side called pure_link_close */
    int aborted; /* this side called pure_link_abort, or its context was freed */
    pure_link *link;
    /* what this end sent: lengths and the running hash after each message */
    uint64_t tx;
    uint32_t tx_len[MAX_MSGS];
    uint64_t tx_hash[MAX_MSGS];
    /* what it received */
    uint64_t rx, rx_hash;
    /* channels 1 and 2: sent (lengths, running hashes) and received */
    uint64_t ctx_n[2], crx[2], crx_hash[2];
    uint32_t ctx_len[2][MAX_CH_MSGS];
    uint64_t ctx_hash[2][MAX_CH_MSGS];
    /* cancels: per channel and id, what this end asked (sent side) and what became of it */
    uint8_t cx_asked[2][MAX_CH_MSGS]; /* a cancel or a deadline was given */
    uint8_t cx_req[2][MAX_CH_MSGS];   /* pure_link_cancel returned 0 for it */
    uint8_t cx_tx[2][MAX_CH_MSGS];    /* this end's on_channel_cancelled(SENT) reported it */
    uint8_t cx_rx[2][MAX_CH_MSGS];    /* received: 1 delivered, 2 reported cancelled */
    uint8_t cx_any[2];                /* a cancel was asked on the channel (hashes off) */
    uint64_t cacked[2];               /* on_channel_acked: last id + 1 */
    /* datagrams sent (ids 0..dg_tx-1, lengths) and received (a bit per id) */
    uint32_t dg_tx;
    uint16_t dg_len[MAX_DGRAMS];
    uint8_t dg_rx[MAX_DGRAMS / 8];
    int reply_left;
    size_t reply_size;
    int on_msg_action;
    int watched; /* pure_link_set_queue_limit was called (option bit 5) */
} end;

typedef struct pair {
    int id;
    end e[2];
} pair;

typedef struct flight {
    int to;
    pure_addr from;
    uint16_t len;
    uint8_t d[DGRAM_MAX];
} flight;

static struct {
    pure_ctx *ctx[2];
    fz_heap heap[2];
    uint64_t rng[2];
    uint8_t key_gen[2];
    int refuse[2];
    pure_addr addr[2];
    uint64_t now;
    pair pairs[MAX_PAIRS];
    int npairs;
    /* datagrams in flight, oldest first: slots of g_fl, so removal moves indices, not bytes */
    int order[MAX_FLIGHT], nfl;
    int free_slot[MAX_FLIGHT], nfree;
    uint64_t bytes, deliveries;
    uint8_t opts;
    int in_cb; /* depth of callbacks, to tell what runs from inside them */
} G;

static flight g_fl[MAX_FLIGHT];    /* not zeroed per input: only slots in G.order are read */
static uint8_t g_msg[5 * MAX_MSG]; /* msg_size reaches 311 KiB */

/* ---- message content ---- */

/* The harness's own byte loops carry no coverage instrumentation: it would only slow them down
 * (they were most of the time per input) and teach the fuzzer nothing about Pure. */
#define FZ_PLAIN __attribute__((no_sanitize("coverage")))

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t msg_seed(const end *e, uint64_t i, size_t len)
{
    return mix(((uint64_t)e->pair->id << 56) ^ ((uint64_t)e->dir << 48) ^ (i << 24) ^ len);
}

/* The bytes of message i of end e's direction: a function of (pair, direction, index, length),
 * so a message delivered at the wrong index, cut short or mixed with another fails the check. */
FZ_PLAIN static void msg_fill(uint8_t *p, const end *e, uint64_t i, size_t len)
{
    uint64_t s = msg_seed(e, i, len);
    for (size_t j = 0; j < len; j++)
        p[j] = (uint8_t)((s >> (8 * (j & 7))) + (j >> 3) * 131);
}

FZ_PLAIN static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return (h ^ n) * 0x100000001b3ull;
}

/* ---- ends ---- */

static end *peer_of(end *e)
{
    return &e->pair->e[!e->dir];
}

static int alive(const end *e)
{
    return e->known && !e->closed;
}

static end *end_of(pure_link *link, void *user)
{
    end *e = user;
    if (!e)
        FZ_FAIL("callback with a NULL user pointer on a link the application never accepted");
    if (e->link != link)
        FZ_FAIL("callback's link differs from the end's");
    if (e->closed) {
        FZ_FAIL("callback after on_closed");
    }
    if (!e->known)
        FZ_FAIL("callback on a link the application does not know");
    return e;
}

/* The n-th alive end (modulo their number), or NULL. */
static end *pick_end(unsigned n)
{
    int count = 0;
    for (int p = 0; p < G.npairs; p++)
        for (int d = 0; d < 2; d++)
            count += alive(&G.pairs[p].e[d]);
    if (!count)
        return NULL;
    n %= (unsigned)count;
    for (int p = 0; p < G.npairs; p++)
        for (int d = 0; d < 2; d++)
            if (alive(&G.pairs[p].e[d]) && n-- == 0)
                return &G.pairs[p].e[d];
    return NULL;
}

/* ---- shared sends (option bit 4): each buffer is a record, its release count, then the
 * bytes; all are checked and freed at the end of the input ---- */

#define MAX_SHARED 4096
#define QUEUE_LIMIT (96u << 10)
typedef struct shrec {
    uint32_t released;
    uint32_t pad;
} shrec;
static shrec *g_sh[MAX_SHARED];
static int g_nsh;

static void shared_release(void *user, const void *data, size_t len)
{
    (void)user, (void)len;
    shrec *r = (shrec *)((uint8_t *)data - sizeof(shrec));
    if (++r->released > 1)
        FZ_FAIL("a shared buffer was released twice");
}

/* Every shared buffer of the input was released exactly once (the contexts are freed). */
static void shared_check_all(void)
{
    for (int i = 0; i < g_nsh; i++) {
        if (g_sh[i]->released != 1)
            FZ_FAIL("a shared buffer was not released (exactly once) by the end");
        free(g_sh[i]);
    }
    g_nsh = 0;
}

/* pure_link_send_on's bytes as a buffer of their own, sent with pure_link_send_shared. */
static int64_t send_shared(end *e, uint32_t ch, size_t len)
{
    if (g_nsh == MAX_SHARED)
        return pure_link_send_on(e->link, ch, g_msg, len);
    shrec *r = malloc(sizeof *r + len + 1);
    if (!r)
        FZ_FAIL("malloc");
    r->released = 0;
    memcpy(r + 1, g_msg, len);
    pure_shared *sh;
    int rc = pure_shared_new(G.ctx[e->side], r + 1, len, shared_release, NULL, &sh);
    if (rc != 0) {
        free(r);
        if (rc != PURE_EMSGSIZE || len <= MAX_MSG)
            FZ_FAIL("pure_shared_new failed");
        return rc;
    }
    g_sh[g_nsh++] = r;
    int64_t id = pure_link_send_shared(e->link, ch, sh);
    pure_shared_unref(sh);
    return id;
}

/* Option bit 5: the end is watched; its statistics on channel ch must add up. */
static void check_queue(end *e, uint32_t ch)
{
    if (!(G.opts & 0x20))
        return;
    if (!e->watched) {
        int rc = pure_link_set_queue_limit(e->link, QUEUE_LIMIT);
        if (rc == PURE_ENOMEM)
            return;
        if (rc != 0)
            FZ_FAIL("pure_link_set_queue_limit failed on a live link");
        e->watched = 1;
    }
    pure_queue_stats q;
    if (pure_link_queue_stats(e->link, ch, G.now, &q, sizeof q) != 0)
        FZ_FAIL("pure_link_queue_stats failed");
    uint64_t sent = ch ? e->ctx_n[ch - 1] : e->tx;
    if (q.bytes_unsent > q.bytes || q.bytes_shared > q.bytes || q.messages > sent + (ch == 0) ||
        q.limit != QUEUE_LIMIT || (q.messages && q.oldest_at > G.now) ||
        (!q.messages && q.oldest_age))
        FZ_FAIL("queue statistics that do not add up");
}

/* Sends message number e->tx of len bytes on e; checks what pure_link_send returns. */
static void send_msg(end *e, size_t len)
{
    if (e->tx >= MAX_MSGS || G.bytes + len > MAX_BYTES)
        return;
    int over = len > MAX_MSG;
    if (!over)
        msg_fill(g_msg, e, e->tx, len);
    check_queue(e, 0);
    int64_t rc = pure_link_send(e->link, g_msg, len);
    if (over) {
        if (rc != PURE_EMSGSIZE && rc != PURE_ECLOSED) /* ECLOSED: finishing, checked first */
            FZ_FAIL("a message over max_message_size was not refused with PURE_EMSGSIZE");
        return;
    }
    if (rc == PURE_EMSGSIZE)
        FZ_FAIL("a message within max_message_size was refused with PURE_EMSGSIZE");
    if (rc == PURE_EAGAIN || rc == PURE_ECLOSED || (rc == PURE_EFULL && e->watched))
        return;
    if (rc < 0)
        FZ_FAIL("pure_link_send failed with an unexpected code");
    if ((uint64_t)rc != e->tx)
        FZ_FAIL("pure_link_send returned an id out of sequence");
    uint64_t h = e->tx ? e->tx_hash[e->tx - 1] : 0;
    e->tx_len[e->tx] = (uint32_t)len;
    e->tx_hash[e->tx] = fnv(h, g_msg, len);
    e->tx++;
    G.bytes += len;
}

/* The same on channel ch (1 or 2) with a deadline `in` ns from now. */
static void send_msg_deadline(end *e, uint32_t ch, size_t len, uint64_t in)
{
    int c = (int)ch - 1;
    if (e->ctx_n[c] >= MAX_CH_MSGS || G.bytes + len > MAX_BYTES)
        return;
    msg_fill(g_msg, e, e->ctx_n[c] | (uint64_t)ch << 16, len);
    int64_t rc = pure_link_send_on_deadline(e->link, ch, g_msg, len, G.now + in);
    if (rc == PURE_EAGAIN || rc == PURE_ECLOSED || (rc == PURE_EFULL && e->watched))
        return;
    if (rc < 0 || (uint64_t)rc != e->ctx_n[c])
        FZ_FAIL("pure_link_send_on_deadline failed, or an id out of sequence");
    uint64_t h = e->ctx_n[c] ? e->ctx_hash[c][e->ctx_n[c] - 1] : 0;
    e->ctx_len[c][e->ctx_n[c]] = (uint32_t)len;
    e->ctx_hash[c][e->ctx_n[c]] = fnv(h, g_msg, len);
    e->cx_asked[c][e->ctx_n[c]] = 1; /* it may be cancelled */
    e->cx_any[c] = 1;
    e->ctx_n[c]++;
    G.bytes += len;
}

/* The same on channel ch (1 or 2) through pure_link_send_on. */
static void send_msg_on(end *e, uint32_t ch, size_t len)
{
    int c = (int)ch - 1;
    if (e->ctx_n[c] >= MAX_CH_MSGS || G.bytes + len > MAX_BYTES)
        return;
    int over = len > MAX_MSG;
    uint64_t idx = e->ctx_n[c] | (uint64_t)ch << 16; /* channel messages have their own bytes */
    if (!over)
        msg_fill(g_msg, e, idx, len);
    check_queue(e, ch);
    int64_t rc =
        (G.opts & 0x10) ? send_shared(e, ch, len) : pure_link_send_on(e->link, ch, g_msg, len);
    if (over) {
        if (rc != PURE_EMSGSIZE && rc != PURE_ECLOSED)
            FZ_FAIL("a channel message over max_message_size was not refused with PURE_EMSGSIZE");
        return;
    }
    if (rc == PURE_EAGAIN || rc == PURE_ECLOSED || (rc == PURE_EFULL && e->watched))
        return;
    if (rc < 0)
        FZ_FAIL("pure_link_send_on failed with an unexpected code");
    if ((uint64_t)rc != e->ctx_n[c])
        FZ_FAIL("pure_link_send_on returned an id out of sequence on its channel");
    uint64_t h = e->ctx_n[c] ? e->ctx_hash[c][e->ctx_n[c] - 1] : 0;
    e->ctx_len[c][e->ctx_n[c]] = (uint32_t)len;
    e->ctx_hash[c][e->ctx_n[c]] = fnv(h, g_msg, len);
    e->ctx_n[c]++;
    G.bytes += len;
}

/* Sends datagram number e->dg_tx of about `size` bytes (4-byte id, then msg_fill's bytes). */
static void send_dgram(end *e, size_t size)
{
    if (e->dg_tx >= MAX_DGRAMS)
        return;
    size_t max = pure_link_datagram_max(e->link);
    size_t len = size % (max + 2); /* max + 1 now and then: refused */
    if (len < 4)
        len = 4;
    uint32_t id = e->dg_tx;
    msg_fill(g_msg, e, (uint64_t)id | 3u << 16, len);
    memcpy(g_msg, &id, 4);
    int rc = pure_link_send_datagram(e->link, g_msg, len);
    if (len > max && rc != PURE_EMSGSIZE && rc != PURE_ECLOSED)
        FZ_FAIL("a datagram over pure_link_datagram_max was not refused with PURE_EMSGSIZE");
    if (rc == 0) {
        e->dg_len[id] = (uint16_t)len;
        e->dg_tx++;
    } else if (rc != PURE_EMSGSIZE && rc != PURE_EAGAIN && rc != PURE_ECLOSED) {
        FZ_FAIL("pure_link_send_datagram failed with an unexpected code");
    }
}

static void do_abort(end *e)
{
    e->aborted = 1;
    if (pure_link_abort(e->link, 0x200, "fuzz abort") != 0)
        FZ_FAIL("pure_link_abort on a live link failed");
    if (!e->closed)
        FZ_FAIL("pure_link_abort returned before on_closed");
}

/* ---- callbacks ---- */

static int on_accept(pure_link *link, const char *service, const uint8_t key[PURE_KEY_LEN],
                     void *ctx_user)
{
    (void)key;
    int side = (int)(intptr_t)ctx_user;
    if (service[0] != 'l')
        FZ_FAIL("accepted a link for a service never registered");
    int id = atoi(service + 1);
    if (id < 0 || id >= G.npairs)
        FZ_FAIL("accepted a link for a pair never connected");
    end *e = &G.pairs[id].e[1];
    if (e->side != side)
        FZ_FAIL("a link was offered to the side that opened it");
    int refuse = G.refuse[side] || e->known; /* known: an INIT resent after this pair's
                                                 responder end went away */
    if (getenv("LINK_FUZZ_VERBOSE"))
        fprintf(stderr, "link_fuzz: side %d offered pair %d: %s\n", side, id,
                refuse ? "refused" : "accepted");
    if (refuse) {
        G.refuse[side] = 0;
        return PURE_EREFUSED;
    }
    e->known = 1;
    e->link = link;
    pure_link_set_user(link, e);
    return 0;
}

static void on_established(pure_link *link, void *user)
{
    end *e = end_of(link, user);
    if (e->dir != 0)
        FZ_FAIL("on_established on a responder link");
}

static void on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    end *e = end_of(link, user);
    end *from = peer_of(e);
    if (e->rx >= from->tx)
        FZ_FAIL("delivered a message the peer never sent");
    if (n != from->tx_len[e->rx])
        FZ_FAIL("delivered a message of the wrong length");
    static uint8_t want[MAX_MSG];
    msg_fill(want, from, e->rx, n);
    if (memcmp(d, want, n) != 0)
        FZ_FAIL("delivered a message with the wrong bytes (wrong index, cut or mixed)");
    e->rx_hash = fnv(e->rx_hash, d, n);
    if (e->rx_hash != from->tx_hash[e->rx])
        FZ_FAIL("running hash of the delivered prefix differs from the sender's");
    e->rx++;
    G.in_cb++;
    if (e->reply_left > 0) {
        e->reply_left--;
        send_msg(e, e->reply_size);
    }
    if (alive(e) && e->on_msg_action) {
        int a = e->on_msg_action;
        e->on_msg_action = 0;
        if (a == 1)
            pure_link_finish(e->link);
        else if (a == 2 && pure_link_close(e->link, 0x300, "closed from on_message") == 0)
            e->closing = 1;
        else if (a == 3)
            do_abort(e);
    }
    G.in_cb--;
}

static void on_channel_message(pure_link *link, void *user, uint32_t ch, const uint8_t *d, size_t n)
{
    end *e = end_of(link, user);
    end *from = peer_of(e);
    if (ch < 1 || ch > 2)
        FZ_FAIL("delivered a message on a channel nobody sent on");
    int c = (int)ch - 1;
    if (e->crx[c] >= from->ctx_n[c])
        FZ_FAIL("delivered a channel message the peer never sent");
    if (n != from->ctx_len[c][e->crx[c]])
        FZ_FAIL("delivered a channel message of the wrong length");
    static uint8_t want[MAX_MSG];
    msg_fill(want, from, e->crx[c] | (uint64_t)ch << 16, n);
    if (memcmp(d, want, n) != 0)
        FZ_FAIL("delivered a channel message with the wrong bytes (wrong index, cut or mixed)");
    e->crx_hash[c] = fnv(e->crx_hash[c], d, n);
    if (!from->cx_any[c] && e->crx_hash[c] != from->ctx_hash[c][e->crx[c]])
        FZ_FAIL("running hash of a channel's delivered prefix differs from the sender's");
    if (from->cx_tx[c][e->crx[c]])
        FZ_FAIL("delivered a channel message its sender was told was cancelled");
    e->cx_rx[c][e->crx[c]] = 1;
    e->crx[c]++;
}

static void on_channel_cancelled(pure_link *link, void *user, uint32_t ch, uint64_t id,
                                 uint32_t flags)
{
    end *e = end_of(link, user);
    end *peer = peer_of(e);
    if (ch < 1 || ch > 2)
        FZ_FAIL("a cancel reported on a channel nobody sent on");
    int c = (int)ch - 1;
    if (flags & PURE_CANCELLED_SENT) { /* ours */
        if (id >= e->ctx_n[c] || !e->cx_asked[c][id] || e->cx_tx[c][id])
            FZ_FAIL("on_channel_cancelled(SENT) for a message never cancelled, or twice");
        if (id < e->cacked[c])
            FZ_FAIL("on_channel_cancelled(SENT) after on_channel_acked covered the id");
        if (peer->cx_rx[c][id] == 1)
            FZ_FAIL("on_channel_cancelled(SENT) for a message the peer delivered");
        e->cx_tx[c][id] = 1;
        return;
    }
    if (id != e->crx[c] || id >= peer->ctx_n[c])
        FZ_FAIL("a cancel of the peer's message out of order, or of one never sent");
    if (!peer->cx_asked[c][id])
        FZ_FAIL("a message reported cancelled that its sender never cancelled");
    e->cx_rx[c][id] = 2;
    e->crx[c]++;
}

static void on_channel_acked(pure_link *link, void *user, uint32_t ch, uint64_t through)
{
    end *e = end_of(link, user);
    end *peer = peer_of(e);
    if (ch < 1 || ch > 2 || through >= e->ctx_n[ch - 1] || through + 1 <= e->cacked[ch - 1])
        FZ_FAIL("on_channel_acked out of range or backwards");
    int c = (int)ch - 1;
    for (uint64_t id = e->cacked[c]; id <= through; id++)
        if (peer->cx_rx[c][id] == 2 && !e->cx_tx[c][id])
            FZ_FAIL("on_channel_acked covers a message the peer cancelled, not reported cancelled");
    e->cacked[c] = through + 1;
}

/* End e cancels one of its newest messages on channel ch. */
static void cancel_msg(end *e, uint32_t ch, uint32_t back)
{
    int c = (int)ch - 1;
    if (!e->ctx_n[c])
        return;
    uint64_t id = e->ctx_n[c] - 1 - (back < e->ctx_n[c] ? back : 0);
    int rc = pure_link_cancel(e->link, ch, id);
    if (rc == 0) {
        if (e->cx_req[c][id])
            FZ_FAIL("pure_link_cancel returned 0 twice for one message");
        e->cx_req[c][id] = 1;
        e->cx_asked[c][id] = 1;
        e->cx_any[c] = 1;
    } else if (rc == PURE_EALREADY) {
        if (id >= e->cacked[c] && !e->cx_asked[c][id])
            FZ_FAIL("pure_link_cancel said PURE_EALREADY for a message neither acknowledged nor "
                    "cancelled");
    } else if (rc != PURE_ESTATE && rc != PURE_ECLOSED) {
        FZ_FAIL("pure_link_cancel failed with an unexpected code");
    }
}

static void on_datagram(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    end *e = end_of(link, user);
    end *from = peer_of(e);
    uint32_t id;
    if (n < 4)
        FZ_FAIL("a datagram shorter than its id");
    memcpy(&id, d, 4);
    if (id >= from->dg_tx || n != from->dg_len[id])
        FZ_FAIL("a datagram the peer never sent, or of the wrong length");
    static uint8_t want[2048];
    msg_fill(want, from, (uint64_t)id | 3u << 16, n);
    if (memcmp(d + 4, want + 4, n - 4) != 0)
        FZ_FAIL("a datagram with the wrong bytes");
    if (e->dg_rx[id >> 3] & (1u << (id & 7)))
        FZ_FAIL("a datagram delivered twice");
    e->dg_rx[id >> 3] |= (uint8_t)(1u << (id & 7));
}

static void on_writable(pure_link *link, void *user)
{
    (void)end_of(link, user);
}

static void on_peer_finished(pure_link *link, void *user)
{
    end *e = end_of(link, user);
    if (e->rx != peer_of(e)->tx)
        FZ_FAIL("on_peer_finished before every message the peer sent was delivered");
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    if (!user)
        return; /* a link the application never accepted */
    end *e = end_of(link, user);
    e->closed = 1;
    e->closes++;
    if (!info || !info->reason)
        FZ_FAIL("on_closed without info or reason");
    if (info->first_unacked > info->next_id)
        FZ_FAIL("on_closed: first_unacked past next_id");
    if (info->next_id != e->tx)
        FZ_FAIL("on_closed: next_id is not the number of messages pure_link_send accepted");
    /* A graceful close this side asked for, all acknowledged: the peer has every message (a
     * closing peer still delivers until its on_closed). Not checked when the peer aborted its end
     * (it then drops what it acknowledged but had not delivered) or its context was freed. */
    end *peer = peer_of(e);
    if (getenv("LINK_FUZZ_VERBOSE"))
        fprintf(stderr, "link_fuzz: pair %d %s end closed: %s, unacked %llu..%llu%s\n", e->pair->id,
                e->dir ? "responder" : "initiator", pure_strerror(info->error),
                (unsigned long long)info->first_unacked, (unsigned long long)info->next_id,
                e->closing && !e->aborted && !peer->aborted && info->error == 0 &&
                        info->first_unacked == info->next_id
                    ? " (clean close: peer must have all)"
                    : "");
    if (e->closing && !e->aborted && !peer->aborted && info->error == 0 &&
        info->first_unacked == info->next_id && peer->rx != e->tx)
        FZ_FAIL("clean close with everything acknowledged, but the peer did not get every message");
    for (uint32_t ch = 1; ch <= 2; ch++) {
        uint64_t first = 0, next = 0;
        if (pure_link_channel_unacked(link, ch, &first, &next) != 0 || first > next ||
            next != e->ctx_n[ch - 1])
            FZ_FAIL("on_closed: a channel's unacked ids disagree with what was sent on it");
        if (e->closing && !e->aborted && !peer->aborted && info->error == 0 && first == next &&
            peer->crx[ch - 1] != e->ctx_n[ch - 1])
            FZ_FAIL("clean close with a channel all acknowledged, but the peer lacks some of it");
    }
}

static const pure_callbacks g_cb = {.on_accept = on_accept,
                                    .on_established = on_established,
                                    .on_message = on_message,
                                    .on_writable = on_writable,
                                    .on_peer_finished = on_peer_finished,
                                    .on_closed = on_closed,
                                    .on_channel_message = on_channel_message,
                                    .on_datagram = on_datagram,
                                    .on_channel_acked = on_channel_acked,
                                    .on_channel_cancelled = on_channel_cancelled};

/* ---- contexts and the network ---- */

static void ctx_start(int side)
{
    pure_settings s;
    fz_settings(&s, (uint8_t)(0x11 + 0x22 * side), &G.rng[side], &G.heap[side]);
    s.private_key[0] = G.key_gen[side]; /* a restarted side has a new key */
    s.allow_any = 1;
    s.callbacks = &g_cb;
    s.user = (void *)(intptr_t)side;
    s.max_message_size = MAX_MSG;
    s.send_backlog = 256u << 10;
    s.recv_window = 32u << 10;
    s.recv_window_max = 256u << 10;
    s.idle_timeout = 3000 * FZ_MS;
    s.handshake_timeout = 2000 * FZ_MS;
    if (G.opts & 1)
        s.congestion = PURE_CC_NEWRENO;
    if (G.opts & 2)
        s.send_queue = 0;
    if ((G.opts & 4) && side == 0)
        s.keepalive = 500 * FZ_MS;
    if (G.opts & 8)
        s.max_udp_payload = 1200;
    if (pure_ctx_new(&s, &G.ctx[side]) != 0)
        FZ_FAIL("pure_ctx_new");
    char name[8];
    for (int i = 0; i < MAX_PAIRS; i++) {
        snprintf(name, sizeof name, "l%d", i);
        if (pure_ctx_add_service(G.ctx[side], name) != 0)
            FZ_FAIL("pure_ctx_add_service");
    }
}

/* pure_ctx_free with links alive: every end of that side the application knows gets its
 * on_closed, and the context's heap is empty afterwards. */
static void ctx_stop(int side)
{
    for (int p = 0; p < G.npairs; p++)
        for (int d = 0; d < 2; d++)
            if (G.pairs[p].e[d].side == side && alive(&G.pairs[p].e[d]))
                G.pairs[p].e[d].aborted = 1;
    pure_ctx_free(G.ctx[side]);
    G.ctx[side] = NULL;
    for (int p = 0; p < G.npairs; p++)
        for (int d = 0; d < 2; d++) {
            end *e = &G.pairs[p].e[d];
            if (e->side == side && e->known && e->closes != 1) {
                FZ_FAIL("pure_ctx_free did not report a known link closed exactly once");
            }
        }
    if (G.heap[side].live != 0)
        FZ_FAIL("pure_ctx_free left allocations behind");
}

/* Everything side writes now goes in flight (what does not fit is lost). */
static void to_flight(void *arg, const pure_addr *dst, uint8_t *d, size_t len)
{
    int side = (int)(intptr_t)arg;
    if (len > DGRAM_MAX)
        FZ_FAIL("a datagram larger than max_udp_payload");
    if (G.nfl == MAX_FLIGHT || dst->len != 6 || dst->bytes[3] != 2 - side)
        return;
    int slot = G.free_slot[--G.nfree];
    G.order[G.nfl++] = slot;
    flight *f = &g_fl[slot];
    f->to = !side;
    f->from = G.addr[side];
    f->len = (uint16_t)len;
    memcpy(f->d, d, len);
}

static void pump(int side)
{
    fz_flush(G.ctx[side], &G.addr[side], NULL, G.now, to_flight, (void *)(intptr_t)side);
}

static void pump_all(void)
{
    pump(0);
    pump(1);
}

static void remove_flight(int i)
{
    G.free_slot[G.nfree++] = G.order[i];
    memmove(&G.order[i], &G.order[i + 1], (size_t)(G.nfl - i - 1) * sizeof G.order[0]);
    G.nfl--;
}

/* Delivers datagram i (a copy, flipped at byte flip_at if >= 0); removes it unless keep. */
static void deliver(int i, int keep, int flip_at)
{
    static uint8_t d[DGRAM_MAX];
    flight *f = &g_fl[G.order[i]];
    int to = f->to;
    size_t len = f->len;
    pure_addr from = f->from;
    memcpy(d, f->d, len);
    if (!keep)
        remove_flight(i);
    if (flip_at >= 0 && len > 0)
        d[(size_t)flip_at % len] ^= 0x40;
    G.deliveries++;
    fz_read(G.ctx[to], &from, d, len, G.now);
}

static void run_timers(void)
{
    for (int side = 0; side < 2; side++)
        for (int guard = 0; guard < 16 && pure_ctx_deadline(G.ctx[side]) <= G.now; guard++)
            pure_ctx_timeout(G.ctx[side], G.now);
}

static void advance(uint64_t dt)
{
    G.now += dt;
    run_timers();
}

static void settle(int rounds)
{
    for (int r = 0; r < rounds && G.deliveries < MAX_DELIVERIES; r++) {
        if (G.nfl == 0) {
            uint64_t next = pure_ctx_deadline(G.ctx[0]), d1 = pure_ctx_deadline(G.ctx[1]);
            if (d1 < next)
                next = d1;
            if (next == UINT64_MAX)
                return;
            if (next > G.now + 2000 * FZ_MS)
                next = G.now + 2000 * FZ_MS;
            if (next > G.now)
                G.now = next;
            run_timers();
        } else {
            int n = G.nfl;
            for (int i = 0; i < n && G.nfl > 0 && G.deliveries < MAX_DELIVERIES; i++)
                deliver(0, 0, -1);
        }
        pump_all();
    }
}

/* s1 s2 -> a size: 0..255, a multiple of 97 up to ~24 KiB, the edges around max_message_size,
 * or up to ~300 KiB (all but the first 64 KiB of that range refused). */
static size_t msg_size(uint8_t s1, uint8_t s2)
{
    switch (s1 >> 6) {
    case 0: return s2;
    case 1: return (size_t)((s1 & 63) << 8 | s2) % 256 * 97;
    case 2: {
        static const int64_t edge[] = {0, -1, 1, -2, 2, -1200, -MAX_MSG / 2, MAX_MSG};
        return (size_t)((int64_t)MAX_MSG + edge[s2 & 7]);
    }
    default: return (size_t)((s1 & 63) << 8 | s2) * 19;
    }
}

static void connect_from(int side)
{
    int alive_links = 0;
    for (int p = 0; p < G.npairs; p++)
        alive_links += alive(&G.pairs[p].e[0]) || alive(&G.pairs[p].e[1]);
    if (G.npairs == MAX_PAIRS || alive_links >= MAX_ALIVE)
        return;
    pair *p = &G.pairs[G.npairs];
    memset(p, 0, sizeof *p);
    p->id = G.npairs;
    for (int d = 0; d < 2; d++) {
        p->e[d].pair = p;
        p->e[d].dir = d;
        p->e[d].side = d ? !side : side;
    }
    G.npairs++;
    char name[8];
    snprintf(name, sizeof name, "l%d", p->id);
    pure_link *link = NULL;
    int rc = pure_connect(G.ctx[side], &G.addr[!side], pure_ctx_public_key(G.ctx[!side]), name,
                          &p->e[0], &link, G.now);
    if (rc != 0)
        FZ_FAIL("pure_connect");
    p->e[0].known = 1;
    p->e[0].link = link;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    memset(&G, 0, sizeof G);
    G.opts = data[0];
    for (int i = 0; i < MAX_FLIGHT; i++)
        G.free_slot[G.nfree++] = i;
    G.rng[0] = 1;
    G.rng[1] = 2;
    G.now = 1000 * FZ_MS;
    pure_crypto_null_seed(0x5eed);
    fz_addr(&G.addr[0], 1, 1000);
    fz_addr(&G.addr[1], 2, 1001);
    ctx_start(0);
    ctx_start(1);

    size_t pos = 1;
#define ARG() (pos < size ? data[pos++] : 0)
    for (int ops = 0; pos < size && ops < MAX_OPS && G.deliveries < MAX_DELIVERIES; ops++) {
        uint8_t op = data[pos] & 15, hi = data[pos] >> 4;
        pos++;
        end *e;
        switch (op) {
        case 0: connect_from(ARG() & 1); break;
        case 1: {
            e = pick_end(ARG());
            uint8_t s1 = ARG(), s2 = ARG();
            if (e && hi == 15)
                send_dgram(e, (size_t)s1 << 8 | s2);
            else if (e && hi == 14)
                cancel_msg(e, 1 + (s1 & 1u), (s1 >> 1) & 7u);
            else if (e && hi == 13)
                send_msg_deadline(e, 1 + (s1 & 1u), (size_t)s2 * 97, (uint64_t)(s1 >> 1) * 1000000);
            else if (e && hi % 3)
                send_msg_on(e, hi % 3, msg_size(s1, s2));
            else if (e)
                send_msg(e, msg_size(s1, s2));
            break;
        }
        case 2: {
            e = pick_end(ARG());
            uint8_t r = ARG();
            if (e) {
                e->reply_left = r & 15;
                e->reply_size = (size_t)(r >> 4) * 613;
            }
            break;
        }
        case 3:
        case 4:
        case 5: {
            uint8_t i = ARG();
            if (G.nfl == 0)
                break;
            if (op == 4)
                remove_flight(i % G.nfl);
            else
                deliver(i % G.nfl, op == 5, -1);
            break;
        }
        case 6: {
            int n = ARG();
            if (n == 0)
                n = G.nfl;
            while (n-- > 0 && G.nfl > 0)
                deliver(0, 0, -1);
            break;
        }
        case 7: {
            uint8_t t = ARG();
            advance(t < 200 ? (uint64_t)(t + 1) * FZ_MS : (uint64_t)(t - 199) * 1000 * FZ_MS);
            break;
        }
        case 8:
            if ((e = pick_end(ARG())) != NULL)
                pure_link_finish(e->link);
            break;
        case 9:
            if ((e = pick_end(ARG())) != NULL && pure_link_close(e->link, 0x100, "fuzz") == 0)
                e->closing = 1;
            break;
        case 10:
            if ((e = pick_end(ARG())) != NULL)
                do_abort(e);
            break;
        case 11: {
            e = pick_end(ARG());
            uint8_t a = ARG();
            if (e)
                e->on_msg_action = a & 3;
            break;
        }
        case 12: {
            int side = ARG() & 1;
            ctx_stop(side);
            G.key_gen[side]++;
            ctx_start(side);
            break;
        }
        case 13: settle(ARG() % 32 + 1); break;
        case 14: {
            uint8_t i = ARG(), p = ARG();
            if (G.nfl)
                deliver(i % G.nfl, 0, p);
            break;
        }
        case 15: G.refuse[ARG() & 1] = 1; break;
        }
        pump_all();
    }
#undef ARG
    if (getenv("LINK_FUZZ_VERBOSE"))
        for (int p = 0; p < G.npairs; p++) {
            const end *a = &G.pairs[p].e[0], *b = &G.pairs[p].e[1];
            fprintf(stderr,
                    "link_fuzz: pair %d side %d->%d: sent %llu/%llu received %llu/%llu%s%s\n", p,
                    a->side, b->side, (unsigned long long)a->tx, (unsigned long long)b->tx,
                    (unsigned long long)b->rx, (unsigned long long)a->rx,
                    a->closed ? " initiator closed" : "", b->closed ? " responder closed" : "");
            int rxa = 0, rxb = 0;
            for (int i = 0; i < MAX_DGRAMS; i++)
                rxa += (a->dg_rx[i >> 3] >> (i & 7)) & 1, rxb += (b->dg_rx[i >> 3] >> (i & 7)) & 1;
            fprintf(stderr, "link_fuzz: pair %d datagrams: sent %u/%u received %d/%d\n", p,
                    a->dg_tx, b->dg_tx, rxb, rxa);
            for (int c = 0; c < 2; c++)
                fprintf(stderr,
                        "link_fuzz: pair %d channel %d: sent %llu/%llu received %llu/%llu\n", p,
                        c + 1, (unsigned long long)a->ctx_n[c], (unsigned long long)b->ctx_n[c],
                        (unsigned long long)b->crx[c], (unsigned long long)a->crx[c]);
        }
    ctx_stop(0);
    ctx_stop(1);
    shared_check_all();
    for (int p = 0; p < G.npairs; p++)
        for (int d = 0; d < 2; d++)
            if (G.pairs[p].e[d].known && G.pairs[p].e[d].closes != 1)
                FZ_FAIL("a known link was not reported closed exactly once");
    return 0;
}
