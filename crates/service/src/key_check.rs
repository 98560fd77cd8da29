//! SEC-7: a model key is tried with one small request before it is kept. `POST /v1/secrets`
//! with `checkWith: {serviceId, api}` asks the model Service's provider for its model list
//! with the key (the same authentication the `llm_call` executor sends); a provider without a
//! model list (404/405) is asked its chat route with an empty request instead, which it
//! authenticates before refusing the body. A refusal, an unreachable host or a timeout answers
//! 422 and nothing is saved. The key is never in an
//! answer, a log line or an error: only the Service's host and the provider's status are.

use std::time::Duration;

use aiden_domain::provider_wire::{anthropic_url, ANTHROPIC_VERSION};
use aiden_domain::{service::ServiceType, user::Caller, Error as Rule, Id};
use reqwest::header::HeaderValue;
use serde::Deserialize;

use crate::{App, Result};

/// How long the provider has to answer the check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Which wire the key is for (the model Tool's `operation.api`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyApi {
    #[default]
    Openai,
    Anthropic,
}

/// `checkWith` of `POST /v1/secrets`: the model Service to try the key on.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyCheck {
    pub service_id: Id,
    #[serde(default)]
    pub api: KeyApi,
}

fn refused(message: String) -> crate::Error {
    Rule::invariant("SEC-7", "/value", message).into()
}

/// Sends `request` with `key` (a header value already checked) as the API expects it, marked
/// sensitive so no debug print shows it, within [`CHECK_TIMEOUT`].
async fn send_with_key(request: reqwest::RequestBuilder, api: KeyApi, key: &HeaderValue) -> Asked {
    let mut key = key.clone();
    key.set_sensitive(true);
    let request = match api {
        // A value made by `HeaderValue::from_str` is visible ASCII, so `to_str` holds it whole;
        // `bearer_auth` marks the header sensitive too.
        KeyApi::Openai => request.bearer_auth(key.to_str().unwrap_or_default()),
        KeyApi::Anthropic => request
            .header("x-api-key", key)
            .header("anthropic-version", ANTHROPIC_VERSION),
    };
    request
        .timeout(CHECK_TIMEOUT)
        .send()
        .await
        .map(|r| r.status())
}

/// The endpoint's scheme, host and port: what a message may name.
fn host_of(endpoint: &str) -> String {
    reqwest::Url::parse(endpoint)
        .ok()
        .and_then(|u| {
            u.host_str().map(|h| {
                format!(
                    "{h}{}",
                    u.port().map(|p| format!(":{p}")).unwrap_or_default()
                )
            })
        })
        .unwrap_or_else(|| "the provider".into())
}

/// The provider's status for a request, or why none came.
type Asked = std::result::Result<reqwest::StatusCode, reqwest::Error>;

impl App {
    /// `GET {endpoint}/models` with the key, authenticated as the `llm_call` executor does.
    async fn ask_models(&self, api: KeyApi, endpoint: &str, key: &HeaderValue) -> Asked {
        let request = match api {
            KeyApi::Openai => self.http.get(format!("{endpoint}/models")),
            KeyApi::Anthropic => self.http.get(anthropic_url(endpoint, "models")),
        };
        send_with_key(request, api, key).await
    }

    /// An empty request to the chat route (`max_tokens` 1, no messages): authenticated, then
    /// refused as invalid without running a model.
    async fn ask_chat(&self, api: KeyApi, endpoint: &str, key: &HeaderValue) -> Asked {
        let request = match api {
            KeyApi::Openai => self.http.post(format!("{endpoint}/chat/completions")),
            KeyApi::Anthropic => self.http.post(anthropic_url(endpoint, "messages")),
        };
        let empty = serde_json::json!({"model": "", "messages": [], "max_tokens": 1});
        send_with_key(request.json(&empty), api, key).await
    }

    /// SEC-7: `Ok` when the provider of `check.service_id` accepted `key`.
    pub(crate) async fn try_model_key(
        &self,
        caller: &Caller,
        check: &KeyCheck,
        key: &str,
    ) -> Result<()> {
        // A reference in the body, not the route's resource: a Service the caller cannot see
        // is a refusal of the request (422), not a 404 of `/v1/secrets`.
        let service = match self.get_service(caller, check.service_id.as_str()).await {
            Err(crate::Error::Domain(Rule::NotFound)) => {
                return Err(Rule::invariant(
                    "SEC-7",
                    "/checkWith/serviceId",
                    "no model Service with this id that you can use",
                )
                .into())
            }
            other => other?,
        };
        if service.structure.service_type != ServiceType::LlmProvider {
            return Err(Rule::invariant(
                "SEC-7",
                "/checkWith/serviceId",
                "a key can be tried only on a model Service (type llm_provider)",
            )
            .into());
        }
        let Some(endpoint) = service.endpoint.as_deref().map(|e| e.trim_end_matches('/')) else {
            return Err(Rule::invariant(
                "SEC-7",
                "/checkWith/serviceId",
                "the model Service has no endpoint to try the key on",
            )
            .into());
        };
        let host = host_of(endpoint);
        let key = HeaderValue::from_str(key)
            .map_err(|_| refused("the key has characters no API key has".into()))?;
        // A provider without a model list (404/405: some OpenAI-compatible servers and
        // gateways) said nothing about the key: its chat route is asked with an empty request,
        // which a provider authenticates before it reads the body (the right key: 400 or 422
        // for the empty request; a wrong one: 401/403). No model runs and nothing is billed.
        let (chat_asked, answer) = match self.ask_models(check.api, endpoint, &key).await {
            Ok(status) if matches!(status.as_u16(), 404 | 405) => {
                (true, self.ask_chat(check.api, endpoint, &key).await)
            }
            other => (false, other),
        };
        let asked_for = if chat_asked {
            "an empty chat request"
        } else {
            "its models"
        };
        let verdict = match answer {
            Err(e) if e.is_timeout() => Err(format!(
                "the model provider at {host} did not answer within {} s; the key was not saved",
                CHECK_TIMEOUT.as_secs()
            )),
            Err(_) => Err(format!(
                "the model provider at {host} could not be reached; the key was not saved"
            )),
            Ok(status) if matches!(status.as_u16(), 401 | 403) => Err(format!(
                "the model provider at {host} refused the key ({status}): check that it is the \
                 right, active key; it was not saved"
            )),
            Ok(status) if status.is_success() => Ok(()),
            Ok(status) if chat_asked && matches!(status.as_u16(), 400 | 422) => Ok(()),
            Ok(status) => Err(format!(
                "the model provider at {host} answered {status} when asked for {asked_for} with \
                 the key; it was not saved"
            )),
        };
        match verdict {
            Ok(()) => {
                tracing::info!(service = %check.service_id, "model key accepted by its provider");
                Ok(())
            }
            Err(message) => {
                tracing::info!(service = %check.service_id, %message, "model key check failed");
                Err(refused(message))
            }
        }
    }
}
