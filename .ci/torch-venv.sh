#!/usr/bin/env bash
# .ci/torch-venv.sh - creates, or reuses, the virtual environment with real
# PyTorch and DeepSpeed that the torch suite (tests/torch, ctest -L torch)
# runs on the CPU simulator. The environment lives in a cache directory so a
# second run on the same machine reuses it (a fresh one is ~3 GB of
# downloads; see docs/simulator.md, "PyTorch on the simulator").
#
#   .ci/torch-venv.sh [VENV]     default: $A2A_TORCH_VENV, else
#                                ~/.cache/a2acheck/venv-torch
#
# Idempotent: when VENV already holds the pinned versions nothing is
# downloaded; an interrupted or older installation is completed or upgraded
# in place; runs on one machine are serialized by a lock file. Prints the
# environment's python on the last line (for -DA2A_TORCH_PYTHON=...).
# Needs python3 with the venv module (Debian: python3-venv) and network
# access to PyPI (or a pip find-links mirror).
set -euo pipefail

# The pinned clients: the newest PyTorch (its CUDA 13.2 wheels bundle NCCL
# 2.30 and libcudart 13.2, the simulator's reference) and the newest
# DeepSpeed, installed without building any of its C++/CUDA ops.
TORCH_VERSION=2.15.0
DEEPSPEED_VERSION=0.19.8

venv=${1:-${A2A_TORCH_VENV:-$HOME/.cache/a2acheck/venv-torch}}
py=$venv/bin/python
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

# The installed versions, read from the packages' metadata (importing torch
# would take seconds and initialize CUDA).
have() {
  "$py" - "$@" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    sys.exit(0 if all(version(n) == v for n, v in zip(sys.argv[1::2], sys.argv[2::2])) else 1)
except PackageNotFoundError:
    sys.exit(1)
EOF
}

if [[ -x "$py" ]] && have torch "$TORCH_VERSION" deepspeed "$DEEPSPEED_VERSION"; then
  echo "torch-venv: reusing $venv (torch $TORCH_VERSION, deepspeed $DEEPSPEED_VERSION)" >&2
  echo "$py"
  exit 0
fi

start=$(date +%s)
if [[ ! -x "$py" ]]; then
  echo "torch-venv: creating $venv" >&2
  python3 -m venv "$venv"
fi
if ! have torch "$TORCH_VERSION"; then
  echo "torch-venv: installing torch $TORCH_VERSION (about 3 GB of downloads)" >&2
  "$py" -m pip install --no-input "torch==$TORCH_VERSION"
fi
if ! have deepspeed "$DEEPSPEED_VERSION"; then
  # DeepSpeed ships as a source distribution whose setup.py imports torch:
  # build it against the torch just installed (no build isolation), with no
  # ops compiled (they are JIT-built at use, and need nvcc and a GPU).
  echo "torch-venv: installing deepspeed $DEEPSPEED_VERSION" >&2
  DS_BUILD_OPS=0 "$py" -m pip install --no-input --no-build-isolation \
    "torch==$TORCH_VERSION" "deepspeed==$DEEPSPEED_VERSION"
fi
have torch "$TORCH_VERSION" deepspeed "$DEEPSPEED_VERSION" || {
  echo "torch-venv: $venv does not hold torch $TORCH_VERSION and deepspeed $DEEPSPEED_VERSION" >&2
  exit 1
}
echo "torch-venv: $venv ready in $(( $(date +%s) - start )) s ($(du -sh "$venv" | cut -f1))" >&2
echo "$py"
