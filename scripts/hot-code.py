"""The two halves of scripts/hot-code.

`pages PID`: the library's code pages resident in process PID, as addresses in the library.
`script MAP START ONCE LAST MAPS PAGES [LATER...]`: the linker script that places first every
function that ran in the callgrind trace LAST (the agent's last round, of a process whose
library mappings are in MAPS), then what ran in ONCE (its connection and first turn, after the
start) and every function on a page in PAGES, then what ran in the LATER traces (features a
user turns on: Copilot, Claude Code, the chat, reviews), then what ran only in START (the
server's start), named through the linker's MAP of the same build.

Names are v0-mangled (.cargo/config.toml); the parts that change from one build or toolchain to
another (crate disambiguators, back-references, the number LLVM appends to a local copy) become
wildcards, unless that makes a name match more than the one function: then it is kept whole."""
import bisect
import fnmatch
import os
import re
import struct
import sys

PAGE = 4096


def library_mappings(maps_lines):
    """The library's load address and its code mappings, from /proc/<pid>/maps lines."""
    base, code = None, []
    for line in maps_lines:
        f = line.split()
        if len(f) < 6 or "libpi_ide" not in f[5]:
            continue
        start, end = (int(x, 16) for x in f[0].split("-"))
        if int(f[2], 16) == 0 and base is None:
            base = start
        if "x" in f[1]:
            code.append((start, end))
    return base, code


