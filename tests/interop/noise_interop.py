#!/usr/bin/python3
"""Checks Pure's Noise IK (build/noise_vector) against dissononce, an independent Python
implementation of the Noise framework, and against the published cacophony test vector.

usage: /usr/bin/python3 noise_interop.py BUILD_DIR
Exits 0 and prints one "noise interop: OK ..." line when everything agrees, 1 otherwise.
"""
import json
import os
import subprocess
import sys

from dissononce.cipher.aesgcm import AESGCMCipher
from dissononce.dh.x25519.private import PrivateKey
from dissononce.dh.x25519.public import PublicKey
from dissononce.dh.x25519.x25519 import X25519DH
from dissononce.extras.dh.dangerous.dh_nogen import NoGenDH
from dissononce.hash.sha256 import SHA256Hash
from dissononce.processing.handshakepatterns.interactive.IK import IKHandshakePattern
from dissononce.processing.impl.cipherstate import CipherState
from dissononce.processing.impl.handshakestate import HandshakeState
from dissononce.processing.impl.symmetricstate import SymmetricState

HERE = os.path.dirname(os.path.abspath(__file__))
DH = X25519DH()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("MISMATCH: " + what, file=sys.stderr)


def hx(b):
    return b.hex() if b else "-"


def unhx(s):
    return b"" if s == "-" else bytes.fromhex(s)


def dissononce_hs(e_priv):
    """A dissononce handshake state for Noise_IK_25519_AESGCM_SHA256 whose ephemeral is fixed."""
    dh = NoGenDH(DH, PrivateKey(e_priv))
    return HandshakeState(SymmetricState(CipherState(AESGCMCipher()), SHA256Hash()), dh)


class Pure:
    """build/noise_vector driven line by line over pipes."""

    def __init__(self, build, args, quiet=False):
        self.p = subprocess.Popen([os.path.join(build, "noise_vector")] + args,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  stderr=subprocess.DEVNULL if quiet else None)

    def send(self, word, data):
        self.p.stdin.write("%s %s\n" % (word, hx(data)))
        self.p.stdin.flush()

    def expect(self, word):
        line = self.p.stdout.readline().split()
        if len(line) != 2 or line[0] != word:
            raise RuntimeError("noise_vector said %r, expected %r" % (line, word))
        return unhx(line[1])

    def transport(self, op, n, data):
        self.p.stdin.write("%s %d %s\n" % (op, n, hx(data)))
        self.p.stdin.flush()
        return self.p.stdout.readline().split()

    def close(self):
        self.p.stdin.close()
        return self.p.wait(timeout=10)


def compare_transport(pure, cs_send, cs_recv, label):
    """Pure seals, dissononce opens, and the other way round, for a few nonces and sizes."""
    for n, size in ((0, 0), (1, 1), (2, 61), (3, 1448)):
        msg = os.urandom(size)
        cs_send.set_nonce(n)
        ct = cs_send.encrypt_with_ad(b"", msg)
        out = pure.transport("open", n, ct)
        check(out[:1] == ["pt"] and unhx(out[1]) == msg, "%s: Pure opens dissononce n=%d" % (label, n))
        out = pure.transport("seal", n, msg)
        ok = out[:1] == ["ct"]
        if ok:
            cs_recv.set_nonce(n)
            try:
                ok = cs_recv.decrypt_with_ad(b"", unhx(out[1])) == msg
            except Exception:
                ok = False
        check(ok, "%s: dissononce opens Pure n=%d" % (label, n))
    # A forged packet must be refused.
    out = pure.transport("open", 9, os.urandom(40))
    check(out[:1] == ["error"], "%s: Pure refused a forged transport packet" % label)


def pure_initiator_vs_dissononce_responder(build, prologue, p1, p2, fixed_e):
    i_s, r_s = os.urandom(32), os.urandom(32)
    i_e, r_e = os.urandom(32), os.urandom(32)
    r_kp = DH.generate_keypair(PrivateKey(r_s))
    pure = Pure(build, ["initiator", i_s.hex(), r_kp.public.data.hex(),
                        i_e.hex() if fixed_e else "-", hx(prologue), hx(p1)])
    resp = dissononce_hs(r_e)
    resp.initialize(IKHandshakePattern(), False, prologue, s=r_kp)
    msg1 = pure.expect("msg1")
    got = bytearray()
    resp.read_message(msg1, got)
    check(bytes(got) == p1, "Pure->dissononce: payload1")
    check(resp.rs.data == DH.generate_keypair(PrivateKey(i_s)).public.data,
          "Pure->dissononce: initiator static key")
    msg2 = bytearray()
    cs_i2r, cs_r2i = resp.write_message(p2, msg2)
    pure.send("msg2", bytes(msg2))
    check(pure.expect("payload2") == p2, "Pure->dissononce: payload2")
    k_send, k_recv = pure.expect("send"), pure.expect("recv")
    pure.expect("ck")
    h = pure.expect("h")
    check(k_send == cs_i2r._key and k_recv == cs_r2i._key, "Pure->dissononce: transport keys")
    check(h == resp.symmetricstate.get_handshake_hash(), "Pure->dissononce: handshake hash")
    # Pure is the initiator: it sends with i2r and receives with r2i.
    compare_transport(pure, cs_r2i, cs_i2r, "Pure initiator")
    pure.close()


