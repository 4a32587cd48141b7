//! The dispatcher: the only module that knows the names of the methods the
//! editor calls.
//!
//! [`on_line`] is called by the reader for every input line, in order, and
//! the line is parsed once ([`rpc::classify`]):
//!
//! * garbage → an error response at once (`-32700`, `-32600`);
//! * a response → the [`Outgoing`] pending table;
//! * a notification → handled inline (`session/cancel`, `$/cancel_request`;
//!   anything else is ignored and logged at debug);
//! * `initialize` → answered before the next line is read (it is instant),
//!   so pipelined requests see its effect;
//! * any other request → its params decoded into the schema crate's type
//!   ([`Call::decode`], the one table of the methods candor serves),
//!   checked against `initialize` and the ids still running, then run on
//!   its own task ([`Agent::serve`]), which queues exactly one response.
//!
//! Handlers take and return the schema crate's types. Requests are not
//! routed through a jsonrpsee `RpcModule`: its methods take their params
//! as JSON text, so a line already parsed would be parsed again to reach
//! them, and what the dispatcher needs around a request (a prompt's
//! session, to arm its cancel in wire order; the session a `session/new`
//! opened, to let it speak once its answer is out) would have to be read
//! back out of text. jsonrpsee's types frame the answers (`Id`, `Response`,
//! `ErrorObject`), and [`to_rpc`] is the single mapping from ACP errors to
//! JSON-RPC error objects.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, AgentResponse, AuthMethod, AuthMethodAgent, AuthenticateRequest,
    AuthenticateResponse, CancelNotification, CancelRequestNotification, ClientCapabilities,
    CloseSessionRequest, CloseSessionResponse, ContentBlock, DeleteSessionRequest,
    DeleteSessionResponse, EmbeddedResourceResource, Error as AcpError, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, RequestId, ResumeSessionRequest,
    ResumeSessionResponse, SessionAdditionalDirectoriesCapabilities, SessionCapabilities,
    SessionCloseCapabilities, SessionDeleteCapabilities, SessionInfo, SessionListCapabilities,
    SessionResumeCapabilities, SessionSystemPromptCapabilities,
    SessionSystemPromptModeCapabilities, SessionSystemPromptOverrideCapabilities,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use bytes::Bytes;
use jsonrpsee::types::{ErrorObject, ErrorObjectOwned, Id, Response, ResponsePayload};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ProviderSetting};
use crate::interception::policy::Mode;
use crate::rpc::{self, InFlight, Message, Outgoing, Running};
use crate::session::actor::Origin;
use crate::session::queue::SteeringOutcome;
use crate::session::settings::{Change, View};
use crate::session::stored;
use crate::session::{SessionHandle, actor};
use crate::sync::lock;
use crate::transport::{Outbox, mirror_frame};

/// Connection-wide state: what the client told us, and the sessions.
#[derive(Debug)]
pub(crate) struct Agent {
    config: Config,
    outbox: Outbox,
    outgoing: Arc<Outgoing>,
    in_flight: InFlight,
    initialized: AtomicBool,
    client: Mutex<Option<ClientCapabilities>>,
    // Std mutexes: each is held to insert, look up or drain, never across
    // an `.await`.
    sessions: Mutex<HashMap<String, SessionHandle>>,
    actors: Mutex<Vec<JoinHandle<()>>>,
    hard_stop: CancellationToken,
}

impl Agent {
    pub(crate) fn new(config: Config, outbox: Outbox) -> Self {
        Self {
            config,
            outgoing: Arc::new(Outgoing::new(outbox.clone())),
            outbox,
            in_flight: InFlight::default(),
            initialized: AtomicBool::new(false),
            client: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            actors: Mutex::new(Vec::new()),
            hard_stop: CancellationToken::new(),
        }
    }

    fn session(&self, id: &str) -> Result<SessionHandle, AcpError> {
        lock(&self.sessions).get(id).cloned().ok_or_else(|| {
            crate::rpc::Failure::NotFound
                .error(format!("session {id} not found"))
                .data(serde_json::json!({"sessionId": id}))
        })
    }

