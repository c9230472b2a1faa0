//! Which builds are trusted: who writes the configuration's shared object
//! dir and ccache, and who may build where the sandbox cannot run.

/// Which builds are the operator's own code, and which builds may go on
/// where the sandbox cannot run (see [`sandbox::probe`]). The default
/// trusts nothing and refuses every build without the sandbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The tree is the operator's own tarball (the Debian package
    /// mmci-setup installs), not a tree fetched by URL.
    pub operator_tarball: bool,
    /// The commit built is a tip the operator configured (the tree's ref,
    /// a cascade entry; see [`crate::series::base::BaseChoice::trusted`]),
    /// not a commit a series named. Only such a build writes the object
    /// dir and the ccache every later build of the configuration reads:
    /// any other base is built as a series is, in a private copy.
    pub trusted_base: bool,
    /// `--unsandboxed-builds`: series and fetched trees too.
    pub allow_unsandboxed: bool,
}

impl SandboxPolicy {
    /// Builds the operator's own code, as when they build it by hand.
    pub fn operator() -> SandboxPolicy {
        SandboxPolicy {
            operator_tarball: true,
            trusted_base: true,
            allow_unsandboxed: false,
        }
    }

    /// Is a build of this base (with a series or not) the shared
    /// baseline's, which writes the configuration's object dir?
    pub fn writes_shared_objects(&self, with_series: bool) -> bool {
        self.trusted_base && !with_series
    }

    /// May a build of this tree (with a series or not) run unsandboxed?
    pub fn allows_unsandboxed(&self, with_series: bool) -> bool {
        self.allow_unsandboxed || (self.operator_tarball && self.writes_shared_objects(with_series))
    }

    /// Must ccache be read-only for this build? Only the operator's own
    /// tarball at a trusted tip writes it.
    pub fn ccache_read_only(&self, with_series: bool) -> bool {
        !(self.operator_tarball && self.writes_shared_objects(with_series))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Who writes the shared object dir and ccache, and who may build
    /// without the sandbox: only the operator's tarball at a trusted tip.
    #[test]
    fn sandbox_policy_by_base_and_series() {
        let p = |operator_tarball, trusted_base, allow_unsandboxed| SandboxPolicy {
            operator_tarball,
            trusted_base,
            allow_unsandboxed,
        };
        // (policy, with series) -> (writes shared objects, unsandboxed ok, ccache read-only)
        for (policy, series, want) in [
            (p(true, true, false), false, (true, true, false)),
            (p(true, true, false), true, (false, false, true)),
            // A base a series named (an ancestor of a fetched ref): private.
            (p(true, false, false), false, (false, false, true)),
            // A fetched tree's configured tip: shared objects, but ccache
            // read-only and never unsandboxed without the flag.
            (p(false, true, false), false, (true, false, true)),
            (p(false, false, false), true, (false, false, true)),
            (p(false, false, true), true, (false, true, true)),
            (SandboxPolicy::default(), false, (false, false, true)),
        ] {
            assert_eq!(
                (
                    policy.writes_shared_objects(series),
                    policy.allows_unsandboxed(series),
                    policy.ccache_read_only(series)
                ),
                want,
                "{policy:?} series={series}"
            );
        }
    }
}
