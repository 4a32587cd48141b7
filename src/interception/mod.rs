//! Where a proposed tool call becomes a settled one.
//!
//! The model proposes a call (tool name + arguments). [`settle`] decides,
//! before anything is shown or run, whether it runs and with which
//! arguments, and returns either an [`ApprovedCall`] or a refusal. Only this
//! module can construct an `ApprovedCall` (its fields are private), and
//! tools accept nothing else, so what runs is always what was settled, and
//! the settled value is what the log records and the card shows.
//!
//! Today candor's own checks decide: the tool must exist and the arguments
//! must pass its input schema. Hooks, permission rules and the permission
//! prompt plug in here.

use serde_json::Value;

use crate::event_log::Decision;
use crate::tools::Tool;

/// A tool call that passed interception: the only input a tool accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovedCall {
    id: String,
    tool: Tool,
    arguments: Value,
}

impl ApprovedCall {
    /// The call id (the model's `tool_use` id).
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn tool(&self) -> Tool {
        self.tool
    }

    /// The effective arguments: what runs, is logged and is shown.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }
}

/// The result of interception for one proposed call.
#[derive(Debug, Clone, PartialEq)]
pub enum Settlement {
    Approved {
        call: ApprovedCall,
        decision: Decision,
    },
    Refused {
        /// The arguments as proposed (shown on the failed card).
        arguments: Value,
        decision: Decision,
    },
}

/// Who refuses calls candor itself finds unusable.
pub const CANDOR: &str = "candor";

/// Settles one proposed call.
pub fn settle(id: &str, tool_name: &str, arguments: &Value) -> Settlement {
    let refuse = |reason: String| Settlement::Refused {
        arguments: arguments.clone(),
        decision: Decision::deny(CANDOR, reason),
    };
    let Some(tool) = Tool::from_name(tool_name) else {
        let names: Vec<_> = Tool::ALL.iter().map(|t| t.name()).collect();
        return refuse(format!(
            "candor has no tool named {tool_name:?}; the tools are {}",
            names.join(", ")
        ));
    };
    if let Err(reason) = tool.validate(arguments) {
        return refuse(reason);
    }
    Settlement::Approved {
        call: ApprovedCall {
            id: id.to_owned(),
            tool,
            arguments: arguments.clone(),
        },
        decision: Decision::allow(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::Outcome;
    use serde_json::json;

    #[test]
    fn unknown_tools_and_bad_arguments_are_refused_with_a_reason() {
        let Settlement::Refused { decision, .. } = settle("t1", "Teleport", &json!({})) else {
            panic!("should refuse");
        };
        assert_eq!(decision.outcome, Outcome::Deny);
        assert!(
            decision
                .reason
                .unwrap()
                .contains("no tool named \"Teleport\"")
        );
        let Settlement::Refused { decision, .. } = settle("t2", "Bash", &json!({"cmd": "ls"}))
        else {
            panic!("should refuse");
        };
        assert!(decision.reason.unwrap().contains("missing field `command`"));
    }

    #[test]
    fn a_valid_call_is_approved_unchanged() {
        let args = json!({"command": "ls"});
        let Settlement::Approved { call, decision } = settle("t3", "Bash", &args) else {
            panic!("should approve");
        };
        assert_eq!(call.arguments(), &args);
        assert_eq!(call.tool(), Tool::Bash);
        assert_eq!(decision, Decision::allow());
    }
}
