/* SPDX-License-Identifier: MIT */
/* recv_fuzz.c: libFuzzer target for the receive path of an open link, packet after packet, with
 * the real session keys (null crypto, deterministic).
 *
 * Two contexts, A (initiator) and B (responder), complete a real handshake in the harness. Then
 * the input is a list of records; most build a packet from A to B out of structured frames which
 * the harness encodes (valid varints, offsets near where B's stream stands, ACKs of packet numbers
 * B really sent), seals with A's transmit keys (fz_seal) and feeds to B, so the fuzzer spends its
 * time in frame dispatch, reassembly through the reorder ring, flow control, ACK processing and
 * closing rather than in the AEAD. B's packets are kept in a queue; a record can hand them to A,
 * whose real ACKs and packets then go to B.
 *
 * Byte 0: bits 0-1 the message-size class of A's stream (0: 0..63 B, 1: 0..1.5 KiB, 2: 0..20
 * KiB, 3: around max_message_size = 64 KiB, some over it), bit 2 NewReno, bits 4-5 messages B
 * sends before the records (packets in flight to acknowledge), bit 6 B's application closes the
 * link from inside its first on_message (with pure_link_abort if bit 3), bit 7 send_queue 0.
 * Byte 1 seeds the message lengths.
 *
 * A's stream is always the same function of (byte 0, byte 1): "pure", then message k of length
 * L(k) whose body byte j is (k * 7 + j) & 255, over its first 1 MiB. DATA frames carry the real
 * stream bytes at their offsets (unless a record asks for junk bytes; from then on the content
 * checks are off), so B must deliver exactly those messages, whole and in order. (A's link sends
 * the preamble itself when it opens, so B's stream stands at offset 4 when the records start.)
 * RECV_FUZZ_VERBOSE=1 prints how each link closed, each packet's fate and what was delivered;
 * RECV_FUZZ_TRACE=1 prints the frame bytes of every packet the harness seals.
 *
 * Records, by the low 3 bits of their first byte c:
 *   0 PACKET  n=next byte: (n & 7) + 1 frames follow; c bit 3 seals in the wrong key phase, bit 4
 *             spoils the tag, bit 5 takes the packet number (next byte) below the newest sent
 *             (reordering and replays); each frame is a type byte t and its arguments:
 *             t%8 = 0 DATA    o l1 l2: offset recv_next + o*97 (o < 128) or recv_next - (o-128)*53,
 *                             length (l1 l2) % 1400; t bit 3: FIN; t bit 4: junk bytes; t bit 5:
 *                             offset + 1 MiB * (o & 3) (past the credit); t bit 6: a CHAN_DATA
 *                             frame instead, on channel 1 + (t >> 7), whose stream is A's
 *                             without its preamble (channel offset x = A's offset x + 4),
 *                             offsets from that channel's receive point (FIN ignored)
 *                 1 ACK     k g1 l1 ...: (k & 7) + 1 ranges of B's packet numbers from the newest
 *                             B sent, each gap/length byte pair; t bit 3: a largest beyond it
 *                 2 CREDIT  v1 v2: B's send_next + (v1 v2) * 64 (t bit 3: just (v1 v2))
 *                 3 PING    (t bit 3: a DATAGRAM instead, n: n bytes, id u16 then (id * 7 + i);
 *                             t bit 4: a CHAN_CANCEL instead, a: of message k of A's stream on
 *                             channel 1 + (t >> 7), k = B's next id there + (a & 7), or with
 *                             a bit 3 (a >> 4) back from it (delivered already); t bit 5: its
 *                             range moved and stretched by two more bytes (checks then off))
 *                 4 CLOSE   code, reason length (% 64), reason bytes
 *                 5 REKEY   flag (% 3), generation, 32 key bytes
 *                 6 PADDING n
 *                 7 RAW     n, n raw bytes (they may parse as DATA: content checks off)
 *   1 BULK    k: (k % 64 + 1) KiB of A's stream in order from B's receive point, within credit
 *   2 B SEND  s: B's application sends a message of s * 131 bytes
 *   3 TO A    n: B's queued packets (n == 0: all, else the n oldest) go to A, A's answers to B
 *   4 DROP    B's queued packets are lost
 *   5 TIME    t: advance (t + 1) * 7 ms and run both contexts' timers
 *   6 REKEY   A starts a real rekey; A and B exchange until it completes (later packets use the
 *             new keys and phase)
 *   7 APP     a: B's application calls pure_link_finish (a%4 == 0), pure_link_close (1) or
 *             pure_link_abort (2), or A's application closes its link (3)
 * At most 1500 records and 768 KiB of DATA bytes per input.
 *
 * Invariants (abort() on violation): every pure_ctx_read code is documented and counted
 * (fz_read); B delivers only whole messages of A's stream, in order (on each channel
 * separately: channels 1 and 2 carry the same messages; a message A cancelled may instead be
 * reported cancelled, in its place in the order, and only one A cancelled), each of whose bytes was
 * sent in some DATA frame, and on_peer_finished only at a FIN offset A sent after every message
 * before it; A delivers B's messages whole and in order; no callback of a link after its
 * on_closed; on_closed exactly once for each link, pure_ctx_free included; nothing left
 * allocated after pure_ctx_free. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "fuzz_common.h"
#include "frame.h"
#include "rekey.h"
#include "pure.h"
#include "varint.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STREAM_MAX (1u << 20)
#define MAX_MSG (64u << 10)
#define MAX_MSGS 4096
#define MAX_RECORDS 1500
#define DATA_BUDGET (768u << 10)
#define QUEUE_MAX 128
#define DGRAM_MAX 1472
#define MAX_FINS 32

/* One link as an application sees it; its callbacks check they come before its on_closed. */
typedef struct app {
    pure_link *link;
    int known, closes;
    uint64_t delivered;
} app;

