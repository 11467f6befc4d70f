#!/usr/bin/env bash
# `make demo`: what EdgeLLM does, in one screen. Streams a story from a model with its time to
# first token, tokens per second and peak memory, then says where to go next.
# Usage: scripts/demo.sh BUILD_DIR. The model: $EDGELLM_MODEL when set, else the small model kept
# in the repository (assets/models/tinytales.gguf, scripts/train-demo-model/README.md): no network.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cli="$build/edgellm"
model=$("$root/scripts/fetch-model.sh")
[[ -x "$cli" ]] || { echo "demo: $cli is not built (run make demo)" >&2; exit 1; }

echo "== EdgeLLM demo: $model"
"$cli" info "$model" | sed -n '/^model:/p'
echo
echo "== edgellm run -m $model -p \"Once upon a time,\" -n 120 --stats   (streamed as it is generated)"
echo
printf "Once upon a time,"
"$cli" run -m "$model" -p "Once upon a time," -n 120 --seed 42 --stats
cat <<TXT

== Next
  chat:        $cli chat -m $model
  server:      $cli serve -m $model        then open http://127.0.0.1:8080 (chat page, OpenAI API: docs/server.md)
  C / C++:     cmake --install $build --prefix ~/.local; find_package(EdgeLLM) or pkg-config edgellm (docs/c-api.md)
  Node.js:     cd bindings/napi && npm pack; npm install ./edgellm-*.tgz   (docs/harmonyos.md)
  speed:       $cli bench -m $model       (docs/benchmarks.md)
  a bigger model: EDGELLM_MODEL=/path/to/model.gguf make demo   (any llama / qwen2 / qwen3 GGUF, e.g. Qwen2.5-0.5B Q4_K_M)
TXT
