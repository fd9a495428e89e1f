//! `#[export]`: one MPI function of o2g's C ABI under both of its C names.
//!
//! The profiling interface (MPI 5.0 §15.2) asks that every `MPI_Xxx` also
//! exist as `PMPI_Xxx`, so that a tool can define its own `MPI_Xxx`, count
//! or time the call, and call `PMPI_Xxx` for the real work. Written on an
//! `extern "C" fn MPI_Xxx`, the attribute exports that function's body as
//! `PMPI_Xxx` and adds a forwarder exported as `MPI_Xxx` that calls it.
//!
//! The body is the `PMPI_` symbol, not the other way round: a tool that
//! interposes `MPI_Xxx` and calls `PMPI_Xxx` must reach the real work, never
//! its own wrapper. In release builds LLVM folds the forwarder into an
//! alias. The Rust name stays `MPI_Xxx`, so the crate calls and documents
//! its functions by their standard names.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, spanned::Spanned, FnArg, ItemFn, Pat};

/// Exports an `extern "C" fn MPI_Xxx(...)` as `PMPI_Xxx` and `MPI_Xxx`.
///
/// The function must be named `MPI_…`, have the C ABI, simple identifier
/// parameters, and carry no `#[no_mangle]` or `#[export_name]` of its own.
#[proc_macro_attribute]
pub fn export(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let msg = "#[export] takes no arguments";
        return syn::Error::new(proc_macro2::Span::call_site(), msg)
            .to_compile_error()
            .into();
    }
    let f = parse_macro_input!(item as ItemFn);
    match expand(f) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(f: ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let sig = &f.sig;
    let name = sig.ident.to_string();
    if !name.starts_with("MPI_") {
        return Err(syn::Error::new(
            sig.ident.span(),
            "an exported function is named MPI_…",
        ));
    }
    let c_abi = sig
        .abi
        .as_ref()
        .and_then(|a| a.name.as_ref())
        .is_some_and(|n| n.value() == "C");
    if !c_abi {
        return Err(syn::Error::new(
            sig.span(),
            "an exported function is extern \"C\"",
        ));
    }
    for a in &f.attrs {
        if a.path().is_ident("no_mangle") || a.path().is_ident("export_name") {
            return Err(syn::Error::new(
                a.span(),
                "#[export] names the symbols itself",
            ));
        }
    }
    let (mut args, mut types) = (Vec::new(), Vec::new());
    for input in &sig.inputs {
        match input {
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => {
                    args.push(p.ident.clone());
                    types.push(t.ty.clone());
                }
                other => return Err(syn::Error::new(other.span(), "use a plain parameter name")),
            },
            FnArg::Receiver(r) => return Err(syn::Error::new(r.span(), "not a method")),
        }
    }
    let ident = &sig.ident;
    let profiling = format!("P{name}");
    let output = &sig.output;
    let unsafety = &sig.unsafety;
    // A forwarder of an unsafe function is unsafe with the same contract.
    let call = if unsafety.is_some() {
        quote! {
            // SAFETY: the caller upholds the contract of the function it
            // called by its other name.
            unsafe { #ident(#(#args),*) }
        }
    } else {
        quote! { #ident(#(#args),*) }
    };
    let doc = format!("`{name}`: forwards to `{profiling}` (the profiling interface).");
    Ok(quote! {
        #[export_name = #profiling]
        #f

        const _: () = {
            #[doc = #doc]
            #[export_name = #name]
            #unsafety extern "C" fn forward(#(#args: #types),*) #output {
                #call
            }
        };
    })
}
