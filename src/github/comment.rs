//! The pull-request comment: find the one this identity posted before (marker AND author,
//! across all pages), update it in place or create it; fall back to a file when the token
//! cannot write.

use std::path::Path;

use http::Method;
use octocrab::Page;
use serde::Deserialize;
use serde_json::json;

use super::client::{Failure, Reply, Rest};
use super::{
    ACTIONS_BOT_LOGIN, COMMENT_MARKER, COMMENT_SIZE_LIMIT, CommentOutcome, GithubEnv, GithubError,
};

/// The note that ends a truncated comment.
pub(crate) const TRUNCATION_NOTE: &str =
    "… truncated: the full report is in the job summary and the results artifact.";

/// Listing stops (with an error) after this many pages of 100 comments.
const MAX_PAGES: usize = 1000;

/// Largest char boundary of `s` at or below `index`.
pub(crate) fn floor_char_boundary(s: &str, index: usize) -> usize {
    if index >= s.len() {
        return s.len();
    }
    let mut i = index;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Whether `text` leaves a Markdown code fence open.
fn leaves_fence_open(text: &str) -> bool {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            t.starts_with("```") || t.starts_with("~~~")
        })
        .count()
        % 2
        == 1
}

/// `body` cut to at most `limit` bytes (bytes are never fewer than characters, so the result
/// also fits a limit counted in characters). Unchanged if it fits. Otherwise it is cut on a
/// line boundary (mid-line, at a char boundary, only if the last line break would throw away
/// more than half of what fits), an open code fence is closed, and [`TRUNCATION_NOTE`]
/// follows after a blank line. Never splits a UTF-8 character.
pub(crate) fn truncate_body(body: &str, limit: usize) -> String {
    truncate_with_note(body, limit, TRUNCATION_NOTE)
}

/// [`truncate_body`] with another note (the job summary's).
pub(crate) fn truncate_with_note(body: &str, limit: usize, note: &str) -> String {
    if body.len() <= limit {
        return body.to_owned();
    }
    const FENCE_CLOSE: &str = "```\n";
    // kept text + optional '\n' + optional fence + "\n" + note + "\n"
    let reserve = 1 + FENCE_CLOSE.len() + 1 + note.len() + 1;
    if limit < reserve {
        return note[..floor_char_boundary(note, limit)].to_owned();
    }
    let budget = limit - reserve;
    let hard = floor_char_boundary(body, budget);
    let cut = match body[..hard].rfind('\n') {
        Some(newline) if newline + 1 >= hard / 2 => newline + 1,
        _ => hard,
    };
    let kept = &body[..cut];
    let mut out = String::with_capacity(limit);
    out.push_str(kept);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if leaves_fence_open(kept) {
        out.push_str(FENCE_CLOSE);
    }
    out.push('\n');
    out.push_str(note);
    out.push('\n');
    debug_assert!(out.len() <= limit);
    out
}

/// The body as posted: within the size limit and still carrying the marker.
fn fit_body(body: &str) -> String {
    let fitted = truncate_body(body, COMMENT_SIZE_LIMIT);
    if fitted.contains(COMMENT_MARKER) {
        return fitted;
    }
    // The marker sat past the cut: put it first so the comment can be found again.
    let rest = truncate_body(body, COMMENT_SIZE_LIMIT - COMMENT_MARKER.len() - 1);
    format!("{COMMENT_MARKER}\n{rest}")
}

/// `GITHUB_REPOSITORY` split into owner and name, checked so it cannot bend the URL path.
fn repository(env: &GithubEnv) -> Result<(&str, &str), GithubError> {
    let full = env.repository.as_deref().ok_or(GithubError::NoRepository)?;
    let ok_part = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    match full.split_once('/') {
        Some((owner, name)) if ok_part(owner) && ok_part(name) => Ok((owner, name)),
        _ => Err(GithubError::BadRepository(full.to_owned())),
    }
}

