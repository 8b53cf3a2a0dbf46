#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into fuzz/corpus/<target>/ (small valid inputs).

Run from anywhere: python3 fuzz/gen_corpus.py. The files are committed; rerun after changing the
input layout of a target (each layout is described at the top of its fuzz/*_fuzz.c)."""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def varint(v):
    if v < 64:
        return bytes([v])
    if v < 16384:
        return struct.pack(">H", 0x4000 | v)
    if v < 1 << 30:
        return struct.pack(">I", 0x80000000 | v)
    return struct.pack(">Q", 0xC000000000000000 | v)


# ---- frames (wire.h) ----
def padding(n):
    return b"\x00" * n


def ping():
    return b"\x01"


def ack(largest, delay, first, pairs=()):
    out = b"\x02" + varint(largest) + varint(delay) + varint(len(pairs)) + varint(first)
    for gap, length in pairs:
        out += varint(gap) + varint(length)
    return out


def credit(v):
    return b"\x03" + varint(v)


def delivered(offset):
    return b"\x06" + varint(offset)


def path_frame(kind, data=bytes(range(1, 9))):
    return bytes([0x07 if kind == "challenge" else 0x0A]) + data


def close(code, reason=b""):
    return b"\x04" + varint(code) + varint(len(reason)) + reason


def rekey(reply=0, gen=1):
    return b"\x05" + bytes([reply]) + struct.pack(">I", gen) + bytes(range(32))


def data(off, payload, fin=False):
    return bytes([0x08 | (1 if fin else 0)]) + varint(off) + varint(len(payload)) + payload


def chan_credit(ch, v):
    return b"\x0b" + varint(ch) + varint(v)


def chan_data(ch, off, payload):
    return b"\x0c" + varint(ch) + varint(off) + varint(len(payload)) + payload


def chan_delivered(ch, off):
    return b"\x0d" + varint(ch) + varint(off)


def chan_cancel(ch, msg_id, off, length):
    return b"\x11" + varint(ch) + varint(msg_id) + varint(off) + varint(length)


def chan_cancelled(ch, msg_id, delivered):
    return b"\x12" + varint(ch) + varint(msg_id) + bytes([delivered])


def datagram(payload):
    return b"\x0e" + varint(len(payload)) + payload


def stream(sizes):
    """The framed stream: preamble, then u32 length + body (byte i = i % 251) per message."""
    out = b"pure"
    for n in sizes:
        out += struct.pack(">I", n) + bytes(i % 251 for i in range(n))
    return out


def write(target, name, blob):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)


def frame_seeds():
    write("frame", "padding_ping", padding(5) + ping() + padding(2))
    write("frame", "ack_one_range", ack(10, 25, 10))
    write("frame", "ack_three_ranges", ack(100, 3, 4, [(0, 5), (10, 0), (3, 20)]))
    write("frame", "credit_close", credit(1 << 20) + close(0x104, b"bye"))
    write("frame", "close_delivered", close(0, b"done") + delivered(1 << 20))
    write("frame", "path_challenge_response", path_frame("challenge") + ping() + path_frame("response"))
    write("frame", "path_cut", path_frame("challenge")[:5])
    write("frame", "rekey", rekey())
    write("frame", "rekey_bad_flag", b"\x05\x02" + bytes(36))
    write("frame", "data_fin", data(4, b"hello") + data(1 << 40, b"", fin=True))
    write("frame", "mixed_packet",
          ack(7, 0, 7) + credit(65536) + ping() + data(0, stream([3, 0])) + padding(8))
    write("frame", "channels", chan_data(1, 0, stream([3, 0])[4:]) + chan_credit(2, 1 << 20) +
          chan_data(255, 1 << 33, b"x") + close(0, b"") + delivered(9) + chan_delivered(3, 70))
    write("frame", "channel_zero", chan_data(0, 0, b"abc"))
    write("frame", "datagrams", datagram(b"hello") + ping() + datagram(b"") + datagram(bytes(300)))
    write("frame", "datagram_cut", b"\x0e\x40\x50abc")
    write("frame", "channel_too_high", chan_credit(256, 5))
    write("frame", "cancels", chan_cancel(1, 3, 1 << 20, 65) + chan_cancelled(2, 7, 1) +
          chan_cancelled(255, 0, 0))
    write("frame", "cancel_too_short", chan_cancel(1, 0, 0, 3))
    write("frame", "cancelled_bad_outcome", chan_cancelled(1, 0, 2))


def msgparse_seeds():
    # byte 0: max_len / 37, byte 1: stop after, byte 2: number of cuts, cuts (u16 each), stream
    s = stream([5, 0, 61, 300])
    write("msgparse", "four_messages", bytes([20, 0, 3]) + struct.pack(">HHH", 2, 9, 77) + s)
    write("msgparse", "stop_after_two", bytes([20, 2, 1]) + struct.pack(">H", 40) + s)
    write("msgparse", "too_large", bytes([1, 0, 0]) + stream([38]))
    write("msgparse", "bad_preamble", bytes([5, 0, 1]) + struct.pack(">H", 2) + b"purX" + s[4:])
    write("msgparse", "partial_tail", bytes([9, 0, 2]) + struct.pack(">HH", 1, 6) + s[:30])


def handshake_seeds():
    write("handshake", "read_msg1_short", bytes([0, 4]) + bytes(range(79)))
    write("handshake", "read_msg1_junk", bytes([0, 8]) + bytes((7 * i) & 255 for i in range(85)))
    write("handshake", "read_msg2_junk", bytes([1, 1]) + bytes((3 * i) & 255 for i in range(49)))
    # mode 2: tamper1 (pos u16, xor, cut), tamper2, p1len byte, cap slack byte, payloads
    write("handshake", "whole_clean", bytes([2, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0]) + b"\x04pure\x00")
    write("handshake", "whole_flip", bytes([2, 0, 40, 1, 0, 0, 3, 0x80, 0, 5, 1]) + b"\x04pure\x00")
    write("handshake", "whole_cut", bytes([2, 0, 0, 0, 17, 0, 0, 0, 1, 5, 2]) + b"\x04pure\x00abc")


def tparams_seeds():
    def param(i, v):
        return varint(i) + varint(len(varint(v))) + varint(v)
    write("tparams", "known", param(1, 8) + param(2, 1200) + param(3, 1))
    write("tparams", "zeros", param(1, 0) + param(2, 0) + param(3, 0))
    write("tparams", "unknown_between", param(1, 3) + varint(0x1234) + varint(5) + b"\xaa" * 5 +
          param(3, 1))
    write("tparams", "duplicate", param(1, 3) + param(1, 4))
    write("tparams", "overrun", varint(9) + varint(40) + b"\x00" * 3)


def rec(ctl, body, back=None):
    out = bytes([ctl]) + struct.pack(">H", len(body))
    if back is not None:
        out += struct.pack(">H", back)
    return out + body


def packet_seeds():
    # raw mode (byte 0 bit 0 clear): records of raw datagrams
    junk_init = b"\x01" + bytes(4) + bytes(range(120))
    write("packet", "raw_junk_each_type",
          bytes([0x04, 0]) + rec(0, junk_init) + rec(2, b"\x02" + bytes(57)) +
          rec(3, b"\x03" + bytes(20)) + rec(3, b"\x04" + bytes(4)) + rec(2, b"\x08" + bytes(40)) +
          rec(0, b"\x09" + bytes(30)) + rec(0, b"\x7f"))
    write("packet", "raw_cookie_exchange", bytes([0x02, 0]) + rec(8, b"") + rec(12, b"") +
          rec(9, b"\x03" + bytes(20)))
    write("packet", "raw_refused_handshake", bytes([0x44, 0]) + rec(8, b"") + rec(8, b""))
    # VERSION replies to A (its link's index patched in; the echo is A's to find), an INIT of
    # another version to B
    write("packet", "raw_version", bytes([0x00, 0]) + rec(3, b"\x05" + bytes(20) + b"\x00\x00\x00\x02") +
          rec(3, b"\x05" + bytes(20) + b"\x00\x00\x00\x01\x00\x00\x00\x03") +
          rec(0, b"\x06\x00\x00\x00\x02" + bytes(range(1, 100))))
    write("packet", "raw_no_service", bytes([0x10, 0]) + rec(8, b"") + rec(8, b""))
    write("packet", "raw_not_allowed", bytes([0x20, 0]) + rec(8, b"") + rec(8, b""))
    write("packet", "raw_handshake_timeout", bytes([0x00, 0]) + rec(0xf4, b"\x00") +
          rec(0xf4, b"\x00") + rec(0xf4, b"\x00") + rec(0xfd, b"\x04" + bytes(4)) + rec(0xf4, b""))
    # open mode (bit 0 set): records of plaintext frames sealed by the harness
    s = stream([10, 20, 0])
    write("packet", "open_in_order", bytes([0x01, 0]) +
          rec(0, data(0, s[:20])) + rec(0, data(20, s[20:], fin=True)))
    write("packet", "open_out_of_order", bytes([0x01, 0]) +
          rec(0, data(15, s[15:])) + rec(0x10, data(0, s[:15]) + ping()) + rec(0, ping()))
    write("packet", "open_acks_in_flight", bytes([0x31, 0]) +
          rec(0, ack(2, 10, 2)) + rec(0x20, ack(5, 0, 0, [(0, 1)])) + rec(0x88, credit(1 << 20)))
    write("packet", "open_pattern", bytes([0x05, 61]) +
          rec(0, data(0, bytes(200))) + rec(0, data(400, bytes(300))) +
          rec(0, data(200, bytes(200))) + rec(2, data(0, bytes(10)), back=2))
    write("packet", "open_close_frames", bytes([0x09, 0]) +
          rec(4, ping()) + rec(1, ping()) + rec(0, data(0, stream([1]))) + rec(0, close(0x200, b"x")))
    write("packet", "open_rekey", bytes([0x01, 0]) + rec(0, data(0, s[:12])) + rec(0x80, ping()) +
          rec(0, data(12, s[12:])) + rec(1, ping()) + rec(0x80, ping()) + rec(8, ping()))
    # bulk records (length with the top bit set): 40 KiB, then out-of-order data past a hole
    def bulk(ctl, kib):
        return bytes([ctl]) + struct.pack(">H", 0x8000 | (kib - 1))
    # 40 KiB in order; data across the 64 KiB ring's wrap and further ahead; 20 KiB more (the
    # window has grown); data far ahead makes the ring grow with bytes held; then fill it all
    write("packet", "open_bulk_pattern", bytes([0x05, 200]) + bulk(8, 40) +
          rec(0, data(65200, bytes(600))) + rec(0, data(40 * 1024 + 30000, bytes(600))) +
          bulk(8, 20) + rec(0, data(40 * 1024 + 20480 + 90000, bytes(300))) + bulk(8, 96))
    # channels and datagrams, plaintext frames sealed by the harness
    cs = stream([10, 20, 0])[4:]  # a channel's stream has no preamble
    write("packet", "open_channels", bytes([0x01, 0]) +
          rec(0, chan_data(1, 10, cs[10:]) + datagram(b"dg one")) +
          rec(0, chan_data(1, 0, cs[:10]) + chan_data(2, 0, cs)) +
          rec(0, chan_credit(1, 1 << 21) + datagram(b"") + ping()) +
          rec(0, chan_data(17, 0, b"\x00\x00\x00\x01z")) +
          rec(0, close(0, b"") + delivered(4) + chan_delivered(1, 30) + chan_delivered(2, 12)))
    write("packet", "open_channel_flow", bytes([0x01, 0]) + rec(0, chan_data(3, 1 << 20, b"z")) +
          rec(0, datagram(bytes(1100))))
    write("packet", "open_flow_violation", bytes([0x01, 0]) + rec(0, data(1 << 20, b"z")))


def link_seeds():
    # opcodes (fuzz/link_fuzz.c): 0 connect, 1 send, 2 reply, 3 deliver, 4 drop, 5 dup,
    # 6 deliver n, 7 advance, 8 finish, 9 close, 10 abort, 11 act from on_message, 12 free ctx,
    # 13 settle, 14 corrupt, 15 refuse
    def op(code, *args):
        return bytes([code] + list(args))
    connect = op(0, 0)
    settle = op(13, 20)
    small = op(1, 0, 0, 100)             # end 0 sends 100 bytes
    write("link", "one_message", bytes([0]) + connect + small + settle)
    write("link", "both_ways_finish", bytes([0]) + connect + settle + small + op(1, 1, 0, 7) +
          op(1, 0, 0x40, 200) + settle + op(8, 0) + op(8, 1) + settle + op(9, 0) + settle)
    write("link", "edges", bytes([0]) + connect + settle + b"".join(
        op(1, 0, 0x80, k) for k in range(8)) + settle + settle + op(9, 1) + settle)
    write("link", "large_refused", bytes([2]) + connect + op(1, 0, 0xFF, 0xFF) +
          op(1, 0, 0xC0 | 12, 0) + settle + settle)
    write("link", "replies", bytes([0]) + connect + settle + op(2, 1, 0x35) +
          b"".join(op(1, 0, 0, 50 + k) for k in range(5)) + settle + settle)
    write("link", "eight_links", bytes([1]) + b"".join(op(0, k & 1) for k in range(8)) +
          settle + b"".join(op(1, k, 0x40, k * 7) for k in range(16)) + settle + settle +
          op(10, 3) + op(9, 5) + settle)
    write("link", "lossy_reorder", bytes([8]) + connect + op(6, 1) + op(4, 0) + op(7, 150) +
          op(6, 0) + op(1, 0, 0x40 | 20, 0) + op(3, 5) + op(3, 2) + op(4, 1) + op(5, 0) +
          op(6, 0) + op(7, 50) + settle + op(14, 0, 40) + settle)
    write("link", "close_from_on_message", bytes([0]) + connect + settle + op(11, 1, 2) +
          op(1, 0, 0, 9) + op(1, 0, 0, 9) + settle + settle)
    write("link", "abort_from_on_message", bytes([0]) + connect + settle + op(11, 1, 3) +
          op(1, 0, 0x40, 60) + op(1, 0, 0, 9) + settle)
    write("link", "free_ctx_alive", bytes([0]) + connect + op(0, 1) + settle + small +
          op(6, 2) + op(12, 1) + settle + op(0, 0) + settle + small + settle + op(12, 0))
    write("link", "refuse", bytes([0]) + op(15, 1) + connect + settle + connect + settle)
    # SEND's op byte's high nibble % 3 picks the channel
    write("link", "channels", bytes([0]) + connect + settle + op(0x11, 0, 0, 100) +
          op(0x21, 0, 0x40, 90) + op(0x01, 0, 0, 50) + op(0x11, 1, 0, 30) + op(4, 1) +
          op(0x21, 0, 0, 10) + settle + op(0x11, 0, 0x40, 200) + settle + op(9, 0) + settle)
    write("link", "channels_lossy", bytes([0]) + connect + settle + b"".join(
          op(0x11 + 0x10 * (k % 3), k & 1, 0x40, 40 + k) for k in range(12)) + op(4, 0) +
          op(4, 2) + op(5, 1) + op(6, 3) + op(7, 100) + settle + settle + op(9, 1) + settle)
    # SEND with high nibble 14: pure_link_cancel (s1: channel bit, how far back); 13: a deadline
    write("link", "cancels", bytes([0]) + connect + settle + b"".join(
          op(0x11 + 0x10 * (k % 2), 0, 0x40 | k, 200) for k in range(10)) + op(0xE1, 0, 0) +
          op(0xE1, 0, 3) + op(6, 2) + op(0xE1, 0, 5) + op(0xE1, 0, 8) + op(4, 0) + op(0xE1, 0, 1) +
          settle + op(0xE1, 0, 0) + settle + op(9, 0) + settle)
    write("link", "deadlines", bytes([0]) + connect + settle + b"".join(
          op(0xD1, k & 1, (k % 2) | (k * 6) << 1 & 0xFE, 50 + k) for k in range(10)) + op(4, 0) +
          op(4, 1) + op(7, 20) + op(6, 0) + op(7, 30) + settle + op(4, 0) + op(7, 250) + settle +
          op(9, 1) + settle)
    write("link", "datagrams", bytes([0]) + connect + settle + op(0xF1, 0, 0, 100) +
          op(0xF1, 1, 4, 200) + op(0xF1, 0, 0, 3) + op(4, 0) + op(0xF1, 0, 0xFF, 0xFF) +
          op(0x11, 0, 0, 30) + op(0xF1, 1, 0, 40) + op(5, 0) + settle + op(9, 0) + settle)
    # option bit 4: channel messages as shared buffers; bit 5: ends watched (queue limit 96 KiB)
    write("link", "shared_lossy", bytes([0x30]) + connect + settle + b"".join(
          op(0x11 + 0x10 * (k % 3), k & 1, 0x40 | (k * 5 % 64), 40 + k) for k in range(16)) +
          op(4, 0) + op(4, 2) + op(5, 1) + op(6, 3) + op(7, 100) + settle + op(10, 1) +
          op(0x11, 0, 0, 30) + settle + op(9, 0) + settle)
    write("link", "shared_free_ctx", bytes([0x10]) + connect + op(0, 1) + settle +
          b"".join(op(0x21, k, 0x40 | k, 10 * k) for k in range(8)) + op(6, 2) + op(12, 1) +
          settle + op(0x11, 0, 0xFF, 0xFF) + op(0x11, 0, 0, 9) + op(4, 0) + op(7, 230) +
          op(12, 0))
    write("link", "shared_silent_peer", bytes([0x34]) + connect + settle +
          b"".join(op(0x11, 0, 0x40 | 60, k) for k in range(24)) +
          b"".join(op(4, 0) + op(7, 230) for _ in range(6)) + op(9, 0) + settle + settle)
    write("link", "silent_peer", bytes([4]) + connect + settle + small +
          b"".join(op(4, 0) + op(7, 230) for _ in range(6)) + op(9, 0) + settle + settle)


def recv_seeds():
    # records (fuzz/recv_fuzz.c): 0 packet of structured frames, 1 bulk, 2 B sends, 3 to A,
    # 4 drop B's packets, 5 time, 6 real rekey, 7 application finish/close
    def msg_len(cls, seed, k):
        h = (((k + 1) * 2654435761) ^ (seed * 40503)) & 0xFFFFFFFF
        h ^= h >> 15
        return [h % 64, h % 1501, h % 20001, 65536 - 2 + h % 4][cls]

    def boundary(cls, seed, n):  # stream offset after n messages
        return 4 + sum(4 + msg_len(cls, seed, k) for k in range(n))

    def pkt(*frames, c=0, back=None):
        out = bytes([c, len(frames) - 1])
        if back is not None:
            out += bytes([back])
        return out + b"".join(frames)

    def dat(o, length, t=0):
        return bytes([t, o, length >> 8, length & 255])

    def ackf(k, first, delay, pairs=(), beyond=None):
        out = bytes([1 | (8 if beyond is not None else 0)])
        if beyond is not None:
            out += bytes([beyond])
        out += bytes([k - 1, first, delay])
        for g, l in pairs:
            out += bytes([g, l])
        return out
    b3 = boundary(0, 5, 3)  # A itself sent the preamble (offsets 0..3) when the link opened
    write("recv", "in_order", bytes([0, 5]) + pkt(dat(0, 100)) + pkt(dat(0, 300)) + pkt(b"\x03"))
    write("recv", "out_of_order", bytes([1, 9]) + pkt(dat(10, 500)) + pkt(dat(3, 200)) +
          pkt(dat(0, 291), dat(0, 400)) + bytes([5, 3]) + pkt(dat(0, 1000)))
    write("recv", "fin_at_boundary", bytes([0, 5]) + pkt(dat(0, b3 - 4, t=8)) + bytes([3, 0]))
    write("recv", "fin_inside_message", bytes([0, 5]) + pkt(dat(0, b3 - 5, t=8)))
    write("recv", "acks_of_real_packets", bytes([0x30, 0]) + bytes([5, 2]) +
          pkt(ackf(1, 1, 3)) + pkt(ackf(3, 0, 0, [(0, 0), (1, 0)])) + bytes([2, 40, 3, 0]) +
          pkt(ackf(2, 2, 1, [(0, 3)]), b"\x03"))
    write("recv", "ack_unsent", bytes([0x10, 0]) + pkt(ackf(1, 0, 0, beyond=5)))
    write("recv", "credit_and_b_sends", bytes([0x80, 3]) + pkt(b"\x02\x00\x10") +
          bytes([2, 200, 2, 255, 2, 255]) + pkt(b"\x02\x01\x00") + bytes([3, 0, 5, 10, 3, 0]))
    write("recv", "bulk_large", bytes([3, 1]) + bytes([1, 63, 5, 2, 1, 63, 3, 0, 1, 63]) +
          pkt(dat(100, 1000)) + bytes([1, 63, 1, 63]))
    write("recv", "bulk_window_wrap", bytes([2, 7]) + bytes([1, 40]) + pkt(dat(120, 800)) +
          bytes([1, 60, 5, 1]) + pkt(dat(127, 1399)) + bytes([1, 63, 1, 63]))
    write("recv", "rekey", bytes([0, 2]) + pkt(dat(0, 50)) + bytes([6]) + pkt(dat(0, 50)) +
          pkt(dat(0, 50), c=8) + bytes([6]) + pkt(dat(0, 80)))
    write("recv", "replays", bytes([1, 4]) + pkt(dat(0, 700)) + pkt(dat(0, 700)) +
          pkt(dat(200, 300), c=0x20, back=1) + pkt(dat(0, 700), c=0x20, back=3) +
          pkt(b"\x03", c=0x10))
    write("recv", "close_frame", bytes([0, 1]) + pkt(dat(0, 40)) + pkt(b"\x04\x07\x03bye"))
    write("recv", "close_on_message", bytes([0x40, 6]) + pkt(dat(0, 400)) + pkt(dat(0, 400)) +
          bytes([3, 0]))
    write("recv", "rekey_frames", bytes([0, 0]) + pkt(b"\x05\x00\x01" + bytes(32)) +
          pkt(b"\x05\x01\x02" + bytes(range(32))) + pkt(b"\x06\x20", b"\x07\x03\x01\x00\x00"))
    write("recv", "junk_data", bytes([0, 0]) + pkt(dat(0, 30, t=0x10) + bytes(range(30))))
    write("recv", "app_finish_close", bytes([0x10, 8]) + pkt(dat(0, 100)) + bytes([7, 0, 3, 0]) +
          pkt(dat(0, 100)) + bytes([7, 1, 3, 0, 5, 200]) + pkt(b"\x03"))
    # DATA t bit 6: CHAN_DATA on channel 1 + (t >> 7)
    write("recv", "channels", bytes([1, 3]) + pkt(dat(0, 300, t=0x40)) + pkt(dat(3, 200, t=0xC0)) +
          pkt(dat(0, 291, t=0xC0), dat(0, 100)) + pkt(dat(0, 500, t=0x40)) + bytes([3, 0]))
    # PING t bit 3: a DATAGRAM of n bytes
    write("recv", "datagrams", bytes([0, 1]) + pkt(b"\x0b\x05", dat(0, 100)) +
          pkt(b"\x0b\x00", b"\x0b\xff") + pkt(b"\x0b\x10", c=0x20, back=1))
    write("recv", "flow_violation", bytes([0, 0]) + pkt(dat(1, 100, t=0x20)))


if __name__ == "__main__":
    frame_seeds()
    msgparse_seeds()
    handshake_seeds()
    tparams_seeds()
    packet_seeds()
    link_seeds()
    recv_seeds()