    fn initialized(&self) -> bool {
        self.initialized.load(Ordering::SeqCst)
    }

    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        // We speak v1 only: echo 1, and answer 1 to anything else.
        if request.protocol_version != ProtocolVersion::V1 {
            tracing::info!(
                requested = request.protocol_version.as_u16(),
                "client asked for another protocol version; answering 1"
            );
        }
        if let Some(info) = &request.client_info {
            tracing::info!(client = %info.name, version = %info.version, "initialize");
        }
        *lock(&self.client) = Some(request.client_capabilities);
        self.initialized.store(true, Ordering::SeqCst);
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .session_capabilities(with_fork(
                        SessionCapabilities::new()
                            .list(SessionListCapabilities::new())
                            .resume(SessionResumeCapabilities::new())
                            .close(SessionCloseCapabilities::new())
                            .delete(SessionDeleteCapabilities::new())
                            .additional_directories(SessionAdditionalDirectoriesCapabilities::new())
                            .system_prompt(
                                SessionSystemPromptCapabilities::new().mode(
                                    SessionSystemPromptModeCapabilities::new()
                                        .override_(SessionSystemPromptOverrideCapabilities::new()),
                                ),
                            ),
                    ))
                    .prompt_capabilities(
                        PromptCapabilities::new().embedded_context(true).image(true),
                    )
                    // stdio, streamable HTTP and the older HTTP+SSE.
                    .mcp_capabilities(
                        agent_client_protocol_schema::v1::McpCapabilities::new()
                            .http(true)
                            .sse(true),
                    ),
            )
            .agent_info(Implementation::new("candor", env!("CARGO_PKG_VERSION")).title("candor"))
            .auth_methods(auth_methods())
            // `_session/steering`, advertised where the peers advertise it.
            .meta(steering_meta())
    }

    fn new_session(&self, request: NewSessionRequest) -> Result<Reply, AcpError> {
        let asked = Asked {
            mcp_servers: &request.mcp_servers,
            roots: &request.additional_directories,
            prompt: request.system_prompt.as_ref(),
        };
        let opened = self.open_session(request.cwd, asked, Origin::New)?;
        let response = NewSessionResponse::new(opened.id.clone())
            .config_options(opened.settings.config_options())
            .modes(opened.settings.modes());
        Ok(opened.reply(AgentResponse::NewSessionResponse(response)))
    }

    /// `session/load` (`replay`) and `session/resume`: a stored session,
    /// open again; with `replay`, the conversation is sent before the
    /// response.
    fn reopen_session(
        &self,
        id: &str,
        cwd: PathBuf,
        asked: Asked<'_>,
        replay: bool,
    ) -> Result<Opened, AcpError> {
        if lock(&self.sessions).contains_key(id) {
            return Err(AcpError::invalid_request().data(format!(
                "session {id} is already open; send prompts to it, or close it first"
            )));
        }
        let read = stored::read(&self.config.sessions_dir(), id).map_err(load_error)?;
        let origin = Origin::Stored {
            id: id.to_owned(),
            read,
            replay,
        };
        self.open_session(cwd, asked, origin)
    }

    fn load_session(&self, request: LoadSessionRequest) -> Result<Reply, AcpError> {
        let asked = Asked {
            mcp_servers: &request.mcp_servers,
            roots: &request.additional_directories,
            prompt: request.system_prompt.as_ref(),
        };
        let opened = self.reopen_session(&request.session_id.0, request.cwd, asked, true)?;
        let response = LoadSessionResponse::new()
            .config_options(opened.settings.config_options())
            .modes(opened.settings.modes());
        Ok(opened.reply(AgentResponse::LoadSessionResponse(response)))
    }

    fn resume_session(&self, request: ResumeSessionRequest) -> Result<Reply, AcpError> {
        let asked = Asked {
            mcp_servers: &request.mcp_servers,
            roots: &request.additional_directories,
            prompt: request.system_prompt.as_ref(),
        };
        let opened = self.reopen_session(&request.session_id.0, request.cwd, asked, false)?;
        let response = ResumeSessionResponse::new()
            .config_options(opened.settings.config_options())
            .modes(opened.settings.modes());
        Ok(opened.reply(AgentResponse::ResumeSessionResponse(response)))
    }

    /// `session/list`: stored sessions, most recent first, 50 a page (the
    /// cursor is the offset of the next page).
    fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, AcpError> {
        const PAGE: usize = 50;
        let offset = match &request.cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| AcpError::invalid_params().data(format!("unknown cursor {c:?}")))?,
        };
        let all = stored::list(&self.config.sessions_dir(), request.cwd.as_deref());
        // A cursor is untrusted input: near usize::MAX it must not wrap.
        let end = offset.saturating_add(PAGE);
        let next = (all.len() > end).then(|| end.to_string());
        let sessions = all
            .into_iter()
            .skip(offset)
            .take(PAGE)
            .map(|s| {
                SessionInfo::new(s.id, s.cwd)
                    .title(s.title.as_deref().map(crate::text::visible))
                    .updated_at(s.updated_at)
            })
            .collect();
        Ok(ListSessionsResponse::new(sessions).next_cursor(next))
    }

    /// `session/close`: ends the session's running turn and its actor
    /// (SessionEnd hooks run); the log stays, for `session/load`.
    fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, AcpError> {
        let id = request.session_id.0.to_string();
        let Some(session) = lock(&self.sessions).remove(&id) else {
            return Err(crate::rpc::Failure::NotFound.error(format!("session {id} is not open")));
        };
        session.close();
        Ok(CloseSessionResponse::new())
    }

    /// `session/delete`: closes it if open and moves its log out of the
    /// list (`sessions/deleted/`; an audit trail is not erased).
    fn delete_session(
        &self,
        request: DeleteSessionRequest,
    ) -> Result<DeleteSessionResponse, AcpError> {
        let id = request.session_id.0.to_string();
        if let Some(session) = lock(&self.sessions).remove(&id) {
            session.close();
        }
        stored::delete(&self.config.sessions_dir(), &id).map_err(load_error)?;
        Ok(DeleteSessionResponse::new())
    }

    /// Starts a session's actor and registers it.
    fn open_session(
        &self,
        cwd: PathBuf,
        asked: Asked<'_>,
        origin: Origin,
    ) -> Result<Opened, AcpError> {
        if !cwd.is_absolute() {
            return Err(AcpError::invalid_params().data(format!(
                "cwd must be an absolute path, got {:?}",
                cwd.display().to_string()
            )));
        }
        if !cwd.is_dir() {
            return Err(AcpError::invalid_params().data(format!(
                "cwd {} is not an existing directory",
                cwd.display()
            )));
        }
        let guard = crate::roots::Guard {
            home: self.config.user_home.as_deref(),
            state: Some(&self.config.home),
        };
        let roots = crate::roots::check(asked.roots, &cwd, guard)
            .map_err(|why| AcpError::invalid_params().data(why))?;
        let (prompt, prompt_hidden) = match asked
            .prompt
            .map(crate::session::system::client_prompt)
            .transpose()
            .map_err(|why| AcpError::invalid_params().data(why))?
        {
            Some((prompt, hidden)) => (Some(prompt), hidden),
            None => (None, 0),
        };
        let started = actor::start(
            &self.config,
            actor::Place {
                cwd,
                mcp_servers: asked.mcp_servers,
                roots,
                prompt,
                prompt_hidden,
            },
            origin,
            self.outbox.clone(),
            self.outgoing.clone(),
            &lock(&self.client).clone().unwrap_or_default(),
            self.hard_stop.child_token(),
        )
        .map_err(|e| crate::rpc::Failure::Internal.error(e.to_string()))?;
        let id = started.handle.id().to_owned();
        lock(&self.sessions).insert(id.clone(), started.handle);
        lock(&self.actors).push(started.task);
        Ok(Opened {
            id,
            settings: started.settings,
            opened: started.opened,
        })
    }

    /// `session/set_config_option`; answered once the change's update is
    /// queued, while no turn runs (see `session::settings`).
    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, AcpError> {
        let session = self.session(&request.session_id.0)?;
        let config = request.config_id.0.as_ref();
        let Some(value) = request.value.as_value_id() else {
            return Err(AcpError::invalid_params().data(format!(
                "the {config} option takes a value id, not a boolean"
            )));
        };
        let change = match config {
            "model" => Change::Model(value.0.to_string()),
            "mode" => Change::Mode(mode(&value.0)?),
            "effort" => Change::Effort(value.0.to_string()),
            // The person's own choice in the editor (no auto-approver sends
            // it), so it may lift the sandbox (`protocol/sandbox.md`).
            "sandbox" => Change::Sandbox(
                crate::sandbox::Preset::from_id(&value.0).ok_or_else(|| {
                    AcpError::invalid_params().data(format!(
                        "{:?} is not a sandbox preset; the presets are read-only, workspace-write and full-access",
                        value.0
                    ))
                })?,
            ),
            "network" => Change::Network(
                crate::sandbox::settings::NetworkMode::from_id(&value.0).ok_or_else(|| {
                    AcpError::invalid_params().data(format!(
                        "{:?} is not a sandbox network; the choices are off, allowlist and on",
                        value.0
                    ))
                })?,
            ),
            other => {
                return Err(AcpError::invalid_params().data(format!(
                    "unknown config option {other:?}; candor has \"mode\", \"model\", (for a model that thinks) \"effort\", \"sandbox\" and \"network\""
                )));
            }
        };
        let (options, recorded) = session.change(change)?;
        recorded_first(recorded).await;
        Ok(SetSessionConfigOptionResponse::new(options))
    }

    /// `session/set_mode`: the same change as the `mode` config option.
    async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, AcpError> {
        let session = self.session(&request.session_id.0)?;
        let (_, recorded) = session.change(Change::Mode(mode(&request.mode_id.0)?))?;
        recorded_first(recorded).await;
        Ok(SetSessionModeResponse::new())
    }

    /// `authenticate`: keys come from the environment only, so this says
    /// whether the method's key is set and, if not, which variable to set.
    fn authenticate(&self, request: AuthenticateRequest) -> Result<AuthenticateResponse, AcpError> {
        let method = request.method_id.0.as_ref();
        let Some((_, variable, _)) = AUTH_METHODS.iter().find(|(id, _, _)| *id == method) else {
            return Err(AcpError::invalid_params().data(format!("unknown auth method {method:?}")));
        };
        // Nothing to do when the model candor is configured with can answer
        // already, whichever method the client picked (clients often try the
        // first one listed).
        if self.model_ready() {
            Ok(AuthenticateResponse::new())
        } else {
            Err(crate::rpc::Failure::AuthRequired.error(format!(
                    "{variable} is not set: set it in the environment your editor starts candor with, then restart candor"
                ),
            ))
        }
    }

    /// The configured model provider has what it needs to answer: a key,
    /// or (OpenAI-compatible) an endpoint of its own, or it is scripted.
    fn model_ready(&self) -> bool {
        let Ok(model) = self.config.model_config(None) else {
            return false;
        };
        match model.provider {
            ProviderSetting::Scripted { .. } => true,
            ProviderSetting::Anthropic => model.anthropic_api_key.is_some(),
            ProviderSetting::OpenaiChat | ProviderSetting::OpenaiResponses => {
                model.openai_api_key.is_some()
                    || model.openai_base_url != crate::config::OPENAI_BASE_URL
            }
            ProviderSetting::None | ProviderSetting::Unknown(_) => false,
        }
    }

    /// A `session/prompt`, admitted to its session's line as the reader
    /// reads it (so the order received is the order run): its answer, to
    /// await.
    fn admit_prompt(
        &self,
        id: &Id<'static>,
        request: PromptRequest,
    ) -> Result<oneshot::Receiver<crate::session::queue::PromptAnswer>, AcpError> {
        check_prompt(&request.prompt)?;
        let session = self.session(&request.session_id.0)?;
        session.prompt(rpc::acp_id(id), request.prompt)
    }

    /// A `_session/steering` message, admitted as the reader reads it.
    fn admit_steering(
        &self,
        request: SteeringRequest,
    ) -> Result<oneshot::Receiver<SteeringOutcome>, AcpError> {
        check_steering(&request.prompt)?;
        let session = self.session(&request.session_id.0)?;
        session.steer(request.prompt)
    }

    /// Cancels a session's running (or just-read) turn; unknown ids are ignored.
    fn cancel_session(&self, id: &str) {
        let sessions = lock(&self.sessions);
        match sessions.get(id) {
            Some(session) => session.cancel(),
            // A subagent's session (announced to a client that takes
            // them): only that subagent ends.
            None if sessions.values().any(|s| s.cancel_subagent(id)) => {}
            None => tracing::debug!(session = id, "cancel for an unknown session ignored"),
        }
    }

    /// Stops every session: turns are cancelled, tools stop without grace,
    /// and the actors get up to `within` to write their last records.
    pub(crate) async fn shutdown(&self, within: Duration) {
        let sessions: Vec<SessionHandle> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.stop();
        }
        self.hard_stop.cancel();
        drop(sessions);
        let actors: Vec<JoinHandle<()>> = lock(&self.actors).drain(..).collect();
        let all = async {
            for actor in actors {
                let _ = actor.await;
            }
        };
        if tokio::time::timeout(within, all).await.is_err() {
            tracing::warn!("some sessions did not stop in time");
        }
    }

    /// Waits (up to `within`) until no incoming request is still running.
    pub(crate) async fn wait_for_requests(&self, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while !self.in_flight.is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// `sessionCapabilities.fork`, when built with `session/fork`.
fn with_fork(capabilities: SessionCapabilities) -> SessionCapabilities {
    #[cfg(feature = "fork")]
    let capabilities =
        capabilities.fork(agent_client_protocol_schema::v1::SessionForkCapabilities::new());
    capabilities
}

impl Agent {
    /// `session/fork`: a new session whose log starts with the parent's
    /// records up to its last ended turn (`stored::fork`), opened like a
    /// resumed one (no replay: the client has the conversation; a
    /// `session/load` of the fork replays it); its mode, model, effort,
    /// grants and trust come back from those records as the parent's did.
    #[cfg(feature = "fork")]
    fn fork_session(
        &self,
        request: agent_client_protocol_schema::v1::ForkSessionRequest,
    ) -> Result<Reply, AcpError> {
        let parent = request.session_id.0.to_string();
        let id = uuid::Uuid::new_v4().to_string();
        let read = stored::fork(&self.config.sessions_dir(), &parent, &id).map_err(load_error)?;
        let origin = Origin::Stored {
            id,
            read,
            replay: false,
        };
        let asked = Asked {
            mcp_servers: &request.mcp_servers,
            roots: &request.additional_directories,
            prompt: request.system_prompt.as_ref(),
        };
        let opened = self.open_session(request.cwd, asked, origin)?;
        let response =
            agent_client_protocol_schema::v1::ForkSessionResponse::new(opened.id.clone())
                .config_options(opened.settings.config_options())
                .modes(opened.settings.modes());
        Ok(opened.reply(AgentResponse::ForkSessionResponse(response)))
    }
}

/// What a client asks of a session it opens besides its directory: its
/// MCP servers, additional directories and system prompt.
#[derive(Debug, Clone, Copy)]
struct Asked<'a> {
    mcp_servers: &'a [agent_client_protocol_schema::v1::McpServer],
    roots: &'a [PathBuf],
    prompt: Option<&'a agent_client_protocol_schema::v1::SystemPrompt>,
}

