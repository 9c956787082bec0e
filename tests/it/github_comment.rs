//! `post_or_update_comment` against a fake GitHub on 127.0.0.1 (no internet needed).
//!
//! No test touches the process environment: each builds its `GithubEnv` from a map.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::github_common::*;
use ci_gate::github::{
    COMMENT_MARKER, COMMENT_SIZE_LIMIT, CommentOutcome, GithubEnv, GithubError, RetryPolicy,
    post_or_update_comment,
};

const PR: u64 = 17;

fn list_path() -> String {
    format!("/repos/{OWNER}/{REPO}/issues/{PR}/comments")
}

fn create_path() -> String {
    list_path()
}

fn patch_path(id: u64) -> String {
    format!("/repos/{OWNER}/{REPO}/issues/comments/{id}")
}

/// Fast retries so tests do not sleep (a `Retry-After` is still honoured as sent).
fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(60),
        request_timeout: Duration::from_secs(10),
    }
}

fn env_at(api_url: &str, token: Option<&str>) -> GithubEnv {
    let mut vars: HashMap<&str, String> = HashMap::new();
    vars.insert("GITHUB_API_URL", api_url.to_owned());
    vars.insert("GITHUB_REPOSITORY", format!("{OWNER}/{REPO}"));
    vars.insert("GITHUB_SERVER_URL", "https://github.com".to_owned());
    vars.insert("GITHUB_RUN_ID", "987654".to_owned());
    if let Some(token) = token {
        vars.insert("GITHUB_TOKEN", token.to_owned());
    }
    let mut env = GithubEnv::from_lookup(|k| vars.get(k).cloned());
    env.retry = fast_retry();
    env
}

fn env_for(server: &FakeGithub, token: Option<&str>) -> GithubEnv {
    env_at(&server.url(), token)
}

fn report(text: &str) -> String {
    format!("{COMMENT_MARKER}\n## ci-gate perf report\n\n{text}\n")
}

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn fallback(&self) -> PathBuf {
        self.dir.path().join("out/comment.md")
    }
}

fn post(env: &GithubEnv, body: &str, fallback: &Path) -> Result<CommentOutcome, GithubError> {
    post_or_update_comment(env, PR, body, fallback)
}

fn count(server: &FakeGithub, method: &str, path: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.is(method, path))
        .count()
}

fn ours(server: &FakeGithub, login: &str) -> Vec<Comment> {
    server
        .comments(PR)
        .into_iter()
        .filter(|c| c.login == login && c.body.contains(COMMENT_MARKER))
        .collect()
}

// ---------------------------------------------------------------------------------------

#[test]
fn first_run_creates_one_comment_and_second_run_updates_it() {
    let server = FakeGithub::start();
    server.seed_comment(PR, "bob", "LGTM, but is it faster?");
    server.seed_comment(PR, BOT_LOGIN, "some other bot comment without the marker");
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let scratch = Scratch::new();

    let first = post(&env, &report("run 1: pass"), &scratch.fallback()).unwrap();
    let CommentOutcome::Created { id, url } = first else {
        panic!("expected Created, got {first:?}");
    };
    assert_eq!(
        url,
        format!("https://github.com/{OWNER}/{REPO}/pull/{PR}#issuecomment-{id}")
    );
    assert_eq!(
        server.request_lines(),
        vec![
            "GET /user".to_owned(),
            format!("GET {}", list_path()),
            format!("POST {}", create_path()),
        ]
    );
    let list = &server.requests()[1];
    assert_eq!(list.query("per_page"), Some("100"));
    assert_eq!(server.comments(PR).len(), 3);
    assert_eq!(server.comment(id).unwrap().body, report("run 1: pass"));
    assert_eq!(server.comment(id).unwrap().login, BOT_LOGIN);

    server.clear_requests();
    let second = post(&env, &report("run 2: regression"), &scratch.fallback()).unwrap();
    assert_eq!(
        second,
        CommentOutcome::Updated {
            id,
            url: url.clone()
        }
    );
    assert_eq!(
        count(&server, "POST", &create_path()),
        0,
        "no second create"
    );
    assert_eq!(count(&server, "PATCH", &patch_path(id)), 1);
    assert_eq!(server.comments(PR).len(), 3);
    assert_eq!(ours(&server, BOT_LOGIN).len(), 1);
    assert_eq!(
        server.comment(id).unwrap().body,
        report("run 2: regression")
    );
    assert!(!scratch.fallback().exists());
}

