//! A small fake of GitHub's REST API, enough for the PR comment: `GET /user`, listing issue
//! comments with `Link` pagination, creating and editing comments. It runs on 127.0.0.1 in a
//! background thread, speaks HTTP/1.1 with `Content-Length` bodies (one request per
//! connection), and records every request it receives. Faults (429, 5xx, rate-limit 403s,
//! odd headers) can be injected per method and path.
//!
//! Tokens decide who the caller is, as on GitHub: the Actions token cannot read `/user` and
//! comments as `github-actions[bot]`; a fork PR's Actions token can read but not write; a
//! personal token is a user with a login.

#![allow(dead_code)] // each test binary uses a different part of it

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

pub const OWNER: &str = "octo";
pub const REPO: &str = "gpu-kernels";
/// The numeric repository id GitHub uses in its pagination links.
pub const REPO_ID: u64 = 4242;

pub const ACTIONS_TOKEN: &str = "ghs_ActionsToken0123456789abcdefXYZ";
pub const READONLY_TOKEN: &str = "ghs_ForkReadOnly0123456789abcdefXYZ";
pub const PERSONAL_TOKEN: &str = "ghp_AlicePersonal0123456789abcdefXYZ";
pub const PERSONAL_LOGIN: &str = "alice";
pub const BOT_LOGIN: &str = "github-actions[bot]";

/// Who a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// The Actions `GITHUB_TOKEN` with `pull-requests: write`.
    Actions,
    /// The Actions token of a pull request from a fork: read-only.
    ReadOnlyActions,
    /// A personal access token of this login.
    Personal(String),
}

impl TokenKind {
    fn login(&self) -> &str {
        match self {
            TokenKind::Actions | TokenKind::ReadOnlyActions => BOT_LOGIN,
            TokenKind::Personal(login) => login,
        }
    }
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    pub fn query(&self, key: &str) -> Option<&str> {
        let (_, query) = self.target.split_once('?')?;
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    pub fn is(&self, method: &str, path: &str) -> bool {
        self.method == method && self.path() == path
    }
}

/// A comment stored by the fake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    pub issue: u64,
    pub login: String,
    pub body: String,
}

/// An injected answer for requests whose method matches and whose path starts with
/// `path_prefix`.
#[derive(Clone, Debug)]
pub struct Fault {
    method: String,
    path_prefix: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    remaining: usize,
    apply_first: bool,
    streamed: Option<usize>,
}

impl Fault {
    /// Answer `status` once, with GitHub's error body shape.
    pub fn new(method: &str, path_prefix: &str, status: u16) -> Fault {
        Fault {
            method: method.to_owned(),
            path_prefix: path_prefix.to_owned(),
            status,
            headers: Vec::new(),
            body: json!({ "message": reason(status) }).to_string(),
            remaining: 1,
            apply_first: false,
            streamed: None,
        }
    }

    pub fn times(mut self, n: usize) -> Fault {
        self.remaining = n;
        self
    }

    pub fn always(self) -> Fault {
        self.times(usize::MAX)
    }

