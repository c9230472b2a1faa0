#!/bin/sh
# A batch job under memory-cgroup pressure: `make -j` of a list of kernel
# objects in the prepared tree of /usr/src/linux (its objects go to the
# image's overlay, in tmpfs, charged to the cgroup like the compilers'
# memory). Reports the compile's wall time, the files compiled and the
# rate as MMCI-METRIC lines.
#   KBUILD_TARGETS   make targets (objects or dir/)     [mm/vmscan.o mm/filemap.o]
#   KBUILD_JOBS      parallel jobs                       [MMCI_CPUS]
# The defaults are matrix/real-workloads.yaml's: two of mm/'s largest
# objects, about 100 MiB of compiler each, side by side (docs/images.md).
# tinyconfig leaves CONFIG_SWAP and CONFIG_MEMCG off: compile objects the
# configuration builds.
set -eu
TARGETS=${KBUILD_TARGETS:-mm/vmscan.o mm/filemap.o}
CPUS=${MMCI_CPUS:-1}
JOBS=${KBUILD_JOBS:-$CPUS}
PREFIX=${MMCI_METRIC_PREFIX:-MMCI-METRIC:}
cd /usr/src/linux
echo "kbuild: make -j$JOBS $TARGETS; memory.max=${MMCI_MEMCG_MAX_MB:-?} MiB"

start=$(date +%s.%N)
# make's own output names each compiled file ("  CC      mm/vmscan.o").
set +e
make ARCH=x86_64 -j"$JOBS" $TARGETS >/tmp/kbuild.log 2>&1
rc=$?
set -e
end=$(date +%s.%N)
cat /tmp/kbuild.log
files=$(grep -c '^  CC ' /tmp/kbuild.log || true)
awk -v s="$start" -v e="$end" -v f="$files" -v p="$PREFIX" 'BEGIN {
    t = e - s
    printf "%s compile_s=%.2f files=%d files_per_min=%.3f\n", p, t, f, (t > 0 ? f * 60 / t : 0)
}'
exit $rc
