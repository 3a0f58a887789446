//! Entry points for the fuzz targets in `fuzz/`.

/// Parses `data` as a looped packet: never panics, and a payload found is a
/// part of `data`.
pub fn looped_packet(data: &[u8]) {
    if let Some(udp) = crate::looped_packet::parse(data) {
        let start = data.as_ptr() as usize;
        let at = udp.payload.as_ptr() as usize;
        assert!(at >= start && at + udp.payload.len() <= start + data.len());
    }
}
