#!/usr/bin/env bash
# What the private object dir of an untrusted (series) build costs: the
# patched rebuild as mmci did it before (make in the object dir trusted
# builds share) against now (a `cp -a --reflink=auto` copy of that dir,
# then the same make in the copy), side by side, interleaved, N rounds,
# medians. The patch appends an unused function to mm/vmscan.c.
#
# Uses the work dir's bundled x86_64 checkout and object dir (build them
# first: `mmci kernel build`), under the checkout's lock, and leaves both
# as they were. Usage: tools/patched-rebuild-cost.sh [ROUNDS] (default 3)
set -euo pipefail
rounds=${1:-3}
work=${MMCI_WORK_DIR:-$HOME/.cache/mmci}
checkout=$(ls -d "$work"/checkouts/linux-source-*-x86_64 | head -n1)
objs=$(ls -d "$work"/objs/linux-source-*-x86_64-* | grep -v '\.series-' | head -n1)
lock="$work/locks/checkout-$(basename "$checkout").lock"
scratch=$(mktemp -d "$work/objs/.rebuild-cost.XXXXXX")
trap 'rm -rf "$scratch"; git -C "$checkout" checkout -q -f HEAD -- mm/vmscan.c' EXIT
jobs=$(nproc)

exec 9>"$lock"
flock 9

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }
make_in() {
    make -s -C "$checkout" ARCH=x86_64 O="$1" -j"$jobs" bzImage \
        KBUILD_BUILD_TIMESTAMP="2000-01-01 00:00:00 UTC" KBUILD_BUILD_USER=mmci KBUILD_BUILD_HOST=mmci \
        >/dev/null 2>&1
}

shared=() private=() copy=()
for i in $(seq "$rounds"); do
    # Before: the shared dir itself, here a copy of it so that the real one
    # stays untouched (same files, same mtimes: the same incremental work).
    rm -rf "$scratch/shared" "$scratch/private"
    cp -a --reflink=auto "$objs" "$scratch/shared"
    printf '\nstatic int mmci_cost_%s(void) { return %s; }\n' "$i" "$i" >>"$checkout/mm/vmscan.c"
    t0=$(now); make_in "$scratch/shared"; t1=$(now)
    shared+=("$(echo "$t1 - $t0" | bc)")
    # Now: copy the trusted dir, then the same make in the copy.
    t0=$(now); cp -a --reflink=auto "$objs" "$scratch/private"; t1=$(now)
    make_in "$scratch/private"; t2=$(now)
    copy+=("$(echo "$t1 - $t0" | bc)")
    private+=("$(echo "$t2 - $t0" | bc)")
    git -C "$checkout" checkout -q -f HEAD -- mm/vmscan.c
done
size=$(du -sh "$objs" | cut -f1)
m_shared=$(printf '%s\n' "${shared[@]}" | median)
m_private=$(printf '%s\n' "${private[@]}" | median)
m_copy=$(printf '%s\n' "${copy[@]}" | median)
echo "object dir $objs ($size), $rounds rounds, make -j$jobs"
echo "patched rebuild, shared object dir (before): median ${m_shared} s  (${shared[*]})"
echo "patched rebuild, private copy (now):         median ${m_private} s  (${private[*]})"
echo "  of which the copy:                         median ${m_copy} s  (${copy[*]})"
echo "ratio now/before: $(echo "scale=2; $m_private / $m_shared" | bc)"
