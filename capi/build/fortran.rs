//! Generates the Fortran bindings (`mpif.h` and `use mpi`, MPI 5.0 §19.1)
//! from one description of the API: the C prototypes and constants of
//! `include/mpi.h`, and the list of functions the C ABI exports, which is
//! the "yes" rows of `README.md`'s function table (a test checks that table
//! against the library's symbols).
//!
//! Out come
//! - `fortran_bindings.rs`: for every exported function that Fortran has
//!   (no `_c` large-count forms, no tool interface, no handle conversions),
//!   `mpi_xxx_` and `pmpi_xxx_` with gfortran's calling convention (every
//!   argument by reference, character lengths as hidden `size_t`s at the
//!   end), converting integer handles, sentinels, indices and strings, and
//!   calling the C function `MPI_Xxx` or `PMPI_Xxx`; and `UNBOUND`, each
//!   exported function left out, with the reason;
//! - `mpif.h`: every integer constant of `mpi.h` as a `PARAMETER`, the
//!   Fortran-only ones (`MPI_STATUS_SIZE`, the kinds), and the sentinels as
//!   common blocks whose addresses the bindings recognise. It keeps to
//!   columns 7–72 so fixed-form and free-form sources can include it.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

/// One C parameter, as `mpi.h` declares it.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub(crate) name: String,
    /// The type without `const`, e.g. `MPI_Comm *` or `int[]`.
    pub(crate) ty: String,
    pub(crate) is_const: bool,
}

/// One C prototype.
#[derive(Clone, Debug)]
pub(crate) struct Proto {
    pub(crate) ret: String,
    pub(crate) name: String,
    pub(crate) params: Vec<Param>,
}

/// Every `O2G_FUNCTION(ret, name, (params));` of `mpi.h`.
pub(crate) fn prototypes(header: &str) -> Vec<Proto> {
    let mut out = Vec::new();
    let body = header
        .split_once("#define O2G_FUNCTION")
        .map(|(_, b)| b)
        .unwrap_or(header);
    let body = body.split_once('\n').map(|(_, b)| b).unwrap_or("");
    let mut rest = body;
    while let Some(i) = rest.find("O2G_FUNCTION(") {
        rest = &rest[i + "O2G_FUNCTION(".len()..];
        let end = rest.find(");").expect("O2G_FUNCTION ends with );");
        let decl = &rest[..end];
        rest = &rest[end..];
        let (ret, tail) = decl.split_once(',').unwrap();
        let (name, params) = tail.split_once(',').unwrap();
        let params = params.trim();
        let params = &params[1..params.len() - 1]; // the parentheses
        out.push(Proto {
            ret: ret.trim().to_string(),
            name: name.trim().to_string(),
            params: split_params(params),
        });
    }
    out
}

fn split_params(s: &str) -> Vec<Param> {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.is_empty() || s == "void" {
        return Vec::new();
    }
    s.split(',')
        .map(|p| {
            let p = p.trim();
            if p == "..." {
                return Param {
                    name: "...".into(),
                    ty: "...".into(),
                    is_const: false,
                };
            }
            let is_const = p.starts_with("const ");
            let p = p.trim_start_matches("const ");
            // The name is the last identifier; array brackets follow it.
            let (decl, arrays) = match p.find('[') {
                Some(i) => (&p[..i], &p[i..]),
                None => (p, ""),
            };
            let split = decl
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            let name = decl[split..].to_string();
            let base = decl[..split].trim().replace(" *", "*").replace("* ", "*");
            Param {
                name,
                ty: format!("{base}{arrays}"),
                is_const,
            }
        })
        .collect()
}

/// The functions `README.md`'s function table marks as exported.
pub(crate) fn exported(readme: &str) -> HashSet<String> {
    readme
        .lines()
        .filter_map(|l| {
            let l = l.strip_prefix("| `")?;
            let (name, rest) = l.split_once('`')?;
            rest.trim_start()
                .strip_prefix("| yes |")
                .map(|_| name.to_string())
        })
        .collect()
}

