//! Request bodies: read within the size limit (413 beyond it), parsed as JSON, then read
//! into typed fields with the failing field's path named in the error (400).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::state::AppState;
use crate::{Error, Result};

/// A JSON request body, parsed once and read into as many field structs as the endpoint
/// has.
#[derive(Debug, Clone)]
pub struct JsonBody(pub Value);

impl FromRequest<AppState> for JsonBody {
    type Rejection = Error;

    async fn from_request(req: Request, state: &AppState) -> Result<Self> {
        let limit = state.settings.max_body_bytes;
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Error::BodyTooLarge { limit }
            } else {
                Error::BadRequest {
                    message: format!("cannot read the body: {e}"),
                    param: None,
                }
            }
        })?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| Error::BadRequest {
            message: format!("the body is not JSON: {e}"),
            param: None,
        })?;
        if !value.is_object() {
            return Err(Error::BadRequest {
                message: "the body must be a JSON object".to_string(),
                param: None,
            });
        }
        Ok(JsonBody(value))
    }
}

impl JsonBody {
    /// The fields of `T` (unknown fields ignored).
    ///
    /// # Errors
    /// [`Error::BadRequest`] naming the field whose value has the wrong type.
    pub fn fields<T: DeserializeOwned>(&self) -> Result<T> {
        serde_path_to_error::deserialize(&self.0).map_err(|e| {
            let path = e.path().to_string();
            let param = (path != ".").then_some(path);
            Error::BadRequest {
                message: match &param {
                    Some(p) => format!("`{p}`: {}", e.inner()),
                    None => e.inner().to_string(),
                },
                param,
            }
        })
    }
}
