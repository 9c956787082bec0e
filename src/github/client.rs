//! The REST transport: octocrab's raw request methods, with retries, timeouts and
//! same-origin pagination links. Private to `github`.
//!
//! Requests are made with paths relative to `GITHUB_API_URL`; octocrab joins them onto the
//! base URI and adds the `Authorization` header only to requests bound for that host.
//! Non-2xx answers are not errors at this level: they come back as a [`Reply`] for the
//! caller to judge, except that retryable ones (5xx, 429, rate-limit 403s) are retried first.

use std::error::Error as StdError;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::BodyExt;
use octocrab::Octocrab;

use super::{GithubEnv, GithubError, RetryPolicy, Token};

/// The most bytes of one answer that are read (a page of 100 comments of 64 KiB each is
/// under 7 MiB); a larger answer is an error, never held whole in memory.
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The HTTP methods the comment needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Patch,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
        })
    }
}

/// One answer from GitHub, whatever its status.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reply {
    pub status: u16,
    pub retry_after: Option<String>,
    pub ratelimit_remaining: Option<String>,
    pub ratelimit_reset: Option<String>,
    pub link: Option<String>,
    pub body: String,
}

impl Reply {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// 429, or a 403 that is a (primary or secondary) rate limit rather than a refusal:
    /// `x-ratelimit-remaining: 0`, a `Retry-After`, or GitHub's "... rate limit ..." message.
    pub fn is_rate_limited(&self) -> bool {
        self.status == 429
            || (self.status == 403
                && (self.ratelimit_remaining.as_deref().map(str::trim) == Some("0")
                    || self.retry_after.is_some()
                    || self.message().to_ascii_lowercase().contains("rate limit")))
    }

    pub fn is_server_error(&self) -> bool {
        (500..600).contains(&self.status)
    }

    /// GitHub's `message` field, else the start of the body.
    pub fn message(&self) -> String {
        let from_json = serde_json::from_str::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_owned));
        let text = from_json.unwrap_or_else(|| self.body.trim().to_owned());
        if text.is_empty() {
            "(empty body)".to_owned()
        } else {
            shorten(&text, 200)
        }
    }

    /// `503 (Service Unavailable)`-style short description for error messages.
    pub fn describe(&self) -> String {
        format!("{} {}", self.status, self.message())
    }
}

/// At most `max` bytes of `text` on one line, cut at a char boundary, with `…` if cut.
fn shorten(text: &str, max: usize) -> String {
    let one_line = text.replace(['\r', '\n'], " ");
    if one_line.len() <= max {
        return one_line;
    }
    let mut cut = max;
    while !one_line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &one_line[..cut])
}

/// How long to wait before retrying after `reply` on attempt `attempt` (1-based), or `None`
/// when the answer is final (success, or an error that a retry cannot fix).
///
/// `Retry-After` (seconds) wins, then a rate limit's `x-ratelimit-reset`, then exponential
/// backoff from `base_delay`; every wait is capped at `max_delay`.
pub(crate) fn retry_delay(
    reply: &Reply,
    attempt: u32,
    policy: &RetryPolicy,
    now_unix: u64,
) -> Option<Duration> {
    if !(reply.is_rate_limited() || reply.is_server_error()) {
        return None;
    }
    let seconds = |v: &Option<String>| v.as_deref().and_then(|s| s.trim().parse::<u64>().ok());
    if let Some(secs) = seconds(&reply.retry_after) {
        return Some(Duration::from_secs(secs).min(policy.max_delay));
    }
    if reply.ratelimit_remaining.as_deref().map(str::trim) == Some("0") {
        if let Some(reset) = seconds(&reply.ratelimit_reset) {
            let wait = Duration::from_secs(reset.saturating_sub(now_unix));
            return Some(wait.max(policy.base_delay).min(policy.max_delay));
        }
    }
    Some(backoff(attempt, policy))
}

