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
//! Refused at compile time: a struct named `Params` (it clashes with the trait and this
//! derive of that name; the message names the fix, e.g. `MineParams`), a field without `///`
//! unless its type brings a doc (`Seed`; a generic struct is not checked), and a literal
//! default outside a literal `Range::closed/open/at_least/greater_than` (the host would refuse
//! the plugin on loading it). The reference plugin authors read is on `sieve_plugin`'s
//! re-export of this derive (`cargo doc -p sieve-plugin`, `sieve_plugin::Params`).
//!
//! The field types map to parameter kinds through `sieve_core::ParamType`. The generated
//! code names only `::sieve_core::__private` paths (`::sieve_plugin::__private` for the
//! derive `sieve_plugin` re-exports), so it works in `no_std` crates and in plugin crates
//! that depend on `sieve-plugin` alone.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields, Lit, Meta, UnOp};

/// Derives `sieve_core::Params` for a struct with named fields (see the crate docs).
#[proc_macro_derive(Params, attributes(param))]
pub fn derive_params(input: TokenStream) -> TokenStream {
    derive(input, quote!(::sieve_core::__private))
}

/// (Defined in `sieve-macros` as `PluginParams`: the derive of `sieve_core::Params`, with its
/// paths through `::sieve_plugin`, the one dependency of a plugin crate.)
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

/// The value of a numeric literal, optionally negated (`2`, `-1.5`, `1e3`); `None` for any
/// other expression, or an integer too large to compare exactly as an `f64`.
fn literal_number(expr: &Expr) -> Option<f64> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>().ok(),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) => {
            let i = i.base10_parse::<u64>().ok()?;
            (i <= 1 << 53).then_some(i as f64)
        }
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => literal_number(&u.expr).map(|x| -x),
        Expr::Paren(p) => literal_number(&p.expr),
        Expr::Group(g) => literal_number(&g.expr),
        _ => None,
    }
}

/// A `Range::closed(a, b)`, `Range::open(a, b)`, `Range::at_least(a)` or
/// `Range::greater_than(a)` with literal bounds: `(min, max, min_inclusive, max_inclusive)`
/// as `sieve_core::Range` defines them; `None` for any other expression.
fn literal_range(expr: &Expr) -> Option<(f64, f64, bool, bool)> {
    let Expr::Call(call) = expr else { return None };
    let Expr::Path(path) = &*call.func else {
        return None;
    };
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let [.., ty, constructor] = segments.as_slice() else {
        return None;
    };
    if ty != "Range" {
        return None;
    }
    let args: Vec<f64> = call
        .args
        .iter()
        .map(literal_number)
        .collect::<Option<_>>()?;
    match (constructor.as_str(), args.as_slice()) {
        ("closed", &[min, max]) => Some((min, max, true, true)),
        ("open", &[min, max]) => Some((min, max, false, false)),
        ("at_least", &[min]) => Some((min, f64::INFINITY, true, false)),
        ("greater_than", &[min]) => Some((min, f64::INFINITY, false, false)),
        _ => None,
    }
}

/// Refuses a literal default outside a literal range: the host would refuse to load the
/// plugin (and `sieve_plugin::testing::check_descriptor` would fail), so say it at compile
/// time. Defaults or ranges that are not literals are left to those checks.
fn check_default_in_range(field: &syn::Field, attrs: &FieldAttrs) -> syn::Result<()> {
    let (Some(default), Some(range)) = (&attrs.default, &attrs.range) else {
        return Ok(());
    };
    let (Some(x), Some((min, max, min_inclusive, max_inclusive))) =
        (literal_number(default), literal_range(range))
    else {
        return Ok(());
    };
    let above = if min_inclusive { x >= min } else { x > min };
    let below = if max_inclusive { x <= max } else { x < max };
    if above && below {
        return Ok(());
    }
    let name = field
        .ident
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    let interval = format!(
        "{}{min}, {max}{}",
        if min_inclusive { '[' } else { '(' },
        if max_inclusive { ']' } else { ')' }
    );
    Err(syn::Error::new_spanned(
        default,
        format!(
            "the default of `{name}`, {x}, is outside its range {interval}: sieve would refuse \
             to load the plugin; change the default or the range"
        ),
    ))
}

fn expand(input: &DeriveInput, root: &Tokens) -> syn::Result<Tokens> {
    if input.ident == "Params" {
        // Checked first: with the trait and this derive imported as `Params`, a struct of
        // that name otherwise yields a string of unrelated resolution errors.
        return Err(syn::Error::new_spanned(
            &input.ident,
            "a parameter struct cannot be named `Params`: that is the name of the trait and of \
             this derive (`use sieve_plugin::Params`), and the two clash. Name it after its \
             stage, e.g. `MineParams` for a stage `Mine`, and write `type Params = MineParams;` \
             in `impl Stage`",
        ));
    }
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
        let attrs = field_attrs(field)?;
        check_default_in_range(field, &attrs)?;
        parts.push((field, attrs));
    }
    Ok(expand_fields(input, &parts, root))
}

fn expand_fields(input: &DeriveInput, fields: &[(&syn::Field, FieldAttrs)], p: &Tokens) -> Tokens {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut schema = Vec::new();
    let mut reads = Vec::new();
    let mut checks = Vec::new();
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
            // A field without `///` is an error unless its type brings a doc of its own
            // (`Seed`); a `const` item checks that where the struct is defined. (A generic
            // struct cannot name its field types in a `const` item: it goes unchecked.)
            if input.generics.params.is_empty() {
                let message = format!(
                    "parameter `{text}` of `{ident}` has no `///` doc comment: write one above \
                     the field (it is the line `sieve samplers` shows for the parameter)"
                );
                checks.push(quote_spanned! {name.span()=>
                    const _: () = if <#ty as #p::ParamType>::IMPLICIT_DOC.is_empty() {
                        ::core::panic!(#message)
                    };
                });
            }
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
        #(#checks)*
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
