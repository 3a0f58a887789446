//! Whether a chain of Roughtime answers is enough to trust its interval: a
//! quorum of servers answered, every answer verified (the chain holds only
//! those), no two answers are out of causal order (malfeasance), and all
//! the answers overlap. Sans-IO: it reads a [`Chain`] the caller filled.
//!
//! One answer that does not overlap the others is enough to refuse: the
//! chain cannot tell which side lied unless causal order proves it, and a
//! caller that checks a certificate against the interval (NTS-KE on a
//! machine whose clock is wrong) must not pick a side. A server that does
//! not answer only lowers the count.

use std::fmt;

use crate::chain::Chain;

/// The default quorum for `listed` servers: a majority, and at least 2 when
/// 2 or more are listed (1 when only 1 is).
#[must_use]
pub fn default_quorum(listed: usize) -> usize {
    match listed {
        0 | 1 => 1,
        n => (n / 2 + 1).max(2),
    }
}

/// Why the chain's interval is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuorumError {
    /// Fewer servers answered (with a verified answer) than the quorum.
    TooFewAnswers {
        /// Verified answers.
        answered: usize,
        /// The quorum.
        required: usize,
    },
    /// Two answers are out of causal order (links `earlier` and `later` of
    /// the chain): one of the two servers lied, and the chain proves it.
    Malfeasance {
        /// The link asked first.
        earlier: usize,
        /// The link asked later, whose interval ends before the earlier begins.
        later: usize,
    },
    /// The answers' intervals have no instant in common.
    Disagree {
        /// Verified answers.
        answered: usize,
    },
}

impl fmt::Display for QuorumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooFewAnswers { answered, required } => write!(
                f,
                "{answered} Roughtime server(s) answered with a verified time, fewer than the \
                 quorum of {required}"
            ),
            Self::Malfeasance { earlier, later } => write!(
                f,
                "Roughtime malfeasance: answer {} ends before answer {} begins, though asked \
                 after it",
                later + 1,
                earlier + 1
            ),
            Self::Disagree { answered } => write!(
                f,
                "the {answered} Roughtime answers do not overlap: no time they all allow"
            ),
        }
    }
}

impl std::error::Error for QuorumError {}

/// The interval `[earliest, latest]` (Unix seconds) every verified answer of
/// `chain` allows, if at least `required` servers answered, none of them out
/// of causal order, and their intervals overlap.
///
/// # Errors
/// The first of: malfeasance, too few answers, answers that do not overlap.
pub fn agreed_by_quorum(chain: &Chain, required: usize) -> Result<(u64, u64), QuorumError> {
    let answered = chain.links().len();
    if let Some((earlier, later)) = chain.malfeasance() {
        return Err(QuorumError::Malfeasance { earlier, later });
    }
    if answered < required.max(1) {
        return Err(QuorumError::TooFewAnswers { answered, required });
    }
    chain
        .agreed_interval()
        .ok_or(QuorumError::Disagree { answered })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_a_majority_of_at_least_two() {
        let quorums: Vec<usize> = (0..=6).map(default_quorum).collect();
        assert_eq!(quorums, [1, 1, 2, 2, 3, 3, 4]);
    }

    #[test]
    fn an_empty_chain_has_too_few_answers() {
        assert_eq!(
            agreed_by_quorum(&Chain::new(), 1),
            Err(QuorumError::TooFewAnswers {
                answered: 0,
                required: 1
            })
        );
        // A quorum of 0 still needs one answer to have an interval.
        assert!(agreed_by_quorum(&Chain::new(), 0).is_err());
    }
}
