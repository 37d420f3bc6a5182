#!/usr/bin/env bash
# Brings up the two dependencies of onceflow's tests and no-Docker local stack:
# PostgreSQL and an SQS-compatible server. Nothing here needs Docker.
#
#   scripts/stack.sh up       make sure both answer; start what is missing
#   scripts/stack.sh env      `up`, then print `export VAR='...'` lines for
#                             DATABASE_URL, AWS_ENDPOINT_URL_SQS, AWS_REGION,
#                             AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
#                             (use: eval "$(scripts/stack.sh env)")
#   scripts/stack.sh down     stop only what `up` started
#   scripts/stack.sh install  install PostgreSQL's binaries and fauxqs, start nothing
#                             (the chaos run starts private copies of both)
#   scripts/stack.sh status   show what answers and what this script started
#
# PostgreSQL, first that answers: $DATABASE_URL; postgres://postgres@127.0.0.1:5432;
# a throwaway cluster (initdb + pg_ctl, trust auth, 127.0.0.1:$STACK_PG_PORT) in
# .stack/pg, installing Debian's `postgresql` package when initdb is missing.
# SQS, first that answers: $AWS_ENDPOINT_URL_SQS; 127.0.0.1:$STACK_SQS_PORT
# (fauxqs or LocalStack); fauxqs started from localstack/ (npm ci on first use).
#
# Settings (environment):
#   STACK_PG=throwaway   skip the DATABASE_URL and :5432 probes, always use the
#                        throwaway cluster (default: auto)
#   STACK_PG_PORT        throwaway cluster port (default 55432)
#   STACK_PG_USER        system user that runs the cluster when we are root
#                        (default postgres; created if missing)
#   STACK_SQS_PORT       port for fauxqs (default 4566)
# Progress goes to stderr; only `env` and `status` write to stdout.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACK=$ROOT/.stack
PG_PORT=${STACK_PG_PORT:-55432}
PG_USER=${STACK_PG_USER:-postgres}
SQS_PORT=${STACK_SQS_PORT:-4566}
DEFAULT_PG_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
THROWAWAY_PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
LOCAL_SQS_URL="http://127.0.0.1:$SQS_PORT"

say() { echo "stack: $*" >&2; }
die() { say "error: $*"; exit 1; }

apt_install() {
  [[ $EUID -eq 0 ]] || die "need root to install $* (or install it yourself)"
  export DEBIAN_FRONTEND=noninteractive
  say "installing $* with apt-get"
  apt-get install -y --no-upgrade "$@" >&2 \
    || { apt-get update >&2 && apt-get install -y --no-upgrade "$@" >&2; }
}

# pg_tool NAME: path of a PostgreSQL program, from the newest
# /usr/lib/postgresql/*/bin (Debian's layout) or else PATH; empty when absent.
pg_tool() {
  local p
  p=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n1 || true)
  [[ -n $p ]] || p=$(command -v "$1" || true)
  echo "$p"
}

need_pg_bins() {
  if [[ -z $(pg_tool initdb) || -z $(pg_tool psql) ]]; then
    apt_install postgresql
  fi
  [[ -n $(pg_tool initdb) && -n $(pg_tool pg_ctl) ]] || die "initdb/pg_ctl not found after installing postgresql"
}

pg_answers() {
  [[ -n $(pg_tool psql) ]] || need_pg_bins
  PGCONNECT_TIMEOUT=3 "$(pg_tool psql)" "$1" -XqtAc 'select 1' >/dev/null 2>&1
}

http_answers() {
  command -v curl >/dev/null || apt_install curl
  curl -s -o /dev/null -m 3 "$1"
}

sqs_local_answers() {
  curl -sf -m 3 -o /dev/null "$LOCAL_SQS_URL/health" \
    || curl -sf -m 3 -o /dev/null "$LOCAL_SQS_URL/_localstack/health"
}

# The throwaway cluster lives in .stack/pg. As root, initdb and postgres refuse to
# run, so they run as $PG_USER, who must be able to reach the folder; when it
# cannot (say the repo is under /root), the cluster goes under /tmp instead.
pg_datadir() {
  if [[ -f $STACK/pg.datadir ]]; then cat "$STACK/pg.datadir"; return; fi
  local dir=$STACK/pg
  if [[ $EUID -eq 0 ]] && ! runuser -u "$PG_USER" -- test -x "$STACK"; then
    dir=/tmp/onceflow-stack-$(printf '%s' "$ROOT" | md5sum | cut -c1-12)/pg
  fi
  echo "$dir" >"$STACK/pg.datadir"
  echo "$dir"
}

