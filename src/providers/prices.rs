//! What a model request cost: a dated table of the prices of each
//! provider's default models, the user's `[prices."model-id"]` over it, and
//! the arithmetic (`protocol/providers.md`, "Cost").
//!
//! A model candor has no price for costs nothing it can say: no cost is
//! reported rather than a guess, and so is a request whose cache reads or
//! writes have no price.

use crate::conversation::Usage;

/// The day the built-in table was taken from the providers' price lists.
pub const TABLE_DATE: &str = "2026-12-02";

/// The currency of every price candor knows.
pub const CURRENCY: &str = "USD";

/// A model's prices, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Input tokens read from the prompt cache; `None`: unknown.
    pub cache_read: Option<f64>,
    /// Input tokens written to the prompt cache; `None`: unknown.
    pub cache_write: Option<f64>,
}

pub use crate::config::{Overrides, PerMtok, PriceOverride};

/// `(model, input, output, cache read, cache write)`, US dollars per
/// million tokens, from Anthropic's and OpenAI's published price lists as
/// of [`TABLE_DATE`]. Anthropic's cache write is its 5-minute write (the
/// one candor's requests use); OpenAI charges no premium for writing its
/// cache, so a write is priced as input.
const TABLE: [(&str, f64, f64, f64, f64); 9] = [
    ("claude-sonnet-4-5", 3.0, 15.0, 0.30, 3.75),
    ("claude-sonnet-4", 3.0, 15.0, 0.30, 3.75),
    ("claude-opus-4-5", 5.0, 25.0, 0.50, 6.25),
    ("claude-opus-4-1", 15.0, 75.0, 1.50, 18.75),
    ("claude-haiku-4-5", 1.0, 5.0, 0.10, 1.25),
    ("gpt-5", 1.25, 10.0, 0.125, 1.25),
    ("gpt-5-mini", 0.25, 2.0, 0.025, 0.25),
    ("gpt-5-nano", 0.05, 0.40, 0.005, 0.05),
    ("gpt-5-codex", 1.25, 10.0, 0.125, 1.25),
];

/// The built-in price of `model`: its id, or a dated snapshot of it
/// (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`).
fn built_in(model: &str) -> Option<Price> {
    let base = undated(model);
    TABLE
        .iter()
        .find(|(id, ..)| *id == base)
        .map(|&(_, input, output, read, write)| Price {
            input,
            output,
            cache_read: Some(read),
            cache_write: Some(write),
        })
}

/// `model` without a trailing date (`-20250929`, `-2025-08-07`).
fn undated(model: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((base, date)) = model.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return base;
    }
    let parts: Vec<&str> = model.rsplitn(4, '-').collect();
    if let [day, month, year, base] = parts[..]
        && year.len() == 4
        && month.len() == 2
        && day.len() == 2
        && [day, month, year].iter().all(|p| digits(p))
    {
        return base;
    }
    model
}

/// The price of `model`: the user's table over the built-in one; `None`
/// when neither gives an input and an output price.
pub fn price(model: &str, overrides: &Overrides) -> Option<Price> {
    let built = built_in(model);
    let Some(o) = overrides.get(model) else {
        return built;
    };
    let pick = |set: Option<PerMtok>, base: Option<f64>| set.map(|p| p.0).or(base);
    Some(Price {
        input: pick(o.input, built.map(|b| b.input))?,
        output: pick(o.output, built.map(|b| b.output))?,
        cache_read: pick(o.cache_read, built.and_then(|b| b.cache_read)),
        cache_write: pick(o.cache_write, built.and_then(|b| b.cache_write)),
    })
}

impl Price {
    /// What a request with `usage` cost, in US dollars; `None` when it read
    /// or wrote the cache at a price not known.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        let plain = usage
            .input_tokens
            .saturating_sub(usage.cache_read_tokens)
            .saturating_sub(usage.cache_write_tokens);
        let read = match (usage.cache_read_tokens, self.cache_read) {
            (0, _) => 0.0,
            (n, Some(p)) => per(n, p),
            (_, None) => return None,
        };
        let write = match (usage.cache_write_tokens, self.cache_write) {
            (0, _) => 0.0,
            (n, Some(p)) => per(n, p),
            (_, None) => return None,
        };
        Some(per(plain, self.input) + read + write + per(usage.output_tokens, self.output))
    }
}

