/* SPDX-License-Identifier: MIT */
/* chan_cancel.h: cancelling a message of a channel's send stream (chan.h's bytes, cancel.h's
 * tables): where a message lies by id, and what a cancel does to the stream's bookkeeping. */
#ifndef PURE_CHAN_CANCEL_H
#define PURE_CHAN_CANCEL_H

#include <stdint.h>

#include "chan.h"

/* Where message `id` (msgs_acked <= id < next_msg_id) lies in the channel's stream: its length
 * prefix's offset and the end of its body. */
void pure_chan_msg_range(pure_chan *c, uint64_t id, uint64_t *start, uint64_t *end);
/* Cancels message `id`: its bytes are never sent again (they count as acknowledged, so no loss
 * brings them back, and new bytes skip them), the buffer holds them until the peer answers
 * (pure_cancels_hold), and a CHAN_CANCEL is owed. Returns 0, PURE_EINVAL (id never sent: id >=
 * next_msg_id), PURE_EALREADY (acknowledged already, or its cancel under way or answered) or
 * PURE_ENOMEM (nothing changed). */
int pure_chan_cancel(pure_chan *c, const pure_alloc *a, uint64_t id, uint8_t flags);

#endif
