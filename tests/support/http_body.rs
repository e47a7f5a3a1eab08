//! Reading an HTTP/1.1 request body, for the loopback model mocks (anthropic_mock.rs,
//! openai_mock.rs): the agents send `Content-Length` or chunked bodies.

use std::io::BufRead;

/// The body after the head: chunked, or `length` bytes.
pub fn read_body(r: &mut impl BufRead, chunked: bool, length: usize) -> Option<Vec<u8>> {
    if chunked {
        read_chunked(r)
    } else {
        read_exact(r, length)
    }
}

fn read_exact(r: &mut impl BufRead, n: usize) -> Option<Vec<u8>> {
    let mut body = vec![0; n];
    r.read_exact(&mut body).ok()?;
    Some(body)
}

fn read_chunked(r: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let mut t = String::new();
                if r.read_line(&mut t).ok()? == 0 || t.trim().is_empty() {
                    return Some(body);
                }
            }
        }
        body.extend(read_exact(r, size)?);
        // The chunk's CRLF.
        read_exact(r, 2)?;
    }
}
