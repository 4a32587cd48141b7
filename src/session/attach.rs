//! What a prompt attaches besides its words: its images, kept in the
//! session's content store before the `user/message` that names them
//! ([`commit_prompt`]), and the files its `file:` links name, read for the
//! model ([`attach_files`]). A file the editor embedded whole (a `resource`
//! block) that a Read deny rule covers is recorded as a line saying it was
//! withheld, and the model never sees its contents.
//!
//! A linked file is read only as the Read tool would be let read it: the
//! permission rules and the mode decide on the path as written and as it
//! resolves (`interception::decide_read`); a deny rule (`Read(.env)`), or a
//! file the Read tool would have to ask for (outside the project), is not
//! read, and a notice says why. Nothing is read silently: what is read is a
//! `prompt/resource` record (the client sees a notice). Text comes through
//! the editor's `fs/read_text_file` when it offers it, else from the disk
//! (regular files only, capped); an image file (by its bytes) is attached
//! as an image, within the prompt's image caps; any other binary file is
//! not attached.

use agent_client_protocol_schema::v1::ContentBlock;

use super::commit::Committer;
use super::kit::{SessionKit, TurnControl, TurnError};
use crate::event_log::{Event, LogError, NoticeLevel, PromptImage, TurnStop};
use crate::interception::policy::Disposition;
use crate::media;

/// Most `file:` links of one prompt that are read (the rest are left to
/// the model's own tools, and a notice says so).
pub(crate) const MAX_LINKED_FILES: usize = 20;

/// Records the prompt's `user/message`: its images' bytes kept in the
/// content store first (on disk), each image block's `data` emptied and the
/// image named by digest. The images were checked when the prompt arrived
/// (`dispatch`); one that still does not decode is replaced by a line
/// saying so rather than kept.
pub(crate) fn commit_prompt(
    c: &mut Committer,
    kit: &SessionKit,
    cwd: &std::path::Path,
    mut content: Vec<ContentBlock>,
    via: Option<crate::event_log::Via>,
) -> Result<(), LogError> {
    let mut images = Vec::new();
    let mut withheld = Vec::new();
    for (block, item) in content.iter_mut().enumerate() {
        if let Some(why) = denied_resource(item, kit, cwd) {
            *item = ContentBlock::from(format!("[candor] {why}"));
            withheld.push(why);
            continue;
        }
        let ContentBlock::Image(image) = item else {
            continue;
        };
        match media::decode(&image.mime_type, &image.data) {
            Ok(bytes) => {
                let stored = c.store_image(&bytes, &image.mime_type)?;
                image.data = String::new();
                images.push(PromptImage {
                    block,
                    image: stored,
                });
            }
            Err(why) => *item = ContentBlock::from(format!("[an image left out: {why}]")),
        }
    }
    c.commit(Event::UserMessage {
        content,
        images,
        via,
    })?;
    for why in withheld {
        notice(c, why)?;
    }
    Ok(())
}

/// Why a file the editor embedded in the prompt (a `resource` block with a
/// `file:` URI) is not given to the model: a Read deny rule covers it (as
/// written or where it leads). The user attached it themselves, so a file
/// the Read tool would only ask about is given; a deny rule says the model
/// never sees it. The block is recorded as this line instead of the file.
fn denied_resource(
    block: &ContentBlock,
    kit: &SessionKit,
    cwd: &std::path::Path,
) -> Option<String> {
    use agent_client_protocol_schema::v1::EmbeddedResourceResource;
    let ContentBlock::Resource(resource) = block else {
        return None;
    };
    let uri = match &resource.resource {
        EmbeddedResourceResource::TextResourceContents(t) => &t.uri,
        EmbeddedResourceResource::BlobResourceContents(b) => &b.uri,
        _ => return None,
    };
    let path = file_path(uri).ok()?;
    let (_, decision) = crate::interception::decide_read(&path, &kit.policy, &kit.grants, cwd);
    match decision {
        Disposition::Deny { reason, .. } => Some(format!(
            "{} was attached to the prompt, but its contents were not given to the model: {reason}",
            path.display()
        )),
        Disposition::Run { .. } | Disposition::Ask { .. } => None,
    }
}

/// The URIs of the `file:` links of the latest prompt, and the image
/// budget they have left (images and bytes).
fn file_links(c: &Committer) -> (Vec<String>, (usize, u64)) {
    let latest = c.records().iter().rev().find_map(|r| match &r.event {
        Event::UserMessage {
            content, images, ..
        } => Some((content, images)),
        _ => None,
    });
    let Some((content, images)) = latest else {
        return (Vec::new(), (0, 0));
    };
    let links = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ResourceLink(link) if link.uri.starts_with("file:") => {
                Some(link.uri.clone())
            }
            _ => None,
        })
        .collect();
    let bytes: u64 = images.iter().map(|i| i.image.bytes).sum();
    let budget = (
        media::MAX_PROMPT_IMAGES.saturating_sub(images.len()),
        (media::MAX_PROMPT_IMAGE_BYTES as u64).saturating_sub(bytes),
    );
    (links, budget)
}

/// Reads the files the latest prompt's `file:` links name and attaches
/// them (see the module doc); `Some` when the turn ends instead (cancelled
/// while reading).
pub(crate) async fn attach_files(
    c: &mut Committer,
    kit: &SessionKit,
    control: &TurnControl,
) -> Result<Option<TurnStop>, TurnError> {
    let (links, mut budget) = file_links(c);
    for (n, uri) in links.iter().enumerate() {
        if n == MAX_LINKED_FILES {
            notice(
                c,
                format!(
                    "Only the first {MAX_LINKED_FILES} linked files were attached; the model can read the others itself"
                ),
            )?;
            break;
        }
        if control.cancel.is_cancelled() {
            return Ok(Some(TurnStop::Cancelled));
        }
        let Some(stop) = attach_one(c, kit, uri, &mut budget, control).await? else {
            continue;
        };
        return Ok(Some(stop));
    }
    Ok(None)
}