def dissononce_initiator_vs_pure_responder(build, prologue, p1, p2, fixed_e):
    i_s, r_s = os.urandom(32), os.urandom(32)
    i_e, r_e = os.urandom(32), os.urandom(32)
    i_kp, r_kp = DH.generate_keypair(PrivateKey(i_s)), DH.generate_keypair(PrivateKey(r_s))
    pure = Pure(build, ["responder", r_s.hex(), r_e.hex() if fixed_e else "-", hx(prologue),
                        hx(p2)])
    init = dissononce_hs(i_e)
    init.initialize(IKHandshakePattern(), True, prologue, s=i_kp, rs=r_kp.public)
    msg1 = bytearray()
    init.write_message(p1, msg1)
    pure.send("msg1", bytes(msg1))
    check(pure.expect("payload1") == p1, "dissononce->Pure: payload1")
    check(pure.expect("rs") == i_kp.public.data, "dissononce->Pure: initiator static key")
    msg2 = pure.expect("msg2")
    got = bytearray()
    cs_i2r, cs_r2i = init.read_message(msg2, got)
    check(bytes(got) == p2, "dissononce->Pure: payload2")
    k_send, k_recv = pure.expect("send"), pure.expect("recv")
    pure.expect("ck")
    h = pure.expect("h")
    check(k_send == cs_r2i._key and k_recv == cs_i2r._key, "dissononce->Pure: transport keys")
    check(h == init.symmetricstate.get_handshake_hash(), "dissononce->Pure: handshake hash")
    compare_transport(pure, cs_i2r, cs_r2i, "Pure responder")
    pure.close()


def tampered_msg1_refused(build):
    r_s = os.urandom(32)
    r_kp = DH.generate_keypair(PrivateKey(r_s))
    init = dissononce_hs(os.urandom(32))
    init.initialize(IKHandshakePattern(), True, b"pure",
                    s=DH.generate_keypair(PrivateKey(os.urandom(32))), rs=r_kp.public)
    msg1 = bytearray()
    init.write_message(b"hello", msg1)
    msg1[40] ^= 1  # inside the encrypted static key
    pure = Pure(build, ["responder", r_s.hex(), "-", hx(b"pure"), "-"], quiet=True)
    pure.send("msg1", bytes(msg1))
    line = pure.p.stdout.readline().split()
    rc = pure.close()
    check(line[:2] == ["error", "read_msg1"] and rc != 0, "Pure refused a tampered msg1")


def cacophony(build):
    with open(os.path.join(HERE, "cacophony_ik_aesgcm_sha256.json")) as f:
        v = json.load(f)
    b = bytes.fromhex
    msgs = v["messages"]
    # Pure, both roles, with the vector's fixed keys.
    pure_i = Pure(build, ["initiator", v["init_static"], v["init_remote_static"],
                          v["init_ephemeral"], v["init_prologue"], msgs[0]["payload"]])
    pure_r = Pure(build, ["responder", v["resp_static"], v["resp_ephemeral"], v["resp_prologue"],
                          msgs[1]["payload"]])
    msg1 = pure_i.expect("msg1")
    check(msg1.hex() == msgs[0]["ciphertext"], "cacophony: Pure msg1")
    pure_r.send("msg1", msg1)
    check(pure_r.expect("payload1") == b(msgs[0]["payload"]), "cacophony: payload1")
    pure_r.expect("rs")
    msg2 = pure_r.expect("msg2")
    check(msg2.hex() == msgs[1]["ciphertext"], "cacophony: Pure msg2")
    pure_i.send("msg2", msg2)
    check(pure_i.expect("payload2") == b(msgs[1]["payload"]), "cacophony: payload2")
    hashes = []
    for p in (pure_i, pure_r):
        p.expect("send"), p.expect("recv"), p.expect("ck")
        hashes.append(p.expect("h"))
    # Transport messages alternate initiator, responder; nonces count per direction.
    for idx in range(2, len(msgs)):
        sender = pure_i if idx % 2 == 0 else pure_r
        out = sender.transport("seal", (idx - 2) // 2, b(msgs[idx]["payload"]))
        check(out[:1] == ["ct"] and out[1] == msgs[idx]["ciphertext"],
              "cacophony: transport message %d" % idx)
    pure_i.close(), pure_r.close()
    # dissononce on the same vector: it must reproduce the messages too, and agree with Pure's h.
    i = dissononce_hs(b(v["init_ephemeral"]))
    i.initialize(IKHandshakePattern(), True, b(v["init_prologue"]),
                 s=DH.generate_keypair(PrivateKey(b(v["init_static"]))),
                 rs=PublicKey(b(v["init_remote_static"])))
    m = bytearray()
    i.write_message(b(msgs[0]["payload"]), m)
    check(m.hex() == msgs[0]["ciphertext"], "cacophony: dissononce msg1")
    got = bytearray()
    i.read_message(b(msgs[1]["ciphertext"]), got)
    h = i.symmetricstate.get_handshake_hash()
    check(hashes[0] == h and hashes[1] == h, "cacophony: Pure's h equals dissononce's")
    if h.hex() != v["handshake_hash"]:
        print("note: the vector's handshake_hash field (%s...) matches neither implementation's h "
              "(%s...); messages and transport keys do match" % (v["handshake_hash"][:16], h.hex()[:16]))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = sys.argv[1]
    cacophony(build)
    cases = 0
    for prologue, p1, p2 in ((b"", b"", b""), (b"pure", b"hello", b"world"),
                             (os.urandom(100), os.urandom(1000), os.urandom(3))):
        for fixed_e in (True, False):
            pure_initiator_vs_dissononce_responder(build, prologue, p1, p2, fixed_e)
            dissononce_initiator_vs_pure_responder(build, prologue, p1, p2, fixed_e)
            cases += 2
    tampered_msg1_refused(build)
    if failures:
        print("noise interop: FAILED (%d mismatches)" % len(failures))
        return 1
    print("noise interop: OK (cacophony vector; %d handshakes with dissononce, both roles, "
          "identical transport keys, hash and payloads)" % cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