fn write_fallback(path: &Path, body: &str, why: &str) -> Result<CommentOutcome, GithubError> {
    let fail = |cause| GithubError::Fallback {
        path: path.to_owned(),
        cause,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    std::fs::write(path, body).map_err(fail)?;
    Ok(CommentOutcome::WrittenToFile {
        path: path.to_owned(),
        reason: format!(
            "{why}, so the report was written to {} instead of being posted",
            path.display()
        ),
    })
}

/// What is read of `GET /user`.
///
/// The comment reads only the fields it needs, through octocrab's generic typed requests,
/// rather than octocrab's models (`current().user()` gives an `Author`, `list_comments` and
/// `create_comment` an `issues::Comment`): those require every field of a full user object
/// (`avatar_url`, `followers_url`, … and a non-null `user`, which GitHub's schema lets be
/// null), so one comment by an unusual account would make a whole page unreadable and the
/// comment impossible to find. octocrab's `update_comment` also sends POST, not the PATCH
/// that GitHub documents for editing a comment.
#[derive(Deserialize)]
struct ApiUser {
    login: String,
}

/// What is read of an issue comment.
#[derive(Deserialize)]
struct ApiComment {
    id: u64,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<ApiUser>,
}

/// A comment of ours: its id and link.
struct Found {
    id: u64,
    url: String,
}

/// What the REST exchange ended in.
enum Posted {
    Created(Found),
    Updated(Found),
    /// The token may read but not write (fork PRs): GitHub's answer, for the reason text.
    Refused(String),
}

/// One comment run against one pull request.
struct Job<'a> {
    rest: &'a Rest,
    env: &'a GithubEnv,
    owner: &'a str,
    name: &'a str,
    pr: u64,
    body: &'a str,
}