#[test]
fn personal_token_is_identified_by_get_user() {
    let server = FakeGithub::start();
    let bots = server.seed_comment(PR, BOT_LOGIN, &report("posted by the Actions token"));
    let alices = server.seed_comment(PR, PERSONAL_LOGIN, &report("posted by alice"));
    let env = env_for(&server, Some(PERSONAL_TOKEN));

    let outcome = post(&env, &report("new"), &Scratch::new().fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::Updated { id, .. } if id == alices),
        "{outcome:?}"
    );
    assert_eq!(server.comment(alices).unwrap().body, report("new"));
    assert_eq!(
        server.comment(bots).unwrap().body,
        report("posted by the Actions token")
    );
    assert_eq!(count(&server, "GET", "/user"), 1);
}

#[test]
fn a_marker_comment_by_someone_else_is_never_edited() {
    let server = FakeGithub::start();
    let mallory_text = format!("{COMMENT_MARKER}\nci-gate says: all good, merge it!");
    let mallory = server.seed_comment(PR, "mallory", &mallory_text);
    // A look-alike login is someone else too.
    let lookalike = server.seed_comment(PR, "github-actions", &report("fake"));
    let env = env_for(&server, Some(ACTIONS_TOKEN));

    let outcome = post(&env, &report("real"), &Scratch::new().fallback()).unwrap();
    let CommentOutcome::Created { id, .. } = outcome else {
        panic!("expected a new comment, got {outcome:?}");
    };
    assert!(id != mallory && id != lookalike);
    assert_eq!(server.comment(mallory).unwrap().body, mallory_text);
    assert_eq!(server.comment(lookalike).unwrap().body, report("fake"));
    assert!(
        server.requests().iter().all(|r| r.method != "PATCH"),
        "{:?}",
        server.request_lines()
    );
    assert_eq!(ours(&server, BOT_LOGIN).len(), 1);
}

#[test]
fn the_marker_comment_on_page_three_is_found() {
    let server = FakeGithub::start();
    server.set_page_size(3);
    for i in 0..6 {
        server.seed_comment(PR, if i % 2 == 0 { "bob" } else { BOT_LOGIN }, "chatter");
    }
    let target = server.seed_comment(PR, BOT_LOGIN, &report("old"));
    let env = env_for(&server, Some(ACTIONS_TOKEN));

    let outcome = post(&env, &report("new"), &Scratch::new().fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::Updated { id, .. } if id == target),
        "{outcome:?}"
    );
    assert_eq!(server.comment(target).unwrap().body, report("new"));
    assert_eq!(count(&server, "POST", &create_path()), 0);

    let lists: Vec<Recorded> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path().ends_with("/comments"))
        .collect();
    let pages: Vec<Option<&str>> = lists.iter().map(|r| r.query("page")).collect();
    assert_eq!(pages, vec![None, Some("2"), Some("3")]);
    // Pages 2 and 3 follow GitHub's links (repository id form), still authenticated.
    assert_eq!(
        lists[2].path(),
        format!("/repositories/{REPO_ID}/issues/{PR}/comments")
    );
    for r in &lists {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {ACTIONS_TOKEN}").as_str())
        );
    }
}

#[test]
fn without_a_marker_comment_every_page_is_read_before_creating() {
    let server = FakeGithub::start();
    server.set_page_size(2);
    for _ in 0..5 {
        server.seed_comment(PR, BOT_LOGIN, "no marker here");
    }
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let outcome = post(&env, &report("x"), &Scratch::new().fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::Created { .. }),
        "{outcome:?}"
    );
    let list_requests = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path().ends_with("/comments"))
        .count();
    assert_eq!(list_requests, 3);
}

