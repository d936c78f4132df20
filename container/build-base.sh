#!/usr/bin/env bash
# Builds a stand-in for the Action's base image (python:3.13-slim-trixie) from Debian's own
# packages, for `make container-test` where no image registry can be reached (container/README.md).
#
# debootstrap installs Debian 13 "trixie" (minbase: essential packages and apt) with python3
# (3.13), python-is-python3, ca-certificates and Debian's pip wheel from the Debian mirror the
# host's apt already uses (or DEBIAN_MIRROR). As in the official image, pip is installed from
# that wheel as a package of its own (Debian's python3-pip would bring Debian's packaging and
# wheel, which pip cannot replace with the locked ones), and pip's "externally managed"
# marker goes: the official image's Python is its own and the Dockerfile installs into it.
# Then it is trimmed as the slim image is: no documentation, manual pages, locales, apt lists
# or caches, and no compiled bytecode (the slim image ships none; the Action's Dockerfile
# compiles what it needs). The result is imported as one layer.
#
# Usage: container/build-base.sh [IMAGE [PODMAN_OPTION...]]
#   (default localhost/probegate-base:trixie; the options go to podman, e.g. the store
#   `make container-test` uses: --root DIR --runroot DIR --storage-driver vfs)
set -euo pipefail

image=${1:-localhost/probegate-base:trixie}
podman=(podman "${@:2}")
suite=trixie

mirror=${DEBIAN_MIRROR:-}
if [[ -z $mirror ]]; then # the first Debian archive the host's apt names
	mirror=$(grep -rhoE '(^deb |^URIs:) *[a-z]+://[^ ]+/debian/?( |$)' \
		/etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
		grep -oE '[a-z]+://[^ ]+' | head -n 1 || true)
fi
if [[ -z $mirror ]]; then
	echo "no Debian mirror in the host's apt sources: set DEBIAN_MIRROR" >&2
	exit 2
fi
for tool in debootstrap podman; do
	command -v "$tool" >/dev/null || {
		echo "$tool is missing (apt-get install debootstrap podman runc)" >&2
		exit 2
	}
done

rootfs=$(mktemp -d)
trap 'rm -rf -- "$rootfs"' EXIT
debootstrap --variant=minbase \
	--include=python3,python3-pip-whl,python-is-python3,ca-certificates \
	"$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
	tail -n 20 "$rootfs.log" >&2
	exit 1
}
rm -f -- "$rootfs.log"

rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
wheel=$(cd "$rootfs" && echo usr/share/python-wheels/pip-*.whl)
chroot "$rootfs" python3 "/$wheel/pip" install --quiet --no-index --no-cache-dir \
	--disable-pip-version-check --root-user-action=ignore "/$wheel"
chroot "$rootfs" dpkg --purge python3-pip-whl >/dev/null

rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
	"$rootfs"/usr/share/locale/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* \
	"$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/*
find "$rootfs"/usr/lib/python3* "$rootfs"/usr/local/lib/python3* -name __pycache__ -prune \
	-exec rm -rf {} +

tar -C "$rootfs" --numeric-owner -c . |
	"${podman[@]}" import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$image" >/dev/null
echo "$image"
