//! Loopback HTTP servers for the integration tests: wiremock, and the
//! requests it recorded read back as plain values.

use std::collections::BTreeMap;

use serde_json::Value;
use wiremock::matchers::{any, method, path_regex};
use wiremock::{Mock, MockBuilder, MockServer, Request, Respond, ResponseTemplate};

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The path and, if any, `?` and the query, as sent.
    pub path: String,
    /// Lower-case names; a header sent more than once has its values
    /// joined by ", " (RFC 9110 5.3).
    pub headers: BTreeMap<String, String>,
    /// The JSON body; Null for none, or one that is not JSON.
    pub body: Value,
}

impl Seen {
    pub fn new(r: &Request) -> Seen {
        let mut headers = BTreeMap::<String, String>::new();
        for (k, v) in &r.headers {
            let v = String::from_utf8_lossy(v.as_bytes());
            headers
                .entry(k.as_str().to_string())
                .and_modify(|all| *all = format!("{all}, {v}"))
                .or_insert_with(|| v.into_owned());
        }
        Seen {
            method: r.method.to_string(),
            path: match r.url.query() {
                Some(q) => format!("{}?{q}", r.url.path()),
                None => r.url.path().to_string(),
            },
            headers,
            body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The Authorization header, "" without one.
    pub fn auth(&self) -> &str {
        self.header("authorization").unwrap_or("")
    }

    /// "METHOD path".
    pub fn call(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// Every request `server` received, in order.
pub async fn seen(server: &MockServer) -> Vec<Seen> {
    server
        .received_requests()
        .await
        .expect("wiremock records requests")
        .iter()
        .map(Seen::new)
        .collect()
}

/// "METHOD path" of every request `server` received, in order.
pub async fn calls(server: &MockServer) -> Vec<String> {
    seen(server).await.iter().map(Seen::call).collect()
}

/// A server on 127.0.0.1 where `responder` answers every request.
pub async fn serve(responder: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

/// Matches a request without a query string: with `path`, what a
/// hand-written route's `target == "/..."` matched.
pub fn no_query(r: &Request) -> bool {
    r.url.query().is_none()
}

/// lore's thread mbox: `GET /all/<message-id>/t.mbox.gz`, any message-id.
pub fn lore_thread() -> MockBuilder {
    Mock::given(method("GET"))
        .and(path_regex(r"^/all/[^/]+/t\.mbox\.gz$"))
        .and(no_query)
}

/// 200 with `mbox` gzipped, as lore serves t.mbox.gz.
pub fn gzipped(mbox: &[u8]) -> ResponseTemplate {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(mbox).unwrap();
    ResponseTemplate::new(200).set_body_raw(enc.finish().unwrap(), "application/gzip")
}