/// A session just opened: its id, its settings (for the response), and
/// the word that lets it speak once the response is queued.
#[derive(Debug)]
struct Opened {
    id: String,
    settings: View,
    opened: oneshot::Sender<()>,
}

impl Opened {
    fn reply(self, response: AgentResponse) -> Reply {
        Reply {
            response,
            after: Some(self.opened),
        }
    }
}

/// How to authenticate: `(method id, environment variable, provider)`.
const AUTH_METHODS: [(&str, &str, &str); 2] = [
    ("anthropic-api-key", "ANTHROPIC_API_KEY", "Anthropic"),
    ("openai-api-key", "OPENAI_API_KEY", "OpenAI"),
];

fn auth_methods() -> Vec<AuthMethod> {
    AUTH_METHODS
        .iter()
        .map(|(id, variable, provider)| {
            AuthMethod::Agent(
                AuthMethodAgent::new(*id, format!("{provider} API key")).description(format!(
                    "Set {variable} in the environment your editor starts candor with"
                )),
            )
        })
        .collect()
}

/// Refuses prompt content candor cannot give the model, before any of the
/// prompt runs: a type it does not take, or an image that is not what it
/// says it is or is over a cap (`crate::media`).
fn check_prompt(blocks: &[ContentBlock]) -> Result<(), AcpError> {
    let (mut images, mut image_bytes) = (0usize, 0usize);
    for (place, block) in blocks.iter().enumerate() {
        let refused = match block {
            ContentBlock::Text(_) | ContentBlock::ResourceLink(_) => None,
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(_) => None,
                _ => Some("a binary embedded resource (blob)"),
            },
            ContentBlock::Image(image) => {
                let bytes = check_image(image).map_err(|why| {
                    AcpError::invalid_params().data(format!(
                        "the image in prompt block {place} was refused: {why}; nothing of the prompt ran"
                    ))
                })?;
                images += 1;
                image_bytes += bytes;
                None
            }
            ContentBlock::Audio(_) => Some("audio"),
            _ => Some("this content type"),
        };
        if let Some(what) = refused {
            return Err(AcpError::invalid_params().data(format!(
                "prompt content of type {what} is not supported; candor accepts text, image, resource_link and text resources"
            )));
        }
    }
    if images > crate::media::MAX_PROMPT_IMAGES
        || image_bytes > crate::media::MAX_PROMPT_IMAGE_BYTES
    {
        return Err(AcpError::invalid_params().data(format!(
            "the prompt has {images} images of {} in all; candor takes at most {} images and {} a prompt; nothing of the prompt ran",
            crate::media::size(image_bytes as u64),
            crate::media::MAX_PROMPT_IMAGES,
            crate::media::size(crate::media::MAX_PROMPT_IMAGE_BYTES as u64)
        )));
    }
    Ok(())
}

