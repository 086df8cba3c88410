#!/usr/bin/env bash
# Builds a statically linked `schemaops` and lays out the image's root filesystem in OUT_DIR:
#
#   usr/local/bin/schemaops              the binary (glibc linked statically: +crt-static)
#   etc/ssl/certs/ca-certificates.crt    the CA bundle, for TLS to the API server, registries, PostgreSQL
#   data/                                the default data folder, empty
#
# No /etc/nsswitch.conf: without one, glibc 2.36 (Debian 12; static too) looks names up in
# /etc/hosts, then DNS, with both modules built in.
#
# The Dockerfile's `prebuilt` stage copies OUT_DIR as it is (`--target prebuilt`, OUT_DIR as the
# context: nothing is pulled); its `build` stage runs this script in a Rust image. docs/src/operations/install.md
# says why glibc static and not musl.
#
# Usage: deploy/image/build.sh [OUT_DIR]   (default: $CARGO_TARGET_DIR/image-rootfs or target/image-rootfs)
# SCHEMAOPS_TARGET picks the Rust target (default: the host's); a cross build also needs the
# target's C compiler and linker set through cargo's usual CC_<target> and
# CARGO_TARGET_<TARGET>_LINKER variables (the Dockerfile sets them).
set -euo pipefail
out_dir="${1:-}"
[ -z "$out_dir" ] || out_dir="$(realpath -m "$out_dir")"
cd "$(dirname "$0")/../.."

target_dir="${CARGO_TARGET_DIR:-target}"
out_dir="${out_dir:-$target_dir/image-rootfs}"
target="${SCHEMAOPS_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
ca_bundle=/etc/ssl/certs/ca-certificates.crt

fail() {
  echo "build.sh: $*" >&2
  exit 1
}

[ -f "$ca_bundle" ] || fail "$ca_bundle is missing; install the ca-certificates package"
command -v readelf >/dev/null || fail "readelf is missing; install binutils"
# OUT_DIR is replaced, so it must be empty, absent or an earlier output of this script.
if [ -n "$(ls -A "$out_dir" 2>/dev/null)" ] && [ ! -f "$out_dir/usr/local/bin/schemaops" ]; then
  fail "$out_dir is not empty and holds no earlier image root; pick another OUT_DIR"
fi

# An explicit --target keeps build scripts and proc-macros dynamic: RUSTFLAGS then reach only the
# target's artifacts.
echo "== cargo build --release --target $target (static)"
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
  cargo build --locked --release --target "$target" --bin schemaops
binary="$target_dir/$target/release/schemaops"

# A static executable has no program interpreter and needs no shared library.
if readelf --program-headers "$binary" | grep -q INTERP; then
  fail "$binary has a program interpreter: it is not statically linked"
fi
if readelf --dynamic "$binary" | grep -q NEEDED; then
  fail "$binary needs shared libraries: $(readelf --dynamic "$binary" | grep NEEDED | tr -s ' ')"
fi

rm -rf "$out_dir"
mkdir -p "$out_dir/usr/local/bin" "$out_dir/etc/ssl/certs" "$out_dir/data"
cp "$binary" "$out_dir/usr/local/bin/schemaops"
cp "$ca_bundle" "$out_dir/etc/ssl/certs/ca-certificates.crt"
echo "== root filesystem in $out_dir ($(du -sh "$out_dir" | cut -f1); binary $(du -h "$binary" | cut -f1))"