static struct {
    pure_ctx *a, *b;
    fz_heap heap_a, heap_b;
    uint64_t rng_a, rng_b;
    pure_addr addr_a, addr_b;
    uint64_t now;
    app ua, ub; /* A's link, B's link */
    int close_on_message, abort_not_close;
    int junk;         /* junk DATA bytes were sent: content checks off */
    uint16_t dg_next; /* the next DATAGRAM's id */
    uint8_t dg_seen[65536 / 8];
    uint64_t next_pn, data_budget;
    uint64_t fins[MAX_FINS];
    int nfins;
    /* B's messages to A: lengths */
    uint64_t b_sent;
    uint32_t b_len[MAX_MSGS];
    /* B's packets waiting to go to A */
    int nq;
    uint16_t qlen[QUEUE_MAX];
    uint8_t q[QUEUE_MAX][DGRAM_MAX];
} W;

/* A's stream, built once per (byte 0 & 3, byte 1): bytes, message starts, sent-byte bitmap. */
static uint8_t s_bytes[STREAM_MAX];
static uint32_t s_start[STREAM_MAX / 4]; /* offset of message k's length prefix */
static uint32_t s_count;                 /* messages that fit wholly */
static int s_key = -1;
static uint8_t s_sent[STREAM_MAX / 8];
static uint8_t s_sent_ch[2][STREAM_MAX / 8]; /* channels 1 and 2, by A-stream offset */
static uint64_t ch_delivered[2];
#define CANCEL_MAX 65536
static uint8_t ch_cancel_sent[2][CANCEL_MAX / 8]; /* CHAN_CANCEL frames sent, by message */

static uint32_t msg_len(int cls, uint32_t seed, uint32_t k)
{
    uint32_t h = (k + 1) * 2654435761u ^ seed * 40503u;
    h ^= h >> 15;
    switch (cls) {
    case 0: return h % 64;
    case 1: return h % 1501;
    case 2: return h % 20001;
    default: return MAX_MSG - 2 + h % 4; /* 64 KiB - 2 .. 64 KiB + 1 */
    }
}

static void stream_build(int cls, uint32_t seed)
{
    int key = cls << 8 | (int)seed;
    if (key == s_key)
        return;
    s_key = key;
    memcpy(s_bytes, PURE_STREAM_PREAMBLE, 4);
    uint32_t off = 4;
    s_count = 0;
    for (uint32_t k = 0;; k++) {
        uint32_t len = msg_len(cls, seed, k);
        if ((uint64_t)off + 4 + len > STREAM_MAX)
            break;
        s_start[s_count++] = off;
        pure_put_u32be(s_bytes + off, len);
        for (uint32_t j = 0; j < len; j++)
            s_bytes[off + 4 + j] = (uint8_t)(k * 7 + j);
        off += 4 + len;
    }
    memset(s_bytes + off, 0xee, STREAM_MAX - off); /* a message cut by the end: never whole */
}