/// One image of a prompt, checked (its decoded size), or why not.
fn check_image(image: &agent_client_protocol_schema::v1::ImageContent) -> Result<usize, String> {
    if image.data.is_empty() {
        return Err(match &image.uri {
            Some(uri) => format!(
                "it has no data, only the uri {uri}; candor takes an image's data, or a file linked as a resource_link"
            ),
            None => "it has no data".into(),
        });
    }
    crate::media::decode(&image.mime_type, &image.data).map(|bytes| bytes.len())
}

/// A request candor serves (all but `initialize`), its params decoded
/// into the schema crate's type.
#[derive(Debug)]
enum Call {
    Authenticate(AuthenticateRequest),
    NewSession(NewSessionRequest),
    LoadSession(LoadSessionRequest),
    ResumeSession(ResumeSessionRequest),
    ListSessions(ListSessionsRequest),
    CloseSession(CloseSessionRequest),
    DeleteSession(DeleteSessionRequest),
    SetConfigOption(SetSessionConfigOptionRequest),
    SetMode(SetSessionModeRequest),
    Prompt(PromptRequest),
    #[cfg(feature = "fork")]
    ForkSession(agent_client_protocol_schema::v1::ForkSessionRequest),
    Steering(SteeringRequest),
    /// A prompt admitted to its session's line: its answer.
    Admitted(oneshot::Receiver<crate::session::queue::PromptAnswer>),
    /// A steering message admitted: its answer.
    Steered(oneshot::Receiver<SteeringOutcome>),
}