    pub fn header(mut self, name: &str, value: &str) -> Fault {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn message(mut self, message: &str) -> Fault {
        self.body = json!({ "message": message }).to_string();
        self
    }

    pub fn raw_body(mut self, body: &str) -> Fault {
        self.body = body.to_owned();
        self
    }

    /// Answer with a body of `bytes` bytes sent in chunks (no `Content-Length`), for as long as
    /// the client reads: a server that streams without end.
    pub fn streamed(mut self, bytes: usize) -> Fault {
        self.streamed = Some(bytes);
        self
    }

    /// Carry out the request first, then answer with the fault (a 502 after the write
    /// happened: the client cannot know whether it did).
    pub fn after_applying(mut self) -> Fault {
        self.apply_first = true;
        self
    }
}

struct State {
    base_url: String,
    tokens: HashMap<String, TokenKind>,
    comments: Vec<Comment>,
    next_id: u64,
    page_size: usize,
    requests: Vec<Recorded>,
    faults: Vec<Fault>,
    /// Bytes of streamed bodies the client took before it hung up.
    streamed_bytes: usize,
}

/// The running fake. Dropping it stops the server.
pub struct FakeGithub {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeGithub {
    /// Start on a free port, with the three standard tokens known.
    pub fn start() -> FakeGithub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let mut tokens = HashMap::new();
        tokens.insert(ACTIONS_TOKEN.to_owned(), TokenKind::Actions);
        tokens.insert(READONLY_TOKEN.to_owned(), TokenKind::ReadOnlyActions);
        tokens.insert(
            PERSONAL_TOKEN.to_owned(),
            TokenKind::Personal(PERSONAL_LOGIN.to_owned()),
        );
        let state = Arc::new(Mutex::new(State {
            base_url: format!("http://{addr}"),
            tokens,
            comments: Vec::new(),
            next_id: 1000,
            page_size: 100,
            requests: Vec::new(),
            faults: Vec::new(),
            streamed_bytes: 0,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &state);
                    }
                }
            })
        };
        FakeGithub {
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `http://127.0.0.1:PORT`, for `GITHUB_API_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The most comments one page holds, whatever `per_page` asks (to force pagination).
    pub fn set_page_size(&self, n: usize) {
        self.state().page_size = n;
    }

    pub fn add_token(&self, token: &str, kind: TokenKind) {
        self.state().tokens.insert(token.to_owned(), kind);
    }

    /// Store a comment as if `login` had written it; returns its id.
    pub fn seed_comment(&self, issue: u64, login: &str, body: &str) -> u64 {
        let mut s = self.state();
        s.next_id += 1;
        let id = s.next_id;
        s.comments.push(Comment {
            id,
            issue,
            login: login.to_owned(),
            body: body.to_owned(),
        });
        id
    }

    pub fn comments(&self, issue: u64) -> Vec<Comment> {
        self.state()
            .comments
            .iter()
            .filter(|c| c.issue == issue)
            .cloned()
            .collect()
    }

    pub fn comment(&self, id: u64) -> Option<Comment> {
        self.state().comments.iter().find(|c| c.id == id).cloned()
    }

    pub fn inject(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    /// Bytes of streamed bodies written before the client stopped reading.
    pub fn streamed_bytes(&self) -> usize {
        self.state().streamed_bytes
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.state().requests.clear();
    }

    /// `METHOD /path` of every request so far (queries left out).
    pub fn request_lines(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path()))
            .collect()
    }
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// ---------------------------------------------------------------------------------------
// HTTP

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// Instead of `body`: this many bytes, chunked.
    streamed: Option<usize>,
}

impl Response {
    fn json(status: u16, body: Value) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            streamed: None,
        }
    }

    fn error(status: u16, message: &str) -> Response {
        Response::json(
            status,
            json!({
                "message": message,
                "documentation_url": "https://docs.github.com/rest",
                "status": status.to_string(),
            }),
        )
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

fn read_request(stream: &TcpStream) -> std::io::Result<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body)?;
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0; size + 2]; // data + CRLF
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Ok(Request {
        method,
        target,
        headers,
        body,
    })
}

fn serve(mut stream: TcpStream, state: &Mutex<State>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(request) = read_request(&stream) else {
        return;
    };
    if request.method.is_empty() {
        return; // the wake-up connection of Drop
    }
    let response = {
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        answer(&mut state, request)
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    out.push_str("content-type: application/json; charset=utf-8\r\n");
    match response.streamed {
        Some(_) => out.push_str("transfer-encoding: chunked\r\n"),
        None => out.push_str(&format!("content-length: {}\r\n", response.body.len())),
    }
    out.push_str("connection: close\r\n");
    for (name, value) in &response.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    if let Some(total) = response.streamed {
        let _ = stream.write_all(out.as_bytes());
        let chunk = vec![b'['; 64 * 1024];
        let mut sent = 0;
        while sent < total {
            let n = chunk.len().min(total - sent);
            let framed = [
                format!("{n:x}\r\n").as_bytes(),
                &chunk[..n],
                b"\r\n".as_slice(),
            ]
            .concat();
            if stream.write_all(&framed).is_err() {
                break;
            }
            sent += n;
        }
        let _ = stream.write_all(b"0\r\n\r\n");
        state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .streamed_bytes += sent;
        let _ = stream.shutdown(std::net::Shutdown::Both);
        return;
    }
    out.push_str(&response.body);
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

// ---------------------------------------------------------------------------------------
// The API

fn comment_json(c: &Comment) -> Value {
    json!({
        "id": c.id,
        "node_id": format!("IC_{}", c.id),
        "url": format!("https://api.github.com/repos/{OWNER}/{REPO}/issues/comments/{}", c.id),
        "html_url": format!("https://github.com/{OWNER}/{REPO}/pull/{}#issuecomment-{}", c.issue, c.id),
        "issue_url": format!("https://api.github.com/repos/{OWNER}/{REPO}/issues/{}", c.issue),
        "body": c.body,
        "user": {
            "login": c.login,
            "type": if c.login.ends_with("[bot]") { "Bot" } else { "User" },
        },
        "author_association": "CONTRIBUTOR",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    })
}

fn answer(state: &mut State, request: Request) -> Response {
    let recorded = Recorded {
        method: request.method.clone(),
        target: request.target.clone(),
        headers: request.headers.clone(),
        body: String::from_utf8_lossy(&request.body).into_owned(),
    };
    state.requests.push(recorded.clone());

    let path = recorded.path().to_owned();
    let fault = state.faults.iter_mut().find(|f| {
        f.remaining > 0 && f.method == recorded.method && path.starts_with(&f.path_prefix)
    });
    let fault = fault.map(|f| {
        f.remaining = f.remaining.saturating_sub(1);
        f.clone()
    });
    if let Some(fault) = fault {
        if fault.apply_first {
            let _ = route(state, &recorded, &request.body);
        }
        return Response {
            status: fault.status,
            headers: fault.headers,
            body: fault.body,
            streamed: fault.streamed,
        };
    }
    let mut response = route(state, &recorded, &request.body);
    response
        .headers
        .push(("x-ratelimit-remaining".to_owned(), "4999".to_owned()));
    response
}

fn route(state: &mut State, request: &Recorded, body: &[u8]) -> Response {
    let who = request
        .header("authorization")
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("token "))
        })
        .and_then(|t| state.tokens.get(t))
        .cloned();
    let Some(who) = who else {
        return Response::error(401, "Bad credentials");
    };
    let segments: Vec<&str> = request.path().trim_start_matches('/').split('/').collect();
    let repo_ok = |s: &[&str]| {
        (s.len() >= 3 && s[0] == "repos" && s[1] == OWNER && s[2] == REPO)
            || (s.len() >= 2 && s[0] == "repositories" && s[1] == REPO_ID.to_string())
    };
    let rest: &[&str] = match segments.first() {
        Some(&"repos") if repo_ok(&segments) => &segments[3..],
        Some(&"repositories") if repo_ok(&segments) => &segments[2..],
        _ => &[],
    };

    match (request.method.as_str(), segments.as_slice(), rest) {
        ("GET", ["user"], _) => match &who {
            TokenKind::Personal(login) => {
                Response::json(200, json!({ "login": login, "id": 1, "type": "User" }))
            }
            _ => Response::error(403, "Resource not accessible by integration"),
        },
        ("GET", _, ["issues", issue, "comments"]) => {
            let Ok(issue) = issue.parse::<u64>() else {
                return Response::error(404, "Not Found");
            };
            list_comments(state, request, issue)
        }
        ("POST", ["repos", ..], ["issues", issue, "comments"]) => {
            let Ok(issue) = issue.parse::<u64>() else {
                return Response::error(404, "Not Found");
            };
            if who == TokenKind::ReadOnlyActions {
                return Response::error(403, "Resource not accessible by integration");
            }
            let Some(text) = comment_body(body) else {
                return Response::error(422, "Invalid request: body is missing");
            };
            state.next_id += 1;
            let comment = Comment {
                id: state.next_id,
                issue,
                login: who.login().to_owned(),
                body: text,
            };
            state.comments.push(comment.clone());
            Response::json(201, comment_json(&comment))
        }
        ("PATCH", ["repos", ..], ["issues", "comments", id]) => {
            let Ok(id) = id.parse::<u64>() else {
                return Response::error(404, "Not Found");
            };
            if who == TokenKind::ReadOnlyActions {
                return Response::error(403, "Resource not accessible by integration");
            }
            let Some(text) = comment_body(body) else {
                return Response::error(422, "Invalid request: body is missing");
            };
            match state.comments.iter_mut().find(|c| c.id == id) {
                Some(c) => {
                    c.body = text;
                    Response::json(200, comment_json(c))
                }
                None => Response::error(404, "Not Found"),
            }
        }
        _ => Response::error(404, "Not Found"),
    }
}

fn comment_body(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("body")?.as_str().map(str::to_owned)
}

fn list_comments(state: &State, request: &Recorded, issue: u64) -> Response {
    let per_page = request
        .query("per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100)
        .min(state.page_size);
    let page = request
        .query("page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let all: Vec<&Comment> = state.comments.iter().filter(|c| c.issue == issue).collect();
    let pages = all.len().div_ceil(per_page).max(1);
    let items: Vec<Value> = all
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|c| comment_json(c))
        .collect();
    let asked = request.query("per_page").unwrap_or("30");
    let link = |p: usize, rel: &str| {
        format!(
            "<{}/repositories/{REPO_ID}/issues/{issue}/comments?per_page={asked}&page={p}>; rel=\"{rel}\"",
            state.base_url
        )
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link(page - 1, "prev"));
    }
    if page < pages {
        links.push(link(page + 1, "next"));
        links.push(link(pages, "last"));
    }
    if page > 1 {
        links.push(link(1, "first"));
    }
    let mut response = Response::json(200, Value::Array(items));
    if !links.is_empty() {
        response.headers.push(("link".to_owned(), links.join(", ")));
    }
    response
}
