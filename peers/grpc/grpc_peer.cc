// SPDX-License-Identifier: MIT
// grpc: the drain and the RPC workload over gRPC C++ 1.51 (Debian's libgrpc++, OpenSSL 3.0)
// with TLS (bench/README.md, "gRPC over TLS"; issue #21). The service is bench.proto's.
//
//   grpc serve
//       the drain server (the synchronous API, as gRPC's examples write a client-streaming
//       handler): TLS with a self-signed P-256 certificate made at start; prints
//       {"port": N, "cert_b64": "<the certificate's DER, base64>"} and serves until killed.
//   grpc drain PORT N SIZE --cert-b64 B64
//       one channel (one HTTP/2 connection), one Drain stream: the preamble message "pure",
//       then N messages of SIZE bytes (byte i is i % 251), written with buffer_hint so gRPC
//       may coalesce them; WritesDone; the server's Count is the confirmation. Prints {"messages",
//       "size", "bytes", "seconds", "server_messages"}; exit 0 only if the server counted N.
//   grpc rpc-serve [--corrupt-every N] [--drop-every N]
//       the RPC server: the async API, one completion queue polled by one thread, Echo sends
//       every request back (bench/rpc_work.h); prints {"port": N, "cert_b64": ...}; on SIGTERM
//       {"served", "requests", "links", ...}, links being the distinct peers (connections) seen.
//   grpc rpc-client PORT --cert-b64 B64 --links L --outstanding P --size S --duration SEC
//                   [--warmup SEC] [--drain-timeout SEC] [--rate R]
//   grpc rpc-client PORT --cert-b64 B64 --links L --size S --fanin N [--drain-timeout SEC]
//       L channels, each its own connection (a local subchannel pool: gRPC would otherwise
//       share one connection among channels with the same arguments) and TLS handshake, P
//       async unary Echo calls in flight on each, one completion queue, every reply checked
//       against its own call's request; phase lines and the JSON line as tools/rpc_bench.c.
//
// The client trusts exactly the server's certificate (it is the only root it is given), so a
// different certificate fails the handshake: the pin the tls peer makes by SHA-256.
#include "rpc_work.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "bench.grpc.pb.h"

using purebench::Bench;
using purebench::Blob;
using purebench::Count;

namespace
{

constexpr uint64_t kDrainMaxSize = 64u << 20;
constexpr int kServerPool = 1000;     // Echo calls the server has asked for at any time
constexpr uint64_t kFaninWindow = 64; // one-way calls in flight per link in the fan-in

// ---- the certificate ----

struct Cert {
    std::string key_pem, cert_pem, der_b64;
};

std::string bio_string(BIO *b)
{
    char *p = nullptr;
    long n = BIO_get_mem_data(b, &p);
    return std::string(p, n > 0 ? (size_t)n : 0);
}

// A self-signed P-256 certificate for "localhost" (subject CN and subjectAltName), made in
// memory. false with the reason on stderr.
bool make_cert(Cert *c)
{
    bool ok = false;
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIO *kb = BIO_new(BIO_s_mem()), *cb = BIO_new(BIO_s_mem()), *db = BIO_new(BIO_s_mem());
    BIO *b64 = BIO_new(BIO_f_base64());
    unsigned char serial[8];
    if (pkey && x && kb && cb && db && b64 && RAND_bytes(serial, sizeof serial) == 1) {
        serial[0] &= 0x7f;
        BIGNUM *bn = BN_bin2bn(serial, sizeof serial, nullptr);
        X509_NAME *name = X509_get_subject_name(x);
        X509V3_CTX v3;
        X509V3_set_ctx(&v3, x, x, nullptr, nullptr, 0);
        X509_EXTENSION *san =
            X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "DNS:localhost");
        ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) && X509_set_version(x, 2) &&
             X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
             X509_gmtime_adj(X509_getm_notAfter(x), 7L * 86400) && X509_set_pubkey(x, pkey) &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                        (const unsigned char *)"localhost", -1, -1, 0) &&
             X509_set_issuer_name(x, name) && san && X509_add_ext(x, san, -1) &&
             X509_sign(x, pkey, EVP_sha256()) &&
             PEM_write_bio_PrivateKey(kb, pkey, nullptr, nullptr, 0, nullptr, nullptr) &&
             PEM_write_bio_X509(cb, x);
        X509_EXTENSION_free(san);
        BN_free(bn);
        if (ok) {
            BIO_set_flags(b64, BIO_FLAGS_BASE64_NO_NL);
            BIO *chain = BIO_push(b64, db);
            ok = i2d_X509_bio(chain, x) && BIO_flush(chain) == 1;
            b64 = nullptr; // freed with the chain below
            c->key_pem = bio_string(kb);
            c->cert_pem = bio_string(cb);
            c->der_b64 = bio_string(db);
            BIO_pop(chain);
            BIO_free(chain);
        }
    }
    if (!ok)
        fprintf(stderr, "grpc: making the self-signed certificate failed\n");
    BIO_free(b64);
    BIO_free(kb);
    BIO_free(cb);
    BIO_free(db);
    X509_free(x);
    EVP_PKEY_free(pkey);
    return ok;
}