static void mark_sent(uint64_t off, uint64_t len)
{
    for (uint64_t i = off; i < off + len && i < STREAM_MAX; i++)
        s_sent[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static void mark_sent_ch(int c, uint64_t off, uint64_t len)
{
    for (uint64_t i = off; i < off + len && i < STREAM_MAX; i++)
        s_sent_ch[c][i >> 3] |= (uint8_t)(1u << (i & 7));
}

static int was_sent_ch(int c, uint64_t off, uint64_t len)
{
    for (uint64_t i = off; i < off + len; i++)
        if (i >= STREAM_MAX || !(s_sent_ch[c][i >> 3] & (1u << (i & 7))))
            return 0;
    return 1;
}

static int was_sent(uint64_t off, uint64_t len)
{
    for (uint64_t i = off; i < off + len; i++)
        if (i >= STREAM_MAX || !(s_sent[i >> 3] & (1u << (i & 7))))
            return 0;
    return 1;
}

/* ---- callbacks ---- */

static app *app_of(pure_link *link, void *user)
{
    app *u = user;
    if (u != &W.ua && u != &W.ub)
        FZ_FAIL("callback with a wrong user pointer");
    if (u->link != link)
        FZ_FAIL("callback's link differs from the application's");
    if (u->closes) {
        FZ_FAIL("callback after on_closed");
    }
    return u;
}

static int on_accept(pure_link *link, const char *service, const uint8_t key[PURE_KEY_LEN],
                     void *ctx_user)
{
    (void)key;
    (void)ctx_user;
    if (strcmp(service, "pure") != 0)
        FZ_FAIL("accepted a link for a service never registered");
    if (W.ub.known)
        return PURE_EREFUSED; /* one link per input */
    W.ub.known = 1;
    W.ub.link = link;
    pure_link_set_user(link, &W.ub);
    return 0;
}

static void on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    app *u = app_of(link, user);
    uint64_t k = u->delivered++;
    if (u == &W.ua) { /* B's messages: k * 131 bytes of k */
        if (k >= W.b_sent || n != W.b_len[k])
            FZ_FAIL("A delivered a message B never sent");
        for (size_t j = 0; j < n; j++)
            if (d[j] != (uint8_t)(k + j))
                FZ_FAIL("A delivered wrong bytes");
        return;
    }
    if (!W.junk) {
        if (k >= s_count)
            FZ_FAIL("B delivered a message past A's stream");
        uint32_t off = s_start[k];
        if (n != msg_len(s_key >> 8, (uint32_t)(s_key & 255), (uint32_t)k))
            FZ_FAIL("B delivered a message of the wrong length");
        if (memcmp(d, s_bytes + off + 4, n) != 0)
            FZ_FAIL("B delivered wrong bytes");
        if (!was_sent(off, 4 + n))
            FZ_FAIL("B delivered a message whose bytes were never all sent");
    }
    if (W.close_on_message && link->state == PURE_LS_OPEN) {
        W.close_on_message = 0;
        if (W.abort_not_close) {
            if (pure_link_abort(link, 0x100, "from on_message") != 0 || !u->closes)
                FZ_FAIL("pure_link_abort from on_message did not close the link at once");
        } else {
            pure_link_close(link, 0x100, "from on_message");
        }
    }
}

/* B's datagrams: whole, each id once (a replayed packet must not bring one again). */
static void on_datagram(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    app *u = app_of(link, user);
    if (u != &W.ub)
        FZ_FAIL("A received a datagram nobody sent");
    if (W.junk)
        return; /* RAW frames may hold datagrams of their own */
    if (n < 2)
        FZ_FAIL("a datagram shorter than its id");
    uint16_t id = (uint16_t)(d[0] << 8 | d[1]);
    for (size_t i = 2; i < n; i++)
        if (d[i] != (uint8_t)(id * 7 + (i - 2)))
            FZ_FAIL("a datagram's bytes differ from what was sent");
    if (id >= W.dg_next)
        FZ_FAIL("a datagram that was never sent");
    if (W.dg_seen[id >> 3] & (1u << (id & 7)))
        FZ_FAIL("a datagram delivered twice");
    W.dg_seen[id >> 3] |= (uint8_t)(1u << (id & 7));
}

/* B's channels 1 and 2 carry A's messages too, each channel in its own order. */
static void on_channel_message(pure_link *link, void *user, uint32_t ch, const uint8_t *d, size_t n)
{
    app *u = app_of(link, user);
    if (u != &W.ub || ch < 1 || ch > 2)
        FZ_FAIL("a channel message nobody sent");
    uint64_t k = ch_delivered[ch - 1]++;
    if (W.junk)
        return;
    if (k >= s_count)
        FZ_FAIL("B delivered a channel message past A's stream");
    uint32_t off = s_start[k];
    if (n != msg_len(s_key >> 8, (uint32_t)(s_key & 255), (uint32_t)k))
        FZ_FAIL("B delivered a channel message of the wrong length");
    if (memcmp(d, s_bytes + off + 4, n) != 0)
        FZ_FAIL("B delivered wrong bytes on a channel");
    if (!was_sent_ch((int)ch - 1, off, 4 + n))
        FZ_FAIL("B delivered a channel message whose bytes were never all sent on it");
}

/* B drops a channel message A cancelled: the next in that channel's order, and one A cancelled. */
static void on_channel_cancelled(pure_link *link, void *user, uint32_t ch, uint64_t id,
                                 uint32_t flags)
{
    app *u = app_of(link, user);
    if (u != &W.ub || ch < 1 || ch > 2 || flags != 0)
        FZ_FAIL("a cancel reported for a message nobody sent, or as B's own");
    uint64_t k = ch_delivered[ch - 1]++;
    if (W.junk)
        return;
    if (id != k || k >= CANCEL_MAX || !(ch_cancel_sent[ch - 1][k >> 3] & (1u << (k & 7))))
        FZ_FAIL("B reported a channel message cancelled out of order, or one never cancelled");
}

static void on_peer_finished(pure_link *link, void *user)
{
    app *u = app_of(link, user);
    if (u != &W.ub || W.junk)
        return;
    uint64_t end = u->delivered < s_count ? s_start[u->delivered] : 0;
    if (getenv("RECV_FUZZ_VERBOSE"))
        fprintf(stderr, "recv_fuzz: B: peer finished after %llu messages (offset %llu)\n",
                (unsigned long long)u->delivered, (unsigned long long)end);
    int ok = 0;
    for (int i = 0; i < W.nfins; i++)
        ok |= W.fins[i] == end;
    if (!ok)
        FZ_FAIL("on_peer_finished where no FIN was sent after the messages delivered");
}

static void on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    if (!user)
        return; /* never accepted */
    app *u = app_of(link, user);
    u->closes++;
    if (getenv("RECV_FUZZ_VERBOSE"))
        fprintf(stderr, "recv_fuzz: %s's link closed: %s, peer code %llu, unacked %llu..%llu\n",
                u == &W.ua ? "A" : "B", pure_strerror(info->error),
                (unsigned long long)info->peer_code, (unsigned long long)info->first_unacked,
                (unsigned long long)info->next_id);
    if (!info || !info->reason || info->first_unacked > info->next_id)
        FZ_FAIL("on_closed info");
}

