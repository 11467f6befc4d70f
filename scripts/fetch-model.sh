#!/usr/bin/env bash
# Prints the path of the demo model.
#   scripts/fetch-model.sh              $EDGELLM_MODEL when set, else the model kept in the
#                                       repository (assets/models/tinytales.gguf): no download.
#   scripts/fetch-model.sh URL SHA256   downloads URL once into models/ (resumable), checks its
#                                       SHA-256 and prints its path; e.g. the 260K-parameter
#                                       stories model of llama2.c:
#     scripts/fetch-model.sh https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf \
#       270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if [[ $# -eq 0 ]]; then
  if [[ -n "${EDGELLM_MODEL:-}" ]]; then
    [[ -f "$EDGELLM_MODEL" ]] || { echo "fetch-model: EDGELLM_MODEL=$EDGELLM_MODEL does not exist" >&2; exit 1; }
    echo "$EDGELLM_MODEL"
  else
    echo "$root/assets/models/tinytales.gguf"
  fi
  exit 0
fi
[[ $# -eq 2 ]] || { echo "usage: fetch-model.sh [URL SHA256]" >&2; exit 2; }
url=$1
sha=$2
dest="$root/models/$(basename "${url%%\?*}")"
check() { echo "$sha  $1" | sha256sum --check --status; }
if [[ -f "$dest" ]] && check "$dest"; then
  echo "$dest"
  exit 0
fi
mkdir -p "$root/models"
echo "fetch-model: downloading $url" >&2
tmp="$dest.part"
if ! curl -fL --retry 3 -C - -o "$tmp" "$url" >&2; then
  echo "fetch-model: download failed (run again to resume); set EDGELLM_MODEL=/path/to/model.gguf to use a local model" >&2
  exit 1
fi
if ! check "$tmp"; then
  rm -f "$tmp"
  echo "fetch-model: SHA-256 mismatch for $url (expected $sha)" >&2
  exit 1
fi
mv "$tmp" "$dest"
echo "$dest"