impl Call {
    /// The one table of the methods candor serves: the request `method`
    /// names, with `params` decoded; `None` for a method candor does not
    /// serve.
    fn decode(method: &str, params: Value) -> Option<Result<Call, AcpError>> {
        Some(match method {
            "authenticate" => decode(params).map(Call::Authenticate),
            "session/new" => decode(params).map(Call::NewSession),
            "session/load" => decode(params).map(Call::LoadSession),
            "session/resume" => decode(params).map(Call::ResumeSession),
            "session/list" => decode(params).map(Call::ListSessions),
            "session/close" => decode(params).map(Call::CloseSession),
            "session/delete" => decode(params).map(Call::DeleteSession),
            "session/set_config_option" => decode(params).map(Call::SetConfigOption),
            "session/set_mode" => decode(params).map(Call::SetMode),
            "session/prompt" => decode(params).map(Call::Prompt),
            #[cfg(feature = "fork")]
            "session/fork" => decode(params).map(Call::ForkSession),
            STEERING => decode(params).map(Call::Steering),
            _ => return None,
        })
    }
}

/// What a request answers with, and for one that opened a session, the
/// word that lets the session speak: given once the answer is queued.
#[derive(Debug)]
struct Reply {
    response: AgentResponse,
    /// Told once the response is queued on the wire: a session this
    /// request opened may then speak (notices, hook output), or the turn
    /// this request ran lets the next one start.
    after: Option<oneshot::Sender<()>>,
}

