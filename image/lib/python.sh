# shellcheck shell=bash
# The fulcrum package and its pinned dependencies as wheels for the image's Python (bookworm:
# CPython 3.11, glibc 2.36), downloaded once into the cache.

IMAGE_PYTHON_TAGS=(--python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none)
# pip does not widen a manylinux platform to the older ones glibc 2.36 also runs: list them.
for glibc_minor in $(seq 5 36); do
    IMAGE_PYTHON_TAGS+=(--platform "manylinux_2_${glibc_minor}_x86_64")
done
IMAGE_PYTHON_TAGS+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)

# build_fulcrum_wheel PIP OUT: the fulcrum wheel from api/ (always rebuilt: it is the code under test).
build_fulcrum_wheel() {
    local pip=$1 out=$2
    rm -rf "$out"
    mkdir -p "$out"
    "$pip" wheel --quiet --no-deps --wheel-dir "$out" "$FULCRUM_REPO/api"
}

# fetch_dependency_wheels PIP FULCRUM_WHEEL CACHE: from the cache alone if it has them all,
# else from PyPI into the cache. Versions come from image/constraints.txt.
fetch_dependency_wheels() {
    local pip=$1 wheel=$2 cache=$3
    local args=(download --quiet --only-binary=:all: "${IMAGE_PYTHON_TAGS[@]}"
        --constraint "$FULCRUM_IMAGE_DIR/constraints.txt" --dest "$cache" "$wheel")
    mkdir -p "$cache"
    if "$pip" "${args[@]}" --no-index --find-links "$cache" >/dev/null 2>&1; then
        echo "python wheels: all in the cache"
    else
        echo "python wheels: downloading the missing ones from PyPI"
        "$pip" "${args[@]}"
    fi
    rm -f "$cache"/fulcrum-*.whl # pip download copies the local wheel too; it is not a dependency
}

# install_fulcrum_venv ROOT WHEELS CACHE: /opt/fulcrum/venv inside the image, offline, pinned.
install_fulcrum_venv() {
    local root=$1 wheels=$2 cache=$3
    mkdir -p "$root/tmp/wheels"
    cp "$wheels"/*.whl "$cache"/*.whl "$FULCRUM_IMAGE_DIR/constraints.txt" "$root/tmp/wheels/"
    # A clean environment: the build host's PIP_* settings must not reach the image's pip.
    local in_root=(chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin)
    "${in_root[@]}" python3 -m venv /opt/fulcrum/venv
    "${in_root[@]}" /opt/fulcrum/venv/bin/pip install --disable-pip-version-check --quiet --no-index --find-links /tmp/wheels \
        --constraint /tmp/wheels/constraints.txt fulcrum
    rm -rf "$root/tmp/wheels"
    # Units and the console call the interpreter that has fulcrum by one name in every image
    # (the Buildroot image links it to /usr/bin/python3). A symlink would lose the venv.
    printf '#!/bin/sh\nexec /opt/fulcrum/venv/bin/python3 "$@"\n' >"$root/usr/lib/fulcrum/python3"
    chmod 0755 "$root/usr/lib/fulcrum/python3"
    ln -sfn /opt/fulcrum/venv/bin/fulcrum-applyd "$root/usr/bin/fulcrum-applyd"
    ln -sfn /opt/fulcrum/venv/bin/fulcrumctl "$root/usr/bin/fulcrumctl"
}
