//! How hard the model thinks: the session's `effort` option (ACP category
//! `thought_level`).
//!
//! Each family of models takes its own setting, and the levels offered are
//! the ones the session's model takes (`protocol/providers.md` has the
//! table):
//!
//! * Anthropic (Claude 3.7 and the 4 family, or any model when
//!   `thinking_budget` is configured): extended thinking off, or on with
//!   the budgets of Claude Code's keywords (`think` 4,000, `think hard`
//!   10,000, `ultrathink` 31,999 tokens); a configured `thinking_budget`
//!   that is none of those is one more level.
//! * OpenAI reasoning models (`gpt-5*`, `o1*`, `o3*`, `o4*`, or any model
//!   when `reasoning_effort` is configured): the model's own default (no
//!   `reasoning_effort` sent), then `minimal` (GPT-5 only), `low`,
//!   `medium`, `high`; a configured effort that is none of those is one
//!   more level.
//!
//! Any other model (and the scripted one) has no effort option.

use serde::{Deserialize, Serialize};

/// Which setting a provider's requests carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Family {
    /// Anthropic's `thinking.budget_tokens`.
    Anthropic,
    /// OpenAI's `reasoning_effort` (Chat) / `reasoning.effort` (Responses).
    Openai,
}

/// What a level puts in the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// Anthropic: thinking with this budget, or no thinking.
    Budget(Option<u32>),
    /// OpenAI: this effort, or none sent (the model's default).
    Effort(Option<String>),
}

/// One level of the effort option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    /// The option value's id (`off`, `low`, …).
    pub id: String,
    pub name: String,
    pub description: String,
    pub setting: Setting,
}

/// What a session's effort levels are computed from: the provider's
/// family and what the configuration set (the default level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub family: Family,
    /// `thinking_budget` from the configuration.
    pub budget: Option<u32>,
    /// `reasoning_effort` from the configuration.
    pub effort: Option<String>,
}

/// Claude Code's keyword budgets (`think`, `think hard`, `ultrathink`).
const BUDGETS: [(&str, &str, u32); 3] = [
    ("low", "Low", 4_000),
    ("medium", "Medium", 10_000),
    ("high", "High", 31_999),
];

impl Source {
    /// The levels `model` takes, in order; `None`: no effort option.
    pub fn levels(&self, model: &str) -> Option<Vec<Level>> {
        match self.family {
            Family::Anthropic => self.anthropic(model),
            Family::Openai => self.openai(model),
        }
    }

    /// The level a session starts at: the configured one, else the first.
    pub fn default_level(&self, model: &str) -> Option<Level> {
        let levels = self.levels(model)?;
        let configured = match self.family {
            Family::Anthropic => Setting::Budget(self.budget),
            Family::Openai => Setting::Effort(self.effort.clone()),
        };
        levels
            .iter()
            .find(|l| l.setting == configured)
            .or(levels.first())
            .cloned()
    }

    fn anthropic(&self, model: &str) -> Option<Vec<Level>> {
        if !thinks(model) && self.budget.is_none() {
            return None;
        }
        let mut levels = vec![Level {
            id: "off".into(),
            name: "Off".into(),
            description: "No extended thinking".into(),
            setting: Setting::Budget(None),
        }];
        levels.extend(BUDGETS.iter().map(|(id, name, budget)| Level {
            id: (*id).into(),
            name: (*name).into(),
            description: format!(
                "Extended thinking with a budget of {} tokens",
                crate::text::thousands(u64::from(*budget))
            ),
            setting: Setting::Budget(Some(*budget)),
        }));
        if let Some(budget) = self.budget
            && !BUDGETS.iter().any(|(_, _, b)| *b == budget)
        {
            levels.push(Level {
                id: "configured".into(),
                name: format!(
                    "Configured ({} tokens)",
                    crate::text::thousands(budget.into())
                ),
                description: "Extended thinking with the thinking_budget of the config file".into(),
                setting: Setting::Budget(Some(budget)),
            });
        }
        Some(levels)
    }

