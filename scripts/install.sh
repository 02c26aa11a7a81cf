# Sourced (not run) by every script and CI step that may need something installed outside the
# repository: Debian packages (apt-get) and cargo-installed tools.
#
# Nothing is installed unless KARGS_INSTALL=1 (.ci/run sets it). Without it, a script that
# lacks a tool says which, and the command that installs it, and stops with exit status 3;
# nothing on the machine is changed.
#
#   . scripts/install.sh
#   command -v cmake >/dev/null || install_debian wamr cmake
#   install_cargo_tool capi cbindgen --locked --version 0.29.0

# Whether this run may install (KARGS_INSTALL=1).
may_install() { [ "${KARGS_INSTALL:-0}" = 1 ]; }

# Runs a command as root: directly when this is root, through sudo otherwise.
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# may_install_or_stop LABEL WHAT HOW: returns when this run may install WHAT (KARGS_INSTALL=1);
# otherwise stops the script, saying that LABEL needs WHAT, which HOW installs. For a script
# that then runs HOW itself, as written.
may_install_or_stop() {
    may_install || _install_refused "$@"
    echo "$1: installing $2 (KARGS_INSTALL=1)"
}

# Stops the script: LABEL needs WHAT, installed with HOW.
_install_refused() {
    local label="$1" what="$2" how="$3"
    {
        echo "$label: missing here: $what. Install it yourself:"
        echo "    $how"
        echo "or run again with KARGS_INSTALL=1 to let the script install it."
    } >&2
    exit 3
}

# install_debian LABEL PACKAGE...: installs Debian packages with apt-get, or stops.
install_debian() {
    local label="$1"
    shift
    if ! may_install; then
        _install_refused "$label" "the Debian package(s) $*" \
            "sudo apt-get install --no-install-recommends $*"
    fi
    echo "$label: installing $* with apt-get (KARGS_INSTALL=1)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# install_cargo_tool LABEL ARGS...: `cargo install ARGS...` (into cargo's bin directory), or
# stops.
install_cargo_tool() {
    local label="$1"
    shift
    if ! may_install; then
        _install_refused "$label" "$1" "cargo install $*"
    fi
    echo "$label: cargo install $* (KARGS_INSTALL=1)"
    cargo install "$@"
}

# enable_debian_nonfree LABEL: adds Debian's contrib and non-free components to the apt sources
# (libcuda1 and nvidia-cuda-toolkit are there), in whichever format the machine has, or stops.
enable_debian_nonfree() {
    local label="$1"
    if ! may_install; then
        _install_refused "$label" "Debian's contrib and non-free components in the apt sources" \
            "add 'contrib non-free' to the Components of /etc/apt/sources.list.d/debian.sources"
    fi
    echo "$label: adding contrib and non-free to the apt sources (KARGS_INSTALL=1)"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        as_root sed -i -E '/^Components:/ { / contrib( |$)/! s/$/ contrib/; / non-free( |$)/! s/$/ non-free/ }' \
            /etc/apt/sources.list.d/debian.sources
    fi
    if [ -f /etc/apt/sources.list ]; then
        as_root sed -i -E '/^deb /{ / contrib( |$)/! s/$/ contrib/; / non-free( |$)/! s/$/ non-free/ }' \
            /etc/apt/sources.list
    fi
}
