//! Axes -> combinations, with GitHub Actions' `exclude` and `include`
//! rules, so that a matrix reads the way maintainers already know:
//!
//! 1. the cartesian product of the axes;
//! 2. `exclude` drops every combination matching all pairs of an entry;
//! 3. each `include` entry is added to every combination whose original
//!    axis values it does not overwrite; an entry added to none becomes a
//!    combination of its own.

use std::collections::BTreeMap;

use super::file::{Pos, Scalar};

/// A value and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub value: Scalar,
    pub pos: Pos,
}

/// One combination: key -> value.
pub type Combo = BTreeMap<String, Placed>;

/// Cartesian product of `axes`, in key order then value order.
pub fn product(axes: &BTreeMap<String, Vec<Placed>>) -> Vec<Combo> {
    let mut combos = vec![Combo::new()];
    for (key, values) in axes {
        let mut next = Vec::with_capacity(combos.len() * values.len());
        for c in &combos {
            for v in values {
                let mut c = c.clone();
                c.insert(key.clone(), v.clone());
                next.push(c);
            }
        }
        combos = next;
    }
    // An axis with no values empties the matrix, as in GitHub Actions.
    combos
}

fn matches(combo: &Combo, entry: &Combo) -> bool {
    entry
        .iter()
        .all(|(k, v)| combo.get(k).is_some_and(|c| c.value == v.value))
}

/// Applies `exclude` then `include` to the product of `axes`.
pub fn expand(
    axes: &BTreeMap<String, Vec<Placed>>,
    exclude: &[Combo],
    include: &[Combo],
) -> Vec<Combo> {
    let mut combos: Vec<Combo> = product(axes)
        .into_iter()
        .filter(|c| !exclude.iter().any(|e| matches(c, e)))
        .collect();
    let original = combos.len();
    for entry in include {
        let mut added = false;
        for combo in combos.iter_mut().take(original) {
            // Only the original axis values are protected; values added by an
            // earlier include may be overwritten by a later one.
            let conflicts = entry.iter().any(|(k, v)| {
                axes.contains_key(k) && combo.get(k).is_some_and(|c| c.value != v.value)
            });
            if !conflicts {
                for (k, v) in entry {
                    combo.insert(k.clone(), v.clone());
                }
                added = true;
            }
        }
        if !added {
            combos.push(entry.clone());
        }
    }
    combos
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(value: Scalar) -> Placed {
        Placed {
            value,
            pos: Pos { line: 1, column: 1 },
        }
    }

    fn axes(spec: &[(&str, &[Scalar])]) -> BTreeMap<String, Vec<Placed>> {
        spec.iter()
            .map(|(k, vs)| (k.to_string(), vs.iter().cloned().map(p).collect()))
            .collect()
    }

    fn combo(pairs: &[(&str, Scalar)]) -> Combo {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), p(v.clone())))
            .collect()
    }

    fn text(combos: &[Combo]) -> Vec<String> {
        combos
            .iter()
            .map(|c| {
                c.iter()
                    .map(|(k, v)| format!("{k}={}", v.value))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    }

    use Scalar::{Int, Text};

    fn s(x: &str) -> Scalar {
        Text(x.to_string())
    }

    #[test]
    fn product_and_exclude() {
        let a = axes(&[
            ("arch", &[s("x86_64"), s("arm64")]),
            ("threads", &[Int(64), Int(192)]),
        ]);
        assert_eq!(product(&a).len(), 4);
        let out = expand(
            &a,
            &[combo(&[("arch", s("arm64")), ("threads", Int(192))])],
            &[],
        );
        assert_eq!(
            text(&out),
            [
                "arch=x86_64,threads=64",
                "arch=x86_64,threads=192",
                "arch=arm64,threads=64"
            ]
        );
        // A partial entry drops every combination it matches.
        let out = expand(&a, &[combo(&[("arch", s("arm64"))])], &[]);
        assert_eq!(
            text(&out),
            ["arch=x86_64,threads=64", "arch=x86_64,threads=192"]
        );
    }

    /// The example of GitHub's documentation ("Expanding or adding matrix
    /// configurations"), with its documented result.
    #[test]
    fn include_follows_github_actions() {
        let a = axes(&[
            ("fruit", &[s("apple"), s("pear")]),
            ("animal", &[s("cat"), s("dog")]),
        ]);
        let include = [
            combo(&[("color", s("green"))]),
            combo(&[("color", s("pink")), ("animal", s("cat"))]),
            combo(&[("fruit", s("apple")), ("shape", s("circle"))]),
            combo(&[("fruit", s("banana"))]),
            combo(&[("fruit", s("banana")), ("animal", s("cat"))]),
        ];
        let mut out = text(&expand(&a, &[], &include));
        out.sort();
        // (Sorted: GitHub lists fruit-major order, ours is key-major.)
        assert_eq!(
            out,
            [
                "animal=cat,color=pink,fruit=apple,shape=circle",
                "animal=cat,color=pink,fruit=pear",
                "animal=cat,fruit=banana",
                "animal=dog,color=green,fruit=apple,shape=circle",
                "animal=dog,color=green,fruit=pear",
                "fruit=banana",
            ]
        );
    }

    #[test]
    fn empty_axis_empties_the_product_but_include_still_adds() {
        let a = axes(&[("threads", &[])]);
        assert!(expand(&a, &[], &[]).is_empty());
        let out = expand(&a, &[], &[combo(&[("threads", Int(8))])]);
        assert_eq!(text(&out), ["threads=8"]);
    }
}