/// `base_delay · 2^(attempt−1)`, capped at `max_delay`.
pub(crate) fn backoff(attempt: u32, policy: &RetryPolicy) -> Duration {
    let doublings = attempt.saturating_sub(1).min(20);
    policy
        .base_delay
        .saturating_mul(1u32 << doublings)
        .min(policy.max_delay)
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The URL of the `rel="next"` entry of a `Link` header.
pub(crate) fn next_link(header: &str) -> Option<String> {
    for entry in header.split(',') {
        let mut parts = entry.split(';');
        let Some(url) = parts.next().map(str::trim) else {
            continue;
        };
        let Some(url) = url.strip_prefix('<').and_then(|u| u.strip_suffix('>')) else {
            continue;
        };
        let is_next = parts.any(|p| {
            let Some((key, value)) = p.split_once('=') else {
                return false;
            };
            key.trim().eq_ignore_ascii_case("rel")
                && value
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|rel| rel.eq_ignore_ascii_case("next"))
        });
        if is_next {
            return Some(url.to_owned());
        }
    }
    None
}

/// Where the API lives: `scheme://authority` (lower case) and the path prefix
/// (`/api/v3` on GitHub Enterprise, empty on github.com).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiBase {
    origin: String,
    prefix: String,
}

/// A port number: 1 to 5 digits.
fn is_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

/// Split `scheme://authority/rest` into (`scheme://authority` lower-cased, `/rest`).
fn split_origin(url: &str) -> Option<(String, &str)> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let scheme_len = if lower.starts_with("https://") {
        8
    } else if lower.starts_with("http://") {
        7
    } else {
        return None;
    };
    let rest = &url[scheme_len..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let origin = format!("{}{}", &url[..scheme_len], authority).to_ascii_lowercase();
    Some((origin, &rest[end..]))
}

impl ApiBase {
    pub fn parse(api_url: &str) -> Option<ApiBase> {
        let (origin, rest) = split_origin(api_url)?;
        let path = rest.split(['?', '#']).next().unwrap_or("");
        Some(ApiBase {
            origin,
            prefix: path.trim_end_matches('/').to_owned(),
        })
    }

    /// Whether the token may be sent here: https, or plain http to a loopback address only
    /// (127.0.0.0/8, `localhost`, `[::1]`: a local test server or proxy).
    pub fn is_secure(&self) -> bool {
        if self.origin.starts_with("https://") {
            return true;
        }
        let Some(authority) = self.origin.strip_prefix("http://") else {
            return false;
        };
        let host = if let Some(v6) = authority.strip_prefix('[') {
            match v6.split_once(']') {
                Some((addr, port))
                    if port.is_empty() || port.strip_prefix(':').is_some_and(is_port) =>
                {
                    return addr
                        .parse::<std::net::Ipv6Addr>()
                        .is_ok_and(|a| a.is_loopback());
                }
                _ => return false,
            }
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) if is_port(port) => host,
                Some(_) => return false,
                None => authority,
            }
        };
        host == "localhost"
            || host == "localhost."
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|a| a.is_loopback())
    }

    /// The path and query of `url` when it points at this API (same scheme and host),
    /// ready to request; `None` for any other host.
    pub fn target_of(&self, url: &str) -> Option<String> {
        if url.starts_with('/') && !url.starts_with("//") {
            return Some(url.to_owned());
        }
        let (origin, rest) = split_origin(url)?;
        if origin != self.origin {
            return None;
        }
        let rest = rest.split('#').next().unwrap_or("");
        Some(if rest.starts_with('/') {
            rest.to_owned()
        } else {
            format!("/{rest}")
        })
    }
}

/// A client for one run: octocrab with the token, the API base, the retry policy.
pub(crate) struct Rest {
    octo: Octocrab,
    base: ApiBase,
    policy: RetryPolicy,
    token: Token,
}

/// The error and its causes on one line, without repeats.
fn error_chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = e.source();
    }
    shorten(&text, 300)
}

