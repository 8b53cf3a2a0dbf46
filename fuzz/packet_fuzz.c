/* SPDX-License-Identifier: MIT */
/* packet_fuzz.c: libFuzzer target for whole contexts fed datagrams through pure_ctx_read, on the
 * null crypto backend (deterministic: every input replays exactly).
 *
 * Two contexts, A (initiator) and B (responder, service "pure", any key allowed), exchange
 * datagrams in-process the way tests/sim/sim.c does. Byte 0 of the input picks the mode and
 * flags, byte 1 a message size; the rest is a list of records, each
 *     ctl (1 byte) | length (2 bytes, big-endian) | bytes
 *
 * Raw mode (byte 0 bit 0 clear): A has started a handshake with B (and, if bit 2, B has seen the
 * INIT and holds a half-open link). Each record is a raw datagram fed to B (ctl bit 0 clear) or to
 * A (set). With ctl bit 1 the receiver-index field of a RESP, COOKIE, REJECT, VERSION or DATA
 * datagram is overwritten with the index of the target's real link, so the fuzzer gets past the
 * table lookup. ctl bit 2 advances time 100 ms plus (ctl >> 4) seconds and runs timers; ctl bit 3
 * lets A and B exchange what they have queued. Bit 1 of byte 0 makes B demand a cookie for every
 * INIT, bit 4 makes A ask for a service B does not offer, bit 5 leaves A's key off B's allow
 * list, bit 6 makes B's application refuse links.
 *
 * Open mode (byte 0 bit 0 set): the handshake is completed first, B's application queues
 * (byte 0 bits 4-5) messages whose packets are sent into the void (so B has packets in flight
 * that fuzzed ACKs can acknowledge), then each record's bytes are the plaintext frames of a DATA
 * packet from A to B: the harness adds the header (B's index, a packet number) and seals it with
 * A's transmit keys, so B authenticates it and runs frame dispatch, ACK processing, flow control
 * and stream reassembly on it. A record whose length has its top bit set carries no bytes: the
 * harness instead sends ((length & 0x7fff) % 160 + 1) KiB of the pattern stream in order from
 * B's receive point, within B's credit (large offsets, window growth, ring wrap).
 * ctl bits: 0 the wrong key phase; 1 the next two bytes set how far below the newest packet
 * number this one goes (reordering, replays); 2 spoil the tag; 3 exchange queued datagrams
 * between A and B; 4-6 advance time by that many 25 ms steps and run timers (all three set: the
 * packet also comes from a new address of A); 7 A starts a rekey and the two exchange
 * datagrams, so later packets are sealed under the new keys and key phase.
 * With bit 2 of byte 0 the harness rewrites every DATA frame's bytes with a fixed pattern
 * stream (preamble, then messages of byte-1 bytes whose body byte i is i % 251); B must then
 * deliver only whole messages of exactly that content, never more than the bytes sent allow.
 * With bit 3, B's application closes the link from inside its first on_message.
 *
 * In both modes every pure_ctx_read result must be a documented code, and every drop must be
 * counted in pure_ctx_stats (fz_read). A sized allocator (fz_alloc) checks each free's size and
 * that pure_ctx_free leaves nothing behind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "frame.h"
#include "fuzz_common.h"
#include "rekey.h"
#include "pure.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MS 1000000ull

static fz_heap g_heap;

/* ---- the two endpoints ---- */

typedef struct world {
    pure_ctx *a, *b;
    pure_addr addr_a, addr_b, addr_a2;
    pure_link *la, *lb; /* A's link; B's link once accepted (NULL when closed) */
    uint64_t rng_a, rng_b;
    uint64_t now;
    /* application behaviour and the pattern oracle */
    int refuse, close_on_message, pattern;
    uint32_t msg_size;
    uint64_t max_end; /* highest stream offset of pattern data sent to B */
    uint64_t delivered;
    uint64_t bulk_budget; /* bytes bulk records may still send in this input */
    int b_close_error;
} world;

