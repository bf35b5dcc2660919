#!/usr/bin/env bash
# Every Go file of the repository begins with the Apache-2.0 header of
# hack/boilerplate.go.txt (its first 13 lines; the year may differ), or
# has it right after a first //go:build line and a blank line (where
# controller-gen puts it).
#   hack/license-header.sh        lists the files without it and fails
#   hack/license-header.sh --fix  puts the header on top of them
set -euo pipefail
cd "$(dirname "$0")/.."

header=$(sed -n '1,13p' hack/boilerplate.go.txt)
body=$(sed -n '2,13p' hack/boilerplate.go.txt)
# has_header FILE LINE: the header begins at line LINE of FILE.
has_header() {
  sed -n "$2p" "$1" | grep -qE '^// Copyright [0-9]{4} The api-syncagent Authors\.$' &&
    [ "$(sed -n "$(($2 + 1)),$(($2 + 12))p" "$1")" = "$body" ]
}
missing=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if has_header "$f" 1; then
    continue
  fi
  if head -n1 "$f" | grep -q '^//go:build ' && [ -z "$(sed -n 2p "$f")" ] && has_header "$f" 3; then
    continue
  fi
  missing+=("$f")
done < <(git ls-files -z --cached --others --exclude-standard '*.go')

[ ${#missing[@]} -eq 0 ] && exit 0
if [ "${1:-}" = "--fix" ]; then
  for f in "${missing[@]}"; do
    { printf '%s\n\n' "$header"; cat "$f"; } > "$f.tmp" && mv "$f.tmp" "$f"
  done
  exit 0
fi
echo "Go files without the license header of hack/boilerplate.go.txt (hack/license-header.sh --fix adds it):" >&2
printf '  %s\n' "${missing[@]}" >&2
exit 1