static void on_other(pure_link *link, void *user)
{
    (void)app_of(link, user);
}

static const pure_callbacks g_cb = {.on_accept = on_accept,
                                    .on_established = on_other,
                                    .on_message = on_message,
                                    .on_writable = on_other,
                                    .on_peer_finished = on_peer_finished,
                                    .on_closed = on_closed,
                                    .on_channel_message = on_channel_message,
                                    .on_channel_cancelled = on_channel_cancelled,
                                    .on_datagram = on_datagram};

static pure_ctx *make_ctx(uint8_t key, uint64_t *rng, fz_heap *heap, uint8_t opts)
{
    pure_settings s;
    fz_settings(&s, key, rng, heap);
    s.allow_any = 1;
    s.callbacks = &g_cb;
    s.max_message_size = MAX_MSG;
    s.recv_window = 16u << 10;
    s.recv_window_max = 256u << 10;
    s.send_backlog = 64u << 10;
    if (opts & 4)
        s.congestion = PURE_CC_NEWRENO;
    if (opts & 0x80)
        s.send_queue = 0;
    pure_ctx *ctx = NULL;
    if (pure_ctx_new(&s, &ctx) != 0)
        FZ_FAIL("pure_ctx_new");
    return ctx;
}

/* ---- moving datagrams ---- */

static void queue_b(void *arg, const pure_addr *dst, uint8_t *d, size_t n)
{
    (void)arg;
    (void)dst;
    if (W.nq == QUEUE_MAX || n > DGRAM_MAX)
        return; /* lost */
    W.qlen[W.nq] = (uint16_t)n;
    memcpy(W.q[W.nq++], d, n);
}

static void flush_b(void)
{
    fz_flush(W.b, &W.addr_b, NULL, W.now, queue_b, NULL);
}

