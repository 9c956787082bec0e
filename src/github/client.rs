//! The REST transport: octocrab's typed requests (`get`, `post`, `patch`, and [`Page`] for
//! pagination) under what octocrab does not do on its own: a cap on the size of an answer,
//! one deadline per exchange, and ci-gate's retry rules. Private to `github`.
//!
//! Paths are relative to `GITHUB_API_URL`; octocrab joins them onto the base URI and adds
//! the `Authorization` header only to requests bound for that host.
//!
//! [`Page`]: octocrab::Page

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{Method, Uri};
use http_body_util::{LengthLimitError, Limited};
use octocrab::{AuthState, OctoBody, Octocrab, OctocrabBuilder};

use super::{GithubEnv, GithubError, RetryPolicy, Token};

/// The most bytes of one answer that are read (a page of 100 comments of 64 KiB each is
/// under 7 MiB); a larger answer is an error, never held whole in memory.
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// An answer from GitHub that is not a success.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reply {
    pub status: u16,
    pub retry_after: Option<String>,
    pub ratelimit_remaining: Option<String>,
    pub ratelimit_reset: Option<String>,
    /// GitHub's `message` (else the start of the body) as octocrab read it: one line, bounded.
    pub message: String,
}

impl Reply {
    fn from_github(error: &octocrab::GitHubError) -> Reply {
        let header = |name: &str| {
            let value = error.headers.as_ref()?.get(name)?.to_str().ok()?;
            Some(value.to_owned())
        };
        let message = error.message.trim();
        Reply {
            status: error.status_code.as_u16(),
            retry_after: header("retry-after"),
            ratelimit_remaining: header("x-ratelimit-remaining"),
            ratelimit_reset: header("x-ratelimit-reset"),
            message: if message.is_empty() {
                "(empty body)".to_owned()
            } else {
                shorten(message, 200)
            },
        }
    }

    /// 429, or a 403 that is a (primary or secondary) rate limit rather than a refusal:
    /// `x-ratelimit-remaining: 0`, a `Retry-After`, or GitHub's "... rate limit ..." message.
    pub(crate) fn is_rate_limited(&self) -> bool {
        self.status == 429
            || (self.status == 403
                && (self.ratelimit_remaining.as_deref().map(str::trim) == Some("0")
                    || self.retry_after.is_some()
                    || self.message.to_ascii_lowercase().contains("rate limit")))
    }

    pub(crate) fn is_server_error(&self) -> bool {
        (500..600).contains(&self.status)
    }

    /// `503 Service Unavailable`-style short description for error messages.
    pub(crate) fn describe(&self) -> String {
        format!("{} {}", self.status, self.message)
    }
}

