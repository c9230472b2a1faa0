//! Scenario B's gfp classes: a direct-reclaim call is dm-bufio's GFP_NOIO
//! allocation (the RFC's case), another call without __GFP_IO (zram's own
//! allocations), or a call with __GFP_IO (the control), told apart by the
//! gfp string mm_vmscan_direct_reclaim_begin prints.

/// dm-bufio's allocation (drivers/md/dm-bufio.c, after its GFP_NOWAIT
/// try), as mm_vmscan_direct_reclaim_begin prints it: the RFC's case,
/// matched whole.
pub const DM_BUFIO_GFP: &str = "GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY|__GFP_NOMEMALLOC";

/// Every gfp string of a context without __GFP_IO starts so.
pub const NOIO_PREFIX: &str = "GFP_NOIO";

/// Which class a call's gfp string is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GfpClass {
    DmBufio,
    OtherNoio,
    Io,
}

pub fn gfp_class(gfp: &str) -> GfpClass {
    if gfp == DM_BUFIO_GFP {
        GfpClass::DmBufio
    } else if gfp.starts_with(NOIO_PREFIX) {
        GfpClass::OtherNoio
    } else {
        GfpClass::Io
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfp_classes_match_dm_bufio_whole() {
        let cases = [
            (DM_BUFIO_GFP, GfpClass::DmBufio),
            ("GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY", GfpClass::OtherNoio),
            ("GFP_NOIO|__GFP_HIGHMEM|__GFP_MOVABLE", GfpClass::OtherNoio),
            ("GFP_NOIO", GfpClass::OtherNoio),
            ("GFP_HIGHUSER_MOVABLE", GfpClass::Io),
            ("GFP_NOFS|__GFP_NOWARN", GfpClass::Io),
        ];
        for (gfp, want) in cases {
            assert_eq!(gfp_class(gfp), want, "{gfp}");
        }
    }
}
