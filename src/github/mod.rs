//! GitHub integration: the Actions environment, the pull-request comment, and the workflow
//! commands (annotations, job summary, step outputs).
//!
//! The comment is found again by a hidden marker AND by its author being the token's own
//! identity (anyone can paste a marker), across all pages of comments, and updated in place.
//! The token comes from the environment only; it is kept in [`Token`], whose `Debug` and
//! `Display` print `***`, and it goes into nothing but the `Authorization` header.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) mod actions;
mod client;
mod comment;

pub use comment::post_or_update_comment;
pub(crate) use comment::truncate_with_note;

/// The hidden marker that identifies ci-gate's comment on a pull request.
pub const COMMENT_MARKER: &str = crate::report::MARKER;

/// GitHub's limit on a comment body (65,536 characters). [`truncate_body`] measures in bytes,
/// which are never fewer than characters, so a body that fits in bytes always fits.
pub const COMMENT_SIZE_LIMIT: usize = 65_536;

/// The login that comments made with the Actions `GITHUB_TOKEN` are authored by.
pub(crate) const ACTIONS_BOT_LOGIN: &str = "github-actions[bot]";

/// The default REST endpoint (github.com); GitHub Enterprise sets `GITHUB_API_URL`.
pub(crate) const DEFAULT_API_URL: &str = "https://api.github.com";

/// A GitHub token. It never prints: `Debug` and `Display` show `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wrap a token; surrounding whitespace (a trailing newline from a secret file) is removed.
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into().trim().to_owned())
    }

    /// The secret itself, for the `Authorization` header and nothing else.
    pub(crate) fn expose_secret(&self) -> &str {
        &self.0
    }

    /// Whether the token can go into an HTTP header (printable ASCII, no spaces).
    fn is_header_safe(&self) -> bool {
        !self.0.is_empty() && self.0.bytes().all(|b| (0x21..=0x7e).contains(&b))
    }

    /// `text` with every occurrence of the token replaced by `***`.
    fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.0, "***")
        }
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How requests to GitHub are retried on 5xx, 429, rate-limit 403s and connection errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per request, the first included (at least 1).
    pub max_attempts: u32,
    /// The first backoff delay; it doubles on each further attempt.
    pub base_delay: Duration,
    /// The longest single wait, also the cap on `Retry-After` and on rate-limit resets.
    pub max_delay: Duration,
    /// The longest one request may take (connect, send, answer) before it counts as failed.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The GitHub Actions environment.
#[derive(Clone, Debug)]
pub struct GithubEnv {
    /// `GITHUB_TOKEN`.
    pub token: Option<Token>,
    /// `GITHUB_REPOSITORY`, `owner/name`.
    pub repository: Option<String>,
    /// `GITHUB_EVENT_PATH`, the webhook payload that triggered the run.
    pub event_path: Option<PathBuf>,
    /// `GITHUB_API_URL` without a trailing slash (default `https://api.github.com`).
    pub api_url: String,
    /// `GITHUB_STEP_SUMMARY`.
    pub step_summary: Option<PathBuf>,
    /// `GITHUB_OUTPUT`.
    pub output: Option<PathBuf>,
    /// `GITHUB_SHA`.
    pub sha: Option<String>,
    /// `GITHUB_SERVER_URL` without a trailing slash (default `https://github.com`).
    pub server_url: String,
    /// `GITHUB_RUN_ID`.
    pub run_id: Option<String>,
    /// `GITHUB_HEAD_REF` (pull requests), else `GITHUB_REF_NAME`. Untrusted text.
    pub head_ref: Option<String>,
    /// `CI_GATE_COMMENT_AUTHOR`: the login the token comments as, when `GET /user` cannot
    /// tell (a GitHub App installation token comments as `<app-slug>[bot]`).
    pub comment_author: Option<String>,
    /// Retries and timeouts for the REST calls (not read from the environment).
    pub retry: RetryPolicy,
}

