//! Roughtime on the AF_XDP path: the requests of one receive batch that
//! the XDP worker (`crate::ntp::xdp_worker`) dispatched here by destination
//! port, held in their frames, answered with the socket workers' batch
//! logic ([`worker::answer_batch`]: same access list, limits, refusal
//! counters, one signature per version per batch of up to
//! [`worker::BATCH`]). Each response is written into its request's own
//! frame, the headers around it ([`authtime_frame::finish_reply`]), and
//! queued for the socket's next transmit kick: no copy of the request, and
//! nothing time-critical in when it leaves (the time is whole seconds).
//!
//! A response is never longer than its request (the core refuses to
//! answer otherwise), so it fits the request's chunk; the bound is checked
//! anyway and a response that does not fit is counted as
//! `response_too_large`.

use std::sync::Arc;

use authtime_frame::Addressing;
use authtime_packet_io::Datagram;
use authtime_xdp::RxFrame;

use crate::clock::state::ClockView;
use crate::ntp::batch_io::Datagrams;
use crate::roughtime::metrics::{Refusal, RoughtimeMetrics};
use crate::roughtime::worker::{self, BatchIo, RoughtimeShared};

/// Roughtime over one interface's AF_XDP sockets: the service's shared
/// state and which served ports are Roughtime's.
#[derive(Debug)]
pub(crate) struct XdpRoughtime {
    pub(crate) shared: Arc<RoughtimeShared>,
    pub(crate) ports: Vec<u16>,
}

impl XdpRoughtime {
    /// Whether a request to `to` is Roughtime's.
    #[inline]
    pub(crate) fn serves(&self, to: &Addressing) -> bool {
        self.ports.contains(&to.destination().port())
    }
}

/// Roughtime requests of one receive batch, in their frames.
pub(crate) struct RoughtimeFrames<'f> {
    frames: [Option<RxFrame<'f>>; worker::BATCH],
    requests: [Option<(Addressing, std::ops::Range<usize>)>; worker::BATCH],
    len: usize,
}

impl<'f> RoughtimeFrames<'f> {
    pub(crate) fn new() -> Self {
        Self {
            frames: std::array::from_fn(|_| None),
            requests: std::array::from_fn(|_| None),
            len: 0,
        }
    }

    /// Holds `frame`, a request to `to` whose UDP payload is at `payload` in
    /// it. The caller answers a full batch first ([`Self::is_full`]); were
    /// it full, the frame would go back to the fill ring unanswered.
    pub(crate) fn push(
        &mut self,
        frame: RxFrame<'f>,
        to: Addressing,
        payload: std::ops::Range<usize>,
    ) {
        debug_assert!(!self.is_full(), "a full Roughtime batch");
        if let (Some(f), Some(r)) = (
            self.frames.get_mut(self.len),
            self.requests.get_mut(self.len),
        ) {
            *f = Some(frame);
            *r = Some((to, payload));
            self.len += 1;
        }
    }

    /// Whether the batch holds [`worker::BATCH`] requests.
    pub(crate) fn is_full(&self) -> bool {
        self.len == worker::BATCH
    }

    /// Answers the requests held and sends the responses; the frames of
    /// those not answered go back to the fill ring.
    pub(crate) fn answer(&mut self, shared: &RoughtimeShared, clock_view: &mut ClockView) {
        if self.len > 0 {
            worker::answer_batch(shared, clock_view, self.len, self);
        }
        for (frame, request) in self.frames[..self.len]
            .iter_mut()
            .zip(&mut self.requests[..self.len])
        {
            *frame = None;
            *request = None;
        }
        self.len = 0;
    }
}

impl Datagrams for RoughtimeFrames<'_> {
    fn datagram(&self, i: usize) -> Datagram<'_> {
        let (data, peer) = match (&self.frames[i], &self.requests[i]) {
            (Some(frame), Some((to, payload))) => (
                frame.data().get(payload.clone()).unwrap_or_default(),
                Some(to.source()),
            ),
            _ => (&[][..], None),
        };
        Datagram {
            data,
            peer,
            stamp: None,
            truncated: false,
        }
    }
}

impl BatchIo for RoughtimeFrames<'_> {
    fn send_responses<'r>(
        &mut self,
        responses: impl Iterator<Item = (usize, &'r [u8])>,
        metrics: &RoughtimeMetrics,
    ) {
        for (i, response) in responses {
            let (Some(mut frame), Some((to, _))) = (self.frames[i].take(), self.requests[i].take())
            else {
                metrics.refuse(Refusal::SendFailed, 1);
                continue;
            };
            let offset = authtime_frame::reply_payload_offset(&to);
            let buf = frame.buffer_mut();
            let Some(payload) = buf.get_mut(offset..offset + response.len()) else {
                // Dropping the frame gives its chunk back for receiving.
                metrics.refuse(Refusal::ResponseTooLarge, 1);
                continue;
            };
            payload.copy_from_slice(response);
            match authtime_frame::finish_reply(&to, buf, response.len()) {
                Ok(len) => frame.reply(len),
                Err(_) => metrics.refuse(Refusal::ResponseTooLarge, 1),
            }
        }
    }
}
