# Shared settings for o2g's scripts. Source it; every value can be overridden
# from the environment.

: "${O2G_CACHE:=$HOME/.cache/o2g}"           # everything expensive lives here, outside the repo
: "${O2G_KERNEL_SERIES:=7.2}"                 # Debian's linux-source-<series> package
: "${LLVM_VERSION:=19}"                       # bindgen needs libclang >= 17; bookworm has 19
: "${BINDGEN_VERSION:=0.73.2}"
export LIBCLANG_PATH="${LIBCLANG_PATH:-/usr/lib/llvm-$LLVM_VERSION/lib}"
export PATH="$HOME/.cargo/bin:$PATH"

O2G_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export O2G_CACHE O2G_ROOT

log() { printf '[o2g] %s\n' "$*" >&2; }
die() { printf '[o2g] error: %s\n' "$*" >&2; exit 1; }