/// A warning for the user about a linked file.
fn notice(c: &mut Committer, text: String) -> Result<(), LogError> {
    c.commit(Event::Notice {
        level: NoticeLevel::Warning,
        text,
    })
}

/// The path a `file:` URI names, or why it names none.
fn file_path(uri: &str) -> Result<std::path::PathBuf, String> {
    let url = url::Url::parse(uri).map_err(|e| format!("it is not a valid URI ({e})"))?;
    let local = matches!(url.host_str(), None | Some("") | Some("localhost"));
    match url.to_file_path() {
        Ok(path) if local => Ok(path),
        _ => Err("it does not name a file on this machine".into()),
    }
}

/// Attaches one linked file; `Some` when the turn is cancelled.
async fn attach_one(
    c: &mut Committer,
    kit: &SessionKit,
    uri: &str,
    budget: &mut (usize, u64),
    control: &TurnControl,
) -> Result<Option<TurnStop>, TurnError> {
    let not_attached = |why: String| format!("{uri} was not attached for the model: {why}");
    let path = match file_path(uri) {
        Ok(path) => path,
        Err(why) => {
            notice(c, not_attached(why))?;
            return Ok(None);
        }
    };
    let (path, decision) =
        crate::interception::decide_read(&path, &kit.policy, &kit.grants, &control.cwd);
    let refusal = match decision {
        Disposition::Run { .. } => None,
        Disposition::Deny { reason, .. } => Some(reason),
        Disposition::Ask { reason, .. } => Some(format!(
            "the Read tool would have to ask you first ({}); ask the model to read it, and candor will ask",
            reason.unwrap_or_else(|| "it is outside the project".into())
        )),
    };
    if let Some(why) = refusal {
        notice(c, not_attached(why))?;
        return Ok(None);
    }
    let shown = path.display().to_string();
    let probe = path.clone();
    // Told by its bytes on disk, whatever reads text (the editor).
    let head = tokio::select! {
        head = tokio::task::spawn_blocking(move || {
            crate::tools::files::head(&probe, 8192).map(|h| h.map(|head| {
                let image = media::sniff(&head).map(|_| crate::tools::files::image_file(&probe));
                (head.contains(&0), image)
            }))
        }) => head.map_err(|e| e.to_string()).and_then(|r| r),
        () = control.cancel.cancelled() => return Ok(Some(TurnStop::Cancelled)),
    };
    let text = match head {
        Err(why) => {
            notice(c, not_attached(why))?;
            return Ok(None);
        }
        Ok(Some((_, Some(image)))) => {
            attach_image(c, uri, path, image, budget)?;
            return Ok(None);
        }
        Ok(Some((true, None))) => {
            let why = format!("{shown} is a binary file, and only text (or an image) is attached");
            notice(c, not_attached(why))?;
            return Ok(None);
        }
        Ok(_) => kit.files.read(&path, &control.cancel).await,
    };
    match text {
        Ok(Some(text)) => c.commit(Event::PromptResource {
            uri: uri.to_owned(),
            server: None,
            path: Some(path),
            text: super::prompt_mcp::capped(text),
            image: None,
        })?,
        Ok(None) => notice(c, not_attached(format!("{shown} does not exist")))?,
        Err(_) if control.cancel.is_cancelled() => return Ok(Some(TurnStop::Cancelled)),
        Err(why) => notice(c, not_attached(why))?,
    }
    Ok(None)
}

/// A linked image file: stored and attached, within what the prompt's
/// image caps leave.
fn attach_image(
    c: &mut Committer,
    uri: &str,
    path: std::path::PathBuf,
    image: Result<Option<(&'static str, Vec<u8>)>, String>,
    budget: &mut (usize, u64),
) -> Result<(), TurnError> {
    let not_attached = |why: String| format!("{uri} was not attached for the model: {why}");
    let (mime_type, bytes) = match image {
        Ok(Some(image)) => image,
        Ok(None) => return Ok(notice(c, not_attached("it does not exist".into()))?),
        Err(why) => return Ok(notice(c, not_attached(why))?),
    };
    let size = bytes.len() as u64;
    if budget.0 == 0 || size > budget.1 {
        let why = format!(
            "the prompt's images would be over candor's limit of {} images and {} a prompt",
            media::MAX_PROMPT_IMAGES,
            media::size(media::MAX_PROMPT_IMAGE_BYTES as u64)
        );
        return Ok(notice(c, not_attached(why))?);
    }
    *budget = (budget.0 - 1, budget.1 - size);
    let stored = c.store_image(&bytes, mime_type)?;
    c.commit(Event::PromptResource {
        uri: uri.to_owned(),
        server: None,
        path: Some(path),
        text: String::new(),
        image: Some(stored),
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_file_uris_name_paths() {
        assert_eq!(
            file_path("file:///p/a%20b.rs").unwrap(),
            std::path::Path::new("/p/a b.rs")
        );
        assert_eq!(
            file_path("file://localhost/p/x").unwrap(),
            std::path::Path::new("/p/x")
        );
        assert!(file_path("file://elsewhere/p/x").is_err());
        assert!(file_path("not a uri").is_err());
    }
}
