//! Scenario B's dm-verity device: the data disk filled with reproducible
//! random blocks, the hash tree (verity.rs) written to the hash disk, the
//! table loaded read-only through the dm ioctl code, and the proof that it
//! works: blocks read through it equal the data, a byte flipped on the data
//! disk makes the read fail with EIO, and the restored block reads back.

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use mmci_record::{VERITY_DATA_DISK_SERIAL, VERITY_HASH_DISK_SERIAL};

use crate::blockdev::find_disk;
use crate::direct_io::{self, AlignedBuf};
use crate::step::{Stage, StepError};
use crate::{dm, verity};

/// Data seed and salt: fixed, so that every run verifies the same tree.
const DATA_SEED: u64 = 0x6d6d_6369_5f76_6572;
const SALT: [u8; 8] = *b"mmci-vty";

/// The verity device and what is needed to check it.
pub struct Verity {
    /// /dev/dm-<minor>.
    pub node: PathBuf,
    data_disk: PathBuf,
    pub blocks: u64,
}

/// Fills the data disk, writes the tree to the hash disk, loads the table.
pub fn setup(verity_mb: u64) -> Result<(Verity, String), StepError> {
    let (dname, dmaj, dmin, dbytes) = find_disk(VERITY_DATA_DISK_SERIAL).stage("verity")?;
    let (hname, hmaj, hmin, hbytes) = find_disk(VERITY_HASH_DISK_SERIAL).stage("verity")?;
    let want = verity_mb << 20;
    if dbytes < want {
        return Err(StepError {
            stage: "verity",
            message: format!("data disk {dname} has {dbytes} bytes, verity_mb wants {want}"),
        });
    }
    let blocks = want / verity::BLOCK as u64;
    let data_disk = PathBuf::from(format!("/dev/{dname}"));
    let data = direct_io::open(&data_disk, true).stage("verity")?;
    // 1 MiB at a time: the data is never held whole, only its leaf digests.
    const CHUNK: u64 = 256;
    let mut buf = AlignedBuf::new(CHUNK as usize * verity::BLOCK);
    let mut leaves = Vec::with_capacity(blocks as usize);
    for first in (0..blocks).step_by(CHUNK as usize) {
        let n = CHUNK.min(blocks - first) as usize;
        for (i, block) in buf.chunks_mut(verity::BLOCK).take(n).enumerate() {
            direct_io::fill_block(DATA_SEED, first + i as u64, block);
            leaves.push(verity::hash_block(&SALT, block));
        }
        let bytes = &buf[..n * verity::BLOCK];
        data.write_all_at(bytes, first * verity::BLOCK as u64)
            .stage("verity")?;
    }
    data.sync_all().stage("verity")?;
    drop(data);
    let tree = verity::tree_from_leaves(&SALT, &leaves);
    if tree.tree.len() as u64 > hbytes {
        return Err(StepError {
            stage: "verity",
            message: format!(
                "hash disk {hname} has {hbytes} bytes, the tree needs {}",
                tree.tree.len()
            ),
        });
    }
    let hash_disk = PathBuf::from(format!("/dev/{hname}"));
    let hash = direct_io::open(&hash_disk, true).stage("verity")?;
    let mut tbuf = AlignedBuf::new(tree.tree.len());
    tbuf.copy_from_slice(&tree.tree);
    direct_io::write_block(&hash, &tbuf, 0).stage("verity")?;
    hash.sync_all().stage("verity")?;
    drop(hash);
    let target = dm::Target {
        start: 0,
        length: blocks * (verity::BLOCK as u64 / 512),
        kind: "verity".into(),
        params: verity::table_params((dmaj, dmin), (hmaj, hmin), blocks, &tree.root, &SALT),
    };
    let node =
        dm::create_device("mmci-verity", &[target], dm::DM_READONLY_FLAG).stage("dm-verity")?;
    let detail = format!(
        "{} over {dname} ({dmaj}:{dmin}) + {hname} ({hmaj}:{hmin}): {blocks} blocks, {} hash blocks in {} levels, root {}",
        node.display(),
        verity::hash_blocks(blocks),
        verity::level_blocks(blocks).len(),
        verity::hex(&tree.root)
    );
    Ok((
        Verity {
            node,
            data_disk,
            blocks,
        },
        detail,
    ))
}

/// Proves the device: blocks read through it equal what was written, a
/// flipped byte on the data disk makes the read fail with EIO, and once the
/// byte is restored the block reads back again.
pub fn check(v: &Verity) -> Result<((), String), StepError> {
    let err = |message: String| StepError {
        stage: "verity-check",
        message,
    };
    let dev = direct_io::open(&v.node, false).stage("verity-check")?;
    let mut buf = AlignedBuf::new(verity::BLOCK);
    let mut want = vec![0u8; verity::BLOCK];
    let picks: Vec<u64> = (0..8).map(|i| i * (v.blocks - 1) / 7).collect();
    for &b in &picks {
        direct_io::read_block(&dev, &mut buf, b).map_err(|e| err(format!("block {b}: {e}")))?;
        direct_io::fill_block(DATA_SEED, b, &mut want);
        if buf[..] != want[..] {
            return Err(err(format!("block {b} reads back different data")));
        }
    }
    let victim = v.blocks / 3;
    let data = direct_io::open(&v.data_disk, true).stage("verity-check")?;
    let mut raw = AlignedBuf::new(verity::BLOCK);
    direct_io::read_block(&data, &mut raw, victim).stage("verity-check")?;
    raw[100] ^= 0xff;
    direct_io::write_block(&data, &raw, victim).stage("verity-check")?;
    let corrupted = direct_io::read_block(&dev, &mut buf, victim);
    raw[100] ^= 0xff;
    direct_io::write_block(&data, &raw, victim).stage("verity-check")?;
    match corrupted {
        Err(e) if e.raw_os_error() == Some(libc::EIO) => {}
        Err(e) => return Err(err(format!("corrupted block {victim}: {e}, not EIO"))),
        Ok(()) => return Err(err(format!("corrupted block {victim} read without error"))),
    }
    direct_io::read_block(&dev, &mut buf, victim)
        .map_err(|e| err(format!("restored block {victim}: {e}")))?;
    direct_io::fill_block(DATA_SEED, victim, &mut want);
    if buf[..] != want[..] {
        return Err(err(format!(
            "restored block {victim} reads back different data"
        )));
    }
    Ok((
        (),
        format!(
            "{} blocks read back equal; byte flipped in block {victim}: EIO; restored: equal",
            picks.len()
        ),
    ))
}
