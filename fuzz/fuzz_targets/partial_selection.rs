//! Partial MACs: the selection is a strictly increasing list of valid piece
//! indices, a tag verifies, a change in a selected piece is caught and a change
//! in an unselected piece is not (that is the construction, not a bug).

#![no_main]

use authtime_mac::{Algorithm, KeyLength, Mac, MacError, PIECE_LEN, PartialMac, PartialSpec};
use libfuzzer_sys::{arbitrary::Unstructured, fuzz_target};

fuzz_target!(|data: &[u8]| {
    let _ = check(Unstructured::new(data));
});

fn check(mut u: Unstructured<'_>) -> Result<(), libfuzzer_sys::arbitrary::Error> {
    let inner = Algorithm::ALL[u.choose_index(Algorithm::ALL.len())?];
    let info = inner.info();

    // Any f64 must be refused unless it is in (0, 1]; most inputs take a valid
    // rate, spread over the whole range down to 2^-32.
    let rate = if u.ratio(1, 8)? {
        let rate = f64::from_bits(u.arbitrary()?);
        let spec = PartialSpec::new(inner, rate);
        assert_eq!(spec.is_ok(), rate > 0.0 && rate <= 1.0, "rate {rate}");
        if spec.is_err() {
            return Ok(());
        }
        rate
    } else {
        (f64::from(u.arbitrary::<u32>()?) + 1.0) / 4_294_967_296.0
    };
    let spec = PartialSpec::new(inner, rate).expect("rate in (0, 1]");

    let key_len = match info.key {
        KeyLength::Exact(n) => n,
        KeyLength::Range { min, max } => u.int_in_range(min..=max.min(80))?,
    };
    let key = u.bytes(key_len)?.to_vec();
    let nonce = u.bytes(spec.nonce_len())?.to_vec();
    let flip_piece: usize = u.arbitrary()?;
    let flip_offset: usize = u.arbitrary()?;
    let flip_mask = u.arbitrary::<u8>()? | 1;
    let message = u.take_rest().to_vec();

    let mac = PartialMac::new(spec, &key).expect("key of the inner's length");
    let pieces = message.len().div_ceil(PIECE_LEN);
    let selected = mac.selected_pieces(&nonce, message.len());
    assert!(selected.windows(2).all(|w| w[0] < w[1]), "{selected:?}");
    assert!(
        selected.iter().all(|&i| i < pieces),
        "{selected:?} of {pieces}"
    );
    assert_eq!(selected, mac.selected_pieces(&nonce, message.len()));
    if spec.threshold() == 1 << 32 {
        assert_eq!(selected.len(), pieces, "rate 1 selects every piece");
    }

    let tag = mac.compute(&nonce, &message).expect("valid nonce");
    assert_eq!(tag.len(), info.tag_len);
    assert_eq!(mac.verify(&nonce, &message, tag.as_bytes()), Ok(()));

    let flip = |piece: usize| {
        let start = piece * PIECE_LEN;
        let len = message.len().min(start + PIECE_LEN) - start;
        let mut changed = message.clone();
        changed[start + flip_offset % len] ^= flip_mask;
        changed
    };
    if !selected.is_empty() {
        let changed = flip(selected[flip_piece % selected.len()]);
        assert_eq!(
            mac.verify(&nonce, &changed, tag.as_bytes()),
            Err(MacError::BadTag),
            "a change in a selected piece must be caught"
        );
    }
    let unselected: Vec<usize> = (0..pieces)
        .filter(|i| selected.binary_search(i).is_err())
        .collect();
    if !unselected.is_empty() {
        let changed = flip(unselected[flip_piece % unselected.len()]);
        assert_eq!(
            mac.verify(&nonce, &changed, tag.as_bytes()),
            Ok(()),
            "only selected pieces are covered"
        );
    }
    Ok(())
}
