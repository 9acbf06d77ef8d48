#!/usr/bin/env python3
"""Calls per request from a callgrind output file: allocations, clock reads, histogram
records, and the libc wrappers of the system calls on the hot path. Used by benches/profile.sh.
    python3 benches/callcounts.py callgrind.out REQUESTS
A function inlined into its caller is not a call and is not counted (histogram records are
counted only where the compiler kept the call)."""
import collections, re, sys

WATCH = {
    "allocations": ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc"),
    "frees": ("free",),
    "clock reads": ("clock_gettime", "__clock_gettime", "__vdso_clock_gettime", "gettimeofday",
                    "__gettimeofday"),
    "recorder records": ("bakeoff::load::recorder::Recorder::record",),
    "histogram records": ("hdrhistogram::Histogram<T>::record", "hdrhistogram::Histogram<T>::record_n",
                          "hdrhistogram::Histogram<T>::record_n_inner"),
    "write/sendto/writev": ("write", "__libc_write", "sendto", "send", "writev", "__write"),
    "read/recvfrom/readv": ("read", "__libc_read", "recvfrom", "recv", "readv", "__read"),
    "epoll_wait": ("epoll_wait", "epoll_pwait"),
}


def main(path, requests):
    names, calls, cfn = {}, collections.Counter(), None
    for line in open(path, errors="replace"):
        m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2).strip()
            if line.startswith("cfn="):
                cfn = names.get(m.group(1))
            continue
        m = re.match(r"calls=(\d+)", line)
        if m and cfn:
            calls[cfn] += int(m.group(1))
            cfn = None
    for label, fns in WATCH.items():
        n = sum(v for k, v in calls.items() if k.split("@")[0].split("'")[0] in fns)
        print(f"  {label:20} {n / requests:8.3f} per request")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
