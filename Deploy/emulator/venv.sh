# Sourced by run.sh and test.sh. ensure_venv REQUIREMENTS_FILE... makes sure the emulator's
# virtualenv exists and holds exactly those pinned requirements, installing only when a file
# changed since the last install (one stamp per file). All output goes to stderr so that
# run.sh's stdout starts with the emulator's JSON line.

EMULATOR_VENV="${PUSHD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pushd}/emulator-venv"

ensure_venv() {
    # The HTTP/2 server is Debian's libnghttp2, loaded through cffi (emulator/nghttp2.py).
    source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    ensure_debian_packages python3-venv libnghttp2-14 >&2
    mkdir -p "$(dirname "$EMULATOR_VENV")"
    exec 9>"$EMULATOR_VENV.lock"
    flock 9  # two scripts starting at once must not build the venv twice
    if ! "$EMULATOR_VENV/bin/python" -c 'import sys' 2>/dev/null; then
        echo "creating $EMULATOR_VENV" >&2
        rm -rf "$EMULATOR_VENV"
        python3 -m venv "$EMULATOR_VENV" >&2
    fi
    local requirements stamp want
    for requirements in "$@"; do
        stamp="$EMULATOR_VENV/.stamp-$(basename "$requirements")"
        want=$(sha256sum "$requirements" | cut -d' ' -f1)
        if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
            echo "installing $(basename "$requirements") into $EMULATOR_VENV" >&2
            "$EMULATOR_VENV/bin/python" -m pip install --disable-pip-version-check -q \
                -r "$requirements" >&2
            echo "$want" > "$stamp"
        fi
    done
    exec 9>&-
}