static world W;

static int b_on_accept(pure_link *link, const char *service, const uint8_t key[PURE_KEY_LEN],
                       void *ctx_user)
{
    world *w = ctx_user;
    if (strcmp(service, "pure") != 0)
        FZ_FAIL("accepted a link for a service never registered");
    (void)key;
    if (w->refuse)
        return PURE_EREFUSED;
    w->lb = link;
    pure_link_set_user(link, w);
    return 0;
}

static void b_on_message(pure_link *link, void *user, const uint8_t *d, size_t n)
{
    world *w = user;
    if (w != &W)
        FZ_FAIL("wrong user pointer in on_message");
    w->delivered++;
    if (w->pattern) {
        if (n != w->msg_size)
            FZ_FAIL("pattern stream delivered a message of the wrong size");
        for (size_t i = 0; i < n; i++)
            if (d[i] != i % 251)
                FZ_FAIL("pattern stream delivered wrong bytes");
        if (4 + w->delivered * (4 + (uint64_t)w->msg_size) > w->max_end)
            FZ_FAIL("delivered more messages than the bytes sent hold");
    }
    if (w->close_on_message && link->state == PURE_LS_OPEN)
        pure_link_close(link, 0x100, "fuzz");
}

static void b_on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    world *w = user;
    if (!info || !info->reason)
        FZ_FAIL("on_closed without info");
    if (info->first_unacked > info->next_id)
        FZ_FAIL("on_closed reports more acknowledged messages than were sent");
    if (w && w->lb == link) {
        w->lb = NULL;
        w->b_close_error = info->error;
    }
    if (getenv("PACKET_FUZZ_VERBOSE"))
        fprintf(stderr, "packet_fuzz: B link closed: %s (recv_next %llu credit %llu window %llu)\n",
                pure_strerror(info->error), (unsigned long long)link->recv_next,
                (unsigned long long)pure_credit_granted(&link->credit),
                (unsigned long long)pure_credit_window(&link->credit));
}

static void a_on_closed(pure_link *link, void *user, const pure_close_info *info)
{
    world *w = user;
    (void)info;
    if (w && w->la == link)
        w->la = NULL;
}

static const pure_callbacks b_cb = {
    .on_accept = b_on_accept, .on_message = b_on_message, .on_closed = b_on_closed};
static const pure_callbacks a_cb = {.on_closed = a_on_closed};

static pure_ctx *make_ctx(uint8_t key_byte, uint64_t *rng, const pure_callbacks *cb,
                          int cookie_always, int newreno, int allow_any)
{
    pure_settings s;
    fz_settings(&s, key_byte, rng, &g_heap);
    s.allow_any = allow_any;
    s.callbacks = cb;
    s.user = &W;
    s.max_message_size = 1u << 16;
    s.recv_window = 1u << 14;
    s.recv_window_max = 1u << 17;
    s.send_backlog = 1u << 16;
    if (cookie_always)
        s.handshake_load = 0;
    if (newreno)
        s.congestion = PURE_CC_NEWRENO;
    pure_ctx *ctx = NULL;
    if (pure_ctx_new(&s, &ctx) != 0)
        FZ_FAIL("pure_ctx_new");
    return ctx;
}

/* Sends everything `from` has queued to `to` (or into the void when to is NULL). */
static int flush(pure_ctx *from, const pure_addr *from_addr, pure_ctx *to)
{
    return fz_flush(from, from_addr, to, W.now, NULL, NULL);
}

static void exchange(int rounds, int b_to_a)
{
    for (int i = 0; i < rounds; i++) {
        int moved = flush(W.a, &W.addr_a, W.b);
        moved += flush(W.b, &W.addr_b, b_to_a ? W.a : NULL);
        if (!moved)
            break;
    }
}

static void advance(uint64_t dt)
{
    W.now += dt;
    if (pure_ctx_deadline(W.a) <= W.now)
        pure_ctx_timeout(W.a, W.now);
    if (pure_ctx_deadline(W.b) <= W.now)
        pure_ctx_timeout(W.b, W.now);
}