/// Why an exported C function has no generated Fortran binding, or `None`
/// if it gets one. Hand-written bindings (`src/fortran/special.rs`) and
/// C-only functions are decided here by name.
fn excluded(name: &str) -> Option<&'static str> {
    const HAND: &[&str] = &[
        "MPI_Init",
        "MPI_Init_thread",
        "MPI_Pcontrol",
        "MPI_Buffer_detach",
        "MPI_Comm_detach_buffer",
        "MPI_Op_create",
        "MPI_Comm_get_attr",
        "MPI_Info_create_env",
        "MPI_Comm_create_keyval",
        "MPI_Type_create_keyval",
        "MPI_Comm_set_attr",
        "MPI_Type_set_attr",
        "MPI_Type_get_attr",
        "MPI_Comm_create_errhandler",
        "MPI_Grequest_start",
        "MPI_Win_create_keyval",
        "MPI_Win_set_attr",
        "MPI_Win_get_attr",
        "MPI_Win_create_errhandler",
    ];
    if HAND.contains(&name) {
        return Some("hand-written");
    }
    if name.starts_with("MPI_Keyval_") || name.starts_with("MPI_Attr_") {
        return Some("deprecated since MPI-2 (INTEGER attribute values): MPI_COMM_CREATE_KEYVAL and the rest are bound");
    }
    if name.ends_with("_c") {
        return Some("large-count form: only mpi_f08 has it");
    }
    if name.contains("_c2f") || name.contains("_f2c") || name.contains("_f082") {
        return Some("a C function for mixed-language programs");
    }
    if name.ends_with("_toint") || name.ends_with("_fromint") {
        return Some("a C function of the standard ABI");
    }
    if name.starts_with("MPI_Abi_") {
        return Some("a C function of the standard ABI");
    }
    if name.starts_with("MPI_T_") {
        return Some("the tool interface has no Fortran binding");
    }
    None
}

/// The Fortran handle kinds, by C type.
fn handle_kind(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "MPI_Comm" => "comm",
        "MPI_Datatype" => "datatype",
        "MPI_Group" => "group",
        "MPI_Request" => "request",
        "MPI_Op" => "op",
        "MPI_Info" => "info",
        "MPI_Errhandler" => "errhandler",
        "MPI_Message" => "message",
        "MPI_Win" => "win",
        "MPI_File" => "file",
        "MPI_Session" => "session",
        _ => return None,
    })
}

/// The Rust type of a C scalar.
fn scalar(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "int" => "c_int",
        "MPI_Aint" => "isize",
        "MPI_Count" | "MPI_Offset" => "i64",
        "double" => "f64",
        _ => return None,
    })
}

