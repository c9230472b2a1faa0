#!/bin/sh
# Scenario A's reproducer (mglru_iso_repro.sh) as a shell script: many
# workers writing an anonymous working set larger than the memory cgroup
# (16 MiB in the seed thread) over dm-delay swap, for a fixed time. It uses
# the job's parameters when mmci runs it and the thread's values otherwise,
# so the author's script runs unchanged outside mmci too.
THREADS=${MMCI_THREADS:-64}
WS_MB=${MMCI_WORKING_SET_MB:-48}
SECONDS_=${MMCI_DURATION_S:-60}
PER_KB=$((WS_MB * 1024 / THREADS))
echo "repro: $THREADS workers x ${PER_KB} KiB (${WS_MB} MiB) for ${SECONDS_} s"
stress-ng --vm "$THREADS" --vm-bytes "${PER_KB}k" --vm-keep --vm-method write64 \
    --timeout "${SECONDS_}s" --metrics-brief --yaml /tmp/repro.yaml
rc=$?
# stress-ng's YAML: "bogo-ops: N" and "bogo-ops-per-second-real-time: X".
ops=$(awk '/bogo-ops:/ { print $2; exit }' /tmp/repro.yaml)
rate=$(awk '/bogo-ops-per-second-real-time:/ { print $2; exit }' /tmp/repro.yaml)
[ -n "$ops" ] && echo "MMCI-METRIC: bogo_ops=$ops bogo_ops_per_s=$rate"
exit $rc
