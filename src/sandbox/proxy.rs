//! The network allowlist's proxy, run by candor outside every sandbox and
//! reached from inside only through the sandbox's forwarder
//! (`sandbox::forwarder`), speaking HTTP `CONNECT` (for TLS and anything
//! tunnelled) and plain-HTTP forwarding (absolute-form request, one per
//! connection). A session's proxy is its [`Grants`] (the hosts the user
//! allowed for the rest of the session) and one door per confined
//! command, a [`Proxy`]: a unix socket with that command's allowlist (the
//! domains its boundary names) and its [`Judge`] (the user, asked on the
//! command's card). A host is let through when an allowlist rule names it
//! (`example.com`, or `*.example.com` for its subdomains), when the user
//! allowed it for the session, or when the judge allows it within its
//! time; the command's answers are remembered for its life, and a command
//! asks about a few hosts at most. Every decision is reported
//! ([`Decision`]) for the record.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head.
const HEAD_WAIT: Duration = Duration::from_secs(10);
/// How long connecting to an allowed host may take.
const CONNECT_WAIT: Duration = Duration::from_secs(10);
/// The most connections at once.
const MAX_CONNECTIONS: usize = 256;

/// Domain rules: `example.com` is that host, `*.example.com` any of its
/// subdomains (not itself). Case and a final dot do not count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    rules: Vec<String>,
}

impl Allowlist {
    pub fn new<S: AsRef<str>>(domains: &[S]) -> Allowlist {
        Allowlist {
            rules: domains
                .iter()
                .map(|d| normalize(d.as_ref()))
                .filter(|d| !d.is_empty())
                .collect(),
        }
    }

    /// The rule that allows `host`, if one does.
    pub fn allows(&self, host: &str) -> Option<&str> {
        let host = normalize(host);
        self.rules
            .iter()
            .find(|rule| match rule.strip_prefix("*.") {
                Some(parent) => host
                    .strip_suffix(parent)
                    .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                None => **rule == host,
            })
            .map(String::as_str)
    }
}

/// One spelling of a host (an address's too): `web::address::host_key`,
/// the one reading of a host in candor.
pub fn normalize(host: &str) -> String {
    crate::web::address::host_key(host)
}

/// What the judge says of a host no rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// For this command.
    Allow,
    /// For this command and every later one of the session.
    AllowAlways,
    Refuse,
    /// The user was asked and did not answer (in time, or at all).
    Unanswered,
}

/// Decides a host no rule names. The proxy waits for it at most its
/// `judge_wait`; no answer is a refusal.
pub trait Judge: Send + Sync {
    fn judge(&self, host: &str, port: u16) -> Pin<Box<dyn Future<Output = Answer> + Send + '_>>;
}

/// A judge that refuses every host it is asked about.
#[derive(Debug, Clone, Copy, Default)]
pub struct RefuseUnlisted;

impl Judge for RefuseUnlisted {
    fn judge(&self, _host: &str, _port: u16) -> Pin<Box<dyn Future<Output = Answer> + Send + '_>> {
        Box::pin(async { Answer::Refuse })
    }
}

/// The hosts the user allowed for the rest of the session: every door of
/// the session's proxy lets them through (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct Grants(Arc<Mutex<Vec<String>>>);

impl Grants {
    /// Whether `host` was allowed for the session.
    pub fn allow(&self, host: &str) -> bool {
        let host = normalize(host);
        crate::sync::lock(&self.0).contains(&host)
    }

    /// Allows `host` for the rest of the session.
    pub fn add(&self, host: &str) {
        let host = normalize(host);
        let mut hosts = crate::sync::lock(&self.0);
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
}

/// Who decided a connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "by")]
pub enum DecidedBy {
    /// An allowlist rule.
    Rule { rule: String },
    /// The user allowed the host for the session, earlier.
    Grant,
    /// The judge, now.
    Judge,
    /// The judge's earlier answer for the host, in this command.
    Remembered,
    /// The judge gave no answer in time.
    NoAnswer,
    /// The command asked about too many hosts: refused unasked.
    Limit,
}

/// One decision, for the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    #[serde(flatten)]
    pub by: DecidedBy,
}

/// Where a door's decisions are reported.
pub type Report = Arc<dyn Fn(Decision) + Send + Sync>;

/// What one door of the proxy works with.
pub struct ProxyConfig {
    /// The command's allowlist (its boundary's domains).
    pub allowlist: Allowlist,
    /// The session's grants, shared by its doors.
    pub grants: Grants,
    pub judge: Arc<dyn Judge>,
    pub judge_wait: Duration,
    /// The most hosts the judge is asked about for this command; past
    /// them, an unlisted host is refused unasked.
    pub max_asks: usize,
    pub decisions: Report,
}

