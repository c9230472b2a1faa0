//! This machine: `image` (guest images built and shown) and `doctor`
//! (what the machine has and lacks, which accelerator works).

use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;

use crate::doctor;
use crate::error::{exit, AppError};
use crate::host::paths::WorkDir;

#[derive(Subcommand)]
pub enum ImageCommand {
    /// Resolve the recipe's packages and build the image unless the work
    /// dir has one of the same recipe and versions; print its path.
    Build {
        /// A recipe folder's name in --images-dir, or the folder's path.
        name: String,
        #[command(flatten)]
        images: ImagesArgs,
        /// Do not refresh the Debian index: resolve against the last one fetched.
        #[arg(long)]
        offline: bool,
        /// Kill the bootstrap after this many seconds.
        #[arg(long, default_value_t = 2700)]
        timeout: u64,
    },
    /// What the newest built image of a recipe holds: packages and
    /// versions, size, hash.
    Show {
        /// A recipe folder's name in --images-dir, or the folder's path.
        name: String,
        #[command(flatten)]
        images: ImagesArgs,
    },
}

#[derive(clap::Args, Clone)]
pub struct ImagesArgs {
    /// Folder of image recipes [default: ./images, else the source tree's].
    #[arg(long)]
    pub images_dir: Option<PathBuf>,
}

impl ImagesArgs {
    pub fn recipe_dir(&self, name: &str) -> PathBuf {
        let dir = self
            .images_dir
            .clone()
            .unwrap_or_else(crate::guest::image::default_recipes_dir);
        crate::guest::image::recipe::locate(name, &dir)
    }
}

/// `mmci image ...`.
pub async fn image(command: ImageCommand, work: &WorkDir) -> Result<i32, AppError> {
    match command {
        ImageCommand::Build {
            name,
            images,
            offline,
            timeout,
        } => {
            let opts = crate::guest::image::BuildOptions {
                refresh: !offline,
                timeout: Duration::from_secs(timeout),
            };
            let b = crate::guest::image::ensure(&images.recipe_dir(&name), work, &opts).await?;
            eprintln!(
                "mmci: image {} {} in {:.1} s (resolving {:.1} s): {} packages, {:.1} MiB, sha256 {}",
                b.manifest.name,
                if b.cached { "cached" } else { "built" },
                b.total_s,
                b.resolve_s,
                b.manifest.packages.len(),
                b.manifest.size_bytes as f64 / 1048576.0,
                b.manifest.sha256
            );
            println!("{}", b.path.display());
            Ok(exit::OK)
        }
        ImageCommand::Show { name, images } => {
            let recipe = crate::guest::image::recipe::load(&images.recipe_dir(&name))
                .map_err(crate::guest::image::ImageError::from)?;
            let (path, m) = crate::guest::image::build::latest(work, &recipe.name)?;
            print!("{}", crate::guest::image::show::render(&m, &path));
            Ok(exit::OK)
        }
    }
}

/// `mmci doctor`: 0 when the machine has what it needs, else 3.
pub async fn doctor(probe: bool, work: &WorkDir) -> Result<i32, AppError> {
    let checks = doctor::all_checks().await;
    let accel_line = doctor::accel_line(probe, work).await?;
    let (text, ok) = doctor::render(&checks, &accel_line);
    print!("{text}");
    println!("work dir: {}", work.root().display());
    Ok(if ok { exit::OK } else { exit::ENVIRONMENT })
}
