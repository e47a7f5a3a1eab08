//! The upgrade check: a client must present a lockfile's token in the header of an agent we
//! serve (each agent's module names its header), exactly once, before the WebSocket
//! upgrade; anything else is answered with HTTP 401. Which header and token it presented says
//! which agent it is, and which launch of ours it came from.

use std::sync::Arc;

use parking_lot::RwLock;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

use crate::agents::Agent;

/// One way in over the WebSocket: an agent's header with a token, from one of our lockfiles.
#[derive(Debug, Clone)]
pub struct Credential {
    pub agent: &'static Agent,
    pub token: String,
    /// The launch this token was made for (its lockfile is in a folder only that agent reads).
    pub tag: Option<String>,
}

impl Credential {
    fn header(&self) -> &'static str {
        self.agent.header().unwrap_or_default()
    }
}

/// The credentials accepted now: the server adds to them as it serves more agents.
pub type Credentials = Arc<RwLock<Vec<Credential>>>;

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

/// Checks one upgrade request against the credentials: exactly one of their headers, once,
/// holding a token of that header. Returns the credential it matched.
pub fn check<'c>(request: &Request, accepted: &'c [Credential]) -> Result<&'c Credential, Refusal> {
    if request.uri().path() != "/" {
        return Err(Refusal::NotFound);
    }
    let mut headers: Vec<&str> = accepted.iter().map(Credential::header).collect();
    headers.sort_unstable();
    headers.dedup();
    let mut values = headers
        .iter()
        .flat_map(|h| request.headers().get_all(*h).iter().map(move |v| (*h, v)));
    let Some((header, value)) = values.next() else {
        return Err(Refusal::MissingToken);
    };
    if values.next().is_some() {
        return Err(Refusal::RepeatedToken);
    }
    // Every token of that header is compared, in time that does not depend on which matched.
    let matched = accepted
        .iter()
        .filter(|c| c.header() == header)
        .fold(None, |found, c| match constant_time_eq(value.as_bytes(), c.token.as_bytes()) {
            true => Some(c),
            false => found,
        });
    matched.ok_or(Refusal::WrongToken)
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
            "pi-ide: missing or wrong authorization header",
        ),
    };
    let mut resp = ErrorResponse::new(Some(body.to_owned()));
    *resp.status_mut() = status;
    resp
}

/// A tungstenite handshake callback that applies [`check`] and records the outcome. A client
/// that asks for the `mcp` subprotocol gets it echoed.
pub struct UpgradeCheck<'a> {
    pub accepted: &'a [Credential],
    pub refused: &'a mut Option<Refusal>,
    /// The credential it came with, when it passed.
    pub matched: &'a mut Option<Credential>,
    /// Takes a client slot for a request that passed the token check; false (no room) is 503.
    pub admit: &'a (dyn Fn() -> bool + Sync),
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
        let checked = check(request, self.accepted);
        let checked = match checked {
            Ok(_) if !(self.admit)() => Err(Refusal::Full),
            other => other,
        };
        match checked {
            Ok(credential) => {
                *self.matched = Some(credential.clone());
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

    /// The home agent's header, and another WebSocket agent with its own.
    const HEADER: &str = "x-pi-ide-authorization";

    fn other() -> (&'static Agent, &'static str) {
        let a = crate::agents::ALL.iter().find(|a| a.header().is_some_and(|h| h != HEADER)).unwrap();
        (a, a.header().unwrap())
    }

    fn cred(agent: &'static Agent, token: &str, tag: Option<&str>) -> Credential {
        Credential { agent, token: token.into(), tag: tag.map(Into::into) }
    }

    fn pi(token: &str) -> Credential {
        cred(crate::agents::HOME, token, None)
    }

    /// Which agent and tag the request passed as.
    fn check_as(request: &Request, accepted: &[Credential]) -> Result<(&'static str, Option<String>), Refusal> {
        super::check(request, accepted).map(|c| (c.agent.name, c.tag.clone()))
    }

    fn check(request: &Request, token: &str) -> Result<(), Refusal> {
        super::check(request, &[pi(token)]).map(|_| ())
    }

    #[test]
    fn a_header_counts_only_while_its_agent_is_served_and_tells_the_agent() {
        let t = "tok";
        let (agent, header) = other();
        let both = [pi(t), cred(agent, t, None)];
        assert_eq!(check_as(&req("/", &[(header, t)]), &both[..1]), Err(Refusal::MissingToken));
        assert_eq!(check_as(&req("/", &[(header, t)]), &both), Ok((agent.name, None)));
        assert_eq!(check_as(&req("/", &[(HEADER, t)]), &both), Ok(("pi", None)));
        assert_eq!(
            check_as(&req("/", &[(HEADER, t), (header, t)]), &both),
            Err(Refusal::RepeatedToken)
        );
        // A launch's own token tells the launch; another agent's header does not take it.
        let launched = [pi(t), cred(crate::agents::HOME, "chat-token", Some("chat"))];
        assert_eq!(check_as(&req("/", &[(HEADER, "chat-token")]), &launched), Ok(("pi", Some("chat".into()))));
        assert_eq!(check_as(&req("/", &[(HEADER, t)]), &launched), Ok(("pi", None)));
        assert_eq!(check_as(&req("/", &[(header, "chat-token")]), &launched), Err(Refusal::MissingToken));
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