impl From<AgentResponse> for Reply {
    fn from(response: AgentResponse) -> Self {
        Reply {
            response,
            after: None,
        }
    }
}

impl Agent {
    /// Runs one request to its answer.
    async fn serve(&self, call: Call) -> Result<Reply, AcpError> {
        use AgentResponse as R;
        Ok(match call {
            Call::Authenticate(r) => R::AuthenticateResponse(self.authenticate(r)?).into(),
            Call::NewSession(r) => self.new_session(r)?,
            Call::LoadSession(r) => self.load_session(r)?,
            Call::ResumeSession(r) => self.resume_session(r)?,
            Call::ListSessions(r) => R::ListSessionsResponse(self.list_sessions(r)?).into(),
            Call::CloseSession(r) => R::CloseSessionResponse(self.close_session(r)?).into(),
            Call::DeleteSession(r) => R::DeleteSessionResponse(self.delete_session(r)?).into(),
            Call::SetConfigOption(r) => {
                R::SetSessionConfigOptionResponse(self.set_config_option(r).await?).into()
            }
            Call::SetMode(r) => R::SetSessionModeResponse(self.set_mode(r).await?).into(),
            #[cfg(feature = "fork")]
            Call::ForkSession(r) => self.fork_session(r)?,
            // Admitted by the reader (`admit`), never served as such.
            Call::Prompt(_) | Call::Steering(_) => {
                return Err(crate::rpc::Failure::Internal.error("a request was not admitted"));
            }
            Call::Admitted(answer) => {
                let Ok(answer) = answer.await else {
                    return Err(crate::rpc::Failure::Internal.error("the session has stopped"));
                };
                let stop = answer.stop?;
                Reply {
                    response: R::PromptResponse(PromptResponse::new(stop)),
                    // The actor waits for this before the next turn.
                    after: answer.written,
                }
            }
            Call::Steered(answer) => {
                let outcome = answer.await.unwrap_or(SteeringOutcome::Failed);
                R::ExtMethodResponse(steering_response(outcome)?).into()
            }
        })
    }
}

