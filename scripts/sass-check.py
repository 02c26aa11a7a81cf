#!/usr/bin/env python3
"""Holds the SASS of a fenced module to the accesses the fence clamped.

    sass-check.py FENCED.ptx FENCED.cubin PTXAS_LOG NVDISASM_OUTPUT

FENCED.ptx is what kernel_args_cuda::fence printed (one instruction a line); FENCED.cubin is
what ptxas made of it for sm_90, PTXAS_LOG its `ptxas -v` output, NVDISASM_OUTPUT what
`nvdisasm -c` lists of the cubin. For every entry, the memory instructions of the SASS, by the
state space they reach, must be no more than the PTX's accesses that can reach that space, each
of which the fence clamped (or proved by its declaration, or by a bounds check: a proof): the global and generic ones (LDG,
STG, ATOMG, RED, LD, ST, ATOM, LDGSTS) no more than the PTX's global and generic accesses and
the flag's store; the shared ones (LDS, STS, ATOMS, LDSM, LDGSTS) no more than its shared,
generic and cp.async accesses; the local ones (LDL, STL) no more than its local and generic
accesses and the spills ptxas reports. A `wmma.load` or `wmma.store`, which the fence clamps
as one access of its whole fragment, accounts for one memory instruction per register of its
fragment. A memory instruction in SASS that no PTX access accounts
for (ptxas's own, or one the fence missed) fails the check. Prints one line per entry.
"""

import re
import sys
from collections import Counter

SASS_GLOBAL = {"LDG", "STG", "ATOMG", "RED", "LD", "ST", "ATOM", "LDGSTS"}
SASS_SHARED = {"LDS", "STS", "ATOMS", "LDSM", "LDGSTS"}
SASS_LOCAL = {"LDL", "STL"}
MEMORY_PTX = re.compile(r"^\s*(?:@!?%\S+\s+)?(ld|ldu|st|atom|red|cp|wmma)\.([\w.:]+)\s")


def ptx_accesses(path):
    """Per entry: Counter of 'global', 'shared', 'local', 'const', 'generic', 'async', 'flag'."""
    counts = {}
    entry = None
    for line in open(path, encoding="ascii"):
        m = re.match(r"^(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)\(", line)
        if m:
            entry = m.group(1)
            counts[entry] = Counter()
            continue
        m = MEMORY_PTX.match(line)
        if not m or entry is None:
            continue
        opcode, modifiers = m.group(1), m.group(2).split(".")
        # A wmma fragment's load or store, one access of the fence's, is at most one memory
        # instruction per register of the fragment in SASS; wmma.mma touches no memory.
        weight = 1
        if opcode == "wmma":
            if modifiers[0] not in ("load", "store"):
                continue
            fragment = re.search(r"\{([^}]*)\}", line)
            weight = len(fragment.group(1).split(",")) if fragment else 1
        if opcode == "cp":
            if modifiers[0] == "async" and any(m in ("shared", "shared::cta") for m in modifiers[1:]):
                counts[entry]["async"] += 1
            continue
        if "param" in modifiers:
            continue
        if "[%__kargs_flag]" in line:
            counts[entry]["flag"] += 1
            continue
        for space in ("global", "shared", "local", "const"):
            if space in modifiers or space + "::cta" in modifiers:
                counts[entry][space] += weight
                break
        else:
            counts[entry]["generic"] += weight
    return counts


def sass_instructions(path):
    """Per function: Counter of SASS opcodes (without their modifiers)."""
    counts = {}
    function = None
    for line in open(path, encoding="ascii", errors="replace"):
        m = re.match(r"^\.text\.([\w$]+):", line)
        if m:
            function = m.group(1)
            counts[function] = Counter()
            continue
        m = re.match(r"^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_]*)", line)
        # `@!PT` (never true): padding ptxas places around LDGSTS, never executed.
        if m and function is not None and (m.group(1) or "").strip() != "@!PT":
            counts[function][m.group(2)] += 1
    return counts


def spills(path):
    """Per function: bytes of spill stores plus spill loads, from ptxas -v."""
    out = {}
    function = None
    for line in open(path, encoding="ascii", errors="replace"):
        m = re.search(r"Function properties for ([\w$]+)", line)
        if m:
            function = m.group(1)
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and function is not None:
            out[function] = int(m.group(1)) + int(m.group(2))
    return out


def main():
    ptx, _cubin, log, listing = sys.argv[1:5]
    accesses = ptx_accesses(ptx)
    sass = sass_instructions(listing)
    spilled = spills(log)
    failed = False
    for entry, a in sorted(accesses.items()):
        s = sass.get(entry)
        if s is None:
            print(f"sass-check: {ptx}: {entry}: not in the SASS listing")
            failed = True
            continue
        global_sass = sum(s[o] for o in SASS_GLOBAL)
        shared_sass = sum(s[o] for o in SASS_SHARED)
        local_sass = sum(s[o] for o in SASS_LOCAL)
        global_ptx = a["global"] + a["generic"] + a["flag"] + a["async"]
        shared_ptx = a["shared"] + a["generic"] + a["async"]
        local_ptx = a["local"] + a["generic"]
        spill = spilled.get(entry, 0)
        ok = global_sass <= global_ptx and shared_sass <= shared_ptx and (local_sass <= local_ptx or spill > 0)
        verdict = "ok" if ok else "FAILED"
        print(
            f"sass-check: {ptx}: {entry}: global/generic SASS {global_sass} <= PTX {global_ptx}, "
            f"shared SASS {shared_sass} <= PTX {shared_ptx}, local SASS {local_sass} <= PTX {local_ptx}"
            f"{f' (+{spill} bytes of spills)' if spill else ''}: {verdict}"
        )
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
