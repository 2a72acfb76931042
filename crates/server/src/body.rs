//! Request bodies: declared as JSON (415 otherwise), read within the size limit (413 beyond
//! it) and the body-read timeout (408 past it), parsed as JSON, then read into typed fields
//! with the failing field's path named in the error (400).
//!
//! Requiring `Content-Type: application/json` keeps web pages out: a page may send a
//! cross-site `text/plain` POST without asking the server first (a "simple" request), but
//! not a JSON one, which the browser preflights ([`crate::routes::guard`] answers).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::quoted;
use crate::openai::fields::{SamplerOnly, SamplingFields};
use crate::state::AppState;
use crate::{Error, Result};

/// A JSON request body, parsed once and read into as many field structs as the endpoint
/// has.
#[derive(Debug, Clone)]
pub struct JsonBody(pub Value);

impl FromRequest<AppState> for JsonBody {
    type Rejection = Error;

    async fn from_request(req: Request, state: &AppState) -> Result<Self> {
        require_json(req.headers())?;
        let limit = state.settings.max_body_bytes;
        let timeout = state.settings.body_read_timeout;
        let read = tokio::time::timeout(timeout, Bytes::from_request(req, state))
            .await
            .map_err(|_| Error::BodyTimeout(timeout))?;
        let bytes = read.map_err(|e| {
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

/// Accepts `Content-Type: application/json`, with parameters (`; charset=utf-8`) and in any
/// case.
///
/// # Errors
/// [`Error::UnsupportedMediaType`] for any other type, or none.
pub fn require_json(headers: &HeaderMap) -> Result<()> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(Error::UnsupportedMediaType("none".to_string()));
    };
    let text = value.to_str().unwrap_or("");
    let media_type = text.split(';').next().unwrap_or("").trim();
    if media_type.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(Error::UnsupportedMediaType(format!("`{}`", quoted(text))))
    }
}

impl JsonBody {
    /// The sampling fields, `sampler` and the others each read on their own so that a value
    /// of the wrong type is reported with its field's name (a flattened struct would lose it).
    ///
    /// # Errors
    /// [`Error::BadRequest`] naming the field whose value has the wrong type.
    pub fn sampling(&self) -> Result<SamplingFields> {
        Ok(SamplingFields {
            sampler: self.fields::<SamplerOnly>()?.sampler,
            fields: self.fields()?,
        })
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_type(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn json_with_parameters_in_any_case_is_accepted() {
        for value in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
            " application/json ",
        ] {
            assert!(require_json(&with_type(value)).is_ok(), "{value}");
        }
    }

    #[test]
    fn other_types_and_none_are_415() {
        for value in [
            "text/plain",
            "text/plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "",
        ] {
            let e = require_json(&with_type(value)).unwrap_err();
            assert_eq!(e.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{value}");
            assert!(e.to_string().contains("Content-Type: application/json"));
        }
        let e = require_json(&HeaderMap::new()).unwrap_err();
        assert_eq!(
            e.body().error.code.as_deref(),
            Some("unsupported_media_type")
        );
        assert!(e.to_string().ends_with("(got none)"), "{e}");
    }
}