static pure_link *any_link(pure_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->table.cap; i++)
        if (pure_table_at(&ctx->table, i))
            return pure_table_at(&ctx->table, i);
    return NULL;
}

static void put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* ---- raw mode ---- */

static void raw_mode(const uint8_t *d, size_t n, int init_first)
{
    if (init_first)
        flush(W.a, &W.addr_a, W.b);
    static uint8_t dgram[65536];
    while (n >= 3) {
        uint8_t ctl = d[0];
        size_t len = (size_t)(d[1] << 8 | d[2]);
        d += 3;
        n -= 3;
        if (len > n)
            len = n;
        memcpy(dgram, d, len);
        d += len;
        n -= len;
        int to_a = ctl & 1;
        pure_ctx *target = to_a ? W.a : W.b;
        if ((ctl & 2) && len > 0) {
            pure_link *l = any_link(target);
            uint32_t idx = l ? l->local_index : 0;
            switch (dgram[0]) {
            case PURE_PKT_RESP:
                if (len >= 9)
                    put_u32le(dgram + 5, idx);
                break;
            case PURE_PKT_COOKIE:
            case PURE_PKT_REJECT:
            case PURE_PKT_VERSION:
            case PURE_PKT_DATA0:
            case PURE_PKT_DATA1:
                if (len >= 5)
                    put_u32le(dgram + 1, idx);
                break;
            default: break;
            }
        }
        fz_read(target, to_a ? &W.addr_b : &W.addr_a, dgram, len, W.now);
        if (ctl & 4)
            advance(100 * MS + (uint64_t)(ctl >> 4) * 1000 * MS);
        if (ctl & 8)
            exchange(4, 1);
    }
}

/* ---- open mode ---- */

/* The pattern stream: "pure", then messages of msg_size bytes, body byte i = i % 251. */
static uint8_t pattern_at(uint64_t off)
{
    if (off < 4)
        return (uint8_t)PURE_STREAM_PREAMBLE[off];
    uint64_t unit = 4 + (uint64_t)W.msg_size, k = (off - 4) % unit;
    if (k < 4)
        return (uint8_t)(W.msg_size >> (8 * (3 - k)));
    return (uint8_t)((k - 4) % 251);
}

/* Rewrites the bytes of every DATA frame in [p, end) with the pattern stream. */
static void apply_pattern(uint8_t *p, uint8_t *end)
{
    const uint8_t *q = p;
    while (q < end) {
        pure_frame f;
        pure_ack_frame ack;
        if (pure_frame_parse(&q, end, &f, &ack) != 0)
            return;
        if (f.type != PURE_FRAME_DATA)
            continue;
        uint8_t *b = p + (f.u.data.bytes - p);
        for (uint64_t i = 0; i < f.u.data.len; i++)
            b[i] = pattern_at(f.u.data.offset + i);
        if (f.u.data.offset + f.u.data.len > W.max_end)
            W.max_end = f.u.data.offset + f.u.data.len;
    }
}

static uint8_t pkt[PURE_DATA_HEADER + 65536 + PURE_TAG_LEN];
static uint64_t next_pn;

/* The next packet number of ours, kept clear of the ones A itself uses when it talks to B
 * (ctl bits 3 and 7), so that neither side's packets look like replays of the other's. */
static uint64_t take_pn(void)
{
    if (next_pn < pure_rtb_next_pn(&W.la->rtb) + 64)
        next_pn = pure_rtb_next_pn(&W.la->rtb) + 64;
    return next_pn++;
}

/* Seals the len payload bytes at pkt + PURE_DATA_HEADER as packet pn from A (in the wrong key
 * phase if ctl bit 0, with a spoilt tag if bit 2) and feeds it to B; then B (and, with bit 3,
 * A) send what they have queued. */
