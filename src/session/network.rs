//! A confined command's network, as its call sees it (`protocol/sandbox.md`,
//! "The network allowlist"): while the command runs, its door of the
//! session's proxy asks about a host its allowlist does not name
//! (`ToolEvent::NetworkAsk`), and candor asks the user on the call's card
//! ("Allow network access to HOST?", `session/request_permission` scoped
//! to that call: for this command, for the rest of the session, or no),
//! bounded in time and ended by a cancel or by the command's end; every
//! host the command reaches for is recorded once (`network/decided`, after
//! `network/requested` when the user was asked), so the card, the replay
//! and `candor audit` say where it went. An "always" is the session's
//! grant: recorded with the answer, and named by later commands'
//! allowlists (`session::sandbox::effective`).
//!
//! A permission answer may widen the network here (some clients answer
//! every request "allow"): it lets a command the user already let run
//! reach one more host, and the card says it did.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::commit::Committer;
use super::kit::SessionKit;
use super::permission::{Asked, ask_client};
use crate::event_log::{Event, LogError, NetworkDecider, PermissionChoice, PermissionOutcome};
use crate::sandbox::{Answer, DecidedBy, Decision};

/// How long the user has to answer before the connection is refused.
pub(crate) const ASK_WAIT: Duration = Duration::from_secs(300);
/// How long, once the command ended, a question still open has to be
/// withdrawn and recorded.
const WITHDRAW_WAIT: Duration = Duration::from_secs(2);
/// The most hosts recorded for one command (every host asked about is).
const MAX_RECORDED: usize = 64;

/// A question and where its answer goes.
type Asking<'g> =
    Pin<Box<dyn Future<Output = (String, u16, Asked, oneshot::Sender<Answer>)> + Send + 'g>>;

/// One call's questions about hosts, and the hosts it reached for.
pub(crate) struct Asks<'g> {
    id: String,
    kit: &'g SessionKit,
    /// Ends every open question (the turn's cancel, or the command's end).
    stop: CancellationToken,
    open: FuturesUnordered<Asking<'g>>,
    recorded: HashSet<String>,
    /// The hosts refused, with why, for the model.
    refused: Vec<(String, u16, &'static str)>,
}