/// How one argument crosses from Fortran to C.
enum Arg {
    /// A scalar passed by reference, by value in C.
    Value(&'static str),
    /// A pointer C reads or writes as Fortran laid it out (integers,
    /// logicals, addresses, counts, an input `MPI_Status`).
    Same(&'static str),
    /// A choice buffer: `MPI_BOTTOM`, `MPI_IN_PLACE` and
    /// `MPI_BUFFER_AUTOMATIC` become C's values.
    Choice,
    /// Graph weights: `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY`.
    Weights,
    /// A status written by C: `MPI_STATUS_IGNORE` becomes C's.
    Status,
    /// An array of statuses: `MPI_STATUSES_IGNORE` becomes C's.
    Statuses,
    /// An index written by C, 1-based in Fortran.
    Index,
    /// Indices written by C, as many as the named argument says.
    Indices(String),
    HandleIn,
    HandleOut,
    HandleInOut,
    /// An array of handles, its length an expression in the arguments.
    HandleArray {
        len: String,
        read: bool,
        write: bool,
    },
    StrIn,
    StrOut,
}

/// Functions whose handle argument is read and written (freed, completed
/// or matched): the Fortran integer's slot goes when the C handle changes.
fn inout_handle(func: &str, param: &str) -> bool {
    func.ends_with("_free")
        || matches!(
            func,
            "MPI_Wait"
                | "MPI_Test"
                | "MPI_Start"
                | "MPI_Cancel"
                | "MPI_Type_commit"
                | "MPI_Comm_disconnect"
                | "MPI_Session_finalize"
        )
        || (matches!(func, "MPI_Mrecv" | "MPI_Imrecv") && param == "message")
}

/// The length of a handle array argument, as a Rust expression.
fn array_len(func: &str, param: &str, params: &[Param]) -> Option<String> {
    let arg = |n: &str| {
        params
            .iter()
            .any(|p| p.name == n)
            .then(|| format!("usize::try_from(*a_{n}).unwrap_or(0)"))
    };
    match param {
        "array_of_requests" => arg("count").or_else(|| arg("incount")),
        "array_of_types" => arg("count"),
        "array_of_datatypes" => arg("max_datatypes"),
        "sendtypes" | "recvtypes" if !func.contains("eighbor") => {
            Some("crate::fortran::group_len(a_comm)".into())
        }
        "sendtypes" => Some("crate::fortran::neighbor_len(a_comm, true)".into()),
        "recvtypes" => Some("crate::fortran::neighbor_len(a_comm, false)".into()),
        _ => None,
    }
}

fn classify(p: &Proto) -> Result<Vec<Arg>, String> {
    let mut args = Vec::new();
    for q in &p.params {
        let ty = q.ty.as_str();
        let arr = ty.ends_with("[]");
        let base = ty.trim_end_matches("[]").trim_end_matches('*');
        let ptr = ty.ends_with('*') || arr;
        let arg = if ty == "void*" {
            Arg::Choice
        } else if matches!(q.name.as_str(), "sourceweights" | "destweights" | "weights") {
            Arg::Weights
        } else if ty == "MPI_Status*" && !q.is_const && q.name != "array_of_statuses" {
            Arg::Status
        } else if (ty == "MPI_Status[]" || q.name == "array_of_statuses") && !q.is_const {
            Arg::Statuses
        } else if base == "MPI_Status" {
            Arg::Same("c_void")
        } else if matches!(q.name.as_str(), "index" | "indx") && ty == "int*" {
            Arg::Index
        } else if q.name == "array_of_indices" && ty == "int[]" {
            Arg::Indices("outcount".into())
        } else if ty == "int[][3]" {
            Arg::Same("c_int")
        } else if let Some(s) = scalar(ty) {
            Arg::Value(s)
        } else if let (Some(s), true) = (scalar(base), ptr) {
            Arg::Same(s)
        } else if handle_kind(ty).is_some() {
            Arg::HandleIn
        } else if handle_kind(base).is_some() && arr {
            let len = array_len(&p.name, &q.name, &p.params)
                .ok_or_else(|| format!("no length known for the handle array `{}`", q.name))?;
            Arg::HandleArray {
                len,
                read: q.is_const || q.name == "array_of_requests",
                write: !q.is_const,
            }
        } else if handle_kind(base).is_some() {
            if inout_handle(&p.name, &q.name) {
                Arg::HandleInOut
            } else {
                Arg::HandleOut
            }
        } else if ty == "char*" || ty == "char[]" {
            if q.is_const {
                Arg::StrIn
            } else {
                Arg::StrOut
            }
        } else {
            return Err(format!("argument `{}` of C type `{ty}`", q.name));
        };
        args.push(arg);
    }
    Ok(args)
}

/// The Rust type of a parameter in the C declaration.
fn c_type(q: &Param) -> String {
    let ty = q.ty.as_str();
    let base = ty.split('[').next().unwrap().trim_end_matches('*');
    let ptr = ty.ends_with('*') || ty.ends_with(']');
    let inner = if let Some(s) = scalar(base) {
        s
    } else if handle_kind(base).is_some() {
        "Handle"
    } else if base == "char" {
        "c_char"
    } else {
        "c_void"
    };
    if !ptr {
        inner.to_string()
    } else if q.is_const {
        format!("*const {inner}")
    } else {
        format!("*mut {inner}")
    }
}

/// The Fortran-side Rust type of a parameter (always a pointer).
fn f_type(a: &Arg) -> String {
    match a {
        Arg::Value(s) => format!("*const {}", if *s == "c_int" { "Fint" } else { s }),
        Arg::Same(s) => format!("*mut {s}"),
        Arg::Choice => "*mut c_void".into(),
        Arg::Weights | Arg::Status | Arg::Statuses | Arg::Index | Arg::Indices(_) => {
            "*mut Fint".into()
        }
        Arg::HandleIn | Arg::HandleOut | Arg::HandleInOut | Arg::HandleArray { .. } => {
            "*mut Fint".into()
        }
        Arg::StrIn | Arg::StrOut => "*mut c_char".into(),
    }
}

/// The Rust source of one function's bindings.
fn binding(p: &Proto, args: &[Arg]) -> String {
    let lower = p.name.to_lowercase();
    let ret = scalar(&p.ret).expect("a scalar return type");
    let has_ierr = p.ret == "int";
    let mut fparams = Vec::new();
    let mut lens = Vec::new();
    for (q, a) in p.params.iter().zip(args) {
        fparams.push(format!("a_{}: {}", q.name, f_type(a)));
        if matches!(a, Arg::StrIn | Arg::StrOut) {
            lens.push(format!("l_{}: usize", q.name));
        }
    }
    if has_ierr {
        fparams.push("ierr: *mut Fint".into());
    }
    fparams.extend(lens);
    let fsig = fparams.join(", ");
    let fret = if has_ierr {
        String::new()
    } else {
        format!(" -> {ret}")
    };
    let ctys: Vec<String> = p.params.iter().map(c_type).collect();
    let cfn = format!("unsafe extern \"C\" fn({}) -> {ret}", ctys.join(", "));

    let mut pre = String::new();
    let mut call = Vec::new();
    let mut post = String::new();
    for (q, a) in p.params.iter().zip(args) {
        let n = &q.name;
        let v = format!("a_{n}");
        match a {
            Arg::Value(_) => call.push(format!("*{v}")),
            Arg::Same(..) => call.push(format!("{v}.cast()")),
            Arg::Choice => call.push(format!("crate::fortran::choice({v}).cast()")),
            Arg::Weights => call.push(format!("crate::fortran::weights({v})")),
            Arg::Status => call.push(format!("crate::fortran::status({v}).cast()")),
            Arg::Statuses => call.push(format!("crate::fortran::statuses({v}).cast()")),
            Arg::Index => {
                call.push(v.clone());
                writeln!(post, "    if rc == 0 && *{v} >= 0 {{ *{v} += 1; }}").unwrap();
            }
            Arg::Indices(count) => {
                call.push(v.clone());
                writeln!(
                    post,
                    "    if rc == 0 || rc == crate::fortran::ERR_IN_STATUS {{ crate::fortran::one_based({v}, *a_{count}); }}"
                )
                .unwrap();
            }
            Arg::HandleIn => call.push(format!("crate::fortran::f2c(*{v})")),
            Arg::HandleOut => {
                writeln!(pre, "    let mut h_{n}: Handle = std::ptr::null_mut();").unwrap();
                call.push(format!("&mut h_{n}"));
                writeln!(
                    post,
                    "    if rc == 0 {{ *{v} = crate::fortran::c2f(h_{n}); }}"
                )
                .unwrap();
            }
            Arg::HandleInOut => {
                writeln!(pre, "    let f_{n} = *{v};").unwrap();
                writeln!(pre, "    let b_{n} = crate::fortran::f2c(f_{n});").unwrap();
                writeln!(pre, "    let mut h_{n} = b_{n};").unwrap();
                call.push(format!("&mut h_{n}"));
                writeln!(
                    post,
                    "    *{v} = crate::fortran::c2f_after(f_{n}, b_{n}, h_{n});"
                )
                .unwrap();
            }
            Arg::HandleArray { len, read, write } => {
                writeln!(pre, "    let n_{n} = {len};").unwrap();
                if *read {
                    writeln!(pre, "    let f_{n} = crate::fortran::fints({v}, n_{n});").unwrap();
                    writeln!(
                        pre,
                        "    let b_{n}: Vec<Handle> = f_{n}.iter().map(|&f| crate::fortran::f2c(f)).collect();"
                    )
                    .unwrap();
                    writeln!(pre, "    let mut h_{n} = b_{n}.clone();").unwrap();
                } else {
                    writeln!(
                        pre,
                        "    let mut h_{n}: Vec<Handle> = vec![std::ptr::null_mut(); n_{n}];"
                    )
                    .unwrap();
                }
                call.push(format!("h_{n}.as_mut_ptr()"));
                if *write && *read {
                    writeln!(
                        post,
                        "    for (i, ((&f, &b), &h)) in f_{n}.iter().zip(&b_{n}).zip(&h_{n}).enumerate() {{ *{v}.add(i) = crate::fortran::c2f_after(f, b, h); }}"
                    )
                    .unwrap();
                } else if *write {
                    writeln!(
                        post,
                        "    if rc == 0 {{ for (i, &h) in h_{n}.iter().enumerate() {{ *{v}.add(i) = crate::fortran::c2f(h); }} }}"
                    )
                    .unwrap();
                }
            }
            Arg::StrIn => {
                writeln!(pre, "    let s_{n} = crate::fortran::str_in({v}, l_{n});").unwrap();
                call.push(format!("s_{n}.as_ptr()"));
            }
            Arg::StrOut => {
                writeln!(pre, "    let mut s_{n} = crate::fortran::StrOut::new();").unwrap();
                call.push(format!("s_{n}.as_mut_ptr()"));
                writeln!(post, "    if rc == 0 {{ s_{n}.copy_to({v}, l_{n}); }}").unwrap();
            }
        }
    }
    let fargs: Vec<String> = p
        .params
        .iter()
        .map(|q| format!("a_{}", q.name))
        .chain(has_ierr.then(|| "ierr".to_string()))
        .chain(
            p.params
                .iter()
                .zip(args)
                .filter(|(_, a)| matches!(a, Arg::StrIn | Arg::StrOut))
                .map(|(q, _)| format!("l_{}", q.name)),
        )
        .collect();
    let fargs = fargs.join(", ");
    let tail = if has_ierr {
        "    if !ierr.is_null() { *ierr = rc; }\n".to_string()
    } else {
        "    rc\n".to_string()
    };
    let name = &p.name;
    format!(
        "unsafe fn bind_{lower}(c: {cfn}, {fsig}){fret} {{\n\
         \x20   // SAFETY: the arguments are Fortran's, valid for their types (module docs).\n\
         \x20   unsafe {{\n{pre}    let rc = c({call});\n{post}{tail}    }}\n}}\n\
         /// `{name}` for Fortran.\n\
         #[no_mangle]\n\
         pub(crate) unsafe extern \"C\" fn {lower}_({fsig}){fret} {{\n\
         \x20   // SAFETY: as for `bind_{lower}`.\n\
         \x20   unsafe {{ bind_{lower}(c::{name}, {fargs}) }}\n}}\n\
         /// `P{name}` for Fortran (profiling interface).\n\
         #[no_mangle]\n\
         pub(crate) unsafe extern \"C\" fn p{lower}_({fsig}){fret} {{\n\
         \x20   // SAFETY: as for `bind_{lower}`.\n\
         \x20   unsafe {{ bind_{lower}(c::P{name}, {fargs}) }}\n}}\n\n",
        call = call.join(", ")
    )
}

/// A function with a generated binding, and how its arguments cross.
type Bound<'a> = (&'a Proto, Vec<Arg>);

/// The exported functions that get a generated binding, with their
/// arguments, and those that get none, with the reason.
fn bound<'a>(
    protos: &'a [Proto],
    exported: &HashSet<String>,
) -> (Vec<Bound<'a>>, BTreeMap<String, String>) {
    let mut yes = Vec::new();
    let mut unbound = BTreeMap::new();
    for p in protos.iter().filter(|p| exported.contains(&p.name)) {
        if let Some(why) = excluded(&p.name) {
            if why != "hand-written" {
                unbound.insert(p.name.clone(), why.to_string());
            }
            continue;
        }
        match classify(p) {
            Ok(args) => yes.push((p, args)),
            Err(why) => {
                unbound.insert(p.name.clone(), format!("not generated: {why}"));
            }
        }
    }
    (yes, unbound)
}