static void send_packet(uint8_t ctl, size_t len, uint64_t pn)
{
    size_t n = fz_seal(W.la, pkt, len, pn, ctl & 1);
    if (ctl & 4)
        pkt[PURE_DATA_HEADER + len] ^= 0x80;
    uint64_t before_recv = W.lb->st.packets_received;
    pure_link *lb = W.lb;
    int rc = fz_read(W.b, (ctl & 0x70) == 0x70 ? &W.addr_a2 : &W.addr_a, pkt, n, W.now);
    /* refused; PURE_ECLOSED when it was the forgery that reached max_failed_opens */
    if ((ctl & 4) && rc != PURE_ECRYPTO && rc != PURE_EINVAL && rc != PURE_ECLOSED)
        FZ_FAIL("packet with a spoilt tag was not refused");
    if (rc == 0 && W.lb == lb && !(ctl & 1) && W.lb->st.packets_received != before_recv + 1)
        FZ_FAIL("accepted packet not counted on the link");
    flush(W.b, &W.addr_b, (ctl & 8) ? W.a : NULL);
    if ((ctl & 8) && W.la)
        flush(W.a, &W.addr_a, W.b);
}

/* Bulk: up to kib KiB of the pattern stream in order from where B stands, within B's credit, in
 * 1200-byte DATA frames (so the fuzzer reaches large offsets, window growth and ring wrap). */
static void send_bulk(uint8_t ctl, size_t kib)
{
    uint64_t remaining = (uint64_t)kib * 1024;
    if (remaining > W.bulk_budget)
        remaining = W.bulk_budget; /* keeps every input fast */
    W.bulk_budget -= remaining;
    while (remaining && W.la && W.lb && W.lb->state == PURE_LS_OPEN) {
        uint64_t off = W.lb->recv_next, lim = pure_credit_granted(&W.lb->credit);
        if (off >= lim)
            break;
        uint64_t chunk = remaining < 1200 ? remaining : 1200;
        if (chunk > lim - off)
            chunk = lim - off;
        uint8_t *payload = pkt + PURE_DATA_HEADER;
        uint8_t *e = pure_frame_put_data_header(payload, off, chunk, 0);
        for (uint64_t i = 0; i < chunk; i++)
            e[i] = pattern_at(off + i);
        if (off + chunk > W.max_end)
            W.max_end = off + chunk;
        send_packet(ctl & 8, (size_t)(e + chunk - payload), take_pn());
        remaining -= chunk;
    }
}