impl Rest {
    /// Build the client. Must run inside a tokio runtime (octocrab spawns its worker).
    pub fn new(env: &GithubEnv, token: &Token) -> Result<Rest, GithubError> {
        if !token.is_header_safe() {
            return Err(GithubError::BadToken);
        }
        let shown_url = token.scrub(&env.api_url);
        let base = ApiBase::parse(&env.api_url).ok_or(GithubError::BadApiUrl(shown_url.clone()))?;
        if !base.is_secure() {
            return Err(GithubError::InsecureApiUrl(shown_url));
        }
        let builder = Octocrab::builder()
            .base_uri(env.api_url.as_str())
            .map_err(|_| GithubError::BadApiUrl(shown_url))?
            .personal_token(token.expose_secret().to_owned())
            .set_connect_timeout(Some(env.retry.request_timeout))
            .set_read_timeout(Some(env.retry.request_timeout));
        let octo = builder
            .build()
            .map_err(|e| GithubError::Client(token.scrub(&error_chain(&e))))?;
        Ok(Rest {
            octo,
            base,
            policy: env.retry.clone(),
            token: token.clone(),
        })
    }

    pub fn scrub(&self, text: &str) -> String {
        self.token.scrub(text)
    }

    /// `GET https://api.github.com/repos/…`: the whole URL, for errors about the answer.
    pub fn request_url(&self, method: Method, target: &str) -> String {
        let prefix = &self.base.prefix;
        let path = if prefix.is_empty() || target.starts_with(prefix.as_str()) {
            target.to_owned()
        } else {
            format!("{prefix}{target}")
        };
        self.scrub(&format!("{method} {}{path}", self.base.origin))
    }

    /// `GET /repos/…` as named in messages (with the API path prefix).
    pub fn request_name(&self, method: Method, target: &str) -> String {
        let prefix = &self.base.prefix;
        if prefix.is_empty() || target.starts_with(prefix.as_str()) {
            self.scrub(&format!("{method} {target}"))
        } else {
            self.scrub(&format!("{method} {prefix}{target}"))
        }
    }

    /// The target for a pagination link, or an error if it leaves the API's host.
    pub fn link_target(&self, request: &str, url: &str) -> Result<String, GithubError> {
        self.base
            .target_of(url)
            .ok_or_else(|| GithubError::ForeignLink {
                request: request.to_owned(),
                url: self.scrub(&shorten(url, 200)),
            })
    }

    /// One request, no retries. The inner `Err` is a transport failure, described without
    /// the token (worth retrying); the outer one an answer larger than [`MAX_BODY_BYTES`]
    /// (not worth it).
    pub async fn once(
        &self,
        method: Method,
        target: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Result<Reply, String>, GithubError> {
        let too_large = || GithubError::TooLarge {
            request: self.request_url(method, target),
            limit_mib: MAX_BODY_BYTES / (1024 * 1024),
        };
        // `Ok(None)`: the answer is larger than the limit.
        let exchange = async {
            let uri = target.to_owned();
            let response = match method {
                Method::Get => self.octo._get(uri).await,
                Method::Post => self.octo._post(uri, body).await,
                Method::Patch => self.octo._patch(uri, body).await,
            }
            .map_err(|e| error_chain(&e))?;
            let mut reply = {
                let header = |name: &str| {
                    response
                        .headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                };
                Reply {
                    status: response.status().as_u16(),
                    retry_after: header("retry-after"),
                    ratelimit_remaining: header("x-ratelimit-remaining"),
                    ratelimit_reset: header("x-ratelimit-reset"),
                    link: header("link"),
                    body: String::new(),
                }
            };
            let declared = response
                .headers()
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
                return Ok(None);
            }
            // Frame by frame, stopping at the limit: a server that streams without end (or
            // lies in Content-Length) costs at most MAX_BODY_BYTES of memory.
            let mut stream = response.into_body();
            let mut bytes: Vec<u8> = Vec::new();
            while let Some(frame) = stream.frame().await {
                let frame = frame.map_err(|e| error_chain(&e))?;
                if let Ok(data) = frame.into_data() {
                    if bytes.len() + data.len() > MAX_BODY_BYTES {
                        return Ok(None);
                    }
                    bytes.extend_from_slice(&data);
                }
            }
            reply.body =
                String::from_utf8(bytes).map_err(|_| "the answer is not UTF-8 text".to_owned())?;
            Ok::<Option<Reply>, String>(Some(reply))
        };
        match tokio::time::timeout(self.policy.request_timeout, exchange).await {
            Ok(Ok(Some(reply))) => Ok(Ok(reply)),
            Ok(Ok(None)) => Err(too_large()),
            Ok(Err(e)) => Ok(Err(self.scrub(&format!("connection error: {e}")))),
            Err(_) => Ok(Err(format!(
                "no answer within {} s",
                self.policy.request_timeout.as_secs_f64()
            ))),
        }
    }

