//! Provider latency benchmark (placeholder until the mock-driven version lands).

fn main() {}
