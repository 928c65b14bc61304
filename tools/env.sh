# tools/env.sh — sourced by the scripts in tools/: a writable OpenCL kernel
# cache for PoCL (it hides its device when it cannot create one).
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-${TMPDIR:-/tmp}/pocl-kcache-$(id -u)}"
mkdir -p "$POCL_CACHE_DIR"