    /// The wait before retrying after this outcome of attempt `attempt`, or `None` if final.
    pub fn delay_after(&self, outcome: &Result<Reply, String>, attempt: u32) -> Option<Duration> {
        match outcome {
            Ok(reply) => retry_delay(reply, attempt, &self.policy, now_unix()),
            Err(_) => Some(backoff(attempt, &self.policy)),
        }
    }

    /// One-line description of an outcome for the "gave up" error.
    pub fn describe(&self, outcome: &Result<Reply, String>) -> String {
        match outcome {
            Ok(reply) => self.scrub(&reply.describe()),
            Err(transport) => self.scrub(transport),
        }
    }

    pub fn attempts(&self) -> u32 {
        self.policy.max_attempts.max(1)
    }

    /// A request, retried on 5xx, 429, rate-limit 403s and connection errors, up to the
    /// policy's attempts. Any other answer (2xx or not) is returned for the caller to judge.
    pub async fn send(
        &self,
        method: Method,
        target: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, GithubError> {
        let attempts = self.attempts();
        let mut attempt = 1;
        loop {
            let outcome = self.once(method, target, body).await?;
            let Some(delay) = self.delay_after(&outcome, attempt) else {
                // Final answer: only replies get here (transport errors always retry).
                return outcome.map_err(|e| GithubError::GaveUp {
                    request: self.request_name(method, target),
                    attempts: attempt,
                    last: e,
                });
            };
            if attempt >= attempts {
                return Err(GithubError::GaveUp {
                    request: self.request_name(method, target),
                    attempts,
                    last: self.describe(&outcome),
                });
            }
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16) -> Reply {
        Reply {
            status,
            ..Reply::default()
        }
    }

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(1000),
            max_delay: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
        }
    }

