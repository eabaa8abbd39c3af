# Shared helpers for the Deploy/ scripts. Sourced, not run.

PUSHD_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PUSHD_STATE_DIR="${PUSHD_STATE_DIR:-$HOME/.pushd-local}"
# What is worth keeping between runs and holds no test or cluster data: Python virtual
# environments. Everything else (databases, queues, logs) lives in a state directory.
export PUSHD_CACHE_DIR="${PUSHD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pushd}"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Installs Debian packages that are not installed yet (one apt-get update at most).
ensure_debian_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# The C libraries the Swift package links, and the tools the build needs.
ensure_build_dependencies() {
    ensure_debian_packages pkg-config libssl-dev libpq-dev librabbitmq-dev libcurl4-openssl-dev libnghttp2-dev libjemalloc-dev openssl nghttp2-client
    command -v swift >/dev/null || { log "the Swift toolchain is not on PATH"; exit 1; }
}

# The release pushd, built as the image builds it (Deploy/kubernetes/Dockerfile): with the
# Swift runtime and Foundation linked in, so the local cluster and the benchmarks run what
# ships. Against the shared-library build it starts in 9.7 instead of 16.5 ms of CPU
# (`pushd --help`), and a draining worker's peak RSS is 47-50 instead of 52-54 MiB.
build_release_pushd() {
    # SwiftPM leaves six empty TemporaryDirectory.* in $TMPDIR on every build, even one with
    # nothing to do: it gets a directory of its own, removed afterwards.
    local scratch status=0
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/pushd-build.XXXXXX")
    TMPDIR="$scratch" swift build -c release --static-swift-stdlib --product pushd 2>&1 | tail -n 1 || status=$?
    rm -rf -- "$scratch"
    [ "$status" = 0 ] || return "$status"
    use_static_backtracer
}

# A statically linked runtime does not find the backtracer beside libswiftCore.so, so a
# crashing worker would print no backtrace: point it at the toolchain's static one.
use_static_backtracer() {
    local backtracer
    backtracer="$(dirname "$(readlink -f "$(command -v swift)")")/../libexec/swift/linux/swift-backtrace-static"
    if [ -z "${SWIFT_BACKTRACE:-}" ] && [ -x "$backtracer" ]; then
        export SWIFT_BACKTRACE="swift-backtrace=$(readlink -f "$backtracer")"
    fi
}

# A Python virtual environment for test tooling (PyPI), rebuilt when requirements change.
ensure_tooling_venv() {
    local venv="$PUSHD_CACHE_DIR/tooling-venv" requirements="$PUSHD_REPO/Deploy/requirements-tooling.txt"
    local stamp="$venv/.requirements.sha256" wanted
    wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
        log "preparing Python tooling in $venv"
        mkdir -p "$PUSHD_CACHE_DIR"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
        echo "$wanted" > "$stamp"
    fi
    export PUSHD_PYTHON="$venv/bin/python"
}

# Prints `count` TCP ports free on 127.0.0.1 right now, one a line, each with every port at
# the offsets given (e.g. "0,100,200,300") free too, all below the kernel's ephemeral range,
# so that no outgoing connection can take one between this check and its server's start, and
# none in the range RabbitMQ's CLI tools use for themselves (35672-35682).
#   free_ports COUNT [OFFSETS]
free_ports() {
    python3 - "$1" "${2:-0}" <<'PY'
import random, socket, sys
count, offsets = int(sys.argv[1]), [int(o) for o in sys.argv[2].split(",")]
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
taken, chosen = set(), []
def free(port):
    if port in taken or not 1024 <= port < low or 35672 <= port <= 35682:
        return False
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
while len(chosen) < count:
    base = random.randrange(20000, low - max(offsets) - 1)
    block = [base + o for o in offsets]
    if all(free(port) for port in block):
        chosen.append(base)
        taken.update(block)
print("\n".join(map(str, chosen)))
PY
}
