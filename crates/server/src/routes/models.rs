//! `GET /v1/models`, `POST /tokenize`, `POST /detokenize`.

use axum::extract::State;
use axum::Json;

use crate::body::JsonBody;
use crate::generation::check_model;
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
/// `"add_special_tokens": false`.
///
/// # Errors
/// 400 without a text, 404 for another model.
pub async fn tokenize(
    State(state): State<AppState>,
    body: JsonBody,
) -> Result<Json<TokenizeResponse>> {
    let request: TokenizeRequest = body.fields()?;
    check_model(&state, request.model.as_deref())?;
    let Some(text) = request.prompt.or(request.content) else {
        return Err(Error::field(
            "prompt",
            "give the text as `prompt` (or `content`)",
        ));
    };
    let tokens = state
        .model
        .tokenizer
        .encode(&text, request.add_special_tokens.unwrap_or(true))
        .map_err(|e| Error::field("prompt", e.to_string()))?;
    Ok(Json(TokenizeResponse {
        count: tokens.len(),
        tokens,
        max_model_len: state.model.context,
    }))
}

/// `POST /detokenize`: `{"tokens": […]}` → `{"prompt": …}`.
///
/// # Errors
/// 400 for ids beyond the vocabulary, 404 for another model.
pub async fn detokenize(
    State(state): State<AppState>,
    body: JsonBody,
) -> Result<Json<DetokenizeResponse>> {
    let request: DetokenizeRequest = body.fields()?;
    check_model(&state, request.model.as_deref())?;
    let size = state.model.vocab_size;
    if let Some(bad) = request.tokens.iter().find(|&&t| t as usize >= size) {
        return Err(Error::field(
            "tokens",
            format!("token {bad} is beyond the vocabulary ({size} tokens)"),
        ));
    }
    let prompt = state
        .model
        .tokenizer
        .decode(&request.tokens)
        .map_err(|e| Error::field("tokens", e.to_string()))?;
    Ok(Json(DetokenizeResponse { prompt }))
}
