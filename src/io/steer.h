/* SPDX-License-Identifier: MIT */
/* steer.h: which loop of a group (pure_loop_group, group.c) owns a datagram: the classic BPF
 * program the kernel runs per datagram on the port's reuseport group, and the same rule in C
 * for the datagrams a loop finds in a GRO or GSO train. Internal: tests run the program. */
#ifndef PURE_IO_STEER_H
#define PURE_IO_STEER_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

/* Instructions the program has at most. */
#define PURE_STEER_PROG_MAX 24

/* The bits that number n threads (0 for one thread): ceil(log2 n). */
unsigned pure_steer_bits(unsigned n);

/* Writes the program for n sockets (1 <= n <= 256) into prog and returns its length. It returns,
 * for the UDP payload it is run on:
 *   DATA (0x08, 0x09), COOKIE (0x03), REJECT (0x04): the top bits of the u32 LE index at byte 1
 *     (byte 4, the index's most significant byte, shifted right by 8 - bits);
 *   RESP (0x02): the same of its second index, at byte 5 (byte 8);
 *   INIT (0x01): byte 1 (the sender index's lowest byte, random) mod n;
 *   anything else: 0xffffffff, out of range, so the kernel picks by its 4-tuple hash.
 * A load past the end of a short datagram makes a classic BPF program return 0: socket 0. A
 * result of n or more (an index no thread drew) also leaves the choice to the kernel's hash. */
unsigned pure_steer_program(struct sock_filter *prog, unsigned n);

/* What the program returns for datagram d of len bytes, in C. */
uint32_t pure_steer_owner(const uint8_t *d, size_t len, unsigned n);

#endif