    fn openai(&self, model: &str) -> Option<Vec<Level>> {
        let gpt5 = model.starts_with("gpt-5");
        let o_series = ["o1", "o3", "o4"].iter().any(|p| model.starts_with(p));
        if !gpt5 && !o_series && self.effort.is_none() {
            return None;
        }
        let mut levels = vec![Level {
            id: "default".into(),
            name: "Model default".into(),
            description: "No reasoning effort sent: the model's own default".into(),
            setting: Setting::Effort(None),
        }];
        let named: &[&str] = if gpt5 {
            &["minimal", "low", "medium", "high"]
        } else {
            &["low", "medium", "high"]
        };
        levels.extend(named.iter().map(|e| Level {
            id: (*e).into(),
            name: capitalised(e),
            description: format!("reasoning_effort {e}"),
            setting: Setting::Effort(Some((*e).into())),
        }));
        if let Some(effort) = &self.effort
            && !named.contains(&effort.as_str())
        {
            levels.push(Level {
                id: "configured".into(),
                name: format!("Configured ({effort})"),
                description: "The reasoning_effort of the config file".into(),
                setting: Setting::Effort(Some(effort.clone())),
            });
        }
        Some(levels)
    }
}

/// Whether an Anthropic model name is one that takes extended thinking:
/// Claude 3.7 Sonnet and every Claude 4 (or later) model.
fn thinks(model: &str) -> bool {
    let Some(rest) = model.strip_prefix("claude-") else {
        return false;
    };
    if rest.starts_with("3-7-") {
        return true;
    }
    // claude-{opus,sonnet,haiku}-<major>[-…]
    ["opus-", "sonnet-", "haiku-"].iter().any(|family| {
        rest.strip_prefix(family).is_some_and(|v| {
            let major: String = v.chars().take_while(char::is_ascii_digit).collect();
            major.parse::<u32>().is_ok_and(|m| m >= 4)
        })
    })
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(levels: Option<Vec<Level>>) -> Vec<String> {
        levels
            .unwrap_or_default()
            .into_iter()
            .map(|l| l.id)
            .collect()
    }

    #[test]
    fn anthropic_levels_follow_the_model() {
        let s = Source {
            family: Family::Anthropic,
            budget: None,
            effort: None,
        };
        assert_eq!(
            ids(s.levels("claude-sonnet-4-5")),
            ["off", "low", "medium", "high"]
        );
        assert_eq!(ids(s.levels("claude-3-7-sonnet-latest")).len(), 4);
        assert!(s.levels("claude-3-5-haiku-latest").is_none());
        assert!(s.levels("my-gateway-model").is_none());
        assert_eq!(s.default_level("claude-opus-4-1").unwrap().id, "off");
        let configured = Source {
            budget: Some(2048),
            ..s.clone()
        };
        assert_eq!(
            ids(configured.levels("my-gateway-model")),
            ["off", "low", "medium", "high", "configured"]
        );
        assert_eq!(
            configured
                .default_level("claude-sonnet-4-5")
                .unwrap()
                .setting,
            Setting::Budget(Some(2048))
        );
        let keyword = Source {
            budget: Some(10_000),
            ..s
        };
        assert_eq!(
            keyword.default_level("claude-sonnet-4-5").unwrap().id,
            "medium"
        );
    }

    #[test]
    fn openai_levels_follow_the_model() {
        let s = Source {
            family: Family::Openai,
            budget: None,
            effort: None,
        };
        assert_eq!(
            ids(s.levels("gpt-5")),
            ["default", "minimal", "low", "medium", "high"]
        );
        assert_eq!(
            ids(s.levels("o3-mini")),
            ["default", "low", "medium", "high"]
        );
        assert!(s.levels("gpt-4o").is_none());
        let configured = Source {
            effort: Some("high".into()),
            ..s
        };
        assert_eq!(configured.default_level("gpt-5").unwrap().id, "high");
        assert_eq!(ids(configured.levels("llama3")).len(), 4);
    }
}
