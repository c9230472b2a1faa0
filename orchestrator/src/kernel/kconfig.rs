//! Kconfig fragments: what they request, and whether the final .config has it.
//! `merge_config.sh` only warns when a dependency drops an option; mmci makes
//! every requested option a hard requirement.

use std::collections::BTreeMap;

/// One `CONFIG_X=value` (or `# CONFIG_X is not set`, value "n") request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub name: String,
    pub value: String,
    /// Where it was asked for: "kernels/mm.config:12".
    pub origin: String,
}

/// Parses a fragment; `origin` names the file in errors.
pub fn parse_fragment(text: &str, origin: &str) -> Vec<Request> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        let at = format!("{origin}:{}", i + 1);
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some(name) = rest.strip_suffix(" is not set") {
                if name.starts_with("CONFIG_") {
                    out.push(Request {
                        name: name.to_string(),
                        value: "n".into(),
                        origin: at,
                    });
                }
            }
            continue;
        }
        if let Some((name, value)) = line.split_once('=') {
            if name.starts_with("CONFIG_") {
                out.push(Request {
                    name: name.to_string(),
                    value: value.to_string(),
                    origin: at,
                });
            }
        }
    }
    out
}

/// The values of a .config (unset options are absent).
pub fn parse_config(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The compiler a .config was made with: its `CONFIG_CC_VERSION_TEXT`
/// (`gcc (Debian 12.2.0-14+deb12u1) 12.2.0`), unquoted.
pub fn compiler(config: &BTreeMap<String, String>) -> Option<String> {
    let v = config.get("CONFIG_CC_VERSION_TEXT")?;
    let v = v.trim().trim_matches('"').replace("\\\"", "\"");
    (!v.is_empty()).then_some(v)
}

/// The transparent hugepage mode the kernel boots with (`always`,
/// `madvise`, `never`), or `not built` without CONFIG_TRANSPARENT_HUGEPAGE.
/// mmci's guests never write /sys/kernel/mm/transparent_hugepage, so this
/// default is the mode every run had.
pub fn thp_mode(config: &BTreeMap<String, String>) -> String {
    let set = |k: &str| config.get(k).is_some_and(|v| v == "y");
    if !set("CONFIG_TRANSPARENT_HUGEPAGE") {
        return "not built".into();
    }
    ["always", "madvise", "never"]
        .into_iter()
        .find(|m| set(&format!("CONFIG_TRANSPARENT_HUGEPAGE_{}", m.to_uppercase())))
        .unwrap_or("always")
        .to_string()
}

/// A requested option the final .config does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub request: Request,
    /// What the .config has instead (None: not set).
    pub found: Option<String>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.request;
        match &self.found {
            Some(v) => write!(
                f,
                "{}={} requested at {}, final .config has {v}",
                r.name, r.value, r.origin
            ),
            None => write!(
                f,
                "{}={} requested at {}, not set in the final .config (a dependency is missing)",
                r.name, r.value, r.origin
            ),
        }
    }
}