#[test]
fn a_429_is_retried_after_its_retry_after() {
    let server = FakeGithub::start();
    server.inject(
        Fault::new("GET", &list_path(), 429)
            .header("retry-after", "1")
            .message("You have exceeded a secondary rate limit."),
    );
    let env = env_for(&server, Some(ACTIONS_TOKEN));

    let started = Instant::now();
    let outcome = post(&env, &report("x"), &Scratch::new().fallback()).unwrap();
    let took = started.elapsed();
    assert!(
        matches!(outcome, CommentOutcome::Created { .. }),
        "{outcome:?}"
    );
    assert_eq!(count(&server, "GET", &list_path()), 2);
    assert!(
        took >= Duration::from_millis(950),
        "Retry-After: 1 not honoured ({took:?})"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_rate_limit_403_is_retried_but_not_taken_for_a_read_only_token() {
    let server = FakeGithub::start();
    server.inject(
        Fault::new("POST", &create_path(), 403)
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", "0")
            .message("API rate limit exceeded for installation."),
    );
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let outcome = post(&env, &report("x"), &Scratch::new().fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::Created { .. }),
        "{outcome:?}"
    );
    assert_eq!(count(&server, "POST", &create_path()), 2);
    assert_eq!(ours(&server, BOT_LOGIN).len(), 1);
}

#[test]
fn a_502_is_retried_then_succeeds() {
    // On the update (idempotent).
    let server = FakeGithub::start();
    let id = server.seed_comment(PR, BOT_LOGIN, &report("old"));
    server.inject(Fault::new("PATCH", &patch_path(id), 502));
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let outcome = post(&env, &report("new"), &Scratch::new().fallback()).unwrap();
    assert!(matches!(outcome, CommentOutcome::Updated { id: got, .. } if got == id));
    assert_eq!(count(&server, "PATCH", &patch_path(id)), 2);
    assert_eq!(server.comment(id).unwrap().body, report("new"));

    // On the create: the comments are listed again before the retry, then it is created once.
    let server = FakeGithub::start();
    server.inject(Fault::new("POST", &create_path(), 502));
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let outcome = post(&env, &report("x"), &Scratch::new().fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::Created { .. }),
        "{outcome:?}"
    );
    assert_eq!(count(&server, "POST", &create_path()), 2);
    assert_eq!(ours(&server, BOT_LOGIN).len(), 1);
}

#[test]
fn a_502_after_the_comment_was_created_does_not_post_it_twice() {
    let server = FakeGithub::start();
    server.inject(Fault::new("POST", &create_path(), 502).after_applying());
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let outcome = post(&env, &report("x"), &Scratch::new().fallback()).unwrap();
    let mine = ours(&server, BOT_LOGIN);
    assert_eq!(mine.len(), 1, "duplicate comment: {mine:?}");
    assert!(
        matches!(outcome, CommentOutcome::Created { id, .. } if id == mine[0].id),
        "{outcome:?}"
    );
    assert_eq!(count(&server, "POST", &create_path()), 1);
}

#[test]
fn a_persistent_5xx_gives_a_clear_error_after_the_bounded_attempts() {
    let server = FakeGithub::start();
    server.inject(Fault::new("GET", &list_path(), 503).always());
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, GithubError::GaveUp { attempts: 4, .. }),
        "{err:?}"
    );
    assert!(
        text.contains(&format!("GET {}?per_page=100", list_path())),
        "{text}"
    );
    assert!(
        text.contains("4 attempts") && text.contains("503"),
        "{text}"
    );
    assert!(text.contains("Service Unavailable"), "{text}");
    assert_eq!(count(&server, "GET", &list_path()), 4);
    assert!(server.comments(PR).is_empty());

    // A create that keeps failing also stops after 4 attempts, and posts nothing.
    let server = FakeGithub::start();
    server.inject(Fault::new("POST", &create_path(), 500).always());
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "POST {} still failed after 4 attempts",
            create_path()
        )),
        "{err}"
    );
    assert_eq!(count(&server, "POST", &create_path()), 4);
}

#[test]
fn an_unreachable_api_gives_a_clear_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let env = env_at(&format!("http://127.0.0.1:{port}"), Some(ACTIONS_TOKEN));
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, GithubError::GaveUp { attempts: 4, .. }),
        "{err:?}"
    );
    assert!(
        text.starts_with("GET /user still failed") && text.contains("connection error"),
        "{text}"
    );
}

/// A server that streams an answer without end (it once took 7.2 GB of memory): reading
/// stops at 16 MiB, the error names the request's URL but never the token, and the request
/// is not retried.
#[test]
fn an_endless_answer_is_cut_at_16_mib_with_an_error_naming_the_url() {
    let server = FakeGithub::start();
    server.inject(Fault::new("GET", &list_path(), 200).streamed(256 << 20));
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let scratch = Scratch::new();
    let err = post(&env, &report("x"), &scratch.fallback()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, GithubError::TooLarge { .. }), "{err:?}");
    assert!(
        text.starts_with(&format!("GET {}{}?", server.url(), list_path()))
            && text.contains("more than 16 MiB"),
        "{text}"
    );
    assert!(!text.contains(ACTIONS_TOKEN), "{text}");
    assert_eq!(count(&server, "GET", &list_path()), 1, "retried");
    assert!(server.comments(PR).is_empty());
    // The client hung up near the limit: the server did not get to send it all (what it
    // wrote past 16 MiB sat in socket buffers).
    // The server thread counts what it wrote once its write fails, which can be after the
    // client has already returned: wait for the count (at most 5 s).
    let mut sent = server.streamed_bytes();
    for _ in 0..500 {
        if sent > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        sent = server.streamed_bytes();
    }
    assert!(((16 << 20)..64 << 20).contains(&sent), "{sent} bytes sent");
    // A declared Content-Length over the limit is refused without reading the body.
    server.inject(Fault::new("GET", &list_path(), 200).raw_body(&"[".repeat((16 << 20) + 1)));
    let text = post(&env, &report("x"), &scratch.fallback())
        .unwrap_err()
        .to_string();
    assert!(text.contains("more than 16 MiB"), "{text}");
}

