/* SPDX-License-Identifier: MIT */
/* registry.h: what a context keeps of its links, for the modules that serve them (registry.c):
 * link structs from slabs, the table of links by local index and of unvalidated links by INIT
 * tag, each link's entry in the timer heap, the send list, the queue of control replies, the
 * services and allow-list lookups, the random and wall-clock sources. */
#ifndef PURE_REGISTRY_H
#define PURE_REGISTRY_H

#include "state.h"

/* Link structs come from slabs of this many. */
#define PURE_LINK_SLAB 64

/* Sets up the link tables and the timer heap of a new context. */
void pure_registry_init(pure_ctx *ctx);
/* Gives back what the tables, the timer heap and the link slabs hold (links released first). */
void pure_registry_free(pure_ctx *ctx);
/* Makes room for element n of a growing array (capacity doubles from 8). 0 or PURE_ENOMEM. */
int pure_ctx_grow_array(pure_ctx *ctx, void **arr, uint32_t *cap, uint32_t n, size_t elem);

/* A zeroed link struct from the slabs, or NULL without memory. */
pure_link *pure_ctx_link_new(pure_ctx *ctx);
/* Returns a link struct to the slabs. */
void pure_ctx_link_free(pure_ctx *ctx, pure_link *link);
/* Files the link by a fresh random local index (assigned to link->local_index). Returns 0,
 * PURE_ELIMIT (max_links reached), PURE_ENOMEM, or PURE_ECRYPTO (no random index found). */
int pure_ctx_table_add(pure_ctx *ctx, pure_link *link);
/* Takes the link out of the index table. */
void pure_ctx_table_remove(pure_ctx *ctx, pure_link *link);
/* The link with this local index, or NULL. */
pure_link *pure_ctx_table_find(pure_ctx *ctx, uint32_t index);
/* Files an unvalidated responder link by its INIT tag (link->init_tag). 0 or PURE_ENOMEM. */
int pure_ctx_hs_add(pure_ctx *ctx, pure_link *link);
/* The unvalidated link an INIT with this tag and sender index made, if any (from any address). */
pure_link *pure_ctx_hs_find(pure_ctx *ctx, uint64_t tag, uint32_t sender);
/* Takes the link out of the INIT-tag table (if it is there). */
void pure_ctx_hs_remove(pure_ctx *ctx, pure_link *link);

/* Files the link's deadline in the timer heap (UINT64_MAX takes it off). */
void pure_ctx_timer_set(pure_ctx *ctx, pure_link *link, uint64_t deadline);
/* Puts the link on the send list (once; never a closed link). */
void pure_ctx_mark_pending(pure_ctx *ctx, pure_link *link);

/* The time for a call that was given none: the context's clock (pure_ctx_set_clock) if it has
 * one and it is ahead, else the last time it was given. Keeps it as ctx->now. */
uint64_t pure_ctx_clock(pure_ctx *ctx);
/* The next link on the send list (taken off it), or NULL. */
pure_link *pure_ctx_pending_pop(pure_ctx *ctx);
/* Queues a control reply (RESP, COOKIE, REJECT) to `to`: the caller fills data and len. NULL if
 * the queue is full (replies are best effort: the peer retries). */
pure_ctl *pure_ctx_ctl_push(pure_ctx *ctx, const pure_addr *to);
/* The oldest queued control reply (taken off the queue; valid until the next push), or NULL. */
const pure_ctl *pure_ctx_ctl_pop(pure_ctx *ctx);

/* The service's index in ctx->services, or -1 if none has that name. */
int pure_ctx_service_index(const pure_ctx *ctx, const char *name, size_t len);
/* Is the peer key allowed (on the allow list, or allow_any set)? */
int pure_ctx_allowed(const pure_ctx *ctx, const uint8_t key[PURE_KEY_LEN]);
/* The key's index in the allow list; -1 if it is not there but allow_any is set; -2 if refused. */
int64_t pure_ctx_allow_index(const pure_ctx *ctx, const uint8_t key[PURE_KEY_LEN]);
/* Fills buf with random bytes (settings.random, or the crypto backend's). 0 or an error. */
int pure_ctx_random(pure_ctx *ctx, uint8_t *buf, size_t len);
/* The context's cache of ss results (sscache.h), allocated on first use; NULL if that failed
 * (handshakes then compute ss each time). */
pure_sscache *pure_ctx_sscache(pure_ctx *ctx);
/* The wall clock (settings.realtime, or CLOCK_REALTIME), ns since 1970. */
uint64_t pure_ctx_realtime(const pure_ctx *ctx);
/* Do two addresses hold the same bytes? */
int pure_addr_equal(const pure_addr *a, const pure_addr *b);
/* Do two addresses name the same host (IPv4 or IPv6 address; other encodings: all but their
 * last two bytes, a port), whatever their ports? */
int pure_addr_same_host(const pure_addr *a, const pure_addr *b);

#endif