/// A session's cost so far: the sum of its requests' costs while every
/// request that reported usage had one; unknown from the first that did
/// not (a partial sum would be a guess at the rest).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Total {
    amount: f64,
    /// Some request had a cost.
    any: bool,
    /// Some request that reported usage had no cost.
    unknown: bool,
}

impl Total {
    /// Adds one request: what it reported (`usage`) and its cost.
    pub fn add(&mut self, usage: Option<&Usage>, cost: Option<&crate::event_log::Cost>) {
        match (usage, cost) {
            (_, Some(cost)) if cost.currency == CURRENCY => {
                self.amount += cost.amount;
                self.any = true;
            }
            (Some(_), _) | (None, Some(_)) => self.unknown = true,
            (None, None) => {}
        }
    }

    /// Adds what a record says a request cost (`assistant/message`,
    /// `history/compacted`); other records cost nothing.
    pub fn add_record(&mut self, event: &crate::event_log::Event) {
        use crate::event_log::Event;
        match event {
            Event::AssistantMessage { content, cost, .. } => {
                let usage = content.iter().find_map(|b| match b {
                    crate::conversation::AssistantBlock::Raw { usage, .. } => *usage,
                    _ => None,
                });
                self.add(usage.as_ref(), cost.as_ref());
            }
            Event::HistoryCompacted { usage, cost, .. } => {
                self.add(usage.as_ref(), cost.as_ref());
            }
            _ => {}
        }
    }

    /// The total of a session's records.
    pub fn of(records: &[crate::event_log::Record]) -> Total {
        let mut total = Total::default();
        for record in records {
            total.add_record(&record.event);
        }
        total
    }

    /// The session's cost, when it is known.
    pub fn known(&self) -> Option<crate::event_log::Cost> {
        (self.any && !self.unknown).then(|| crate::event_log::Cost {
            amount: self.amount,
            currency: CURRENCY.to_owned(),
        })
    }

    /// For people: `$0.0123 (USD)`, or why there is none.
    pub fn describe(&self) -> String {
        match self.known() {
            Some(cost) => format!("${:.4} ({})", cost.amount, cost.currency),
            None if self.unknown => {
                "unknown (a request was made to a model candor has no price for; set `[prices.\"<model>\"]` in your config file)".to_owned()
            }
            None => "nothing yet".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_and_writes_are_priced_as_the_provider_prices_them() {
        let p = price("claude-sonnet-4-5-20250929", &Overrides::new()).unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 500_000,
            cache_write_tokens: 100_000,
        };
        // 400k plain at 3, 500k read at 0.30, 100k written at 3.75, 100k out at 15.
        let cost = p.cost(&usage).unwrap();
        assert!((cost - (1.2 + 0.15 + 0.375 + 1.5)).abs() < 1e-9, "{cost}");
        assert!(price("gpt-5-2025-08-07", &Overrides::new()).is_some());
        assert!(price("claude-3-opus", &Overrides::new()).is_none());
    }

    #[test]
    fn the_users_table_overrides_and_extends_and_never_guesses() {
        let mut o = Overrides::new();
        o.insert(
            "local-llm".into(),
            PriceOverride {
                input: Some(PerMtok(1.0)),
                output: Some(PerMtok(2.0)),
                ..PriceOverride::default()
            },
        );
        o.insert(
            "half".into(),
            PriceOverride {
                input: Some(PerMtok(1.0)),
                ..PriceOverride::default()
            },
        );
        o.insert(
            "gpt-5".into(),
            PriceOverride {
                output: Some(PerMtok(20.0)),
                ..PriceOverride::default()
            },
        );
        let local = price("local-llm", &o).unwrap();
        let cached = Usage {
            input_tokens: 10,
            cache_read_tokens: 5,
            ..Usage::default()
        };
        assert_eq!(local.cost(&cached), None, "a cache read with no price");
        assert!(price("half", &o).is_none(), "no output price: no guess");
        let gpt = price("gpt-5", &o).unwrap();
        assert_eq!((gpt.input, gpt.output), (1.25, 20.0));
        assert!(toml::from_str::<PriceOverride>("input = -1.0").is_err());
    }
}