/// The generated Rust source: bindings, C declarations and `UNBOUND`.
pub(crate) fn rust_bindings(protos: &[Proto], exported: &HashSet<String>) -> String {
    let mut bodies = String::new();
    let mut decls = String::new();
    let (yes, unbound) = bound(protos, exported);
    for (p, args) in &yes {
        bodies.push_str(&binding(p, args));
        let ctys: Vec<String> = p
            .params
            .iter()
            .enumerate()
            .map(|(i, q)| format!("a{i}: {}", c_type(q)))
            .collect();
        let ret = scalar(&p.ret).unwrap();
        for n in [p.name.clone(), format!("P{}", p.name)] {
            writeln!(
                decls,
                "        pub(crate) fn {n}({}) -> {ret};",
                ctys.join(", ")
            )
            .unwrap();
        }
    }
    let mut out = String::from(
        "// Generated by capi/build/fortran.rs from include/mpi.h and README.md. Do not edit.\n\n",
    );
    out.push_str("mod c {\n    use super::*;\n    extern \"C\" {\n");
    out.push_str(&decls);
    out.push_str("    }\n}\n\n");
    out.push_str(&bodies);
    out.push_str("/// Exported C functions without a Fortran binding, and why.\n");
    out.push_str("pub(crate) const UNBOUND: &[(&str, &str)] = &[\n");
    for (n, why) in &unbound {
        writeln!(out, "    ({n:?}, {why:?}),").unwrap();
    }
    out.push_str("];\n");
    out
}

