//! An image recipe, `images/<name>/image.yaml`: the Debian suite, the
//! packages, the files and build commands to add. Parsed with serde and
//! serde-saphyr like matrix files: unknown keys are errors, and every error
//! found after parsing names its line and column too.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

/// The file name of a recipe inside its folder.
pub const RECIPE_FILE: &str = "image.yaml";

/// Suites mmci builds from: the ones Debian still publishes with security
/// updates (their `-updates` and `-security` suites are added).
pub const SUITES: [&str; 2] = ["bookworm", "trixie"];

/// A recipe as written.
///
/// ```yaml
/// description: a shell, coreutils, procps and stress-ng
/// suite: bookworm
/// packages: [procps, stress-ng]
/// files:
///   - {src: scripts/repro.sh, dest: /usr/local/bin/repro, mode: "0755"}
/// run:
///   - useradd -m bench
/// ```
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeFile {
    #[serde(default)]
    pub description: Option<String>,
    pub suite: Spanned<String>,
    /// Debian binary packages, on top of the suite's Essential set.
    #[serde(default)]
    pub packages: Vec<Spanned<String>>,
    #[serde(default)]
    pub files: Vec<Spanned<FileEntry>>,
    /// Shell commands run in the image's root (chroot) after the packages
    /// and files are in, in order; the build fails at the first that fails.
    #[serde(default)]
    pub run: Vec<Spanned<String>>,
}

/// A file from the recipe's folder copied into the image.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Relative to the recipe's folder, and inside it.
    pub src: PathBuf,
    /// Absolute path in the image.
    pub dest: String,
    /// Octal permissions, "0755"; default "0644".
    #[serde(default)]
    pub mode: Option<String>,
}

/// A validated recipe, paths resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipe {
    pub name: String,
    /// The recipe's folder.
    pub dir: PathBuf,
    pub description: Option<String>,
    pub suite: String,
    /// (package, line) in the order written.
    pub packages: Vec<(String, u64)>,
    pub files: Vec<File>,
    pub run: Vec<String>,
}

/// A file to add, its source resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    pub src: PathBuf,
    pub dest: String,
    pub mode: u32,
}

/// A recipe that cannot be used: file, position and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {pos}{what}")]
pub struct RecipeError {
    pub file: String,
    pub pos: String,
    pub what: String,
}

fn at<T>(file: &Path, s: Option<&Spanned<T>>, what: impl Into<String>) -> RecipeError {
    RecipeError {
        file: file.display().to_string(),
        pos: s
            .map(|s| {
                format!(
                    "line {} column {}: ",
                    s.referenced.line(),
                    s.referenced.column()
                )
            })
            .unwrap_or_default(),
        what: what.into(),
    }
}

/// Parses a recipe's text; the error text starts with "line L column C".
pub fn parse(text: &str) -> Result<RecipeFile, String> {
    serde_saphyr::from_str(text).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_string();
        first.strip_prefix("error: ").unwrap_or(&first).to_string()
    })
}

/// Debian policy 5.6.1: lower case letters, digits, `+ - .`, at least two
/// characters, starting with a letter or digit.
pub fn valid_package_name(name: &str) -> bool {
    name.len() >= 2
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
}

/// An absolute path in the image without `..`, `.` or empty components.
fn valid_dest(dest: &str) -> bool {
    dest.starts_with('/')
        && dest.len() > 1
        && Path::new(dest)
            .components()
            .skip(1)
            .all(|c| matches!(c, Component::Normal(_)))
        && !dest.ends_with('/')
}

/// A relative path that stays inside its base folder.
fn inside(src: &Path) -> bool {
    !src.as_os_str().is_empty() && src.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Where a recipe given as NAME or PATH is: a folder with image.yaml
/// (PATH), or `<images_dir>/NAME`.
pub fn locate(name_or_path: &str, images_dir: &Path) -> PathBuf {
    let p = Path::new(name_or_path);
    if p.join(RECIPE_FILE).is_file() || name_or_path.contains('/') {
        p.to_path_buf()
    } else {
        images_dir.join(name_or_path)
    }
}

/// Reads and validates the recipe in folder `dir`.
pub fn load(dir: &Path) -> Result<Recipe, RecipeError> {
    let path = dir.join(RECIPE_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        at::<()>(
            &path,
            None,
            format!("{e}; an image is a folder with an {RECIPE_FILE} recipe (see docs/images.md)"),
        )
    })?;
    let f = parse(&text).map_err(|what| at::<()>(&path, None, what))?;
    // Absolute, so that the bootstrapper (and the manifest) see full paths.
    let dir = &dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name = dir
        .canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(at::<()>(
            &path,
            None,
            format!("the image's folder name `{name}` must be letters, digits, - or _"),
        ));
    }
    if !SUITES.contains(&f.suite.value.as_str()) {
        return Err(at(
            &path,
            Some(&f.suite),
            format!(
                "suite `{}` is not one mmci builds from; use one of {}",
                f.suite.value,
                SUITES.join(", ")
            ),
        ));
    }
    let mut packages = Vec::new();
    for p in &f.packages {
        if !valid_package_name(&p.value) {
            return Err(at(
                &path,
                Some(p),
                format!(
                    "`{}` is not a Debian package name (lower case letters, digits, + - .)",
                    p.value
                ),
            ));
        }
        if packages.iter().any(|(q, _)| q == &p.value) {
            return Err(at(
                &path,
                Some(p),
                format!("package `{}` is listed twice", p.value),
            ));
        }
        packages.push((p.value.clone(), p.referenced.line()));
    }
    let mut files = Vec::new();
    for e in &f.files {
        let entry = &e.value;
        if !inside(&entry.src) {
            return Err(at(
                &path,
                Some(e),
                format!(
                    "src `{}` must be a relative path inside the recipe's folder",
                    entry.src.display()
                ),
            ));
        }
        let src = dir.join(&entry.src);
        if !src.is_file() {
            return Err(at(
                &path,
                Some(e),
                format!(
                    "src `{}`: no such file in {}",
                    entry.src.display(),
                    dir.display()
                ),
            ));
        }
        if !valid_dest(&entry.dest) {
            return Err(at(
                &path,
                Some(e),
                format!(
                    "dest `{}` must be an absolute path in the image, without `..`",
                    entry.dest
                ),
            ));
        }
        let mode = match &entry.mode {
            None => 0o644,
            Some(m) => u32::from_str_radix(m, 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .ok_or_else(|| {
                    at(
                        &path,
                        Some(e),
                        format!("mode `{m}` is not octal permissions such as \"0755\""),
                    )
                })?,
        };
        files.push(File {
            src,
            dest: entry.dest.clone(),
            mode,
        });
    }
    Ok(Recipe {
        name,
        dir: dir.to_path_buf(),
        description: f.description,
        suite: f.suite.value,
        packages,
        files,
        run: f.run.into_iter().map(|r| r.value).collect(),
    })
}