static void open_mode(const uint8_t *d, size_t n, unsigned presend)
{
    /* Complete the handshake: A's INIT, B's RESP, A's first packet (which B accepts). */
    exchange(8, 1);
    if (!W.la || W.la->state != PURE_LS_OPEN || !W.lb || W.lb->state != PURE_LS_OPEN)
        FZ_FAIL("in-process handshake did not open the link");
    /* B sends messages that never arrive: packets in flight for fuzzed ACKs to acknowledge. */
    static uint8_t msg[3000];
    for (unsigned i = 0; i < presend; i++) {
        memset(msg, (int)i, sizeof msg);
        if (pure_link_send(W.lb, msg, sizeof msg) != (int64_t)i)
            FZ_FAIL("pure_link_send on a fresh link");
    }
    flush(W.b, &W.addr_b, NULL);

    next_pn = 0;
    while (n >= 3 && W.la && W.lb) {
        uint8_t ctl = d[0];
        size_t len = (size_t)(d[1] << 8 | d[2]);
        d += 3;
        n -= 3;
        if (len & 0x8000) { /* a bulk record: no body, the length says how many KiB */
            send_bulk(ctl, (len & 0x7fff) % 160 + 1);
        } else {
            uint64_t pn;
            if ((ctl & 2) && n >= 2) {
                uint64_t back = (uint64_t)(d[0] << 8 | d[1]), top = take_pn();
                d += 2;
                n -= 2;
                pn = back < top ? top - back : 0;
            } else {
                pn = take_pn();
            }
            if (len > n)
                len = n;
            if (len > 1400)
                len = 1400;
            uint8_t *payload = pkt + PURE_DATA_HEADER;
            memcpy(payload, d, len);
            d += len;
            n -= len;
            if (W.pattern)
                apply_pattern(payload, payload + len);
            send_packet(ctl, len, pn);
        }
        if (ctl & 0x70)
            advance((uint64_t)((ctl >> 4) & 7) * 25 * MS);
        if ((ctl & 0x80) && W.la && W.lb && W.la->state == PURE_LS_OPEN) {
            if (pure_rekey_start(W.la, W.now) != 0)
                FZ_FAIL("pure_rekey_start");
            exchange(4, 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t mode = data[0];
    memset(&W, 0, sizeof W);
    W.rng_a = 1;
    W.rng_b = 2;
    W.now = 1000 * MS;
    W.refuse = (mode & 0x40) != 0 && !(mode & 1);
    W.close_on_message = (mode & 8) != 0;
    W.pattern = (mode & 1) && (mode & 4);
    W.msg_size = data[1];
    W.bulk_budget = 192 * 1024;
    pure_crypto_null_seed(0x5eed);
    fz_addr(&W.addr_a, 1, 1000);
    fz_addr(&W.addr_a2, 1, 2000);
    fz_addr(&W.addr_b, 2, 1001);

    /* raw mode only: bit 4 makes A ask for a service B lacks, bit 5 keeps A off B's allow list */
    int raw = !(mode & 1);
    W.a = make_ctx(0x11, &W.rng_a, &a_cb, 0, (mode & 0x80) != 0, 1);
    W.b = make_ctx(0x22, &W.rng_b, &b_cb, (mode & 2) != 0, (mode & 0x80) != 0,
                   !(raw && (mode & 0x20)));
    if (pure_ctx_add_service(W.b, "pure") != 0)
        FZ_FAIL("add_service");
    const char *service = raw && (mode & 0x10) ? "nope" : "pure";
    if (pure_connect(W.a, &W.addr_b, pure_ctx_public_key(W.b), service, &W, &W.la, W.now) != 0)
        FZ_FAIL("pure_connect");

    if (mode & 1)
        open_mode(data + 2, size - 2, (mode >> 4) & 3);
    else
        raw_mode(data + 2, size - 2, (mode & 4) != 0);

    if (getenv("PACKET_FUZZ_VERBOSE")) {
        pure_ctx_stats sa, sb;
        pure_ctx_stats_get(W.a, &sa);
        pure_ctx_stats_get(W.b, &sb);
        fprintf(stderr,
                "packet_fuzz: A links %llu in %llu out %llu malformed %llu auth %llu; B links %llu "
                "in %llu out %llu accepted %llu cookies %llu malformed %llu auth %llu replay %llu "
                "unknown %llu; B link %s (%llu rekeys), %llu messages delivered\n",
                (unsigned long long)sa.links, (unsigned long long)sa.datagrams_in,
                (unsigned long long)sa.datagrams_out, (unsigned long long)sa.dropped_malformed,
                (unsigned long long)sa.dropped_auth, (unsigned long long)sb.links,
                (unsigned long long)sb.datagrams_in, (unsigned long long)sb.datagrams_out,
                (unsigned long long)sb.handshakes_accepted, (unsigned long long)sb.cookies_sent,
                (unsigned long long)sb.dropped_malformed, (unsigned long long)sb.dropped_auth,
                (unsigned long long)sb.dropped_replay, (unsigned long long)sb.dropped_unknown_link,
                W.lb ? "open" : "gone", W.lb ? (unsigned long long)W.lb->st.rekeys : 0ull,
                (unsigned long long)W.delivered);
    }
    pure_ctx_free(W.a);
    pure_ctx_free(W.b);
    if (g_heap.live != 0)
        FZ_FAIL("pure_ctx_free left allocations behind");
    return 0;
}
