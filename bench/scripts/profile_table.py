#!/usr/bin/env python3
"""Where ferry's CPU goes, from flame-graph stacks (`bench/scripts/flamegraph.sh` writes one
`SCENARIO.folded.gz` per scenario): a markdown table of self time by owner (the kernel, then user
space split by the crate or library of the leaf frame), and each scenario's top user-space
functions. Usage: profile_table.py DIR [TOP]"""
import collections
import gzip
import pathlib
import re
import sys

OWNERS = [
    ("kernel", re.compile(r"_\[k\]$")),
    ("glibc malloc/free", re.compile(r"^(__GI___libc_malloc|_int_malloc|_int_free|malloc|free|cfree|__libc_free|malloc_consolidate|unlink_chunk|_int_realloc|realloc|__libc_realloc|tcache_\w+|__malloc_\w+|sysmalloc)")),
    ("memcpy/memmove/memset", re.compile(r"^__(memcpy|memmove|memset|memcmp)")),
    ("ferry", re.compile(r"ferry_")),
    ("tokio", re.compile(r"^(<)?tokio::")),
    ("hyper", re.compile(r"^(<)?hyper(_util)?::")),
    ("h2", re.compile(r"^(<)?h2::")),
    ("http/bytes", re.compile(r"^(<)?(http|bytes|http_body\w*)::")),
    ("futures/tower", re.compile(r"^(<)?(futures_\w+|tower)::")),
    ("std/core/alloc", re.compile(r"^(<)?(std|core|alloc)::")),
]


def owner(leaf):
    for name, pattern in OWNERS:
        if pattern.search(leaf):
            return name
    return "other"


MALLOC = OWNERS[1][1]
MEMCPY = OWNERS[2][1]
# Frames skipped when looking for who called malloc or memcpy: the allocator's and the
# standard library's own layers.
PLUMBING = re.compile(r"^(<)?(core|alloc|std)::|^__|^_int|^_mid|malloc|unlink_chunk|free$|^(alloc|dealloc|realloc|grow|shrink|allocate|deallocate)(_impl)?(_runtime)?$|^(grow|allocate|deallocate|finish_grow)_\w+$|drop_in_place|^drop$|box_new_uninit|exchange_malloc|from_elem|to_vec|clone$|reserve|do_reserve_and_handle|with_capacity|new_in|try_allocate_in")


def caller(frames):
    for f in reversed(frames[:-1]):
        base = re.sub(r"<.*$", "", f) if not f.startswith("<") else f
        if not PLUMBING.search(base):
            return short(f)
    return "(none)"


def short(name):
    return re.sub(r"<[^<>]*>", "<…>", re.sub(r"<[^<>]*>", "<…>", name))[:100]


def load(path):
    owners, leaves, total = collections.Counter(), collections.Counter(), 0
    callers = {"malloc": collections.Counter(), "memcpy": collections.Counter()}
    for line in gzip.open(path, "rt"):
        line = line.rstrip("\n")
        stack, _, n = line.rpartition(" ")
        n = int(n)
        frames = stack.split(";")
        leaf = frames[-1]
        total += n
        if MALLOC.search(leaf):
            callers["malloc"][caller(frames)] += n
        elif MEMCPY.search(leaf):
            callers["memcpy"][caller(frames)] += n
        o = owner(leaf)
        owners[o] += n
        if o != "kernel":
            leaves[leaf] += n
    return owners, leaves, total, callers


def main():
    root = pathlib.Path(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    runs = {p.name.removesuffix(".folded.gz"): load(p) for p in sorted(root.glob("*.folded.gz"))}
    names = [n for n, _ in OWNERS] + ["other"]
    print("| self time, % of ferry's samples | " + " | ".join(runs) + " |")
    print("|---" * (len(runs) + 1) + "|")
    # perf's cpu-clock samples carry their period in nanoseconds.
    cells = [f"{t / 1e9:.2f}" for _, _, t, _ in runs.values()]
    print("| CPU seconds sampled | " + " | ".join(cells) + " |")
    for name in names:
        cells = [f"{100 * o[name] / t:.1f}" for o, _, t, _ in runs.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for scenario, (o, leaves, t, callers) in runs.items():
        user = t - o["kernel"]
        print(f"\n**{scenario}**, top user-space functions (% of user-space samples):\n")
        for leaf, n in leaves.most_common(top):
            print(f"- {100 * n / user:.1f} % `{short(leaf)}`")
        for what, counts in callers.items():
            whole = sum(counts.values()) or 1
            print(f"\n{scenario}: who calls {what} (% of its samples):\n")
            for name, n in counts.most_common(top):
                print(f"- {100 * n / whole:.1f} % `{name}`")


main()