/// Decodes params into an ACP type; the error says what is wrong.
fn decode<T: DeserializeOwned>(params: Value) -> Result<T, AcpError> {
    serde_json::from_value(params)
        .map_err(|e| AcpError::invalid_params().data(format!("invalid params: {e}")))
}

/// The single mapping from ACP errors to JSON-RPC error objects.
pub(crate) fn to_rpc(error: AcpError) -> ErrorObjectOwned {
    ErrorObject::owned(i32::from(error.code), error.message, error.data)
}

/// The response line to request `id`.
fn reply_line<T: Serialize + Clone>(id: &Id<'static>, answer: Result<T, AcpError>) -> String {
    let payload = match answer {
        Ok(result) => ResponsePayload::success(result),
        Err(error) => ResponsePayload::error(to_rpc(error)),
    };
    serde_json::to_string(&Response::new(payload, id.clone())).unwrap_or_else(|e| {
        tracing::error!(error = %e, "an answer could not be encoded");
        let error =
            crate::rpc::Failure::Internal.error(format!("the answer could not be encoded: {e}"));
        let payload = ResponsePayload::<()>::error(to_rpc(error));
        serde_json::to_string(&Response::new(payload, id.clone())).unwrap_or_default()
    })
}

/// Handles one input line (see the module docs).
pub(crate) fn on_line(agent: &Arc<Agent>, line: Bytes) {
    if agent.config.log_messages {
        mirror_frame("<-", &line);
    }
    match rpc::classify(&line) {
        Err(response) => agent.outbox.send_line(response),
        Ok(Message::Response(response)) => agent.outgoing.on_response(&response),
        Ok(Message::Notification { method, params }) => on_notification(agent, &method, params),
        Ok(Message::Request { id, method, params }) if method == "initialize" => {
            // Answered before the next line is read, so a client that sends
            // session/new right behind it (without waiting) is served.
            let answer = decode(params).map(|request| agent.initialize(request));
            agent.outbox.send_line(reply_line(&id, answer));
        }
        Ok(Message::Request { id, method, params }) => {
            on_request(agent, id, &method, params);
        }
    }
}

/// A request other than `initialize`: refused at once, or started on a
/// task of its own.
fn on_request(agent: &Arc<Agent>, id: Id<'static>, method: &str, params: Value) {
    let call = Call::decode(method, params);
    let call = match call {
        Some(_) if !agent.initialized() => Err(crate::rpc::Failure::InvalidRequest.error(format!(
            "{method} was called before initialize; send initialize first"
        ))),
        _ if agent.in_flight.get(&id).is_some() => {
            // Ids name running requests (for `$/cancel_request` and the
            // answer): a second one under an id still running is refused,
            // not confused.
            Err(AcpError::invalid_request().data(
                "a request with this id is still running; ids of running requests must differ",
            ))
        }
        None => Err(AcpError::method_not_found()),
        Some(call) => call,
    };
    let call = match call {
        Ok(call) => call,
        Err(error) => return agent.outbox.send_line(reply_line::<()>(&id, Err(error))),
    };
    let prompt_on = match &call {
        Call::Prompt(request) => Some(request.session_id.0.to_string()),
        _ => None,
    };
    // Prompts and steering messages join their session's line now, in wire
    // order, so a cancel right behind one is not lost and the order
    // received is the order run.
    let call = match admit(agent, &id, call) {
        Ok(call) => call,
        Err(error) => return agent.outbox.send_line(reply_line::<()>(&id, Err(error))),
    };
    let cancel = CancellationToken::new();
    agent.in_flight.start(
        &id,
        Running {
            prompt_on,
            cancel: cancel.clone(),
        },
    );
    let agent = agent.clone();
    tokio::spawn(async move {
        let reply = tokio::select! {
            // A cancel that is already in wins over a result that is ready too.
            biased;
            _ = cancel.cancelled() => Err(AcpError::request_cancelled()),
            reply = agent.serve(call) => reply,
        };
        agent.in_flight.finish(&id);
        let (answer, opened) = match reply {
            Ok(Reply { response, after }) => (Ok(response), after),
            Err(error) => (Err(error), None),
        };
        agent.outbox.send_line(reply_line(&id, answer));
        // Only now may a session this request opened speak (notices, hook
        // output).
        if let Some(opened) = opened {
            let _ = opened.send(());
        }
    });
}

/// A prompt or steering message, put in its session's line (the rest
/// pass as they are).
fn admit(agent: &Agent, id: &Id<'static>, call: Call) -> Result<Call, AcpError> {
    Ok(match call {
        Call::Prompt(request) => Call::Admitted(agent.admit_prompt(id, request)?),
        Call::Steering(request) => Call::Steered(agent.admit_steering(request)?),
        other => other,
    })
}

