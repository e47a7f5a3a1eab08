//! The upgrade check: a client must present the lockfile's token in `x-pi-ide-authorization`,
//! exactly once, before the WebSocket upgrade; anything else is answered with HTTP 401.

use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

pub const HEADER: &str = "x-pi-ide-authorization";
/// Claude Code's name for the same header (accepted only with Claude Code compatibility on).
pub const CLAUDE_HEADER: &str = "x-claude-code-ide-authorization";

/// A fresh token: a UUID v4 from the operating system's random source.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Compares in time that depends only on the lengths, never on where the bytes differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why an upgrade request was refused (for the log; the client only sees the status).
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    NotFound,
    MissingToken,
    RepeatedToken,
    WrongToken,
    /// As many clients as we serve are connected (HTTP 503).
    Full,
}

/// Checks one upgrade request against `token`: exactly one of the `accepted` headers, once.
pub fn check(request: &Request, token: &str, accepted: &[&str]) -> Result<(), Refusal> {
    if request.uri().path() != "/" {
        return Err(Refusal::NotFound);
    }
    let mut values = accepted
        .iter()
        .flat_map(|h| request.headers().get_all(*h).iter());
    let Some(value) = values.next() else {
        return Err(Refusal::MissingToken);
    };
    if values.next().is_some() {
        return Err(Refusal::RepeatedToken);
    }
    if constant_time_eq(value.as_bytes(), token.as_bytes()) {
        Ok(())
    } else {
        Err(Refusal::WrongToken)
    }
}

/// The HTTP answer for a refused upgrade.
pub fn refusal_response(refusal: &Refusal) -> ErrorResponse {
    let (status, body) = match refusal {
        Refusal::NotFound => (StatusCode::NOT_FOUND, "pi-ide: the WebSocket endpoint is /"),
        Refusal::Full => (
            StatusCode::SERVICE_UNAVAILABLE,
            "pi-ide: too many clients are connected to this editor",
        ),
        _ => (
            StatusCode::UNAUTHORIZED,
            "pi-ide: missing or wrong x-pi-ide-authorization",
        ),
    };
    let mut resp = ErrorResponse::new(Some(body.to_owned()));
    *resp.status_mut() = status;
    resp
}

/// A tungstenite handshake callback that applies [`check`] and records the outcome. A client
/// that asks for the `mcp` subprotocol (Claude Code does) gets it echoed.
pub struct UpgradeCheck<'a> {
    pub token: &'a str,
    pub accepted: &'a [&'a str],
    pub refused: &'a mut Option<Refusal>,
    /// Takes a client slot for a request that passed the token check; false (no room) is 503.
    pub admit: &'a (dyn Fn() -> bool + Sync),
    /// Set when the client came in with Claude Code's header (it gets Claude Code's shapes).
    pub claude: &'a std::sync::atomic::AtomicBool,
}

fn asks_for_mcp(request: &Request) -> bool {
    request
        .headers()
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == "mcp")
}

impl tokio_tungstenite::tungstenite::handshake::server::Callback for UpgradeCheck<'_> {
    fn on_request(
        self,
        request: &Request,
        mut response: Response,
    ) -> Result<Response, ErrorResponse> {
        let checked = check(request, self.token, self.accepted);
        let checked = match checked {
            Ok(()) if !(self.admit)() => Err(Refusal::Full),
            other => other,
        };
        match checked {
            Ok(()) => {
                self.claude.store(
                    request.headers().contains_key(CLAUDE_HEADER),
                    std::sync::atomic::Ordering::Relaxed,
                );
                if asks_for_mcp(request) {
                    response.headers_mut().insert(
                        "sec-websocket-protocol",
                        "mcp".parse().expect("valid header"),
                    );
                }
                Ok(response)
            }
            Err(r) => {
                let resp = refusal_response(&r);
                *self.refused = Some(r);
                Err(resp)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(path: &str, headers: &[(&str, &str)]) -> Request {
        let mut b = Request::builder().uri(path);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn tokens_are_uuid_v4_and_distinct() {
        let a = new_token();
        let b = new_token();
        assert_ne!(a, b);
        let u = uuid::Uuid::parse_str(&a).unwrap();
        assert_eq!(u.get_version_num(), 4);
    }

    fn check(request: &Request, token: &str) -> Result<(), Refusal> {
        super::check(request, token, &[HEADER])
    }

    #[test]
    fn claude_header_counts_only_when_accepted() {
        let t = "tok";
        let both = [HEADER, CLAUDE_HEADER];
        assert_eq!(
            super::check(&req("/", &[(CLAUDE_HEADER, t)]), t, &[HEADER]),
            Err(Refusal::MissingToken)
        );
        assert_eq!(
            super::check(&req("/", &[(CLAUDE_HEADER, t)]), t, &both),
            Ok(())
        );
        assert_eq!(super::check(&req("/", &[(HEADER, t)]), t, &both), Ok(()));
        assert_eq!(
            super::check(&req("/", &[(HEADER, t), (CLAUDE_HEADER, t)]), t, &both),
            Err(Refusal::RepeatedToken)
        );
        assert!(asks_for_mcp(&req(
            "/",
            &[("Sec-WebSocket-Protocol", "foo, mcp")]
        )));
        assert!(!asks_for_mcp(&req(
            "/",
            &[("Sec-WebSocket-Protocol", "mcpx")]
        )));
    }

    #[test]
    fn only_the_exact_token_once_on_root_passes() {
        let t = "0b6e8f2c-1f1e-4a53-9e0e-2f3e4d5c6b7a";
        assert_eq!(check(&req("/", &[(HEADER, t)]), t), Ok(()));
        assert_eq!(
            check(&req("/", &[("X-Pi-Ide-Authorization", t)]), t),
            Ok(()),
            "header names are case-insensitive"
        );
        assert_eq!(check(&req("/", &[]), t), Err(Refusal::MissingToken));
        assert_eq!(
            check(&req("/", &[(HEADER, "")]), t),
            Err(Refusal::WrongToken)
        );
        assert_eq!(
            check(&req("/", &[(HEADER, &t.to_uppercase())]), t),
            Err(Refusal::WrongToken)
        );
        assert_eq!(
            check(&req("/", &[(HEADER, &t[..35])]), t),
            Err(Refusal::WrongToken)
        );
        assert_eq!(
            check(&req("/", &[(HEADER, &format!("{t}x"))]), t),
            Err(Refusal::WrongToken)
        );
        assert_eq!(
            check(&req("/", &[(HEADER, &format!(" {t}"))]), t),
            Err(Refusal::WrongToken)
        );
        assert_eq!(
            check(&req("/", &[(HEADER, t), (HEADER, t)]), t),
            Err(Refusal::RepeatedToken)
        );
        assert_eq!(
            check(&req("/other", &[(HEADER, t)]), t),
            Err(Refusal::NotFound)
        );
        assert_eq!(check(&req("/?x=1", &[(HEADER, t)]), t), Ok(()));
    }

    #[test]
    fn refusals_are_401_or_404() {
        assert_eq!(
            refusal_response(&Refusal::WrongToken).status(),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            refusal_response(&Refusal::NotFound).status(),
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn constant_time_eq_matches_eq() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }
}
