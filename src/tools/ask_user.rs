//! `AskUserQuestion {questions: [{question, header, options: [{label,
//! description}], multiSelect}]}`: the model asks the user (Claude Code's
//! tool and shape, one to four questions, two to four options each).
//!
//! How the user is asked depends on what the editor offers:
//! * form elicitation (`clientCapabilities.elicitation.form`): one
//!   `elicitation/create` form, scoped to the call's card, one field a
//!   question (a choice, or a multiple choice);
//! * otherwise, when every question is single-choice: one
//!   `session/request_permission` a question: "Don't answer" first, then
//!   its options, all `allow_once`;
//! * otherwise the model is told the user cannot be asked that here.
//!
//! A permission prompt is not sure to reach the person: some editors
//! answer every one by themselves, unseen, with its first "allow" option
//! (Zed's "always allow tool actions", `acpx --approve-all`, scripted
//! clients), however long they take to. So the first allow option is
//! "Don't answer": an editor answering by itself picks that, and the
//! model is told the question went unanswered, never given a label nobody
//! chose. And an answer is never given to the model as surely the user's:
//! a label that comes back within [`HUMAN_MIN`] of the question being
//! sent is taken for the editor's own (a client that picks some other
//! option by itself), and the model is told the question went unanswered
//! (and why); a slower one is given as the user's most likely choice,
//! said to be no more than that. Only a form (`elicitation/create`) is a
//! channel that carries what the person answered.
//!
//! Every wait is bounded ([`ANSWER_WAIT`]) and ends on the turn's cancel.
//! The question is the call's `tool/call` record, the answer its
//! `tool/result`; a question open when candor stopped is closed on reload
//! like any unfinished call (the model is told it was interrupted).

use std::collections::BTreeMap;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CreateElicitationRequest, ElicitationAction, ElicitationContentValue, ElicitationFormMode,
    ElicitationPropertySchema, ElicitationSchema, ElicitationSessionScope, EnumOption,
    MultiSelectPropertySchema, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, StringPropertySchema, ToolCallId, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::context::ToolContext;
use super::output::ToolOutput;
use crate::client::{ClientLink, Failed};
use crate::conversation::ToolSpec;

/// How long a question waits for the user before the model is told there
/// was no answer.
pub const ANSWER_WAIT: Duration = Duration::from_secs(15 * 60);

/// Longest answer typed by the user that the model is given (characters).
const ANSWER_MAX: usize = 2_000;

/// The least time a person takes to read a question and choose: a
/// permission prompt answered faster was answered by the editor itself.
pub const HUMAN_MIN: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AskInput {
    pub questions: Vec<Question>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub question: String,
    pub header: String,
    pub options: Vec<Choice>,
    #[serde(default)]
    pub multi_select: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Choice {
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "AskUserQuestion".into(),
        description: "Asks the user one to four multiple-choice questions and waits for the answers. Use it when you need a decision only the user can make (which approach, which file, whether to go on) and cannot find the answer yourself; do not use it to ask permission for a tool call (that is asked for you). Give each question a short header (at most 12 characters), two to four options with a label and a one-line description, and multiSelect: true when several options may be chosen. The result gives the chosen labels, or says the user declined, dismissed the question or cannot be asked here: then continue with your best judgement and say what you assumed.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 4,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "description": "The whole question, ending with a question mark"},
                            "header": {"type": "string", "description": "A very short label for the question (at most 12 characters), e.g. \"Approach\""},
                            "options": {
                                "type": "array",
                                "minItems": 2,
                                "maxItems": 4,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string", "description": "The choice, in one to five words"},
                                        "description": {"type": "string", "description": "What choosing it means"}
                                    },
                                    "required": ["label", "description"]
                                }
                            },
                            "multiSelect": {"type": "boolean", "description": "Whether several options may be chosen"}
                        },
                        "required": ["question", "header", "options", "multiSelect"]
                    }
                }
            },
            "required": ["questions"]
        }),
    }
}

