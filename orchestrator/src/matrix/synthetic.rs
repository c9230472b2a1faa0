//! Synthetic matrices of any size, for the benchmarks and the tests of
//! expansion and analysis at scale.

/// A matrix text of about `cells` cells: 100 thread counts x
/// `cells / 100` working sets, plus an extra thread count that `exclude`
/// removes again and an `include` that extends every cell, so that every
/// step of the expansion is exercised.
pub fn synthetic_matrix(cells: usize) -> String {
    let list = |n: usize| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "description: synthetic\naxes:\n  arch: [x86_64]\n  vcpus: [2]\n  threads: [{}]\n  working_set_mb: [{}]\nexclude:\n  - {{threads: 101}}\ninclude:\n  - {{mglru: true}}\nrepeats: 3\n",
        list(101),
        list(cells.div_ceil(100).max(1)),
    )
}
