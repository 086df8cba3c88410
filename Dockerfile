# The schemaops image: a statically linked binary and CA certificates on an empty base, run as
# user 65532. Two ways to build it (docs/src/operations/install.md):
#
#   docker buildx build --platform linux/amd64,linux/arm64 .
#       The full path (the release workflow): the `build` stage compiles on the builder's own
#       platform, cross-compiling for the other, and the last stage is the image.
#   deploy/image/build.sh OUT && podman build --target prebuilt -f Dockerfile OUT
#       From a root filesystem built on the host: pulls nothing (what .ci/run does).
#
# The two image stages differ only in where the root filesystem comes from; tests/release.rs
# holds them to the same user and entrypoint.

ARG RUST_VERSION=1.95
ARG VERSION=dev

FROM scratch AS prebuilt
ARG VERSION
COPY usr/ /usr/
COPY etc/ /etc/
COPY --chown=65532:65532 data/ /data/
LABEL org.opencontainers.image.title="schemaops" \
      org.opencontainers.image.source="https://github.com/schemaops/schemaops" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
ENTRYPOINT ["schemaops"]

FROM --platform=$BUILDPLATFORM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
ARG TARGETARCH
WORKDIR /src
# The target's C toolchain, for a cross build (bundled SQLite, ring and jemalloc are C).
# TARGETARCH is amd64 or arm64 (BuildKit sets it; older buildah only with --platform).
RUN set -eu; \
    TARGETARCH="${TARGETARCH:-$(dpkg --print-architecture)}"; \
    case "$TARGETARCH" in \
      amd64) arch=x86_64 ;; \
      arm64) arch=aarch64 ;; \
      *) echo "unsupported TARGETARCH $TARGETARCH" >&2; exit 1 ;; \
    esac; \
    echo "$arch-unknown-linux-gnu" > /rust-target; \
    if [ "$arch" != "$(uname -m)" ]; then \
      apt-get update; \
      apt-get install -y --no-install-recommends "gcc-$(echo "$arch" | tr _ -)-linux-gnu" "libc6-dev-$TARGETARCH-cross"; \
      rm -rf /var/lib/apt/lists/*; \
    fi; \
    rustup target add "$arch-unknown-linux-gnu"
COPY . .
RUN set -eu; \
    target="$(cat /rust-target)"; \
    arch="${target%%-*}"; \
    if [ "$arch" != "$(uname -m)" ]; then \
      triple_var="$(echo "$target" | tr a-z- A-Z_)"; \
      export "CARGO_TARGET_${triple_var}_LINKER=$arch-linux-gnu-gcc" \
             "CC_$(echo "$target" | tr - _)=$arch-linux-gnu-gcc" \
             "AR_$(echo "$target" | tr - _)=$arch-linux-gnu-ar"; \
    fi; \
    SCHEMAOPS_TARGET="$target" CARGO_TARGET_DIR=/tmp/target deploy/image/build.sh /rootfs

FROM scratch AS runtime
ARG VERSION
COPY --from=build /rootfs/usr/ /usr/
COPY --from=build /rootfs/etc/ /etc/
COPY --from=build --chown=65532:65532 /rootfs/data/ /data/
LABEL org.opencontainers.image.title="schemaops" \
      org.opencontainers.image.source="https://github.com/schemaops/schemaops" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
ENTRYPOINT ["schemaops"]
