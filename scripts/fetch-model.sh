#!/usr/bin/env bash
# Prints the path of the demo model: $EDGELLM_MODEL when set, else models/stories260K.gguf,
# downloaded once from the Hugging Face hub and checked against its SHA-256.
set -euo pipefail

if [[ -n "${EDGELLM_MODEL:-}" ]]; then
  [[ -f "$EDGELLM_MODEL" ]] || { echo "fetch-model: EDGELLM_MODEL=$EDGELLM_MODEL does not exist" >&2; exit 1; }
  echo "$EDGELLM_MODEL"
  exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/models/stories260K.gguf"
url="https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf"
sha="270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"

check() { echo "$sha  $1" | sha256sum --check --status; }

if [[ -f "$dest" ]] && check "$dest"; then
  echo "$dest"
  exit 0
fi
mkdir -p "$root/models"
echo "fetch-model: downloading $url" >&2
tmp="$dest.part"
if ! curl -fL --retry 3 -o "$tmp" "$url" >&2; then
  rm -f "$tmp"
  echo "fetch-model: download failed; set EDGELLM_MODEL=/path/to/model.gguf to use a local model" >&2
  exit 1
fi
if ! check "$tmp"; then
  rm -f "$tmp"
  echo "fetch-model: SHA-256 mismatch for $url (expected $sha)" >&2
  exit 1
fi
mv "$tmp" "$dest"
echo "$dest"
