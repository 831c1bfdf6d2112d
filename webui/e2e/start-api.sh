#!/bin/sh
# The real API with a throw-away database, serving the built UI (webui/dist) on one port.
# FULCRUM_E2E_TLS=1: it also has a self-signed certificate as its served one (the Certificate
# page's tests), though it still speaks plain HTTP.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT INT TERM
if [ "${FULCRUM_E2E_TLS:-}" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 -subj /CN=fulcrum \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$data/tls.key" -out "$data/tls.crt" 2>/dev/null
  export FULCRUM_TLS_CERTFILE="$data/tls.crt" FULCRUM_TLS_KEYFILE="$data/tls.key"
fi
# argon2id at OWASP's minimum, as every test-run API (tests/lab/passwords.py says why).
export FULCRUM_PASSWORD_HASH_MEMORY_KIB=19456 FULCRUM_PASSWORD_HASH_TIME_COST=2 FULCRUM_PASSWORD_HASH_PARALLELISM=1
FULCRUM_DATA_DIR=$data FULCRUM_APPLY_MODE=local FULCRUM_COOKIE_SECURE=false FULCRUM_WEBUI_DIR=$here/dist \
  "$here/../.venv/bin/uvicorn" --factory fulcrum.main:create_app --host 127.0.0.1 --port "${FULCRUM_E2E_PORT:-8124}" --log-level warning &
child=$!
trap 'kill $child 2>/dev/null; wait $child; rm -rf "$data"' EXIT INT TERM
wait $child