// The PEM of a certificate given as base64 DER (the server's cert_b64); "" if it is not base64.
std::string pem_of(const std::string &b64)
{
    if (b64.empty() || b64.size() > 16384 ||
        b64.find_first_not_of(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") !=
            std::string::npos)
        return "";
    std::string pem = "-----BEGIN CERTIFICATE-----\n";
    for (size_t i = 0; i < b64.size(); i += 64)
        pem += b64.substr(i, 64) + "\n";
    return pem + "-----END CERTIFICATE-----\n";
}

std::shared_ptr<grpc::ServerCredentials> server_creds(const Cert &c)
{
    grpc::SslServerCredentialsOptions o;
    o.pem_key_cert_pairs.push_back({c.key_pem, c.cert_pem});
    return grpc::SslServerCredentials(o);
}

std::shared_ptr<grpc::Channel> make_channel(uint64_t port, const std::string &pem)
{
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = pem;
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1); // one connection per channel
    args.SetMaxReceiveMessageSize((int)kDrainMaxSize + 64);
    return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(o),
                                     args);
}

// Blocks SIGTERM and SIGINT in this thread and every thread started after it (gRPC's own), and
// starts a thread that waits for one and calls on_stop.
template <typename F> void stop_on_signal(F on_stop)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set, on_stop]() {
        int sig;
        sigwait(&set, &sig);
        on_stop();
    }).detach();
}

std::unique_ptr<grpc::Server> start_server(grpc::Service *svc, const Cert &cert, int *port,
                                           std::unique_ptr<grpc::ServerCompletionQueue> *cq)
{
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", server_creds(cert), port);
    b.RegisterService(svc);
    b.SetMaxReceiveMessageSize((int)kDrainMaxSize + 64);
    if (cq)
        *cq = b.AddCompletionQueue();
    return b.BuildAndStart();
}

// L links need L descriptors: raises the soft limit to the hard one.
void raise_nofile()
{
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

// ---- drain ----

class DrainService final : public Bench::Service
{
    grpc::Status Drain(grpc::ServerContext *, grpc::ServerReader<Blob> *r, Count *c) override
    {
        Blob b;
        if (!r->Read(&b) || b.data() != "pure")
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                "the first message is not the preamble \"pure\"");
        uint64_t msgs = 0, bytes = 0;
        while (r->Read(&b)) {
            msgs++;
            bytes += b.data().size();
        }
        c->set_messages(msgs);
        c->set_bytes(bytes);
        return grpc::Status::OK;
    }
};

