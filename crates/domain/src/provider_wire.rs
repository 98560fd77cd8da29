//! Facts of the model providers' wires shared by the `llm_call` executor (which calls them) and
//! the API's key check (SEC-7, which asks them for their models with a key).

/// The Anthropic API version sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// An Anthropic resource (`messages`, `models`) under a Service `endpoint` given with or
/// without its `/v1`.
pub fn anthropic_url(endpoint: &str, resource: &str) -> String {
    if endpoint.ends_with("/v1") {
        format!("{endpoint}/{resource}")
    } else {
        format!("{endpoint}/v1/{resource}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_with_or_without_its_version_names_the_same_resource() {
        assert_eq!(
            anthropic_url("https://api.anthropic.com", "messages"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            anthropic_url("http://127.0.0.1:9/v1", "models"),
            "http://127.0.0.1:9/v1/models"
        );
    }
}
