//! What `mmci run` needs before any work: QEMU and guest-init for each
//! arch, where series named by message-id or pull request come from, and
//! each kernel variant's source.

use std::collections::BTreeMap;

use crate::arch::Arch;
use crate::error::AppError;
use crate::guest::bin as guest_bin;
use crate::kernel::series::SeriesSource;
use crate::kernel::KernelSource;
use crate::matrix::Plan;

/// QEMU and guest-init for `arch`, before any work.
pub fn guest_prerequisites(arch: Arch) -> Result<&'static [u8], AppError> {
    let qemu = arch.qemu_binary();
    if crate::host::tools::on_path(qemu).is_none() {
        return Err(AppError::MissingQemu(qemu.to_string()));
    }
    guest_bin::guest_init(arch).ok_or(AppError::MissingGuestInit {
        arch,
        triple: guest_bin::guest_triple(arch),
    })
}

/// Where series named by message-id or pull request are fetched from.
#[derive(Clone, Debug)]
pub struct Endpoints {
    pub lore_url: String,
    pub github_api: String,
    /// Never logged or written to results.
    pub github_token: Option<String>,
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints {
            lore_url: crate::kernel::series::fetch::LORE_URL.to_string(),
            github_api: crate::kernel::series::fetch::GITHUB_API.to_string(),
            github_token: std::env::var("GITHUB_TOKEN").ok(),
        }
    }
}

/// Each variant's kernel source: the command line's base (tarball or
/// tree, fragments, jobs) with the variant's tree, series or image on top.
pub fn variant_sources(
    plan: &Plan,
    base: &KernelSource,
    endpoints: &Endpoints,
    cli_series: Option<&SeriesSource>,
) -> BTreeMap<String, KernelSource> {
    plan.variants
        .iter()
        .map(|v| {
            let mut s = base.clone();
            s.series = None;
            if let Some(i) = &v.image {
                s.image = Some(i.clone());
            }
            if let Some(t) = &v.tree {
                s.tree = Some(crate::kernel::tree::TreeSpec::parse(
                    t,
                    v.git_ref.as_deref(),
                ));
            }
            if let Some(p) = &v.series {
                s.series = Some(SeriesSource::from_path(p));
            }
            if let Some(id) = &v.lore {
                s.series = Some(SeriesSource::Lore {
                    message_id: id.clone(),
                    base_url: endpoints.lore_url.clone(),
                });
            }
            if let Some((repo, number)) = v
                .github_pr
                .as_deref()
                .and_then(crate::kernel::series::fetch::parse_pull_request)
            {
                s.series = Some(SeriesSource::GitHub {
                    api: endpoints.github_api.clone(),
                    repo,
                    number,
                    token: endpoints.github_token.clone(),
                });
            }
            if let Some(pw) = &v.patchwork {
                s.series = Some(SeriesSource::Patchwork {
                    url: pw.url.clone(),
                    series: pw.series,
                });
            }
            // `--revision` belongs to the command line's series; a matrix
            // kernel's series has its own `revision:`.
            s.series_revision = v.revision;
            if v.from_command_line {
                s.series = cli_series.cloned();
                s.series_revision = base.series_revision;
            }
            (v.name.clone(), s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::plan::Variant;

    fn plan_with(variants: Vec<Variant>) -> Plan {
        let mut plan = crate::matrix::plan::from_text(
            "axes:\n  threads: [1]\n",
            "m.yaml",
            std::path::Path::new("."),
            &Default::default(),
        )
        .unwrap();
        plan.variants = variants;
        plan
    }

    #[test]
    fn each_variant_keeps_its_own_revision() {
        let series = |name: &str, revision| Variant {
            name: name.into(),
            series: Some("t.mbox".into()),
            revision,
            ..Variant::base()
        };
        let cli = Variant {
            name: "patched".into(),
            from_command_line: true,
            ..Variant::base()
        };
        let plan = plan_with(vec![
            Variant::base(),
            series("v1", Some(1)),
            series("v2", None),
            cli,
        ]);
        // `--revision 3` on the command line: only for its own series.
        let base = KernelSource {
            series_revision: Some(3),
            ..KernelSource::bundled()
        };
        let cli_series = SeriesSource::from_path(std::path::Path::new("cli.mbox"));
        let sources = variant_sources(&plan, &base, &Endpoints::default(), Some(&cli_series));
        let revisions: Vec<(&str, Option<u32>)> = ["base", "v1", "v2", "patched"]
            .iter()
            .map(|n| (*n, sources[*n].series_revision))
            .collect();
        assert_eq!(
            revisions,
            [
                ("base", None),
                ("v1", Some(1)),
                ("v2", None),
                ("patched", Some(3))
            ]
        );
        assert!(sources["base"].series.is_none());
        assert!(sources["v1"].series.is_some());
    }
}
