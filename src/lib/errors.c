/* SPDX-License-Identifier: MIT */
/* errors.c: the error codes' texts (pure_strerror) and which codes mean the link is gone
 * (pure_err_is_fatal); both are declared and documented in pure.h. */
#include "pure.h"

const char *pure_strerror(int err)
{
    switch (err) {
    case PURE_OK: return "success";
    case PURE_EINVAL: return "invalid argument";
    case PURE_ENOMEM: return "out of memory";
    case PURE_EAGAIN: return "backlog full, try again when the link is writable";
    case PURE_ECRYPTO: return "authentication failed";
    case PURE_EPROTO: return "protocol violation by the peer";
    case PURE_ECLOSED: return "link is closed";
    case PURE_ETIMEDOUT: return "peer did not answer in time";
    case PURE_EREFUSED: return "service refused: the peer offers no such service";
    case PURE_EACCES: return "access denied: the peer does not allow our key";
    case PURE_EKEY:
        return "handshake failed: the peer could not authenticate us (wrong peer public key?)";
    case PURE_EMSGSIZE: return "message too large";
    case PURE_ENOBUFS: return "output buffer too small";
    case PURE_ELIMIT: return "too many links";
    case PURE_ESTATE: return "not allowed in the link's current state";
    case PURE_EFLOW: return "peer exceeded its flow-control credit";
    case PURE_EIO: return "I/O error";
    case PURE_ERESET: return "peer closed the link with an error";
    case PURE_EUNREACH:
        return "the network reports the peer unreachable (nothing listening on that port, or no "
               "route)";
    case PURE_ENOTPURE:
        return "the peer is not a Pure server (it answered with non-Pure datagrams)";
    case PURE_EMOVED: return "the server is draining: connect again and resend what it lacks";
    case PURE_EVERSION:
        return "the peer speaks another version of the Pure protocol (upgrade one side)";
    case PURE_EFULL: return "the link's queue limit is reached: its peer is not keeping up";
    case PURE_EALREADY: return "too late: already acknowledged, or already being cancelled";
    default: return "unknown error";
    }
}

/* A function that ends a link, or finds it ended, returns PURE_ECLOSED; every other code it
 * returns leaves the link as it was (pure_ctx_read's PURE_EPROTO is a dropped datagram). The
 * other fatal codes are reasons only on_closed carries: no function returns them. */
int pure_err_is_fatal(int err)
{
    switch (err) {
    case PURE_ECLOSED:
    case PURE_ETIMEDOUT:
    case PURE_EREFUSED:
    case PURE_EACCES:
    case PURE_EKEY:
    case PURE_EFLOW:
    case PURE_ERESET:
    case PURE_EUNREACH:
    case PURE_ENOTPURE:
    case PURE_EMOVED:
    case PURE_EVERSION: return 1;
    default: return 0;
    }
}