/* The n oldest of B's packets (all if n == 0) go to A; A's answers go to B. */
static void to_a(int n)
{
    if (n == 0 || n > W.nq)
        n = W.nq;
    for (int i = 0; i < n; i++)
        fz_read(W.a, &W.addr_b, W.q[i], W.qlen[i], W.now);
    memmove(W.q, W.q + n, (size_t)(W.nq - n) * sizeof W.q[0]);
    memmove(W.qlen, W.qlen + n, (size_t)(W.nq - n) * sizeof W.qlen[0]);
    W.nq -= n;
    fz_flush(W.a, &W.addr_a, W.b, W.now, NULL, NULL);
    flush_b();
}

static void run_timers(void)
{
    for (int guard = 0; guard < 16 && pure_ctx_deadline(W.a) <= W.now; guard++)
        pure_ctx_timeout(W.a, W.now);
    for (int guard = 0; guard < 16 && pure_ctx_deadline(W.b) <= W.now; guard++)
        pure_ctx_timeout(W.b, W.now);
    fz_flush(W.a, &W.addr_a, W.b, W.now, NULL, NULL);
    flush_b();
}

static int link_open(const app *u)
{
    return u->known && !u->closes;
}

/* Our packet numbers stay above the ones A uses itself, so neither looks like a replay. */
static uint64_t take_pn(void)
{
    if (W.next_pn < pure_rtb_next_pn(&W.ua.link->rtb) + 64)
        W.next_pn = pure_rtb_next_pn(&W.ua.link->rtb) + 64;
    return W.next_pn++;
}

static uint8_t pkt[PURE_DATA_HEADER + 65536 + PURE_TAG_LEN];

static void send_to_b(size_t len, uint64_t pn, int flip_phase, int spoil)
{
    if (getenv("RECV_FUZZ_TRACE")) {
        fprintf(stderr, "recv_fuzz: sealing packet %llu flip %d spoil %d:", (unsigned long long)pn,
                flip_phase, spoil);
        for (size_t i = 0; i < len && i < 48; i++)
            fprintf(stderr, " %02x", pkt[PURE_DATA_HEADER + i]);
        fprintf(stderr, "\n");
    }
    size_t n = fz_seal(W.ua.link, pkt, len, pn, flip_phase);
    if (spoil)
        pkt[n - 1] ^= 0x20;
    int rc = fz_read(W.b, &W.addr_a, pkt, n, W.now);
    if (getenv("RECV_FUZZ_VERBOSE"))
        fprintf(stderr, "recv_fuzz: packet %llu (%zu frame bytes%s%s) to B: %s\n",
                (unsigned long long)pn, len, flip_phase ? ", wrong phase" : "",
                spoil ? ", spoilt tag" : "", rc ? pure_strerror(rc) : "read");
    /* refused; PURE_ECLOSED when it was the forgery that reached max_failed_opens */
    if (spoil && rc != PURE_ECRYPTO && rc != PURE_EINVAL && rc != PURE_ECLOSED)
        FZ_FAIL("a packet with a spoilt tag was accepted");
    flush_b();
}

/* ---- frames ---- */

typedef struct rd {
    const uint8_t *p, *end;
} rd;

static uint8_t take(rd *r)
{
    return r->p < r->end ? *r->p++ : 0;
}

