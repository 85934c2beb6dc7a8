#!/usr/bin/env python3
"""Sums a profile of translated code per guest block and per guest function.

    rm -f /tmp/dump.*
    RTGRIND_DUMP_CODE=/tmp/dump perf record -e cpu-clock -o /tmp/perf.data rtgrind ... ./prog
    python3 benches/profile-blocks.py /tmp/perf.data /tmp/dump.index [TOP]

Samples in the code cache are attributed to the translation holding them (the index written
by `RTGRIND_DUMP_CODE`), then to the guest function of its first instruction, found through
the guest's file mappings that perf recorded and the files' symbol tables (`nm`).
"""
import bisect
import collections
import re
import subprocess
import sys


def read_index(path):
    blocks = []
    for line in open(path):
        host, length, guest, end = line.split()
        blocks.append((int(host, 16), int(length), int(guest, 16), int(end, 16)))
    blocks.sort()
    return blocks


def guest_maps(perf_data):
    """(start, end, pgoff, file) of every file mapping perf saw."""
    out = subprocess.run(["perf", "script", "-i", perf_data, "--show-mmap-events", "-F", "ip"],
                         capture_output=True, text=True).stdout
    maps = []
    for m in re.finditer(r"PERF_RECORD_MMAP2? \d+/\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|\d+)[^\]]*\]: [rwxp-]+ (\S+)", out):
        start, length, pgoff, path = int(m[1], 16), int(m[2], 16), int(m[3], 0), m[4]
        if path.startswith("/") and "rtgrind" not in path.rsplit("/", 1)[-1]:
            maps.append((start, start + length, pgoff, path))
    return maps, out


_symbols = {}


def debug_file(path):
    """The detached debug file of `path` (by build id), else `path`."""
    notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]{2})([0-9a-f]+)", notes)
    if m:
        candidate = f"/usr/lib/debug/.build-id/{m[1]}/{m[2]}.debug"
        try:
            open(candidate).close()
            return candidate
        except OSError:
            pass
    return path


def symbols(path):
    if path not in _symbols:
        syms = []
        for flag in ([], ["-D"]):
            r = subprocess.run(["nm", "-n", "--defined-only"] + flag + [debug_file(path)], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "tTwWiI":
                    syms.append((int(parts[0], 16), parts[2]))
            if syms:
                break
        syms.sort()
        _symbols[path] = syms
    return _symbols[path]


def file_vaddr_base(path):
    """The vaddr of the first PT_LOAD with offset 0 (0 for PIE and libraries)."""
    r = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for line in r.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and int(f[1], 16) == 0:
            return int(f[2], 16)
    return 0


def function_of(pc, maps):
    for start, end, pgoff, path in maps:
        if start <= pc < end:
            vaddr = pc - start + pgoff + file_vaddr_base(path)
            syms = symbols(path)
            i = bisect.bisect_right(syms, (vaddr, "\uffff")) - 1
            name = syms[i][1] if i >= 0 else "?"
            return f"{name} ({path.rsplit('/', 1)[-1]})"
    return f"{pc:#x}"


def main():
    perf_data, index = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    blocks = read_index(index)
    starts = [b[0] for b in blocks]
    maps, script = guest_maps(perf_data)
    per_block = collections.Counter()
    total = elsewhere = 0
    for line in script.splitlines():
        line = line.strip()
        if not re.fullmatch(r"[0-9a-f]+", line):
            continue
        ip = int(line, 16)
        total += 1
        i = bisect.bisect_right(starts, ip) - 1
        if i >= 0 and ip < blocks[i][0] + blocks[i][1]:
            per_block[blocks[i][2]] += 1
        else:
            elsewhere += 1
    per_function = collections.Counter()
    for guest, n in per_block.items():
        per_function[function_of(guest, maps)] += n
    print(f"{total} samples, {elsewhere} outside translations ({100 * elsewhere / max(total, 1):.1f}%)")
    print("\nper guest function:")
    for name, n in per_function.most_common(top):
        print(f"  {100 * n / total:6.2f}%  {name}")
    print("\nper guest block:")
    for guest, n in per_block.most_common(top):
        print(f"  {100 * n / total:6.2f}%  {guest:#x}  {function_of(guest, maps)}")


if __name__ == "__main__":
    main()
