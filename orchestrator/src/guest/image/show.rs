//! `mmci image show`: what a built image holds, as text.

use std::fmt::Write;
use std::path::Path;

use super::ImageManifest;

/// The manifest as the terminal shows it: name, key, size, hash, then one
/// package per line.
pub fn render(m: &ImageManifest, path: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "image    {}", m.name);
    let _ = writeln!(s, "file     {}", path.display());
    let _ = writeln!(s, "recipe   {}", m.recipe.display());
    let _ = writeln!(s, "suite    {} ({})", m.suite, m.arch);
    let _ = writeln!(s, "key      {}", m.key);
    let _ = writeln!(
        s,
        "size     {} bytes ({:.1} MiB, erofs lz4hc)",
        m.size_bytes,
        m.size_bytes as f64 / 1048576.0
    );
    let _ = writeln!(s, "sha256   {}", m.sha256);
    let _ = writeln!(s, "built in {:.1} s", m.build_s);
    let _ = writeln!(s, "packages {}", m.packages.len());
    let width = m.packages.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &m.packages {
        let _ = writeln!(s, "  {:width$}  {}", p.name, p.version);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::image::Package;

    #[test]
    fn renders_the_package_table() {
        let m = ImageManifest {
            format: 1,
            name: "tools".into(),
            recipe: "/r/images/tools".into(),
            key: "0123456789abcdef".into(),
            suite: "bookworm".into(),
            arch: "amd64".into(),
            packages: vec![
                Package {
                    name: "bash".into(),
                    version: "5.2.15-2+b2".into(),
                },
                Package {
                    name: "stress-ng".into(),
                    version: "0.15.06-2".into(),
                },
            ],
            size_bytes: 3 << 20,
            sha256: "ab".repeat(32),
            built_unix: 0,
            build_s: 72.4,
        };
        insta::assert_snapshot!(render(
            &m,
            Path::new("/w/images/tools-0123456789abcdef/image.erofs")
        ));
    }
}