/// The extension method that steers a running turn (`protocol/README.md`).
const STEERING: &str = "_session/steering";

/// `_session/steering`'s params, as claude-agent-acp and codex-acp take
/// them: the schema crate has no type for this extension (its
/// `session/inject` is not in any schema yet).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SteeringRequest {
    session_id: agent_client_protocol_schema::v1::SessionId,
    prompt: Vec<ContentBlock>,
}

/// `_session/steering`'s answer, `{outcome}`.
fn steering_response(
    outcome: SteeringOutcome,
) -> Result<agent_client_protocol_schema::v1::ExtResponse, AcpError> {
    let raw = serde_json::value::to_raw_value(&serde_json::json!({ "outcome": outcome }))
        .map_err(|e| crate::rpc::Failure::Internal.error(e.to_string()))?;
    Ok(agent_client_protocol_schema::v1::ExtResponse::new(
        raw.into(),
    ))
}

/// `_meta` of the `initialize` response: `{"steering": {"supported": true}}`.
fn steering_meta() -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert("steering".into(), serde_json::json!({ "supported": true }));
    meta
}

/// Refuses a steering message candor would not give the model as it is:
/// empty, or with anything but text and resource links (an image or an
/// embedded file goes in a prompt, where it is checked and attached).
fn check_steering(blocks: &[ContentBlock]) -> Result<(), AcpError> {
    if blocks.is_empty() {
        return Err(AcpError::invalid_params().data("a steering message needs a text block"));
    }
    for (place, block) in blocks.iter().enumerate() {
        if !matches!(block, ContentBlock::Text(_) | ContentBlock::ResourceLink(_)) {
            return Err(AcpError::invalid_params().data(format!(
                "steering block {place} is not text or a resource_link; a steering message takes those only (send images and embedded files in a prompt)"
            )));
        }
    }
    Ok(())
}

fn on_notification(agent: &Agent, method: &str, params: Value) {
    match method {
        "session/cancel" => match serde_json::from_value::<CancelNotification>(params) {
            Ok(n) => agent.cancel_session(&n.session_id.0),
            Err(e) => tracing::warn!(error = %e, "ignoring a malformed session/cancel"),
        },
        "$/cancel_request" => match serde_json::from_value::<CancelRequestNotification>(params) {
            Ok(n) => cancel_request(agent, n.request_id),
            Err(e) => tracing::warn!(error = %e, "ignoring a malformed $/cancel_request"),
        },
        other => tracing::debug!(method = other, "ignoring notification"),
    }
}

/// `$/cancel_request`: a running request answers `-32800`; a prompt by
/// cancelling its turn if it runs, or leaving the queue if it waits (it
/// then answers `cancelled`, its one response).
fn cancel_request(agent: &Agent, id: RequestId) {
    let running = rpc::cancelled_id(id.clone()).and_then(|id| agent.in_flight.get(&id));
    match running {
        Some(Running {
            prompt_on: Some(session),
            ..
        }) => {
            let found = lock(&agent.sessions)
                .get(&session)
                .is_some_and(|s| s.cancel_request(&id));
            if !found {
                tracing::debug!(?id, "$/cancel_request for a prompt that already ended");
            }
        }
        Some(running) => running.cancel.cancel(),
        None => tracing::debug!(?id, "$/cancel_request for a request that is not running"),
    }
}

/// Waits, when told to, until a settings change is recorded (its update
/// queued), so that the response goes after it; a session that stopped
/// meanwhile ends the wait.
async fn recorded_first(recorded: Option<tokio::sync::oneshot::Receiver<()>>) {
    if let Some(recorded) = recorded {
        let _ = recorded.await;
    }
}

/// The mode with this id, or an error listing the modes.
fn mode(id: &str) -> Result<Mode, AcpError> {
    Mode::from_id(id).ok_or_else(|| {
        let ids: Vec<&str> = Mode::ALL.iter().map(|m| m.id()).collect();
        AcpError::invalid_params().data(format!(
            "unknown mode {id:?}; the modes are {}",
            ids.join(", ")
        ))
    })
}

/// A stored session that cannot be opened, as an ACP error.
fn load_error(e: stored::LoadError) -> AcpError {
    match e {
        stored::LoadError::NotFound(id) => {
            crate::rpc::Failure::NotFound.error(format!("session {id} not found"))
        }
        stored::LoadError::Log(e) => crate::rpc::Failure::Internal.error(e.to_string()),
    }
}
