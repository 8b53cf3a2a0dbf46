/* SPDX-License-Identifier: MIT */
/* tparams.h: transport parameters, what each side announces in the handshake (the INIT's and the
 * RESP's payload end with them; docs/protocol.md, "Transport parameters"): an extensible set of
 * `id varint · length varint · value` entries, unknown ids skipped, so a newer peer's additions
 * never break an older parser. The codec, what this context announces, and the peer's
 * announcement as a link keeps it (6 bytes in the link's padding holes, so an idle link does not
 * grow). */
#ifndef PURE_TPARAMS_H
#define PURE_TPARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "state.h"
#include "wire.h"

/* The smallest recv_window a context may have (pure_ctx_new refuses less), and how many powers of
 * two above it pure_tp_peer_window can express (4096 << 20 = 4 GiB, the largest). */
#define PURE_TP_WINDOW_MIN 4096u
#define PURE_TP_WINDOW_CODES 21u

/* Writes every parameter of tp (even zero ones: a non-empty set tells the responder that this
 * initiator reads parameters in the RESP) into out, which holds PURE_TPARAMS_MAX bytes. Values
 * above 2^62 - 1 are written as 2^62 - 1. Returns the length. */
size_t pure_tparams_encode(const pure_tparams *tp, uint8_t out[PURE_TPARAMS_MAX]);

/* Reads a parameter set of n bytes into tp (absent parameters 0). Unknown ids are skipped.
 * Returns 0, or PURE_EPROTO for a malformed set: an id or length cut short, a length running past
 * the end, an id given twice (known or not), a known parameter whose value is not exactly one
 * varint filling its length. tp is all zero after an error. */
int pure_tparams_decode(const uint8_t *p, size_t n, pure_tparams *tp);

/* What this context announces (the defaults: ECN read, no channels, no datagrams yet; or a
 * test's, below). */
void pure_tparams_local(const pure_ctx *ctx, pure_tparams *tp);

/* Keeps the peer's announcement in the link (known: the peer sent a set at all; a peer built
 * before parameters, or one that sent none, leaves everything 0). Values clamp to 16 bits. */
void pure_tparams_store(pure_link *link, const pure_tparams *tp, int known);

/* Frees what pure_test_set_wire kept (pure_ctx_free). */
void pure_tparams_free(pure_ctx *ctx);

/* The protocol version this context speaks: PURE_PROTOCOL_VERSION, or a test's. */
uint32_t pure_ctx_wire_version(const pure_ctx *ctx);

/* Writes the parameter set this context sends (what pure_tparams_local says, encoded; nothing, or
 * a test's raw bytes, under a test hook) into out. Returns its length (0: none). */
size_t pure_tparams_write_local(const pure_ctx *ctx, uint8_t out[PURE_TPARAMS_ROOM]);

/* The peer's announcement, as kept: 1 if the peer sent parameters. */
static inline int pure_tp_peer_known(const pure_link *link)
{
    return link->peer_tp_known;
}
/* Channels the peer allows (0: none, or it announced nothing); at most 255 (PURE_CHANNEL_MAX: a
 * link never uses more). */
static inline uint32_t pure_tp_peer_channels(const pure_link *link)
{
    return link->peer_tp_channels;
}
/* The credit the peer grants each channel at the start: its announced recv_window rounded down
 * to a power of two times 4096 (never below half of it), or this side's own recv_window if it
 * announced none (a peer built before the parameter starts every stream at its recv_window,
 * which both sides had to set alike). */
uint64_t pure_tp_peer_window(const pure_link *link);
/* The largest datagram the peer accepts (0: none); at most 65535. */
static inline uint32_t pure_tp_peer_datagram_max(const pure_link *link)
{
    return link->peer_tp_datagram;
}
/* 1 if the peer reads CHAN_CANCEL and CHAN_CANCELLED frames. */
static inline int pure_tp_peer_cancel(const pure_link *link)
{
    return (link->peer_tp_features & PURE_TP_F_CANCEL) != 0;
}
/* 1 if the peer answers our CLOSE with one of its own (link_recv.c), so a closing period can
 * last until it does (timers.c). */
static inline int pure_tp_peer_answers_close(const pure_link *link)
{
    return (link->peer_tp_features & PURE_TP_F_CLOSE_ANSWER) != 0;
}
/* 1 if the peer reads DELIVERED_COUNT frames (delivered.c). */
static inline int pure_tp_peer_reads_counts(const pure_link *link)
{
    return (link->peer_tp_features & PURE_TP_F_DELIVERED_COUNT) != 0;
}
/* 1 if the peer reads ECN counts frames. */
static inline int pure_tp_peer_ecn(const pure_link *link)
{
    return (link->peer_tp_features & PURE_TP_F_ECN) != 0;
}

/* ---- test hooks: what the tests need to act as another build ---- */

typedef struct pure_test_wire {
    /* The protocol version this context speaks (0: PURE_PROTOCOL_VERSION). Another number makes
     * it an initiator whose INITs are of that version (a versioned INIT, which this library
     * cannot complete) and a responder that answers every INIT not of that version with a
     * VERSION reply naming it: a peer of another version, as the tests need one. */
    uint32_t version;
    /* 1: send no parameters (INIT and RESP exactly as before parameters existed: a peer built
     * before them). */
    int no_params;
    /* 1: announce `announce` instead of the defaults. */
    int set_announce;
    pure_tparams announce;
    /* 1: append these raw bytes as the parameter set instead of an encoded one (malformed sets). */
    const uint8_t *raw;
    size_t raw_len;
} pure_test_wire;

/* Applies w to ctx (its handshakes from then on). 0, or PURE_EINVAL (NULL, raw_len above
 * PURE_TPARAMS_ROOM). */
int pure_test_set_wire(pure_ctx *ctx, const pure_test_wire *w);

#endif