/// Arguments that are `LOGICAL` in Fortran (`int` in C).
fn logical(name: &str) -> bool {
    matches!(
        name,
        "flag" | "periods" | "reorder" | "remain_dims" | "commute"
    )
}

/// The Fortran type of a C scalar.
fn f_scalar(ty: &str) -> &'static str {
    match ty {
        "MPI_Aint" => "integer(kind=MPI_ADDRESS_KIND)",
        "MPI_Count" => "integer(kind=MPI_COUNT_KIND)",
        "MPI_Offset" => "integer(kind=MPI_OFFSET_KIND)",
        "double" => "double precision",
        _ => "integer",
    }
}

/// One dummy argument's declaration in an explicit interface.
fn f_decl(q: &Param, a: &Arg) -> String {
    let n = &q.name;
    let array = q.ty.ends_with(']');
    let base = q.ty.split('[').next().unwrap().trim_end_matches('*');
    let dims = if q.ty.ends_with("[3]") {
        "(3,*)"
    } else if array {
        "(*)"
    } else {
        ""
    };
    match a {
        Arg::Choice => {
            format!("!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}\n      type(*), dimension(*) :: {n}")
        }
        Arg::Status => format!("integer :: {n}(MPI_STATUS_SIZE)"),
        Arg::Statuses => format!("integer :: {n}(MPI_STATUS_SIZE,*)"),
        Arg::Same(_) if base == "MPI_Status" => format!("integer :: {n}(MPI_STATUS_SIZE)"),
        Arg::StrIn | Arg::StrOut => format!("character(len=*) :: {n}"),
        _ if logical(n) => format!("logical :: {n}{dims}"),
        _ => format!("{} :: {n}{dims}", f_scalar(base)),
    }
}