/* Appends one frame described at r to out (room: at least 1600 bytes left); returns the end. */
static uint8_t *put_frame(rd *r, uint8_t *out)
{
    uint8_t t = take(r);
    pure_link *lb = link_open(&W.ub) ? W.ub.link : NULL;
    switch (t & 7) {
    case 0:
        if (t & 0x40) { /* CHAN_DATA on channel 1 or 2 */
            int c = (t >> 7) & 1;
            uint8_t o = take(r), l1 = take(r), l2 = take(r);
            const pure_chan *ch = lb ? pure_chans_find(lb->chans, (uint64_t)c + 1) : NULL;
            uint64_t base = ch ? ch->recv_next : 0, off;
            uint64_t len = (uint64_t)(l1 << 8 | l2) % 1400;
            if (o < 128)
                off = base + (uint64_t)o * 97;
            else
                off = base > (uint64_t)(o - 128) * 53 ? base - (uint64_t)(o - 128) * 53 : 0;
            if (t & 0x20)
                off += (uint64_t)(o & 3) * STREAM_MAX;
            if (len > W.data_budget)
                len = W.data_budget;
            W.data_budget -= len;
            pure_pkt k = {out, out + 1600};
            uint8_t *body = pure_pkt_chan_data(&k, (uint64_t)c + 1, off, len);
            if ((t & 0x10) || off + 4 + len > STREAM_MAX) {
                for (uint64_t i = 0; i < len; i++)
                    body[i] = take(r);
                if (len)
                    W.junk = 1;
            } else {
                memcpy(body, s_bytes + off + 4, len);
                mark_sent_ch(c, off + 4, len);
            }
            return k.p;
        }
        { /* DATA */
            uint8_t o = take(r), l1 = take(r), l2 = take(r);
            uint64_t base = lb ? lb->recv_next : 0, off;
            uint64_t len = (uint64_t)(l1 << 8 | l2) % 1400;
            if (o < 128)
                off = base + (uint64_t)o * 97;
            else
                off = base > (uint64_t)(o - 128) * 53 ? base - (uint64_t)(o - 128) * 53 : 0;
            if (t & 0x20)
                off += (uint64_t)(o & 3) * STREAM_MAX;
            if (len > W.data_budget)
                len = W.data_budget;
            W.data_budget -= len;
            int fin =
                (t & 8) != 0 && W.nfins < MAX_FINS; /* a FIN the oracle cannot record is not sent */
            out = pure_frame_put_data_header(out, off, len, fin);
            if ((t & 0x10) || off + len > STREAM_MAX) {
                for (uint64_t i = 0; i < len; i++)
                    out[i] = take(r);
                if (len)
                    W.junk = 1;
            } else {
                memcpy(out, s_bytes + off, len);
                mark_sent(off, len);
            }
            if (fin)
                W.fins[W.nfins++] = off + len;
            return out + len;
        }
    case 1: { /* ACK of B's packet numbers, newest first */
        uint64_t top = lb ? pure_rtb_next_pn(&lb->rtb) : 0;
        if (t & 8)
            top += take(r) + 1u; /* acknowledges packets never sent */
        if (top == 0)
            return out;
        uint8_t k = (uint8_t)(take(r) % 8 + 1);
        uint64_t largest = top - 1, lo;
        uint8_t first = take(r);
        if (first > largest)
            first = (uint8_t)largest;
        uint8_t *p = out;
        *p++ = PURE_FRAME_ACK;
        uint8_t *count_at;
        p = pure_varint_put(p, largest);
        p = pure_varint_put(p, take(r) * 100u); /* ACK delay, us */
        count_at = p++;                         /* count < 8: one byte */
        p = pure_varint_put(p, first);
        lo = largest - first;
        uint8_t n = 0;
        for (uint8_t i = 1; i < k; i++) {
            uint8_t gap = take(r) % 8, len = take(r) % 16;
            if (lo < (uint64_t)gap + 2 + len)
                break;
            p = pure_varint_put(p, gap);
            p = pure_varint_put(p, len);
            lo = lo - gap - 2 - len;
            n++;
        }
        *count_at = n;
        return p;
    }
    case 2: { /* CREDIT */
        uint64_t v = (uint64_t)take(r) << 8;
        v |= take(r);
        if (!(t & 8))
            v = (lb ? lb->send_next : 0) + v * 64;
        return pure_frame_put_credit(out, v);
    }
    case 3:
        if (t & 0x10) { /* CHAN_CANCEL of a message of A's stream on channel 1 or 2 */
            int c = (t >> 7) & 1;
            uint8_t a = take(r);
            const pure_chan *ch = lb ? pure_chans_find(lb->chans, (uint64_t)c + 1) : NULL;
            uint64_t k = (ch ? ch->msgs_received : 0) + (a & 7);
            if (a & 8)
                k = k > (uint64_t)(a >> 4) ? k - (a >> 4) : 0; /* one delivered already */
            if (k >= s_count)
                k = s_count ? s_count - 1 : 0;
            uint64_t off = s_start[k] - 4, len = 4 + msg_len(s_key >> 8, s_key & 255, (uint32_t)k);
            if (t & 0x20) { /* a range that is not that message's: content checks off */
                off += take(r);
                len += take(r);
                W.junk = 1;
            }
            if (k < CANCEL_MAX)
                ch_cancel_sent[c][k >> 3] |= (uint8_t)(1u << (k & 7));
            pure_pkt kk = {out, out + 1600};
            pure_pkt_chan_cancel(&kk, (uint64_t)c + 1, k, off, len);
            return kk.p;
        }
        if (t & 8) { /* a DATAGRAM: id, then bytes derived from it */
            uint8_t n = take(r), d[2 + 255];
            uint16_t id = W.dg_next++;
            d[0] = (uint8_t)(id >> 8);
            d[1] = (uint8_t)id;
            for (int i = 0; i < n; i++)
                d[2 + i] = (uint8_t)(id * 7 + i);
            pure_pkt k = {out, out + 1600};
            pure_pkt_datagram(&k, d, 2u + n);
            return k.p;
        }
        *out++ = PURE_FRAME_PING;
        return out;
    case 4: { /* CLOSE */
        char reason[64];
        uint8_t code = take(r), rl = take(r) % 64;
        for (uint8_t i = 0; i < rl; i++)
            reason[i] = (char)take(r);
        return pure_frame_put_close(out, code, reason, rl);
    }
    case 5: /* REKEY: flag, generation u32, key */
        *out++ = PURE_FRAME_REKEY;
        *out++ = take(r) % 3;
        pure_put_u32be(out, take(r));
        out += 4;
        for (int i = 0; i < 32; i++)
            *out++ = take(r);
        return out;
    case 6: {
        uint8_t n = take(r);
        memset(out, 0, n);
        return out + n;
    }
    default: { /* RAW */
        /* raw bytes may well parse as a DATA frame (with FIN) carrying other bytes than A's
         * stream: from here on the content and FIN checks are off, as for junk DATA */
        W.junk = 1;
        uint8_t n = take(r);
        for (uint8_t i = 0; i < n; i++)
            *out++ = take(r);
        return out;
    }
    }
}

