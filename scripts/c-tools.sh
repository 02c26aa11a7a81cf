# Sourced (not run) by the scripts that compile C: scripts/c-guest-check.sh (and through it
# scripts/wasm3-example.sh and scripts/wamr-example.sh) and scripts/capi-check.sh.
#
#   c_tools LABEL SCRATCH_DIR [lld]      # LABEL: the script's name in its messages
#
# Makes sure of gcc, g++, clang (and lld, for wasm-ld, when asked) and clang's AddressSanitizer
# and UBSan runtimes, which Debian ships as a package of their own (libclang-rt-14-dev for
# Debian 12's clang 14): probed by linking a program in SCRATCH_DIR. What is missing is
# installed with apt-get only under KARGS_INSTALL=1 (scripts/install.sh); otherwise the script
# names the packages and stops.
# shellcheck source=install.sh
. "$(dirname "${BASH_SOURCE[0]}")/install.sh"
c_tools() {
    local label="$1" scratch="$2" want_lld="${3:-}" missing=() rt
    command -v gcc >/dev/null || missing+=(gcc)
    command -v g++ >/dev/null || missing+=(g++)
    command -v clang >/dev/null || missing+=(clang)
    if [ "$want_lld" = lld ]; then command -v wasm-ld >/dev/null || missing+=(lld); fi
    if [ ${#missing[@]} -gt 0 ]; then
        install_debian "$label" "${missing[@]}"
    fi
    echo 'int main(void) { return 0; }' > "$scratch/probe.c"
    if ! clang -fsanitize=address,undefined "$scratch/probe.c" -o "$scratch/probe" 2>/dev/null; then
        rt="libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
        install_debian "$label" "$rt"
    fi
}