pub(crate) fn parse(input: &Value) -> Result<AskInput, String> {
    let parsed: AskInput = parse_input(Tool::AskUserQuestion, input)?;
    let n = parsed.questions.len();
    if !(1..=4).contains(&n) {
        return Err(format!(
            "invalid AskUserQuestion input: ask one to four questions, not {n}"
        ));
    }
    for (i, q) in parsed.questions.iter().enumerate() {
        let i = i + 1;
        if q.question.trim().is_empty() {
            return Err(format!(
                "invalid AskUserQuestion input: question {i} is empty"
            ));
        }
        if !(2..=4).contains(&q.options.len()) {
            return Err(format!(
                "invalid AskUserQuestion input: question {i} needs two to four options, not {}",
                q.options.len()
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for o in &q.options {
            if o.label.trim().is_empty() {
                return Err(format!(
                    "invalid AskUserQuestion input: question {i} has an option without a label"
                ));
            }
            if !seen.insert(o.label.as_str()) {
                return Err(format!(
                    "invalid AskUserQuestion input: question {i} has the option {:?} twice",
                    o.label
                ));
            }
        }
    }
    Ok(parsed)
}

/// The card: the first question as its title.
pub(crate) fn present(input: &Value) -> Presentation {
    let questions = input.get("questions").and_then(Value::as_array);
    let first = questions
        .and_then(|q| q.first())
        .and_then(|q| q.get("question"))
        .and_then(Value::as_str)
        .unwrap_or("a question");
    let more = questions.map_or(0, |q| q.len().saturating_sub(1));
    let first = crate::text::shorten(&first.replace(char::is_control, " "), 100);
    Presentation {
        title: match more {
            0 => format!("Ask the user: {first}"),
            n => format!("Ask the user: {first} (and {n} more)"),
        },
        kind: ToolKind::Other,
        locations: Vec::new(),
    }
}

/// What the card shows beside its title: every question with its options.
pub(crate) fn detail(input: &Value) -> Option<String> {
    let input = parse(input).ok()?;
    let mut out = String::new();
    for q in &input.questions {
        let pick = if q.multi_select { " (choose any)" } else { "" };
        out.push_str(&format!("**{}**: {}{pick}\n", q.header, q.question));
        for o in &q.options {
            match &o.description {
                Some(d) if !d.trim().is_empty() => {
                    out.push_str(&format!("- {}: {d}\n", o.label));
                }
                _ => out.push_str(&format!("- {}\n", o.label)),
            }
        }
    }
    Some(out.trim_end().to_owned())
}

pub(crate) async fn run(input: &AskInput, cx: ToolContext) -> ToolOutput {
    let Some(client) = cx.client.clone() else {
        return cannot_ask("candor has no editor to ask through");
    };
    if client.elicit_form {
        return by_form(input, &client, &cx).await;
    }
    if input.questions.iter().any(|q| q.multi_select) {
        return cannot_ask(
            "this editor cannot show forms, and a multiple-choice question needs one (ask single-choice questions, or ask in your reply)",
        );
    }
    by_permission(input, &client, &cx).await
}

fn cannot_ask(why: &str) -> ToolOutput {
    ToolOutput::failed(format!(
        "The user cannot be asked here: {why}. Continue with your best judgement and say what you assumed, or ask in your reply and end your turn."
    ))
}

/// The field of question `i` in the form.
fn field(i: usize) -> String {
    format!("q{}", i + 1)
}

fn form_schema(input: &AskInput) -> ElicitationSchema {
    let mut properties = BTreeMap::new();
    for (i, q) in input.questions.iter().enumerate() {
        let options: Vec<EnumOption> = q
            .options
            .iter()
            .map(|o| {
                EnumOption::new(o.label.clone(), o.label.clone()).description(o.description.clone())
            })
            .collect();
        let property = if q.multi_select {
            ElicitationPropertySchema::Array(
                MultiSelectPropertySchema::titled(options)
                    .title(q.header.clone())
                    .description(q.question.clone()),
            )
        } else {
            ElicitationPropertySchema::String(
                StringPropertySchema::new()
                    .title(q.header.clone())
                    .description(q.question.clone())
                    .one_of(options),
            )
        };
        properties.insert(field(i), property);
    }
    let mut schema = ElicitationSchema::new();
    schema.properties = properties;
    schema.required = Some((0..input.questions.len()).map(field).collect());
    schema
}

async fn by_form(input: &AskInput, client: &ClientLink, cx: &ToolContext) -> ToolOutput {
    let scope = ElicitationSessionScope::new(SessionId::new(client.session_id.clone()))
        .tool_call_id(ToolCallId::new(cx.tool_call_id.clone()));
    let message = match input.questions.as_slice() {
        [one] => one.question.clone(),
        _ => "The agent asks you some questions.".to_owned(),
    };
    let request =
        CreateElicitationRequest::new(ElicitationFormMode::new(scope, form_schema(input)), message);
    let response = match client
        .create_elicitation(request, &cx.cancel, ANSWER_WAIT)
        .await
    {
        Ok(r) => r,
        Err(failed) => return unanswered(failed),
    };
    match response.action {
        ElicitationAction::Accept(accepted) => {
            let content = accepted.content.unwrap_or_default();
            let mut answers = Vec::new();
            for (i, q) in input.questions.iter().enumerate() {
                let answer = match content.get(&field(i)) {
                    Some(ElicitationContentValue::String(s)) => clean(s),
                    Some(ElicitationContentValue::StringArray(a)) => {
                        a.iter().map(|s| clean(s)).collect::<Vec<_>>().join(", ")
                    }
                    Some(ElicitationContentValue::Boolean(b)) => b.to_string(),
                    Some(ElicitationContentValue::Integer(n)) => n.to_string(),
                    Some(ElicitationContentValue::Number(n)) => n.to_string(),
                    Some(_) | None => "(no answer)".to_owned(),
                };
                answers.push((q.question.as_str(), answer));
            }
            answered(&answers)
        }
        ElicitationAction::Decline => ToolOutput::failed(
            "The user declined to answer. Do not ask the same again; continue with your best judgement and say what you assumed, or end your turn if you cannot go on without an answer.",
        ),
        ElicitationAction::Cancel => ToolOutput::cancelled(
            "The user dismissed the question without answering. Continue with your best judgement and say what you assumed, or end your turn if you cannot go on without an answer.",
        ),
        _ => ToolOutput::failed(
            "The editor answered the question in a way candor does not know; treat it as unanswered.",
        ),
    }
}

/// The option id of choice `j` in the permission fallback.
fn option_id(j: usize) -> String {
    format!("answer-{}", j + 1)
}

const SKIP: &str = "skip";

async fn by_permission(input: &AskInput, client: &ClientLink, cx: &ToolContext) -> ToolOutput {
    let mut answers = Vec::new();
    for q in &input.questions {
        // "Don't answer" first: what an editor answering by itself picks
        // (its first allow option) says nothing.
        let mut options = vec![PermissionOption::new(
            SKIP,
            "Don't answer",
            PermissionOptionKind::AllowOnce,
        )];
        options.extend(q.options.iter().enumerate().map(|(j, o)| {
            PermissionOption::new(
                option_id(j),
                o.label.clone(),
                PermissionOptionKind::AllowOnce,
            )
        }));
        let card = ToolCallUpdate::new(
            cx.tool_call_id.clone(),
            ToolCallUpdateFields::new().title(format!("{}: {}", q.header, q.question)),
        );
        let request =
            RequestPermissionRequest::new(SessionId::new(client.session_id.clone()), card, options);
        let sent = std::time::Instant::now();
        let asked = client.request_permission(request, &cx.cancel);
        let response = tokio::select! {
            r = asked => r,
            () = tokio::time::sleep(ANSWER_WAIT) => Err(Failed::TimedOut),
        };
        let response = match response {
            Ok(r) => r,
            Err(failed) => return unanswered(failed),
        };
        let chosen = match response.outcome {
            RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
            _ => return unanswered(Failed::Cancelled),
        };
        if chosen == SKIP {
            return ToolOutput::failed(
                "The question went unanswered: \"Don't answer\" was chosen, by the user or by an editor that answers permission prompts by itself (it picks that first option). Do not ask the same again; continue with your best judgement and say what you assumed, or ask in your reply and end your turn if you cannot go on without an answer.",
            );
        }
        let Some(label) = q
            .options
            .iter()
            .enumerate()
            .find(|(j, _)| option_id(*j) == chosen)
            .map(|(_, o)| o.label.clone())
        else {
            return ToolOutput::failed(format!(
                "The editor chose an answer that was not offered ({}); treat the question as unanswered.",
                clean(&chosen)
            ));
        };
        let took = sent.elapsed();
        if took < HUMAN_MIN {
            return answered_unseen(&label, took);
        }
        answers.push((q.question.as_str(), label));
    }
    answered_by_prompt(&answers)
}

/// An answer the editor gave faster than a person could: not the user's.
fn answered_unseen(label: &str, took: Duration) -> ToolOutput {
    ToolOutput::failed(format!(
        "The question was not answered by the user. It could only be asked through a permission prompt (this editor shows no forms), and the editor chose {} within {} ms of showing it, faster than a person reads a question: it most likely answers permission prompts by itself, unseen. Treat the question as unanswered: continue with your best judgement and say what you assumed, or ask in your reply and end your turn.",
        json!(clean(label)),
        took.as_millis()
    ))
}

/// Answers through permission prompts: the user's likely choice, said to
/// be no more than that.
fn answered_by_prompt(answers: &[(&str, String)]) -> ToolOutput {
    let list: Vec<String> = answers
        .iter()
        .map(|(q, a)| format!("{}={}", json!(q), json!(a)))
        .collect();
    ToolOutput::completed(format!(
        "The user answered your questions through permission prompts (this editor shows no forms): {}. A permission prompt cannot say who answered it: an editor that answers prompts by itself would have picked \"Don't answer\" (offered first), so these are most likely the user's, but one could have chosen these instead of the user; if a wrong answer would be costly or hard to undo, confirm it with the user in your reply before acting on it.",
        list.join(", ")
    ))
}

fn unanswered(failed: Failed) -> ToolOutput {
    match failed {
        Failed::Cancelled => ToolOutput::cancelled(
            "The question was withdrawn without an answer (the turn was cancelled or the user dismissed it).",
        ),
        Failed::TimedOut => ToolOutput::failed(format!(
            "The user did not answer within {} minutes. Continue with your best judgement and say what you assumed, or ask in your reply.",
            ANSWER_WAIT.as_secs() / 60
        )),
        Failed::Client(why) => cannot_ask(&format!("the editor could not ask ({why})")),
    }
}

/// An answer from the editor, as the model is given it: one line, capped.
fn clean(s: &str) -> String {
    crate::text::shorten(&s.replace(char::is_control, " "), ANSWER_MAX)
}

fn answered(answers: &[(&str, String)]) -> ToolOutput {
    let list: Vec<String> = answers
        .iter()
        .map(|(q, a)| format!("{}={}", json!(q), json!(a)))
        .collect();
    ToolOutput::completed(format!(
        "The user answered your questions: {}. Continue with these answers in mind.",
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(multi: bool) -> Value {
        json!({"questions": [{
            "question": "Which database?",
            "header": "Database",
            "options": [
                {"label": "SQLite", "description": "A file"},
                {"label": "Postgres", "description": "A server"}
            ],
            "multiSelect": multi
        }]})
    }

    #[test]
    fn parse_takes_claude_codes_shape_and_refuses_what_cannot_be_asked() {
        let parsed = parse(&one(true)).unwrap();
        assert!(parsed.questions[0].multi_select);
        assert_eq!(parsed.questions[0].options[1].label, "Postgres");
        assert!(
            parse(&json!({"questions": []}))
                .unwrap_err()
                .contains("one to four")
        );
        let mut five = one(false);
        let q = five["questions"][0].clone();
        five["questions"] = json!([q, q, q, q, q]);
        assert!(parse(&five).unwrap_err().contains("not 5"));
        let mut lone = one(false);
        lone["questions"][0]["options"] = json!([{"label": "Yes"}]);
        assert!(parse(&lone).unwrap_err().contains("two to four options"));
        let mut twice = one(false);
        twice["questions"][0]["options"][1]["label"] = json!("SQLite");
        assert!(parse(&twice).unwrap_err().contains("twice"));
        assert!(parse(&json!("ask")).is_err());
    }

    #[test]
    fn the_card_shows_the_question_and_its_options() {
        let shown = present(&one(false));
        assert_eq!(shown.title, "Ask the user: Which database?");
        let detail = detail(&one(true)).unwrap();
        assert!(detail.contains("**Database**: Which database? (choose any)"));
        assert!(detail.contains("- Postgres: A server"));
    }

    #[test]
    fn the_form_has_one_required_field_a_question() {
        let input = parse(&one(false)).unwrap();
        let schema = serde_json::to_value(form_schema(&input)).unwrap();
        assert_eq!(schema["required"], json!(["q1"]));
        assert_eq!(schema["properties"]["q1"]["type"], "string");
        assert_eq!(schema["properties"]["q1"]["oneOf"][1]["const"], "Postgres");
        let multi = parse(&one(true)).unwrap();
        let schema = serde_json::to_value(form_schema(&multi)).unwrap();
        assert_eq!(schema["properties"]["q1"]["type"], "array");
    }

    #[test]
    fn answers_are_quoted_for_the_model() {
        let out = answered(&[("Which database?", "Postgres".to_owned())]);
        assert_eq!(
            out.text,
            "The user answered your questions: \"Which database?\"=\"Postgres\". Continue with these answers in mind."
        );
    }
}
