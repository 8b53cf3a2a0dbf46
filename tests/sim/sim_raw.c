/* SPDX-License-Identifier: MIT */
#include "sim_raw.h"

#include <stdlib.h>

#include "registry.h"
#include "varint.h"

int sim_raw_write(pure_link *link, const void *bytes, size_t n)
{
    int rc = pure_sendbuf_write(&link->sb, &link->ctx->alloc, bytes, n, bytes, 0,
                                link->ctx->s.send_backlog);
    if (rc == 0)
        pure_ctx_mark_pending(link->ctx, link);
    return rc;
}

int sim_raw_announce(pure_link *link, uint32_t len, size_t part)
{
    uint8_t *b = malloc(4 + part);
    if (!b)
        return PURE_ENOMEM;
    pure_put_u32be(b, len);
    for (size_t i = 0; i < part; i++)
        b[4 + i] = (uint8_t)i;
    int rc = sim_raw_write(link, b, 4 + part);
    free(b);
    return rc;
}
