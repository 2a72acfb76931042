//! # sieve-macros
//!
//! `#[derive(Params)]`, re-exported as `sieve_core::Params` beside the trait of that name:
//! it writes a stage's parameter schema and the conversion from validated arguments, once,
//! from a struct with named fields.
//!
//! ```text
//! #[derive(Params)]
//! pub struct TopKParams {
//!     /// number of tokens to keep; 0 keeps all
//!     #[param(default = 40, range = Range::closed(0.0, 4294967295.0))]
//!     pub k: usize,
//! }
//! ```
//!
//! - the field name is the parameter name, the field order the positional order;
//! - the `///` doc (lines joined by a space) is the parameter's one-line doc;
//! - `#[param(default = EXPR)]`: the default, an expression of the type
//!   `<FieldType as ParamType>::Default` (`f64` for float fields, `i64` for integer ones, the
//!   field type otherwise; a string literal for a `String` field); a field without one is required, unless its type has an implicit
//!   default (`Seed`: -1);
//! - `#[param(range = EXPR)]`: the valid interval, a `Range` expression evaluated where the
//!   struct is defined;
//! - `#[param(flatten)]`: the field is itself a `Params` struct whose parameters are spliced
//!   in at this place (for parameters several stages share).
//!
//! The field types map to parameter kinds through `sieve_core::ParamType`. The generated
//! code names only `::sieve_core::__private` paths (`::sieve_plugin::__private` for the
//! derive `sieve_plugin` re-exports), so it works in `no_std` crates and in plugin crates
//! that depend on `sieve-plugin` alone.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields, Lit, Meta};

/// Derives `sieve_core::Params` for a struct with named fields (see the crate docs).
#[proc_macro_derive(Params, attributes(param))]
pub fn derive_params(input: TokenStream) -> TokenStream {
    derive(input, quote!(::sieve_core::__private))
}

/// `#[derive(Params)]` as `sieve_plugin` re-exports it: the same, with paths through
/// `::sieve_plugin`, the one dependency of a plugin crate.
#[doc(hidden)]
#[proc_macro_derive(PluginParams, attributes(param))]
pub fn derive_plugin_params(input: TokenStream) -> TokenStream {
    derive(input, quote!(::sieve_plugin::__private))
}

fn derive(input: TokenStream, root: Tokens) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input, &root) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// What `#[param(...)]` says about one field.
#[derive(Default)]
struct FieldAttrs {
    default: Option<Expr>,
    range: Option<Expr>,
    flatten: bool,
}

fn field_attrs(field: &syn::Field) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("param")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                out.default = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("range") {
                out.range = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("flatten") {
                out.flatten = true;
            } else {
                return Err(meta.error("expected `default = …`, `range = …` or `flatten`"));
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// The field's `///` lines, trimmed and joined by a space.
fn doc(field: &syn::Field) -> String {
    let mut lines = Vec::new();
    for attr in &field.attrs {
        if let Meta::NameValue(nv) = &attr.meta {
            if nv.path.is_ident("doc") {
                if let Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) = &nv.value
                {
                    lines.push(s.value().trim().to_string());
                }
            }
        }
    }
    lines.retain(|l| !l.is_empty());
    lines.join(" ")
}

fn expand(input: &DeriveInput, root: &Tokens) -> syn::Result<Tokens> {
    let fields =
        match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(named) => &named.named,
                Fields::Unit => return Ok(expand_fields(input, &[], root)),
                Fields::Unnamed(_) => return Err(syn::Error::new_spanned(
                    &input.ident,
                    "#[derive(Params)] needs named fields: the field name is the parameter name",
                )),
            },
            _ => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    "#[derive(Params)] works on structs only",
                ))
            }
        };
    let mut parts = Vec::new();
    for field in fields {
        parts.push((field, field_attrs(field)?));
    }
    Ok(expand_fields(input, &parts, root))
}

fn expand_fields(input: &DeriveInput, fields: &[(&syn::Field, FieldAttrs)], p: &Tokens) -> Tokens {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut schema = Vec::new();
    let mut reads = Vec::new();
    for (field, attrs) in fields {
        let name = field.ident.as_ref().expect("named field");
        let ty = &field.ty;
        if attrs.flatten {
            schema.push(quote! {
                schema.extend(<#ty as #p::Params>::schema());
            });
            reads.push(quote! { #name: <#ty as #p::Params>::from_args(args)? });
            continue;
        }
        let text = name.to_string();
        let text = text.strip_prefix("r#").unwrap_or(&text).to_string();
        let doc = doc(field);
        let default = match &attrs.default {
            // A string literal converts into the field's type (`String`); anything else is
            // an expression of that type, so integer and float literals infer it.
            Some(
                expr @ Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(_), ..
                }),
            ) => quote! {
                ::core::option::Option::Some(<#ty as #p::ParamType>::default_value(
                    ::core::convert::Into::into(#expr),
                ))
            },
            Some(expr) => quote! {
                ::core::option::Option::Some(<#ty as #p::ParamType>::default_value({
                    let value: <#ty as #p::ParamType>::Default = #expr;
                    value
                }))
            },
            None => quote!(<#ty as #p::ParamType>::implicit_default()),
        };
        let range = match &attrs.range {
            Some(expr) => quote!(::core::option::Option::Some(#expr)),
            None => quote!(<#ty as #p::ParamType>::implicit_range()),
        };
        let doc = if doc.is_empty() {
            quote!(<#ty as #p::ParamType>::IMPLICIT_DOC)
        } else {
            quote!(#doc)
        };
        schema.push(quote! {
            schema.push(#p::ParamSpec {
                name: #p::ToString::to_string(#text),
                kind: <#ty as #p::ParamType>::KIND,
                default: #default,
                range: #range,
                doc: #p::ToString::to_string(#doc),
            });
        });
        reads.push(quote! { #name: <#ty as #p::ParamType>::from_arg(args, #text)? });
    }
    quote! {
        impl #impl_generics #p::Params for #ident #ty_generics #where_clause {
            fn schema() -> #p::Vec<#p::ParamSpec> {
                #[allow(unused_mut)]
                let mut schema = #p::Vec::new();
                #(#schema)*
                schema
            }
            fn from_args(args: &#p::Args) -> ::core::result::Result<Self, #p::Error> {
                let _ = args;
                ::core::result::Result::Ok(#ident { #(#reads),* })
            }
        }
    }
}