    #[test]
    fn final_answers_are_not_retried() {
        for status in [200, 201, 204, 301, 400, 401, 404, 422] {
            assert_eq!(
                retry_delay(&reply(status), 1, &policy(), 0),
                None,
                "{status}"
            );
        }
        // A 403 that is a refusal (read-only token), not a rate limit.
        let mut refusal = reply(403);
        refusal.ratelimit_remaining = Some("4999".into());
        assert_eq!(retry_delay(&refusal, 1, &policy(), 0), None);
        refusal.body = r#"{"message":"Resource not accessible by integration"}"#.into();
        assert_eq!(retry_delay(&refusal, 1, &policy(), 0), None);
        // A secondary rate limit that only says so in its message.
        refusal.body = r#"{"message":"You have exceeded a secondary rate limit."}"#.into();
        assert_eq!(
            retry_delay(&refusal, 2, &policy(), 0),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn server_errors_back_off_exponentially_with_a_cap() {
        let p = policy();
        let d = |attempt| retry_delay(&reply(502), attempt, &p, 0).unwrap();
        assert_eq!(d(1), Duration::from_secs(1));
        assert_eq!(d(2), Duration::from_secs(2));
        assert_eq!(d(3), Duration::from_secs(4));
        assert_eq!(d(10), Duration::from_secs(60));
        assert_eq!(d(u32::MAX), Duration::from_secs(60));
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let mut r = reply(429);
        r.retry_after = Some("1".into());
        assert_eq!(
            retry_delay(&r, 3, &policy(), 0),
            Some(Duration::from_secs(1))
        );
        r.retry_after = Some("3600".into());
        assert_eq!(
            retry_delay(&r, 1, &policy(), 0),
            Some(Duration::from_secs(60))
        );
        // A secondary rate limit: 403 with Retry-After.
        let mut r = reply(403);
        r.retry_after = Some("5".into());
        assert_eq!(
            retry_delay(&r, 1, &policy(), 0),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn primary_rate_limit_waits_for_reset() {
        let mut r = reply(403);
        r.ratelimit_remaining = Some("0".into());
        r.ratelimit_reset = Some("1010".into());
        assert_eq!(
            retry_delay(&r, 1, &policy(), 1000),
            Some(Duration::from_secs(10))
        );
        // Reset already passed: the base delay, not zero.
        assert_eq!(
            retry_delay(&r, 1, &policy(), 2000),
            Some(Duration::from_secs(1))
        );
        // No reset header: backoff.
        r.ratelimit_reset = None;
        assert_eq!(
            retry_delay(&r, 2, &policy(), 0),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn link_header_next() {
        let h = r#"<https://api.github.com/repositories/1/issues/5/comments?per_page=100&page=2>; rel="next", <https://api.github.com/repositories/1/issues/5/comments?per_page=100&page=3>; rel="last""#;
        assert_eq!(
            next_link(h).as_deref(),
            Some("https://api.github.com/repositories/1/issues/5/comments?per_page=100&page=2")
        );
        let last_page = r#"<https://x/a?page=1>; rel="first", <https://x/a?page=2>; rel="prev""#;
        assert_eq!(next_link(last_page), None);
        assert_eq!(next_link(""), None);
        assert_eq!(next_link("garbage; rel=next"), None);
        assert_eq!(
            next_link("<https://x/b>; rel=next").as_deref(),
            Some("https://x/b")
        );
    }

    #[test]
    fn api_base_accepts_only_its_own_origin() {
        let base = ApiBase::parse("https://API.github.com").unwrap();
        assert_eq!(
            base.target_of("https://api.github.com/repositories/1/issues/5/comments?page=2")
                .as_deref(),
            Some("/repositories/1/issues/5/comments?page=2")
        );
        assert_eq!(base.target_of("/repos/a/b").as_deref(), Some("/repos/a/b"));
        assert_eq!(base.target_of("https://evil.example.com/repos/a/b"), None);
        assert_eq!(base.target_of("http://api.github.com/repos/a/b"), None);
        assert_eq!(base.target_of("https://api.github.com.evil.com/x"), None);
        assert_eq!(base.target_of("https://user@api.github.com/x"), None);
        assert_eq!(base.target_of("//evil.example.com/x"), None);

        let ghe = ApiBase::parse("https://ghe.example.com/api/v3/").unwrap();
        assert_eq!(ghe.prefix, "/api/v3");
        assert_eq!(
            ghe.target_of("https://ghe.example.com/api/v3/repositories/1/issues/2/comments?page=2")
                .as_deref(),
            Some("/api/v3/repositories/1/issues/2/comments?page=2")
        );
        assert!(ApiBase::parse("ftp://x").is_none());
        assert!(ApiBase::parse("https://tok@api.github.com").is_none());
        assert!(ApiBase::parse("api.github.com").is_none());
    }

    #[test]
    fn the_token_goes_only_over_https_or_to_loopback() {
        let secure = |u: &str| ApiBase::parse(u).is_some_and(|b| b.is_secure());
        for ok in [
            "https://api.github.com",
            "HTTPS://ghe.example.com/api/v3",
            "http://127.0.0.1:8080",
            "http://127.0.0.1",
            "http://127.255.1.2:1",
            "http://localhost:3000/api",
            "http://LOCALHOST",
            "http://[::1]:9000",
            "http://[::1]",
        ] {
            assert!(secure(ok), "{ok}");
        }
        for bad in [
            "http://api.github.com",
            "http://example.com:80",
            "http://127.0.0.1.evil.example",
            "http://127.0.0.1:80:80",
            "http://localhost.evil.example",
            "http://10.0.0.1",
            "http://0.0.0.0",
            "http://[::2]:80",
            "http://[::1]x",
            "http://127.1",
            "http://127.0.0.1:",
            "http://127.0.0.1:123456",
        ] {
            assert!(!secure(bad), "{bad}");
        }
    }

    #[test]
    fn reply_message_prefers_github_message() {
        let mut r = reply(403);
        r.body = r#"{"message":"Resource not accessible by integration","documentation_url":"x"}"#
            .into();
        assert_eq!(r.message(), "Resource not accessible by integration");
        r.body = "<html>\nBad gateway</html>".into();
        assert_eq!(r.message(), "<html> Bad gateway</html>");
        r.body = String::new();
        assert_eq!(r.describe(), "403 (empty body)");
        r.body = "é".repeat(300);
        assert!(r.message().len() <= 204 && r.message().ends_with('…'));
    }
}
