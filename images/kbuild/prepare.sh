#!/bin/sh
# Run once, chrooted in the image while it is built (no network): unpack
# Debian's kernel tarball to /usr/src/linux, configure it (tinyconfig,
# x86_64) and build what every object needs first (make prepare: fixdep,
# the generated headers, objtool), then drop what no compile of mm/, lib/
# or kernel/ reads, to keep the image small. The guest then compiles only.
set -eu
cd /usr/src
tar xf linux-source-6.1.tar.xz
rm linux-source-6.1.tar.xz
mv linux-source-6.1 linux
cd linux
make -s ARCH=x86_64 tinyconfig
make -s ARCH=x86_64 -j"$(nproc)" prepare
# Kconfig and Makefiles stay everywhere (kbuild reads them all to check
# the configuration); the C and assembly sources of subsystems the
# compiled directories never include are removed, as are the other
# architectures, the documentation and the tools other than objtool's.
find Documentation -type f ! -name 'Kconfig*' -delete
for d in arch/*; do
    case "$d" in arch/x86 | arch/Kconfig) ;; *) rm -rf "$d" ;; esac
done
find drivers sound net fs samples crypto security block io_uring virt \
    -type f \( -name '*.c' -o -name '*.S' \) -delete
rm -rf tools/perf tools/testing