impl Job<'_> {
    fn status_error(&self, method: &Method, target: &str, reply: &Reply) -> GithubError {
        GithubError::Status {
            request: self.rest.request_name(method, target),
            status: reply.status,
            message: reply.message.clone(),
        }
    }

    /// A comment from a create/update answer, with a constructed link if GitHub sent none.
    fn found_in(&self, comment: ApiComment) -> Found {
        let url = comment.html_url.unwrap_or_else(|| {
            format!(
                "{}/{}/{}/pull/{}#issuecomment-{}",
                self.env.server_url, self.owner, self.name, self.pr, comment.id
            )
        });
        Found {
            id: comment.id,
            url: self.rest.scrub(&url),
        }
    }

    fn refused(&self, reply: &Reply) -> Posted {
        Posted::Refused(format!(
            "GitHub refused to write the comment on pull request #{} ({}), as it does for a \
             read-only token such as a fork's",
            self.pr,
            reply.describe()
        ))
    }

    async fn run(&self) -> Result<Posted, GithubError> {
        let identity = match &self.env.comment_author {
            Some(author) => author.clone(),
            None => self.identity().await?,
        };
        match self.find(&identity).await? {
            Some(found) => self.update(found, &identity).await,
            None => self.create(&identity).await,
        }
    }

    /// The login the token comments as: `GET /user`, or `github-actions[bot]` for the Actions
    /// token, which may not read `/user` (403).
    async fn identity(&self) -> Result<String, GithubError> {
        let target = "/user";
        let octo = &self.rest.octo;
        let answer = self
            .rest
            .send(&Method::GET, target, || {
                octo.get::<ApiUser, _, _>(target, None::<&()>)
            })
            .await?;
        match answer {
            Ok(user) => Ok(user.login),
            Err(reply) if matches!(reply.status, 401 | 403) => Ok(ACTIONS_BOT_LOGIN.to_owned()),
            Err(reply) => Err(self.status_error(&Method::GET, target, &reply)),
        }
    }

    /// The first comment on the pull request that carries the marker and was written by
    /// `identity`, through every page: octocrab's [`Page`] reads the `Link` header, and its
    /// next link is followed by its path and query alone once it is known to name this API's
    /// host (a request by path cannot leave it). Not `all_pages`/`get_page`: each page is
    /// retried like any other request, listing stops at the first page with our comment, and
    /// a server that never stops linking is cut off after [`MAX_PAGES`].
    async fn find(&self, identity: &str) -> Result<Option<Found>, GithubError> {
        let octo = &self.rest.octo;
        let mut target = format!(
            "/repos/{}/{}/issues/{}/comments?per_page=100",
            self.owner, self.name, self.pr
        );
        for _ in 0..MAX_PAGES {
            let page: Page<ApiComment> = self
                .rest
                .send(&Method::GET, &target, || {
                    octo.get::<Page<ApiComment>, _, _>(&target, None::<&()>)
                })
                .await?
                .map_err(|reply| self.status_error(&Method::GET, &target, &reply))?;
            let ours = page.items.into_iter().find(|c| {
                c.body
                    .as_deref()
                    .is_some_and(|b| b.contains(COMMENT_MARKER))
                    && c.user
                        .as_ref()
                        .is_some_and(|u| u.login.eq_ignore_ascii_case(identity))
            });
            if let Some(c) = ours {
                let url = self.rest.scrub(&c.html_url.unwrap_or_default());
                return Ok(Some(Found { id: c.id, url }));
            }
            let Some(next) = page.next else {
                return Ok(None);
            };
            let request = self.rest.request_name(&Method::GET, &target);
            target = self.rest.next_target(&request, &next)?;
        }
        Err(GithubError::TooManyPages {
            request: self.rest.request_name(
                &Method::GET,
                &format!(
                    "/repos/{}/{}/issues/{}/comments",
                    self.owner, self.name, self.pr
                ),
            ),
            pages: MAX_PAGES,
        })
    }

    async fn update(&self, found: Found, identity: &str) -> Result<Posted, GithubError> {
        let target = format!(
            "/repos/{}/{}/issues/comments/{}",
            self.owner, self.name, found.id
        );
        let payload = json!({ "body": self.body });
        let octo = &self.rest.octo;
        let answer = self
            .rest
            .send(&Method::PATCH, &target, || {
                octo.patch::<ApiComment, _, _>(&target, Some(&payload))
            })
            .await?;
        match answer {
            Ok(comment) => {
                let mut updated = self.found_in(comment);
                if updated.url.is_empty() {
                    updated.url = found.url;
                }
                Ok(Posted::Updated(updated))
            }
            Err(reply) if reply.status == 403 => Ok(self.refused(&reply)),
            // Deleted between listing and editing: post a new one.
            Err(reply) if reply.status == 404 => self.create(identity).await,
            Err(reply) => Err(self.status_error(&Method::PATCH, &target, &reply)),
        }
    }

    /// POST is not idempotent: after a 5xx or a lost connection the comment may exist
    /// already, so before each retry (and before giving up) the comments are listed again
    /// and a comment of ours that appeared is taken as created. A rate-limited POST was not
    /// carried out, and is retried as it is.
    async fn create(&self, identity: &str) -> Result<Posted, GithubError> {
        let target = format!(
            "/repos/{}/{}/issues/{}/comments",
            self.owner, self.name, self.pr
        );
        let payload = json!({ "body": self.body });
        let octo = &self.rest.octo;
        let attempts = self.rest.attempts();
        let mut attempt = 1;
        loop {
            let exchange = octo.post::<_, ApiComment>(&target, Some(&payload));
            let failure = match self.rest.once(&Method::POST, &target, exchange).await? {
                Ok(comment) => return Ok(Posted::Created(self.found_in(comment))),
                Err(failure) => failure,
            };
            let Some(delay) = self.rest.delay_after(&failure, attempt) else {
                return match failure {
                    Failure::Answer(reply) if reply.status == 403 => Ok(self.refused(&reply)),
                    Failure::Answer(reply) => {
                        Err(self.status_error(&Method::POST, &target, &reply))
                    }
                    Failure::Transport(last) => Err(GithubError::GaveUp {
                        request: self.rest.request_name(&Method::POST, &target),
                        attempts: attempt,
                        last,
                    }),
                };
            };
            let maybe_applied = match &failure {
                Failure::Answer(reply) => reply.is_server_error(),
                Failure::Transport(_) => true,
            };
            let last = attempt >= attempts;
            if !last {
                tokio::time::sleep(delay).await;
            }
            if maybe_applied && let Some(found) = self.find(identity).await? {
                return Ok(Posted::Created(found));
            }
            if last {
                return Err(GithubError::GaveUp {
                    request: self.rest.request_name(&Method::POST, &target),
                    attempts,
                    last: self.rest.describe(&failure),
                });
            }
            attempt += 1;
        }
    }
}