/// How one attempt ended when it did not succeed: an answer to judge, or none at all.
pub enum Failure {
    Answer(Reply),
    /// A connection error or no answer in time, described without the token.
    Transport(String),
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
/// when the answer is final (an error that a retry cannot fix).
///
/// `Retry-After` (seconds) wins, then a rate limit's `x-ratelimit-reset`, then exponential
/// backoff from `base_delay`; every wait is capped at `max_delay`.
///
/// octocrab's own retry (`RetryConfig`, feature "retry") cannot stand in: it caps no wait (a
/// `Retry-After: 3600` is an hour), retries 5xx at once without backoff, and retries a POST
/// after a 5xx, which may post the comment twice (see `Job::create`).
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
    if reply.ratelimit_remaining.as_deref().map(str::trim) == Some("0")
        && let Some(reset) = seconds(&reply.ratelimit_reset)
    {
        let wait = Duration::from_secs(reset.saturating_sub(now_unix));
        return Some(wait.max(policy.base_delay).min(policy.max_delay));
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

/// Where the API lives: `GITHUB_API_URL` parsed as octocrab parses it, an http(s) URL
/// without credentials; its path is the prefix (`/api/v3` on GitHub Enterprise).
#[derive(Clone, Debug)]
pub(crate) struct ApiBase {
    uri: Uri,
}

impl ApiBase {
    pub fn parse(api_url: &str) -> Option<ApiBase> {
        let uri: Uri = api_url.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?.as_str();
        if !(scheme == "https" || scheme == "http")
            || authority.is_empty()
            || authority.contains('@')
        {
            return None;
        }
        Some(ApiBase { uri })
    }

    /// `scheme://authority`, lower case.
    fn origin(&self) -> String {
        let scheme = self.uri.scheme_str().unwrap_or_default();
        let authority = self.uri.authority().map_or("", |a| a.as_str());
        format!("{scheme}://{authority}").to_ascii_lowercase()
    }

    /// The path prefix, without a trailing slash (empty on github.com).
    fn prefix(&self) -> &str {
        self.uri.path().trim_end_matches('/')
    }

    /// Whether the token may be sent here: https, or plain http to a loopback address only
    /// (127.0.0.0/8, `localhost`, `[::1]`: a local test server or proxy).
    pub(crate) fn is_secure(&self) -> bool {
        let Some(authority) = self.uri.authority() else {
            return false;
        };
        if self
            .uri
            .scheme_str()
            .unwrap_or_default()
            .eq_ignore_ascii_case("https")
        {
            return true;
        }
        // An empty or out-of-range port is not a loopback address one can name.
        let port_ok = match authority.as_str().rsplit_once(':') {
            Some((_, port)) if !port.ends_with(']') => port.parse::<u16>().is_ok(),
            _ => true,
        };
        let host = authority.host();
        port_ok
            && (host.eq_ignore_ascii_case("localhost")
                || host.eq_ignore_ascii_case("localhost.")
                || host
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|a| a.is_loopback())
                || host
                    .strip_prefix('[')
                    .and_then(|h| h.strip_suffix(']'))
                    .and_then(|h| h.parse::<std::net::Ipv6Addr>().ok())
                    .is_some_and(|a| a.is_loopback()))
    }

    /// Whether `link` points at this API (same scheme and host, or a path on it).
    pub(crate) fn owns(&self, link: &Uri) -> bool {
        match (link.scheme(), link.authority()) {
            (None, None) => link.path().starts_with('/'),
            (scheme, authority) => scheme == self.uri.scheme() && authority == self.uri.authority(),
        }
    }
}

/// An answer whose declared `Content-Length` is over [`MAX_BODY_BYTES`]: refused unread.
#[derive(Debug)]
struct DeclaredTooLarge;

impl fmt::Display for DeclaredTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the answer declares more than {MAX_BODY_BYTES} bytes")
    }
}

impl StdError for DeclaredTooLarge {}

/// Whether `error` (or one of its causes) is the cap on answers.
fn is_too_large(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<LengthLimitError>() || e.is::<DeclaredTooLarge>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// The error and its causes on one line, without repeats, leaving out octocrab's own
/// wrappers ("Service Error: …"), which only repeat their cause.
fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        if !(e.is::<octocrab::Error>() && e.source().is_some()) {
            let part = e.to_string();
            if !parts.iter().any(|p| p.contains(&part)) {
                parts.push(part);
            }
        }
        next = e.source();
    }
    if parts.is_empty() {
        parts.push(error.to_string());
    }
    shorten(&parts.join(": "), 300)
}

/// octocrab with the token and the API base (TLS, the base URI, the `Authorization` header
/// for the API's own host), wrapped in an outer octocrab whose one addition is the cap on
/// answers: each body is read frame by frame through [`Limited`], so a server that streams
/// without end (or lies in `Content-Length`) costs at most [`MAX_BODY_BYTES`] of memory, and
/// a declared length over the cap is refused unread. octocrab's default builder has no place
/// for a layer of one's own (`with_layer` exists only on the custom-service path), hence the
/// inner client as that service.
fn capped_client(inner: Octocrab) -> Octocrab {
    let service = tower::service_fn(move |request: http::Request<OctoBody>| {
        let inner = inner.clone();
        async move {
            let response = inner.send(request).await?;
            let declared = response
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
                return Err(tower::BoxError::from(DeclaredTooLarge));
            }
            Ok(response.map(|body| Limited::new(body, MAX_BODY_BYTES)))
        }
    });
    match OctocrabBuilder::new_empty()
        .with_service(service)
        .with_auth(AuthState::None)
        .build()
    {
        Ok(octo) => octo,
        Err(never) => match never {},
    }
}