int cmd_serve()
{
    Cert cert;
    if (!make_cert(&cert))
        return 1;
    stop_on_signal([]() { std::_Exit(0); });
    DrainService svc;
    int port = 0;
    auto server = start_server(&svc, cert, &port, nullptr);
    if (!server || !port) {
        fprintf(stderr, "grpc serve: cannot listen on 127.0.0.1\n");
        return 1;
    }
    printf("{\"port\": %d, \"cert_b64\": \"%s\", \"mode\": \"grpc-tls\", \"service\": \"drain\"}\n",
           port, cert.der_b64.c_str());
    fflush(stdout);
    server->Wait();
    return 0;
}

int cmd_drain(int argc, char **argv)
{
    uint64_t port, n, size;
    std::string pem;
    if (argc < 3 || rpc_parse_count(argv[0], 1, 65535, &port) ||
        rpc_parse_count(argv[1], 0, 1ull << 40, &n) ||
        rpc_parse_count(argv[2], 0, kDrainMaxSize, &size))
        goto usage;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--cert-b64") && i + 1 < argc && !(pem = pem_of(argv[i + 1])).empty())
            i++;
        else
            goto usage;
    }
    if (pem.empty())
        goto usage;
    {
        double t0 = (double)rpc_now_ns() / 1e9;
        auto stub = Bench::NewStub(make_channel(port, pem));
        grpc::ClientContext ctx;
        Count count;
        std::unique_ptr<grpc::ClientWriter<Blob>> w(stub->Drain(&ctx, &count));
        Blob b;
        b.set_data("pure");
        bool ok = w->Write(b);
        // The body is the same pattern every time (as for every drain sender): set once, and
        // serialized by gRPC on each Write.
        std::string body(size, '\0');
        for (uint64_t i = 0; i < size; i++)
            body[i] = (char)(i % 251);
        b.set_data(body);
        // buffer_hint: a message may wait to be sent with the ones after it, as a bulk sender
        // wants (WritesDone flushes the rest). Without it every Write goes out on its own and
        // waits for its completion: about 6x the CPU per 61-byte message here (bench/README.md).
        const grpc::WriteOptions bulk = grpc::WriteOptions().set_buffer_hint();
        for (uint64_t i = 0; ok && i < n; i++)
            ok = w->Write(b, bulk);
        if (ok)
            w->WritesDone();
        grpc::Status st = w->Finish();
        double secs = (double)rpc_now_ns() / 1e9 - t0;
        if (!st.ok()) {
            fprintf(stderr, "grpc drain: the stream failed: %s (code %d)\n",
                    st.error_message().c_str(), (int)st.error_code());
            return 1;
        }
        printf("{\"messages\": %" PRIu64 ", \"size\": %" PRIu64 ", \"bytes\": %" PRIu64
               ", \"seconds\": %.6f, \"server_messages\": %" PRIu64 ", \"server_bytes\": %" PRIu64
               "}\n",
               n, size, n * size, secs, (uint64_t)count.messages(), (uint64_t)count.bytes());
        fflush(stdout);
        if (count.messages() != n || count.bytes() != n * size) {
            fprintf(stderr,
                    "grpc drain: the server counted %" PRIu64 " messages, sent %" PRIu64 "\n",
                    (uint64_t)count.messages(), n);
            return 1;
        }
        return 0;
    }
usage:
    fprintf(stderr, "usage: grpc drain PORT N SIZE --cert-b64 B64\n");
    return 2;
}

// ---- RPC server ----

struct Counts {
    uint64_t requests = 0, served = 0, corrupted = 0, dropped = 0, failed = 0;
    std::unordered_set<std::string> peers;
};

// One Echo call on the server: asked for, then answered, then freed (the async API's own
// pattern: every call is a tag on the completion queue).
struct ServerCall {
    grpc::ServerContext ctx;
    Blob req, rep;
    grpc::ServerAsyncResponseWriter<Blob> resp{&ctx};
    bool answered = false;
};