/// The explicit interfaces of the hand-written bindings (`special.rs`).
const HAND_INTERFACES: &str = "    subroutine MPI_Init(ierror)
      integer :: ierror
    end subroutine
    subroutine MPI_Init_thread(required, provided, ierror)
      integer :: required, provided, ierror
    end subroutine
    subroutine MPI_Pcontrol(level)
      integer :: level
    end subroutine
    subroutine MPI_Buffer_detach(buffer_addr, size, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buffer_addr
      type(*), dimension(*) :: buffer_addr
      integer :: size, ierror
    end subroutine
    subroutine MPI_Comm_detach_buffer(comm, buffer_addr, size, ierror)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buffer_addr
      type(*), dimension(*) :: buffer_addr
      integer :: comm, size, ierror
    end subroutine
    subroutine MPI_Op_create(user_fn, commute, op, ierror)
      external :: user_fn
      logical :: commute
      integer :: op, ierror
    end subroutine
    subroutine MPI_Info_create_env(info, ierror)
      integer :: info, ierror
    end subroutine
    subroutine MPI_Comm_create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state, ierror)
      import
      external :: comm_copy_attr_fn, comm_delete_attr_fn
      integer :: comm_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine
    subroutine MPI_Type_create_keyval(type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state, ierror)
      import
      external :: type_copy_attr_fn, type_delete_attr_fn
      integer :: type_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine
    subroutine MPI_Comm_set_attr(comm, comm_keyval, attribute_val, ierror)
      import
      integer :: comm, comm_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val
    end subroutine
    subroutine MPI_Type_set_attr(datatype, type_keyval, attribute_val, ierror)
      import
      integer :: datatype, type_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val
    end subroutine
    subroutine MPI_Type_get_attr(datatype, type_keyval, attribute_val, flag, ierror)
      import
      integer :: datatype, type_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val
      logical :: flag
    end subroutine
    subroutine MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra_state, request, ierror)
      import
      external :: query_fn, free_fn, cancel_fn
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      integer :: request, ierror
    end subroutine
    subroutine MPI_Comm_create_errhandler(comm_errhandler_fn, errhandler, ierror)
      external :: comm_errhandler_fn
      integer :: errhandler, ierror
    end subroutine
    subroutine MPI_Win_create_keyval(win_copy_attr_fn, win_delete_attr_fn, win_keyval, extra_state, ierror)
      import
      external :: win_copy_attr_fn, win_delete_attr_fn
      integer :: win_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine
    subroutine MPI_Win_set_attr(win, win_keyval, attribute_val, ierror)
      import
      integer :: win, win_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val
    end subroutine
    subroutine MPI_Win_get_attr(win, win_keyval, attribute_val, flag, ierror)
      import
      integer :: win, win_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val
      logical :: flag
    end subroutine
    subroutine MPI_Win_create_errhandler(win_errhandler_fn, errhandler, ierror)
      external :: win_errhandler_fn
      integer :: errhandler, ierror
    end subroutine
    subroutine MPI_Comm_get_attr(comm, comm_keyval, attribute_val, flag, ierror)
      import
      integer :: comm, comm_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val
      logical :: flag
    end subroutine