/// Every request that the final config does not satisfy. Of several
/// requests for one option only the last counts: the fragments are merged
/// in order and a later one overrides an earlier one (a fragment that
/// turns CONFIG_SWAP off over kernels/mm.config's `=y`).
pub fn check(config: &BTreeMap<String, String>, requests: &[Request]) -> Vec<Mismatch> {
    let last: BTreeMap<&str, usize> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    requests
        .iter()
        .enumerate()
        .filter(|(i, r)| last.get(r.name.as_str()) == Some(i))
        .map(|(_, r)| r)
        .filter_map(|r| {
            let found = config.get(&r.name);
            let ok = match (r.value.as_str(), found) {
                ("n", None) => true,
                (want, Some(have)) => want == have,
                (_, None) => false,
            };
            (!ok).then(|| Mismatch {
                request: r.clone(),
                found: found.cloned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAGMENT: &str = "# comment\nCONFIG_SWAP=y\n# CONFIG_DEBUG_INFO is not set\nCONFIG_NR_CPUS=64\n\nCONFIG_CMDLINE=\"x y\"\n";

    #[test]
    fn fragment_requests_with_origins() {
        let r = parse_fragment(FRAGMENT, "kernels/mm.config");
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].name, "CONFIG_SWAP");
        assert_eq!(r[0].origin, "kernels/mm.config:2");
        assert_eq!(r[1].value, "n");
        assert_eq!(r[3].value, "\"x y\"");
    }

    #[test]
    fn check_reports_missing_and_wrong_values() {
        let config = parse_config("CONFIG_SWAP=y\nCONFIG_NR_CPUS=2\n# CONFIG_X is not set\n");
        let mism = check(&config, &parse_fragment(FRAGMENT, "f"));
        let names: Vec<_> = mism.iter().map(|m| m.request.name.as_str()).collect();
        assert_eq!(names, ["CONFIG_NR_CPUS", "CONFIG_CMDLINE"]);
        assert_eq!(mism[0].found.as_deref(), Some("2"));
        assert!(mism[1].to_string().contains("not set in the final .config"));
        assert!(mism[0].to_string().contains("f:4"));
    }

    #[test]
    fn a_later_fragment_overrides_an_earlier_one() {
        let mut requests = parse_fragment("CONFIG_SWAP=y\nCONFIG_ZRAM=y\n", "kernels/mm.config");
        requests.extend(parse_fragment(
            "# CONFIG_SWAP is not set\n",
            "noswap.config",
        ));
        // (final .config, options reported)
        let cases: [(&str, &[&str]); 3] = [
            // The override took: nothing to report.
            ("CONFIG_ZRAM=y\n", &[]),
            // The override did not: reported against the last request.
            ("CONFIG_SWAP=y\nCONFIG_ZRAM=y\n", &["CONFIG_SWAP"]),
            // ZRAM depends on SWAP: missing, its own request named.
            ("", &["CONFIG_ZRAM"]),
        ];
        for (config, want) in cases {
            let mism = check(&parse_config(config), &requests);
            let names: Vec<_> = mism.iter().map(|m| m.request.name.as_str()).collect();
            assert_eq!(names, want, "{config:?}");
        }
        let config = parse_config("CONFIG_SWAP=y\nCONFIG_ZRAM=y\n");
        assert!(check(&config, &requests)[0]
            .to_string()
            .contains("noswap.config:1"));
    }

    #[test]
    fn compiler_and_thp_from_a_config() {
        // (config text, compiler, THP mode)
        let cases: &[(&str, Option<&str>, &str)] = &[
            (
                "CONFIG_CC_VERSION_TEXT=\"gcc (Debian 12.2.0-14+deb12u1) 12.2.0\"\nCONFIG_CC_IS_GCC=y\nCONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_TRANSPARENT_HUGEPAGE_ALWAYS=y\n# CONFIG_TRANSPARENT_HUGEPAGE_MADVISE is not set\n",
                Some("gcc (Debian 12.2.0-14+deb12u1) 12.2.0"),
                "always",
            ),
            (
                "CONFIG_CC_VERSION_TEXT=\"aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0\"\nCONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n",
                Some("aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0"),
                "madvise",
            ),
            (
                "CONFIG_CC_VERSION_TEXT=\"Debian clang version 16.0.6 (15)\"\nCONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_TRANSPARENT_HUGEPAGE_NEVER=y\n",
                Some("Debian clang version 16.0.6 (15)"),
                "never",
            ),
            ("CONFIG_CC_VERSION_TEXT=\"\"\n# CONFIG_TRANSPARENT_HUGEPAGE is not set\n", None, "not built"),
            ("", None, "not built"),
        ];
        for (text, cc, thp) in cases {
            let c = parse_config(text);
            assert_eq!(compiler(&c).as_deref(), *cc, "{text}");
            assert_eq!(thp_mode(&c), *thp, "{text}");
        }
    }
}
