//! The order the runs of a plan start in: per repeat, per cell, one block
//! of each kernel's run (interleaved, so that a host that drifts over the
//! matrix hits every kernel alike), the kernels shuffled within each block
//! by a seed (so that base does not always run first: whatever changes
//! from the first run of a block to the next, a warm page cache, a
//! neighbour's load starting, falls on either kernel at random). A
//! randomised complete block design: the order is a pure function of the
//! plan's slots and the seed, which the results dir records
//! ([`super::Plan::order_seed`]), so a resumed run continues the same order
//! and a shard orders its cells as the whole plan would.

use super::Slot;

/// SplitMix64 (Steele, Lea and Flood 2014): a few lines whose output is
/// fixed by its definition, so a seed recorded in a results dir orders
/// the same runs in any later mmci. A crate's generic shuffle may change
/// its algorithm between versions (rand's did), which would break resume.
/// Also the analysis' resampling generator (`analysis::resample`), for the
/// same reason: a recorded seed draws the same verdicts later.
#[derive(Clone, Copy, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), without modulo bias (Lemire's
    /// multiply-shift with rejection).
    pub fn below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// FNV-1a of a block's key: its cell id and repeat, so that a block's
/// order depends on the seed and the block alone, not on which other cells
/// (a shard) or blocks run.
fn block_key(cell: &str, repeat: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in cell.bytes().chain(repeat.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `slots` (as [`super::Plan::slots`] gives them: blocks of one cell and
/// repeat, each kernel once) in the order they run with `seed`: every
/// block's kernels shuffled (Fisher-Yates), the blocks in place. `None`:
/// the plan's order, baseline first in every block (results dirs written
/// before the order had a seed continue so).
pub fn run_order(slots: &[Slot], seed: Option<u64>) -> Vec<Slot> {
    let Some(seed) = seed else {
        return slots.to_vec();
    };
    let mut out = Vec::with_capacity(slots.len());
    let mut rest = slots;
    while let Some(first) = rest.first() {
        let len = rest
            .iter()
            .take_while(|s| s.cell == first.cell && s.repeat == first.repeat)
            .count();
        let mut block = rest[..len].to_vec();
        let mut rng = SplitMix64(seed ^ block_key(&first.cell, first.repeat));
        for i in (1..block.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            block.swap(i, j);
        }
        out.extend(block);
        rest = &rest[len..];
    }
    out
}

/// A seed for a new results dir: the OS's randomness as std's hash maps
/// draw it (no dependency for one number), mixed with the time.
pub fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    // Within JSON's exact integers, so that any reader of manifest.json
    // (a script, a browser) gets the seed back unchanged.
    h.finish() & ((1 << 53) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(cells: &[&str], variants: &[&str], repeats: u32) -> Vec<Slot> {
        let mut out = vec![];
        for repeat in 1..=repeats {
            for c in cells {
                for v in variants {
                    out.push(Slot {
                        cell: c.to_string(),
                        variant: v.to_string(),
                        repeat,
                    });
                }
            }
        }
        out
    }

    fn text(order: &[Slot]) -> Vec<String> {
        order
            .iter()
            .map(|s| format!("{}:{}:{}", s.cell, s.variant, s.repeat))
            .collect()
    }

    /// The generator is SplitMix64 as published: its first outputs for
    /// seed 0 and 1234567 (the reference C code's test values).
    #[test]
    fn the_generator_is_splitmix64() {
        let mut r = SplitMix64(0);
        assert_eq!(
            [r.next(), r.next(), r.next()],
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f
            ]
        );
        let mut r = SplitMix64(1_234_567);
        assert_eq!(
            [r.next(), r.next()],
            [6_457_827_717_110_365_317, 3_203_168_211_198_807_973]
        );
    }

    /// The order for given seeds, written out: a change to the algorithm
    /// fails here before it reorders a recorded results dir on resume. The
    /// orders were computed apart, by a 30-line Python transcription of
    /// this module (SplitMix64, FNV-1a of the cell's bytes and the repeat's
    /// 4 little-endian bytes, Lemire's bounded draw, Fisher-Yates from the
    /// end), not read back from this code.
    #[test]
    fn the_order_is_a_pure_function_of_the_slots_and_the_seed() {
        let s = slots(&["c1", "c2"], &["base", "patched"], 2);
        let cases: &[(Option<u64>, [&str; 8])] = &[
            (
                None,
                [
                    "c1:base:1",
                    "c1:patched:1",
                    "c2:base:1",
                    "c2:patched:1",
                    "c1:base:2",
                    "c1:patched:2",
                    "c2:base:2",
                    "c2:patched:2",
                ],
            ),
            (
                Some(1),
                [
                    "c1:base:1",
                    "c1:patched:1",
                    "c2:patched:1",
                    "c2:base:1",
                    "c1:patched:2",
                    "c1:base:2",
                    "c2:base:2",
                    "c2:patched:2",
                ],
            ),
            (
                Some(2),
                [
                    "c1:patched:1",
                    "c1:base:1",
                    "c2:base:1",
                    "c2:patched:1",
                    "c1:base:2",
                    "c1:patched:2",
                    "c2:base:2",
                    "c2:patched:2",
                ],
            ),
        ];
        for (seed, want) in cases {
            assert_eq!(text(&run_order(&s, *seed)), *want, "seed {seed:?}");
            // The same again: nothing but the arguments decides.
            assert_eq!(run_order(&s, *seed), run_order(&s, *seed));
        }
    }

    /// Every block keeps its runs (one per kernel) in its place; over many
    /// blocks each kernel comes first about as often (3 kernels: a third).
    #[test]
    fn blocks_are_permuted_in_place_and_fairly() {
        let cells: Vec<String> = (0..400).map(|i| format!("cell{i}")).collect();
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        let s = slots(&cells, &["base", "a", "b"], 1);
        let order = run_order(&s, Some(42));
        let mut first = std::collections::BTreeMap::<&str, usize>::new();
        for (plan, ran) in s.chunks(3).zip(order.chunks(3)) {
            let mut sorted = ran.to_vec();
            sorted.sort_by_key(|x| ["base", "a", "b"].iter().position(|v| *v == x.variant));
            assert_eq!(sorted, plan);
            *first.entry(ran[0].variant.as_str()).or_default() += 1;
        }
        // 400 blocks: 133 each expected, sd 9.4; 4 sd either side.
        for v in ["base", "a", "b"] {
            let n = first[v];
            assert!((95..=171).contains(&n), "{v} first in {n} of 400 blocks");
        }
    }

    /// A shard's cells run in the order the whole plan gives them, and a
    /// resumed invocation's pending runs keep the recorded order.
    #[test]
    fn a_shard_and_a_resume_keep_the_order() {
        let whole = run_order(&slots(&["c1", "c2", "c3"], &["base", "x"], 3), Some(7));
        let shard = run_order(&slots(&["c2"], &["base", "x"], 3), Some(7));
        let of_c2: Vec<Slot> = whole.iter().filter(|s| s.cell == "c2").cloned().collect();
        assert_eq!(shard, of_c2);
        // Resume: the first 5 finished; what is left runs in the same order.
        let finished: Vec<Slot> = whole[..5].to_vec();
        let again = run_order(&slots(&["c1", "c2", "c3"], &["base", "x"], 3), Some(7));
        let pending: Vec<Slot> = again
            .into_iter()
            .filter(|s| !finished.contains(s))
            .collect();
        assert_eq!(pending, whole[5..]);
    }

    #[test]
    fn fresh_seeds_differ_and_fit_json() {
        let (a, b) = (fresh_seed(), fresh_seed());
        assert_ne!(a, b);
        assert!(a < 1 << 53 && b < 1 << 53);
    }
}
