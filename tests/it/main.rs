//! candor's integration tests: one binary, one module per area.
//!
//! Every test talks to candor as a client would (in-process over duplex
//! pipes, or the built binary over real pipes) through `support::Conn`,
//! which validates every frame against the ACP schema and applies every
//! update to a Zed-like client model that fails the test on a broken card.

// A failing test panics; that is how it reports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// `pub` in a test binary is visibility within the suite.
#![allow(unreachable_pub)]

mod support;

mod ask;
mod cancel;
mod claude;
mod clients;
mod codex;
mod commands;
mod compaction;
mod context;
mod cost;
mod crash;
mod directories;
mod doctor;
mod effort;
mod fork;
mod harness;
mod home;
mod images;
mod interception;
mod mcp;
mod mcp_elicit;
mod mcp_npm;
mod models;
mod one_subject;
mod permissions;
mod permissions_property;
mod process;
mod protocol;
mod providers;
mod queue;
mod sandbox;
mod sandbox_house;
mod sandboxed_calls;
mod schema_file;
mod sessions;
mod subagents;
mod tidy;
mod titles;
mod tools;
mod trust;
mod turns;
mod web;
mod web_search;
