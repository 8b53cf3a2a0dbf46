/* SPDX-License-Identifier: MIT */
/* addr.c: the I/O loop's clock and its text form of socket addresses ("1.2.3.4:5",
 * "[::1]:5") stored in a pure_addr as a struct sockaddr_in or sockaddr_in6. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pure_loop.h"

uint64_t pure_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Decimal digits only (strtoul would take signs, spaces and hex): 0..65535. */
static int parse_port(const char *s, uint16_t *port)
{
    uint32_t v = 0;
    if (!*s)
        return PURE_EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return PURE_EINVAL;
        v = v * 10 + (uint32_t)(*s - '0');
        if (v > 65535)
            return PURE_EINVAL;
    }
    *port = (uint16_t)v;
    return 0;
}

int pure_addr_from_string(pure_addr *a, const char *text)
{
    if (!a || !text)
        return PURE_EINVAL;
    char host[INET6_ADDRSTRLEN + 1];
    const char *port;
    int v6 = text[0] == '[';
    if (v6) {
        const char *end = strchr(text, ']');
        if (!end || end[1] != ':' || (size_t)(end - text - 1) >= sizeof host)
            return PURE_EINVAL;
        memcpy(host, text + 1, (size_t)(end - text - 1));
        host[end - text - 1] = 0;
        port = end + 2;
    } else {
        /* the last colon splits host and port; IPv4 has no other colon, so a bare IPv6
         * address without brackets fails inet_pton below */
        const char *colon = strrchr(text, ':');
        if (!colon || (size_t)(colon - text) >= sizeof host)
            return PURE_EINVAL;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = 0;
        port = colon + 1;
    }
    uint16_t p;
    if (parse_port(port, &p))
        return PURE_EINVAL;
    memset(a, 0, sizeof *a);
    if (v6) {
        struct sockaddr_in6 s6;
        memset(&s6, 0, sizeof s6);
        s6.sin6_family = AF_INET6;
        s6.sin6_port = htons(p);
        if (inet_pton(AF_INET6, host, &s6.sin6_addr) != 1)
            return PURE_EINVAL;
        memcpy(a->bytes, &s6, sizeof s6);
        a->len = sizeof s6;
    } else {
        struct sockaddr_in s4;
        memset(&s4, 0, sizeof s4);
        s4.sin_family = AF_INET;
        s4.sin_port = htons(p);
        if (inet_pton(AF_INET, host, &s4.sin_addr) != 1)
            return PURE_EINVAL;
        memcpy(a->bytes, &s4, sizeof s4);
        a->len = sizeof s4;
    }
    return 0;
}

int pure_addr_to_string(const pure_addr *a, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN];
    int n = -1;
    if (!out || cap == 0)
        return PURE_EINVAL;
    out[0] = 0;
    if (!a)
        return PURE_EINVAL;
    if (a->len == sizeof(struct sockaddr_in)) {
        struct sockaddr_in s4;
        memcpy(&s4, a->bytes, sizeof s4);
        if (s4.sin_family == AF_INET && inet_ntop(AF_INET, &s4.sin_addr, host, sizeof host))
            n = snprintf(out, cap, "%s:%u", host, ntohs(s4.sin_port));
    } else if (a->len == sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 s6;
        memcpy(&s6, a->bytes, sizeof s6);
        if (s6.sin6_family == AF_INET6 && inet_ntop(AF_INET6, &s6.sin6_addr, host, sizeof host))
            n = snprintf(out, cap, "[%s]:%u", host, ntohs(s6.sin6_port));
    }
    if (n < 0 || (size_t)n >= cap) {
        out[0] = 0;
        return PURE_EINVAL;
    }
    return 0;
}