/// Post the pull request's perf comment, or update the one this identity posted before.
///
/// Blocking: it runs its own current-thread tokio runtime (on a helper thread if called from
/// inside a runtime). `body` must contain [`COMMENT_MARKER`]; it is cut to
/// [`COMMENT_SIZE_LIMIT`] with a visible note by [`truncate_body`].
///
/// - Identity: `CI_GATE_COMMENT_AUTHOR` if set, else `GET /user`'s login, else (401/403, the
///   Actions token) `github-actions[bot]`.
/// - The comment to update carries the marker AND is authored by the identity; a marker in
///   anyone else's comment is ignored (that comment is never edited). All pages are read.
/// - 5xx, 429 and rate-limit 403s are retried per `env.retry`, honouring `Retry-After`.
/// - The full body is written to `fallback` before any request, and stays there on any
///   failure (an error from here leaves it); it is removed once the comment is posted.
///   Without a token, or when GitHub refuses the write with 403 (a read-only token, as on
///   pull requests from forks), the outcome says why it was not posted.
pub fn post_or_update_comment(
    env: &GithubEnv,
    pr: u64,
    body: &str,
    fallback: &Path,
) -> Result<CommentOutcome, GithubError> {
    if !body.contains(COMMENT_MARKER) {
        return Err(GithubError::MissingMarker);
    }
    // Written before anything else, and kept whatever goes wrong from here (no repository,
    // a network that is down, GitHub refusing): the report is never lost. Removed only once
    // the comment is posted.
    let written = write_fallback(fallback, body, "the comment was not posted")?;
    let Some(token) = env.token.as_ref().filter(|t| !t.expose_secret().is_empty()) else {
        return write_fallback(fallback, body, "GITHUB_TOKEN is not set");
    };
    drop(written);
    let (owner, name) = repository(env)?;
    let fitted = fit_body(body);

    let work = || -> Result<Posted, GithubError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| GithubError::Client(format!("cannot start the async runtime ({e})")))?;
        runtime.block_on(async {
            let rest = Rest::new(env, token)?;
            Job {
                rest: &rest,
                env,
                owner,
                name,
                pr,
                body: &fitted,
            }
            .run()
            .await
        })
    };
    let posted = if tokio::runtime::Handle::try_current().is_ok() {
        // block_on inside a runtime would panic: do the work on a thread of its own.
        std::thread::scope(|s| s.spawn(work).join()).unwrap_or_else(|_| {
            Err(GithubError::Client(
                "the thread posting the comment panicked".to_owned(),
            ))
        })?
    } else {
        work()?
    };
    let posted_ok = |outcome| {
        // Posted: the file would only be a stale copy.
        let _ = std::fs::remove_file(fallback);
        Ok(outcome)
    };
    match posted {
        Posted::Created(Found { id, url }) => posted_ok(CommentOutcome::Created { id, url }),
        Posted::Updated(Found { id, url }) => posted_ok(CommentOutcome::Updated { id, url }),
        Posted::Refused(why) => write_fallback(fallback, body, &why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: usize) -> String {
        let mut s = format!("{COMMENT_MARKER}\n## Perf\n\n| shape | p50 |\n| --- | --- |\n");
        for i in 0..rows {
            s.push_str(&format!("| attn_b{i}_h16_s4096_d128 | 9.{i} µs |\n"));
        }
        s
    }

    #[test]
    fn short_bodies_are_unchanged() {
        let body = table(3);
        assert_eq!(truncate_body(&body, body.len()), body);
        assert_eq!(truncate_body(&body, COMMENT_SIZE_LIMIT), body);
    }

    #[test]
    fn long_bodies_are_cut_on_a_line_with_a_note() {
        let body = table(5000);
        assert!(body.len() > COMMENT_SIZE_LIMIT);
        let cut = truncate_body(&body, COMMENT_SIZE_LIMIT);
        assert!(cut.len() <= COMMENT_SIZE_LIMIT, "{}", cut.len());
        assert!(cut.len() > COMMENT_SIZE_LIMIT - 200, "too much thrown away");
        assert!(cut.starts_with(COMMENT_MARKER));
        assert!(cut.ends_with(&format!("\n\n{TRUNCATION_NOTE}\n")));
        let kept = cut.strip_suffix(&format!("\n{TRUNCATION_NOTE}\n")).unwrap();
        assert!(
            kept.ends_with(" µs |\n"),
            "cut mid-line: {:?}",
            &kept[kept.len() - 40..]
        );
        assert!(body.starts_with(kept));
    }

    #[test]
    fn never_splits_a_utf8_char_and_always_fits() {
        // Multi-byte characters everywhere, no newlines: the cut is at a char boundary.
        let body = "µ€😀".repeat(10_000);
        for limit in [150, 151, 152, 153, 1000, 1001, 1002, 1003, 4097] {
            let cut = truncate_body(&body, limit);
            assert!(cut.len() <= limit, "{limit}: {}", cut.len());
            assert!(cut.contains("truncated"), "{limit}");
        }
        // Lines of multi-byte characters.
        let body = "é😀\n".repeat(20_000);
        for limit in 140..260 {
            let cut = truncate_body(&body, limit);
            assert!(cut.len() <= limit, "{limit}");
            assert!(cut.ends_with(&format!("{TRUNCATION_NOTE}\n")));
        }
        // Limits too small for the note still give a valid, bounded string.
        for limit in 0..20 {
            assert!(truncate_body(&body, limit).len() <= limit);
        }
    }

    #[test]
    fn a_cut_inside_a_code_fence_closes_it() {
        let mut body = String::from("intro\n```text\n");
        for i in 0..1000 {
            body.push_str(&format!("raw sample {i}\n"));
        }
        body.push_str("```\n");
        let cut = truncate_body(&body, 2000);
        assert!(cut.len() <= 2000);
        assert!(!leaves_fence_open(&cut), "{cut}");
        assert!(cut.contains("```\n\n… truncated"));
    }

    #[test]
    fn one_giant_line_is_cut_mid_line_rather_than_dropped() {
        let body = format!("{COMMENT_MARKER}\n{}", "x".repeat(100_000));
        let cut = truncate_body(&body, 10_000);
        assert!(cut.len() <= 10_000 && cut.len() > 9_000, "{}", cut.len());
    }

    #[test]
    fn fit_body_keeps_the_marker_even_when_it_was_at_the_end() {
        let body = format!("{}\n{COMMENT_MARKER}\n", "line\n".repeat(20_000));
        let fitted = fit_body(&body);
        assert!(fitted.len() <= COMMENT_SIZE_LIMIT);
        assert!(fitted.starts_with(COMMENT_MARKER));
        assert!(fitted.contains("truncated"));
        let body = table(5000);
        let fitted = fit_body(&body);
        assert_eq!(fitted.matches(COMMENT_MARKER).count(), 1);
    }

    #[test]
    fn repository_must_be_owner_slash_name() {
        let env = |r: Option<&str>| {
            let mut e = GithubEnv::from_lookup(|_| None);
            e.repository = r.map(str::to_owned);
            e
        };
        assert_eq!(
            repository(&env(Some("octo-org/gpu.kernels_1"))).unwrap(),
            ("octo-org", "gpu.kernels_1")
        );
        assert!(matches!(
            repository(&env(None)),
            Err(GithubError::NoRepository)
        ));
        for bad in [
            "octo", "a/b/c", "/b", "a/", "../x", "a/..", "a/b?x=1", "a b/c", "a/b#",
        ] {
            assert!(
                matches!(
                    repository(&env(Some(bad))),
                    Err(GithubError::BadRepository(_))
                ),
                "{bad}"
            );
        }
    }
}
