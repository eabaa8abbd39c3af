#!/usr/bin/env python3
"""The issue's own measurement of a worker's CPU per push, on the README's main job.

Issue 12 measured `main` this way: the main job (`bash Deploy/cluster.sh`, two workers) plus
1,000 more demo jobs, then the two worker processes' CPU time over their whole lives divided
by the pushes they answered. That counts what `bench pipeline`'s backlog drain leaves out:
each worker's start-up, its first connections and the demo's small jobs. This script runs
after `Deploy/cluster.sh` (whose workers must still be running): it enqueues the extra jobs
(the demo batch's, under new ids), waits until every job is done, and prints the figures.

A worker's CPU is read from its process CPU clock (`clock_getcpuclockid`: nanoseconds, every
thread it ever ran), not from /proc's ticks. Standard library only.

Usage: cluster_cpu.py PUSHD RUN_DIR EXTRA_JOBS
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid

WORKER_METRICS_PORTS = (19464, 19465)  # Deploy/cluster.sh's worker-1 and worker-2


class Timespec(ctypes.Structure):
    _fields_ = [("seconds", ctypes.c_long), ("nanoseconds", ctypes.c_long)]


LIBC = ctypes.CDLL(None, use_errno=True)


def process_cpu_seconds(pid):
    clock, now = ctypes.c_int(), Timespec()
    if LIBC.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0 or LIBC.clock_gettime(clock, ctypes.byref(now)) != 0:
        raise SystemExit(f"cannot read the CPU clock of process {pid}")
    return now.seconds + now.nanoseconds / 1e9


ROLES = (("task pool", ""), ("HTTP/2 loops", "pushd-h2"), ("database", "pushd-pg"), ("broker", "pushd-amqp"), ("other", "pushd"))


def role(thread_name):
    """What a worker thread does, told by its OS name (as `WorkerUsage.ThreadRole` in the
    pipeline benchmark): Swift's cooperative pool is the unnamed rest."""
    for label, prefix in ROLES[1:]:
        if thread_name.startswith(prefix):
            return label
    return ROLES[0][0]


def cpu_by_role(pid):
    """Seconds on a CPU of the process's running threads, by role, from each thread's
    schedstat (nanoseconds); threads that exited are only in the process clock."""
    seconds = {label: 0.0 for label, _ in ROLES}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as comm, open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                seconds[role(comm.read().strip())] += int(stat.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
    return seconds


def usage(pids):
    """The workers' CPU so far: each one's process clock, and their running threads' split
    by role, summed."""
    split = {label: 0.0 for label, _ in ROLES}
    for pid in pids:
        for label, seconds in cpu_by_role(pid).items():
            split[label] += seconds
    return [process_cpu_seconds(pid) for pid in pids], split


def split_line(total, split, pushes):
    """`task pool 19.1, HTTP/2 loops 6.0, ..., exited 0.1` in µs per push."""
    per = lambda seconds: seconds * 1e6 / max(pushes, 1)
    parts = [f"{label} {per(split[label]):.1f}" for label, _ in ROLES]
    parts.append(f"exited {per(max(total - sum(split.values()), 0.0)):.1f}")
    return ", ".join(parts) + " µs"


def peak_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def metric_sum(name, labels_excluded=()):
    """The sum of a counter's series over both workers, leaving out series whose labels hold
    any of `labels_excluded` (e.g. `result="requeued"`)."""
    total = 0.0
    for port in WORKER_METRICS_PORTS:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            for line in response.read().decode().splitlines():
                if not (line.startswith(name + "{") or line.startswith(name + " ")):
                    continue
                if any(label in line for label in labels_excluded):
                    continue
                total += float(line.rsplit(" ", 1)[1])
    return int(total)


def jobs_settled():
    """Jobs done for good: acked, dead-lettered or expired. A requeued job is counted again
    when it is settled, and a split one lives on as its chunk jobs."""
    return metric_sum("pushd_jobs_completed_total", labels_excluded=('result="requeued"', 'result="split"'))


def envelope_microseconds(pushd):
    out = subprocess.run([pushd, "bench", "crypto"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"envelopes sealed \(JSON as the worker embeds it\), 1 core\s*:\s*(\d+)", out)
    if not match:
        raise SystemExit("bench crypto printed no one-core envelope rate")
    return 1e6 / int(match.group(1))


def main():
    pushd, run, extra = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if extra < 1:
        raise SystemExit("the number of extra jobs must be at least 1")
    with open(f"{run}/jobs.ndjson") as demo:
        jobs = [json.loads(line) for line in demo if line.strip()]
    before = jobs_settled()
    if before < len(jobs):
        raise SystemExit(f"the main job's demo batch is not done ({before} of {len(jobs)} jobs): see Deploy/cluster.sh's log")
    pids = [int(open(f"{run}/worker-{n}.pid").read()) for n in (1, 2)]
    main_pushes = metric_sum("pushd_deliveries_total")
    main_cpu, main_split = usage(pids)
    main_total = sum(main_cpu)
    tag = uuid.uuid4().hex[:8]
    more = "\n".join(json.dumps({**jobs[k % len(jobs)], "job_id": f"more-{tag}-{k}"}) for k in range(extra)) + "\n"
    subprocess.run([pushd, "enqueue"], input=more, text=True, check=True, stdout=subprocess.DEVNULL)
    expected = before + extra
    last, still = -1, 0
    while (done := jobs_settled()) < expected:
        still = still + 1 if done == last else 0
        if still > 120:  # a minute without progress
            raise SystemExit(f"stalled: {done} of {expected} jobs done")
        last = done
        time.sleep(0.5)  # each look scrapes both workers, CPU this measurement counts
    answered = metric_sum("pushd_deliveries_total")
    cpu, split = usage(pids)
    total = sum(cpu)
    envelope = envelope_microseconds(pushd)
    per_push = total * 1e6 / max(answered, 1)
    print(f"bench cluster: the main job plus {extra} demo jobs ({expected} jobs, {answered} pushes answered by two workers)")
    for pid, seconds in zip(pids, cpu):
        print(f"  worker {pid}: CPU {seconds:.3f} s over its life, peak RSS {peak_mib(pid):.1f} MiB")
    print(f"  CPU per push (both workers, start-up included): {per_push:.1f} µs")
    # Where it went: the main job (start-up, first connections, first jobs) apart from the
    # extra jobs (warm workers), each per push it answered, by thread. A thread that exits
    # between the two readings takes its main-job time out of its role's extra-jobs figure
    # (which can then read low, even below zero) and into "exited": the sum stays right.
    extra_pushes = answered - main_pushes
    extra_split = {label: split[label] - main_split[label] for label, _ in ROLES}
    print(f"    start-up and main job ({main_pushes} pushes): {main_total * 1e6 / max(main_pushes, 1):.1f} µs per push; "
          + split_line(main_total, main_split, main_pushes))
    print(f"    extra jobs ({extra_pushes} pushes): {(total - main_total) * 1e6 / max(extra_pushes, 1):.1f} µs per push; "
          + split_line(total - main_total, extra_split, extra_pushes))
    print(f"  crypto, 1 core: {envelope:.1f} µs per envelope; ratio {per_push / envelope:.2f} (target <= 2)")

if __name__ == "__main__":
    main()
