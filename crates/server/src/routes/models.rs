//! `GET /v1/models`, `POST /tokenize`, `POST /detokenize`.

use axum::extract::State;
use axum::Json;

use crate::body::JsonBody;
use crate::generation::{check_model, check_prompt_text};
use crate::openai::models::{
    DetokenizeRequest, DetokenizeResponse, ModelCard, ModelList, TokenizeRequest, TokenizeResponse,
};
use crate::state::AppState;
use crate::{Error, Result};

/// `GET /v1/models`: the one model served.
pub async fn models(State(state): State<AppState>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: vec![ModelCard {
            id: state.model.name.clone(),
            object: "model",
            created: state.started,
            owned_by: "sieve",
            max_model_len: state.model.context,
        }],
    })
}

/// `POST /tokenize`: `{"prompt": …}` (or `{"content": …}`) → `{"tokens", "count",
/// "max_model_len"}`; special tokens (BOS) are added as for a completion prompt unless
/// `"add_special_tokens": false`. Runs on the work pool ([`crate::work`]), like every
/// tokenization; a text that could not fit the context is refused unencoded, as a prompt is.
///
/// # Errors
/// 400 without a text or with one too long, 404 for another model.
pub async fn tokenize(
    State(state): State<AppState>,
    body: JsonBody,
) -> Result<Json<TokenizeResponse>> {
    let job = state.clone();
    let tokens = state
        .work
        .run(move || {
            let request: TokenizeRequest = body.fields()?;
            check_model(&job, request.model.as_deref())?;
            let Some(text) = request.prompt.or(request.content) else {
                return Err(Error::field(
                    "prompt",
                    "give the text as `prompt` (or `content`)",
                ));
            };
            check_prompt_text(&job, &text, "prompt")?;
            job.model
                .tokenizer
                .encode(&text, request.add_special_tokens.unwrap_or(true))
                .map_err(|e| Error::field("prompt", e.to_string()))
        })
        .await?;
    Ok(Json(TokenizeResponse {
        count: tokens.len(),
        tokens,
        max_model_len: state.model.context,
    }))
}

/// `POST /detokenize`: `{"tokens": […]}` → `{"prompt": …}` (on the work pool).
///
/// # Errors
/// 400 for ids beyond the vocabulary, 404 for another model.
pub async fn detokenize(
    State(state): State<AppState>,
    body: JsonBody,
) -> Result<Json<DetokenizeResponse>> {
    let job = state.clone();
    let prompt = state
        .work
        .run(move || {
            let request: DetokenizeRequest = body.fields()?;
            check_model(&job, request.model.as_deref())?;
            let size = job.model.vocab_size;
            if let Some(bad) = request.tokens.iter().find(|&&t| t as usize >= size) {
                return Err(Error::field(
                    "tokens",
                    format!("token {bad} is beyond the vocabulary ({size} tokens)"),
                ));
            }
            job.model
                .tokenizer
                .decode(&request.tokens)
                .map_err(|e| Error::field("tokens", e.to_string()))
        })
        .await?;
    Ok(Json(DetokenizeResponse { prompt }))
}
