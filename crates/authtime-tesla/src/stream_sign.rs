//! The stream sender's signing thread: signs sync responses off the
//! protocol loop and sends their fragments, so that a slow signature never
//! holds up the stream.

use std::net::{SocketAddr, UdpSocket};
use std::sync::mpsc::{self, Receiver as Channel};

use crate::{BootstrapSigner, SyncResponse};

/// Sync responses waiting for the signing thread; more are refused (and
/// counted as rate limited) rather than queued without bound.
const SIGN_QUEUE: usize = 16;

/// A sync response to sign and send.
pub(crate) struct SignJob {
    pub(crate) response: SyncResponse,
    pub(crate) to: SocketAddr,
    pub(crate) max_datagram: usize,
}

/// What the signing thread reports for one job: fragments sent, or the error.
pub(crate) type SignOutcome = Result<usize, String>;

/// Starts the thread; it ends when the job sender is dropped.
pub(crate) fn spawn_signer(
    mut signer: Box<dyn BootstrapSigner + Send>,
    socket: UdpSocket,
) -> std::io::Result<(mpsc::SyncSender<SignJob>, Channel<SignOutcome>)> {
    let (jobs, job_rx) = mpsc::sync_channel::<SignJob>(SIGN_QUEUE);
    let (done_tx, done) = mpsc::channel::<SignOutcome>();
    std::thread::Builder::new()
        .name("tesla-sign".into())
        .spawn(move || {
            for job in job_rx {
                let outcome = job
                    .response
                    .sign_and_fragment(signer.as_mut(), job.max_datagram)
                    .map(|fragments| {
                        for f in &fragments {
                            // A receiver that went away is its own problem.
                            let _ = socket.send_to(f, job.to);
                        }
                        fragments.len()
                    })
                    .map_err(|e| e.to_string());
                if done_tx.send(outcome).is_err() {
                    break;
                }
            }
        })?;
    Ok((jobs, done))
}
