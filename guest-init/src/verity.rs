//! The dm-verity hash tree, built in code instead of with veritysetup:
//! format 1 (salt prepended to every hashed block), sha256, 4096-byte data
//! and hash blocks, no superblock (hash_start 0). The layout is the one
//! drivers/md/dm-verity-target.c computes in verity_ctr(): 128 digests per
//! hash block (32-byte digests, 4096 / 32), the remainder of a block zero,
//! and the levels stored root-first, so the single top block is block 0 of
//! the hash device and the leaf level (digests of data blocks) comes last.

use sha2::{Digest, Sha256};

/// Data and hash block size.
pub const BLOCK: usize = 4096;
/// sha256's digest size; with format 1 each digest takes exactly its own
/// size in a hash block (rounded up to a power of two, which 32 already is).
pub const DIGEST: usize = 32;
/// Digests per hash block.
pub const PER_BLOCK: u64 = (BLOCK / DIGEST) as u64;

/// sha256(salt || block): how format 1 hashes every data and hash block.
pub fn hash_block(salt: &[u8], block: &[u8]) -> [u8; DIGEST] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(block);
    h.finalize().into()
}

/// Hash blocks per level for `data_blocks` data blocks, root-first (index 0
/// is the top level, the last index the leaves). Level i above the data
/// holds ceil(n / 128^(i+1)) blocks; there are as many levels as it takes to
/// get down to one block (none for a single data block, whose own digest is
/// then the root).
pub fn level_blocks(data_blocks: u64) -> Vec<u64> {
    let mut levels = Vec::new();
    let mut n = data_blocks;
    while n > 1 {
        n = n.div_ceil(PER_BLOCK);
        levels.push(n);
    }
    levels.reverse();
    levels
}

/// Total size of the tree in hash blocks.
pub fn hash_blocks(data_blocks: u64) -> u64 {
    level_blocks(data_blocks).iter().sum()
}

/// A built tree: what goes on the hash device from offset 0, and the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashTree {
    pub root: [u8; DIGEST],
    pub tree: Vec<u8>,
}

/// Builds the tree over data blocks given by their digests (`leaves[i]` =
/// [`hash_block`] of data block i), so that the data itself never has to be
/// held in memory.
pub fn tree_from_leaves(salt: &[u8], leaves: &[[u8; DIGEST]]) -> HashTree {
    assert!(!leaves.is_empty(), "a verity device has at least one block");
    // Bottom-up: each level packs the digests of the level below into blocks.
    let mut levels_bottom_up: Vec<Vec<u8>> = Vec::new();
    let mut digests: Vec<[u8; DIGEST]> = leaves.to_vec();
    while digests.len() > 1 {
        let blocks = (digests.len() as u64).div_ceil(PER_BLOCK) as usize;
        let mut level = vec![0u8; blocks * BLOCK];
        for (i, d) in digests.iter().enumerate() {
            level[i * DIGEST..(i + 1) * DIGEST].copy_from_slice(d);
        }
        digests = level
            .chunks(BLOCK)
            .map(|block| hash_block(salt, block))
            .collect();
        levels_bottom_up.push(level);
    }
    let tree = levels_bottom_up.into_iter().rev().flatten().collect();
    HashTree {
        root: digests[0],
        tree,
    }
}

