//! Entry points for the fuzz targets in `fuzz/`.

use crate::{Served, Verdict, build_reply, finish_reply, parse, reply_len, reply_payload_offset};

/// Parses `data` as a frame for port 123 on any address. When it is ours,
/// builds a reply whose payload is derived from the input, both ways (copy
/// and in place), and parses the reply as its recipient would: it must be
/// ours, with the addresses and ports swapped and the same payload.
pub fn parse_build(data: &[u8]) {
    let served = Served::ports(&[123]);
    let request = match parse(data, &served) {
        Verdict::Ours(request) => request,
        Verdict::Pass(_) | Verdict::Drop(_) => return,
    };
    let range = request.payload_range();
    assert!(range.start <= range.end && range.end <= data.len());
    assert_eq!(request.payload(), &data[range]);
    let to = *request.addressing();

    // The request's payload backwards, then up to 63 bytes of the frame.
    let extra = usize::from(data.first().copied().unwrap_or(0) % 64).min(data.len());
    let payload: Vec<u8> = request
        .payload()
        .iter()
        .rev()
        .chain(&data[..extra])
        .copied()
        .collect();
    let len = reply_len(&to, payload.len());
    let mut copied = vec![0x5a; len + 3];
    assert!(build_reply(&to, &payload, &mut copied[..len - 1]).is_err());
    assert_eq!(build_reply(&to, &payload, &mut copied), Ok(len));
    assert_eq!(&copied[len..], &[0x5a; 3], "wrote past the frame");

    let mut in_place = vec![0xa5; len];
    in_place[reply_payload_offset(&to)..].copy_from_slice(&payload);
    assert_eq!(finish_reply(&to, &mut in_place, payload.len()), Ok(len));
    assert_eq!(in_place, copied[..len], "in place and copied differ");

    let back = Served::new([to.source()]);
    let reply = match parse(&copied[..len], &back) {
        Verdict::Ours(reply) => reply,
        other => panic!("the reply to {to:?} parses as {other:?}"),
    };
    let from = reply.addressing();
    assert_eq!(from.source(), to.destination());
    assert_eq!(from.destination(), to.source());
    assert_eq!(from.source_mac(), to.destination_mac());
    assert_eq!(from.destination_mac(), to.source_mac());
    assert_eq!(from.hop_limit(), 64);
    assert_eq!(from.traffic_class(), 0);
    assert_eq!(reply.payload(), &payload[..]);
}
