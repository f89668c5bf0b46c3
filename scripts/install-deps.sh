#!/bin/sh
# Installs what building and testing libccsandbox needs on Debian 12 / Ubuntu.
# Run as root; as another user it re-runs itself through sudo. Idempotent.
set -eu
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then
  exec sudo sh "$0" "$@"
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  bubblewrap meson ninja-build pkg-config gcc g++ libc6-dev \
  libevent-dev libjansson-dev libseccomp-dev check \
  python3 cargo git curl ca-certificates procps iproute2 passwd \
  python3-fusepy musl-tools \
  >/dev/null
echo "install-deps: done"