impl GithubEnv {
    /// Read the environment of the current process. Unset, empty and non-UTF-8 variables are
    /// treated alike, as absent.
    pub(crate) fn from_env() -> GithubEnv {
        GithubEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// Build from any lookup of variable names (tests pass a map instead of touching the
    /// process environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> GithubEnv {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let url = |name: &str, default: &str| {
            get(name)
                .unwrap_or_else(|| default.to_owned())
                .trim_end_matches('/')
                .to_owned()
        };
        GithubEnv {
            token: get("GITHUB_TOKEN").map(Token::new),
            repository: get("GITHUB_REPOSITORY"),
            event_path: get("GITHUB_EVENT_PATH").map(PathBuf::from),
            api_url: url("GITHUB_API_URL", DEFAULT_API_URL),
            step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: get("GITHUB_OUTPUT").map(PathBuf::from),
            sha: get("GITHUB_SHA"),
            server_url: url("GITHUB_SERVER_URL", "https://github.com"),
            run_id: get("GITHUB_RUN_ID"),
            head_ref: get("GITHUB_HEAD_REF").or_else(|| get("GITHUB_REF_NAME")),
            comment_author: get("CI_GATE_COMMENT_AUTHOR"),
            retry: RetryPolicy::default(),
        }
    }

    /// The link to this workflow run, when the repository and run id are known.
    pub(crate) fn run_url(&self) -> Option<String> {
        let repo = self.repository.as_deref()?;
        let run = self.run_id.as_deref()?;
        Some(format!("{}/{repo}/actions/runs/{run}", self.server_url))
    }

    /// The pull request this run is for: `pull_request.number` of the event payload, or
    /// `issue.number` (comment events). `Ok(None)` when there is no event file or no number.
    pub(crate) fn pr_number(&self) -> Result<Option<u64>, GithubError> {
        let Some(path) = self.event_path.as_deref() else {
            return Ok(None);
        };
        pr_number_from_event(path)
    }
}

/// Largest event payload read (GitHub's webhook payloads are at most 25 MB).
pub(crate) const MAX_EVENT_BYTES: u64 = 64 * 1024 * 1024;

fn pr_number_from_event(path: &Path) -> Result<Option<u64>, GithubError> {
    let event_error = |message: String| GithubError::Event {
        path: path.to_owned(),
        message,
    };
    let bytes = crate::files::read_bounded(path, MAX_EVENT_BYTES).map_err(|e| match e {
        crate::files::FileError::Read { cause, .. } => event_error(cause.to_string()),
        _ => event_error(format!("larger than {MAX_EVENT_BYTES} bytes")),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| event_error("not UTF-8 text".into()))?;
    pr_number_from_event_text(&text, path)
}

/// The pull request number of an event payload's text: `pull_request.number`, else
/// `issue.number`; `Ok(None)` when there is neither. `path` names the file in errors, which
/// never quote more than a bounded, escaped part of the payload.
pub fn pr_number_from_event_text(text: &str, path: &Path) -> Result<Option<u64>, GithubError> {
    let event_error = |message: String| GithubError::Event {
        path: path.to_owned(),
        message,
    };
    let event: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        event_error(format!(
            "invalid JSON ({})",
            crate::validate::terminal_text(&e.to_string())
        ))
    })?;
    for key in ["pull_request", "issue"] {
        if let Some(number) = event.get(key).and_then(|v| v.get("number")) {
            return match number.as_u64().filter(|&n| n > 0) {
                Some(n) => Ok(Some(n)),
                None => Err(event_error(format!(
                    "{key}.number is {}, not a positive integer",
                    crate::validate::quote(&number.to_string())
                ))),
            };
        }
    }
    Ok(None)
}

/// What [`post_or_update_comment`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommentOutcome {
    /// A new comment was posted.
    Created { id: u64, url: String },
    /// The comment this identity posted before was edited in place.
    Updated { id: u64, url: String },
    /// Nothing was posted; the body was written to `path` instead, for the reason given.
    WrittenToFile { path: PathBuf, reason: String },
}