/// Builds the tree of `data` (a whole number of blocks): the tests' way in.
#[cfg(test)]
pub fn build(salt: &[u8], data: &[u8]) -> HashTree {
    assert_eq!(data.len() % BLOCK, 0, "data is a whole number of blocks");
    let leaves: Vec<_> = data.chunks(BLOCK).map(|b| hash_block(salt, b)).collect();
    tree_from_leaves(salt, &leaves)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The verity target's parameters (Documentation/admin-guide/device-mapper/verity.rst):
/// `<version> <data_dev> <hash_dev> <data_block_size> <hash_block_size>
/// <num_data_blocks> <hash_start_block> <algorithm> <digest> <salt>`.
pub fn table_params(
    data: (u32, u32),
    hash: (u32, u32),
    data_blocks: u64,
    root: &[u8],
    salt: &[u8],
) -> String {
    let salt = if salt.is_empty() {
        "-".to_string()
    } else {
        hex(salt)
    };
    format!(
        "1 {}:{} {}:{} {BLOCK} {BLOCK} {data_blocks} 0 sha256 {} {salt}",
        data.0,
        data.1,
        hash.0,
        hash.1,
        hex(root)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Block i of the test data: every byte is (i * 7 + offset) mod 251, so
    /// the same bytes can be written by a shell one-liner for veritysetup.
    fn test_data(blocks: usize) -> Vec<u8> {
        (0..blocks)
            .flat_map(|i| (0..BLOCK).map(move |o| ((i * 7 + o) % 251) as u8))
            .collect()
    }

    #[test]
    fn level_sizes_match_verity_ctr() {
        assert_eq!(level_blocks(1), Vec::<u64>::new());
        assert_eq!(level_blocks(2), vec![1]);
        assert_eq!(level_blocks(128), vec![1]);
        assert_eq!(level_blocks(129), vec![1, 2]);
        // 64 MiB: 16384 blocks -> 128 leaf blocks -> 1 top block.
        assert_eq!(level_blocks(16384), vec![1, 128]);
        assert_eq!(level_blocks(16385), vec![1, 2, 129]);
        assert_eq!(hash_blocks(16384), 129);
    }

    #[test]
    fn salted_block_hash_matches_sha256sum() {
        // printf '\xab' > s; head -c 4096 /dev/zero > z;
        // cat s z | sha256sum
        let h = hash_block(&[0xab], &[0u8; BLOCK]);
        assert_eq!(
            hex(&h),
            "032c54f148aba31889447809fbb74b76a4e58a85881f6f7253653c7a6d0a7135"
        );
    }

    #[test]
    fn one_level_tree_by_hand() {
        // Three blocks: the tree is one hash block holding their three
        // digests, then zeros; the root is the salted hash of that block.
        let salt = [0x01, 0x02, 0x03, 0x04];
        let data = test_data(3);
        let t = build(&salt, &data);
        assert_eq!(t.tree.len(), BLOCK);
        for i in 0..3 {
            let d = hash_block(&salt, &data[i * BLOCK..(i + 1) * BLOCK]);
            assert_eq!(&t.tree[i * DIGEST..(i + 1) * DIGEST], &d);
        }
        assert!(t.tree[3 * DIGEST..].iter().all(|b| *b == 0));
        assert_eq!(t.root, hash_block(&salt, &t.tree));
    }

    // Roots from veritysetup 2.6.1 (Debian cryptsetup-bin), independent of
    // this code, on the same bytes written by:
    //   python3 -c 'import sys; sys.stdout.buffer.write(bytes((i*7+o)%251
    //     for i in range(N) for o in range(4096)))' > data
    //   veritysetup format --no-superblock --hash=sha256 --data-block-size=4096
    //     --hash-block-size=4096 --salt=01020304 data hash
    // and the hash file compared with `sha256sum hash`.

    #[test]
    fn three_blocks_match_veritysetup() {
        let t = build(&[1, 2, 3, 4], &test_data(3));
        assert_eq!(hex(&t.root), VS_ROOT_3);
        assert_eq!(hex(&sha256(&t.tree)), VS_HASHFILE_3);
    }

    #[test]
    fn two_level_tree_matches_veritysetup() {
        // 200 blocks: 2 leaf hash blocks under one top block, stored top first.
        let t = build(&[1, 2, 3, 4], &test_data(200));
        assert_eq!(t.tree.len(), 3 * BLOCK);
        assert_eq!(hex(&t.root), VS_ROOT_200);
        assert_eq!(hex(&sha256(&t.tree)), VS_HASHFILE_200);
    }

    #[test]
    fn params_line() {
        let p = table_params((252, 16), (252, 32), 16384, &[0xab; 32], &[1, 2]);
        assert_eq!(
            p,
            format!(
                "1 252:16 252:32 4096 4096 16384 0 sha256 {} 0102",
                "ab".repeat(32)
            )
        );
        assert!(table_params((1, 2), (3, 4), 1, &[0; 32], &[]).ends_with(" -"));
    }

    fn sha256(b: &[u8]) -> [u8; 32] {
        Sha256::digest(b).into()
    }

    const VS_ROOT_3: &str = "144db7974932802098293f17a0dd2a8c2ccb8e9e8c0afdd8e631ad3e88bc9c41";
    const VS_HASHFILE_3: &str = "6fb3b743d3fbceda664882a751c628b8f92d606670799415a3bc533d13706a95";
    const VS_ROOT_200: &str = "7207214a149f87776a00d6a5a67b682bcb29def4cb4ac3554a414006f9b42729";
    const VS_HASHFILE_200: &str =
        "8f7e37ad9a1e300f50cc24c6e46b47dc7f5e5bfdffe33c992aa12fd598e6d75c";
}