struct Shared {
    config: ProxyConfig,
    /// The judge's answers for this command, by host.
    answers: Mutex<HashMap<String, bool>>,
    /// One question at a time (a second connection to the same host waits
    /// for the first's answer).
    asking: tokio::sync::Mutex<usize>,
}

/// One door of a session's proxy, for one command; dropping it stops it
/// and removes its socket.
#[derive(Debug)]
pub struct Proxy {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Proxy {
    /// Listens at `path` (replacing a stale socket).
    pub fn start(path: &Path, config: ProxyConfig) -> std::io::Result<Proxy> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        let shared = Arc::new(Shared {
            config,
            answers: Mutex::new(HashMap::new()),
            asking: tokio::sync::Mutex::new(0),
        });
        let task = tokio::spawn(async move {
            let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
                        let shared = shared.clone();
                        connections.spawn(async move {
                            serve(stream, &shared).await;
                            drop(slot);
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(Proxy {
            path: path.to_owned(),
            task,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A request head: what it asks for, and the bytes after the head.
struct Request {
    connect: bool,
    host: String,
    port: u16,
    /// For plain HTTP: the head to send on, in origin form.
    head: Vec<u8>,
    rest: Vec<u8>,
}

async fn serve(mut client: UnixStream, shared: &Shared) {
    let request = match tokio::time::timeout(HEAD_WAIT, read_request(&mut client)).await {
        Ok(Ok(r)) => r,
        Ok(Err(why)) => return answer(&mut client, "400 Bad Request", &why).await,
        Err(_) => return,
    };
    let (allowed, by) = decide(shared, &request.host, request.port).await;
    if !allowed {
        let why = match by {
            DecidedBy::Judge => "the user refused it when asked",
            DecidedBy::Remembered => "the user refused it, or did not answer, when asked",
            DecidedBy::NoAnswer => "the user was asked and did not answer in time",
            DecidedBy::Limit => "this command asked about too many hosts",
            DecidedBy::Rule { .. } | DecidedBy::Grant => "no allowlist rule names it",
        };
        let why = format!(
            "candor sandbox: network access to {} is not allowed ({why})\n",
            request.host
        );
        return answer(&mut client, "403 Forbidden", &why).await;
    }
    let target = (request.host.as_str(), request.port);
    let upstream = tokio::time::timeout(CONNECT_WAIT, TcpStream::connect(target)).await;
    let mut upstream = match upstream {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let why = format!("candor sandbox: cannot reach {}: {e}\n", request.host);
            return answer(&mut client, "502 Bad Gateway", &why).await;
        }
        Err(_) => {
            return answer(
                &mut client,
                "504 Gateway Timeout",
                "candor sandbox: no answer\n",
            )
            .await;
        }
    };
    let sent = if request.connect {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
    } else {
        upstream.write_all(&request.head).await
    };
    if sent.is_err() || upstream.write_all(&request.rest).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// The allowlist, this command's earlier answer, the session's grants,
/// then the judge (one question at a time, bounded in time and in number);
/// reported.
async fn decide(shared: &Shared, host: &str, port: u16) -> (bool, DecidedBy) {
    let config = &shared.config;
    let key = normalize(host);
    let known = || -> Option<(bool, DecidedBy)> {
        if let Some(rule) = config.allowlist.allows(host) {
            return Some((
                true,
                DecidedBy::Rule {
                    rule: rule.to_owned(),
                },
            ));
        }
        if let Some(answer) = crate::sync::lock(&shared.answers).get(&key).copied() {
            return Some((answer, DecidedBy::Remembered));
        }
        config
            .grants
            .allow(host)
            .then_some((true, DecidedBy::Grant))
    };
    let (allowed, by) = match known() {
        Some(decided) => decided,
        None => {
            let mut asked = shared.asking.lock().await;
            // Decided while this connection waited its turn?
            match known() {
                Some(decided) => decided,
                None if *asked >= config.max_asks => (false, DecidedBy::Limit),
                None => {
                    *asked += 1;
                    let judged =
                        tokio::time::timeout(config.judge_wait, config.judge.judge(host, port))
                            .await;
                    let (allowed, by) = match judged {
                        Ok(Answer::Allow) => (true, DecidedBy::Judge),
                        Ok(Answer::AllowAlways) => {
                            config.grants.add(host);
                            (true, DecidedBy::Judge)
                        }
                        Ok(Answer::Refuse) => (false, DecidedBy::Judge),
                        Ok(Answer::Unanswered) | Err(_) => (false, DecidedBy::NoAnswer),
                    };
                    crate::sync::lock(&shared.answers).insert(key.clone(), allowed);
                    (allowed, by)
                }
            }
        }
    };
    (config.decisions)(Decision {
        host: key,
        port,
        allowed,
        by: by.clone(),
    });
    (allowed, by)
}

async fn answer(client: &mut UnixStream, status: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = client.write_all(head.as_bytes()).await;
    let _ = client.write_all(body.as_bytes()).await;
    let _ = client.shutdown().await;
}

/// Reads and parses a request head.
async fn read_request(client: &mut UnixStream) -> Result<Request, String> {
    let mut buf = Vec::with_capacity(1024);
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err("request head too long\n".into());
        }
        let mut chunk = [0u8; 4096];
        let n = client.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("request head cut short\n".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let rest = buf.split_off(end);
    let head = String::from_utf8(buf).map_err(|_| "request head is not UTF-8\n".to_owned())?;
    parse_head(&head, rest)
}

fn parse_head(head: &str, rest: Vec<u8>) -> Result<Request, String> {
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next())
    else {
        return Err("malformed request line\n".into());
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, None)?;
        return Ok(Request {
            connect: true,
            host,
            port,
            head: Vec::new(),
            rest,
        });
    }
    let Some(after) = target.strip_prefix("http://") else {
        return Err("only CONNECT and absolute http:// requests are proxied\n".into());
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    let (host, port) = split_authority(authority, Some(80))?;
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if name.eq_ignore_ascii_case("proxy-connection")
            || name.eq_ignore_ascii_case("proxy-authorization")
            || name.eq_ignore_ascii_case("connection")
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request {
        connect: false,
        host,
        port,
        head: out.into_bytes(),
        rest,
    })
}

/// `host:port` (`[v6]:port`), the port defaulted where given.
fn split_authority(authority: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let bad = || format!("malformed host `{authority}`\n");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, rest) = v6.split_once(']').ok_or_else(bad)?;
        (host, rest.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match (port, default) {
        (Some(p), _) => p.parse().map_err(|_| bad())?,
        (None, Some(d)) => d,
        (None, None) => return Err(bad()),
    };
    // A host name or an address: nothing else reaches a decision, a
    // record or a question to the user.
    let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':');
    if host.is_empty() || host.len() > 253 || !host.chars().all(fits) {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_name_subdomains_and_exact_rules_one_host() {
        let list = Allowlist::new(&["Example.com.", "*.npmjs.org", "127.0.0.1"]);
        assert_eq!(list.allows("example.com"), Some("example.com"));
        assert_eq!(list.allows("EXAMPLE.COM."), Some("example.com"));
        assert_eq!(list.allows("www.example.com"), None);
        assert_eq!(list.allows("registry.npmjs.org"), Some("*.npmjs.org"));
        assert_eq!(list.allows("a.b.npmjs.org"), Some("*.npmjs.org"));
        assert_eq!(list.allows("npmjs.org"), None);
        assert_eq!(list.allows("evilnpmjs.org"), None);
        assert_eq!(list.allows("127.0.0.1"), Some("127.0.0.1"));
        assert_eq!(list.allows("127.0.0.2"), None);
    }

    #[test]
    fn heads_are_parsed_and_plain_http_is_put_in_origin_form() {
        let r = parse_head("CONNECT example.com:443 HTTP/1.1\r\nHost: x", Vec::new()).unwrap();
        assert!(r.connect);
        assert_eq!((r.host.as_str(), r.port), ("example.com", 443));
        let r = parse_head(
            "GET http://127.0.0.1:8080/a?b HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Connection: keep-alive",
            b"x".to_vec(),
        )
        .unwrap();
        assert!(!r.connect);
        assert_eq!((r.host.as_str(), r.port), ("127.0.0.1", 8080));
        assert_eq!(
            String::from_utf8(r.head).unwrap(),
            "GET /a?b HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        );
        let r = parse_head("CONNECT [::1]:22 HTTP/1.1", Vec::new()).unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 22));
        assert!(parse_head("GET /local HTTP/1.1", Vec::new()).is_err());
        assert!(parse_head("CONNECT example.com HTTP/1.1", Vec::new()).is_err());
        assert!(parse_head("nonsense", Vec::new()).is_err());
        // Only a host name or an address is ever asked about or recorded.
        assert!(parse_head("CONNECT ev\u{202e}il.com:443 HTTP/1.1", Vec::new()).is_err());
        assert!(parse_head("CONNECT a\tb:443 HTTP/1.1", Vec::new()).is_err());
        assert!(parse_head("GET http://x%0a.com/ HTTP/1.1", Vec::new()).is_err());
    }
}