";

/// `mpi.f90`, the `mpi` module: the constants and sentinels of `mpif.h`
/// and an explicit interface for every binding, so gfortran checks each
/// call's arguments, and choice buffers take any type and rank (gfortran's
/// `NO_ARG_CHECK`).
pub(crate) fn module_f90(
    protos: &[Proto],
    exported: &HashSet<String>,
    consts: &[(String, i64)],
) -> String {
    let mut s = String::from(
        "! o2g's `use mpi` module (MPI 5.0 section 19.1.3), generated by capi/build/fortran.rs.\n\
         module mpi\n  implicit none\n",
    );
    for l in declarations(consts).lines() {
        writeln!(s, "  {}", l.trim()).unwrap();
    }
    s.push_str("  interface\n");
    let (yes, _) = bound(protos, exported);
    for (p, args) in &yes {
        let names: Vec<&str> = p.params.iter().map(|q| q.name.as_str()).collect();
        let has_ierr = p.ret == "int";
        // Six dummies a line keeps within free form's 132 columns.
        let dummies = names
            .iter()
            .copied()
            .chain(has_ierr.then_some("ierror"))
            .collect::<Vec<_>>()
            .chunks(6)
            .map(|c| c.join(", "))
            .collect::<Vec<_>>()
            .join(", &\n        ");
        let (kw, head) = if has_ierr {
            ("subroutine", format!("subroutine {}({dummies})", p.name))
        } else {
            (
                "function",
                format!("{} function {}({dummies})", f_scalar(&p.ret), p.name),
            )
        };
        writeln!(s, "    {head}\n      import").unwrap();
        for (q, a) in p.params.iter().zip(args) {
            writeln!(s, "      {}", f_decl(q, a)).unwrap();
        }
        if has_ierr {
            s.push_str("      integer :: ierror\n");
        }
        writeln!(s, "    end {kw}").unwrap();
    }
    s.push_str(HAND_INTERFACES);
    s.push_str("  end interface\nend module mpi\n");
    s
}

/// Integer constants of `mpi.h`: `#define`s of integers and predefined
/// handles, aliases, and `enum` members.
pub(crate) fn constants(header: &str) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    let lookup =
        |out: &Vec<(String, i64)>, n: &str| out.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    let mut in_enum = false;
    for line in header.lines() {
        let line = line.split("/*").next().unwrap().trim();
        if line.starts_with("enum") {
            in_enum = true;
            continue;
        }
        if in_enum {
            if line.starts_with('}') {
                in_enum = false;
            } else if let Some((n, v)) = line.trim_end_matches(',').split_once('=') {
                let (n, v) = (n.trim(), v.trim());
                if let Some(v) = int(v) {
                    out.push((n.to_string(), v));
                }
            }
            continue;
        }
        let Some(def) = line.strip_prefix("#define ") else {
            continue;
        };
        let Some((n, v)) = def.split_once(char::is_whitespace) else {
            continue;
        };
        if !n.starts_with("MPI_") || n.starts_with("MPI_T_") || n.contains('(') {
            continue;
        }
        let v = v.trim();
        let value = if let Some(h) = v.strip_prefix("O2G_HANDLE(") {
            h.trim_end_matches(')')
                .split(',')
                .nth(1)
                .and_then(|x| int(x.trim()))
        } else if let Some(v) = int(v) {
            Some(v)
        } else {
            lookup(&out, v)
        };
        if let Some(v) = value {
            out.push((n.to_string(), v));
        }
    }
    out.retain(|(n, _)| n.starts_with("MPI_") && !n.starts_with("MPI_T_"));
    out
}

