#!/bin/sh
# The real API with a throw-away database, serving the built UI (webui/dist) on one port.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT INT TERM
FULCRUM_DATA_DIR=$data FULCRUM_APPLY_MODE=local FULCRUM_COOKIE_SECURE=false FULCRUM_WEBUI_DIR=$here/dist \
  "$here/../.venv/bin/uvicorn" --factory fulcrum.main:create_app --host 127.0.0.1 --port "${FULCRUM_E2E_PORT:-8124}" --log-level warning &
child=$!
trap 'kill $child 2>/dev/null; wait $child; rm -rf "$data"' EXIT INT TERM
wait $child
