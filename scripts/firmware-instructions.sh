#!/usr/bin/env bash
# Instructions per parse of 16 mixed arguments on a Cortex-M4 (thumbv7em-none-eabihf, the
# firmware's release profile: opt-level "s", fat LTO), counted by QEMU: exact and repeatable,
# but instructions, not cycles (QEMU models no pipeline, cache or wait states).
#
# How: the firmware's `count` binary (firmware/src/bin/count.rs) runs three regions, each
# between a call to `kargs_mark_begin` and a call to `kargs_mark_end`: an empty one (the
# markers' own cost), parse_argv of the 16-argument argv (ParsedArgv<128> returned by value)
# and parse_argv_into of the same argv (into a ParsedArgv the caller keeps). Debian's QEMU 7.2
# has no TCG plugins, so the count comes from the execution log instead: with `-singlestep`
# every translation block (TB) is one guest instruction, and `-d exec,nochain` logs every TB
# executed (nochain: each TB goes back through the main loop, where it is logged, instead of
# jumping straight to the next). The instructions of a region are the log lines from the
# entry of kargs_mark_begin up to, not including, the entry of kargs_mark_end; the addresses
# come from the ELF's symbol table.
#
# The script checks the method every time: every TB of a region holds exactly one instruction
# (the TB's cflags), the log has nothing but TB lines in a region (no interrupted TB), the
# empty region is small (at most 16), and a second run gives the same counts. Each figure
# printed is the region's count minus the empty region's (the call into the measured function
# and its argument set-up stay in: they are part of calling it).
#
# Usage: scripts/firmware-instructions.sh [--profile]   (--profile: the functions each region
#        spends its instructions in)
# Needs: qemu-system-arm, and llvm-nm (rustup component llvm-tools) or GNU nm.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
profile=false
case "${1:-}" in
    "") ;;
    --profile) profile=true ;;
    *) echo "usage: $0 [--profile]" >&2; exit 2 ;;
esac
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/firmware/target}"
(cd "$repo/firmware" && cargo build -q --release --bin count)
elf="$CARGO_TARGET_DIR/thumbv7em-none-eabihf/release/count"

nm_tool="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-nm"
[ -x "$nm_tool" ] || nm_tool=$(command -v llvm-nm || command -v nm)
# The symbol's address with the Thumb bit cleared (GNU nm prints it set, llvm-nm cleared), as
# 8 hex digits, the way QEMU's log spells a PC.
addr() {
    local hex
    hex=$("$nm_tool" "$elf" | awk -v s="$1" '$3 == s { print $1; exit }')
    [ -n "$hex" ] || { echo "firmware-instructions: no symbol $1 in $elf" >&2; exit 1; }
    printf '%08x' $(( 0x$hex & ~1 ))
}
begin=$(addr kargs_mark_begin)
end=$(addr kargs_mark_end)
[ "$begin" != "$end" ] || { echo "firmware-instructions: the markers share an address" >&2; exit 1; }

# One guest instruction per TB: `-singlestep` in QEMU 7.2 (Debian 12's); QEMU 8.1 renamed it
# `-accel tcg,one-insn-per-tb=on` (and later dropped `-singlestep`).
if qemu-system-arm -help | grep one-insn-per-tb >/dev/null; then one_insn=(-accel tcg,one-insn-per-tb=on)
else one_insn=(-singlestep); fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs the firmware once under QEMU and prints one line per region: "R count"; with --profile
# also "P region count function" lines.
count_run() {
    local log="$work/exec-$1.log"
    if ! timeout 120 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
        -semihosting-config enable=on,target=native "${one_insn[@]}" -d exec,nochain -D "$log" \
        -kernel "$elf" </dev/null; then
        echo "firmware-instructions: the count firmware failed (parse not accepted?)" >&2
        return 1
    fi
    # A TB line: "Trace 0: 0xHOST [CS_BASE/PC/FLAGS/CFLAGS] FUNCTION"; the low 9 bits of
    # cflags (CF_COUNT_MASK) are the TB's instruction count: 1 under -singlestep.
    awk -v begin="$begin" -v end="$end" -v profile="$profile" '
        function hex(s,    i, v) {
            v = 0
            for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            return v
        }
        function fail(msg) { print "firmware-instructions: " msg > "/dev/stderr"; bad = 1; exit 1 }
        /^Trace / {
            split(substr($4, 2, length($4) - 2), f, "/")
            pc = f[2]
            if (!inside && pc == begin) { inside = 1; n = 0; split("", per_fn) }
            else if (inside && pc == end) {
                inside = 0; regions++
                print "R " n
                if (profile == "true") for (s in per_fn) print "P " regions " " per_fn[s] " " s
                next
            }
            if (inside) {
                if (hex(substr(f[4], length(f[4]) - 2)) % 512 != 1)
                    fail("a TB of more than one instruction at 0x" pc)
                n++; per_fn[$5]++
            }
            next
        }
        inside { fail("a log line other than a TB in a marked region: " $0) }
        END {
            if (!bad && regions != 3) {
                print "firmware-instructions: " regions + 0 " regions, expected 3" > "/dev/stderr"; exit 1
            }
        }
    ' "$log"
}

count_run 1 > "$work/run1"
count_run 2 > "$work/run2"
mapfile -t c1 < <(awk '$1 == "R" { print $2 }' "$work/run1")
mapfile -t c2 < <(awk '$1 == "R" { print $2 }' "$work/run2")
if [ "${c1[*]}" != "${c2[*]}" ]; then
    echo "firmware-instructions: two runs differ: ${c1[*]} vs ${c2[*]}" >&2
    exit 1
fi
empty=${c1[0]}
if [ "$empty" -gt 16 ]; then
    echo "firmware-instructions: the empty region is $empty instructions, expected a handful" >&2
    exit 1
fi
echo "instructions: empty marked region: $empty (the markers; subtracted below; two runs agree)"
echo "instructions: parse 16 args: $(( c1[1] - empty ))"
echo "instructions: parse_argv_into 16 args, caller's sink: $(( c1[2] - empty ))"
if $profile; then
    for region in 1 2 3; do
        echo "region $region, instructions by function (markers included):"
        awk -v r="$region" '$1 == "P" && $2 == r { printf "    %8d %s\n", $3, $4 }' "$work/run1" \
            | sort -rn | if command -v c++filt >/dev/null; then c++filt; else cat; fi
    done
fi