impl Recipe {
    /// The recipe file, for errors.
    pub fn path(&self) -> PathBuf {
        self.dir.join(RECIPE_FILE)
    }

    /// The line a package was listed on.
    pub fn package_line(&self, name: &str) -> Option<u64> {
        self.packages
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, l)| *l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe_dir(yaml: &str) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("img");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("scripts/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::write(dir.join(RECIPE_FILE), yaml).unwrap();
        tmp
    }

    #[test]
    fn a_full_recipe_loads() {
        let tmp = recipe_dir(
            "description: test\nsuite: bookworm\npackages: [procps, stress-ng]\nfiles:\n  - {src: scripts/run.sh, dest: /usr/local/bin/run, mode: \"0755\"}\nrun:\n  - echo built > /etc/built\n",
        );
        let r = load(&tmp.path().join("img")).unwrap();
        assert_eq!(r.name, "img");
        assert_eq!(r.suite, "bookworm");
        assert_eq!(
            r.packages,
            [("procps".to_string(), 3), ("stress-ng".to_string(), 3)]
        );
        assert_eq!(r.files[0].mode, 0o755);
        assert_eq!(r.files[0].dest, "/usr/local/bin/run");
        assert_eq!(r.run, ["echo built > /etc/built"]);
    }

    #[test]
    fn unknown_key_names_line_and_column() {
        let tmp = recipe_dir("suite: bookworm\npackges: [procps]\n");
        let e = load(&tmp.path().join("img")).unwrap_err().to_string();
        assert!(e.contains("image.yaml: line 2 column 1"), "{e}");
        assert!(e.contains("unknown field `packges`"), "{e}");
        let tmp = recipe_dir("suite: bookworm\nfiles:\n  - {src: scripts/run.sh, dst: /x}\n");
        let e = load(&tmp.path().join("img")).unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
        assert!(e.contains("unknown field `dst`"), "{e}");
    }

    #[test]
    fn bad_values_name_their_position_and_the_fix() {
        // (recipe, expected position, expected words)
        let cases = [
            (
                "suite: sid\n",
                "line 1 column 8",
                "use one of bookworm, trixie",
            ),
            (
                "suite: bookworm\npackages:\n  - procps\n  - Stress_NG\n",
                "line 4 column 5",
                "not a Debian package name",
            ),
            (
                "suite: bookworm\npackages: [procps, procps]\n",
                "line 2 column 20",
                "listed twice",
            ),
            (
                "suite: bookworm\nfiles:\n  - {src: ../etc/passwd, dest: /x}\n",
                "line 3 column 5",
                "inside the recipe's folder",
            ),
            (
                "suite: bookworm\nfiles:\n  - {src: scripts/nope.sh, dest: /x}\n",
                "line 3 column 5",
                "no such file",
            ),
            (
                "suite: bookworm\nfiles:\n  - {src: scripts/run.sh, dest: /usr/../x}\n",
                "line 3 column 5",
                "absolute path in the image",
            ),
            (
                "suite: bookworm\nfiles:\n  - {src: scripts/run.sh, dest: /x, mode: \"rwx\"}\n",
                "line 3 column 5",
                "not octal",
            ),
        ];
        for (yaml, pos, words) in cases {
            let tmp = recipe_dir(yaml);
            let e = load(&tmp.path().join("img")).unwrap_err().to_string();
            assert!(e.contains(pos), "{yaml}: {e}");
            assert!(e.contains(words), "{yaml}: {e}");
        }
    }

    #[test]
    fn package_names() {
        for (name, ok) in [
            ("stress-ng", true),
            ("libstdc++6", true),
            ("g++", true),
            ("x", false),
            ("Redis", false),
            ("-foo", false),
            ("foo bar", false),
            ("foo=1.0", false),
        ] {
            assert_eq!(valid_package_name(name), ok, "{name}");
        }
    }

    #[test]
    fn missing_recipe_says_what_an_image_is() {
        let tmp = tempfile::tempdir().unwrap();
        let e = load(&tmp.path().join("nope")).unwrap_err().to_string();
        assert!(e.contains("image.yaml"), "{e}");
        assert!(e.contains("docs/images.md"), "{e}");
    }
}
