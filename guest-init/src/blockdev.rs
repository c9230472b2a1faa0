//! The guest's block devices, found by the serial the host gave them.

/// The virtio disk whose serial is `serial`: (name, major, minor, bytes).
pub(crate) fn find_disk(serial: &str) -> Result<(String, u32, u32, u64), String> {
    let dir = std::fs::read_dir("/sys/block").map_err(|e| format!("/sys/block: {e}"))?;
    for entry in dir.flatten() {
        let path = entry.path();
        let found = std::fs::read_to_string(path.join("serial")).unwrap_or_default();
        if found.trim() != serial {
            continue;
        }
        let dev = std::fs::read_to_string(path.join("dev")).map_err(|e| e.to_string())?;
        let (major, minor) = dev
            .trim()
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .ok_or_else(|| format!("bad dev number {dev:?}"))?;
        let sectors: u64 = std::fs::read_to_string(path.join("size"))
            .map_err(|e| e.to_string())?
            .trim()
            .parse()
            .map_err(|_| "bad disk size".to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        return Ok((name, major, minor, sectors * 512));
    }
    Err(format!("no virtio disk with serial {serial}"))
}
