/* SPDX-License-Identifier: MIT */
/* credit.c: flow credit (credit.h): the receive window's grants and auto-tuning. */
#include "credit.h"

void pure_credit_init(pure_credit *c, uint64_t window)
{
    c->window = window;
    c->granted = window;
    c->time = 0;
    c->peer = window;
}

void pure_credit_grant(pure_credit *c, uint64_t consumed, uint64_t rtt, uint64_t window_max,
                       uint64_t now)
{
    /* Half the window went in less than two round trips: the window is what limits the sender,
     * so double it. */
    if (c->window < window_max && (rtt == 0 || now - c->time < 2 * rtt)) {
        c->window *= 2;
        if (c->window > window_max)
            c->window = window_max;
    }
    c->granted = consumed + c->window;
    c->time = now;
}