/// A client for one run: octocrab with the token, the API base, the retry policy.
pub(crate) struct Rest {
    pub octo: Octocrab,
    base: ApiBase,
    policy: RetryPolicy,
    token: Token,
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
        // No connector timeouts (octocrab's "timeout" feature, hyper-timeout): `once` puts
        // each whole exchange (connect, TLS, request, the answer to its last byte) under
        // `request_timeout`.
        let inner = Octocrab::builder()
            .base_uri(env.api_url.as_str())
            .map_err(|_| GithubError::BadApiUrl(shown_url))?
            .personal_token(token.expose_secret().to_owned())
            .build()
            .map_err(|e| GithubError::Client(token.scrub(&error_chain(&e))))?;
        Ok(Rest {
            octo: capped_client(inner),
            base,
            policy: env.retry.clone(),
            token: token.clone(),
        })
    }

    pub(crate) fn scrub(&self, text: &str) -> String {
        self.token.scrub(text)
    }

    /// `target` with the API's path prefix, unless it has it already.
    fn with_prefix(&self, target: &str) -> String {
        let prefix = self.base.prefix();
        if prefix.is_empty() || target.starts_with(prefix) {
            target.to_owned()
        } else {
            format!("{prefix}{target}")
        }
    }

    /// `GET https://api.github.com/repos/…`: the whole URL, for errors about the answer.
    pub(crate) fn request_url(&self, method: &Method, target: &str) -> String {
        let path = self.with_prefix(target);
        self.scrub(&format!("{method} {}{path}", self.base.origin()))
    }

    /// `GET /repos/…` as named in messages (with the API path prefix).
    pub(crate) fn request_name(&self, method: &Method, target: &str) -> String {
        self.scrub(&format!("{method} {}", self.with_prefix(target)))
    }

    /// A page's next link as the target it names (path and query), or an error if it leaves
    /// the API's host (octocrab's `get_page` would follow it there, without the token).
    pub(crate) fn next_target(&self, request: &str, link: &Uri) -> Result<String, GithubError> {
        if !self.base.owns(link) {
            return Err(GithubError::ForeignLink {
                request: request.to_owned(),
                url: self.scrub(&shorten(&link.to_string(), 200)),
            });
        }
        Ok(link
            .path_and_query()
            .map_or_else(|| link.path().to_owned(), |pq| pq.as_str().to_owned()))
    }

    /// One exchange under the request deadline, no retries. The inner `Err` is a failure to
    /// judge (an answer that is not a success, or none); the outer one is final: an answer
    /// larger than [`MAX_BODY_BYTES`], or one that could not be read.
    pub(crate) async fn once<T>(
        &self,
        method: &Method,
        target: &str,
        exchange: impl Future<Output = octocrab::Result<T>>,
    ) -> Result<Result<T, Failure>, GithubError> {
        let error = match tokio::time::timeout(self.policy.request_timeout, exchange).await {
            Ok(Ok(value)) => return Ok(Ok(value)),
            Ok(Err(error)) => error,
            Err(_) => {
                return Ok(Err(Failure::Transport(format!(
                    "no answer within {} s",
                    self.policy.request_timeout.as_secs_f64()
                ))));
            }
        };
        if is_too_large(&error) {
            return Err(GithubError::TooLarge {
                request: self.request_url(method, target),
                limit_mib: MAX_BODY_BYTES / (1024 * 1024),
            });
        }
        match error {
            octocrab::Error::GitHub { source, .. } => {
                let mut reply = Reply::from_github(&source);
                reply.message = self.scrub(&reply.message);
                Ok(Err(Failure::Answer(reply)))
            }
            // No answer: the connection, TLS, or the body broke off.
            octocrab::Error::Service { .. } | octocrab::Error::Hyper { .. } => Ok(Err(
                Failure::Transport(
                    self.scrub(&format!("connection error: {}", error_chain(&error))),
                ),
            )),
            // An answer that is not what was asked for (serde quotes the body, which may
            // echo the token): scrubbed, on one line, bounded.
            other => Err(GithubError::BadResponse {
                request: self.request_name(method, target),
                message: self.scrub(&crate::validate::terminal_text(&error_chain(&other))),
            }),
        }
    }

    /// The wait before retrying after this failure of attempt `attempt`, or `None` if final.
    pub(crate) fn delay_after(&self, failure: &Failure, attempt: u32) -> Option<Duration> {
        match failure {
            Failure::Answer(reply) => retry_delay(reply, attempt, &self.policy, now_unix()),
            Failure::Transport(_) => Some(backoff(attempt, &self.policy)),
        }
    }

    /// One-line description of a failure for the "gave up" error.
    pub(crate) fn describe(&self, failure: &Failure) -> String {
        match failure {
            Failure::Answer(reply) => reply.describe(),
            Failure::Transport(transport) => transport.clone(),
        }
    }

    pub(crate) fn attempts(&self) -> u32 {
        self.policy.max_attempts.max(1)
    }

    /// A request, made by `exchange` afresh for each attempt, retried on 5xx, 429,
    /// rate-limit 403s and connection errors, up to the policy's attempts. Any other answer
    /// that is not a success comes back as `Ok(Err(reply))` for the caller to judge.
    pub async fn send<T, F>(
        &self,
        method: &Method,
        target: &str,
        exchange: impl Fn() -> F,
    ) -> Result<Result<T, Reply>, GithubError>
    where
        F: Future<Output = octocrab::Result<T>>,
    {
        let attempts = self.attempts();
        let mut attempt = 1;
        loop {
            let failure = match self.once(method, target, exchange()).await? {
                Ok(value) => return Ok(Ok(value)),
                Err(failure) => failure,
            };
            let Some(delay) = self.delay_after(&failure, attempt) else {
                // Final: only answers get here (transport failures always retry).
                return match failure {
                    Failure::Answer(reply) => Ok(Err(reply)),
                    Failure::Transport(last) => Err(GithubError::GaveUp {
                        request: self.request_name(method, target),
                        attempts: attempt,
                        last,
                    }),
                };
            };
            if attempt >= attempts {
                return Err(GithubError::GaveUp {
                    request: self.request_name(method, target),
                    attempts,
                    last: self.describe(&failure),
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
        for status in [301, 400, 401, 404, 422] {
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
        refusal.message = "Resource not accessible by integration".into();
        assert_eq!(retry_delay(&refusal, 1, &policy(), 0), None);
        // A secondary rate limit that only says so in its message.
        refusal.message = "You have exceeded a secondary rate limit.".into();
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
    fn api_base_owns_only_links_to_its_own_origin() {
        let base = ApiBase::parse("https://API.github.com").unwrap();
        let owns = |link: &str| base.owns(&link.parse::<Uri>().unwrap());
        assert!(owns(
            "https://api.github.com/repositories/1/issues/5/comments?page=2"
        ));
        assert!(owns("/repos/a/b"));
        assert!(!owns("https://evil.example.com/repos/a/b"));
        assert!(!owns("http://api.github.com/repos/a/b"));
        assert!(!owns("https://api.github.com.evil.com/x"));
        assert!(!owns("https://user@api.github.com/x"));
        assert!(!owns("https://api.github.com:8443/x"));
        assert!(!owns("evil.example.com:443"));

        let ghe = ApiBase::parse("https://ghe.example.com/api/v3/").unwrap();
        assert_eq!(ghe.prefix(), "/api/v3");
        assert_eq!(ghe.origin(), "https://ghe.example.com");
        assert!(
            ghe.owns(
                &"https://ghe.example.com/api/v3/repositories/1/issues/2/comments?page=2"
                    .parse::<Uri>()
                    .unwrap()
            )
        );
        assert!(ApiBase::parse("ftp://x").is_none());
        assert!(ApiBase::parse("https://tok@api.github.com").is_none());
        assert!(ApiBase::parse("api.github.com").is_none());
        assert!(ApiBase::parse("/api/v3").is_none());
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
    fn reply_describes_itself_on_one_bounded_line() {
        let mut r = reply(403);
        r.message = "Resource not accessible by integration".into();
        assert_eq!(r.describe(), "403 Resource not accessible by integration");
        assert_eq!(
            shorten("<html>\nBad gateway</html>", 200),
            "<html> Bad gateway</html>"
        );
        let long = shorten(&"é".repeat(300), 200);
        assert!(long.len() <= 204 && long.ends_with('…'));
    }

    #[test]
    fn the_cap_is_found_among_the_causes() {
        #[derive(Debug)]
        struct Wrapper(Box<dyn StdError + Send + Sync>);
        impl fmt::Display for Wrapper {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "wrapped: {}", self.0)
            }
        }
        impl StdError for Wrapper {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&*self.0)
            }
        }
        assert!(is_too_large(&DeclaredTooLarge));
        assert!(is_too_large(&Wrapper(Box::new(DeclaredTooLarge))));
        let io = std::io::Error::other("reset by peer");
        assert!(!is_too_large(&Wrapper(Box::new(io))));
        let chain = error_chain(&Wrapper(Box::new(std::io::Error::other("reset"))));
        assert_eq!(chain, "wrapped: reset");
    }
}
