/* SPDX-License-Identifier: MIT */
/* link_shared.h: the link layer of shared sends and queue watching (link_shared.c): the
 * public pure_link_send_shared, pure_link_set_queue_limit and pure_link_queue_stats, and the
 * hook every send passes through on a link whose channel table exists. */
#ifndef PURE_LINK_SHARED_H
#define PURE_LINK_SHARED_H

#include "state.h"

/* A send of `bytes` (framing included) on stream ch is about to be accepted: checks the link's
 * queue limit (PURE_EFULL, want_writable set) and dates the message (qwatch.h). Returns 0 or
 * PURE_EFULL. Only for links with a channel table. */
int pure_link_watch_send(pure_link *link, uint32_t ch, uint64_t bytes);
/* 1 unless the link is watched and holds more than half its queue limit. */
int pure_link_watch_writable(const pure_link *link);
/* The link's channel table, made on first use (NULL if that allocation fails); making it sets
 * PURE_GATE_CHANS, so channel 0's sends go through pure_link_watch_send from then on. */
pure_chans *pure_link_chan_table(pure_link *link);

#endif