as_pg() {
  if [[ $EUID -eq 0 ]]; then (cd / && runuser -u "$PG_USER" -- "$@"); else "$@"; fi
}

start_throwaway_pg() {
  need_pg_bins
  if [[ $EUID -eq 0 ]] && ! id -u "$PG_USER" >/dev/null 2>&1; then
    say "creating system user $PG_USER to run PostgreSQL"
    useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$PG_USER"
  fi
  mkdir -p "$STACK"
  [[ $EUID -ne 0 ]] || chmod o+x "$STACK"
  local data bin version
  data=$(pg_datadir)
  bin=$(dirname "$(pg_tool initdb)")
  version=$("$bin/initdb" --version | sed -E 's/^[^0-9]*([0-9]+).*/\1/')
  if [[ -f $data/PG_VERSION && $(cat "$data/PG_VERSION") != "$version" ]]; then
    say "throwaway cluster in $data is PostgreSQL $(cat "$data/PG_VERSION"), not $version: recreating it"
    rm -rf "$data"
  fi
  if [[ ! -f $data/PG_VERSION ]]; then
    say "creating throwaway PostgreSQL $version cluster in $data"
    mkdir -p "$data"
    [[ $EUID -ne 0 ]] || chown "$PG_USER:" "$data"
    chmod 700 "$data"
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C >/dev/null
    # A test cluster: no durability needed, enough connections for parallel tests.
    # The unix socket sits in the data folder unless that path is too long for one.
    local sockdir=$data
    (( ${#data} < 90 )) || sockdir=
    cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$sockdir'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  fi
  say "starting throwaway PostgreSQL on 127.0.0.1:$PG_PORT"
  as_pg "$bin/pg_ctl" -D "$data" -l "$data/postgres.log" -w -t 60 start >/dev/null \
    || { tail -n 20 "$data/postgres.log" >&2; die "throwaway PostgreSQL did not start"; }
  echo "$data" >"$STACK/started.pg"
}

ensure_pg() {
  if [[ ${STACK_PG:-auto} != throwaway ]]; then
    if [[ -n ${DATABASE_URL:-} ]] && pg_answers "$DATABASE_URL"; then
      say "PostgreSQL: using DATABASE_URL"; PG_URL=$DATABASE_URL; return
    fi
    [[ -z ${DATABASE_URL:-} ]] || say "DATABASE_URL does not answer; looking further"
    if pg_answers "$DEFAULT_PG_URL"; then
      say "PostgreSQL: using 127.0.0.1:5432"; PG_URL=$DEFAULT_PG_URL; return
    fi
  fi
  if ! pg_answers "$THROWAWAY_PG_URL"; then
    start_throwaway_pg
    pg_answers "$THROWAWAY_PG_URL" || die "throwaway PostgreSQL started but does not answer"
  fi
  say "PostgreSQL: using throwaway cluster on 127.0.0.1:$PG_PORT"
  PG_URL=$THROWAWAY_PG_URL
}

fauxqs_pid() {
  local pid
  pid=$(cat "$STACK/fauxqs.pid" 2>/dev/null) || return 1
  [[ -n $pid ]] && grep -qs fauxqs.mjs "/proc/$pid/cmdline" && echo "$pid"
}

install_fauxqs() {
  local dir=$ROOT/localstack node=$ROOT/localstack/node_modules/.bin/node
  if [[ ! -x $node || ! -d $dir/node_modules/fauxqs ]]; then
    command -v npm >/dev/null || die "npm not found: install Node.js and npm"
    say "installing fauxqs and Node 22 (npm ci in localstack/)"
    (cd "$dir" && npm ci --no-audit --no-fund >&2)
  fi
}

start_fauxqs() {
  local dir=$ROOT/localstack node=$ROOT/localstack/node_modules/.bin/node
  install_fauxqs
  mkdir -p "$STACK"
  say "starting fauxqs on 127.0.0.1:$SQS_PORT"
  # setsid: not in the caller's process group; all output to the log, so an
  # `eval "$(scripts/stack.sh env)"` does not wait on the server.
  FAUXQS_BIND=127.0.0.1 FAUXQS_PORT=$SQS_PORT FAUXQS_LOGGER=false \
    FAUXQS_INIT=$dir/fauxqs-init.json \
    setsid "$node" --disable-warning=ExperimentalWarning "$dir/fauxqs.mjs" \
    </dev/null >"$STACK/fauxqs.log" 2>&1 &
  echo $! >"$STACK/fauxqs.pid"
  for _ in $(seq 60); do
    if curl -sf -m 1 -o /dev/null "$LOCAL_SQS_URL/health"; then return; fi
    kill -0 "$(cat "$STACK/fauxqs.pid")" 2>/dev/null || break
    sleep 0.5
  done
  tail -n 20 "$STACK/fauxqs.log" >&2
  die "fauxqs did not become healthy on $LOCAL_SQS_URL (log: .stack/fauxqs.log)"
}

ensure_sqs() {
  if [[ -n ${AWS_ENDPOINT_URL_SQS:-} ]] && http_answers "$AWS_ENDPOINT_URL_SQS"; then
    say "SQS: using AWS_ENDPOINT_URL_SQS ($AWS_ENDPOINT_URL_SQS)"; SQS_URL=$AWS_ENDPOINT_URL_SQS; return
  fi
  [[ -z ${AWS_ENDPOINT_URL_SQS:-} ]] || say "AWS_ENDPOINT_URL_SQS does not answer; looking further"
  command -v curl >/dev/null || apt_install curl
  if ! sqs_local_answers; then
    start_fauxqs
  fi
  say "SQS: using $LOCAL_SQS_URL"
  SQS_URL=$LOCAL_SQS_URL
}

up() {
  ensure_pg
  ensure_sqs
}

down() {
  local data pid
  if [[ -f $STACK/started.pg ]]; then
    data=$(cat "$STACK/started.pg")
    say "stopping throwaway PostgreSQL ($data)"
    as_pg "$(pg_tool pg_ctl)" -D "$data" -m fast -w stop >/dev/null 2>&1 || say "it was not running"
    rm -f "$STACK/started.pg"
  fi
  if pid=$(fauxqs_pid); then
    say "stopping fauxqs (pid $pid)"
    kill "$pid"
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  rm -f "$STACK/fauxqs.pid"
}

status() {
  local data pid
  for name in DATABASE_URL DEFAULT THROWAWAY; do
    case $name in
      DATABASE_URL) url=${DATABASE_URL:-}; [[ -n $url ]] || continue ;;
      DEFAULT) url=$DEFAULT_PG_URL ;;
      THROWAWAY) url=$THROWAWAY_PG_URL ;;
    esac
    if pg_answers "$url"; then echo "postgres  up    $url"; else echo "postgres  down  $url"; fi
  done
  if [[ -f $STACK/started.pg ]]; then
    data=$(cat "$STACK/started.pg")
    echo "postgres  started by stack.sh: $data"
  fi
  if [[ -n ${AWS_ENDPOINT_URL_SQS:-} && $AWS_ENDPOINT_URL_SQS != "$LOCAL_SQS_URL" ]]; then
    if http_answers "$AWS_ENDPOINT_URL_SQS"; then echo "sqs       up    $AWS_ENDPOINT_URL_SQS"; else echo "sqs       down  $AWS_ENDPOINT_URL_SQS"; fi
  fi
  if sqs_local_answers; then echo "sqs       up    $LOCAL_SQS_URL"; else echo "sqs       down  $LOCAL_SQS_URL"; fi
  if pid=$(fauxqs_pid); then echo "sqs       started by stack.sh: fauxqs pid $pid"; fi
}

quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

case ${1:-} in
  up) up ;;
  install) need_pg_bins; install_fauxqs ;;
  env)
    up
    echo "export DATABASE_URL=$(quote "$PG_URL")"
    echo "export AWS_ENDPOINT_URL_SQS=$(quote "$SQS_URL")"
    echo "export AWS_REGION=$(quote "${AWS_REGION:-us-east-1}")"
    echo "export AWS_ACCESS_KEY_ID=$(quote "${AWS_ACCESS_KEY_ID:-test}")"
    echo "export AWS_SECRET_ACCESS_KEY=$(quote "${AWS_SECRET_ACCESS_KEY:-test}")"
    ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|env|down|status|install" >&2; exit 2 ;;
esac
