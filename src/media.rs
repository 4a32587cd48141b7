//! Images as candor takes them, from a prompt, a linked file, a Read or an
//! MCP tool's answer: the four types every provider accepts (PNG, JPEG,
//! GIF, WebP), told by the bytes' magic (never by a name, an extension or
//! a declared type alone) with a header that reads and gives a size of at
//! most [`MAX_SIDE`] pixels a side, base64 decoded strictly, and the size
//! caps.
//!
//! A declared type must be what the bytes are, and the header must read: a
//! provider refuses a request whose image is not its declared type (or
//! that it cannot read, or over its size), and that request is every later
//! one of the session, since the history carries the image. The pixels are
//! not decoded (a file damaged past its header can still be refused by a
//! provider). Pure: no I/O.

use base64::Engine as _;

/// The image types candor passes on.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Most bytes of one image, decoded (Anthropic's limit for an image).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Most pixels on either side of an image (Anthropic refuses larger ones).
pub const MAX_SIDE: u32 = 8000;
/// Most images one model request carries (the latest; older ones are left
/// out with a note): past 20, Anthropic takes smaller images only.
pub const MAX_REQUEST_IMAGES: usize = 20;
/// Most bytes (decoded) of the images one model request carries (the
/// latest), well within the providers' request sizes (Anthropic: 32 MB).
pub const MAX_REQUEST_IMAGE_BYTES: usize = 20 * 1024 * 1024;
/// The length of the base64 of `bytes` bytes.
pub const fn encoded_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

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

/// Checks decoded bytes as [`decode`] does: within the cap, the type
/// declared, a header that reads with a size of 1 to [`MAX_SIDE`] pixels a
/// side.
pub fn check(mime_type: &str, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(too_big(bytes.len()));
    }
    match sniff(bytes) {
        Some(actual) if actual == mime_type => match dimensions(actual, bytes) {
            None => Err(format!(
                "its {actual} header cannot be read (a damaged or truncated file)"
            )),
            Some((w, h)) if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE => Err(format!(
                "it is {w}×{h} pixels; candor takes images of 1 to {MAX_SIDE} pixels a side"
            )),
            Some(_) => Ok(()),
        },
        Some(actual) => Err(format!(
            "it is declared {mime_type} but its bytes are {actual}"
        )),
        None => Err(format!(
            "its bytes are not {mime_type} (nor any image type candor takes)"
        )),
    }
}

/// An image's width and height from its header, `None` when the header
/// cannot be read. A provider refuses a request with an image it cannot
/// read or one over its size; this catches the cheap cases (a file that
/// only starts like an image) without decoding the pixels.
pub fn dimensions(mime_type: &str, b: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le16 = |i: usize| Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le24 = |i: usize| {
        Some(u32::from_le_bytes([
            *b.get(i)?,
            *b.get(i + 1)?,
            *b.get(i + 2)?,
            0,
        ]))
    };
    match mime_type {
        "image/png" => {
            let ihdr = b.get(12..24)?;
            (&ihdr[..4] == b"IHDR").then_some(())?;
            let w = u32::from_be_bytes([ihdr[4], ihdr[5], ihdr[6], ihdr[7]]);
            let h = u32::from_be_bytes([ihdr[8], ihdr[9], ihdr[10], ihdr[11]]);
            Some((w, h))
        }
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/webp" => match b.get(12..16)? {
            b"VP8 " => {
                (b.get(23..26)? == [0x9d, 0x01, 0x2a]).then_some(())?;
                Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff))
            }
            b"VP8L" => {
                (*b.get(20)? == 0x2f).then_some(())?;
                let bits = u32::from_le_bytes([*b.get(21)?, *b.get(22)?, *b.get(23)?, *b.get(24)?]);
                Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
            }
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            _ => None,
        },
        "image/jpeg" => {
            // Markers from after SOI, each `FF xx` and (but for the
            // standalone ones) a big-endian length, until a frame header.
            let mut i = 2;
            loop {
                while *b.get(i)? == 0xff && *b.get(i + 1)? == 0xff {
                    i += 1;
                }
                (*b.get(i)? == 0xff).then_some(())?;
                let marker = *b.get(i + 1)?;
                if matches!(marker, 0x01 | 0xd0..=0xd7) {
                    i += 2;
                    continue;
                }
                if matches!(marker, 0xd8..=0xda) {
                    return None;
                }
                if matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
                    return Some((be16(i + 7)?, be16(i + 5)?));
                }
                let len = usize::try_from(be16(i + 2)?).ok()?;
                (len >= 2).then_some(())?;
                i += 2 + len;
            }
        }
        _ => None,
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
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

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
        assert!(
            err.contains("declared image/jpeg") && err.contains("image/png"),
            "{err}"
        );
        // Text dressed as an image.
        let err = decode("image/png", &encode(b"#!/bin/sh\nrm -rf ~\n")).unwrap_err();
        assert!(err.contains("not image/png"), "{err}");
        let err = decode("image/svg+xml", &encode(b"<svg/>")).unwrap_err();
        assert!(err.contains("not one candor takes"), "{err}");
    }

    #[test]
    fn base64_is_strict_and_the_size_is_capped_before_decoding() {
        assert!(
            decode("image/png", "not base64!")
                .unwrap_err()
                .contains("base64")
        );
        assert!(
            decode("image/png", &PNG[1..])
                .unwrap_err()
                .contains("base64")
        );
        let mut big = decode("image/png", PNG).unwrap();
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
    fn a_header_that_cannot_be_read_or_is_too_large_is_refused() {
        let png = decode("image/png", PNG).unwrap();
        assert_eq!(dimensions("image/png", &png), Some((1, 1)));
        // Only the magic: what a provider could not read.
        let err = check("image/png", b"\x89PNG\r\n\x1a\n").unwrap_err();
        assert!(err.contains("header cannot be read"), "{err}");
        let mut wide = png.clone();
        wide[16..20].copy_from_slice(&9000u32.to_be_bytes());
        let err = check("image/png", &wide).unwrap_err();
        assert!(err.contains("9000×1 pixels"), "{err}");
        let gif = b"GIF89a\x20\x00\x10\x00rest";
        assert_eq!(dimensions("image/gif", gif), Some((32, 16)));
        // A JPEG: APP0, then a baseline frame header of 640×480.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00];
        jpeg.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0xe0, 0x02, 0x80]);
        assert_eq!(dimensions("image/jpeg", &jpeg), Some((640, 480)));
        assert!(check("image/jpeg", &jpeg).is_ok());
        assert_eq!(dimensions("image/jpeg", &jpeg[..12]), None);
        // Lengths that run past the end, or loop, end the scan.
        assert_eq!(
            dimensions("image/jpeg", &[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x00]),
            None
        );
        assert_eq!(
            dimensions("image/jpeg", &[0xff, 0xd8, 0xff, 0xe0, 0xff, 0xff]),
            None
        );
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        vp8x.extend([0x7f, 0x02, 0x00, 0xdf, 0x01, 0x00]);
        assert_eq!(dimensions("image/webp", &vp8x), Some((640, 480)));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(12_600), "12.3 KiB");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MiB");
    }
}
