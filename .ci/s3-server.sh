#!/usr/bin/env bash
# A local S3-compatible server for the Atlas S3 tests: moto's server (PyPI `moto[server]`, pinned
# below) on 127.0.0.1, on a free port the server picks itself.
#
#   bash .ci/s3-server.sh start STATE_DIR [BUCKET]   # install if missing, start, wait, make bucket
#   bash .ci/s3-server.sh stop STATE_DIR             # stop it (bounded wait, then SIGKILL)
#
# `start` writes into STATE_DIR: `pid`, `port`, `server.log`, and `env`, a file of `export` lines
# (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP,
# ATLAS_S3_TEST_BUCKET) for `source`. Any failure exits non-zero with the reason on stderr.
#
# What the pinned moto does (checked by the tests in crates/atlas-reader/tests/s3.rs): range GETs
# including suffix ranges (`bytes=-N`, also longer than the object), multipart uploads, and
# conditional PUT (`If-None-Match: *`, `If-Match: <etag>`, answered 412 when they fail). moto
# checks a PUT's precondition and stores the object in two separate steps with no lock between
# them, and its server is threaded, so two racing conditional PUTs could in principle both pass
# (not seen in 640 racing PUTs, but nothing rules it out); the launcher below therefore
# serialises request handling with one lock (connections stay concurrent), which gives the
# atomic check-and-write real S3 promises.
set -euo pipefail

MOTO_VERSION="5.2.1"
ACCESS_KEY="atlas-test"
SECRET_KEY="atlas-test-secret"
REGION="us-east-1"
READY_TIMEOUT_S=60

die() {
    echo "s3-server: $*" >&2
    exit 1
}

launcher='
import os, sys, threading
from werkzeug.serving import make_server
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

state = sys.argv[1]
app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

def serialised(environ, start_response):
    # moto builds each response whole inside this call, so holding the lock across it makes
    # every request, and so every conditional PUT, atomic.
    with lock:
        return app(environ, start_response)

server = make_server("127.0.0.1", 0, serialised, threaded=True)
port = server.server_port
os.environ["MOTO_PORT"] = str(port)
tmp = os.path.join(state, "port.tmp")
with open(tmp, "w") as f:
    f.write(str(port))
os.replace(tmp, os.path.join(state, "port"))
print(f"moto {MOTO_VERSION} serving on 127.0.0.1:{port}", flush=True)
server.serve_forever()
'

moto_ok() {
    python3 - "$MOTO_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
import flask, flask_cors, werkzeug, moto.server  # noqa: F401 (the server extra's modules)
sys.exit(0 if version("moto") == sys.argv[1] else 1)
EOF
}

start() {
    local state="$1" bucket="${2:-atlas-ci}"
    mkdir -p "$state"
    command -v python3 >/dev/null || die "python3 not found"
    if ! moto_ok; then
        echo "s3-server: installing moto[server]==$MOTO_VERSION from PyPI"
        PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install --quiet "moto[server]==$MOTO_VERSION" \
            || die "pip install moto[server]==$MOTO_VERSION failed"
        moto_ok || die "moto $MOTO_VERSION with its server extra is still not importable"
    fi
    rm -f "$state/port" "$state/pid" "$state/env"
    # The launcher string uses MOTO_VERSION only in its log line.
    python3 -c "MOTO_VERSION = '$MOTO_VERSION'
$launcher" "$state" >"$state/server.log" 2>&1 &
    echo $! >"$state/pid"

    local pid deadline port=""
    pid="$(cat "$state/pid")"
    deadline=$((SECONDS + READY_TIMEOUT_S))
    while [ -z "$port" ]; do
        kill -0 "$pid" 2>/dev/null || { cat "$state/server.log" >&2; die "the server exited during start-up"; }
        [ "$SECONDS" -lt "$deadline" ] || { stop "$state"; die "no port after ${READY_TIMEOUT_S}s"; }
        [ -s "$state/port" ] && port="$(cat "$state/port")" || sleep 0.2
    done

    # Ready means: the bucket can be created (moto does not check signatures).
    python3 - "$port" "$bucket" "$READY_TIMEOUT_S" <<'EOF' || { stop "$state"; cat "$state/server.log" >&2; die "the server did not become ready"; }
import sys, time, urllib.request, urllib.error
port, bucket, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
deadline = time.monotonic() + timeout
while True:
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/{bucket}", method="PUT")
        with urllib.request.urlopen(req, timeout=5) as resp:
            if resp.status == 200:
                break
    except (urllib.error.URLError, OSError) as e:
        if time.monotonic() > deadline:
            sys.exit(f"bucket creation failed: {e}")
        time.sleep(0.2)
EOF

    cat >"$state/env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=$REGION
export AWS_ALLOW_HTTP=true
export ATLAS_S3_TEST_BUCKET=$bucket
EOF
    echo "s3-server: moto $MOTO_VERSION on http://127.0.0.1:$port, bucket $bucket (pid $pid)"
}

stop() {
    local state="$1" pid
    [ -s "$state/pid" ] || return 0
    pid="$(cat "$state/pid")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
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
