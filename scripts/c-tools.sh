# Sourced (not run) by the scripts that compile C: scripts/c-guest-check.sh (and through it
# scripts/wasm3-example.sh) and scripts/capi-check.sh.
#
#   c_tools SCRATCH_DIR [lld]
#
# Installs with apt what is missing of gcc, g++, clang (and lld, for wasm-ld, when asked) and
# clang's AddressSanitizer and UBSan runtimes, which Debian ships as a package of their own
# (libclang-rt-14-dev for Debian 12's clang 14): probed by linking a program in SCRATCH_DIR.
# Prints what it installs through the caller's `phase`.
c_tools() {
    local scratch="$1" want_lld="${2:-}" missing=() rt
    command -v gcc >/dev/null || missing+=(gcc)
    command -v g++ >/dev/null || missing+=(g++)
    command -v clang >/dev/null || missing+=(clang)
    if [ "$want_lld" = lld ]; then command -v wasm-ld >/dev/null || missing+=(lld); fi
    if [ ${#missing[@]} -gt 0 ]; then
        phase "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    fi
    echo 'int main(void) { return 0; }' > "$scratch/probe.c"
    if ! clang -fsanitize=address,undefined "$scratch/probe.c" -o "$scratch/probe" 2>/dev/null; then
        rt="libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
        phase "installing $rt (clang's sanitizer runtimes)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$rt" >/dev/null
    fi
}
