//! `generation_config.json`: end-of-sequence ids and the model author's default sampling
//! settings. The file is optional; what it says is advice the command line may show or use.

use std::path::Path;

use serde::Deserialize;

use crate::json::{parse_json, read_text, OneOrMany};
use crate::{Error, Result};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawGenerationConfig {
    bos_token_id: Option<u32>,
    eos_token_id: Option<OneOrMany>,
    do_sample: Option<bool>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<u64>,
    min_p: Option<f64>,
    repetition_penalty: Option<f64>,
    max_new_tokens: Option<u64>,
}

/// What `generation_config.json` says; every field is `None` (or empty) when the file or the
/// field is absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerationConfig {
    /// `bos_token_id`.
    pub bos_token_id: Option<u32>,
    /// `eos_token_id` (one id or a list) as a list.
    pub eos_token_ids: Vec<u32>,
    /// `do_sample`: whether the author intends sampling (false means greedy).
    pub do_sample: Option<bool>,
    /// `temperature`.
    pub temperature: Option<f64>,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `top_k`.
    pub top_k: Option<u64>,
    /// `min_p`.
    pub min_p: Option<f64>,
    /// `repetition_penalty`.
    pub repetition_penalty: Option<f64>,
    /// `max_new_tokens`.
    pub max_new_tokens: Option<u64>,
}

impl GenerationConfig {
    /// Reads `path`; an absent file gives the empty config.
    ///
    /// # Errors
    /// [`Error::Json`] naming the field when the file is malformed, [`Error::Io`] when it
    /// cannot be read.
    pub fn from_file(path: &Path) -> Result<Self> {
        match read_text(path) {
            Ok(text) => Self::from_json(path, &text),
            Err(Error::MissingFile { .. }) => Ok(GenerationConfig::default()),
            Err(e) => Err(e),
        }
    }

    /// Parses the text of a `generation_config.json`; `path` only names it in errors.
    ///
    /// # Errors
    /// [`Error::Json`] naming the field when the text is malformed.
    pub fn from_json(path: &Path, text: &str) -> Result<Self> {
        let raw: RawGenerationConfig = parse_json(path, text)?;
        Ok(GenerationConfig {
            bos_token_id: raw.bos_token_id,
            eos_token_ids: raw
                .eos_token_id
                .map(OneOrMany::into_vec)
                .unwrap_or_default(),
            do_sample: raw.do_sample,
            temperature: raw.temperature,
            top_p: raw.top_p,
            top_k: raw.top_k,
            min_p: raw.min_p,
            repetition_penalty: raw.repetition_penalty,
            max_new_tokens: raw.max_new_tokens,
        })
    }

    /// The end-of-sequence ids generation stops at: this file's when it names any (they are
    /// what transformers' `generate` uses), else `config_eos` (`config.json`'s
    /// `eos_token_id`, see [`ConfigJson::eos_token_ids`](crate::ConfigJson::eos_token_ids)).
    pub fn eos_ids_or(&self, config_eos: &[u32]) -> Vec<u32> {
        if self.eos_token_ids.is_empty() {
            config_eos.to_vec()
        } else {
            self.eos_token_ids.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GenerationConfig> {
        GenerationConfig::from_json(Path::new("generation_config.json"), text)
    }

    #[test]
    fn reads_eos_lists_and_sampling_defaults() {
        let g = parse(
            r#"{"bos_token_id":1,"eos_token_id":[2,32000],"do_sample":true,"temperature":0.6,
                "top_p":0.9,"top_k":50,"transformers_version":"4.57.6"}"#,
        )
        .unwrap();
        assert_eq!(g.eos_token_ids, vec![2, 32000]);
        assert_eq!(
            (g.temperature, g.top_p, g.top_k),
            (Some(0.6), Some(0.9), Some(50))
        );
        assert_eq!(g.min_p, None);
        assert_eq!(
            parse(r#"{"eos_token_id":7}"#).unwrap().eos_token_ids,
            vec![7]
        );
    }

    #[test]
    fn its_eos_ids_win_over_config_json_s() {
        let g = parse(r#"{"eos_token_id":[2,7]}"#).unwrap();
        assert_eq!(g.eos_ids_or(&[9]), vec![2, 7]);
        assert_eq!(GenerationConfig::default().eos_ids_or(&[9]), vec![9]);
    }

    #[test]
    fn a_missing_file_is_the_empty_config() {
        let g = GenerationConfig::from_file(Path::new("/nonexistent/generation_config.json"));
        assert_eq!(g.unwrap(), GenerationConfig::default());
    }

    #[test]
    fn wrong_types_name_the_field() {
        let e = parse(r#"{"eos_token_id":"</s>"}"#).unwrap_err();
        assert!(e.to_string().contains("eos_token_id"), "{e}");
        let e = parse(r#"{"top_k":-1}"#).unwrap_err();
        assert!(e.to_string().contains("top_k"), "{e}");
    }
}
