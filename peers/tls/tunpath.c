/* SPDX-License-Identifier: MIT */
/* tunpath: carries the IP packets of two network namespaces through build/udpfwd, so a TCP
 * connection crosses the same emulated path (loss, delay, rate, queue) as the QUIC peers' and
 * Pure's datagrams in bench/run.py hol. udpfwd forwards UDP; this wraps each IP packet in one
 * datagram on loopback.
 *
 *   tunpath --client-ns NAME --server-ns NAME [--dev NAME]
 *
 * Makes a TUN device (default "holtun", no packet information, no offloads: one IP packet per
 * read) in each namespace (named as `ip netns` names them, /run/netns/NAME), then, back in its
 * own namespace, two UDP sockets on 127.0.0.1: the server side's is bound to an ephemeral port,
 * printed as {"port": N}; its peer is udpfwd's server-facing socket, learnt from the first
 * datagram udpfwd forwards (the client speaks first: a TCP SYN). It then reads udpfwd's listening
 * port from its standard input (one line) and sends the client side's packets there. The caller
 * gives the devices their addresses, MTU and link state (`ip -n NS ...`). Packets the path drops
 * are simply gone, as on a real link; a send that would block is dropped and counted.
 * Runs until SIGTERM/SIGINT or end of standard input after the port; prints its counts to stderr.
 * Needs root (setns, TUN). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;
static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void die(const char *what)
{
    fprintf(stderr, "tunpath: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A TUN device called dev in namespace ns (then back in home). */
static int tun_in(const char *ns, const char *dev, int home)
{
    char path[256];
    snprintf(path, sizeof path, "/run/netns/%s", ns);
    int nfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nfd < 0 || setns(nfd, CLONE_NEWNET))
        die(path);
    close(nfd);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        die("/dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", dev);
    if (ioctl(fd, TUNSETIFF, &ifr))
        die("TUNSETIFF");
    if (setns(home, CLONE_NEWNET))
        die("setns back");
    return fd;
}

static int udp_sock(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), buf = 4 << 20;
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (fd < 0)
        die("socket");
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &al))
        die("bind 127.0.0.1:0");
    *port = ntohs(a.sin_port);
    return fd;
}

int main(int argc, char **argv)
{
    const char *nc = NULL, *nsv = NULL, *dev = "holtun";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--client-ns"))
            nc = argv[i + 1];
        else if (!strcmp(argv[i], "--server-ns"))
            nsv = argv[i + 1];
        else if (!strcmp(argv[i], "--dev"))
            dev = argv[i + 1];
        else
            nc = NULL, i = argc;
    }
    if (!nc || !nsv || argc % 2 == 0 || strlen(dev) >= IFNAMSIZ) {
        fprintf(stderr, "usage: tunpath --client-ns NAME --server-ns NAME [--dev NAME]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0)
        die("/proc/self/ns/net");
    int tun[2] = {tun_in(nc, dev, home), tun_in(nsv, dev, home)}; /* 0 client, 1 server */
    uint16_t port[2];
    int sock[2] = {udp_sock(&port[0]), udp_sock(&port[1])};
    printf("{\"port\": %u}\n", port[1]);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) {
        fprintf(stderr, "tunpath: no udpfwd port on standard input\n");
        return 1;
    }
    long fport = strtol(line, NULL, 10);
    if (fport < 1 || fport > 65535) {
        fprintf(stderr, "tunpath: bad udpfwd port '%s'\n", line);
        return 1;
    }
    struct sockaddr_in to[2] = {{.sin_family = AF_INET, .sin_port = htons((uint16_t)fport)},
                                {.sin_family = AF_INET}};
    to[0].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int have_to[2] = {1, 0};
    uint64_t pkts[2] = {0, 0}, dropped = 0;
    static uint8_t buf[65536];
    while (!g_stop) {
        struct pollfd p[5] = {{tun[0], POLLIN, 0},
                              {tun[1], POLLIN, 0},
                              {sock[0], POLLIN, 0},
                              {sock[1], POLLIN, 0},
                              {0, POLLIN, 0}};
        if (poll(p, 5, 500) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        if (p[4].revents & (POLLIN | POLLHUP)) { /* the caller went away */
            ssize_t r = read(0, line, sizeof line);
            if (r <= 0)
                break;
        }
        for (int side = 0; side < 2; side++) {
            /* this side's packets into the path */
            for (int k = 0; k < 256; k++) {
                ssize_t n = read(tun[side], buf, sizeof buf);
                if (n <= 0)
                    break;
                if (!have_to[side] || sendto(sock[side], buf, (size_t)n, 0,
                                             (struct sockaddr *)&to[side], sizeof to[side]) < 0)
                    dropped++;
                else
                    pkts[side]++;
            }
            /* the path's packets out to this side */
            for (int k = 0; k < 256; k++) {
                struct sockaddr_in from;
                socklen_t fl = sizeof from;
                ssize_t n = recvfrom(sock[side], buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
                if (n <= 0)
                    break;
                if (side == 1 && !have_to[1]) { /* udpfwd's server-facing socket */
                    to[1] = from;
                    have_to[1] = 1;
                }
                if (write(tun[side], buf, (size_t)n) < 0)
                    dropped++;
            }
        }
    }
    fprintf(stderr,
            "tunpath: %llu client packets, %llu server packets into the path, %llu dropped\n",
            (unsigned long long)pkts[0], (unsigned long long)pkts[1], (unsigned long long)dropped);
    return 0;
}
