/* SPDX-License-Identifier: MIT */
#include "talloc.h"

#include <stdlib.h>

long t_live;
int t_size_mismatch;
int t_fail;
unsigned t_fail_every;
unsigned long t_calls;

void *t_alloc(void *user, size_t n)
{
    (void)user;
    if (t_fail || (t_fail_every && ++t_calls % t_fail_every == 0))
        return NULL;
    size_t *p = malloc(n + sizeof(size_t));
    if (!p)
        return NULL;
    *p = n;
    t_live++;
    return p + 1;
}

void t_free(void *user, void *q, size_t n)
{
    (void)user;
    size_t *p = (size_t *)q - 1;
    if (*p != n)
        t_size_mismatch++;
    t_live--;
    free(p);
}
