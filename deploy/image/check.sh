#!/usr/bin/env bash
# Checks a schemaops image built from the Dockerfile: its configuration (user 65532, entrypoint
# `schemaops`, labels), its filesystem (the binary, the CA bundle and /data; no shell), and that
# the binary runs from it: `--version`, `registry` answering GET /subjects on loopback, and
# `apply --registry-url http://localhost:PORT` from a second container (a name looked up by the
# static glibc). Needs podman, runc and curl; exits non-zero with a message on the first failure.
#
# Usage: deploy/image/check.sh IMAGE VERSION
#
# Containers run with runc, not podman's default crun, and with lower rlimits than podman asks
# for: on these CI machines crun 1.8 refuses the cgroup layout (cgroup v1 controllers beside a
# cgroup2 mount with a controller enabled), and no process may raise a hard rlimit, not even root,
# while podman asks for nofile=1048576. SCHEMAOPS_OCI_RUNTIME picks another runtime.
set -euo pipefail

image="${1:?usage: check.sh IMAGE VERSION}"
version="${2:?usage: check.sh IMAGE VERSION}"
run_options=(--runtime "${SCHEMAOPS_OCI_RUNTIME:-runc}" --network host
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)

fail() {
  echo "image check FAILED ($image): $*" >&2
  exit 1
}

expect_equal() { # what, expected, actual
  [ "$2" = "$3" ] || fail "$1 is '$3', expected '$2'"
}

for tool in podman curl; do
  command -v "$tool" >/dev/null || fail "$tool is missing"
done

echo "-- configuration"
config() { podman image inspect --format "$1" "$image"; }
user="$(config '{{.Config.User}}')"
case "$user" in
  65532 | 65532:65532) ;;
  *) fail "the image's user is '$user', expected 65532:65532" ;;
esac
expect_equal "the entrypoint" '["schemaops"]' "$(config '{{json .Config.Entrypoint}}')"
expect_equal "the command" 'null' "$(config '{{json .Config.Cmd}}')"
expect_equal "the version label" "$version" "$(config '{{index .Config.Labels "org.opencontainers.image.version"}}')"
expect_equal "the licenses label" "Apache-2.0" "$(config '{{index .Config.Labels "org.opencontainers.image.licenses"}}')"
case ":$(config '{{range .Config.Env}}{{println .}}{{end}}' | sed -n 's/^PATH=//p'):" in
  *:/usr/local/bin:*) ;;
  *) fail "the image's PATH does not hold /usr/local/bin, where the entrypoint is" ;;
esac

echo "-- filesystem"
container="$(podman create "$image")"
files="$(podman export "$container" | tar -tvf - | awk '{print $2, $NF}' | sort)"
podman rm "$container" >/dev/null
expected="$(printf '%s\n' \
  '0/0 etc/' '0/0 etc/ssl/' '0/0 etc/ssl/certs/' '0/0 etc/ssl/certs/ca-certificates.crt' \
  '0/0 usr/' '0/0 usr/local/' '0/0 usr/local/bin/' '0/0 usr/local/bin/schemaops' \
  '65532/65532 data/' | sort)"
if [ "$files" != "$expected" ]; then
  diff <(echo "$expected") <(echo "$files") >&2 || true
  fail "the filesystem (owner and path; < expected, > found) is not the binary, the CA bundle and /data"
fi

echo "-- schemaops --version"
expect_equal "--version" "schemaops $version" "$(podman run --rm "${run_options[@]}" "$image" --version)"

echo "-- schemaops registry"
registry="$(podman run -d "${run_options[@]}" "$image" registry --listen 127.0.0.1:0 --data /data)"
trap 'podman rm -f "$registry" >/dev/null 2>&1 || true' EXIT
address=""
for _ in $(seq 100); do
  address="$(podman logs "$registry" 2>/dev/null | sed -n 's/^listening on //p')"
  [ -n "$address" ] && break
  [ "$(podman inspect --format '{{.State.Running}}' "$registry")" = true ] \
    || fail "registry exited: $(podman logs "$registry" 2>&1 | tail -n 5)"
  sleep 0.1
done
[ -n "$address" ] || fail "registry printed no 'listening on' line in 10 s"
expect_equal "GET /subjects" '[]' "$(curl -fsS "http://$address/subjects")"

echo "-- schemaops apply --registry-url http://localhost:${address##*:}"
manifests="$(mktemp -d)"
trap 'podman rm -f "$registry" >/dev/null 2>&1 || true; rm -rf "$manifests"' EXIT
cat > "$manifests/schema.yaml" <<'EOF'
apiVersion: schemaops.dev/v1alpha1
kind: Schema
metadata:
  name: image-check
spec:
  subject: image-check-value
  schema: '{"type": "record", "name": "ImageCheck", "fields": [{"name": "id", "type": "long"}]}'
EOF
chmod -R a+rX "$manifests"
podman run --rm "${run_options[@]}" -v "$manifests:/manifests:ro" "$image" \
  apply --registry-url "http://localhost:${address##*:}" --data /data /manifests \
  || fail "apply from the image could not register through http://localhost:${address##*:}"
expect_equal "GET /subjects after apply" '["image-check-value"]' "$(curl -fsS "http://$address/subjects")"

echo "== image $image checked"