/* ---- records ---- */

static void record_packet(uint8_t c, rd *r)
{
    int frames = take(r) % 8 + 1;
    uint64_t pn = take_pn();
    if (c & 0x20) {
        uint64_t back = take(r);
        pn = back < pn ? pn - back : 0;
    }
    uint8_t *payload = pkt + PURE_DATA_HEADER, *p = payload;
    for (int i = 0; i < frames; i++)
        p = put_frame(r, p); /* 8 frames of at most ~1440 bytes: fits */
    send_to_b((size_t)(p - payload), pn, (c & 8) != 0, (c & 0x10) != 0);
}

/* (kib) KiB of A's stream in order from where B stands, within the credit it gave. */
static void record_bulk(uint32_t kib)
{
    uint64_t remaining = (uint64_t)kib * 1024;
    while (remaining && W.data_budget && link_open(&W.ub) && link_open(&W.ua) &&
           W.ub.link->state == PURE_LS_OPEN) {
        uint64_t off = W.ub.link->recv_next, lim = pure_credit_granted(&W.ub.link->credit);
        if (lim > STREAM_MAX)
            lim = STREAM_MAX;
        if (off >= lim)
            break;
        uint64_t chunk = remaining < 1200 ? remaining : 1200;
        if (chunk > lim - off)
            chunk = lim - off;
        if (chunk > W.data_budget)
            chunk = W.data_budget;
        W.data_budget -= chunk;
        uint8_t *payload = pkt + PURE_DATA_HEADER;
        uint8_t *e = pure_frame_put_data_header(payload, off, chunk, 0);
        memcpy(e, s_bytes + off, chunk);
        mark_sent(off, chunk);
        send_to_b((size_t)(e + chunk - payload), take_pn(), 0, 0);
        remaining -= chunk;
    }
}

