//! Just enough of RESP (the Redis serialization protocol, version 2) to send
//! commands and read one reply, with every length bounded.
//!
//! Written by hand: the store needs four commands over a short-lived
//! connection, and a full Redis client crate would bring an async runtime
//! and connection pooling that the daemon does not want on this path.

use std::io::{BufRead, BufReader, Read, Write};

use super::StoreError;

/// Longest bulk string accepted (the key ring is a few kilobytes).
pub(super) const MAX_BULK: usize = 1 << 20;
/// Longest simple line accepted.
const MAX_LINE: usize = 4096;

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Reply {
    Simple(String),
    Error(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

/// Encodes a command as an array of bulk strings.
pub(super) fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Sends `args` and reads one reply.
pub(super) fn call<S: Read + Write>(
    stream: &mut BufReader<S>,
    args: &[&[u8]],
) -> Result<Reply, StoreError> {
    stream
        .get_mut()
        .write_all(&encode(args))
        .map_err(|e| StoreError::Unreachable(e.to_string()))?;
    read_reply(stream, 0)
}

fn read_line<R: BufRead>(r: &mut R) -> Result<String, StoreError> {
    let mut line = Vec::new();
    let n = r
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .map_err(|e| StoreError::Unreachable(e.to_string()))?;
    if n == 0 {
        return Err(StoreError::Unreachable("connection closed".into()));
    }
    if !line.ends_with(b"\r\n") {
        return Err(StoreError::Protocol(
            "reply line too long or unterminated".into(),
        ));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| StoreError::Protocol("reply line is not UTF-8".into()))
}

fn parse_len(s: &str) -> Result<Option<usize>, StoreError> {
    let n: i64 = s
        .parse()
        .map_err(|_| StoreError::Protocol(format!("bad length {s:?}")))?;
    if n < 0 {
        return Ok(None);
    }
    let n = usize::try_from(n).map_err(|_| StoreError::Protocol("length".into()))?;
    if n > MAX_BULK {
        return Err(StoreError::Protocol(format!(
            "reply of {n} bytes is too large"
        )));
    }
    Ok(Some(n))
}

/// Reads one reply; `depth` bounds nesting.
pub(super) fn read_reply<R: BufRead>(r: &mut R, depth: usize) -> Result<Reply, StoreError> {
    if depth > 4 {
        return Err(StoreError::Protocol("reply nested too deeply".into()));
    }
    let line = read_line(r)?;
    let (kind, rest) = line.split_at(line.len().min(1));
    match kind {
        "+" => Ok(Reply::Simple(rest.to_owned())),
        "-" => Ok(Reply::Error(rest.to_owned())),
        ":" => rest
            .parse()
            .map(Reply::Integer)
            .map_err(|_| StoreError::Protocol(format!("bad integer {rest:?}"))),
        "$" => match parse_len(rest)? {
            None => Ok(Reply::Bulk(None)),
            Some(n) => {
                let mut body = vec![0; n + 2];
                r.read_exact(&mut body)
                    .map_err(|e| StoreError::Unreachable(e.to_string()))?;
                if !body.ends_with(b"\r\n") {
                    return Err(StoreError::Protocol("bulk string unterminated".into()));
                }
                body.truncate(n);
                Ok(Reply::Bulk(Some(body)))
            }
        },
        "*" => match parse_len(rest)? {
            None => Ok(Reply::Array(None)),
            Some(n) if n > 64 => Err(StoreError::Protocol("array too long".into())),
            Some(n) => (0..n)
                .map(|_| read_reply(r, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| Reply::Array(Some(v))),
        },
        _ => Err(StoreError::Protocol(format!("unexpected reply {line:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<Reply, StoreError> {
        read_reply(&mut BufReader::new(bytes), 0)
    }

    #[test]
    fn encodes_commands_as_bulk_arrays() {
        assert_eq!(encode(&[b"GET", b"k"]), b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    }

    #[test]
    fn parses_every_reply_kind() {
        assert_eq!(parse(b"+OK\r\n"), Ok(Reply::Simple("OK".into())));
        assert_eq!(parse(b"-ERR x\r\n"), Ok(Reply::Error("ERR x".into())));
        assert_eq!(parse(b":12\r\n"), Ok(Reply::Integer(12)));
        assert_eq!(parse(b"$-1\r\n"), Ok(Reply::Bulk(None)));
        assert_eq!(
            parse(b"$2\r\nab\r\n"),
            Ok(Reply::Bulk(Some(b"ab".to_vec())))
        );
        assert_eq!(
            parse(b"*2\r\n:1\r\n$0\r\n\r\n"),
            Ok(Reply::Array(Some(vec![
                Reply::Integer(1),
                Reply::Bulk(Some(vec![]))
            ])))
        );
    }

    #[test]
    fn malformed_replies_are_errors() {
        for bad in [
            &b""[..],
            b"?\r\n",
            b"$5\r\nab\r\n",
            b"$99999999999\r\n",
            b":x\r\n",
            b"+OK",
            b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
            b"$2\r\nabcd",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