int cmd_rpc_serve(int argc, char **argv)
{
    uint64_t corrupt = 0, drop = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!strcmp(argv[i], "--corrupt-every") && !rpc_parse_count(v, 1, UINT64_MAX, &corrupt))
            i++;
        else if (!strcmp(argv[i], "--drop-every") && !rpc_parse_count(v, 1, UINT64_MAX, &drop))
            i++;
        else {
            fprintf(stderr, "usage: grpc rpc-serve [--corrupt-every N] [--drop-every N]\n");
            return 2;
        }
    }
    raise_nofile();
    Cert cert;
    if (!make_cert(&cert))
        return 1;
    static std::atomic<bool> stop{false};
    stop_on_signal([]() { stop = true; });
    Bench::AsyncService svc;
    int port = 0;
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    auto server = start_server(&svc, cert, &port, &cq);
    if (!server || !port) {
        fprintf(stderr, "grpc rpc-serve: cannot listen on 127.0.0.1\n");
        return 1;
    }
    auto ask = [&]() {
        auto *c = new ServerCall;
        svc.RequestEcho(&c->ctx, &c->req, &c->resp, cq.get(), cq.get(), c);
    };
    for (int i = 0; i < kServerPool; i++)
        ask();
    printf("{\"port\": %d, \"cert_b64\": \"%s\", \"mode\": \"grpc-tls\", \"service\": \"rpc\"}\n",
           port, cert.der_b64.c_str());
    fflush(stdout);
    Counts k;
    while (!stop) {
        void *tag;
        bool ok;
        auto r = cq->AsyncNext(&tag, &ok,
                               std::chrono::system_clock::now() + std::chrono::milliseconds(100));
        if (r == grpc::CompletionQueue::SHUTDOWN)
            break;
        if (r != grpc::CompletionQueue::GOT_EVENT)
            continue;
        auto *c = static_cast<ServerCall *>(tag);
        if (c->answered || !ok) { // the reply went (or the call died): done with it
            if (!ok && !c->answered)
                k.failed++;
            delete c;
            continue;
        }
        ask(); // keep the pool full
        k.requests++;
        k.peers.insert(c->ctx.peer());
        const std::string &d = c->req.data();
        c->answered = true;
        if (!rpc_server_echoes((const uint8_t *)d.data(), d.size())) {
            c->resp.Finish(c->rep, grpc::Status::OK, c); // a fan-in one-way call: an empty ack
            continue;
        }
        if (drop && k.requests % drop == 0) {
            k.dropped++; // never answered: the call stays open until the client gives up
            continue;
        }
        if (corrupt && k.requests % corrupt == 0 && !d.empty()) {
            c->req.mutable_data()->back() ^= 0x5a;
            k.corrupted++;
        }
        c->resp.Finish(c->req, grpc::Status::OK, c);
        k.served++;
    }
    printf("{\"served\": %" PRIu64 ", \"requests\": %" PRIu64
           ", \"links\": %zu, \"corrupted\": %" PRIu64 ", \"dropped\": %" PRIu64
           ", \"failed\": %" PRIu64 "}\n",
           k.served, k.requests, k.peers.size(), k.corrupted, k.dropped, k.failed);
    fflush(stdout);
    // The counts are out; tearing down the calls still open (a --drop-every server's) is not
    // worth waiting for.
    std::_Exit(0);
}

// ---- RPC client ----

struct Link {
    std::unique_ptr<Bench::Stub> stub;
    uint64_t next_seq = 0, inflight = 0, acked = 0, replies = 0;
};

struct ClientCall {
    grpc::ClientContext ctx;
    Blob reply;
    grpc::Status st;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Blob>> rd;
    uint32_t link;
    uint64_t seq, sent_ns;
};

struct Client {
    const char *prog = "grpc rpc-client";
    grpc::CompletionQueue cq;
    std::vector<Link> links;
    uint8_t *pat = nullptr;
    std::string req;
    uint32_t size = 0;
    uint64_t l = 0, p = 0, outstanding = 0;
    bool measuring = false, stopping = false;
    uint64_t rate = 0, rate_t0 = 0, rate_cursor = 0, rate_skipped = 0, fanin = 0;
    rpc_hist hist{};
    rpc_result r{};

