//! Shards: `--shard i/n`, and the cells of one shard, balanced by
//! estimated run time.

use super::*;

/// `i/n` (1-based), as given to `--shard`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: expected I/N, e.g. 2/4"))?;
        let index: u32 = i.parse().map_err(|_| format!("`{s}`: I is not a number"))?;
        let count: u32 = n.parse().map_err(|_| format!("`{s}`: N is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("`{s}`: need 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Estimated guest seconds of one run of `cell`: boot and setup, the
/// workload, the after-snapshots. Under TCG a boot costs ~2 s and guest
/// set-up (swap, dm, cgroup) and teardown about 15 s more (measured).
pub fn estimated_run_seconds(cell: &Cell) -> f64 {
    20.0 + cell.job.duration_s as f64
}

/// The shard (1-based) of every cell when the plan is split `count` ways:
/// cells go, most expensive first, to the shard with the least estimated
/// work so far (ties: lowest index). Deterministic for a given plan, so N
/// machines given 1/N..N/N split it exactly.
pub fn shard_assignment(cells: &[Cell], count: u32) -> BTreeMap<String, u32> {
    let mut order: Vec<&Cell> = cells.iter().collect();
    order.sort_by(|a, b| {
        estimated_run_seconds(b)
            .total_cmp(&estimated_run_seconds(a))
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut load = vec![0.0f64; count.max(1) as usize];
    let mut shard_of = BTreeMap::new();
    for c in order {
        let (i, _) = load
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(&b.0)))
            .expect("count >= 1");
        load[i] += estimated_run_seconds(c);
        shard_of.insert(c.id.clone(), i as u32 + 1);
    }
    shard_of
}

/// The cells of shard `shard` (see [`shard_assignment`]), in the file's
/// order.
pub fn shard_cells(cells: &[Cell], shard: Shard) -> Vec<&Cell> {
    let shard_of = shard_assignment(cells, shard.count);
    cells
        .iter()
        .filter(|c| shard_of.get(&c.id) == Some(&shard.index))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::plan::tests::plan_of;

    #[test]
    fn shards_partition_the_cells() {
        let p = plan_of("axes:\n  threads: [1, 2, 3, 4, 5, 6, 7]\n  duration_s: [5, 60, 20]\n")
            .unwrap();
        for n in 1..=8u32 {
            let mut seen: BTreeMap<String, u32> = BTreeMap::new();
            let mut loads = vec![];
            for i in 1..=n {
                let mine = shard_cells(&p.cells, Shard { index: i, count: n });
                loads.push(mine.iter().map(|c| estimated_run_seconds(c)).sum::<f64>());
                for c in mine {
                    *seen.entry(c.id.clone()).or_default() += 1;
                }
            }
            assert_eq!(seen.len(), p.cells.len(), "n={n}: every cell in a shard");
            assert!(
                seen.values().all(|&k| k == 1),
                "n={n}: no cell in two shards"
            );
            // Greedy largest-first keeps shards within one cell of each other.
            let (lo, hi) = loads
                .iter()
                .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
            assert!(hi - lo <= 80.0, "n={n}: loads {loads:?}");
        }
    }

    #[test]
    fn shard_syntax() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        for bad in ["0/4", "5/4", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
