#!/usr/bin/env python3
"""Instructions per delivery of a worker, from two callgrind runs of the pipeline backlog.

CPU time on this shared 2-core VM moves by 20% within an hour, so a change of a few
percent in a worker's CPU per delivery cannot be seen in it. Instructions can: callgrind
counts every instruction the worker executes, whatever its neighbours do. Two drains of
different sizes, each under callgrind, and the difference of their counts divided by the
difference in deliveries leaves out what does not grow with deliveries (start-up,
connecting, the idle wait for the end of the drain).

What it does not see: cache misses, contention between threads, the kernel (system calls
are not counted), and libcrypto's real cost (valgrind's CPU has no AVX-512 and no VAES, so
OpenSSL takes slower paths than on the host). Read "all but libcrypto" as the figure: it is
our code, nghttp2, jemalloc and libc, which is what changes between two builds of pushd.

Usage: instructions.py summarize CALLGRIND_FILE...   (one JSON object per line: objects)
       instructions.py report SMALL LARGE LABEL SMALL_FILE LARGE_FILE [LABEL SMALL_FILE LARGE_FILE]
"""
import collections
import json
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$")


def by_object(path):
    """Instructions per object file (pushd, libcrypto.so.3, ...) in one callgrind output."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True, check=True).stdout
    totals = collections.Counter()
    for line in out.splitlines():
        match = LINE.match(line)
        if not match or "PROGRAM TOTALS" in line:
            continue
        obj = re.search(r"\[([^\]]*)\]\s*$", match.group(2))
        name = obj.group(1).rsplit("/", 1)[-1] if obj else "?"
        # The binary under test has whatever name it was copied to.
        if not name.startswith("lib") and not name.startswith("ld-") and name != "?":
            name = "pushd"
        totals[name] += int(match.group(1).replace(",", ""))
    return totals


def short(name):
    return re.sub(r"\.so(\.\d+)*$", "", name).removeprefix("lib") if name != "pushd" else name


def per_delivery(small, large, small_file, large_file):
    a, b = by_object(small_file), by_object(large_file)
    return {name: (b[name] - a[name]) / (large - small) for name in set(a) | set(b)}


def line(label, counts):
    crypto = counts.get("libcrypto.so.3", 0)
    rest = {name: value for name, value in counts.items() if name != "libcrypto.so.3"}
    named = sorted(rest.items(), key=lambda item: -item[1])
    shown = ", ".join(f"{short(name)} {value:,.0f}" for name, value in named[:5])
    other = sum(value for _, value in named[5:])
    return (f"  {label:<9}: {sum(counts.values()):,.0f} in all; libcrypto {crypto:,.0f}; all but libcrypto "
            f"{sum(rest.values()):,.0f} ({shown}, other {other:,.0f})"), sum(rest.values())


def main(argv):
    if len(argv) >= 2 and argv[1] == "report" and len(argv) in (7, 10):
        small, large = int(argv[2]), int(argv[3])
        print(f"instructions per delivery (callgrind, worker only; (the {large:,}-delivery drain - the {small:,}-delivery drain)"
              f" / {large - small:,}):")
        rests = []
        for index in range(4, len(argv), 3):
            text, rest = line(argv[index], per_delivery(small, large, argv[index + 1], argv[index + 2]))
            print(text)
            rests.append(rest)
        if len(rests) == 2 and rests[1] > 0:
            print(f"  all but libcrypto, {argv[4]} / {argv[7]}: {rests[0] / rests[1]:.3f}")
        return 0
    if len(argv) >= 3 and argv[1] == "summarize":
        for path in argv[2:]:
            print(json.dumps({short(name): value for name, value in by_object(path).most_common()}))
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
