#!/usr/bin/env bash
# Install kbm into the active Python environment. The Dockerfile and CI run exactly this.
#   scripts/install.sh          kbm and its dependencies
#   scripts/install.sh --test   ... plus the test tools
# torch is installed only when missing: a GPU machine keeps the torch it has. KBM_TORCH picks
# the version to install otherwise (default 2.13.0).
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--test" ] && extras="[test]"

python -m pip install --quiet --upgrade pip
if ! python -c "import torch" 2>/dev/null; then
    python -m pip install --quiet "torch==${KBM_TORCH:-2.13.0}"
fi
python -m pip install --quiet ".${extras}"
python -m kbm_toolkit --version