    void fail(const char *why) { rpc_fail(&r, prog, why); }

    void send(uint32_t i)
    {
        Link &lk = links[i];
        uint64_t seq = lk.next_seq++;
        if (fanin)
            seq |= RPC_ONEWAY | (seq + 1 == fanin ? RPC_LAST : 0);
        rpc_request((uint8_t *)&req[0], pat, size, i, seq);
        auto *c = new ClientCall;
        c->link = i;
        c->seq = seq;
        Blob b;
        b.set_data(req);
        c->sent_ns = rpc_now_ns();
        c->rd = lk.stub->PrepareAsyncEcho(&c->ctx, b, &cq);
        c->rd->StartCall();
        c->rd->Finish(&c->reply, &c->st, c);
        lk.inflight++;
        outstanding++;
        r.sent++;
    }

    // --fanin: keeps kFaninWindow one-way calls in flight on link i; the last (RPC_LAST) goes
    // only once every other was acknowledged, so its echo says the link's N all arrived.
    void pump(uint32_t i)
    {
        Link &lk = links[i];
        while (lk.inflight < kFaninWindow && lk.next_seq + 1 < fanin)
            send(i);
        if (lk.next_seq + 1 == fanin && lk.acked + 1 == fanin && !lk.inflight)
            send(i);
    }

    void done(ClientCall *c, bool ok)
    {
        Link &lk = links[c->link];
        lk.inflight--;
        outstanding--;
        uint64_t now = rpc_now_ns();
        if (!ok || !c->st.ok()) {
            fail(c->st.error_message().empty() ? "a call failed"
                                               : "a call failed (its status says why)");
            if (r.errors <= 5)
                fprintf(stderr, "%s: call status %d: %s\n", prog, (int)c->st.error_code(),
                        c->st.error_message().c_str());
        } else if (fanin && !(c->seq & RPC_LAST)) {
            if (!c->reply.data().empty())
                fail("a one-way call's ack carries data");
            lk.acked++;
        } else {
            const std::string &d = c->reply.data();
            const char *bad =
                rpc_check((const uint8_t *)d.data(), d.size(), pat, size, c->link, c->seq);
            if (bad)
                fail(bad);
            r.replies++;
            if (!fanin && measuring) {
                rpc_hist_add(&hist, now - c->sent_ns);
                r.requests++;
            }
        }
        uint32_t i = c->link;
        delete c;
        if (fanin) {
            if (measuring)
                pump(i);
        } else if (!stopping && !rate) {
            send(i);
        }
    }

    void pace(uint64_t now)
    {
        uint64_t due = (uint64_t)((double)(now - rate_t0) * (double)rate / 1e9);
        for (uint64_t issued = r.sent + rate_skipped; issued < due; issued++) {
            uint64_t tries = 0;
            for (; tries < l; tries++) {
                uint32_t i = (uint32_t)rate_cursor;
                rate_cursor = (rate_cursor + 1) % l;
                if (links[i].inflight < p) {
                    send(i);
                    break;
                }
            }
            if (tries == l) {
                rate_skipped += due - issued;
                break;
            }
        }
    }

    template <typename Done> void run_for(uint64_t ns, Done is_done)
    {
        uint64_t end = rpc_now_ns() + ns;
        for (uint64_t now; (now = rpc_now_ns()) < end && !is_done();) {
            uint64_t until = end;
            if (rate && rate_t0 && !stopping) {
                pace(now);
                uint64_t tick = 1000000000ull / rate;
                tick = tick < 20000 ? 20000 : tick > 1000000 ? 1000000 : tick;
                if (now + tick < until)
                    until = now + tick;
            }
            gpr_timespec dl =
                gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                             gpr_time_from_nanos((int64_t)(until - now), GPR_TIMESPAN));
            void *tag;
            bool ok;
            // Everything already completed, then back to the clock.
            for (auto st = cq.AsyncNext(&tag, &ok, dl); st == grpc::CompletionQueue::GOT_EVENT;
                 st = cq.AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC)))
                done(static_cast<ClientCall *>(tag), ok);
        }
    }
};

