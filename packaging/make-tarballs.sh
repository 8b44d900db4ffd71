#!/usr/bin/env bash
# Builds the portable oomlens for each architecture and packs what a cluster user copies:
#   packaging/make-tarballs.sh [ARCH...]        ARCH: x86_64, aarch64 (default: both)
# writes build/dist/oomlens-VERSION-linux-ARCH.tar.gz (OOMLENS_DIST_DIR to put them elsewhere), each
# holding one folder with
#   oomlens            the static executable (every command but the GUI; nothing to install)
#   oomlens_capture/   the capture helper (Python package; finds the oomlens beside it first)
#   README.md          how to run it on a node (packaging/tarball-README.md)
# Needs what the presets need (scripts/quickstart.sh installs it): for aarch64, Debian's
# g++-aarch64-linux-gnu and zlib1g-dev:arm64.
set -euo pipefail
cd "$(dirname "$0")/.."

arches=("$@")
[ ${#arches[@]} -eq 0 ] && arches=(x86_64 aarch64)
dist="${OOMLENS_DIST_DIR:-build/dist}"
mkdir -p "$dist"

preset_of() {
    case "$1" in
    x86_64) echo portable ;;
    aarch64) echo portable-aarch64 ;;
    *) echo "make-tarballs: unknown architecture '$1' (x86_64 or aarch64)" >&2; return 2 ;;
    esac
}

strip_of() {
    case "$1" in
    x86_64) echo strip ;;
    aarch64) echo aarch64-linux-gnu-strip ;;
    esac
}

# The project's version, as CMake knows it (the same the binary prints for --version).
version_of() {
    sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$1/CMakeCache.txt"
}

# A file with a program interpreter (PT_INTERP) needs a loader and libraries on the node.
require_static() {
    if readelf -lW "$1" | grep -q 'INTERP'; then
        echo "make-tarballs: $1 is dynamically linked; the portable preset must link it statically" >&2
        return 1
    fi
}

# The tarball as a user unpacks it: the three things it promises, the README filled in, the
# executable static, and the capture helper finding the executable beside its folder with nothing
# on PATH (python3 is what the training job runs it with).
check_unpacked() {
    local tarball="$1" name="$2" unpacked entry found python
    unpacked="$(mktemp -d)"
    tar -xzf "$tarball" -C "$unpacked"
    for entry in oomlens oomlens_capture/__init__.py oomlens_capture/_capture.py README.md; do
        [ -e "$unpacked/$name/$entry" ] || { echo "make-tarballs: $name/$entry missing from the tarball" >&2; return 1; }
    done
    if grep -q '@[A-Z]*@' "$unpacked/$name/README.md"; then
        echo "make-tarballs: $name/README.md has a placeholder left" >&2
        return 1
    fi
    require_static "$unpacked/$name/oomlens"
    # The interpreter itself, not a wrapper (pyenv's shims) that needs PATH.
    python="$(python3 -c 'import sys; print(sys.executable)')"
    found="$(cd / && env -i PATH=/nonexistent PYTHONPATH="$unpacked/$name" "$python" -c \
        'import oomlens_capture._capture as c; print(c.find_oomlens())')"
    if [ "$found" != "$unpacked/$name/oomlens" ]; then
        echo "make-tarballs: the capture helper found '$found', not the oomlens beside it" >&2
        return 1
    fi
    rm -rf "$unpacked"
}

pack() {
    local arch="$1" preset build version name stage
    preset="$(preset_of "$arch")"
    build="build/$preset"
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" --parallel "$(nproc)"
    require_static "$build/app/oomlens"
    version="$(version_of "$build")"
    name="oomlens-$version-linux-$arch"
    stage="$(mktemp -d)"
    mkdir "$stage/$name"
    "$(strip_of "$arch")" -o "$stage/$name/oomlens" "$build/app/oomlens"
    cp -r python/oomlens_capture "$stage/$name/"
    find "$stage/$name" -name __pycache__ -prune -exec rm -rf {} +
    sed "s/@VERSION@/$version/g; s/@ARCH@/$arch/g" packaging/tarball-README.md >"$stage/$name/README.md"
    # The same bytes from the same tree: names sorted, owners and times fixed.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH:-0}" \
        -C "$stage" -cf - "$name" | gzip -9n >"$dist/$name.tar.gz"
    rm -rf "$stage"
    check_unpacked "$dist/$name.tar.gz" "$name"
    echo "$dist/$name.tar.gz ($(stat -c %s "$dist/$name.tar.gz") bytes; oomlens $(stat -c %s "$build/app/oomlens") bytes before strip)"
}

for arch in "${arches[@]}"; do
    pack "$arch"
done