#[test]
fn without_a_token_the_body_goes_to_the_fallback_file() {
    let server = FakeGithub::start();
    let env = env_for(&server, None);
    let scratch = Scratch::new();
    let body = report("no token here");
    let outcome = post(&env, &body, &scratch.fallback()).unwrap();
    let CommentOutcome::WrittenToFile { path, reason } = outcome else {
        panic!("expected WrittenToFile, got {outcome:?}");
    };
    assert_eq!(path, scratch.fallback());
    assert!(reason.contains("GITHUB_TOKEN is not set"), "{reason}");
    assert!(reason.contains(&path.display().to_string()), "{reason}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), body);
    assert!(server.requests().is_empty(), "{:?}", server.request_lines());
}

#[test]
fn a_read_only_token_writes_the_fallback_file_and_says_why() {
    // Creating.
    let server = FakeGithub::start();
    let env = env_for(&server, Some(READONLY_TOKEN));
    let scratch = Scratch::new();
    let body = report("from a fork");
    let outcome = post(&env, &body, &scratch.fallback()).unwrap();
    let CommentOutcome::WrittenToFile { path, reason } = outcome else {
        panic!("expected WrittenToFile, got {outcome:?}");
    };
    assert!(reason.contains("403"), "{reason}");
    assert!(
        reason.contains("Resource not accessible by integration"),
        "{reason}"
    );
    assert!(reason.contains("read-only"), "{reason}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), body);
    assert_eq!(
        count(&server, "POST", &create_path()),
        1,
        "a refusal is not retried"
    );
    assert!(server.comments(PR).is_empty());

    // Updating.
    let server = FakeGithub::start();
    let id = server.seed_comment(PR, BOT_LOGIN, &report("old"));
    let env = env_for(&server, Some(READONLY_TOKEN));
    let scratch = Scratch::new();
    let outcome = post(&env, &body, &scratch.fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::WrittenToFile { .. }),
        "{outcome:?}"
    );
    assert_eq!(count(&server, "PATCH", &patch_path(id)), 1);
    assert_eq!(server.comment(id).unwrap().body, report("old"));
    assert_eq!(std::fs::read_to_string(scratch.fallback()).unwrap(), body);
}

#[test]
fn the_token_goes_only_into_authorization_headers() {
    let tokens = [ACTIONS_TOKEN, READONLY_TOKEN, PERSONAL_TOKEN];
    let mut texts: Vec<String> = Vec::new();
    let mut requests: Vec<(String, Recorded)> = Vec::new();
    let scratch = Scratch::new();

    for token in tokens {
        // Create, then update.
        let server = FakeGithub::start();
        server.set_page_size(1);
        server.seed_comment(PR, "bob", "hi");
        let env = env_for(&server, Some(token));
        texts.push(format!("{env:?}"));
        for run in 0..2 {
            let fallback = scratch.dir.path().join(format!("{run}.md"));
            let outcome = post(&env, &report("r"), &fallback).unwrap();
            texts.push(format!("{outcome:?}"));
            if let CommentOutcome::WrittenToFile { path, reason } = &outcome {
                texts.push(reason.clone());
                texts.push(std::fs::read_to_string(path).unwrap());
            }
        }
        // A server that echoes the credentials back in its error message.
        server.inject(
            Fault::new("GET", &list_path(), 500)
                .always()
                .message(&format!("internal error handling 'Bearer {token}'")),
        );
        let err = post(&env, &report("r"), &scratch.fallback()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Bearer ***"), "echo not scrubbed: {text}");
        texts.push(text);
        texts.push(format!("{err:?}"));
        requests.extend(server.requests().into_iter().map(|r| (token.to_owned(), r)));
    }

    assert!(requests.len() > 10);
    for (token, r) in &requests {
        let auth_headers = r
            .headers
            .iter()
            .filter(|(n, _)| n == "authorization")
            .count();
        assert_eq!(auth_headers, 1, "{} {}", r.method, r.target);
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {token}").as_str()),
            "{} {}",
            r.method,
            r.target
        );
        for secret in tokens {
            assert!(!r.target.contains(secret), "token in URL {}", r.target);
            assert!(!r.body.contains(secret), "token in body of {}", r.target);
            for (name, value) in &r.headers {
                if name != "authorization" {
                    assert!(!value.contains(secret), "token in header {name}");
                }
            }
        }
    }
    for text in &texts {
        for secret in tokens {
            assert!(!text.contains(secret), "token leaked into: {text}");
        }
    }
}

#[test]
fn comment_author_override_is_used_instead_of_get_user() {
    let server = FakeGithub::start();
    let app = server.seed_comment(PR, "ci-gate-app[bot]", &report("old"));
    let bots = server.seed_comment(PR, BOT_LOGIN, &report("actions"));
    let mut env = env_for(&server, Some(ACTIONS_TOKEN));
    env.comment_author = Some("ci-gate-app[bot]".to_owned());
    let outcome = post(&env, &report("new"), &Scratch::new().fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::Updated { id, .. } if id == app),
        "{outcome:?}"
    );
    assert_eq!(server.comment(bots).unwrap().body, report("actions"));
    assert_eq!(count(&server, "GET", "/user"), 0);
}

