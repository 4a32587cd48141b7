//! Whether the provider's own web search is offered to the model
//! ([`search_offered`]). The provider runs a search inside its turn, so
//! candor cannot judge one before it runs: the `WebSearch` rules decide
//! instead whether the tool is offered at all. A deny rule, or an ask rule
//! (candor cannot ask in time), keeps it from being offered; a bare
//! `WebSearch` allow rule offers it; without a rule it is not offered.

use super::rule::Rules;

/// The tool name the rules use for the provider's web search.
pub const WEB_SEARCH: &str = "WebSearch";

/// `Ok(rule)`: offered, by this allow rule; `Err(why)`: not offered, and
/// why, in words for `/doctor` and the user.
pub fn search_offered(rules: &Rules) -> Result<String, String> {
    let names = |r: &&super::rule::Rule| r.tool == WEB_SEARCH;
    if let Some(rule) = rules.deny.iter().find(names) {
        return Err(format!("the permission rule {rule} denies it"));
    }
    if let Some((_, text)) = rules
        .broken_deny
        .iter()
        .find(|(t, _)| t == WEB_SEARCH || t == "*")
    {
        return Err(format!(
            "the deny rule {text} cannot be read, so candor keeps the search it might deny from being offered"
        ));
    }
    if let Some(rule) = rules.ask.iter().find(names) {
        return Err(format!(
            "the permission rule {rule} asks for it, and candor cannot ask before the provider runs a search, so it is not offered"
        ));
    }
    match rules
        .allow
        .iter()
        .find(|r| names(r) && r.pattern.is_none())
    {
        Some(rule) => Ok(format!("rule:{rule}")),
        None => Err(
            "no allow rule names it: the provider runs a search before candor could ask, so it is offered only when an allow rule `WebSearch` says so"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::rule::Rule;
    use super::*;

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
        let parse = |t: &&str| Rule::parse(t, std::path::Path::new("/p"), None).unwrap();
        Rules {
            allow: allow.iter().map(parse).collect(),
            ask: ask.iter().map(parse).collect(),
            deny: deny.iter().map(parse).collect(),
            ..Rules::default()
        }
    }

    #[test]
    fn an_allow_rule_offers_it_and_deny_ask_or_nothing_do_not() {
        assert_eq!(
            search_offered(&rules(&["WebSearch"], &[], &[])),
            Ok("rule:WebSearch".into())
        );
        let why = search_offered(&rules(&[], &[], &[])).unwrap_err();
        assert!(why.contains("no allow rule"), "{why}");
        let why = search_offered(&rules(&["WebSearch"], &[], &["WebSearch"])).unwrap_err();
        assert!(why.contains("WebSearch denies it"), "{why}");
        let why = search_offered(&rules(&["WebSearch"], &["WebSearch"], &[])).unwrap_err();
        assert!(why.contains("cannot ask before the provider runs"), "{why}");
        let mut broken = rules(&["WebSearch"], &[], &[]);
        broken.deny_unreadable("WebSearch(");
        assert!(search_offered(&broken).is_err());
        // WebFetch's rules are not WebSearch's.
        assert!(search_offered(&rules(&["WebFetch"], &[], &[])).is_err());
    }
}
