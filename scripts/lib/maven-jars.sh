# Sourced by the provision scripts that fetch a Java server from Maven Central into the cache:
#   maven_jars NAME POM VERSION_PROPERTY VERSION MAIN_JAR LIB SMOKE_FUNCTION
# prints LIB on stdout when it holds a complete copy (reused, or fetched now). The copy is built
# in a staging directory, checked by SMOKE_FUNCTION <dir>, then moved into place and marked
# complete last, so an interrupted fetch is never mistaken for a cache. Concurrent callers
# serialise on a lock file; the second one reuses the first one's result.

maven_jars() {
  local name=$1 pom=$2 property=$3 version=$4 main_jar=$5 lib=$6 smoke=$7
  local home
  home="$(dirname "$lib")"
  cached() { [[ -f "$lib/.complete" && -f "$lib/$main_jar" ]]; }
  if cached; then
    log "using cached $name $version"
    printf '%s\n' "$lib"
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || { log "Maven (mvn) is required to fetch $name from Maven Central"; return 1; }
  mkdir -p "$home"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$home/.lock"
    flock 9
    if cached; then
      log "using $name $version fetched by a concurrent run"
      printf '%s\n' "$lib"
      return 0
    fi
  fi
  local staging started=$SECONDS
  staging="$(mktemp -d "$home/lib.partial.XXXXXX")"
  trap 'rm -rf "'"$staging"'"' EXIT
  log "fetching $main_jar and its runtime dependencies"
  mvn -B -q -Dstyle.color=never -f "$pom" -D"$property=$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging" >&2
  if [[ ! -f "$staging/$main_jar" ]]; then
    log "Maven finished but $main_jar is missing from the copied dependencies"
    return 1
  fi
  "$smoke" "$staging" || return 1
  rm -rf "$lib"
  mv "$staging" "$lib"
  trap - EXIT
  touch "$lib/.complete"
  log "$name $version ready in $((SECONDS - started))s ($(ls "$lib" | grep -c '\.jar$') jars)"
  printf '%s\n' "$lib"
}
