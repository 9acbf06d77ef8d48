/* The floor for one connection's latency: a minimal blocking HTTP/1.1 client. One keep-alive
 * connection, one GET at a time, write then read until the response's Content-Length is in;
 * latency from before the write to after the last byte, into 0.1 µs buckets (memory flat).
 * Prints "requests p50_us". Built and run by benches/baseline.py.
 *   cc -O2 -o blocking benches/blocking.c && ./blocking PORT /index.html SECONDS
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem, strcasestr: undeclared without it, their pointers cut to int */
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUCKETS 1000000 /* 0.1 µs each: up to 100 ms */
static unsigned long long hist[BUCKETS];

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT PATH SECONDS\n", argv[0]);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char req[512], buf[65536];
    int rl = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", argv[2]);
    long long end = now_ns() + atoll(argv[3]) * 1000000000LL;
    unsigned long long n = 0;
    while (now_ns() < end) {
        long long t0 = now_ns();
        if (write(fd, req, rl) != rl) {
            perror("write");
            return 1;
        }
        size_t have = 0;
        long want = -1;
        for (;;) {
            ssize_t r = read(fd, buf + have, sizeof buf - have);
            if (r <= 0) {
                fprintf(stderr, "read: connection closed\n");
                return 1;
            }
            have += r;
            if (want < 0) {
                char *e = memmem(buf, have, "\r\n\r\n", 4);
                if (!e)
                    continue;
                char *cl = strcasestr(buf, "content-length:");
                if (!cl || cl > e) {
                    fprintf(stderr, "no Content-Length\n");
                    return 1;
                }
                want = (e + 4 - buf) + atol(cl + 15);
            }
            if ((long)have >= want)
                break;
        }
        long long d = (now_ns() - t0) / 100;
        hist[d < BUCKETS ? d : BUCKETS - 1]++;
        n++;
    }
    unsigned long long seen = 0;
    for (long i = 0; i < BUCKETS; i++) {
        seen += hist[i];
        if (seen * 2 >= n) {
            printf("%llu %.1f\n", n, i / 10.0);
            return 0;
        }
    }
    return 1;
}