fn int(s: &str) -> Option<i64> {
    let s = s.trim_start_matches('(').trim_end_matches(')');
    if let Some(h) = s.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// The sentinels: Fortran name, array shape, common block. The common
/// block `/O2G_X/` is the C symbol `o2g_x_`, defined in
/// `src/fortran/sentinel.rs`.
pub(crate) const SENTINELS: &[(&str, &str, &str)] = &[
    ("MPI_BOTTOM", "", "O2G_BOTTOM"),
    ("MPI_IN_PLACE", "", "O2G_IN_PLACE"),
    ("MPI_BUFFER_AUTOMATIC", "", "O2G_BUFFER_AUTOMATIC"),
    (
        "MPI_STATUS_IGNORE",
        "(MPI_STATUS_SIZE)",
        "O2G_STATUS_IGNORE",
    ),
    (
        "MPI_STATUSES_IGNORE",
        "(MPI_STATUS_SIZE,1)",
        "O2G_STATUSES_IGNORE",
    ),
    ("MPI_ERRCODES_IGNORE", "(1)", "O2G_ERRCODES_IGNORE"),
    ("MPI_UNWEIGHTED", "(1)", "O2G_UNWEIGHTED"),
    ("MPI_WEIGHTS_EMPTY", "(1)", "O2G_WEIGHTS_EMPTY"),
];

/// The constants and sentinels, as `mpif.h` and the module declare them.
fn declarations(consts: &[(String, i64)]) -> String {
    let mut s = String::new();
    let mut seen = HashSet::new();
    let fortran_only: [(&str, i64); 8] = [
        ("MPI_STATUS_SIZE", 8),
        ("MPI_SOURCE", 1),
        ("MPI_TAG", 2),
        ("MPI_ERROR", 3),
        ("MPI_ADDRESS_KIND", 8),
        ("MPI_OFFSET_KIND", 8),
        ("MPI_COUNT_KIND", 8),
        ("MPI_INTEGER_KIND", 4),
    ];
    for (n, v) in fortran_only
        .iter()
        .map(|(n, v)| (n.to_string(), *v))
        .chain(consts.iter().cloned())
    {
        if !seen.insert(n.to_uppercase()) {
            continue;
        }
        writeln!(s, "      INTEGER {n}").unwrap();
        writeln!(s, "      PARAMETER ({n}={v})").unwrap();
    }
    for (n, shape, block) in SENTINELS {
        writeln!(s, "      INTEGER {n}{shape}").unwrap();
        writeln!(s, "      COMMON /{block}/ {n}").unwrap();
    }
    // The predefined callbacks, subroutines of the library
    // (`src/fortran/caching.rs`).
    for n in [
        "MPI_COMM_NULL_COPY_FN",
        "MPI_COMM_DUP_FN",
        "MPI_COMM_NULL_DELETE_FN",
        "MPI_TYPE_NULL_COPY_FN",
        "MPI_TYPE_DUP_FN",
        "MPI_TYPE_NULL_DELETE_FN",
        "MPI_WIN_NULL_COPY_FN",
        "MPI_WIN_DUP_FN",
        "MPI_WIN_NULL_DELETE_FN",
    ] {
        writeln!(s, "      EXTERNAL {n}").unwrap();
    }
    s
}

/// `mpif.h`.
pub(crate) fn mpif_h(consts: &[(String, i64)]) -> String {
    let mut s = String::from(
        "! o2g's mpif.h (MPI 5.0 section 19.1.2), generated from mpi.h by\n\
         ! capi/build/fortran.rs. Default INTEGER is 4 bytes (do not build\n\
         ! with -fdefault-integer-8). Columns 7-72: fixed and free form.\n\
         ! No explicit interfaces: with gfortran 10 or later, calls passing\n\
         ! buffers of different types need -fallow-argument-mismatch;\n\
         ! `use mpi` checks every call and needs nothing.\n",
    );
    s.push_str(&declarations(consts));
    s.push_str(
        "      DOUBLE PRECISION MPI_WTIME, MPI_WTICK\n\
         \x20     EXTERNAL MPI_WTIME, MPI_WTICK\n\
         \x20     INTEGER(KIND=MPI_ADDRESS_KIND) MPI_AINT_ADD, MPI_AINT_DIFF\n\
         \x20     EXTERNAL MPI_AINT_ADD, MPI_AINT_DIFF\n",
    );
    for l in s.lines() {
        assert!(l.len() <= 72, "mpif.h line over 72 columns: {l}");
    }
    s
}
