# Sourced by scripts/wasm3-example.sh and scripts/wamr-example.sh: what the two C runtimes'
# hosts build and run alike. Needs `$target` (the target directory, absolute), `$out` (the
# script's scratch directory) and `$name` (its name in messages) set first.

# libkargs: the native libraries first (rustc prints them when it builds the staticlib), then
# `cargo build`, so that libkargs.a and libkargs.so are both from its build. Sets `native_libs`
# (what libkargs.a needs) and `lib_dir` (where both libraries are).
build_libkargs() {
    cargo rustc -q -p kernel-args-capi --release --crate-type staticlib -- \
        --print native-static-libs 2> "$out/native-static-libs.log" \
        || { cat "$out/native-static-libs.log" >&2; exit 1; }
    read -r -a native_libs \
        <<< "$(sed -n 's/^note: native-static-libs: //p' "$out/native-static-libs.log" | tail -1)"
    if [ ${#native_libs[@]} -eq 0 ]; then
        echo "$name: rustc printed no native-static-libs" >&2
        cat "$out/native-static-libs.log" >&2
        exit 1
    fi
    cargo build -p kernel-args-capi --release
    lib_dir="$target/release"
    local lib
    for lib in libkargs.a libkargs.so; do
        [ -f "$lib_dir/$lib" ] || { echo "$name: cargo build did not make $lib_dir/$lib" >&2; exit 1; }
    done
    echo "$name: libkargs.a, linked with: ${native_libs[*]}"
}

# Runs host binary $1 on the guest ($guest); the log keeps every check's line. Prints the lines
# (all with $2 = `all`, else the failures and the summary) and fails when the host does. Every
# build must run the same checks: the summary line must match the first build's.
checks=""
run_host() {
    local bin="$1" shown="$2" log="$1.log" rc=0
    "$bin" "$guest" > "$log" 2>&1 || rc=$?
    if [ "$shown" = all ] || [ "$rc" != 0 ]; then cat "$log"; else tail -1 "$log"; fi
    [ "$rc" = 0 ] || { echo "$name: $bin failed (exit status $rc)" >&2; exit 1; }
    local summary
    summary="$(tail -1 "$log")"
    if [ -n "$checks" ] && [ "$summary" != "$checks" ]; then
        echo "$name: $bin: \"$summary\", the first build: \"$checks\"" >&2
        exit 1
    fi
    checks="$summary"
}

# Checks that binary $1 loads $lib_dir/libkargs.so. grep reads all of ldd's output: with `-q` it
# stops at the match, and under pipefail ldd's SIGPIPE then fails the check at random.
expect_shared_libkargs() {
    ldd "$1" | grep -F "$lib_dir/libkargs.so" >/dev/null || {
        echo "$name: $1 does not load $lib_dir/libkargs.so" >&2
        exit 1
    }
}
