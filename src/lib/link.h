/* SPDX-License-Identifier: MIT */
/* link.h: the top of a link (link.c): what happens when each of its timers fires, the end of a
 * public call that frees the links it ended, and the public pure_link_* and pure_connect calls
 * (declared in pure.h). */
#ifndef PURE_LINK_H
#define PURE_LINK_H

#include "state.h"

/* Runs the link's timers that are due (timers.c lists them) and files its next deadline. */
void pure_link_on_timer(pure_link *link, uint64_t now);
/* Ends a public call (ctx->depth, taken by every entry point that can end a link): the
 * outermost frees the links it ended. */
void pure_link_end_call(pure_ctx *ctx);
/* Frees a link that is off the tables (from the dead list): everything it holds is wiped. */
void pure_link_release(pure_link *link);

#endif