def resident_pages(pid):
    base, code = library_mappings(open(f"/proc/{pid}/maps"))
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for start, end in code:
            pagemap.seek(start // PAGE * 8)
            entries = pagemap.read((end - start) // PAGE * 8)
            for i in range(len(entries) // 8):
                if struct.unpack_from("<Q", entries, i * 8)[0] >> 63:
                    print(hex(start + i * PAGE - base))


def sections(map_path):
    """(address, size, symbol) of every function section in the linker's map, by address."""
    out = []
    line_re = re.compile(r"^\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S*:\(\.text\.(?:unlikely\.)?([^)]+)\)")
    for line in open(map_path, errors="replace"):
        m = line_re.match(line)
        if m and int(m.group(2), 16) > 0:
            out.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    return sorted(out)


def ran(trace_path):
    """What ran in the trace, in the order first seen: ("name", symbol) where callgrind knew it,
    ("offset", n) for code of libpi_ide it could not name, and ("address", n) for code of an
    object it could not name at all (some of ours shows so). Every instruction address the trace
    lists (--dump-instr) counts too: a function entered by a jump (a tail call) has no name of
    its own in a trace of a stripped library."""
    objects, names, seen, obj = {}, {}, {}, None
    ours = None
    for line in open(trace_path, errors="replace"):
        if line.startswith("0x"):
            if ours:
                seen.setdefault((ours, int(line.split()[0], 16)), None)
            continue
        m = re.match(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, ref, name = m.groups()
        table = objects if kind in ("ob", "cob") else names
        if name:
            table[ref] = name
        if kind == "ob":
            obj = objects[ref]
        elif kind == "fn":
            ours = obj and ("offset" if "libpi_ide" in obj else "address" if obj == "???" else None)
            if not ours:
                continue
            name = re.sub(r"'\d+$", "", names[ref])
            if not name.startswith("0x"):
                seen.setdefault(("name", name), None)
            else:
                seen.setdefault(("offset" if "libpi_ide" in obj else "address", int(name, 16)), None)
    return list(seen)


def section_at(secs, starts, addr):
    i = bisect.bisect_right(starts, addr) - 1
    if i >= 0 and secs[i][0] <= addr < secs[i][0] + secs[i][1]:
        return secs[i][2]
    return None


def loose(name):
    if name.startswith("_R"):
        name = re.sub(r"Cs[0-9a-zA-Z]*_", "C*", name)
        name = re.sub(r"B[0-9a-zA-Z]*_", "B*", name)
    name = re.sub(r"\.[0-9]+$", ".*", name)
    return name.replace("$", "?")


def placed(secs, starts, by_name, kind, value, base, size):
    """The section of one thing `ran` (or `callers_of`) saw; `base` None: addresses cannot be
    placed."""
    if kind == "name":
        return value if value in by_name else None
    if kind == "offset":
        return section_at(secs, starts, value)
    if base is not None and base <= value < base + size:
        return section_at(secs, starts, value - base)
    return None


def traced(secs, starts, trace_path, base, size):
    """The sections of what ran in a trace."""
    by_name = {s[2] for s in secs}
    return [placed(secs, starts, by_name, kind, value, base, size) for kind, value in ran(trace_path)]


# A module or function named for a CPU feature: code the running CPU picks and valgrind's may not.
CPU_FEATURE = re.compile(r"(?<![0-9])[0-9]+_?(sse[0-9]*|ssse3|avx[0-9a-z_]*|sha[0-9a-z_]*|neon|pclmul[a-z]*|aes[a-z_]*)[0-9]")


# What gives the pages back (src/support/pages.rs) runs right after they are dropped: it and its
# callers (the Lua function that asks for it, which calls dl_iterate_phdr with it inlined) go in
# the first tier, or each release would make their pages resident again.
RELEASE = re.compile(r"7support5pages|^dl_iterate_phdr$")


def callers_of(secs, starts, trace_path, base, size, callee):
    """The sections that call, in the trace, a section whose name `callee` matches."""
    by_name = {s[2] for s in secs}

    def section(name):
        # A call names its callee by symbol, or by address (absolute or, in our library, offset).
        if not name.startswith("0x"):
            return placed(secs, starts, by_name, "name", name, base, size)
        value = int(name, 16)
        absolute = base is not None and base <= value < base + size
        return placed(secs, starts, by_name, "address" if absolute else "offset", value, base, size)

    names, caller, out = {}, None, set()
    for line in open(trace_path, errors="replace"):
        m = re.match(r"^(fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, ref, name = m.groups()
        if name:
            names[ref] = re.sub(r"'\d+$", "", name)
        if kind == "fn":
            caller = section(names[ref])
        elif caller and callee.search(section(names[ref]) or names[ref]):
            out.add(caller)
    return out


def on_pages(secs, starts, pages_path, explained):
    """The functions on each page in PAGES read for code valgrind never ran (this CPU's SHA or
    SIMD paths): every function on a page no function of `explained` (what the trace names) is
    on, and on the other pages those named for a CPU feature. A page with a traced function on
    it was read for that one; its other neighbours were not run."""
    out = []
    pages = sorted({int(line, 16) for line in open(pages_path) if line.strip()})
    for page in pages:
        i = bisect.bisect_right(starts, page) - 1
        on_page = []
        for s in secs[max(i, 0):]:
            if s[0] >= page + PAGE:
                break
            if s[0] + s[1] > page:
                on_page.append(s[2])
        if not any(f in explained for f in on_page):
            out += on_page
        else:
            out += [f for f in on_page if f not in explained and CPU_FEATURE.search(f)]
    return out


def later_traced(secs, starts, later):
    """What the `later` traces ran, each placed through the mappings saved beside it."""
    found = []
    for path in later:
        # Its mappings, saved beside it when its Neovim quit (peer/src/nvim.rs).
        maps = re.sub(r"\.out$", ".maps", path)
        lines = open(maps).readlines() if os.path.exists(maps) else []
        base, code = library_mappings(lines)
        size = max((end for _, end in code), default=0) - (base or 0)
        found += traced(secs, starts, path, base, size)
    return found


def hot_functions(secs, start_path, once_path, last_path, maps_path, pages_path, later):
    """Tier 1: what runs again and again (the last round); then what ran once after the start
    (the trace, the pages read); then what the `later` traces ran; last what only the start ran.
    The pages of what ran once are given back after it (lua/pi-ide/core/server.lua)."""
    starts = [s[0] for s in secs]
    base, code = library_mappings(open(maps_path))
    size = max(end for _, end in code) - base
    release = [s[2] for s in secs if RELEASE.search(s[2])]
    release += callers_of(secs, starts, start_path, base, size, RELEASE)
    again = release + traced(secs, starts, last_path, base, size)
    ran_after = again + traced(secs, starts, once_path, base, size)
    steady = ran_after + on_pages(secs, starts, pages_path, set(ran_after))
    at_start = set(traced(secs, starts, start_path, base, size)) - set(steady)
    features = [f for f in later_traced(secs, starts, later) if f not in at_start]
    start_only = [f for f in traced(secs, starts, start_path, base, size) if f in at_start]
    return [f for f in dict.fromkeys(steady + features + start_only) if f]


def script(map_path, start_path, once_path, last_path, maps_path, pages_path, *later):
    secs = sections(map_path)
    every = [s[2] for s in secs]
    print("/* Written by scripts/hot-code: the code a server with one agent runs again and again placed")
    print("   first, then what its connection and first turn ran once, then what the features a user")
    print("   turns on run, then what only the start runs. */")
    print("SECTIONS {\n  .text.hot : {")
    for name in hot_functions(secs, start_path, once_path, last_path, maps_path, pages_path, later):
        pattern = loose(name)
        matcher = re.compile(fnmatch.translate(pattern))
        if pattern != name and sum(1 for f in every if matcher.match(f)) != 1:
            pattern = name.replace("$", "?")
        print(f"    *(.text.{pattern} .text.unlikely.{pattern})")
    print("  }\n}\nINSERT BEFORE .text;")
    print("/* Read only when a panic unwinds: away from the read-only data that is read at every start. */")
    print("SECTIONS {\n  .gcc_except_table : { *(.gcc_except_table .gcc_except_table.*) }\n}\nINSERT AFTER .eh_frame;")


if sys.argv[1] == "pages":
    resident_pages(int(sys.argv[2]))
else:
    script(*sys.argv[2:])
