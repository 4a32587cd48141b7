//! One model request streamed into the session: the provider's retries and
//! other news recorded as notices as they come, each text or thinking delta
//! handed to the caller, the turn's cancel obeyed. `turn` records the
//! deltas (`assistant/delta`); a compaction's summary streams unseen.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::commit::Committer;
use super::queue::Queue;
use crate::conversation::{AssistantTurn, ModelRequest};
use crate::event_log::{Event, LogError, NoticeLevel};
use crate::providers::{Provider, ProviderError, StreamDelta};

/// Streams `request`: the provider's answer, or `None` when `cancel` fired
/// first (the deltas received by then were all handed to `on_delta`).
/// With `queue`, what arrives in the session's line meanwhile is recorded.
pub(crate) async fn stream(
    c: &mut Committer,
    provider: &mut Provider,
    request: &ModelRequest,
    cancel: &CancellationToken,
    queue: Option<&Queue>,
    mut on_delta: impl FnMut(&mut Committer, StreamDelta) -> Result<(), LogError>,
) -> Result<Option<Result<AssistantTurn, ProviderError>>, LogError> {
    // What arrives while the model answers is recorded as it arrives.
    let arrived = || async {
        match queue {
            Some(queue) => queue.arrived().await,
            None => std::future::pending().await,
        }
    };
    let (tx, mut deltas) = mpsc::unbounded_channel();
    // Retries and other provider news reach the user as notices.
    let (notice_tx, mut notices) = mpsc::unbounded_channel();
    provider.set_notices(Some(notice_tx));
    let notice = |text: String| Event::Notice {
        level: NoticeLevel::Warning,
        text,
    };
    let stream = provider.stream(request, tx);
    tokio::pin!(stream);
    let result = loop {
        tokio::select! {
            biased;
            Some(delta) = deltas.recv() => on_delta(c, delta)?,
            Some(text) = notices.recv() => c.commit(notice(text))?,
            result = &mut stream => break Some(result),
            _ = cancel.cancelled() => break None,
            () = arrived() => if let Some(queue) = queue {
                queue.record(c)?;
            },
        }
    };
    while let Ok(delta) = deltas.try_recv() {
        on_delta(c, delta)?;
    }
    while let Ok(text) = notices.try_recv() {
        c.commit(notice(text))?;
    }
    Ok(result)
}
