"""Writes the linker script that places the traced functions first (see scripts/hot-code).

Arguments: a callgrind trace and `nm` of the library with symbols. Symbol names are v0-mangled
(.cargo/config.toml); the parts that change from one build or toolchain to another (crate
disambiguators, back-references) become wildcards, unless that makes a name match more than the
one function, in which case it is kept whole."""
import fnmatch
import re
import sys

trace, symbols = sys.argv[1], sys.argv[2]

def ran(path):
    """Functions with costs in the trace, in the order first seen: of libpi_ide, or of an object
    callgrind could not name (it says ??? for some of ours); the symbols keep only ours."""
    objects, names, seen, obj = {}, {}, {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, ref, name = m.groups()
        table = objects if kind in ("ob", "cob") else names
        if name:
            table[ref] = name
        if kind == "ob":
            obj = objects[ref]
        elif kind == "fn" and obj and ("libpi_ide" in obj or obj == "???"):
            seen.setdefault(re.sub(r"'\d+$", "", names[ref]), None)
    return list(seen)

def loose(name):
    if name.startswith("_R"):
        name = re.sub(r"Cs[0-9a-zA-Z]*_", "C*", name)
        name = re.sub(r"B[0-9a-zA-Z]*_", "B*", name)
    return name.replace("$", "?")

functions = set()
for line in open(symbols):
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tT":
        functions.add(parts[2])

print("/* Written by scripts/hot-code: the code an idle server with one agent runs, placed first. */")
print("SECTIONS {\n  .text.hot : {")
for name in ran(trace):
    if name not in functions:
        continue
    pattern = loose(name)
    matcher = re.compile(fnmatch.translate(pattern))
    if pattern != name and sum(1 for f in functions if matcher.match(f)) != 1:
        pattern = name.replace("$", "?")
    print(f"    *(.text.{pattern} .text.unlikely.{pattern})")
print("  }\n}\nINSERT BEFORE .text;")
print("/* Read only when a panic unwinds: away from the read-only data that is read at every start. */")
print("SECTIONS {\n  .gcc_except_table : { *(.gcc_except_table .gcc_except_table.*) }\n}\nINSERT AFTER .eh_frame;")
