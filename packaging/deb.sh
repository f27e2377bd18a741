#!/usr/bin/env bash
# Builds metron_<version>-<revision>_<arch>.deb in the current directory from
# a release build: /usr/bin/metron, its man pages (metron man), its bash,
# zsh and fish completions (metron completions SHELL), and the README,
# copyright and changelog in /usr/share/doc/metron. The dependencies are
# what dpkg-shlibdeps finds the binary needs (libc6 and libgcc-s1).
#
#   packaging/deb.sh                 cargo build --release, then the package
#   packaging/deb.sh --no-build      package the binary already built
#
# Needs dpkg-dev (dpkg-deb, dpkg-shlibdeps) and binutils (strip). The
# binary is taken from $CARGO_TARGET_DIR/release (target/release unless
# set). DEBFULLNAME and DEBEMAIL, when set, name the package's maintainer;
# DEB_REVISION (default 1) is the Debian revision.
set -euo pipefail
umask 022
out=$PWD
# A relative target directory is the caller's, as cargo takes it.
if [[ -n ${CARGO_TARGET_DIR:-} && $CARGO_TARGET_DIR != /* ]]; then
    export CARGO_TARGET_DIR=$out/$CARGO_TARGET_DIR
fi
cd "$(dirname "$0")/.."
root=$PWD

build=1
for arg in "$@"; do
    case $arg in
        --no-build) build=0 ;;
        -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "deb.sh: unknown option '$arg'; it takes --no-build or --help" >&2; exit 2 ;;
    esac
done
for tool in dpkg-deb dpkg-shlibdeps strip gzip; do
    command -v "$tool" >/dev/null || {
        echo "deb.sh: $tool is missing; apt-get install dpkg-dev binutils gzip" >&2
        exit 1
    }
done

target=${CARGO_TARGET_DIR:-$root/target}
if ((build)); then
    cargo build --release --bin metron
fi
bin=$target/release/metron
[[ -x $bin ]] || { echo "deb.sh: no binary at $bin; run without --no-build" >&2; exit 1; }

version=$("$bin" --version | sed -n '1s/^metron \([^ ]*\).*/\1/p')
[[ $version ]] || { echo "deb.sh: $bin --version did not name a version" >&2; exit 1; }
debversion=$version-${DEB_REVISION:-1}
arch=$(dpkg --print-architecture)
maintainer="${DEBFULLNAME:-metron developers} <${DEBEMAIL:-metron@example.org}>"
# The changelog's date: the commit's, so that a build is the same twice.
date=$(git -C "$root" log -1 --format=%aD 2>/dev/null || date -R)
year=$(git -C "$root" log -1 --format=%ad --date=format:%Y 2>/dev/null || date +%Y)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/metron
doc=$stage/usr/share/doc/metron

install -d "$stage/DEBIAN" "$stage/usr/bin" "$doc"
install -m 755 "$bin" "$stage/usr/bin/metron"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/metron"

"$bin" man "$stage/usr/share/man/man1" >/dev/null
gzip -9n "$stage"/usr/share/man/man1/*.1

install -d "$stage/usr/share/bash-completion/completions" \
    "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d"
"$bin" completions bash >"$stage/usr/share/bash-completion/completions/metron"
"$bin" completions zsh >"$stage/usr/share/zsh/vendor-completions/_metron"
"$bin" completions fish >"$stage/usr/share/fish/vendor_completions.d/metron.fish"

gzip -9n <"$root/README.md" >"$doc/README.md.gz"
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: metron
Comment: The binary links in, statically, LuaJIT (MIT licence) and the
 Rust crates listed in the source's Cargo.lock, each under its own licence.

Files: *
Copyright: $year the metron developers
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may
 not use this file except in compliance with the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
EOF
{
    printf 'metron (%s) unstable; urgency=medium\n\n' "$debversion"
    printf '  * Built from the source of metron %s.\n\n' "$version"
    printf ' -- %s  %s\n' "$maintainer" "$date"
} | gzip -9n >"$doc/changelog.Debian.gz"

# dpkg-shlibdeps reads the package's name from a debian/control.
mkdir -p "$work/src/debian"
printf 'Source: metron\n\nPackage: metron\nArchitecture: any\n' >"$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e"$stage/usr/bin/metron" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[[ $depends ]] || { echo "deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

cat >"$stage/DEBIAN/control" <<EOF
Package: metron
Version: $debversion
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Section: net
Priority: optional
Description: HTTP load generator measuring latency without coordinated omission
 metron takes wrk's command line and runs wrk's Lua scripts, and measures
 latency as wrk2 does: in rate mode requests go out on a fixed schedule
 that does not wait for the server, and each latency is counted from when
 the request should have been sent. It speaks HTTP/1.1, HTTP/2, HTTP/3
 and gRPC, over TLS too, and can judge a run against an SLO, find the
 highest rate that meets one, and merge the runs of several machines.
EOF
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"

deb=$out/metron_${debversion}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
