#!/bin/sh
# collect_results.sh DIR -- appends the benchmark rows a GPU run wrote to DIR/results.jsonl
# (bench/common.lua writes them under $OUT there) to bench/results.jsonl, skipping lines that
# are already there.  Run it here, from the repository root, on the device tool's files_at folder.
set -e
src=${1:?usage: collect_results.sh DIR}
[ -f "$src/results.jsonl" ] || { echo "collect_results: no $src/results.jsonl"; exit 1; }
touch bench/results.jsonl
n=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  if ! grep -qxF "$line" bench/results.jsonl; then
    printf '%s\n' "$line" >> bench/results.jsonl
    n=$((n + 1))
  fi
done < "$src/results.jsonl"
echo "collect_results: appended $n rows to bench/results.jsonl"