/// A GitHub operation that failed. Messages are one sentence and never contain the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GithubError {
    #[error("GITHUB_REPOSITORY is not set, so there is no repository to comment on")]
    NoRepository,
    #[error("GITHUB_REPOSITORY is {0:?}, which is not of the form owner/name")]
    BadRepository(String),
    #[error("GITHUB_API_URL is {0:?}, which is not an http(s) URL without credentials")]
    BadApiUrl(String),
    #[error(
        "GITHUB_API_URL is {0:?}: the token is only sent over https (plain http only to a loopback address: 127.0.0.0/8, localhost, [::1])"
    )]
    InsecureApiUrl(String),
    #[error(
        "GITHUB_TOKEN contains characters that cannot be sent in an HTTP header (a stray space or newline?)"
    )]
    BadToken,
    #[error(
        "the comment body does not contain the marker {COMMENT_MARKER}, so the comment could not be found again to update it"
    )]
    MissingMarker,
    #[error("cannot read the event file {path}: {message}")]
    Event { path: PathBuf, message: String },
    #[error("cannot write the comment body to {path}: {cause}")]
    Fallback {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot set up the GitHub client: {0}")]
    Client(String),
    #[error("{request} failed: GitHub answered {status}: {message}")]
    Status {
        request: String,
        status: u16,
        message: String,
    },
    #[error("{request} still failed after {attempts} attempts; the last answer was: {last}")]
    GaveUp {
        request: String,
        attempts: u32,
        last: String,
    },
    #[error(
        "{request} answered with more than {limit_mib} MiB, more than any answer the comment needs, so the answer was not read"
    )]
    TooLarge { request: String, limit_mib: usize },
    #[error("{request} returned a response that could not be read: {message}")]
    BadResponse { request: String, message: String },
    #[error(
        "{request} answered with a next-page link to {url}, which is not under GITHUB_API_URL, so it was not followed"
    )]
    ForeignLink { request: String, url: String },
    #[error(
        "{request} kept answering with next-page links after {pages} pages, so listing stopped"
    )]
    TooManyPages { request: String, pages: usize },
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> GithubEnv {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        GithubEnv::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn token_never_prints() {
        let token = Token::new("ghp_SECRETSECRET\n");
        assert_eq!(format!("{token}"), "***");
        assert_eq!(format!("{token:?}"), "***");
        assert_eq!(token.expose_secret(), "ghp_SECRETSECRET");
        let env = env_of(&[("GITHUB_TOKEN", "ghp_SECRETSECRET")]);
        let debug = format!("{env:?}");
        assert!(!debug.contains("SECRETSECRET"), "{debug}");
        assert!(debug.contains("***"), "{debug}");
    }

    #[test]
    fn token_scrub_and_header_safety() {
        let token = Token::new("abc123");
        assert_eq!(
            token.scrub("Bearer abc123 and abc123"),
            "Bearer *** and ***"
        );
        assert!(token.is_header_safe());
        assert!(!Token::new("abc 123").is_header_safe());
        assert!(!Token::new("abc\n123").is_header_safe());
        assert!(!Token::new("").is_header_safe());
    }

    #[test]
    fn env_defaults_and_trimming() {
        let env = env_of(&[
            ("GITHUB_TOKEN", "  "),
            ("GITHUB_API_URL", "https://ghe.example.com/api/v3/"),
            ("GITHUB_REF_NAME", "main"),
        ]);
        assert!(env.token.is_none(), "a blank token is no token");
        assert_eq!(env.api_url, "https://ghe.example.com/api/v3");
        assert_eq!(env.server_url, "https://github.com");
        assert_eq!(env.head_ref.as_deref(), Some("main"));
        assert_eq!(env.retry, RetryPolicy::default());

        let env = env_of(&[]);
        assert_eq!(env.api_url, DEFAULT_API_URL);
        assert_eq!(env.run_url(), None);

        let env = env_of(&[
            ("GITHUB_HEAD_REF", "feature/x"),
            ("GITHUB_REF_NAME", "1/merge"),
        ]);
        assert_eq!(env.head_ref.as_deref(), Some("feature/x"));
    }

    #[test]
    fn run_url_joins_server_repo_and_run() {
        let env = env_of(&[
            ("GITHUB_SERVER_URL", "https://github.com/"),
            ("GITHUB_REPOSITORY", "octo/kernels"),
            ("GITHUB_RUN_ID", "12345"),
        ]);
        assert_eq!(
            env.run_url().as_deref(),
            Some("https://github.com/octo/kernels/actions/runs/12345")
        );
    }

    #[test]
    fn pr_number_from_pull_request_issue_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let with_event = |p: &Path| env_of(&[("GITHUB_EVENT_PATH", p.to_str().unwrap())]);

        let pr = write(
            "pr.json",
            r#"{"action":"opened","pull_request":{"number":42}}"#,
        );
        assert_eq!(with_event(&pr).pr_number().unwrap(), Some(42));

        let issue = write("issue.json", r#"{"issue":{"number":7,"pull_request":{}}}"#);
        assert_eq!(with_event(&issue).pr_number().unwrap(), Some(7));

        let push = write("push.json", r#"{"ref":"refs/heads/main"}"#);
        assert_eq!(with_event(&push).pr_number().unwrap(), None);

        assert_eq!(env_of(&[]).pr_number().unwrap(), None);

        let bad = write("bad.json", "{not json");
        let err = with_event(&bad).pr_number().unwrap_err().to_string();
        assert!(
            err.contains("bad.json") && err.contains("invalid JSON"),
            "{err}"
        );

        let neg = write("neg.json", r#"{"pull_request":{"number":-1}}"#);
        let err = with_event(&neg).pr_number().unwrap_err().to_string();
        assert!(err.contains("pull_request.number"), "{err}");

        let zero = write("zero.json", r#"{"pull_request":{"number":0}}"#);
        let err = with_event(&zero).pr_number().unwrap_err().to_string();
        assert!(err.contains("pull_request.number is \"0\""), "{err}");

        let text = write("text.json", "{\"issue\":{\"number\":\"1\\n::error::x\"}}");
        let err = with_event(&text).pr_number().unwrap_err().to_string();
        assert!(!err.contains('\n') && err.contains("issue.number"), "{err}");

        let missing = dir.path().join("missing.json");
        let err = with_event(&missing).pr_number().unwrap_err().to_string();
        assert!(err.contains("missing.json"), "{err}");
    }
}