int cmd_rpc_client(int argc, char **argv)
{
    const char *port_s = nullptr;
    uint64_t port = 0, l = 0, p = 0, size = 0, duration = 0, warmup = 500000000ull,
             drain = 10000000000ull, rate = 0, fanin = 0;
    bool have_d = false;
    std::string pem;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!strcmp(a, "--cert-b64") && v && !(pem = pem_of(v)).empty())
            i++;
        else if (!strcmp(a, "--links") && !rpc_parse_count(v, 1, 1000000, &l))
            i++;
        else if (!strcmp(a, "--outstanding") && !rpc_parse_count(v, 1, RPC_MAX_OUTSTANDING, &p))
            i++;
        else if (!strcmp(a, "--size") && !rpc_parse_count(v, RPC_HDR, RPC_MAX_SIZE, &size))
            i++;
        else if (!strcmp(a, "--duration") && !rpc_parse_seconds(v, &duration))
            i++, have_d = true;
        else if (!strcmp(a, "--warmup") && !rpc_parse_seconds(v, &warmup))
            i++;
        else if (!strcmp(a, "--drain-timeout") && !rpc_parse_seconds(v, &drain))
            i++;
        else if (!strcmp(a, "--rate") && !rpc_parse_count(v, 0, 1000000000, &rate))
            i++;
        else if (!strcmp(a, "--fanin") && !rpc_parse_count(v, 2, 1ull << 40, &fanin))
            i++;
        else if (a[0] != '-' && !port_s && !rpc_parse_count(a, 1, 65535, &port))
            port_s = a;
        else {
            fprintf(
                stderr,
                "usage: grpc rpc-client PORT --cert-b64 B64 --links L --outstanding P --size S --duration SEC\n"
                "                       [--warmup SEC] [--drain-timeout SEC] [--rate R]\n"
                "       grpc rpc-client PORT --cert-b64 B64 --links L --size S --fanin N (N >= 2)\n"
                "                       [--drain-timeout SEC]\n");
            return 2;
        }
    }
    if (fanin && !p)
        p = 1;
    if (!port_s || pem.empty() || !l || !p || !size || (!have_d && !fanin) || (fanin && rate)) {
        fprintf(
            stderr,
            "grpc rpc-client: PORT, --cert-b64, --links, --size and --duration (or --fanin) are needed\n");
        return 2;
    }
    raise_nofile();
    static Client k;
    k.l = l, k.p = p, k.size = (uint32_t)size, k.rate = rate, k.fanin = fanin;
    k.r.links = l, k.r.outstanding = p, k.r.size = size, k.r.rate = (double)rate;
    k.pat = rpc_pattern_new(k.size);
    k.req.assign(size, '\0');
    k.links.resize(l);
    uint64_t t0 = rpc_now_ns();
    std::vector<std::shared_ptr<grpc::Channel>> chans(l);
    for (uint64_t i = 0; i < l; i++) {
        chans[i] = make_channel(port, pem);
        chans[i]->GetState(true); // start connecting now: the handshakes run side by side
        k.links[i].stub = Bench::NewStub(chans[i]);
    }
    // Every channel to READY; one that fails its connection or handshake (TRANSIENT_FAILURE: no
    // server, or not the certificate given) is a link that did not come up, reported at once
    // instead of retried until a deadline.
    uint64_t up = 0;
    auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(60);
    for (uint64_t i = 0; i < l; i++) {
        for (;;) {
            grpc_connectivity_state st = chans[i]->GetState(true);
            if (st == GRPC_CHANNEL_READY) {
                up++;
                break;
            }
            if (st == GRPC_CHANNEL_TRANSIENT_FAILURE || st == GRPC_CHANNEL_SHUTDOWN ||
                !chans[i]->WaitForStateChange(st, deadline)) {
                if (i == up) // the first failure only
                    fprintf(stderr,
                            "%s: link %" PRIu64
                            " did not connect (%s): no server there, or its certificate is not "
                            "the one given?\n",
                            k.prog, i,
                            st == GRPC_CHANNEL_TRANSIENT_FAILURE
                                ? "connection or TLS handshake failed"
                                : "timed out");
                break;
            }
        }
    }
    k.r.connect_s = (double)(rpc_now_ns() - t0) / 1e9;
    if (up < l) {
        fprintf(stderr, "%s: only %" PRIu64 " of %" PRIu64 " links connected in %.1f s\n", k.prog,
                up, l, k.r.connect_s);
        k.fail("not every link connected");
    }
    printf("{\"phase\": \"connected\", \"links\": %" PRIu64 ", \"seconds\": %.3f}\n", up,
           k.r.connect_s);
    fflush(stdout);
    if (up == l && fanin) {
        rpc_phase("measure_start");
        double cpu0 = rpc_cpu_s();
        uint64_t w0 = rpc_now_ns();
        k.measuring = true;
        for (uint32_t i = 0; i < l; i++)
            k.pump(i);
        k.run_for(drain, [&]() { return k.r.replies >= k.l || (k.r.errors && !k.outstanding); });
        k.measuring = false;
        k.r.window_s = (double)(rpc_now_ns() - w0) / 1e9;
        k.r.client_cpu_s = rpc_cpu_s() - cpu0;
        rpc_phase("measure_end");
        k.r.requests = k.r.sent;
    } else if (up == l) {
        uint64_t steps = rate ? 0 : l < 20 ? l : 20; // traffic starts in steps, as rpc_bench.c
        k.rate_t0 = rate ? rpc_now_ns() : 0;
        for (uint64_t s = 0; s < steps; s++) {
            for (uint64_t i = s * l / steps; i < (s + 1) * l / steps; i++)
                for (uint64_t j = 0; j < p; j++)
                    k.send((uint32_t)i);
            k.run_for(warmup / 2 / steps, []() { return false; });
        }
        k.run_for(rate ? warmup : warmup - warmup / 2, []() { return false; });
        rpc_phase("measure_start");
        double cpu0 = rpc_cpu_s();
        uint64_t w0 = rpc_now_ns();
        k.measuring = true;
        k.run_for(duration, []() { return false; });
        k.measuring = false;
        k.r.window_s = (double)(rpc_now_ns() - w0) / 1e9;
        k.r.client_cpu_s = rpc_cpu_s() - cpu0;
        rpc_phase("measure_end");
        k.stopping = true;
        k.run_for(drain, [&]() { return k.outstanding == 0; });
    }
    k.r.missing = fanin ? l - k.r.replies : k.outstanding;
    if (k.r.missing)
        k.fail("replies missing at the end of the run");
    char extra[64];
    snprintf(extra, sizeof extra, ", \"rate_skipped\": %" PRIu64, k.rate_skipped);
    k.r.extra = extra;
    if (fanin)
        rpc_print_fanin(&k.r, fanin, "grpc");
    else
        rpc_print_result(&k.r, &k.hist, "grpc");
    // Calls still open (missing replies) would make an orderly teardown wait on them: the report
    // is out, so leave at once.
    std::_Exit(k.r.errors == 0 && k.r.missing == 0 && up == l ? 0 : 1);
}

} // namespace

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 2 && !strcmp(argv[1], "serve"))
        return cmd_serve();
    if (argc >= 2 && !strcmp(argv[1], "drain"))
        return cmd_drain(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "rpc-serve"))
        return cmd_rpc_serve(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "rpc-client"))
        return cmd_rpc_client(argc - 2, argv + 2);
    fprintf(stderr,
            "usage: grpc serve\n"
            "       grpc drain PORT N SIZE --cert-b64 B64\n"
            "       grpc rpc-serve [--corrupt-every N] [--drop-every N]\n"
            "       grpc rpc-client PORT --cert-b64 B64 --links L --outstanding P --size S ...\n");
    return 2;
}
