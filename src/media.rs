//! Images as candor takes them, from a prompt, a linked file, a Read or an
//! MCP tool's answer: the four types every provider accepts (PNG, JPEG,
//! GIF, WebP), told by the bytes' magic (never by a name, an extension or
//! a declared type alone), base64 decoded strictly, and the size caps.
//!
//! A declared type must be what the bytes are: a provider refuses a
//! request whose image is not its declared type, and that request is every
//! later one of the session, since the history carries the image. Pure: no
//! I/O.

use base64::Engine as _;

/// The image types candor passes on.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Most bytes of one image, decoded (Anthropic's limit for an image).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Most images one prompt attaches: its image blocks and the images its
/// `file:` links name, together.
pub const MAX_PROMPT_IMAGES: usize = 10;
/// Most bytes (decoded) of all the images of one prompt.
pub const MAX_PROMPT_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// The image type of `bytes`, by their first bytes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// An image's bytes from its declared type and base64 data, if it is one
/// candor passes on: a type of [`IMAGE_TYPES`], strict base64, at most
/// [`MAX_IMAGE_BYTES`], and bytes that are that type. The error says
/// which check failed, for the user or the model.
pub fn decode(mime_type: &str, data: &str) -> Result<Vec<u8>, String> {
    if !IMAGE_TYPES.contains(&mime_type) {
        return Err(format!(
            "its type {mime_type:?} is not one candor takes ({})",
            IMAGE_TYPES.join(", ")
        ));
    }
    // Decoding is bounded before it starts: base64 is 4 bytes for 3.
    if data.len() > MAX_IMAGE_BYTES.div_ceil(3) * 4 {
        return Err(too_big(data.len() / 4 * 3));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("its data is not valid base64 ({e})"))?;
    check(mime_type, &bytes)?;
    Ok(bytes)
}

/// Checks decoded bytes as [`decode`] does: within the cap, and the type
/// declared.
pub fn check(mime_type: &str, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(too_big(bytes.len()));
    }
    match sniff(bytes) {
        Some(actual) if actual == mime_type => Ok(()),
        Some(actual) => Err(format!(
            "it is declared {mime_type} but its bytes are {actual}"
        )),
        None => Err(format!(
            "its bytes are not {mime_type} (nor any image type candor takes)"
        )),
    }
}

fn too_big(bytes: usize) -> String {
    format!(
        "it is {}, over candor's limit of {} an image",
        size(bytes as u64),
        size(MAX_IMAGE_BYTES as u64)
    )
}

/// Base64 (standard alphabet, padded), as every API takes images.
pub fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A size for people: `512 bytes`, `12.3 KiB`, `4.8 MiB`.
pub fn size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{:.1} MiB", b / (KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 PNG.
    pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    #[test]
    fn the_bytes_decide_the_type() {
        let png = decode("image/png", PNG).unwrap();
        assert_eq!(sniff(&png), Some("image/png"));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0rest"), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn a_declared_type_that_is_not_the_bytes_is_refused() {
        let err = decode("image/jpeg", PNG).unwrap_err();
        assert!(err.contains("declared image/jpeg") && err.contains("image/png"), "{err}");
        // Text dressed as an image.
        let err = decode("image/png", &encode(b"#!/bin/sh\nrm -rf ~\n")).unwrap_err();
        assert!(err.contains("not image/png"), "{err}");
        let err = decode("image/svg+xml", &encode(b"<svg/>")).unwrap_err();
        assert!(err.contains("not one candor takes"), "{err}");
    }

    #[test]
    fn base64_is_strict_and_the_size_is_capped_before_decoding() {
        assert!(decode("image/png", "not base64!").unwrap_err().contains("base64"));
        assert!(decode("image/png", &PNG[1..]).unwrap_err().contains("base64"));
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        let err = decode("image/png", &encode(&big)).unwrap_err();
        assert!(err.contains("over candor's limit of 5.0 MiB"), "{err}");
        big.truncate(MAX_IMAGE_BYTES);
        assert!(decode("image/png", &encode(&big)).is_ok());
        // Far too long is refused without decoding it.
        let err = decode("image/png", &"A".repeat(64 * 1024 * 1024)).unwrap_err();
        assert!(err.contains("over candor's limit"), "{err}");
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(12_600), "12.3 KiB");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MiB");
    }
}