static void b_send(size_t len)
{
    static uint8_t msg[256 * 131];
    if (!link_open(&W.ub) || W.b_sent >= MAX_MSGS)
        return;
    for (size_t j = 0; j < len; j++)
        msg[j] = (uint8_t)(W.b_sent + j);
    int64_t rc = pure_link_send(W.ub.link, msg, len);
    if (rc >= 0) {
        if ((uint64_t)rc != W.b_sent)
            FZ_FAIL("pure_link_send id out of sequence");
        W.b_len[W.b_sent++] = (uint32_t)len;
    } else if (rc != PURE_EAGAIN && rc != PURE_ECLOSED) {
        FZ_FAIL("pure_link_send failed with an unexpected code");
    }
    flush_b();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t opts = data[0];
    memset(&W, 0, sizeof W);
    stream_build(opts & 3, data[1]);
    memset(s_sent, 0, sizeof s_sent);
    memset(s_sent_ch, 0, sizeof s_sent_ch);
    ch_delivered[0] = ch_delivered[1] = 0;
    memset(ch_cancel_sent, 0, sizeof ch_cancel_sent);
    W.rng_a = 1;
    W.rng_b = 2;
    W.now = 1000 * FZ_MS;
    W.close_on_message = (opts & 0x40) != 0;
    W.abort_not_close = (opts & 8) != 0;
    W.data_budget = DATA_BUDGET;
    pure_crypto_null_seed(0x5eed);
    fz_addr(&W.addr_a, 1, 1000);
    fz_addr(&W.addr_b, 2, 1001);
    W.a = make_ctx(0x11, &W.rng_a, &W.heap_a, opts);
    W.b = make_ctx(0x22, &W.rng_b, &W.heap_b, opts);
    if (pure_ctx_add_service(W.b, "pure") != 0)
        FZ_FAIL("pure_ctx_add_service");
    if (pure_connect(W.a, &W.addr_b, pure_ctx_public_key(W.b), "pure", &W.ua, &W.ua.link, W.now) !=
        0)
        FZ_FAIL("pure_connect");
    W.ua.known = 1;

    /* The handshake: INIT, RESP, A's first packet (a PING that validates B's link). */
    for (int i = 0; i < 4; i++) {
        fz_flush(W.a, &W.addr_a, W.b, W.now, NULL, NULL);
        fz_flush(W.b, &W.addr_b, W.a, W.now, NULL, NULL);
    }
    if (!link_open(&W.ua) || !link_open(&W.ub) || W.ua.link->state != PURE_LS_OPEN ||
        W.ub.link->state != PURE_LS_OPEN)
        FZ_FAIL("the in-harness handshake did not open the link");
    for (int i = 0; i < ((opts >> 4) & 3); i++)
        b_send(1500);

    rd r = {data + 2, data + size};
    /* Records go on after B's link closed (A's packets then name an unknown link), not after A's:
     * they are sealed with its keys. */
    for (int rec = 0; rec < MAX_RECORDS && r.p < r.end && link_open(&W.ua); rec++) {
        int b_open = link_open(&W.ub);
        uint8_t c = take(&r);
        switch (c & 7) {
        case 0: record_packet(c, &r); break;
        case 1: record_bulk(take(&r) % 64 + 1); break;
        case 2: b_send((size_t)take(&r) * 131); break;
        case 3: to_a(take(&r)); break;
        case 4: W.nq = 0; break;
        case 5:
            W.now += (uint64_t)(take(&r) + 1) * 7 * FZ_MS;
            run_timers();
            break;
        case 6:
            if (b_open && W.ua.link->state == PURE_LS_OPEN && W.ub.link->state == PURE_LS_OPEN) {
                if (pure_rekey_start(W.ua.link, W.now) != 0)
                    FZ_FAIL("pure_rekey_start");
                for (int i = 0; i < 4; i++) {
                    fz_flush(W.a, &W.addr_a, W.b, W.now, NULL, NULL);
                    fz_flush(W.b, &W.addr_b, W.a, W.now, NULL, NULL);
                }
            }
            break;
        default: {
            uint8_t a = take(&r) % 4;
            if (a == 0 && b_open) {
                pure_link_finish(W.ub.link);
            } else if (a == 1 && b_open) {
                pure_link_close(W.ub.link, 0x101, "app");
            } else if (a == 2 && b_open) {
                if (pure_link_abort(W.ub.link, 0x103, "app") != 0 || !W.ub.closes)
                    FZ_FAIL("pure_link_abort did not close the link at once");
            } else if (a == 3) {
                pure_link_close(W.ua.link, 0x102, "app");
            }
            flush_b();
            break;
        }
        }
    }

    if (getenv("RECV_FUZZ_VERBOSE"))
        fprintf(stderr,
                "recv_fuzz: B delivered %llu of %u messages (recv_next %llu)%s, A %llu of "
                "%llu; links %s/%s\n",
                (unsigned long long)W.ub.delivered, s_count,
                link_open(&W.ub) ? (unsigned long long)W.ub.link->recv_next : 0ull,
                W.junk ? " junk sent" : "", (unsigned long long)W.ua.delivered,
                (unsigned long long)W.b_sent, link_open(&W.ua) ? "open" : "closed",
                link_open(&W.ub) ? "open" : "closed");
    pure_ctx_free(W.a);
    pure_ctx_free(W.b);
    if (W.ua.closes != 1 || (W.ub.known && W.ub.closes != 1))
        FZ_FAIL("a link was not reported closed exactly once (pure_ctx_free included)");
    if (W.heap_a.live != 0 || W.heap_b.live != 0)
        FZ_FAIL("pure_ctx_free left allocations behind");
    return 0;
}