impl<'g> Asks<'g> {
    pub(crate) fn new(id: &str, kit: &'g SessionKit, cancel: &CancellationToken) -> Asks<'g> {
        Asks {
            id: id.to_owned(),
            kit,
            stop: cancel.child_token(),
            open: FuturesUnordered::new(),
            recorded: HashSet::new(),
            refused: Vec::new(),
        }
    }

    /// The command is connecting to `host`, which its allowlist does not
    /// name: records the question and asks the user on the card.
    pub(crate) fn ask(
        &mut self,
        c: &mut Committer,
        host: String,
        port: u16,
        reply: oneshot::Sender<Answer>,
    ) -> Result<(), LogError> {
        let choices = vec![
            PermissionChoice {
                option_id: "allow_once".into(),
                kind: "allow_once".into(),
                name: format!("Allow {host} for this command"),
            },
            PermissionChoice {
                option_id: "allow_always".into(),
                kind: "allow_always".into(),
                name: format!("Allow {host} for the rest of this session"),
            },
            PermissionChoice {
                option_id: "reject_once".into(),
                kind: "reject_once".into(),
                name: "Refuse".into(),
            },
        ];
        self.recorded.insert(host.clone());
        c.commit(Event::NetworkRequested {
            tool_call_id: self.id.clone(),
            host: host.clone(),
            port,
            options: choices.clone(),
        })?;
        let Some(card) = c.network_card(&self.id, &host, port) else {
            let _ = reply.send(Answer::Unanswered);
            return self.record(
                c,
                &host,
                port,
                Asked::Failed("the call's card is closed".into()),
            );
        };
        let (card, session) = super::permission::placed(self.kit, c, card);
        let kit = self.kit;
        let stop = self.stop.clone();
        self.open.push(Box::pin(async move {
            let asked =
                tokio::time::timeout(ASK_WAIT, ask_client(kit, &session, card, &choices, &stop))
                    .await
                    .unwrap_or_else(|_| {
                        Asked::Failed(format!(
                            "no answer within {} minutes",
                            ASK_WAIT.as_secs() / 60
                        ))
                    });
            (host, port, asked, reply)
        }));
        Ok(())
    }

    /// Whether a question is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Waits for the next answer (never resolves while none is open).
    pub(crate) async fn next(&mut self) -> (String, u16, Asked, oneshot::Sender<Answer>) {
        match self.open.next().await {
            Some(answered) => answered,
            None => std::future::pending().await,
        }
    }

    /// Records an answer and gives it to the proxy.
    pub(crate) fn answered(
        &mut self,
        c: &mut Committer,
        (host, port, asked, reply): (String, u16, Asked, oneshot::Sender<Answer>),
    ) -> Result<(), LogError> {
        let answer = match &asked {
            Asked::Chose(option) if option == "allow_once" => Answer::Allow,
            Asked::Chose(option) if option == "allow_always" => Answer::AllowAlways,
            Asked::Chose(_) => Answer::Refuse,
            Asked::Cancelled | Asked::Failed(_) => Answer::Unanswered,
        };
        // Recorded first: the connection goes through only once the answer
        // is in the log.
        self.record(c, &host, port, asked)?;
        let _ = reply.send(answer);
        Ok(())
    }

    /// Records the user's answer (or why there is none).
    fn record(
        &mut self,
        c: &mut Committer,
        host: &str,
        port: u16,
        asked: Asked,
    ) -> Result<(), LogError> {
        let (outcome, reason) = match asked {
            Asked::Chose(option) => (
                match option.as_str() {
                    "allow_once" => PermissionOutcome::AllowedOnce,
                    "allow_always" => PermissionOutcome::AllowedAlways,
                    _ => PermissionOutcome::Rejected,
                },
                None,
            ),
            Asked::Cancelled => (
                PermissionOutcome::Cancelled,
                Some(
                    "the question was withdrawn (the turn was cancelled, or the command ended)"
                        .to_owned(),
                ),
            ),
            Asked::Failed(why) => (PermissionOutcome::Failed, Some(why)),
        };
        let allowed = matches!(
            outcome,
            PermissionOutcome::AllowedOnce | PermissionOutcome::AllowedAlways
        );
        let by = match outcome {
            PermissionOutcome::Cancelled | PermissionOutcome::Failed => NetworkDecider::NoAnswer,
            _ => NetworkDecider::User,
        };
        if !allowed {
            self.refused.push((host.to_owned(), port, refusal(by)));
        }
        c.commit(Event::NetworkDecided {
            tool_call_id: self.id.clone(),
            host: host.to_owned(),
            port,
            allowed,
            by,
            rule: None,
            outcome: Some(outcome),
            grant: (outcome == PermissionOutcome::AllowedAlways).then(|| host.to_owned()),
            reason,
        })
    }

    /// What the proxy decided without asking (an allowlist rule, the
    /// session's grant, a limit): recorded the first time for a host.
    pub(crate) fn decided(&mut self, c: &mut Committer, d: Decision) -> Result<(), LogError> {
        let (by, rule) = match d.by {
            // Recorded with the user's answer, or already.
            DecidedBy::Judge | DecidedBy::Remembered => return Ok(()),
            DecidedBy::Rule { rule } => (NetworkDecider::Allowlist, Some(rule)),
            DecidedBy::Grant => (NetworkDecider::Grant, None),
            DecidedBy::NoAnswer => (NetworkDecider::NoAnswer, None),
            DecidedBy::Limit => (NetworkDecider::Limit, None),
        };
        if self.recorded.len() >= MAX_RECORDED || !self.recorded.insert(d.host.clone()) {
            return Ok(());
        }
        if !d.allowed {
            self.refused.push((d.host.clone(), d.port, refusal(by)));
        }
        c.commit(Event::NetworkDecided {
            tool_call_id: self.id.clone(),
            host: d.host,
            port: d.port,
            allowed: d.allowed,
            by,
            rule,
            outcome: None,
            grant: None,
            reason: None,
        })
    }

    /// The command ended: questions still open are withdrawn from the
    /// client and recorded as not answered. Returns what the model is told
    /// of the hosts refused (one line each), unless `output` says it.
    pub(crate) async fn finish(
        mut self,
        c: &mut Committer,
        output: &str,
    ) -> Result<Vec<String>, LogError> {
        self.stop.cancel();
        while !self.open.is_empty() {
            match tokio::time::timeout(WITHDRAW_WAIT, self.open.next()).await {
                Ok(Some(answered)) => self.answered(c, answered)?,
                Ok(None) | Err(_) => break,
            }
        }
        Ok(self
            .refused
            .iter()
            .filter(|(host, ..)| !output.contains(&format!("refused {host}")))
            .map(|(host, port, why)| {
                format!(
                    "[the sandbox's network allowlist refused {host} (port {port}): {why}; if the command needs it, ask the user to allow the domain, and do not look for a way around the sandbox]"
                )
            })
            .collect())
    }
}

/// Why a host was refused, for the model.
fn refusal(by: NetworkDecider) -> &'static str {
    match by {
        NetworkDecider::User => "the user refused it when asked",
        NetworkDecider::NoAnswer => "the user was asked and did not answer",
        NetworkDecider::Limit => "this command asked about too many hosts",
        NetworkDecider::Allowlist | NetworkDecider::Grant => "no allowlist rule names it",
    }
}
