#!/bin/sh
# Redis under memory-cgroup pressure: one server (unix socket only, no
# persistence) and redis-benchmark in the same cgroup. Fill a keyspace
# larger than memory.max with pipelined SETs, then read it back with GETs
# at random keys, and report redis-benchmark's figures as MMCI-METRIC lines.
#   REDIS_KEYS          keyspace size (random keys in 0..KEYS-1)   [20000]
#   REDIS_VALUE_BYTES   value size                                  [2048]
#   REDIS_GETS          GET requests in the read phase              [10000]
# The defaults are matrix/real-workloads.yaml's: about 45 MiB in Redis
# against a 40 MiB memory.max, 2 minutes under TCG (docs/images.md).
#   REDIS_CLIENTS       parallel connections                        [8]
set -eu
KEYS=${REDIS_KEYS:-20000}
VALUE=${REDIS_VALUE_BYTES:-2048}
GETS=${REDIS_GETS:-10000}
CLIENTS=${REDIS_CLIENTS:-8}
SOCK=/run/redis.sock
PREFIX=${MMCI_METRIC_PREFIX:-MMCI-METRIC:}

redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' \
    --appendonly no --protected-mode no --loglevel warning --dir /tmp &
i=0
until redis-cli -s "$SOCK" ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 600 ]; then echo "redis-server did not start" >&2; exit 1; fi
    sleep 0.1
done
echo "redis-server up; memory.max=${MMCI_MEMCG_MAX_MB:-?} MiB, $KEYS keys x $VALUE bytes"

# csv line of redis-benchmark -> name=value pairs (rps, p50, p99 in ms).
metrics() {
    awk -F'"' -v t="$1" -v p="$PREFIX" \
        '$2 == t { printf "%s %s_rps=%s %s_p50_ms=%s %s_p99_ms=%s\n", p, tolower(t), $4, tolower(t), $10, tolower(t), $14 }'
}

start=$(date +%s)
redis-benchmark -s "$SOCK" -t set -n $((KEYS * 2)) -r "$KEYS" -d "$VALUE" -c "$CLIENTS" -P 16 --csv | tee /tmp/set.csv | metrics SET
fill=$(( $(date +%s) - start ))
used=$(redis-cli -s "$SOCK" info memory | awk -F: '/^used_memory:/ { printf "%.1f", $2 / 1048576 }')
keys=$(redis-cli -s "$SOCK" dbsize)
echo "$PREFIX fill_s=$fill used_memory_mb=$used keys=$keys"

redis-benchmark -s "$SOCK" -t get -n "$GETS" -r "$KEYS" -c "$CLIENTS" --csv | tee /tmp/get.csv | metrics GET
redis-cli -s "$SOCK" info stats | grep -E '^(keyspace_hits|keyspace_misses):' || true
redis-cli -s "$SOCK" shutdown nosave >/dev/null 2>&1 || true
wait
