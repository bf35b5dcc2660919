#!/usr/bin/env bash
# Fails when the user documentation sends a reader somewhere they cannot
# follow: to a document that is not part of the repository (the compatibility
# contract and its sections), to this project's issue tracker by number, or
# through a relative Markdown link to a file or directory that does not exist.
# Links to http(s) addresses are not checked (no network). An issue of another
# project is fine as a link to it, written owner/repo#N.
#
# Checked: README.md, CHANGELOG.md, sdk/README.md, docs/*.md, the chart's README.md and its templates, or
# the files given as arguments (paths relative to the repository's root).
# Prints file:line: reason for every finding.
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# > 0)); then
  files=("$@")
else
  files=(README.md CHANGELOG.md sdk/README.md docs/*.md deploy/charts/api-syncagent/README.md deploy/charts/api-syncagent/templates/*)
fi
this_repo='kcp-syncagent/api-syncagent'
fail=0

report() { # file:line, reason
  echo "$1: $2"
  fail=1
}

# Documents outside the repository.
while IFS= read -r hit; do
  report "${hit%:*}" "names a document that is not in the repository (\"${hit##*:}\"); state the rule itself"
done < <(grep -H -n -o -i -E 'contract[[:space:]]*§|contract\.md|§[[:space:]]*[0-9]+(\.[0-9]+)*' "${files[@]}" || true)

# Issue numbers written out ("issue 14", "issues 3 and 4", "issue #7").
while IFS= read -r hit; do
  report "${hit%:*}" "names an issue by number (\"${hit##*:}\"); say what it is about instead (another project's issue: link it as owner/repo#N)"
done < <(grep -H -n -o -i -E '\bissues?[[:space:]]+#?[0-9]+' "${files[@]}" || true)

# Issue addresses: this project's, or relative ones, are refused; another
# repository's issue on GitHub is fine.
while IFS= read -r hit; do
  target=${hit#*:*:}
  if [[ $target =~ ^https?://github\.com/([^/]+/[^/]+)/issues/[0-9]+ ]] && [[ ${BASH_REMATCH[1],,} != "$this_repo" ]]; then
    continue
  fi
  report "${hit%%:"$target"}" "links to this project's issue tracker (\"$target\"); say what it is about instead"
done < <(grep -H -n -o -E '[^[:space:]()<>"]*issues/[0-9]+' "${files[@]}" || true)

# Relative links: every [text](path), [text](path#anchor) and reference
# definition [name]: path outside code blocks and inline code must name a
# file or directory of the repository (tracked, or new and not ignored).
declare -A known=()
while IFS= read -r path; do
  [ -e "$path" ] || continue # deleted in the working tree
  known[$path]=1
  dir=$path
  while [[ $dir == */* ]]; do
    dir=${dir%/*}
    [ -n "${known[$dir]+x}" ] && break
    known[$dir]=1
  done
done < <(git ls-files --cached --others --exclude-standard)

# normalize sets normalized to its argument with "." and ".." resolved
# lexically (no fork per link: forks are slow on a busy machine).
normalize() {
  local -a parts=() out=()
  local part
  IFS=/ read -r -a parts <<<"$1"
  for part in "${parts[@]}"; do
    case $part in
      '' | .) ;;
      ..) if ((${#out[@]} > 0)) && [[ ${out[-1]} != .. ]]; then unset 'out[-1]'; else out+=(..); fi ;;
      *) out+=("$part") ;;
    esac
  done
  local IFS=/
  normalized=${out[*]:-.}
}

links() {
  awk '
    FNR == 1 { fence = 0 }
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      if (match(line, /^ ? ? ?\[[^]]+\]:[ \t]+[^ \t]+/)) {
        def = substr(line, RSTART, RLENGTH)
        sub(/^[^]]*\]:[ \t]+/, "", def)
        print FILENAME "\t" FNR "\t" def
        next
      }
      while (match(line, /\]\([^)]*\)/)) {
        target = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        sub(/^[ \t]+/, "", target)
        sub(/[ \t].*$/, "", target)
        gsub(/^<|>$/, "", target)
        if (target != "") print FILENAME "\t" FNR "\t" target
      }
    }
  ' "$@"
}

while IFS=$'\t' read -r file line target; do
  case $target in
    http://* | https://* | mailto:* | '#'*) continue ;;
    *:*) report "$file:$line" "link \"$target\" has a scheme other than http(s)"; continue ;;
  esac
  path=${target%%#*}
  path=${path%%\?*}
  if [[ $path == /* ]]; then
    path=${path#/}
  else
    [[ $file == */* ]] && path=${file%/*}/$path
  fi
  normalize "$path"
  path=$normalized
  if [[ $path == ../* || $path == .. ]]; then
    report "$file:$line" "link \"$target\" points outside the repository"
  elif [[ $path != . && -z ${known[$path]+x} ]]; then
    report "$file:$line" "link \"$target\" names $path, which is not in the repository"
  fi
done < <(links "${files[@]}")

exit $fail