#[test]
fn a_body_without_the_marker_is_refused_before_any_request() {
    let server = FakeGithub::start();
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let err = post(&env, "## report without marker", &Scratch::new().fallback()).unwrap_err();
    assert!(matches!(err, GithubError::MissingMarker), "{err:?}");
    assert!(err.to_string().contains(COMMENT_MARKER));
    assert!(server.requests().is_empty());
}

#[test]
fn an_oversized_body_is_truncated_before_posting() {
    let server = FakeGithub::start();
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let mut rows = String::new();
    for i in 0..5000 {
        rows.push_str(&format!("| shape_{i} | 9.{i} µs | pass |\n"));
    }
    let body = report(&rows);
    assert!(body.len() > COMMENT_SIZE_LIMIT);
    let outcome = post(&env, &body, &Scratch::new().fallback()).unwrap();
    let CommentOutcome::Created { id, .. } = outcome else {
        panic!("{outcome:?}");
    };
    let posted = server.comment(id).unwrap().body;
    assert!(posted.len() <= COMMENT_SIZE_LIMIT, "{}", posted.len());
    assert!(posted.starts_with(COMMENT_MARKER));
    assert!(posted.contains("truncated"));
}

#[test]
fn a_next_link_to_another_host_is_not_followed() {
    let server = FakeGithub::start();
    server.inject(Fault::new("GET", &list_path(), 200).raw_body("[]").header(
        "link",
        "<https://evil.example.com/steal?page=2>; rel=\"next\"",
    ));
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    assert!(matches!(err, GithubError::ForeignLink { .. }), "{err:?}");
    assert!(err.to_string().contains("evil.example.com"), "{err}");
    assert_eq!(count(&server, "POST", &create_path()), 0);
}

#[test]
fn bad_repository_and_api_url_are_clear_errors() {
    let server = FakeGithub::start();
    let mut env = env_for(&server, Some(ACTIONS_TOKEN));
    env.repository = Some("octo/gpu-kernels/../../admin".to_owned());
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    assert!(matches!(err, GithubError::BadRepository(_)), "{err:?}");

    env.repository = None;
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    assert!(matches!(err, GithubError::NoRepository), "{err:?}");

    let mut env = env_for(&server, Some(ACTIONS_TOKEN));
    env.api_url = "ftp://127.0.0.1".to_owned();
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    assert!(matches!(err, GithubError::BadApiUrl(_)), "{err:?}");
    assert!(server.requests().is_empty());
}

#[test]
fn a_token_with_a_newline_inside_is_refused_without_printing_it() {
    let server = FakeGithub::start();
    let mut env = env_for(&server, Some(ACTIONS_TOKEN));
    env.token = Some(ci_gate::github::Token::new("ghs_abc\ndef"));
    let err = post(&env, &report("x"), &Scratch::new().fallback()).unwrap_err();
    assert!(matches!(err, GithubError::BadToken), "{err:?}");
    assert!(!err.to_string().contains("ghs_abc"));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn it_can_be_called_from_inside_an_async_runtime() {
    let server = FakeGithub::start();
    let env = env_for(&server, Some(ACTIONS_TOKEN));
    let outcome = post(&env, &report("x"), &Scratch::new().fallback()).unwrap();
    assert!(
        matches!(outcome, CommentOutcome::Created { .. }),
        "{outcome:?}"
    );
}
